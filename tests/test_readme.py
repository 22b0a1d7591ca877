"""The README's tour runs as written (its asserts are the expected values)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_tour_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert blocks, "README has no python example"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})


def test_readme_commands_match_ci():
    text = README.read_text(encoding="utf-8")
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert ".venv/bin/python -m pytest" in text and ".venv/bin/python -m pytest" in ci
    assert "requirements-dev.txt" in text and "requirements-dev.txt" in ci
    assert ".venv/bin/streamlit run dashboard.py" in text
