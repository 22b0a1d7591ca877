"""A live database in a real browser (issues 12.6, 12.7, 10.4): a SQLite store made here, opened
with ``?db=``, one of its conversations loaded on the Flaky store page over the SQLite store with
messages arriving while it pages, and a failed load; screenshots at 1,400 x 900 with no metric
value or label cut off.
"""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlsplit

import pytest
from e2e_helpers import METRICS_CUT_JS, assert_no_exception, metric_values, screenshot, wait_for_app

from convmem import load_conversations
from convmem.stores import SQLStore
from convmem.synthetic import generate_conversation
from convmem_dashboard.view_flaky_store import sql_message_cap

pytestmark = pytest.mark.e2e

WIDE = {"width": 1400, "height": 900}
SQLITE_STORE = "SQLite store (keyset cursors)"



@pytest.fixture(scope="module")
def agent_db(tmp_path_factory):
    """A convmem SQLite store: 3 sample conversations and one of 12,345 generated messages."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    convs = list(load_conversations(root / "sample_data" / "shoppers.jsonl")[:3])
    big = generate_conversation(12_345, seed=7)
    path = tmp_path_factory.mktemp("db") / "agent.sqlite"
    SQLStore.from_conversations(f"sqlite:///{path}", [*convs, big]).close()
    return path, big


def _metrics(page) -> list[dict]:
    page.wait_for_selector('[data-testid="stMetricValue"]')
    return page.evaluate(METRICS_CUT_JS)


def test_database_conversation_on_the_flaky_store_page(page, streamlit_url, screenshot_dir, agent_db):
    path, big = agent_db
    page.set_viewport_size(WIDE)
    query = (f"db={quote(f'sqlite:///{path}', safe='')}&store={quote(SQLITE_STORE)}"
             f"&arr=250&arr_at=40&hwm=true&psize=50&tries=10&conv={quote(big.id)}")
    page.goto(f"{streamlit_url}/flaky_store?{query}", wait_until="domcontentloaded")
    wait_for_app(page, charts=1)
    assert_no_exception(page)
    # The database URL left the address bar; the link names the dataset by a hash.
    params = parse_qs(urlsplit(page.url).query)
    assert "db" not in params and str(path) not in page.url
    assert params.get("data", [""])[0].startswith("db:")
    shown = _metrics(page)
    by_label = {m["label"]: m["value"] for m in shown}
    held = min(len(big.messages), sql_message_cap(50))  # the SQLite store mode's cap at page size 50
    total = held + 250
    assert by_label[f"Loaded (of {total:,} messages)"] == f"{held:,}"
    assert by_label["Arrived during the load"] == "250"
    assert by_label["Returned by the follow-up"] == "250"
    assert by_label["Lost"] == "0" and by_label["Repeated"] == "0"
    cut = [m for m in shown if m["cut"]]
    shot = screenshot(page, screenshot_dir, "database_flaky_store_arrivals_1400")
    assert not cut, f"metrics cut off at 1,400 px: {cut} (see {shot})"


def test_database_failed_load_is_honest_at_1400(page, streamlit_url, screenshot_dir, agent_db):
    path, big = agent_db
    page.set_viewport_size(WIDE)
    query = (f"db={quote(f'sqlite:///{path}', safe='')}&store={quote(SQLITE_STORE)}"
             f"&burst=5&seed=0&rate=0.05&psize=50&conv={quote(big.id)}")
    page.goto(f"{streamlit_url}/flaky_store?{query}", wait_until="domcontentloaded")
    wait_for_app(page, charts=1)
    assert_no_exception(page)
    shown = _metrics(page)
    labels = [m["label"] for m in shown]
    assert "Lost" not in labels and "Loaded before the failure" in labels
    loaded = {m["label"]: m["value"] for m in shown}["Loaded before the failure"]
    assert int(loaded.replace(",", "")) > 999 and "," in loaded  # thousands separators
    alerts = page.locator('[data-testid="stAlert"]').all_inner_texts()  # the store's cap note comes first
    assert any("Nothing is lost" in text for text in alerts), alerts
    cut = [m for m in shown if m["cut"]]
    shot = screenshot(page, screenshot_dir, "database_flaky_store_failure_1400")
    assert not cut, f"metrics cut off at 1,400 px: {cut} (see {shot})"
    assert all(metric_values(page))


def test_your_data_lists_the_database_conversations(page, streamlit_url, screenshot_dir, agent_db):
    path, big = agent_db
    page.set_viewport_size(WIDE)
    page.goto(f"{streamlit_url}/your_data?db={quote(f'sqlite:///{path}', safe='')}", wait_until="domcontentloaded")
    wait_for_app(page)
    assert_no_exception(page)
    assert "db" not in parse_qs(urlsplit(page.url).query)
    shown = _metrics(page)
    by_label = {m["label"]: m["value"] for m in shown}
    assert by_label["Conversations"] == "4"
    page.wait_for_selector('[data-testid="stDataFrame"]')
    shot = screenshot(page, screenshot_dir, "database_your_data_1400")
    assert not [m for m in shown if m["cut"]], f"metrics cut off (see {shot})"
