"""A link whose value fits the URL table but not this data says so (a new user opened
``?limit=99999999`` and ``?conv=nope-1`` and saw the defaults with no word; the README promises a
warning). The sanitizer (url_params.sanitize) cannot know a data-dependent range or the
conversation ids, and Streamlit drops such a value silently, so the page warns once, when the
link is opened."""

from __future__ import annotations

import pytest

from apptest_support import ok, open_dashboard_page, to_your_data
from convmem_dashboard.data import md_escape
from convmem_dashboard.url_params import out_of_range_note

LINK = ":material/link:"


def link_warnings(at) -> list[str]:
    return [w.value for w in at.warning]


@pytest.mark.parametrize("raw", ["99999999", "5", "1221"])
def test_an_out_of_range_limit_in_a_link_is_named_once(raw):
    at = ok(open_dashboard_page("app_pages/token_budget.py", {"conv": "fatima_kim_4514-1", "limit": raw}))
    lo, hi = int(at.slider(key="limit").min), int(at.slider(key="limit").max)
    assert hi == 1_220
    assert link_warnings(at) == [
        f"The link's limit={raw} is outside this conversation's range ({lo:,} to {hi:,} tokens): "
        "the default is shown."
    ]
    assert "limit" not in at.query_params  # Streamlit dropped it: the next run says nothing more
    assert link_warnings(ok(at.run())) == []


def test_an_in_range_limit_says_nothing():
    at = ok(open_dashboard_page("app_pages/token_budget.py", {"conv": "fatima_kim_4514-1", "limit": "500"}))
    assert at.slider(key="limit").value == 500 and link_warnings(at) == []


@pytest.mark.parametrize("page", ["app_pages/token_budget.py", "app_pages/home.py", "app_pages/flaky_store.py"])
def test_an_unknown_conversation_in_a_link_is_named_once(page):
    at = ok(open_dashboard_page(page, {"conv": "nope-1"}))
    shown = at.query_params["conv"]
    assert shown != "nope-1"
    assert link_warnings(at) == [
        f"The link's conversation {md_escape(repr('nope-1'))} is not in this dataset: showing "
        f"{md_escape(repr(shown))} instead."
    ]
    assert link_warnings(ok(at.run())) == []


def test_out_of_range_note_is_pure_and_plain():
    assert out_of_range_note("limit", None, 1, 2, "tokens") is None
    assert out_of_range_note("limit", "abc", 1, 2, "tokens") is None  # the sanitizer's case
    assert out_of_range_note("limit", "2", 1, 2, "tokens") is None
    assert out_of_range_note("limit", "3", 1, 2, "tokens").startswith("The link's limit=3 is outside")


@pytest.mark.parametrize("asked", ["../../etc/passwd", "synthetic-99999", "<b>x</b>*"])
@pytest.mark.parametrize("page", ["app_pages/token_budget.py", "app_pages/home.py"])
def test_an_unknown_dataset_in_a_link_is_named(page, asked):
    """Break24: ``?data=`` naming no dataset of this dashboard showed the sample with no word
    (only a missing retail run was named). The value is shown escaped, until a dataset is picked."""
    at = ok(open_dashboard_page(page, {"data": asked}))
    assert at.session_state["data"] == "sample"
    note = (
        f"This link asks for the dataset {md_escape(repr(asked))}, which is not one of this dashboard's "
        "datasets. Showing the sample data."
    )
    assert link_warnings(at) == [note]
    assert link_warnings(ok(at.run())) == [note]
    if page == "app_pages/home.py":  # Home's sidebar names the data; the picker is on every other page
        assert link_warnings(to_your_data(at)) == [note]
    at.sidebar.selectbox(key="data").set_value("synthetic-1000")
    assert link_warnings(ok(at.run())) == []


@pytest.mark.parametrize("query", [
    {"conv": "nope-1", "cmp": "true"},  # the comparison replays B in a run of its own
    {"conv": "nope-1", "data": "synthetic-10000", "sum": "true", "clr": "true"},  # replay slices
])
def test_an_unknown_conversation_in_a_link_is_named_in_the_run_the_user_sees(query, monkeypatch, script_runs):
    """Break24: the warning was drawn by the link's first run only; the runs the dashboard split
    (replay slices, B's own run) ended in st.rerun(), and the run the user saw had lost it."""
    from convmem_dashboard import cache_budget, panel_replay

    monkeypatch.setattr(panel_replay, "RUN_MESSAGES", 3_000)  # 10^4 messages: several slices
    cache_budget.replay_job.clear()  # no replay left done by an earlier test: the page splits
    at = ok(open_dashboard_page("app_pages/token_budget.py", query))
    assert len(script_runs) >= 2  # the page was split
    shown = at.query_params["conv"]
    note = (f"The link's conversation {md_escape(repr('nope-1'))} is not in this dataset: showing "
            f"{md_escape(repr(shown))} instead.")
    assert link_warnings(at) == [note]
    assert link_warnings(ok(at.run())) == []  # the user's next action


@pytest.mark.parametrize("shopper", ["nobody", "<b>x</b>"])
def test_an_unknown_shopper_in_a_link_is_named_once(shopper):
    """Break24: ``?shopper=`` naming no shopper of the dataset was ignored with no word (an unknown
    ``?conv=`` is named)."""
    at = ok(open_dashboard_page("app_pages/listing_eviction.py", {"shopper": shopper}))
    shown = at.query_params["shopper"]
    assert shown != shopper
    assert link_warnings(at) == [
        f"The link's shopper {md_escape(repr(shopper))} is not in this dataset: showing "
        f"{md_escape(repr(shown))} instead."
    ]
    assert link_warnings(ok(at.run())) == []


def test_an_out_of_range_event_or_step_in_a_link_is_named():
    """Break24: ``?ev=`` and ``?ctx_step=`` beyond this conversation's drop events or steps passed
    the sanitizer (its range is the widest any data gives) and Streamlit dropped them silently:
    the default was shown with no word (the README promises a warning, as ``?limit=`` has)."""
    query = {"conv": "fatima_kim_4514-1", "limit": "300", "ev": "99999", "ctx_step": "-0", "pg": "7"}
    at = ok(open_dashboard_page("app_pages/token_budget.py", query))
    events = int(at.number_input(key="ev").max)
    steps = int(at.number_input(key="ctx_step").max)
    assert 1 < events < 99_999 and at.number_input(key="ev").value == 1
    assert link_warnings(at) == [
        f"The link's ev=99999 is outside this conversation's range (1 to {events:,} drop events): "
        "the default is shown.",
    ]  # ctx_step=-0 is step 0 (in range); one table page: no ?pg= widget, nothing to say
    assert link_warnings(ok(at.run())) == []
    at = ok(open_dashboard_page("app_pages/token_budget.py", {**query, "ev": "2", "ctx_step": "5000", "cmp": "true"}))
    assert at.number_input(key="ev").value == 2
    assert link_warnings(at) == [  # kept through the comparison's own run (the page is split)
        f"The link's ctx_step=5000 is outside this conversation's range (0 to {steps:,} add steps): "
        "the default is shown.",
    ]


def test_a_value_the_session_set_is_not_called_the_link_s():
    """The note is for what a link brought: once the widget holds a value of the session's own,
    a range that shrinks under it (a lower limit: fewer drop events) drops it without a word
    about a link."""
    at = ok(open_dashboard_page("app_pages/token_budget.py", {"conv": "fatima_kim_4514-1", "limit": "300"}))
    events = int(at.number_input(key="ev").max)
    at.number_input(key="ev").set_value(events)
    ok(at.run())
    at.slider(key="limit").set_value(1000)
    at = ok(at.run())
    assert int(at.number_input(key="ev").max) < events and link_warnings(at) == []


def test_an_out_of_range_table_page_in_a_link_is_named():
    at = ok(open_dashboard_page("app_pages/token_budget.py", {"data": "synthetic-10000", "pg": "11"}))
    assert link_warnings(at) == [
        "The link's pg=11 is outside this conversation's range (1 to 10 table pages): the default is shown."
    ]
    at = ok(open_dashboard_page("app_pages/token_budget.py", {"data": "synthetic-10000", "pg": "10"}))
    assert link_warnings(at) == []


def test_flaky_store_names_an_overlap_or_step_outside_this_run():
    """Break24: ``?overlap=`` past the page size and ``?step=`` past the run's calls were dropped
    silently (the sanitizer's ranges are the widest any page size or run gives)."""
    at = ok(open_dashboard_page("app_pages/flaky_store.py", {"psize": "5", "overlap": "150"}))
    assert at.number_input(key="overlap").value == 1
    assert link_warnings(at) == [
        "The link's overlap=150 is outside the range this page size allows (0 to 4 messages): the default is shown."
    ]
    assert link_warnings(ok(at.run())) == []
    at = ok(open_dashboard_page("app_pages/flaky_store.py", {"mode": "Step by step", "step": "999999"}))
    calls = int(at.slider(key="step").max)
    assert at.slider(key="step").value == 1 < calls
    assert link_warnings(at) == [
        f"The link's step=999999 is outside this run's range (1 to {calls:,} calls): the default is shown."
    ]
    at = ok(open_dashboard_page("app_pages/flaky_store.py", {"mode": "Step by step", "step": "2", "overlap": "0"}))
    assert link_warnings(at) == [] and at.slider(key="step").value == 2


def test_a_cap_over_the_shopper_s_range_in_a_link_is_named_once():
    """Break24: Listing eviction's ``?cap=`` above this shopper's distinct ids gave the default cap
    with no word (the page reads ``cap`` itself; the sanitizer's range is the widest any data gives)."""
    at = ok(open_dashboard_page("app_pages/listing_eviction.py", {"cap": "2147483647"}))
    slider = at.slider(key="cap")
    assert slider.value < int(slider.max) < 2147483647
    assert link_warnings(at) == [
        f"The link's cap=2147483647 is outside this shopper's range ({int(slider.min)} to {int(slider.max):,} "
        "distinct listing ids): the default is shown."
    ]
    assert link_warnings(ok(at.run())) == []
    at = ok(open_dashboard_page("app_pages/listing_eviction.py", {"cap": "12"}))
    assert at.slider(key="cap").value == 12 and link_warnings(at) == []


@pytest.mark.parametrize("key", ["ctx_step", "limit"])
def test_a_conversation_switch_does_not_call_the_session_s_own_value_the_link_s(key):
    """Break24: the bound widgets write their value into the URL (set here by hand: AppTest has no
    browser to send it back). A switch to a smaller conversation forgets the step (a view of the
    old one) or drops the limit (out of its range) while the URL still holds it: that is the
    session's own value, and it was called the link's."""
    at = ok(open_dashboard_page("app_pages/token_budget.py", {"conv": "fatima_kim_4514-1", "limit": "300"}))
    widget = at.number_input(key=key) if key == "ctx_step" else at.slider(key=key)
    high = int(widget.max)
    widget.set_value(high)
    ok(at.run())
    at.query_params[key] = str(high)  # what the browser's URL holds now
    smaller = None
    for conv in at.selectbox(key="conv").options:
        at.selectbox(key="conv").set_value(conv)
        ok(at.run())
        widget = at.number_input(key=key) if key == "ctx_step" else at.slider(key=key)
        if int(widget.max) < high:
            smaller = conv
            break
    assert smaller is not None and widget.value != high
    assert link_warnings(at) == []


@pytest.mark.parametrize("win", [["0", "5000"], ["9999", "10000"]])
def test_an_out_of_range_step_window_in_a_link_is_named(win):
    """``?win=`` (the two-value range of steps shown) beyond this conversation's steps passed the
    sanitizer (its range is the widest any data gives) and the slider showed every step with no
    word (the session 24 breaker's leftover)."""
    at = ok(open_dashboard_page("app_pages/token_budget.py", {"conv": "fatima_kim_4514-1", "win": win}))
    steps = int(at.slider(key="win").max)
    assert steps < 5_000 and at.slider(key="win").value == (0, steps)
    assert link_warnings(at) == [
        f"The link's win={'&'.join(win)} is outside this conversation's range (0 to {steps:,} add steps): "
        "the default is shown."
    ]
    assert link_warnings(ok(at.run())) == []


def test_an_in_range_step_window_says_nothing_and_is_shown():
    at = ok(open_dashboard_page("app_pages/token_budget.py", {"conv": "fatima_kim_4514-1", "win": ["3", "10"]}))
    assert at.slider(key="win").value == (3, 10) and link_warnings(at) == []
    at.slider(key="win").set_value((5, 12))
    assert link_warnings(ok(at.run())) == []  # the session's own window is not the link's
