"""Real browser (issue 13): a Claude Code session uploaded on Your data, its token budget timeline with
the agent's compactions beside convmem's, and the Agent session page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from e2e_helpers import assert_no_exception, metric_values, screenshot, wait_for_app

pytestmark = pytest.mark.e2e
#: The token budget page's first run on a loaded shared machine took 89 s once (load average 17
#: on 2 cores): a generous bound, this test checks what is shown, not speed.
SLOW_MS = 180_000

SESSION = Path(__file__).resolve().parents[1] / "data" / "agent_sessions" / "claude_code_session.jsonl"


def test_upload_a_claude_code_session_and_see_the_agents_compactions(page, streamlit_url,
                                                                     screenshot_dir):
    page.goto(streamlit_url + "/your_data", wait_until="domcontentloaded")
    wait_for_app(page)
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(SESSION))
    page.get_by_text("Using the uploaded file: 2 conversations").wait_for(timeout=30_000)
    wait_for_app(page, timeout_ms=SLOW_MS)
    assert_no_exception(page)
    assert metric_values(page)[0:2] == ["2", "12"]  # conversations, messages (the dataset is named on a line above)

    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Token budget").click()
    page.wait_for_url(re.compile(r"/token_budget"))
    wait_for_app(page, charts=2, timeout_ms=SLOW_MS)
    assert_no_exception(page)
    # the session's main conversation has the most tokens: opened by default
    page.get_by_text("Green stars: the agent's own compactions").first.wait_for(timeout=20_000)
    legend = page.locator(".js-plotly-plot .legendtext").evaluate_all(
        "els => els.map(e => e.textContent)")
    assert "agent compactions" in legend and "drop events" in legend, legend
    screenshot(page, screenshot_dir, "agent_token_budget")

    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Agent session").click()
    page.wait_for_url(re.compile(r"/agent_session"))
    wait_for_app(page, charts=1, timeout_ms=SLOW_MS)
    assert_no_exception(page)
    assert page.get_by_text("Cost as reported ($)").count() >= 1
    screenshot(page, screenshot_dir, "agent_session_page")
