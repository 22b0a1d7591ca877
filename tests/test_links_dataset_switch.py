"""Links that name a dataset, a database and a shopper, and a link made after a dataset switch,
checked with AppTest (session 27's breaker).

Each test opens the dashboard as a link would and expects the link's every parameter to be used
or named in a readable message (never dropped silently), and the URL to reproduce the view. Both
links failed before session 27's fixes (the database error was not shown, the shopper passed over).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from convmem import load_conversations
from convmem_dashboard import data as data_module
from convmem_dashboard.choices import most_tokens_id
from apptest_support import dashboard_app, ok, open_dashboard_page

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
HOME = "app_pages/home.py"
TOKEN_BUDGET = "app_pages/token_budget.py"


def shown_text(at) -> str:
    return "\n".join([e.value for e in at.error] + [w.value for w in at.warning] + [c.value for c in at.code])


def test_a_database_link_that_fails_is_named_even_when_the_link_also_names_a_dataset():
    """``?db=`` that cannot be opened leaves its error for the picker, which shows it only while
    the sample is in use: with ``?data=synthetic-1000`` beside it the error is dropped silently
    (the same link without ``?data=`` shows "The database could not be opened")."""
    at = ok(open_dashboard_page(HOME, {"db": "no-such-file.sqlite", "data": "synthetic-1000"}))
    assert "no-such-file.sqlite" in shown_text(at), shown_text(at)
    assert [e.value for e in at.error][0].startswith(
        "The database could not be opened; showing Synthetic, 1,000 messages, the dataset the link also names.")
    # shown with that dataset only: a pick of another one forgets it
    at.switch_page("app_pages/token_budget.py")
    ok(at.run())
    assert "no-such-file.sqlite" in shown_text(at)
    at.selectbox(key="data").set_value("sample")
    ok(at.run())
    assert "no-such-file.sqlite" not in shown_text(at) and not at.error


@pytest.mark.parametrize("page", [HOME, TOKEN_BUDGET, "app_pages/your_data.py", "app_pages/flaky_store.py"])
def test_a_shopper_link_selects_that_shoppers_conversation_on_any_page(page):
    """``?shopper=`` is the shared selection as a shopper (convmem_dashboard.selection), but only
    the Listing eviction page read it: opened on any other page the link's shopper was passed over
    without a word and the URL kept it beside a ``?conv=`` of another shopper. Now the shopper's
    conversation with the most tokens is selected, as the shopper picker does."""
    convs = load_conversations(SAMPLE)
    shopper = "raj_ali_9480"
    own = [c for c in convs if c.user_id == shopper]
    assert own and most_tokens_id(own) != most_tokens_id(convs), "the sample changed: pick another shopper"
    at = ok(open_dashboard_page(page, {"shopper": shopper}))
    assert at.query_params["conv"] == most_tokens_id(own), (dict(at.query_params), shown_text(at))
    if "shopper" in at.query_params:  # the link the page leaves agrees with itself
        assert at.query_params["shopper"] == shopper


def test_a_link_conversation_still_decides_its_shopper():
    """The link's ``?conv=`` wins over its ``?shopper=`` (break25), on Home as before."""
    convs = load_conversations(SAMPLE)
    other = next(c for c in convs if c.user_id != "raj_ali_9480")
    at = ok(open_dashboard_page(HOME, {"shopper": "raj_ali_9480", "conv": other.id}))
    assert at.query_params["conv"] == other.id


@pytest.mark.skipif(not data_module.RETAIL_FILE.is_file(), reason="../shared/real_data is absent")
def test_the_token_budget_link_after_a_dataset_pick_reopens_the_same_limit():
    """Token budget on the sample (limit 430, its default), pick retail: the view showed 430
    (inside retail's range) but the URL had no ``limit`` (430 is not retail's default, 2,600), so
    the link opened at another limit. Now a switch of dataset or conversation starts from the new
    conversation's default limit, in the view and in the link."""
    at = ok(open_dashboard_page(TOKEN_BUDGET))
    at.selectbox(key="data").set_value("retail")
    ok(at.run())
    shown = at.slider(key="limit").value
    link = dict(at.query_params)
    fresh = dashboard_app()
    fresh.switch_page(TOKEN_BUDGET)
    fresh.query_params.update(link)
    ok(fresh.run())
    assert fresh.slider(key="limit").value == shown, (link, shown, fresh.slider(key="limit").value)
    assert shown == 2600 and at.number_input(key="limit_n").value == 2600  # retail's default, both widgets
