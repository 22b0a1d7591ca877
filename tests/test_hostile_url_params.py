"""Issue 9: hostile URL parameters never break a page (convmem_dashboard.url_params).

* The pure sanitizer by hand and with hypothesis over arbitrary strings: it never raises, what it
  keeps is valid for the key's type and range, and a second pass changes nothing.
* The table covers every URL-bound widget key of the pages (read from the sources with ast).
* URL fuzzing under AppTest: on every page, every key with non-finite, huge, negative, empty,
  non-numeric values and unknown keys; no exception, and a changed value is named in a warning.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from apptest_support import PAGES, open_dashboard_page
from convmem.limits import MAX_TOKENS
from convmem_dashboard.url_params import MAX_TEXT, PARAMS, UNBOUND_KEYS, Fix, fix_message, sanitize

ROOT = Path(__file__).resolve().parent.parent
HOSTILE_VALUES = ["nan", "inf", "-inf", "1e309", "-1", str(10**30), "", "abc"]


# ------------------------------------------------------------------------------------ the table


def bound_keys(path: Path) -> set[str]:
    """Keys of the widget calls in ``path`` that bind to the URL (bind=... or **URL)."""
    keys = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {  # module constants such as _DATA_KEY = "data"
        t.id: n.value.value
        for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        for t in n.targets if isinstance(t, ast.Name)
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        kws = {k.arg: k.value for k in node.keywords if k.arg}
        binds = "bind" in kws or any(k.arg is None and getattr(k.value, "id", "") == "URL" for k in node.keywords)
        key = kws.get("key")
        if binds and isinstance(key, ast.Constant):
            keys.add(key.value)
        elif binds and isinstance(key, ast.Name):
            keys.add(names[key.id])
    return keys


def test_the_table_covers_exactly_the_url_bound_keys_of_the_pages():
    found = set()
    panels = (ROOT / "convmem_dashboard").glob("panel_*.py")  # widgets a page renders through a module
    for path in [*(ROOT / "app_pages").glob("*.py"), ROOT / "convmem_dashboard" / "data.py", *panels]:
        found |= bound_keys(path)
    # conv, shopper, cap: read and written by code (the shared selection, the per-shopper cap)
    assert not found & set(UNBOUND_KEYS)
    assert found | set(UNBOUND_KEYS) == set(PARAMS)


def test_pages_take_static_ranges_and_defaults_from_the_table():
    flaky = (ROOT / "app_pages" / "flaky_store.py").read_text(encoding="utf-8")
    budget = (ROOT / "app_pages" / "token_budget.py").read_text(encoding="utf-8")
    for key in ("rate", "burst", "seed", "rep", "cyc", "empty", "psize", "tries", "base", "maxd", "dl"):
        assert f'*P["{key}"].slider' in flaky, key
    for key in ("tgt", "b_tgt", "sw_n"):
        assert f'*P["{key}"].slider' in budget, key


# ----------------------------------------------------------------------------------- by hand


@pytest.mark.parametrize(
    ("query", "clean", "actions"),
    [
        ({"seed": "inf"}, {}, ["dropped"]),
        ({"seed": "-inf"}, {}, ["dropped"]),
        ({"seed": "1e309"}, {}, ["dropped"]),
        ({"seed": "nan"}, {}, ["dropped"]),
        ({"seed": "abc"}, {}, ["dropped"]),
        ({"seed": ""}, {}, ["dropped"]),
        ({"seed": "-1"}, {}, ["dropped"]),
        ({"seed": str(10**30)}, {}, ["dropped"]),
        ({"seed": str(2**31 - 1)}, {"seed": [str(2**31 - 1)]}, []),
        ({"seed": "12"}, {"seed": ["12"]}, []),
        ({"seed": " 12 "}, {"seed": ["12"]}, []),
        ({"seed": "7.6"}, {}, ["dropped"]),
        ({"seed": "7.0"}, {}, ["dropped"]),
        ({"rep": ""}, {"rep": [""]}, []),  # clearable: empty means "off"
        ({"rate": "0.25"}, {"rate": ["0.25"]}, []),
        ({"rate": "7"}, {}, ["dropped"]),
        ({"rate": "1"}, {"rate": ["1"]}, []),
        ({"rate": "-1e-9"}, {}, ["dropped"]),
        ({"limit": str(10**30)}, {}, ["dropped"]),
        ({"limit": str(MAX_TOKENS)}, {"limit": [str(MAX_TOKENS)]}, []),
        ({"wrap": "TRUE"}, {"wrap": ["true"]}, []),
        ({"wrap": "yes"}, {}, ["dropped"]),
        ({"tmode": "percent"}, {"tmode": ["percent"]}, []),
        ({"tmode": "nan"}, {}, ["dropped"]),
        ({"b_pol": ["start_on_user", "x", "start_on_user"]}, {"b_pol": ["start_on_user"]}, ["kept start_on_user"]),
        ({"b_pol": [""]}, {"b_pol": [""]}, []),
        ({"b_pol": ["x"]}, {}, ["dropped"]),
        ({"win": ["9", "-3"]}, {}, ["dropped"]),
        ({"win": ["3", "9"]}, {"win": ["3", "9"]}, []),
        ({"win": ["inf", "3"]}, {}, ["dropped"]),
        ({"win": "3"}, {}, ["dropped"]),
        ({"psize": ["3", "nan"]}, {}, ["dropped"]),  # the last value counts, as in Streamlit
        ({"psize": ["nan", "3"]}, {"psize": ["3"]}, []),
        ({"conv": "any id"}, {"conv": ["any id"]}, []),
        ({"conv": "x" * (MAX_TEXT + 1)}, {}, ["dropped"]),
        ({"zzz": "inf", "embed": "true"}, {"zzz": ["inf"], "embed": ["true"]}, []),  # not ours
    ],
)
def test_sanitize_by_hand(query, clean, actions):
    out, fixes = sanitize(query)
    assert out == clean
    assert [f.action for f in fixes] == actions
    assert all(f.key in query for f in fixes)


def test_fix_message_names_parameter_and_value_escaped():
    text = fix_message([Fix("seed", "**inf**<b>", "dropped", "it is not a finite number")])
    assert "seed" in text and "\\*\\*inf\\*\\*\\<b\\>" in text and "<b>" not in text


# ------------------------------------------------------------------------------------ hypothesis


def valid(key: str, values: list[str]) -> bool:
    """Independent check that a kept value fits the key's type and static range."""
    p = PARAMS[key]
    if p.kind == "choices":
        return all(v in p.options for v in values if v) and len(set(values)) == len(values)
    if p.kind == "int_range":
        a, b = (int(v) for v in values)
        return p.lo <= a <= b <= p.hi
    (v,) = values
    if len(v) > MAX_TEXT:
        return False
    if p.kind == "text":
        return True
    if p.kind == "bool":
        return v in ("true", "false")
    if p.kind == "choice":
        return v in p.options
    if v == "":
        return p.clearable
    x = int(v) if p.kind == "int" else float(v)
    return math.isfinite(x) and p.lo <= x <= p.hi


numberish = st.one_of(
    st.sampled_from(HOSTILE_VALUES + ["0", "1", "0.5", "true", "FALSE", "percent", "start_on_user", "1e-400"]),
    st.integers(-(10**40), 10**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=30),
    st.text(min_size=MAX_TEXT - 2, max_size=MAX_TEXT + 2, alphabet="12"),
)
queries = st.dictionaries(
    st.one_of(st.sampled_from(sorted(PARAMS)), st.text(max_size=8)),
    st.one_of(numberish, st.lists(numberish, max_size=3)),
    max_size=12,
)


@given(queries)
def test_sanitize_never_raises_keeps_only_valid_values_and_is_idempotent(query):
    clean, fixes = sanitize(query)
    for key, values in clean.items():
        if key in PARAMS:
            assert valid(key, values), (key, values)
        else:
            assert values == ([query[key]] if isinstance(query[key], str) else list(query[key]))
    assert set(clean) <= set(query)
    for f in fixes:
        assert f.key in PARAMS and len(f.value) <= 40
    again, more = sanitize(clean)
    assert again == clean and more == []


# ----------------------------------------------------------------------------- AppTest fuzzing

PAGE_KEYS = {
    "app_pages/home.py": ["data", "conv"],
    "app_pages/your_data.py": ["data", "conv"],
    "app_pages/flaky_store.py": ["data", "conv", "rate", "burst", "seed", "rep", "cyc", "wrap", "empty", "psize",
                             "overlap", "tries", "base", "maxd", "dl", "epe", "mode", "step", "truth_all",
                             "store", "arr", "arr_at", "hwm"],
    "app_pages/token_budget.py": ["data", "conv", "limit", "pin_sys", "pin_user", "tools", "on_user", "tmode", "tgt",
                              "tgt_tok", "sum", "sb", "win", "ev", "ctx_step", "cmp", "b_limit", "b_tgt", "b_sum",
                              "b_pol", "sweep", "sw_n", "pg", "cp", "cp_in", "cp_read", "cp_write", "cp_min",
                              "cp_inc", "sl_p", "sl_id", "clr", "clr_trig", "clr_keep", "clr_min", "b_clr"],
    "app_pages/listing_eviction.py": ["data", "conv", "shopper", "cap", "only", "listing"],
    "app_pages/agent_session.py": ["data", "conv", "agent_conv"],
}
#: Values that open the widgets shown only under another setting (target, budget, B, step mode).
GATES = [
    {"tmode": "percent", "sum": "true", "cmp": "true", "sweep": "true", "mode": "Step by step",
     "store": "SQLite store (keyset cursors)", "clr": "true"},
    {"tmode": "tokens", "sum": "true"},
]


def test_page_keys_cover_the_table():
    assert set().union(*PAGE_KEYS.values()) == set(PARAMS)


def assert_fixes_named(at, query):
    warnings = " ".join(str(w.value) for w in at.warning)
    clean, fixes = sanitize(query)
    for f in fixes:
        assert f.key.replace("_", "\\_") in warnings, (f, warnings)


@pytest.mark.parametrize("value", HOSTILE_VALUES)
@pytest.mark.parametrize("page", PAGES)
def test_every_key_of_every_page_with_a_hostile_value(page, value):
    """All keys of the table at once (other pages' keys are unknown keys here) plus junk keys."""
    for gate in ([{}] if page != "app_pages/token_budget.py" else GATES):
        query = {key: value for key in PARAMS}
        query.update({"unknown": value, "x" * 50: "1"})
        query.update(gate)
        at = open_dashboard_page(page, query)
        assert not at.exception, (page, value, [e.value for e in at.exception])
        assert_fixes_named(at, query)


@pytest.mark.parametrize("value", ["-inf", "1e309", str(10**30)])
@pytest.mark.parametrize(
    ("page", "key"),
    [(page, key) for page, keys in PAGE_KEYS.items() for key in keys
     if PARAMS[key].kind in ("int", "float", "int_range") and page not in ("app_pages/home.py", "app_pages/your_data.py")],
)
def test_each_numeric_key_alone_on_its_page(page, key, value):
    gate = {}
    if page == "app_pages/token_budget.py":
        gate = GATES[1] if key == "tgt_tok" else GATES[0]
    elif key == "step":
        gate = {"mode": "Step by step"}
    query = {**gate, key: value}
    at = open_dashboard_page(page, query)
    assert not at.exception, (page, key, value, [e.value for e in at.exception])
    assert_fixes_named(at, query)
    assert key.replace("_", "\\_") in " ".join(str(w.value) for w in at.warning)


@pytest.mark.parametrize("query, named", [
    ({"limit": "5", "cmp": "true"}, "limit=5"),          # a page's own note (out of range)
    ({"sl_p": "nan", "cmp": "true"}, "sl\\_p"),          # the sanitizer's fix
    ({"limit": "5", "data": "synthetic-10000", "sum": "true", "clr": "true"}, "limit=5"),
])
def test_a_link_s_warnings_outlive_the_runs_the_dashboard_splits(query, named, monkeypatch):
    """Opening the comparison replays B in a run of its own, a heavy replay goes in slices, each
    ending in st.rerun(): the link's warnings shown by the first run stay in the run the user sees
    (the URL is clean by then), and go at the user's next action."""
    from convmem_dashboard import panel_replay

    monkeypatch.setattr(panel_replay, "RUN_MESSAGES", 3_000)  # 10^4 messages: several slices
    at = open_dashboard_page("app_pages/token_budget.py", query)
    assert not at.exception
    assert any(named in str(w.value) for w in at.warning), [w.value for w in at.warning]
    at.run()  # the user's next action: a plain rerun
    assert not any(named in str(w.value) for w in at.warning), [w.value for w in at.warning]
