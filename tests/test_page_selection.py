"""AppTest for the one conversation selection (issue 10 item 2), the Listing eviction controls
(item 5), each page's question (item 8) and the retail dataset offered only when present.

Expected values come from convmem and the pure rules (convmem_dashboard.choices), never from the
page.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from convmem import evict_conversations, group_by_user, kept_from, load_conversations
from convmem_dashboard import data as data_module
from convmem_dashboard.choices import conversation_label, default_conversation_id, most_tokens_id
from convmem_dashboard.listing_definitions import extractor, listings_of
from convmem_dashboard.questions import QUESTIONS
from convmem_dashboard.data import md_escape
from convmem_dashboard.view_home import conversation_caption
from apptest_support import PAGES, YOUR_DATA, metrics, ok, open_dashboard_page

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
LISTING = "app_pages/listing_eviction.py"


@pytest.fixture(scope="module")
def convs():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated yet (scripts/make_sample_data.py)")
    return load_conversations(SAMPLE)


def default_cap(listings) -> int:
    from convmem.conversations import Conversation
    from convmem_dashboard.tables_eviction import shopper_view

    return shopper_view([Conversation(f"c{i}", "u", (), tuple(x)) for i, x in enumerate(listings)]).default_cap


def picked(at) -> str:
    return at.selectbox(key="conv").value


HOME = "app_pages/home.py"


def home_line(at, convs, conv_id: str) -> None:
    """Home shows the selection as one line of text (it draws no picker: issue 10 item 3)."""
    conv = next(c for c in convs if c.id == conv_id)
    lines = [m.value for m in at.markdown if m.value.startswith("Conversation in use: ")]
    assert lines == [f"Conversation in use: {conversation_caption(conv)}"], lines


def test_every_page_opens_on_the_same_default_conversation(convs):
    default = default_conversation_id(convs)
    shopper = next(c.user_id for c in convs if c.id == default)
    for page in PAGES:
        at = ok(open_dashboard_page(page))
        if page == LISTING:
            assert at.selectbox(key="shopper").value == shopper
        elif page == HOME:
            home_line(at, convs, default)
        else:
            assert picked(at) == default, page
        assert at.query_params["conv"] == default, page
        # the page's first sentence says which question it answers
        name = Path(page).stem
        assert f"**{QUESTIONS[name]}**" in [m.value for m in at.markdown], page


def test_the_picker_labels_show_shopper_title_and_counts(convs):
    at = ok(open_dashboard_page("app_pages/token_budget.py"))
    box = at.selectbox(key="conv")
    assert box.options == [conversation_label(c) for c in convs]
    assert box.value == default_conversation_id(convs)  # the value stays the plain id


def test_a_choice_on_one_page_is_kept_on_every_other_page(convs):
    default = default_conversation_id(convs)
    other = next(c for c in reversed(convs) if c.user_id != next(
        d.user_id for d in convs if d.id == default))
    at = ok(open_dashboard_page("app_pages/token_budget.py"))
    at.selectbox(key="conv").set_value(other.id)
    ok(at.run())
    assert picked(at) == other.id and at.query_params["conv"] == other.id
    for page in ("app_pages/flaky_store.py", HOME, YOUR_DATA, LISTING, "app_pages/token_budget.py"):
        at.switch_page(page)
        ok(at.run())
        if page == LISTING:
            assert at.selectbox(key="shopper").value == other.user_id
        elif page == HOME:
            home_line(at, convs, other.id)
        else:
            assert picked(at) == other.id, page
        assert at.query_params["conv"] == other.id, page
        ok(at.run())  # a plain rerun keeps it
        assert at.query_params["conv"] == other.id, page


def test_the_choice_is_kept_across_datasets_that_hold_it(convs):
    """The sample read from its file, then from its SQLite store: the same conversation stays
    (session 21's new user lost it); a dataset without it shows its own default."""
    default = default_conversation_id(convs)
    other = next(c.id for c in reversed(convs) if c.id != default)
    at = ok(open_dashboard_page("app_pages/token_budget.py"))
    at.selectbox(key="conv").set_value(other)
    ok(at.run())
    at.selectbox(key="data").set_value(data_module.SAMPLE_DB_KEY)
    ok(at.run())
    assert at.selectbox(key="data").value == data_module.SAMPLE_DB_KEY
    assert picked(at) == other and at.query_params["conv"] == other
    at.selectbox(key="data").set_value("synthetic-1000")
    ok(at.run())
    synthetic = picked(at)
    assert synthetic != other and at.query_params["conv"] == synthetic
    at.selectbox(key="data").set_value("sample")
    ok(at.run())
    assert picked(at) == other  # the sample's own last choice


def test_the_data_in_use_is_kept_in_the_url_on_home_and_every_page():
    """Home's sidebar names the data in use without a picker (issue 10 item 3), so ``?data=`` is
    written by hand: a widget bound to the URL takes its parameter out of the URL on a page that
    does not draw it. The choice and the link survive Home; the sample leaves no ``?data=``."""
    at = ok(open_dashboard_page("app_pages/token_budget.py"))
    assert "data" not in at.query_params
    at.selectbox(key="data").set_value("synthetic-1000")
    ok(at.run())
    assert at.query_params["data"] == "synthetic-1000"
    for page in (HOME, LISTING, HOME, YOUR_DATA):
        at.switch_page(page)
        ok(at.run())
        assert at.query_params["data"] == "synthetic-1000", page
        assert metrics(at).get("Messages", "1,000") == "1,000", page
        if page == HOME:
            assert not at.sidebar.selectbox
            assert [m.value for m in at.sidebar.markdown] == ["**Data in use:** `synthetic-1000`"]
        else:
            assert at.sidebar.selectbox(key="data").value == "synthetic-1000", page
    at.sidebar.selectbox(key="data").set_value("sample")
    ok(at.run())
    assert "data" not in at.query_params
    at.switch_page(HOME)
    assert metrics(ok(at.run()))["Messages"] == "435"


def test_a_new_data_value_in_the_url_wins_over_the_session(convs):
    """The browser's back button or an edited URL in the same session: a ``?data=`` the session
    has not seen is adopted (as ``?conv=`` is); the one it wrote itself is not re-read."""
    at = ok(open_dashboard_page(HOME))
    assert metrics(at)["Messages"] == "435"
    at.query_params["data"] = "synthetic-1000"
    assert metrics(ok(at.run()))["Messages"] == "1,000"
    at.switch_page("app_pages/token_budget.py")
    ok(at.run())
    at.selectbox(key="data").set_value("sample")  # the URL said synthetic-1000: the pick wins
    ok(at.run())
    assert at.selectbox(key="data").value == "sample" and "data" not in at.query_params
    at.switch_page(HOME)
    assert metrics(ok(at.run()))["Messages"] == "435"


def test_picking_a_shopper_selects_its_longest_conversation_everywhere(convs):
    groups = group_by_user(convs)
    default = default_conversation_id(convs)
    shopper = next(u for u in groups if u and default not in {c.id for c in groups[u]})
    at = ok(open_dashboard_page(LISTING))
    at.selectbox(key="shopper").set_value(shopper)
    ok(at.run())
    expected = most_tokens_id(groups[shopper])
    assert at.query_params["shopper"] == shopper and at.query_params["conv"] == expected
    at.switch_page("app_pages/flaky_store.py")
    ok(at.run())
    assert picked(at) == expected


def test_url_conv_round_trips_and_a_bad_one_falls_back(convs):
    target = convs[3].id
    at = ok(open_dashboard_page(HOME, {"conv": target}))
    home_line(at, convs, target)
    assert at.query_params["conv"] == target
    at = ok(open_dashboard_page(YOUR_DATA, {"conv": target}))
    assert picked(at) == target and at.query_params["conv"] == target
    at.switch_page("app_pages/flaky_store.py")
    ok(at.run())
    assert picked(at) == target
    at = ok(open_dashboard_page(YOUR_DATA, {"conv": "no-such-conversation"}))
    assert picked(at) == default_conversation_id(convs)
    # ?shopper= of an old link selects that shopper (its longest conversation)
    groups = group_by_user(convs)
    shopper = sorted(u for u in groups if u)[0]
    at = ok(open_dashboard_page(LISTING, {"shopper": shopper}))
    assert at.selectbox(key="shopper").value == shopper
    assert at.query_params["conv"] == most_tokens_id(groups[shopper])


# ------------------------------------------------------------------------------ listing eviction


def test_cap_slider_range_fits_the_shopper_and_round_trips(convs):
    groups = group_by_user(convs)
    for shopper in sorted(u for u in groups if u)[:3]:
        listings = [list(c.listing_ids) for c in groups[shopper]]
        top = len({x for ids in listings for x in ids})
        cap = top // 2
        at = ok(open_dashboard_page(LISTING, {"shopper": shopper, "cap": str(cap)}))
        slider = at.slider(key="cap")
        assert (slider.min, slider.max, slider.value) == (0, max(top, 1), cap), shopper
        if cap != default_cap(listings):  # a link keeps a cap that is not the default
            assert at.query_params["cap"] == str(cap)
        assert metrics(at)["Conversations dropped"] == f"{kept_from(listings, cap):,}"
        slider.set_value(top)
        ok(at.run())
        assert metrics(at)["Conversations dropped"] == "0"
        assert at.query_params.get("cap") == (None if top == default_cap(listings) else str(top))
        at.slider(key="cap").set_value(default_cap(listings))
        ok(at.run())
        assert "cap" not in at.query_params  # the default is left out of the URL


def test_no_cut_notice_when_the_newest_conversation_alone_is_over_the_cap(convs):
    groups = group_by_user(convs)
    shopper = next(u for u, g in groups.items() if u and len(set(g[-1].listing_ids)) > 0)
    listings = [list(c.listing_ids) for c in groups[shopper]]
    newest = len(set(listings[-1]))
    at = ok(open_dashboard_page(LISTING, {"shopper": shopper, "cap": str(newest - 1)}))
    assert metrics(at)["Conversations dropped"] == str(len(listings))
    assert evict_conversations(listings, newest - 1) == []
    notes = [w.value for w in at.warning]
    assert any(f"newest conversation alone mentions {newest} distinct ids" in n for n in notes), notes
    at.slider(key="cap").set_value(newest)
    ok(at.run())
    assert not any("No cut meets" in w.value for w in at.warning)


def test_listing_definition_radio_round_trips_and_counts_what_it_says(convs):
    groups = group_by_user(convs)
    shopper = next(u for u, g in groups.items() if u and len(g) > 1)
    at = ok(open_dashboard_page(LISTING, {"shopper": shopper, "listing": "keys"}))
    radio = at.radio(key="listing")
    assert radio.value == "keys" and radio.options == ["digits", "keys"]  # no catalogue here
    keyed = listings_of(groups[shopper], extractor("keys"))
    top = len({x for ids in keyed for x in ids})
    assert metrics(at)["Distinct ids before eviction"] == f"{top:,}"
    assert at.slider(key="cap").max == max(top, 1)
    radio.set_value("digits")
    ok(at.run())
    digits = {x for c in groups[shopper] for x in c.listing_ids}
    assert metrics(at)["Distinct ids before eviction"] == f"{len(digits):,}"
    # a catalogue definition asked for by a link is not offered without a catalogue
    at = ok(open_dashboard_page(LISTING, {"listing": "catalog"}))
    assert at.radio(key="listing").value == "digits"


@pytest.mark.realdata
def test_retail_offers_the_catalogue_and_says_what_counts(tau_retail_file):
    at = ok(open_dashboard_page(LISTING, {"listing": "catalog"}, data="retail"))
    radio = at.radio(key="listing")
    assert radio.options == ["digits", "catalog", "keys"] and radio.value == "catalog"
    captions = [c.value for c in at.caption]
    assert any("Newest conversation of this shopper" in c and "product id" in c for c in captions)
    radio.set_value("digits")
    ok(at.run())
    captions = [c.value for c in at.caption]
    assert any('Pick "catalog"' in c for c in captions), captions


# ------------------------------------------------------------------------ retail only when present


def test_a_clone_without_shared_offers_no_retail_and_says_so_for_a_retail_link(monkeypatch, tmp_path):
    monkeypatch.setattr(data_module, "RETAIL_FILE", tmp_path / "absent.json")
    at = ok(open_dashboard_page("app_pages/your_data.py", {"data": "retail"}))
    box = at.sidebar.selectbox(key="data")
    assert "retail" not in box.options and box.value == "sample"
    assert "retail" not in box.help
    assert any("not on this machine" in w.value for w in at.warning)
    box.set_value("synthetic-1000")
    ok(at.run())
    assert not any("not on this machine" in w.value for w in at.warning)


@pytest.mark.parametrize("first", [HOME, LISTING, "app_pages/token_budget.py"])
def test_a_link_whose_shopper_is_not_its_conversations_keeps_the_conversation_and_says_so(convs, first):
    """break25: ``?conv=`` of one shopper with ``?shopper=`` of another, opened on Home, showed the
    conversation there, then Listing eviction adopted the shopper and silently swapped the
    conversation on every page. The conversation (the more specific) now decides, and the page
    that opens the link says the shopper was not taken."""
    conv = next(c for c in convs if c.user_id)
    other = next(c.user_id for c in convs if c.user_id and c.user_id != conv.user_id)
    at = ok(open_dashboard_page(first, {"conv": conv.id, "shopper": other}))
    assert [w.value for w in at.warning] == [
        f"The link's shopper {md_escape(repr(other))} is not the shopper of its conversation "
        f"{md_escape(repr(conv.id))}: showing that conversation and its shopper "
        f"{md_escape(repr(conv.user_id))}."
    ]
    for page in (LISTING, HOME, "app_pages/flaky_store.py", LISTING):
        at.switch_page(page)
        ok(at.run())
        assert at.query_params["conv"] == conv.id, page
        if page == LISTING:
            assert at.selectbox(key="shopper").value == conv.user_id
            assert at.query_params["shopper"] == conv.user_id
        assert [w.value for w in at.warning] == [], page  # said once, where the link opened


def test_a_link_with_an_unknown_conversation_still_takes_its_shopper(convs):
    shopper = sorted({c.user_id for c in convs if c.user_id})[-1]
    at = ok(open_dashboard_page(LISTING, {"conv": "no-such-conversation", "shopper": shopper}))
    assert at.selectbox(key="shopper").value == shopper
