"""Clearing on the Token budget page (issue 11 item 3): the pure helpers of
convmem_dashboard.clearing_view, and an AppTest that the page shows convmem.replay's clearing."""

from __future__ import annotations

import json

import pytest

from convmem import HistorySettings, Message, replay
from convmem_dashboard.clearing_view import (
    CLEARING_TRACE,
    clearing_caption,
    clearing_comparison_table,
    mark_clearings,
    with_clearing,
)
from convmem_dashboard.figures_budget import totals_figure
from convmem_dashboard.tables_budget import limit_bounds


def tool_turns(n: int) -> list[Message]:
    msgs = [Message("u", "user", 20)]
    for i in range(n):
        msgs.append(Message(f"a{i}", "assistant", 10, tool_call_ids=(f"c{i}",)))
        msgs.append(Message(f"t{i}", "tool", 100, tool_call_id=f"c{i}"))
    return msgs


def test_with_clearing_clips_the_trigger_to_the_limit():
    s = with_clearing(HistorySettings(300, keep_tool_groups=True), True, 900, 1, 50)
    assert (s.clear_trigger, s.clear_keep, s.clear_at_least, s.keep_tool_groups) == (300, 1, 50, True)
    assert with_clearing(s, False, 900, 1, 50) == HistorySettings(300, keep_tool_groups=True, clear_keep=1, clear_at_least=50)


def test_chart_marks_clearings_apart_from_drops():
    msgs = [*tool_turns(5), Message("u2", "user", 250)]  # the last add is over the limit even cleared
    r = replay(msgs, with_clearing(HistorySettings(300, keep_tool_groups=True), True, 250, 1, 0))
    assert [c.step for c in r.clearings] == [6, 8, 10] and r.stats.compactions > 0
    fig = mark_clearings(totals_figure(r), r)
    (trace,) = [t for t in fig.data if t.name == CLEARING_TRACE]
    assert list(trace.x) == [6, 8, 10] and list(trace.y) == [r.totals[s] for s in (6, 8, 10)]
    assert trace.marker.symbol == "diamond"
    assert "drop events" in {t.name for t in fig.data}  # drops keep their own trace
    assert [t.name for t in mark_clearings(totals_figure(r), r, 5, 7).data].count(CLEARING_TRACE) == 1
    assert CLEARING_TRACE not in {t.name for t in mark_clearings(totals_figure(r), r, 0, 5).data}
    assert clearing_caption(r.stats).startswith("Clearing: 3 clearing(s) replaced 4 message(s) by a placeholder, freeing 384 tokens")


def test_comparison_table_values():
    msgs = tool_turns(5)
    a = replay(msgs, HistorySettings(300)).stats
    b = replay(msgs, with_clearing(HistorySettings(300), True, None, 1, 0)).stats
    t = clearing_comparison_table(a, b).set_index("metric")
    assert t.loc["Tokens sent (sum over adds)"].tolist() == [a.tokens_sent, b.tokens_sent, b.tokens_sent - a.tokens_sent]
    assert t.loc["Clearings", "A"] == 0 and t.loc["Clearings", "B"] == b.clearings > 0
    assert t.loc["Prefix changes (cache breaks)", "B"] == b.prefix_changes


def test_page_shows_clearing_from_the_url(tmp_path):
    from apptest_support import open_dashboard_page, ok
    from convmem import load_conversations
    from pathlib import Path

    sample = Path(__file__).resolve().parent.parent / "sample_data" / "shoppers.jsonl"
    if not sample.is_file():
        pytest.skip(f"{sample} not generated yet (scripts/make_sample_data.py)")
    convs = load_conversations(sample)
    conv = max(convs, key=lambda c: sum(m.role == "tool" for m in c.messages))
    bounds = limit_bounds(conv.total_tokens, conv.messages[0].tokens)
    limit = bounds.hi - bounds.hi % bounds.step  # everything fits: only clearing acts
    trigger = conv.total_tokens // 3
    query = {"conv": conv.id, "limit": str(limit), "clr": "true", "clr_trig": str(trigger), "clr_keep": "1",
             "cmp": "true"}
    at = ok(open_dashboard_page("pages/token_budget.py", query))
    s = with_clearing(HistorySettings(limit), True, trigger, 1, 0)
    r = replay(conv.messages, s)
    assert r.stats.clearings > 0, "the sample conversation should clear something"
    assert clearing_caption(r.stats) in [c.value for c in at.caption]
    table = next(d.value for d in at.dataframe if list(d.value.columns) == ["metric", "A", "B", "B − A"])
    table = table.set_index("metric")
    assert table.loc["Clearings", "A"] == r.stats.clearings
    assert table.loc["Tokens sent (sum over adds)", "A"] == r.stats.tokens_sent
