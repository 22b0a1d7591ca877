"""Token budget at 10^5 messages with summaries on, in a real browser at 1,400 x 900 (issue 10).

Drop events are navigable (previous / next buttons, the event number, a jump to the event that
dropped a message id) and no metric is cut. The screenshot goes to tests/e2e/screenshots/.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from e2e_helpers import assert_no_exception, metric_values, screenshot, text_is_cut, wait_for_app

pytestmark = pytest.mark.e2e

WIDE = {"width": 1400, "height": 900}
#: The first replay of 10^5 messages with summaries (generation included) on a shared machine.
COLD_MS = 600_000
EVENT_TEXT = re.compile(r"Drop event ([\d,]+) of ([\d,]+): add step ([\d,]+)")


def _event_line(page) -> tuple[int, int]:
    text = page.get_by_text(EVENT_TEXT).first.inner_text(timeout=10_000)
    m = EVENT_TEXT.search(text)
    assert m, text
    return int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))


def _dropped_ids(page) -> list[str]:
    """The id cells of the drop event table (first column "id", second "role")."""
    return page.evaluate(
        """() => {
            for (const el of document.querySelectorAll('[data-testid="stDataFrame"]')) {
                const heads = Array.from(el.querySelectorAll('[role="columnheader"]')).map(h => h.innerText.trim());
                if (heads[0] === 'id' && heads[1] === 'role') {
                    const rows = Array.from(el.querySelectorAll('[role="row"]')).slice(1);
                    return rows.map(r => (r.querySelector('[role="gridcell"]') || {}).innerText || '').map(s => s.trim());
                }
            }
            return [];
        }"""
    )


def test_drop_events_navigable_and_metrics_whole_at_1e5_with_summaries(page, streamlit_url, screenshot_dir):
    page.set_viewport_size(WIDE)
    page.goto(streamlit_url + "/token_budget?data=synthetic-100000&sum=true", wait_until="domcontentloaded")
    wait_for_app(page, charts=2, timeout_ms=COLD_MS)
    assert_no_exception(page)

    # every metric is whole at 1,400 px: value and label not cut, numbers with separators
    values = metric_values(page)
    assert len(values) >= 6 and all(values), values  # six of the replay, plus the panels'
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", v) for v in values), values
    for sel in ('[data-testid="stMetricValue"]', '[data-testid="stMetricLabel"]'):
        for i in range(page.locator(sel).count()):
            el = page.locator(sel).nth(i)
            cut = el.evaluate("e => e.scrollWidth > e.clientWidth + 1") or text_is_cut(el)
            assert not cut, f"{sel} #{i} is cut: {el.inner_text()!r}"

    first, count = _event_line(page)
    assert first == 1 and count > 1_000  # thousands of events: a slider would be useless here
    prev_btn = page.get_by_role("button", name="◀ Previous")
    next_btn = page.get_by_role("button", name="Next ▶")
    assert prev_btn.is_disabled() and next_btn.is_enabled()

    next_btn.click()
    wait_for_app(page, charts=2, timeout_ms=COLD_MS)
    assert _event_line(page) == (2, count)
    assert parse_qs(urlsplit(page.url).query).get("ev") == ["2"]
    ids = _dropped_ids(page)
    assert ids and ids[0].startswith("synthetic:"), ids

    prev_btn.click()
    wait_for_app(page, charts=2, timeout_ms=COLD_MS)
    assert _event_line(page) == (1, count)

    # jump to the event that dropped a message seen in event 2
    box = page.get_by_label("Jump to the event that dropped message id")
    box.fill(ids[0])
    box.press("Enter")
    wait_for_app(page, charts=2, timeout_ms=COLD_MS)
    assert _event_line(page) == (2, count)
    assert page.get_by_text(f"Message '{ids[0]}'").count() >= 1

    # an id that is not there is said so, and the selection stays
    box.fill("no-such-id")
    box.press("Enter")
    wait_for_app(page, charts=2, timeout_ms=COLD_MS)
    assert page.get_by_text("No message has the id 'no-such-id'").count() == 1
    assert _event_line(page) == (2, count)
    assert_no_exception(page)
    screenshot(page, screenshot_dir, "token_budget_1e5_summaries_1400")
