"""The limit sweep at 10^5 messages shows a progress bar while its limits run (issue 10 item 3), in
a real browser, and removes it when the sweep is drawn.

The link opens the Token budget page on the 10^5-message synthetic conversation with the sweep
open and settings no other test uses (so every limit is computed here, not read from the shared
server's cache). As tests/e2e/test_cold_progress.py, the browser records every visible progress
indicator (e2e_helpers.RECORD_PROGRESS_JS); the test waits (bounded) for the finished page and
then checks what was seen. It never measures time.
"""

from __future__ import annotations

import json
import re

import pytest
from e2e_helpers import (
    RECORD_PROGRESS_JS,
    RUN_TIMEOUT_MS,
    VIEWPORT,
    assert_no_exception,
    dataframe,
    screenshot,
    wait_for_app,
)

from convmem_dashboard.questions import QUESTIONS

pytestmark = pytest.mark.e2e

LINK = "/token_budget?data=synthetic-100000&sweep=true&cmp=false&tmode=percent&tgt=55&pin_user=true&sw_n=12"
#: Bounded wait: generating 10^5 messages, the page's replay, then 12 limits (two passes each).
TIMEOUT_MS = 480_000
#: The bar's text: limits done of the grid's (at most sw_n) limits, and the last limit done.
BAR = re.compile(r"^Sweeping limits \(one replay per new limit\): (\d+) of (\d+) \(limit [\d,]+ tokens\)$")


def test_sweep_at_1e5_shows_a_progress_bar_then_the_rows(browser, streamlit_url, screenshot_dir):
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(RUN_TIMEOUT_MS)
    try:
        context.add_init_script(RECORD_PROGRESS_JS % json.dumps(QUESTIONS["token_budget"]))
        page = context.new_page()
        page.goto(streamlit_url + LINK, wait_until="commit")
        try:
            page.get_by_text("Look for the knee").wait_for(state="visible", timeout=TIMEOUT_MS)
            wait_for_app(page, timeout_ms=TIMEOUT_MS)
        except Exception:
            screenshot(page, screenshot_dir, "sweep_progress_timeout")
            raise AssertionError(f"no finished sweep; progress seen: {page.evaluate('window.__progress')}")
        assert_no_exception(page)
        seen = page.evaluate("window.__progress")
        bars_left = page.locator('[data-testid="stProgress"]').count()
        table = dataframe(page, "limit (tokens)")
        screenshot(page, screenshot_dir, "sweep_progress_done")
    finally:
        context.close()

    bars = [(int(m.group(1)), int(m.group(2))) for m in (BAR.match(s["text"]) for s in seen) if m]
    assert bars, seen  # the bar was drawn, naming the limits done and the last limit done
    (total,) = {t for _, t in bars}  # one grid, of at most sw_n = 12 limits
    counts = [done for done, _ in bars]
    assert 2 <= total <= 12 and counts == sorted(counts) and all(1 <= c <= total for c in counts), seen
    assert all(s["questionShown"] for s in seen if BAR.match(s["text"])), seen  # over the page, not instead of it
    assert bars_left == 0  # removed once the rows are in
    assert table["cells"], table  # the sweep table drawn
