"""The limit sweep at 10^5 messages fills in on its own without blocking the page (issue 10 item 3),
in a real browser: the page is drawn with the bar "Sweeping limits: 0 of 10" (a full run computes
no limit at this size; tests/test_page_sweep_fill.py counts them), follow-up fragment runs (``run_every``) add limits and move the bar with
the chart and table of the limits done, and the last one draws the complete sweep.

The link opens the Token budget page on the 10^5-message synthetic conversation with the sweep
open and settings no other test uses (so every limit is computed here, not read from the shared
server's cache). As tests/e2e/test_cold_progress.py, the browser records every visible progress
indicator (e2e_helpers.RECORD_PROGRESS_JS); the test takes a screenshot while the sweep is partial
and one when it is complete (tests/e2e/screenshots/sweep_fill_*.png). It never measures time.
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
    metric_values,
    screenshot,
    wait_for_app,
)

from convmem_dashboard.questions import QUESTIONS

pytestmark = pytest.mark.e2e

LINK = "/token_budget?data=synthetic-100000&sweep=true&cmp=false&tmode=percent&tgt=55&pin_user=true&sw_n=12"
#: Bounded wait: generating 10^5 messages, the page's replay, then 12 limits (one replay each).
TIMEOUT_MS = 480_000
#: The bar's text while the sweep fills: the limits done of the grid's (at most sw_n) limits.
BAR = re.compile(r"^Sweeping limits: (\d+) of (\d+)$")
#: A partial sweep with at least one limit done (its chart and table drawn).
MIDWAY_JS = """() => Array.from(document.querySelectorAll('[data-testid="stProgress"]')).some(el => {
  const m = el.innerText.trim().match(/^Sweeping limits: (\\d+) of (\\d+)$/);
  return m && +m[1] >= 2 && +m[1] < +m[2];
})"""


def test_sweep_at_1e5_fills_in_on_its_own_then_shows_it_whole(browser, streamlit_url, screenshot_dir):
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(RUN_TIMEOUT_MS)
    try:
        context.add_init_script(RECORD_PROGRESS_JS % json.dumps(QUESTIONS["token_budget"]))
        page = context.new_page()
        page.goto(streamlit_url + LINK, wait_until="commit")
        try:
            page.wait_for_function(MIDWAY_JS, timeout=TIMEOUT_MS)
            page.get_by_text("Partial sweep:").first.scroll_into_view_if_needed()
            midway_metrics = metric_values(page)  # the page above is drawn and usable meanwhile
            midway_caption = page.get_by_text("Partial sweep:").first.inner_text()
            screenshot(page, screenshot_dir, "sweep_fill_midway")
            page.get_by_text("Look for the knee").wait_for(state="visible", timeout=TIMEOUT_MS)
            wait_for_app(page, timeout_ms=TIMEOUT_MS)
        except Exception:
            screenshot(page, screenshot_dir, "sweep_fill_timeout")
            raise AssertionError(f"no finished sweep; progress seen: {page.evaluate('window.__progress')}")
        assert_no_exception(page)
        seen = page.evaluate("window.__progress")
        bars_left = page.locator('[data-testid="stProgress"]').count()
        bar_left_texts = page.locator('[data-testid="stProgress"]').all_inner_texts()
        partial_left = page.get_by_text("Partial sweep:").count()
        table = dataframe(page, "limit (tokens)", second="compactions")
        page.get_by_text("Look for the knee").scroll_into_view_if_needed()
        screenshot(page, screenshot_dir, "sweep_fill_done")
    finally:
        context.close()

    bars = [(int(m.group(1)), int(m.group(2))) for m in (BAR.match(s["text"]) for s in seen) if m]
    (total,) = {t for _, t in bars}  # one grid, of at most sw_n = 12 limits
    counts = [done for done, _ in bars]
    assert counts == sorted(counts) and len(counts) >= 3 and counts[-1] < total, seen  # filled step by step
    assert 2 <= total <= 12
    assert all(s["questionShown"] for s in seen if BAR.match(s["text"])), seen  # over the page, not instead of it
    assert len(midway_metrics) >= 6, midway_metrics
    m = re.match(r"Partial sweep: (\d+) of (\d+) limits done", midway_caption)
    assert m and 2 <= int(m.group(1)) < int(m.group(2)) == total, midway_caption  # never shown as complete
    assert bars_left == 0 and partial_left == 0, (bar_left_texts, seen[-3:])  # the complete view replaced the partial one
    assert table["cells"], table  # the sweep table drawn


#: Other settings (nothing cached by the test above), a grid of up to 40 limits with keep-tool-groups
#: and start-on-user (time to click: each follow-up run replays longer, so fewer redraws swallow a
#: click; the rehearsal of session 21 saw 8 clicks lost on a grid of 30), no target.
CLICK_LINK = "/token_budget?data=synthetic-100000&sweep=true&cmp=false&on_user=true&tools=true&sw_n=40"
#: Scrolls the sweep chart into view and gives the centre of its top panel's last point (the
#: highest limit done so far) in the viewport and its limit, or null while the chart is not drawn.
LAST_POINT_JS = """() => {
  const chart = Array.from(document.querySelectorAll('.js-plotly-plot')).find(
    p => p.layout && p.layout.yaxis && p.layout.yaxis.title && /compactions/.test(p.layout.yaxis.title.text));
  if (!chart) return null;
  chart.scrollIntoView({block: 'nearest'});
  const points = chart.querySelectorAll('.scatterlayer .trace')[0]?.querySelectorAll('.point') ?? [];
  if (!points.length) return null;
  const r = points[points.length - 1].getBoundingClientRect();
  return {x: r.x + r.width / 2, y: r.y + r.height / 2, limit: chart.data[0].x[points.length - 1]};
}"""
#: Clicks tried at most, and how long each waits for the limit to change (ms).
CLICK_TRIES = 12
CLICK_WAIT_MS = 3_000
BAR_TEXT_JS = "() => document.querySelector('[data-testid=\"stProgress\"]')?.innerText ?? ''"


#: The "Limit (tokens)" slider's value as drawn over its thumb (its text: label, value, min, max).
SLIDER_JS = """() => { const s = document.querySelector('[data-testid="stSlider"]');
  return s ? +s.innerText.split('\\n').map(t => t.trim()).filter(Boolean)[1].replace(/,/g, '') : null; }"""


def test_a_click_on_a_partial_sweep_sets_the_limit_and_the_sweep_goes_on(browser, streamlit_url, screenshot_dir):
    """The click reaches the page although the chart is redrawn by every follow-up run: the limit
    slider takes the clicked limit (the chart's callback runs in a fragment run; the page's full
    rerun sets the limit before the URL-bound slider) and the sweep still completes."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(RUN_TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(streamlit_url + CLICK_LINK, wait_until="commit")
        page.wait_for_function(MIDWAY_JS, timeout=TIMEOUT_MS)
        before = page.evaluate(SLIDER_JS)
        page.evaluate(LAST_POINT_JS)  # scrolled to the chart
        for _ in range(CLICK_TRIES):
            # right after a follow-up run drew the chart (the next one redraws it about a replay
            # later; a click while plotly redraws the chart is lost, so a lost one is tried again)
            page.wait_for_function(f"t => ({BAR_TEXT_JS})() !== t", arg=page.evaluate(BAR_TEXT_JS), timeout=TIMEOUT_MS)
            page.wait_for_function(LAST_POINT_JS, timeout=TIMEOUT_MS)
            point = page.evaluate(LAST_POINT_JS)
            page.mouse.move(point["x"], point["y"])
            page.wait_for_timeout(50)  # plotly reads the point to click from the hover it draws (not a timing check)
            page.mouse.click(point["x"], point["y"])
            try:
                page.wait_for_function(f"b => ({SLIDER_JS})() !== b", arg=before, timeout=CLICK_WAIT_MS)
                break
            except Exception:  # noqa: BLE001 - the click was lost in a redraw: try again
                if not page.evaluate(BAR_TEXT_JS):
                    raise AssertionError("the sweep completed before a click on its partial chart was taken")
        after = page.evaluate(SLIDER_JS)
        screenshot(page, screenshot_dir, "sweep_fill_clicked")
        page.get_by_text("Look for the knee").wait_for(state="visible", timeout=TIMEOUT_MS)
        wait_for_app(page, timeout_ms=TIMEOUT_MS)
        assert_no_exception(page)
        table = dataframe(page, "limit (tokens)", second="compactions")
    finally:
        context.close()
    assert after != before and after == point["limit"]  # the clicked point's limit
    assert table["cells"], table  # and the sweep completed
