"""Pure builders of the Token budget page (convmem_dashboard.figures_budget / tables_budget).

Plain pytest, no streamlit: traces, axis titles with units, the limit / target / cut lines at the
right y, drop markers at the right steps, downsampling bounds for 10^5 messages, and the tables
(the context rebuilt from a replay equals convmem.context_at at every step).
"""

from __future__ import annotations

import doctest
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import HistorySettings, Message, context_at, load_conversations, replay, sweep_limits
from convmem.synthetic import generate_conversation
from convmem_dashboard import figures_budget as fb
from convmem_dashboard import tables_budget as tb
from convmem_dashboard.colors import REASON_COLORS, ROLE_COLORS
from test_history_properties import TOOL_KINDS, conversations, thinking_of
from test_history_properties import tool_names_of as history_tool_names
from test_replay_reference import unique

ROOT = Path(__file__).resolve().parent.parent

SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"


def _msgs() -> list[Message]:
    """System prompt, a user turn, a tool group, a hostile id, then more turns (tokens given)."""
    return [
        Message("s", "system", 30, content="You are a shop assistant."),
        Message("u1", "user", 20, content="Where is my order?"),
        Message("a1", "assistant", 10, tool_call_ids=("c1",)),
        Message("t1", "tool", 25, content='{"status": "shipped"}', tool_call_id="c1"),
        Message("<b>x</b>", "assistant", 15, content="It <script>shipped</script>."),
        Message("u2", "user", 20, content="Thanks"),
        Message("a2", "assistant", 30, content="Anything else?"),
        Message("u3", "user", 10, content="No"),
    ]


@pytest.fixture(scope="module")
def base():
    r = replay(_msgs(), HistorySettings(limit=80))
    return r, fb.replay_arrays(r)


def _trace(fig, name):
    found = [t for t in fig.data if t.name == name or (t.name or "").startswith(name)]
    assert found, f"no trace named {name!r} in {[t.name for t in fig.data]}"
    return found[0]


# ------------------------------------------------------------------------------------ totals


def test_totals_traces_axes_and_limit_line(base):
    r, a = base
    fig = fb.totals_figure(a)
    names = [t.name for t in fig.data]
    assert names == ["total after add", "limit", "drop events"]
    assert all(t.type == "scatter" for t in fig.data)
    assert fig.layout.xaxis.title.text == "add step (message #)"
    assert "tokens" in fig.layout.yaxis.title.text
    total = _trace(fig, "total after add")
    assert list(total.x) == list(range(len(r.messages)))
    assert list(total.y) == list(r.totals)
    limit = _trace(fig, "limit")
    assert list(limit.y) == [80, 80]
    assert list(limit.x) == [0, len(r.messages) - 1]


def test_drop_markers_at_compaction_steps_with_hover(base):
    r, a = base
    fig = fb.totals_figure(a)
    marks = _trace(fig, "drop events")
    assert list(marks.x) == [c.step for c in r.compactions]
    assert list(marks.y) == [c.total_after for c in r.compactions]
    assert list(marks.customdata) == list(range(len(r.compactions)))
    for c, text in zip(r.compactions, marks.hovertext):
        assert f"dropped {len(c.dropped)} message{'' if len(c.dropped) == 1 else 's'}, {c.dropped_tokens:,} tokens" in text
        for d in c.dropped:
            assert d.reason in text
    # colour = the reason that dropped the most tokens
    assert set(marks.marker.color) <= set(REASON_COLORS.values())


def test_hover_escapes_markup():
    msgs = _msgs()
    r = replay(msgs, HistorySettings(limit=40))
    a = fb.replay_arrays(r)
    fig = fb.context_window_figure(a)
    texts = [str(t) for tr in fig.data if tr.hovertext is not None for t in tr.hovertext]
    assert any("&lt;b&gt;x&lt;/b&gt;" in t for t in texts)
    assert not any("<b>x</b>" in t for t in texts)


def test_target_and_cut_lines_and_summary_area():
    msgs = _msgs()
    s = HistorySettings(limit=80, target=60, summary_budget=20)
    r = replay(msgs, s, count_tokens=lambda text: len(text.split()))
    a = fb.replay_arrays(r)
    fig = fb.totals_figure(a)
    assert list(_trace(fig, "target").y) == [60, 60]
    assert list(_trace(fig, "cut to").y) == [40, 40]
    assert r.stats.summaries_accepted >= 1
    area = _trace(fig, "summary in context")
    first = next(c for c in r.compactions if c.summary is not None and c.summary.accepted)
    y = list(area.y)
    assert y[first.step] == first.summary.tokens and all(v == 0 for v in y[: first.step])
    # no target line when the target is off or equals the limit
    for settings in (HistorySettings(80), HistorySettings(80, target=80)):
        names = [t.name for t in fb.totals_figure(replay(msgs, settings)).data]
        assert "target" not in names


def test_selected_event_and_window(base):
    r, a = base
    fig = fb.totals_figure(a, selected=1)
    sel = _trace(fig, "selected event")
    assert list(sel.x) == [r.compactions[1].step] and list(sel.customdata) == [1]
    lo, hi = 2, 5
    fig = fb.totals_figure(a, start=lo, stop=hi)
    assert list(_trace(fig, "total after add").x) == list(range(lo, hi + 1))
    assert all(lo <= x <= hi for x in _trace(fig, "drop events").x)
    assert list(_trace(fig, "limit").x) == [lo, hi]


def test_empty_replay_figures():
    r = replay([], HistorySettings(10))
    for fig in (fb.totals_figure(r), fb.context_window_figure(r)):
        assert len(fig.data) == 0 and fig.layout.xaxis.title.text == "add step (message #)"


# ---------------------------------------------------------------------------- context window


def test_context_window_bars_and_drop_marks(base):
    r, a = base
    fig = fb.context_window_figure(a)
    assert fig.layout.xaxis.title.text == "add step (message #)"
    assert "message #" in fig.layout.yaxis.title.text
    roles = {m.role for m in r.messages}
    for role in roles:
        tr = _trace(fig, role)
        assert tr.line.color == ROLE_COLORS[role]
        xs, ys = list(tr.x), list(tr.y)
        for k in range(0, len(xs), 3):  # (start, end, gap) per bar
            i = int(ys[k])
            assert r.messages[i].role == role and xs[k] == i
            end = r.dropped_at[i] if r.dropped_at[i] is not None else len(r.messages) - 1
            assert xs[k + 1] == end and math.isnan(xs[k + 2])
    gone = [i for i, d in enumerate(r.dropped_at) if d is not None]
    marks = [t for t in fig.data if t.name.startswith("dropped: ")]
    pairs = sorted((int(y), int(x)) for t in marks for x, y in zip(t.x, t.y))
    assert pairs == sorted((i, r.dropped_at[i]) for i in gone)
    for t in marks:
        assert t.marker.color == REASON_COLORS[t.name.removeprefix("dropped: ")]


def test_context_window_summary_row_and_selected_line():
    r = replay(_msgs(), HistorySettings(80, summary_budget=20), count_tokens=lambda t: len(t.split()))
    fig = fb.context_window_figure(r, selected_step=4)
    tr = _trace(fig, "summary")
    assert set(y for y in tr.y if not (isinstance(y, float) and math.isnan(y))) == {-1.0}
    assert any(sh.x0 == 4 for sh in fig.layout.shapes)


@pytest.mark.parametrize(("pins", "limit", "budget"), [(False, 3000, 600), (True, 1500, 1000), (True, 2000, None)])
def test_replay_arrays_spans_and_message_arrays_equal_the_loop(pins, limit, budget):
    """summary_spans (C-level without removals) equals the event-by-event loop; the summary in
    context at each add is its span's tokens; message_arrays passed in changes nothing."""
    msgs = generate_conversation(3000, seed=11).messages
    r = replay(msgs, HistorySettings(limit, pin_system=pins, pin_latest_user=pins, summary_budget=budget))
    events = r.compactions.summary_events
    spans = fb.summary_spans(events, len(msgs))
    assert list(spans) == fb._summary_spans_loop(events, len(msgs))
    assert (len(spans) > 500) == (budget is not None)
    a = fb.replay_arrays(r)
    want = np.zeros(len(msgs), dtype=np.int64)
    for _sid, tok, start, stop in spans:
        want[start:stop] = tok
    assert np.array_equal(a.summary_tokens, want)
    b = fb.replay_arrays(r, fb.message_arrays(msgs))
    for field in ("ids", "tokens", "role_code", "totals", "dropped_at", "reason_code", "summarized",
                  "summary_tokens", "ev_step", "ev_after", "ev_count", "ev_tokens", "ev_reason", "summary_spans"):
        assert np.array_equal(np.asarray(getattr(a, field)), np.asarray(getattr(b, field))), field
    assert a.tokens.tolist() == [m.tokens for m in msgs] and a.ids == tuple(m.id for m in msgs)
    with pytest.raises(ValueError, match="messages has 10 messages, the replay 3000"):
        fb.replay_arrays(r, fb.message_arrays(msgs[:10]))


@pytest.mark.parametrize(
    "settings",
    [
        HistorySettings(2500),
        HistorySettings(2500, pin_system=True, pin_latest_user=True, keep_tool_groups=True, start_on_user=True),
        HistorySettings(1500, pin_system=True, pin_latest_user=True, summary_budget=1000),
        HistorySettings(4000, target=2000, keep_tool_groups=True, summary_budget=500),
    ],
    ids=["base", "all-policies", "pins+summaries", "target+groups+summaries"],
)
def test_event_hovers_from_the_arrays_equal_event_hover(settings):
    """The markers' hover text read off the arrays equals event_hover of each Compaction, for
    every event (several reasons per event, summaries accepted, rejected and removed)."""
    msgs = generate_conversation(2000, seed=4).messages
    r = replay(msgs, settings)
    a = fb.replay_arrays(r)
    ks = list(range(len(r.compactions)))
    assert len(ks) > 50
    got = fb.event_hovers(a, ks)
    want = [fb.event_hover(r.compactions[k], k) for k in ks]
    assert got == want
    mixed = [t for t in want if ", " in t.split("reasons: ")[1].split("<br>")[0]]
    if settings.pin_latest_user:
        assert mixed  # more than one reason in one event: the order is checked too
    if settings.summary_budget is not None:
        assert any("summary" in t for t in want)


def _covered(pairs):
    """Steps covered by half-open [x0, x1) intervals."""
    out = set()
    for x0, x1 in pairs:
        out.update(range(int(x0), int(x1)))
    return out


@pytest.mark.parametrize(("pins", "limit", "budget"), [(False, 3000, 600), (True, 1500, 1000)])
def test_summary_row_merges_consecutive_summaries_past_max_bars(pins, limit, budget):
    """Thousands of summaries: the summary row keeps at most ~max_bars bars, covers exactly the
    steps the summaries cover (gaps after a removal stay gaps), and its hovers count every one."""
    import re

    msgs = generate_conversation(3000, seed=11).messages
    s = HistorySettings(limit, pin_system=pins, pin_latest_user=pins, summary_budget=budget)
    a = fb.replay_arrays(replay(msgs, s))
    spans = a.summary_spans
    assert len(spans) > 200
    fig = fb.context_window_figure(a, max_bars=50)
    row = _trace(fig, "summary")
    x = np.asarray(row.x, dtype=float)
    bars = list(zip(x[0::3], x[1::3]))
    gaps = sum(1 for p, q in zip(spans, spans[1:]) if q[2] != p[3])
    assert (gaps > 0) == pins  # pinned messages leave a summary no room now and then: removed
    assert len(bars) <= 50 + gaps + 1 and "per bar" in row.name and "per bar" in fig.layout.title.text
    n = a.n
    assert _covered(bars) == _covered((sp[2], min(sp[3], n - 1)) for sp in spans)
    counts = [int(m.group(1).replace(",", "")) if (m := re.match(r"([\d,]+) summaries", t)) else 1
              for t in row.hovertext[0::3]]
    assert sum(counts) == len(spans)
    for lo, hi in [(0, n - 1), (0, 0), (500, 900), (n - 1, n - 1), (1234, 2345), (10, 11)]:
        want = [sp for sp in spans if sp[2] <= hi and sp[3] > lo]
        assert fb._spans_in(spans, lo, hi) == want, (lo, hi)
    # Under max_bars nothing is merged: one bar per summary, as before.
    few = fb.context_window_figure(a, max_bars=10_000)
    assert len(_trace(few, "summary").x) == 3 * len(spans) and _trace(few, "summary").name == "summary"


# ------------------------------------------------------------------------------ 10^5 messages


@pytest.fixture(scope="module")
def huge():
    conv = generate_conversation(100_000, seed=7)
    r = replay(conv.messages, HistorySettings(32_000))
    return r, fb.replay_arrays(r)


def test_downsampling_bounds_points_for_1e5(huge):
    r, a = huge
    assert a.n == 100_000 and len(a.events) > 10_000
    fig = fb.totals_figure(a, selected=0, max_points=4000, max_markers=400)
    line = _trace(fig, "total after add")
    assert len(line.x) <= 4000
    # the envelope survives: the extremes are kept
    assert max(line.y) == max(r.totals) and min(line.y) == min(r.totals)
    assert list(line.x) == sorted(line.x)
    marks = _trace(fig, "drop events")
    assert len(marks.x) <= 400 and "biggest" in marks.name
    # the biggest drop of the whole replay is among the markers kept
    assert int(np.argmax(a.ev_tokens)) in list(marks.customdata)
    win = fb.context_window_figure(a, max_bars=2000)
    bars = sum(len(t.x) // 3 for t in win.data if t.mode == "lines")
    assert bars <= 2000 + 4
    assert "every" in win.layout.title.text
    assert not [t for t in win.data if t.name.startswith("dropped: ")]  # would hide the bars
    # a zoomed window is drawn at full resolution
    zoom = fb.totals_figure(a, start=1000, stop=1999)
    assert list(_trace(zoom, "total after add").y) == list(r.totals[1000:2000])


def test_minmax_indices():
    y = np.array([0, 5, 1, 9, 2, 2, 7, 3, 8, 1], dtype=np.int64)
    assert list(fb.minmax_indices(y, 100)) == list(range(10))
    idx = fb.minmax_indices(y, 6)
    assert len(idx) <= 6 and idx[0] == 0 and idx[-1] == 9
    assert y[idx].max() == 9 and y[idx].min() == 0


# ------------------------------------------------------------------------- sweep, comparison


def test_sweep_figure():
    msgs = _msgs()
    rows = sweep_limits(msgs, HistorySettings(80), [40, 80, 120, 200])
    fig = fb.sweep_figure(rows, current_limit=80)
    assert [t.name for t in fig.data] == ["compactions", "mean context", "messages dropped"]
    for t in fig.data:
        assert list(t.x) == [40, 80, 120, 200]
    assert list(fig.data[0].y) == [r.stats.compactions for r in rows]
    assert list(fig.data[2].y) == [r.stats.messages_dropped for r in rows]
    assert fig.layout.xaxis3.title.text == "limit (tokens)"
    assert "tokens" in fig.layout.yaxis2.title.text
    assert any(sh.x0 == 80 and sh.x1 == 80 for sh in fig.layout.shapes)


def test_comparison_figure_and_table():
    msgs = _msgs()
    a = replay(msgs, HistorySettings(60)).stats
    b = replay(msgs, HistorySettings.all_policies(60, target=30)).stats
    fig = fb.comparison_figure(a, b)
    assert len(fig.data) == 2 * len(fb.COMPARISON_METRICS)
    assert all(t.type == "bar" for t in fig.data)
    for k, (attr, _label, unit) in enumerate(fb.COMPARISON_METRICS):
        ta, tb_ = fig.data[2 * k], fig.data[2 * k + 1]
        assert list(ta.y) == [getattr(a, attr)] and list(tb_.y) == [getattr(b, attr)]
        assert ta.marker.color == fb.SETTING_COLORS["A"] and tb_.marker.color == fb.SETTING_COLORS["B"]
        yaxis = fig.layout["yaxis" if k == 0 else f"yaxis{k + 1}"]
        assert yaxis.title.text == unit
    table = tb.comparison_table(a, b)
    row = table.set_index("metric").loc["prefix changes (uncached re-sends)"]
    assert (row["A"], row["B"], row["B − A"]) == (a.prefix_changes, b.prefix_changes, b.prefix_changes - a.prefix_changes)
    assert table.set_index("metric").loc["mean context", "A"] == round(a.mean_context, 1)


# ------------------------------------------------------------------------------------ tables


def test_messages_table(base):
    r, _ = base
    df = tb.messages_table(r)
    assert list(df.columns) == list(tb.MESSAGE_COLUMNS)
    assert len(df) == len(r.messages)
    for i, row in enumerate(df.itertuples(index=False)):
        m = r.messages[i]
        assert (row.step, row.id, row.role, row.tokens) == (i, m.id, m.role, m.tokens)
        d = r.dropped_at[i]
        if d is None:
            assert row.status == "kept" and row.reason == "" and row[4] is pd.NA
            assert row[8] == len(r.messages) - i
        else:
            assert row.status == "dropped" and row[4] == d and row.reason == r.drop_reason[i]
            assert row[8] == d - i
    assert df.equals(tb.messages_table(r, tb.base_table(r.messages)))
    csv = df.to_csv(index=False)
    assert csv.splitlines()[0].startswith("step,id,role,tokens,dropped at,status,reason")


@pytest.mark.parametrize("summary_budget", [None, 300])
def test_messages_table_rows_equal_the_same_rows_of_the_whole_table(summary_budget):
    """The page builds only the rows it shows: every slice equals those rows of the full table."""
    msgs = generate_conversation(600, seed=5).messages
    r = replay(msgs, HistorySettings(2000, pin_system=True, keep_tool_groups=True, summary_budget=summary_budget))
    full = tb.messages_table(r)
    assert (full["status"] == "dropped").sum() > 100 and (full["status"] == "kept").sum() >= 3
    if summary_budget is not None:
        assert full["summarized"].sum() > 0
    n = len(msgs)
    for start, stop in [(0, 100), (100, 200), (550, 600), (500, 1000), (0, n), (599, 600), (300, 300), (0, None)]:
        part = tb.messages_table(r, start=start, stop=stop)
        want = full.iloc[start:stop].reset_index(drop=True)
        pd.testing.assert_frame_equal(part, want)
        assert part.equals(tb.messages_table(r, tb.base_table(msgs, start, stop), start, stop))
    with pytest.raises(ValueError, match="base has 10 rows, expected 100"):
        tb.messages_table(r, tb.base_table(msgs, 0, 10), 0, 100)


def test_drop_event_table(base):
    r, _ = base
    c = r.compactions[0]
    df = tb.drop_event_table(c, r.messages)
    assert list(df["id"]) == c.dropped_ids
    assert list(df["reason"]) == [d.reason for d in c.dropped]
    assert list(df["added at"]) == [d.added_step for d in c.dropped]


SETTINGS_GRID = [
    HistorySettings(limit, target, *flags, budget)
    for limit, (target, budget) in itertools.product((300, 600), ((None, None), (200, None), (None, 120), (450, 100)))
    for flags in itertools.product((False, True), repeat=4)
    if target is None or target <= limit
]


@pytest.mark.parametrize("conv_index", [0, 3, 5])
def test_context_at_step_equals_convmem_context_at(conv_index):
    conv = load_conversations(SAMPLE)[conv_index]
    for s in SETTINGS_GRID:
        r = replay(conv.messages, s)
        a = fb.replay_arrays(r)
        for step in range(len(conv.messages)):
            assert tb.context_at_step(r, step, a) == context_at(conv.messages, s, step), (s, step)


CLEARING_GRID = [
    HistorySettings(limit, None, pin_system, False, keep_tool_groups, False, budget,
                    clear_trigger=trigger, clear_keep=keep, clear_at_least=least)
    for limit in (300, 600)
    for pin_system, keep_tool_groups in ((False, False), (True, True))
    for budget in (None, 100)
    for trigger, keep, least in ((0, 0, 0), (150, 1, 0), (250, 2, 40))
]


@pytest.mark.parametrize("conv_index", [0, 3, 5])
def test_context_at_step_with_clearing_equals_convmem_context_at(conv_index):
    """Cleared tool results are shown as their placeholders (a new user saw a context of 36,813
    tokens under a limit of 20,434: the cleared results at their old size)."""
    conv = load_conversations(SAMPLE)[conv_index]
    cleared_seen = 0
    for s in CLEARING_GRID:
        r = replay(conv.messages, s)
        a = fb.replay_arrays(r)
        for step in range(len(conv.messages)):
            got = tb.context_at_step(r, step, a)
            assert got == context_at(conv.messages, s, step), (s, step)
            assert sum(m.tokens for m in got) == r.totals[step]
            cleared_seen += sum(m.content == "[cleared]" for m in got)
    assert cleared_seen > 0  # the grid clears results that stay in the context


@st.composite
def clearing_cases(draw):
    limit = draw(st.integers(20, 300))
    msgs = unique(draw(conversations(limit, 30, TOOL_KINDS)))
    s = HistorySettings(limit, clear_trigger=draw(st.integers(0, limit)), clear_keep=draw(st.integers(0, 2)),
                        clear_thinking_keep=draw(st.sampled_from([None, 0, 1])),
                        pin_latest_user=draw(st.booleans()))
    return s, msgs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clearing_cases())
def test_context_at_step_with_thinking_and_tool_clearing_equals_history(case):
    s, msgs = case
    kw = dict(tool_names=history_tool_names(msgs), thinking=thinking_of(msgs))
    r = replay(msgs, s, **kw)
    for step in range(len(msgs)):
        assert tb.context_at_step(r, step) == context_at(msgs, s, step, **kw), step


def test_context_json_shape():
    r = replay(_msgs(), HistorySettings(80))
    ctx = tb.context_at_step(r, 7)
    records = json.loads(tb.context_json(ctx))
    assert [x["id"] for x in records] == [m.id for m in ctx]
    assert all({"id", "role", "tokens", "content"} <= set(x) for x in records)
    with pytest.raises(ValueError, match="step"):
        tb.context_at_step(r, 8)


def test_limit_bounds_and_grid():
    assert doctest.testmod(tb).failed == 0
    lo, hi, step, default = tb.limit_bounds(6024, 1198)
    assert lo == step and hi >= 6024 and lo <= default <= hi and default % step == 0
    assert default >= 2 * 1198  # the system prompt fits
    for through in (None, lo, default, default + step, hi, 1234):
        for count in (5, 12, 20, 40):
            grid = tb.sweep_grid(lo, hi, count, step, through=through)
            gaps = {b - a for a, b in zip(grid, grid[1:])}
            assert len(gaps) == 1, (through, count, grid)  # evenly spaced
            gap = gaps.pop()
            anchor = lo if through is None else min(max(through, lo), hi)
            room = (anchor - lo) // step + (hi - anchor) // step + 1  # limits at the finest spacing
            assert gap % step == 0 and len(grid) == min(count, room)  # as many as asked when they fit
            assert anchor in grid  # the current limit is swept
            # the whole range: margins of at most a spacing each, or (when more than count fit at
            # the largest spacing) together at most a spacing plus count steps
            assert lo <= grid[0] and grid[-1] <= hi
            assert (grid[0] - lo) + (hi - grid[-1]) <= max(2 * gap - 2, gap + count * step), (through, count, grid)
            if through is not None and through % step == 0:
                assert all(x % step == 0 for x in grid)


@settings(max_examples=300, deadline=None)
@given(lo=st.integers(1, 5000), span=st.integers(0, 20_000), step=st.integers(1, 1000),
       count=st.integers(2, 60), through=st.none() | st.integers(0, 30_000))
def test_sweep_grid_gives_as_many_limits_as_asked_at_the_largest_spacing(lo, span, step, count, through):
    """Against the definition: every spacing (a multiple of step) is tried, the largest that
    fits count limits through the current limit is the one used."""
    hi = lo + span
    grid = tb.sweep_grid(lo, hi, count, step, through=through)
    anchor = lo if through is None else min(max(through, lo), hi)
    below, above = anchor - lo, hi - anchor
    room = below // step + above // step + 1
    assert len(grid) == min(count, room) and anchor in grid and lo <= grid[0] and grid[-1] <= hi
    if len(grid) > 1:
        gap = grid[1] - grid[0]
        assert all(b - a == gap for a, b in zip(grid, grid[1:])) and gap % step == 0
        largest = max(k * step for k in range(1, span // step + 2)
                      if below // (k * step) + above // (k * step) + 1 >= min(count, room))
        assert gap == largest


# ------------------------------------------------------------------- review fixes (layout, words)


def test_comparison_panels_leave_headroom_over_the_taller_bar():
    msgs = _msgs()
    a = replay(msgs, HistorySettings(60)).stats
    b = replay(msgs, HistorySettings.all_policies(60, target=30)).stats
    fig = fb.comparison_figure(a, b)
    for k, (attr, _label, _unit) in enumerate(fb.COMPARISON_METRICS):
        yaxis = fig.layout["yaxis" if k == 0 else f"yaxis{k + 1}"]
        top = max(getattr(a, attr), getattr(b, attr))
        assert tuple(yaxis.range) == pytest.approx((0, top * 1.15 if top else 1)), attr
    assert fb.BAR_HEADROOM == 1.15


def test_words_under_the_charts_follow_what_they_draw():
    none = tb.totals_caption(0)
    assert "riangle" not in none and "Nothing was dropped" in none and "dotted" not in none
    some = tb.totals_caption(7, has_target=True, has_summary_budget=True)
    assert "Triangles mark the 7 drop events" in some and "dotted = target" in some and "dash-dot" in some
    assert "1 drop event " in tb.totals_caption(1)
    assert tb.step_placeholder(24, False) == "24 (the last add; click the total line to pick a step)"
    assert "selected drop event" in tb.step_placeholder(10, True)
    assert "×" not in tb.context_caption(False, False) and "purple" not in tb.context_caption(False, False)
    assert "× = dropped" in tb.context_caption(True, False) and "purple row" in tb.context_caption(True, True)


def test_preview_tables_wrap_their_text_after_the_short_columns():
    from convmem_dashboard.table_layout import WRAP_ROW_PX

    for build, rows in ((tb.drop_event_view, 3), (tb.context_view, 12), (tb.messages_view, 1000)):
        view = build(rows)
        order = view["column_order"]
        assert view["row_height"] == WRAP_ROW_PX > 64, build.__name__  # the grid wraps text cells
        before = order[: order.index("preview") + 1]
        widths = [view["column_config"][c]["width"] for c in before]
        # the preview and every column before it fit a 1280-px window's main area (820 px)
        assert sum(400 if w == "large" else w for w in widths) <= 810, (build.__name__, widths)
    assert tb.drop_event_view(2)["height"] < tb.drop_event_view(6)["height"] == tb.drop_event_view(60)["height"]
    assert tb.messages_view(5)["placeholder"] == "–"  # a kept message's "dropped at", not "None"
    sweep = tb.sweep_view(20)
    table = tb.sweep_table(sweep_limits(_msgs(), HistorySettings(80), [40, 80]))
    assert set(sweep["column_config"]) == set(table.columns)  # every column gets a short header


def test_summary_outcome_text_names_a_removed_summary():
    from convmem.history import SummaryEvent

    assert tb.summary_outcome_text(SummaryEvent(True, "summary-4", 59, 120)) == (
        "Summary summary-4 accepted: 59 of 120 budget tokens."
    )
    assert tb.summary_outcome_text(SummaryEvent(True, "summary-5", 60, 120, replaced_id="summary-4")).endswith(
        ", replacing summary-4."
    )
    rejected = tb.summary_outcome_text(SummaryEvent(False, "summary-2", 130, 120, reason="too long"))
    assert rejected == "Summary summary-2 rejected, the previous one stays: too long."
    removed = SummaryEvent(False, "summary-1", 70, 120, reason="no room", removed_id="summary-1")
    assert tb.summary_outcome_text(removed) == "Summary summary-1 removed, no summary in context now: no room."
    both = SummaryEvent(False, "summary-3", 83, 120, reason="over; removed", removed_id="summary-1")
    assert "stays" not in tb.summary_outcome_text(both) and "summary-1 removed" in tb.summary_outcome_text(both)


def test_a_removed_summary_ends_its_span_and_leaves_the_context():
    """convmem removes the summary when pinned messages leave it no room: the context window and
    the context at a step drop it from that add on (checked against convmem.context_at)."""
    conv = load_conversations(SAMPLE)[5]
    s = HistorySettings(300, None, True, True, False, False, 120)
    r = replay(conv.messages, s)
    removals = [(step, e) for step, e in r.compactions.summary_events if getattr(e, "removed_id", None)]
    if not removals:
        pytest.skip("no summary removal in this conversation under these settings")
    a = fb.replay_arrays(r)
    step, event = removals[0]
    span = next(sp for sp in a.summary_spans if sp[0] == event.removed_id)
    assert span[3] == step  # the span ends at the add that removed it
    for k in range(len(conv.messages)):
        assert tb.context_at_step(r, k, a) == context_at(conv.messages, s, k), k
    assert "removed" in fb.event_hover(r.compactions[[c.step for c in r.compactions].index(step)], 0)


def test_thinned_markers_sit_above_the_line_and_count_their_bucket(huge):
    """Past max_markers the markers leave the line (a strip above it) and each hover counts the
    events its bucket stands for: the counts add up to every event in the window."""
    import re

    r, a = huge
    fig = fb.totals_figure(a, start=1_000, stop=60_000, max_markers=150)
    marks = _trace(fig, "drop events")
    line = _trace(fig, "total after add")
    assert min(marks.y) > max(line.y) and len(marks.x) <= 150
    counts = [int(re.match(r"([\d,]+) drop event", t).group(1).replace(",", "")) for t in marks.hovertext]
    in_window = sum(1 for s in r.compactions.steps if 1_000 <= s <= 60_000)
    assert sum(counts) == in_window
    for k, text in zip(marks.customdata, marks.hovertext):
        lo, hi = (int(v.replace(",", "")) for v in re.search(r"add steps ([\d,]+)–([\d,]+)", text).groups())
        assert lo <= r.compactions.steps[k] <= hi


@pytest.mark.parametrize(
    "settings",
    [
        HistorySettings(250, clear_trigger=150, clear_keep=1),
        HistorySettings(250, clear_trigger=150, clear_keep=0, pin_system=True),
        HistorySettings(250, clear_trigger=150, clear_keep=1, summary_budget=40),
    ],
)
def test_event_tokens_count_a_cleared_message_at_its_placeholder(settings):
    """Each drop event's tokens (the chart's hover, the main reason's weight) are what left the
    context, as Compaction.dropped_tokens and stats.tokens_dropped count them: a tool result
    cleared before it was dropped counts its placeholder, not its original 100 tokens."""
    msgs = []
    for i in range(4):
        msgs += [Message(f"u{i}", "user", 10), Message(f"a{i}", "assistant", 10, tool_call_ids=(f"c{i}",)),
                 Message(f"t{i}", "tool", 100, tool_call_id=f"c{i}")]
    msgs.append(Message("u9", "user", 200))
    r = replay(msgs, settings)
    assert r.stats.messages_cleared > 0
    assert any(c is not None and d is not None for c, d in zip(r.cleared_at, r.dropped_at))
    a = fb.replay_arrays(r)
    assert a.ev_tokens.tolist() == [c.dropped_tokens for c in r.compactions]
    assert int(a.ev_tokens.sum()) == r.stats.tokens_dropped
    assert a.tokens.tolist() == [m.tokens for m in msgs]  # the per-message sizes stay the originals


def test_step_axes_tick_whole_steps_only():
    """A one-message conversation's charts read -0.4 .. 0.4 on the step axis (the session 24 new
    user): a short step axis now ticks every whole step; a long one keeps plotly's ticks, with
    digits grouped."""
    r = replay([Message("m0", "user", 5)], HistorySettings(100))
    for fig in (fb.totals_figure(r), fb.context_window_figure(r)):
        assert (fig.layout.xaxis.dtick, fig.layout.xaxis.tick0, fig.layout.xaxis.tickformat) == (1, 0, ",d")
    r = replay([Message(f"m{i}", "user", 5) for i in range(1000)], HistorySettings(100))
    xaxis = fb.totals_figure(r).layout.xaxis  # plotly's own ticks (they follow a zoom), digits grouped
    assert (xaxis.dtick, xaxis.tickformat) == (None, ",")
