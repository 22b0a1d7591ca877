"""Every table a page draws groups its numbers (issue 10 item 4: "every number with thousands
separators"): through convmem_dashboard.show_table, never st.dataframe itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as hst

from apptest_support import dashboard_app, ok
from convmem_dashboard.show_table import markdown_table
from convmem_dashboard.table_layout import column, grouped_numbers, number_text

ROOT = Path(__file__).resolve().parent.parent
GROUPED = {"type": "number", "format": "localized"}


def test_no_page_or_panel_calls_st_dataframe_itself():
    files = [*(ROOT / "app_pages").glob("*.py"), *(ROOT / "convmem_dashboard").glob("*.py")]
    assert len(files) > 40
    calls = [f.name for f in files if f.name != "show_table.py" and re.search(r"\.dataframe\(", f.read_text(encoding="utf-8"))]
    assert calls == []


def test_grouped_numbers_groups_counts_and_short_floats_and_keeps_the_rest():
    frame = pd.DataFrame({
        "tokens": np.array([1234567, 5], dtype=np.int64), "mean": [1234.5, 2.25], "cost": [0.1234, 1.5],
        "share": [float("nan"), 3.0], "ok": [True, False], "id": ["a", "b"],
    })
    view = grouped_numbers(frame, {"height": 80, "column_config": {"tokens": column("tok.", width=60), "id": column(width=90)}})
    config = view["column_config"]
    assert view["height"] == 80
    assert config["tokens"] == {"label": "tok.", "width": 60, "type_config": GROUPED}
    assert config["mean"] == config["share"] == {"type_config": GROUPED}  # NaN is not a decimal
    assert "cost" not in config and "ok" not in config and config["id"] == {"width": 90}


def test_number_text_writes_every_kept_decimal_grouped():
    frame = pd.DataFrame({"A": [562549561, 2932.5345, 0.0012, -1467.0, 45.3], "unit": ["tokens", "USD", "USD", "tokens", "%"]})
    assert number_text(frame, ["A"])["A"].tolist() == ["562,549,561", "2,932.5345", "0.0012", "-1,467", "45.3"]
    assert number_text(frame, ["A"])["unit"].tolist() == frame["unit"].tolist()


def test_the_token_budget_tables_group_their_numbers():
    at = dashboard_app()
    at.query_params["data"] = "synthetic-10000"
    at.switch_page("app_pages/token_budget.py")
    at.session_state["cmp"] = True
    ok(at.run())
    configs = {tuple(d.value.columns[:2]): json.loads(d.proto.columns or "{}") for d in at.dataframe}
    assert configs[("metric", "unit")]["A"]["type_config"] == GROUPED  # A against B
    assert configs[("step", "id")]["tokens"]["type_config"] == GROUPED  # every message
    cost = next(d.value for d in at.dataframe if d.value.columns[0] == "quantity")
    sent = cost.set_index("quantity").loc["input tokens sent", "A"]
    assert re.fullmatch(r"\d{1,3}(,\d{3})+", sent), sent  # 10^4 messages: millions of tokens sent


# show_small_table: a few rows as Markdown (Home's roles table), numbers grouped, text literal.


def _read_markdown_table(text: str) -> tuple[list[str], list[str], list[list[str]]]:
    """Reference reader of a GFM table: each line's cells split on unescaped '|', a backslash
    taking the next character literally; (header, alignment rule, body)."""
    lines = []
    for line in text.split("\n"):
        cells, cell, chars = [], "", iter(line.strip()[1:-1])
        for ch in chars:
            if ch == "\\":
                cell += next(chars)
            elif ch == "|":
                cells.append(cell.strip())
                cell = ""
            else:
                cell += ch
        cells.append(cell.strip())
        lines.append(cells)
    return lines[0], lines[1], lines[2:]


def test_markdown_table_groups_numbers_right_aligned_and_escapes_text():
    text = markdown_table([{"role": "user", "messages": 3, "tokens": 1234567},
                           {"role": "**tool** | <b>x</b>", "messages": 12, "tokens": 5}])
    assert text.split("\n") == [
        "| role | messages | tokens |",
        "| :-- | --: | --: |",
        "| user | 3 | 1,234,567 |",
        r"| \*\*tool\*\* \| \<b\>x\<\/b\> | 12 | 5 |",
    ]


def test_a_column_with_any_text_cell_is_left_aligned_and_a_bool_is_text():
    header, rule, body = _read_markdown_table(markdown_table([{"a": 1, "b": True}, {"a": "n/a", "b": False}]))
    assert (header, rule, body) == (["a", "b"], [":--", ":--"], [["1", "True"], ["n/a", "False"]])


def test_markdown_table_refuses_no_rows_and_rows_with_other_keys():
    with pytest.raises(ValueError, match="at least one row"):
        markdown_table([])
    with pytest.raises(ValueError, match=r"\['role', 'tokens'\]"):
        markdown_table([{"role": "user", "tokens": 1}, {"tokens": 1, "role": "user"}])


@given(hst.lists(hst.tuples(hst.text(max_size=12), hst.integers(-10**20, 10**20)), min_size=1, max_size=6))
def test_markdown_table_reads_back_as_its_rows(rows):
    """Any role text (pipes, backslashes, Markdown, line breaks) and any integer: a GFM reader
    gets each row back, the text on one line, the number grouped."""
    text = markdown_table([{"role": r, "tokens": n} for r, n in rows])
    header, rule, body = _read_markdown_table(text)
    assert len(text.split("\n")) == len(rows) + 2
    assert header == ["role", "tokens"] and rule == [":--", "--:"]
    assert body == [[" ".join(r.split()), f"{n:,}"] for r, n in rows]


def test_your_data_draws_its_roles_table_as_markdown_and_no_dataframe():
    from convmem_dashboard.data import get_dataset
    from convmem_dashboard.view_home import roles_table

    at = dashboard_app()
    at.switch_page("app_pages/your_data.py")
    ok(at.run())
    conv = get_dataset("sample").conversation(at.session_state["conv"])
    assert len(at.dataframe) == 0  # the first view loads no table code in the browser
    tables = [m.value for m in at.markdown if m.value.startswith("| role |")]
    assert tables == [markdown_table(roles_table(conv))]
    assert "| user | " in tables[0] and tables[0].count("\n") == len(roles_table(conv)) + 1
