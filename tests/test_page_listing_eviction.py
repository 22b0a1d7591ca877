"""AppTest for the Listing eviction page: the numbers shown equal convmem's eviction functions."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from convmem import evict_conversations, eviction_curve, explain_eviction, kept_from
from convmem import group_by_user, load_conversations
from apptest_support import metrics, open_dashboard_page

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
PAGE = "app_pages/listing_eviction.py"


@pytest.fixture(scope="module")
def shoppers():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated yet (scripts/make_sample_data.py)")
    groups = group_by_user(load_conversations(SAMPLE))
    return {u: [list(c.listing_ids) for c in convs] for u, convs in groups.items()}


def shopper_view_default(listings: list[list[str]]) -> int:
    """The page's default cap for a shopper (tables_eviction.shopper_view), via plain values."""
    from convmem.conversations import Conversation
    from convmem_dashboard.tables_eviction import shopper_view

    convs = [Conversation(f"c{i}", "u", (), tuple(ids)) for i, ids in enumerate(listings)]
    return shopper_view(convs).default_cap


def open_page(query: dict[str, str] | None = None, data: str | None = None) -> AppTest:
    return open_dashboard_page(PAGE, query, data)


def assert_shows(at: AppTest, listings: list[list[str]], cap: int) -> None:
    """Metrics, the remaining-ids code block and the tables agree with convmem for this cap."""
    assert not at.exception, [e.value for e in at.exception]
    n = len(listings)
    k = kept_from(listings, cap)
    remaining = evict_conversations(listings, cap)
    shown = metrics(at)
    assert shown["Conversations kept"] == f"{n - k} / {n}"
    assert shown["Conversations dropped"] == str(k)
    assert shown["Distinct ids remaining"] == str(len(remaining))
    assert shown["Distinct ids before eviction"] == str(eviction_curve(listings)[0])
    assert at.code[-1].value == (", ".join(remaining) or "(none)")
    why, ids = at.dataframe[0].value, at.dataframe[1].value
    assert list(ids["listing id"]) == remaining
    steps = explain_eviction(listings, cap)
    dropped = [s for s in steps if s.dropped]
    assert len(why) == len(dropped)  # "Only dropped conversations" is on by default
    assert list(why["released"]) == [len(s.released) for s in dropped]
    assert list(why["shared with newer"]) == [len(s.shared) for s in dropped]
    for row, step in zip(why["why"], dropped):
        assert ("did not lower" in row) == (not step.released and bool(step.shared))


def test_first_load_picks_a_shopper_with_a_drop_that_did_not_help(shoppers):
    at = open_page()
    shopper = at.selectbox(key="shopper").value
    listings = shoppers[shopper]
    assert len(listings) == max(len(v) for u, v in shoppers.items() if u is not None)
    cap = at.slider(key="cap").value
    assert 0 < cap < eviction_curve(listings)[0]
    assert_shows(at, listings, cap)
    steps = explain_eviction(listings, cap)
    assert any(s.dropped and not s.released for s in steps)  # the interesting case on first load
    assert len(at.get("plotly_chart")) == 2


def test_max_listings_slider_changes_kept_and_remaining(shoppers):
    at = open_page()
    listings = shoppers[at.selectbox(key="shopper").value]
    top = eviction_curve(listings)[0]
    for cap in sorted({0, 1, top // 3, top // 2, top - 1, top}):
        at.slider(key="cap").set_value(cap).run()
        assert_shows(at, listings, cap)


def test_showing_every_conversation(shoppers):
    at = open_page()
    listings = shoppers[at.selectbox(key="shopper").value]
    at.checkbox(key="only").uncheck().run()
    assert not at.exception
    table = at.dataframe[0].value
    k = kept_from(listings, at.slider(key="cap").value)
    assert list(table["fate"]) == ["dropped"] * k + ["kept"] * (len(listings) - k)


def test_picking_a_shopper_resets_the_cap_to_its_default(shoppers):
    at = open_page()
    at.slider(key="cap").set_value(1).run()
    for shopper, listings in shoppers.items():
        if shopper is None:
            continue
        at.selectbox(key="shopper").set_value(shopper).run()
        assert not at.exception, shopper
        cap = at.slider(key="cap").value
        assert cap == shopper_view_default(listings), shopper
        assert_shows(at, listings, cap)
        at.run()  # a plain rerun keeps the same cap
        assert at.slider(key="cap").value == cap
        assert_shows(at, listings, cap)


def test_url_state_round_trips_into_the_widgets(shoppers):
    shopper = sorted(u for u in shoppers if u is not None)[0]
    listings = shoppers[shopper]
    cap = eviction_curve(listings)[0] // 2
    at = open_page({"shopper": shopper, "cap": str(cap), "only": "false"})
    assert not at.exception
    assert at.selectbox(key="shopper").value == shopper
    assert at.slider(key="cap").value == cap
    assert at.checkbox(key="only").value is False
    shown = metrics(at)
    assert shown["Conversations dropped"] == str(kept_from(listings, cap))
    assert shown["Distinct ids remaining"] == str(len(evict_conversations(listings, cap)))


def test_out_of_range_url_cap_falls_back_to_the_default(shoppers):
    at = open_page({"cap": "100000", "shopper": "nobody"})
    assert not at.exception
    listings = shoppers[at.selectbox(key="shopper").value]
    assert 0 <= at.slider(key="cap").value <= eviction_curve(listings)[0]
    assert_shows(at, listings, at.slider(key="cap").value)


@pytest.mark.realdata
def test_runs_on_the_real_retail_file(tau_retail_file):
    at = open_page(data="retail")
    assert not at.exception
    groups = group_by_user(load_conversations(tau_retail_file))
    shopper = at.selectbox(key="shopper").value
    assert shopper in groups
    listings = [list(c.listing_ids) for c in groups[shopper]]
    assert_shows(at, listings, at.slider(key="cap").value)
