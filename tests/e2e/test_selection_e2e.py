"""The shared conversation selection and the no-network promise, in a real browser (issue 10 items
2, 6 and 8).

* Every request of every page is recorded (the page's own and every subresource: scripts,
  fonts, icons, favicons, websockets) and none may go to a host other than localhost/127.0.0.1.
* A conversation chosen on one page is the one shown on the next, after navigation in the app.
* Screenshots at 1,400 x 900 of every page go to tests/e2e/screenshots/selection_*.png.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from e2e_helpers import assert_no_exception, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

WIDE = {"width": 1400, "height": 900}
PAGES = [("home", "/", 0), ("your_data", "/your_data", 0), ("flaky_store", "/flaky_store", 1), ("token_budget", "/token_budget", 2),
         ("listing_eviction", "/listing_eviction", 2)]
NAV = {"home": "Home", "your_data": "Your data", "flaky_store": "Flaky store", "token_budget": "Token budget",
       "listing_eviction": "Listing eviction"}
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}
#: Each page's first sentence under its title (convmem_dashboard.questions).
QUESTION_STARTS = {"home": "What does convmem keep", "your_data": "Which conversations do the pages read",
                   "flaky_store": "Does a conversation load whole",
                   "token_budget": "Under a token limit", "listing_eviction": "Which of a shopper"}


def outside(urls: list[str]) -> list[str]:
    """The recorded URLs that leave the machine (data:/blob: URLs never leave it)."""
    bad = []
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about", "chrome", "chrome-extension"):
            continue
        if parts.hostname not in LOCAL_HOSTS:
            bad.append(url)
    return bad


def combobox(page, name: str):
    """The searchable input of the st.selectbox labelled ``name`` in the main area."""
    return page.locator('[data-testid="stMain"]').get_by_role("combobox", name=name)


def picked_label(page, name: str) -> str:
    return combobox(page, name).input_value().strip()


#: Waits of this file (ms): the machine running the suite may be shared and busy; a page whose
#: chart code is still loading shows skeletons for a while.
SLOW_MS = 120_000


def go(page, name: str, charts: int) -> None:
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=NAV[name]).click()
    page.wait_for_url(re.compile(("/" + name) if name != "home" else r"/(\?|$)"))
    wait_for_app(page, charts=charts, timeout_ms=SLOW_MS)
    assert_no_exception(page)


def test_no_request_leaves_localhost_on_any_page(browser, streamlit_url, screenshot_dir):
    context = browser.new_context(viewport=WIDE)
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    context.on("websocket", lambda ws: requests.append(ws.url))
    page = context.new_page()
    try:
        for name, path, charts in PAGES:
            page.goto(streamlit_url + path, wait_until="domcontentloaded")
            wait_for_app(page, charts=charts, timeout_ms=SLOW_MS)
            assert_no_exception(page)
            page.wait_for_timeout(500)  # late subresources (fonts, favicon) are requested too
            question = page.locator("strong").filter(has_text=QUESTION_STARTS[name])
            assert question.count() >= 1, f"{name}: its question sentence is not shown"
            screenshot(page, screenshot_dir, f"selection_{name}")
        # In-app navigation loads code chunks and icons of its own.
        for name, _path, charts in PAGES:
            go(page, name, charts)
    finally:
        context.close()
    assert requests, "no request was recorded"
    assert any("/_stcore/" in u for u in requests), requests[:20]
    assert outside(requests) == [], outside(requests)


def test_a_conversation_chosen_on_one_page_is_shown_on_the_next(browser, streamlit_url, screenshot_dir):
    context = browser.new_context(viewport=WIDE)
    page = context.new_page()
    try:
        # Charts are not waited for here: this test is about the selection (the other test
        # waits for every page's charts).
        page.goto(streamlit_url + "/", wait_until="domcontentloaded")
        wait_for_app(page, timeout_ms=SLOW_MS)
        go(page, "token_budget", 0)
        first = picked_label(page, "Conversation")
        default_conv = parse_qs(urlsplit(page.url).query)["conv"][0]
        # Search the picker by another shopper's name and take the first match.
        combobox(page, "Conversation").click()
        page.keyboard.type("raj_ali")
        options = page.locator('[role="option"]')
        options.first.wait_for()
        chosen = options.first.inner_text().strip()
        assert "raj_ali" in chosen and chosen != first
        options.first.click()
        wait_for_app(page, timeout_ms=SLOW_MS)
        assert picked_label(page, "Conversation") == chosen
        conv_id = parse_qs(urlsplit(page.url).query)["conv"][0]
        assert conv_id != default_conv and chosen.endswith(conv_id)

        go(page, "flaky_store", 0)
        assert picked_label(page, "Conversation") == chosen
        assert parse_qs(urlsplit(page.url).query)["conv"] == [conv_id]
        screenshot(page, screenshot_dir, "selection_kept_flaky_store")

        go(page, "listing_eviction", 0)
        assert picked_label(page, "Shopper").startswith("raj_ali")
        q = parse_qs(urlsplit(page.url).query)
        assert q["conv"] == [conv_id] and q["shopper"][0].startswith("raj_ali")
        screenshot(page, screenshot_dir, "selection_kept_listing_eviction")

        go(page, "your_data", 0)
        assert picked_label(page, "Conversation") == chosen
        go(page, "home", 0)  # Home names it in a line of text (it draws no picker)
        line = page.locator('[data-testid="stMain"]').get_by_text(re.compile(r"^Conversation in use: "))
        assert conv_id.replace("_", "") in line.inner_text().replace("_", "")

        # The link reproduces the choice in a new session.
        other = browser.new_context(viewport=WIDE).new_page()
        other.goto(streamlit_url + f"/flaky_store?conv={conv_id}", wait_until="domcontentloaded")
        wait_for_app(other, timeout_ms=SLOW_MS)  # a cold session on a busy machine
        assert picked_label(other, "Conversation") == chosen
        other.context.close()
    finally:
        context.close()


@pytest.mark.realdata
def test_retail_listing_definition_and_no_cut_notice(browser, streamlit_url, screenshot_dir, tau_retail_file):
    """On the real retail run: the catalogue definition is offered and bound to the URL, the page
    says what the ids counted are, and a cap under the newest conversation's ids says no cut
    meets it."""
    context = browser.new_context(viewport=WIDE)
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    try:
        page.goto(streamlit_url + "/listing_eviction?data=retail&listing=catalog&cap=0",
                  wait_until="domcontentloaded")
        wait_for_app(page, timeout_ms=SLOW_MS)
        assert_no_exception(page)
        main = page.locator('[data-testid="stMain"]')
        assert main.get_by_role("radio", name="catalog").is_checked()
        text = main.inner_text()
        assert "Newest conversation of this shopper" in text and "catalogue item id" in text
        assert "No cut meets max_listings = 0" in text
        q = parse_qs(urlsplit(page.url).query)
        assert q["listing"] == ["catalog"] and q["cap"] == ["0"]
        screenshot(page, screenshot_dir, "selection_retail_listing_no_cut")
    finally:
        context.close()
    assert outside(requests) == [], outside(requests)
