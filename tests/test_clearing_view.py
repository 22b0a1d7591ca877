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
    assert clearing_caption(r.stats).startswith("Clearing: 3 clearings replaced 4 messages by a placeholder, freeing 384 tokens")


@pytest.mark.parametrize("window", [(0, None), (37, 301), (0, 0)])
def test_many_clearings_thinned_to_the_biggest_per_bucket(window):
    # keep 0, trigger 0: every tool result is cleared on its arrival, one clearing per tool turn,
    # each freeing its own (varied) tokens less the placeholder's 4.
    msgs = [Message("u", "user", 20)]
    for i in range(150):
        msgs.append(Message(f"a{i}", "assistant", 10, tool_call_ids=(f"c{i}",)))
        msgs.append(Message(f"t{i}", "tool", 50 + (i * 37) % 101, tool_call_id=f"c{i}"))
    r = replay(msgs, with_clearing(HistorySettings(10**6), True, 0, 0, 0))
    assert len(r.clearings) == 150
    start, stop = window
    stop_ = len(r.totals) - 1 if stop is None else stop
    shown = [c for c in r.clearings if start <= c.step <= stop_]
    m = 7
    fig = mark_clearings(totals_figure(r), r, start, stop, max_markers=m)
    traces = [t for t in fig.data if t.name == CLEARING_TRACE]
    if not shown:
        assert traces == []
        return
    (trace,) = traces
    span = stop_ - start + 1
    by_bucket: dict[int, list] = {}
    for c in shown:  # brute force: each bucket's clearings, the biggest first, earliest on a tie
        by_bucket.setdefault((c.step - start) * m // span, []).append(c)
    want = [max(cs, key=lambda c: (c.freed_tokens, -c.step)) for _, cs in sorted(by_bucket.items())]
    assert list(trace.x) == [c.step for c in want] and len(want) <= m
    assert list(trace.y) == [r.totals[c.step] for c in want]
    counts = [int(h.split(" clearing")[0].replace(",", "")) for h in trace.hovertext]
    assert counts == [len(cs) for _, cs in sorted(by_bucket.items())] and sum(counts) == len(shown)
    for h, c, (_, cs) in zip(trace.hovertext, want, sorted(by_bucket.items())):
        assert h.endswith(f"step {c.step}: cleared 1 tool results ({c.total_before:,} → {c.total_after:,} tokens)")
        x0, x1 = (int(x.replace(",", "")) for x in h.split("add steps ")[1].split(";")[0].split("–"))
        assert start <= x0 <= min(x.step for x in cs) and max(x.step for x in cs) <= x1 <= stop_
    # Few enough: every clearing its own marker, as before.
    fig = mark_clearings(totals_figure(r), r, start, stop, max_markers=len(shown))
    (trace,) = [t for t in fig.data if t.name == CLEARING_TRACE]
    assert list(trace.x) == [c.step for c in shown]


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
    at = ok(open_dashboard_page("app_pages/token_budget.py", query))
    s = with_clearing(HistorySettings(limit), True, trigger, 1, 0)
    r = replay(conv.messages, s)
    assert r.stats.clearings > 0, "the sample conversation should clear something"
    assert clearing_caption(r.stats) in [c.value for c in at.caption]
    table = next(d.value for d in at.dataframe if list(d.value.columns) == ["metric", "A", "B", "B − A"])
    table = table.set_index("metric")
    assert table.loc["Clearings", "A"] == r.stats.clearings
    assert table.loc["Tokens sent (sum over adds)", "A"] == r.stats.tokens_sent


def test_clearing_sweep_rows_equal_one_replay_per_pair():
    """sweep_clearing_costs: each (trigger, keep) row is exactly a replay with those settings."""
    from convmem import ANTHROPIC_SONNET, prompt_cache, sweep_clearing_costs
    from convmem_dashboard.clearing_view import clearing_sweep_grid, clearing_sweep_table

    msgs = tool_turns(12)
    base = HistorySettings(400, pin_latest_user=True, keep_tool_groups=True, clear_at_least=20)
    triggers, keeps = clearing_sweep_grid(400, 150, 2)
    rows = sweep_clearing_costs(msgs, base, list(triggers), list(keeps), ANTHROPIC_SONNET)
    assert [(r.trigger, r.keep) for r in rows] == [(t, k) for t in triggers for k in keeps]
    for r in rows:
        want = replay(msgs, with_clearing(base, True, r.trigger, r.keep, 20))
        assert r.stats == want.stats
        assert r.cache == prompt_cache(want, ANTHROPIC_SONNET).totals
    # lower triggers and smaller keeps clear more: tokens sent never rise as clearing grows
    sent = {(r.trigger, r.keep): r.stats.tokens_sent for r in rows}
    assert sent[(triggers[0], 0)] < sent[(triggers[-1], keeps[-1])]
    table = clearing_sweep_table(rows, 150, 2)
    assert table["current"].tolist().count("◀") == 1
    with pytest.raises(ValueError, match="keeps"):
        sweep_clearing_costs(msgs, base, [10], [-1], ANTHROPIC_SONNET)
    with pytest.raises(TypeError, match="triggers"):
        sweep_clearing_costs(msgs, base, 10, [1], ANTHROPIC_SONNET)


def test_page_sweep_covers_clearing_trigger_and_keep():
    from apptest_support import open_dashboard_page, ok
    from convmem import ANTHROPIC_SONNET, load_conversations, sweep_clearing_costs
    from pathlib import Path

    sample = Path(__file__).resolve().parent.parent / "sample_data" / "shoppers.jsonl"
    convs = load_conversations(sample)
    conv = max(convs, key=lambda c: sum(m.role == "tool" for m in c.messages))
    bounds = limit_bounds(conv.total_tokens, conv.messages[0].tokens)
    limit = bounds.hi - bounds.hi % bounds.step
    trigger = conv.total_tokens // 3
    query = {"conv": conv.id, "limit": str(limit), "clr": "true", "clr_trig": str(trigger), "clr_keep": "1",
             "sweep": "true"}
    at = ok(open_dashboard_page("app_pages/token_budget.py", query))
    table = next(d.value for d in at.dataframe if "cache breaks" in d.value.columns)
    current = table[table["current"] == "◀"].iloc[0]
    assert (current["trigger (tokens)"], current["keep"]) == (trigger, 1)
    want = sweep_clearing_costs(conv.messages, with_clearing(HistorySettings(limit), True, trigger, 1, 0),
                                [trigger], [1], ANTHROPIC_SONNET)[0]
    assert current["tokens sent"] == want.stats.tokens_sent and current["clearings"] == want.stats.clearings


def test_page_says_when_clearing_is_on_and_never_ran():
    """A new user turned clearing on over the sample (keep 3) and saw no number move and nothing
    saying why."""
    from apptest_support import ok, open_dashboard_page
    from convmem_dashboard.data import get_dataset

    def settings_of(conv):
        bounds = limit_bounds(conv.total_tokens, conv.messages[0].tokens)
        return with_clearing(HistorySettings(bounds.default), True, None, 3, 0)

    conv = next(c for c in get_dataset("sample").conversations
                if replay(c.messages, settings_of(c)).stats.clearings == 0)
    s = settings_of(conv)
    at = ok(open_dashboard_page("app_pages/token_budget.py", {"conv": conv.id, "clr": "true"}))
    assert at.slider(key="limit").value == s.limit
    stats = replay(conv.messages, s).stats
    shown = [c.value for c in at.caption if c.value.startswith("Clearing is on but never ran")]
    assert shown == [clearing_caption(stats, s)]
    assert f"the trigger ({s.clear_trigger:,} tokens)" in shown[0]
