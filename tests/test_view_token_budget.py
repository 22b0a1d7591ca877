"""The Token budget page's view model (convmem_dashboard.view_token_budget), with plain pytest."""

from __future__ import annotations

import pytest

from convmem import HistorySettings, Message, replay
from convmem_dashboard.tables_budget import LimitBounds
from convmem_dashboard.view_token_budget import (
    AControls,
    BControls,
    ChartPick,
    chart_pick,
    event_for_message,
    event_nav,
    settings_a,
    settings_b,
    summary_budget_default,
    sweep_pick,
    target_tokens_default,
)

B = LimitBounds(10, 1270, 10, 430)


def test_defaults_are_one_value_each():
    assert summary_budget_default(B) == 40  # a tenth of 430, on the step of 10
    assert target_tokens_default(B) == 215
    assert summary_budget_default(LimitBounds(10, 100, 10, 20)) == 10  # never below one step


def test_settings_a_named_fields_and_clipping():
    d = settings_a(
        AControls(limit=400, target_mode="percent", target_pct=60, pin_system=True, keep_tool_groups=True,
                  summaries=True, summary_budget=500),
        B,
    )
    assert d.settings == HistorySettings(400, 240, True, False, True, False, 240)
    assert d.target_note is None and d.budget_note == "Clipped to the target, 240 tokens."
    d = settings_a(AControls(limit=400, target_mode="tokens", target_tokens=900), B)
    assert d.settings == HistorySettings(400) and d.target_note == "Clipped to the limit, 400 tokens."
    # a target of 100 % is no target; summaries off ignore the budget input
    assert settings_a(AControls(limit=400, target_mode="percent", target_pct=100, summary_budget=5), B).settings == HistorySettings(400)
    # the default budget applies when the input is untouched
    assert settings_a(AControls(limit=400, summaries=True), B).settings.summary_budget == 40


def test_settings_b_from_policies_and_a():
    a = HistorySettings(400, None, summary_budget=30)
    b = settings_b(BControls(limit=None, target_pct=50, summaries=True, policies=("start_on_user", "pin_system")), a, B)
    assert b == HistorySettings(400, 200, pin_system=True, start_on_user=True, summary_budget=30)
    b = settings_b(BControls(limit=1000, target_pct=100, summaries=True, policies=()), HistorySettings(400), B)
    assert b == HistorySettings(1000, None, summary_budget=40)
    assert settings_b(BControls(limit=20, target_pct=50, summaries=True), a, B).summary_budget == 10


def test_chart_and_sweep_picks():
    assert chart_pick([{"x": 3, "customdata": 4}]) == ChartPick(event=4)
    assert chart_pick([{"x": 3, "customdata": []}, {"x": 9}]) == ChartPick(step=3)
    assert chart_pick([{"y": 2}]) is None
    assert sweep_pick([{"y": 1}, {"x": 1200.0}]) == 1200 and sweep_pick([]) is None


def test_event_for_message_matches_the_replay():
    msgs = [Message(f"m{i}", "user", 4) for i in range(12)]
    r = replay(msgs, HistorySettings(limit=10))
    steps = list(r.compactions.steps)
    for i, m in enumerate(msgs):
        k = event_for_message(steps, r.dropped_at[i])
        if r.dropped_at[i] is None:
            assert k is None
        else:
            assert m.id in r.compactions[k].dropped_ids
    assert event_for_message(steps, 10_000) is None


@pytest.mark.parametrize("chosen, count, index", [(None, 5, 0), (5, 5, 4), (6, 5, 0), (0, 5, 0), (3, 5, 2)])
def test_event_nav(chosen, count, index):
    nav = event_nav(chosen, count)
    assert nav.index == index and nav.count == count
    assert nav.has_previous == (index > 0) and nav.has_next == (index < count - 1)
    assert nav.label == f"Drop event {index + 1} of {count}"
    assert event_nav(1, 0) is None
    assert event_nav(13_468, 13_468).label == "Drop event 13,468 of 13,468"
