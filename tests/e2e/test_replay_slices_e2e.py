"""A long replay goes in slices under a bar while the previous charts stay (issue 10 item 3), in a
real browser.

Token budget at 10^5 messages with clearing and summaries (the heaviest replay) replays a new
setting in script runs of at most convmem_dashboard.panel_replay.RUN_MESSAGES messages, each ending
in ``st.rerun()``. The browser records (an init script, as tests/e2e/test_cold_progress.py) every
progress indicator's text and, while a "Replaying" bar is visible, how many plotly charts are on
screen: a run that ends in a rerun must leave the previous setting's charts in place (Streamlit
clears stale elements only after a run that finished), so the page never collapses to the bar.
The settings are ones no other test uses, so every replay is computed here. It never measures time.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from e2e_helpers import RECORD_PROGRESS_JS, RUN_TIMEOUT_MS, VIEWPORT, assert_no_exception, metric_values, screenshot, wait_for_app

from convmem_dashboard.questions import QUESTIONS

pytestmark = pytest.mark.e2e

LINK = "/token_budget?data=synthetic-100000&sum=true&clr=true&clr_keep=2&clr_min=700&limit=30000"
#: Generating 10^5 messages, counting their summary lines, then two replays, on a shared machine.
TIMEOUT_MS = 600_000
BAR = re.compile(r"^Replaying 100,000 messages: ([\d,]+) added$")
#: While a "Replaying" bar is visible: the most plotly charts seen at once, and how often.
RECORD_CHARTS_JS = """
(() => {
  window.__barCharts = [];
  setInterval(() => {
    const bar = Array.from(document.querySelectorAll('[data-testid="stProgress"]'))
      .some(el => el.innerText.trim().startsWith('Replaying'));
    if (bar) window.__barCharts.push(document.querySelectorAll('.js-plotly-plot').length);
  }, 50);
})();
"""


def test_a_new_setting_replays_in_slices_under_a_bar_over_the_old_charts(browser, streamlit_url, screenshot_dir):
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(RUN_TIMEOUT_MS)
    try:
        context.add_init_script(RECORD_PROGRESS_JS % json.dumps(QUESTIONS["token_budget"]))
        context.add_init_script(RECORD_CHARTS_JS)
        page = context.new_page()
        page.goto(streamlit_url + LINK, wait_until="commit")
        wait_for_app(page, charts=2, timeout_ms=TIMEOUT_MS)
        assert_no_exception(page)
        first_seen = page.evaluate("window.__progress")
        first_metrics = metric_values(page)
        page.evaluate("() => { window.__barCharts = []; window.__progress.length = 0; }")  # the change's own

        box = page.get_by_role("spinbutton", name="Exact limit")
        box.fill("28777")
        box.press("Enter")
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('[data-testid=\"stProgress\"]'))"
            ".some(el => el.innerText.trim().startsWith('Replaying'))",
            timeout=TIMEOUT_MS,
        )
        screenshot(page, screenshot_dir, "replay_slices_midway")
        wait_for_app(page, charts=2, timeout_ms=TIMEOUT_MS)
        assert_no_exception(page)
        seen = page.evaluate("window.__progress")
        bar_charts = page.evaluate("window.__barCharts")
        metrics = metric_values(page)
        bars_left = page.locator('[data-testid="stProgress"]').count()
        screenshot(page, screenshot_dir, "replay_slices_done")
        url = page.url
    finally:
        context.close()

    # the cold link replayed in slices too (after its summary lines were counted)
    assert any(BAR.match(s["text"]) for s in first_seen), first_seen
    added = [int(m.group(1).replace(",", "")) for m in (BAR.match(s["text"]) for s in seen) if m]
    assert len(added) >= 2 and added == sorted(added) and all(0 <= a < 100_000 for a in added), seen
    assert all(s["questionShown"] for s in seen if BAR.match(s["text"])), seen  # over the page
    # while the bar was up, the previous setting's charts stayed (the page did not collapse)
    assert bar_charts and min(bar_charts) >= 2, bar_charts
    assert bars_left == 0
    assert parse_qs(urlsplit(url).query).get("limit") == ["28777"]
    assert metrics != first_metrics and all(metrics), (first_metrics, metrics)
