"""Issue 9: one escaping of every cell that leaves (convmem_dashboard.export_safety).

The pure functions against hand-written cells and hypothesis; then every page's download buttons
after uploading tests/hostile_corpus/formula_cells.jsonl (ids, conversation ids, shopper id and
content that begin formulas), with the file a click would download parsed back.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, strategies as st

from apptest_support import PAGES, DeferredDownloads, dashboard_app, ok, upload_file
from convmem_dashboard.export_safety import is_formula, safe_cell, safe_csv, safe_frame, safe_json

ROOT = Path(__file__).resolve().parent.parent
FORMULA_FILE = ROOT / "tests" / "hostile_corpus" / "formula_cells.jsonl"
PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def starts_formula(cell: str) -> bool:
    """Independent check (OWASP): a cell a spreadsheet may run, i.e. one that begins with
    = + - @ (or their full-width forms) after leading whitespace, or with a tab or CR, unless it
    is a plain number."""
    if cell[:1] in ("\t", "\r"):
        return True
    head = cell.lstrip()[:1]
    return head in ("=", "+", "-", "@", "＝", "＋", "－", "＠") and not PLAIN_NUMBER.fullmatch(cell)


# ------------------------------------------------------------------------------------- pure


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("=1+1", "'=1+1"),
        ("+A1", "'+A1"),
        ("+1", "+1"),
        ("-1+1", "'-1+1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("  =1", "'  =1"),
        ("\t=1", "'\t=1"),
        ("\tplain", "'\tplain"),  # OWASP: a leading tab or CR is escaped by itself
        ("\rplain", "'\rplain"),
        ("\n=1", "'\n=1"),
        ("\u3000=1", "'\u3000=1"),  # an ideographic space is whitespace too
        ("＝1", "'＝1"),
        ("-5", "-5"),  # a plain number is read as that number: nothing runs
        ("+1.5e3", "+1.5e3"),
        ("a=b", "a=b"),
        ("'=already", "'=already"),
        ("", ""),
    ],
)
def test_safe_cell_by_hand(cell, expected):
    assert safe_cell(cell) == expected


@pytest.mark.parametrize("value", [-3, -2.5, 0, True, None, float("nan"), pd.Timestamp("2026-01-01")])
def test_non_text_cells_are_unchanged(value):
    out = safe_cell(value)
    assert out is value


@given(st.text())
def test_safe_cell_never_leaves_a_formula_and_only_adds_a_quote(text):
    out = safe_cell(text)
    assert out in (text, "'" + text)
    assert not starts_formula(out)
    assert (out != text) == starts_formula(text)  # escaped exactly when the reference says so
    assert safe_cell(out) == out  # idempotent: escaping twice changes nothing


@given(st.lists(st.text(), min_size=1, max_size=8), st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=8))
def test_safe_csv_cells_parse_back_safe_and_numbers_stay_numbers(texts, numbers):
    n = min(len(texts), len(numbers))
    frame = pd.DataFrame({"=text": texts[:n], "number": numbers[:n]})
    out = safe_csv(frame)
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert rows[0] == ["'=text", "number"]
    for row, text, number in zip(rows[1:], texts, numbers):
        assert row[0] == safe_cell(text) and not starts_formula(row[0])
        assert row[1] == str(number)  # -7 stays -7: a number, not text


def test_safe_frame_keeps_dtypes_of_numeric_columns_and_does_not_mutate():
    frame = pd.DataFrame({"id": ["=a", "b"], "tokens": [-1, 2], "share": [0.5, float("nan")]})
    out = safe_frame(frame)
    assert list(out["id"]) == ["'=a", "b"] and list(frame["id"]) == ["=a", "b"]
    assert out["tokens"].dtype == frame["tokens"].dtype and list(out["tokens"]) == [-1, 2]
    assert out["share"].dtype == frame["share"].dtype


def test_safe_json_escapes_values_not_keys_and_keeps_numbers():
    value = [{"id": "=1", "tokens": -3, "tool_call_ids": ["@c", "ok"], "content": None, "-k": "x"}]
    assert json.loads(safe_json(value)) == [
        {"id": "'=1", "tokens": -3, "tool_call_ids": ["'@c", "ok"], "content": None, "-k": "x"}
    ]


def test_is_formula_matches_the_reference_on_the_corpus_strings():
    for text in ["=1", " =1", "\t", "\r", "@", "-", "-0", "- 1", "+", "x=", "1-1", "--1"]:
        assert is_formula(text) == starts_formula(text), text


def test_no_page_calls_st_download_button_itself():
    """Every download goes through export_safety.download_csv / download_json (one escaping)."""
    for page in (ROOT / "app_pages").glob("*.py"):
        source = page.read_text(encoding="utf-8")
        assert "download_button(" not in source, f"{page.name} calls st.download_button directly"
    pages_with_downloads = {
        p.name for p in (ROOT / "app_pages").glob("*.py")
        if re.search(r"\bdownload_(csv|json)\(", p.read_text(encoding="utf-8"))
    }
    assert pages_with_downloads == {"flaky_store.py", "token_budget.py", "listing_eviction.py",
                                    "agent_session.py"}


# ----------------------------------------------------------------------------- every page's files


def json_strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from json_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from json_strings(v)


@pytest.fixture(scope="module")
def formula_downloads() -> dict[str, dict[str, str]]:
    """page -> {file name -> the text a click downloads}, after uploading the formula file."""
    at = dashboard_app().run()
    at = upload_file(at, "formula_cells.jsonl", FORMULA_FILE.read_bytes())
    files: dict[str, dict[str, str]] = {}
    for page in PAGES[1:]:
        with DeferredDownloads() as dl:
            at.switch_page(page)
            ok(at.run())
            files[page] = {name: dl.text(name) for name in dl.made}
    return files


@pytest.mark.parametrize(
    ("page", "names"),
    [
        ("app_pages/flaky_store.py", {"flaky-store-truth.csv", "flaky-store-calls.csv"}),
        ("app_pages/token_budget.py", None),  # names carry the conversation id: checked by suffix
        ("app_pages/listing_eviction.py", {"listing-eviction.csv"}),
    ],
)
def test_every_download_of_every_page_has_no_formula_cell(formula_downloads, page, names):
    files = formula_downloads[page]
    if names is not None:
        assert set(files) == names
    else:
        assert sorted(Path(n).suffix for n in files) == [".csv", ".json"]
    escaped = 0
    for name, text in files.items():
        if name.endswith(".csv"):
            cells = [c for row in csv.reader(io.StringIO(text, newline="")) for c in row]
        else:
            cells = list(json_strings(json.loads(text)))
        assert cells, name
        bad = [c for c in cells if starts_formula(c)]
        assert not bad, (name, bad)
        escaped += sum(1 for c in cells if c.startswith("'") and starts_formula(c[1:]))
    assert escaped > 0  # the hostile ids and content did reach the files, escaped


def test_token_budget_table_keeps_the_hostile_text_after_the_quote(formula_downloads):
    files = formula_downloads["app_pages/token_budget.py"]
    table = next(t for n, t in files.items() if n.endswith(".csv"))
    rows = list(csv.DictReader(io.StringIO(table, newline="")))
    # The page opens the conversation with the most tokens among the first ten: c1 (28 tokens).
    assert [r["id"] for r in rows] == ["'=1+1", "' +cmd|' /C calc'!A0", "'\t=tab", "'\r-cr", "-5"]
    assert [int(r["tokens"]) for r in rows] == [5, 9, 7, 3, 4]
