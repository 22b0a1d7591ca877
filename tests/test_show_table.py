"""Every table a page draws groups its numbers (issue 10 item 4: "every number with thousands
separators"): through convmem_dashboard.show_table, never st.dataframe itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from apptest_support import dashboard_app, ok
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
