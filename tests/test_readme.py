"""The README's tour runs as written (its asserts are the expected values)."""

import re
import shlex
from pathlib import Path

import pytest

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
    assert ".venv/bin/python -m convmem_dashboard" in text  # the e2e tests serve the app this way


def test_the_launcher_imports_the_heavy_modules_then_runs_streamlit_on_dashboard_py(monkeypatch):
    """python -m convmem_dashboard: PRELOAD, Streamlit's first-run modules and the dashboard's
    modules imported, then `streamlit run <root>/dashboard.py` with the caller's options (the e2e
    tests start every server through it)."""
    import importlib
    import sys

    from streamlit.web import cli

    import convmem_dashboard.__main__ as launcher

    import pandas  # noqa: F401  (in before import_module is patched: pandas imports its optional
    # modules with it while the preload warms the sample; the test failed when run alone)

    seen: list = []
    monkeypatch.setattr(importlib, "import_module", lambda name: seen.append(name))
    monkeypatch.setattr(cli, "main", lambda args, prog_name: seen.append((prog_name, args)))
    monkeypatch.setattr(sys, "argv", ["convmem_dashboard", "--server.port", "8600"])
    launcher.main()
    preloaded = [*launcher.PRELOAD, *launcher.STREAMLIT_FIRST_RUN, *launcher.dashboard_modules()]
    assert seen == [*preloaded, ("streamlit", ["run", str(README.parent / "dashboard.py"), "--server.port", "8600"])]
    assert launcher.DASHBOARD.is_file()


CLI_LINES = re.findall(r"^\.venv/bin/python -m convmem (.+?)(?:\s+#.*)?$",
                       README.read_text(encoding="utf-8"), flags=re.M)


def test_readme_has_cli_examples():
    assert len(CLI_LINES) >= 6


@pytest.mark.parametrize("line", CLI_LINES)
def test_readme_cli_example_exits_0(line, monkeypatch, tmp_path, capsys):
    """Each ``python -m convmem`` example exits 0 (main once shipped a ``simulate`` example that
    exited 4: a NameError in its call table). Run in a scratch directory so ``-o`` writes there."""
    from convmem.cli import main

    root = README.parent
    monkeypatch.chdir(tmp_path)
    argv = [str(root / a) if (root / a).is_file() else a for a in shlex.split(line)]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out
