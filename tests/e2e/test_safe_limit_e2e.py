"""The exact-limit flow in a real browser: read the smallest safe limit on the Token budget page,
type it into the exact limit input, see the newest user turn kept; type one less, see it dropped."""

from __future__ import annotations

import re

import pytest
from e2e_helpers import assert_no_exception, wait_for_app

#: A cold first run of the page (imports, the sample dataset) on a busy machine (ms).
COLD_MS = 180_000

pytestmark = pytest.mark.e2e

SAFE = "Smallest safe limit (tokens)"


def settle(page) -> None:
    """wait_for_app with room for a busy machine: the run, then the two charts (bounded)."""
    wait_for_app(page, timeout_ms=COLD_MS)
    page.wait_for_function(
        "n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n", arg=2, timeout=COLD_MS
    )


def safe_limit(page) -> int:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=SAFE)
    assert box.count() == 1, f"no {SAFE!r} metric on {page.url}"
    return int(box.locator('[data-testid="stMetricValue"]').inner_text().replace(",", ""))


def type_limit(page, value: int) -> None:
    box = page.get_by_role("spinbutton", name="Exact limit")
    box.fill(str(value))
    box.press("Enter")
    page.wait_for_url(re.compile(rf"[?&]limit={value}(&|$)"), timeout=60_000)
    settle(page)


def status(page) -> str:
    caption = page.locator('[data-testid="stCaptionContainer"]').filter(has_text=re.compile(r"Current limit [0-9,]+ tokens:"))
    assert caption.count() == 1, f"no status caption on {page.url}"
    return caption.inner_text()


def test_exact_limit_flow(page, streamlit_url, screenshot_dir):
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(streamlit_url + "/token_budget", wait_until="domcontentloaded")
    settle(page)
    safe = safe_limit(page)
    assert safe > 0
    assert "Decided at add step" in status(page)

    type_limit(page, safe)
    assert f"Current limit {safe:,} tokens: kept at this limit" in status(page)
    # the slider follows the typed value (off its step grid)
    slider_box = page.locator('[data-testid="stSlider"]').filter(has_text="Limit (tokens)").first
    assert f"{safe:,}" in slider_box.inner_text() or str(safe) in slider_box.inner_text()
    assert_no_exception(page)
    page.locator('[data-testid="stMetric"]').filter(has_text=SAFE).scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / "safe_limit_kept_1400x900.png"))

    type_limit(page, safe - 1)
    text = status(page)
    assert f"Current limit {safe - 1:,} tokens: dropped at this limit" in text
    assert safe_limit(page) == safe  # the answer does not depend on the current limit
    assert_no_exception(page)
    page.screenshot(path=str(screenshot_dir / "safe_limit_dropped_1400x900.png"))
