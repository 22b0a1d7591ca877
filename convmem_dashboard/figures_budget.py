"""Pure figure builders of the Token budget page: a replay in, a plotly Figure out.

No streamlit here: plain pytest checks every figure (tests/test_figures_budget.py).

The page replays a conversation once (:func:`convmem.replay`), turns the :class:`~convmem.Replay`
into numpy arrays once (:func:`replay_arrays`, cached by the page), and every builder reads those
arrays, so a rerun never walks 10^5 Message objects again. Builders accept a ``Replay`` too.

Large inputs stay light in the browser: :func:`totals_figure` keeps the min and the max of every
bucket of adds (the sawtooth's envelope survives; at most ``max_points`` points) and the biggest
drop event of every bucket (at most ``max_markers``); :func:`context_window_figure` draws at most
``max_bars`` messages (every k-th one when there are more, and says so in its title).

Hover text built from data (ids, roles) is HTML-escaped: user-supplied ids never become markup.
"""

from __future__ import annotations

import bisect
import html
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import attrgetter, itemgetter

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from convmem import DROP_REASONS, ROLES, DropReason, Compaction, Replay, ReplayStats, SweepRow

from .axes import integer_ticks
from .colors import LINE_COLORS, REASON_COLORS, ROLE_COLORS, SETTING_COLORS, role_color
from .wording import plural

__all__ = [
    "X_STEP",
    "Y_TOKENS",
    "Y_MESSAGE",
    "SETTING_COLORS",
    "ReplayArrays",
    "replay_arrays",
    "MessageArrays",
    "message_arrays",
    "summary_spans",
    "event_hover",
    "event_hovers",
    "minmax_indices",
    "totals_figure",
    "context_window_figure",
    "summary_bars",
    "sweep_figure",
    "comparison_figure",
    "BAR_HEADROOM",
    "COMPARISON_METRICS",
]

#: Axis titles (units on every axis).
X_STEP = "add step (message #)"
Y_TOKENS = "tokens in context"
Y_MESSAGE = "message # (= the step that added it)"
X_LIMIT = "limit (tokens)"


_NO_REASON = -1
_REASON_INDEX = {r: i for i, r in enumerate(DROP_REASONS)}
_ROLE_INDEX = {r: i for i, r in enumerate(ROLES)}
#: replay_arrays' lookups: a drop reason (or None) -> its code, None -> -1 (an int maps to itself).
_REASON_CODE: dict = {**_REASON_INDEX, None: _NO_REASON}
_NONE_TO_MINUS_ONE: dict = {None: -1}
_TOKENS = attrgetter("tokens")
_ROLE = attrgetter("role")
_ID = attrgetter("id")
_ACCEPTED = attrgetter("accepted")
_SPAN_TOKENS, _SPAN_START, _SPAN_STOP = itemgetter(1), itemgetter(2), itemgetter(3)
_EV_TOKENS = attrgetter("tokens")


def _esc(value: object) -> str:
    """Text safe for plotly hover labels (which read a subset of HTML)."""
    return html.escape(str(value), quote=False)


@dataclass(frozen=True, eq=False)
class ReplayArrays:
    """A replay as numpy arrays (built once per replay, then cached by the page).

    Per message (index = add step): ``tokens``, ``role_code`` (index in convmem.ROLES),
    ``dropped_at`` (-1 while kept), ``reason_code`` (index in convmem.DROP_REASONS, -1 none),
    ``summarized``. Per add: ``totals``, ``summary_tokens`` (tokens of the summary in context).
    Per drop event (one per Compaction record, arrival-only refusals included; ``events`` are the
    records themselves): ``ev_step``, ``ev_after`` (total after it), ``ev_count``, ``ev_tokens``,
    ``ev_reason`` (code of the reason that dropped the most tokens), ``ev_reason_counts`` (events x
    reasons: how many messages each reason dropped). ``summary_at``: add step -> the SummaryEvent
    of the compaction there (where the summarizer ran). ``summary_spans``: (id,
    tokens, first step, end step exclusive) per accepted summary, in order; a summary ends where
    the next one replaces it or where it is removed (pinned messages left it no room). ``limit``, ``target`` (the limit
    when none) and ``goal`` (what a cut cuts live messages to: target - summary budget) in tokens.
    """

    n: int
    limit: int
    target: int
    goal: int
    has_target: bool
    summary_budget: int | None
    ids: tuple[str, ...]
    tokens: np.ndarray
    role_code: np.ndarray
    totals: np.ndarray
    dropped_at: np.ndarray
    reason_code: np.ndarray
    summarized: np.ndarray
    summary_tokens: np.ndarray
    events: tuple[Compaction, ...]
    ev_step: np.ndarray
    ev_after: np.ndarray
    ev_count: np.ndarray
    ev_tokens: np.ndarray
    ev_reason: np.ndarray
    summary_spans: tuple[tuple[str, int, int, int], ...]
    ev_reason_counts: np.ndarray
    summary_at: Mapping[int, object]

    @property
    def end(self) -> np.ndarray:
        """Per message, the step it left the context (n while kept): its bar's right end."""
        return np.where(self.dropped_at >= 0, self.dropped_at, self.n)


def event_hover(c: Compaction, k: int) -> str:
    """The hover text of drop event ``k`` (0-based): what went, how many tokens, why, the summary."""
    by_count: Counter[str] = Counter(d.reason for d in c.dropped)
    return _hover(
        k, c.step, c.trigger, len(c.dropped), sum(d.tokens for d in c.dropped),
        [(by_count[r], r) for r in sorted(by_count, key=_reason_order)], c.total_before, c.total_after, c.summary,
    )


def _reason_order(reason: str) -> int:
    return _REASON_INDEX.get(reason, len(DROP_REASONS))


def event_hovers(a: ReplayArrays, ks: Sequence[int]) -> list[str]:
    """``[event_hover(a.events[k], k) for k in ks]`` read off the arrays and the log's columns,
    without building a :class:`~convmem.Compaction` per event (~0.1 ms each, with a tuple per
    dropped message: the totals chart's 200 markers cost ~25 ms that way). O(len(ks))."""
    log = a.events
    out = []
    for k in map(int, ks):
        counts = a.ev_reason_counts[k]
        reasons = [(int(counts[code]), DROP_REASONS[code]) for code in np.flatnonzero(counts)]
        out.append(_hover(
            k, log.steps[k], log.triggers[k], int(a.ev_count[k]), int(a.ev_tokens[k]), reasons,
            log.totals_before[k], log.totals_after[k], a.summary_at.get(log.steps[k]),
        ))
    return out


def _hover(k, step, trigger, count, tokens, reasons, before, after, ev) -> str:
    """The hover text of drop event ``k``; ``reasons``: (count, reason) in DROP_REASONS order."""
    ranked = sorted(reasons, key=lambda cr: -cr[0])  # stable: DROP_REASONS order on a tie
    lines = [
        f"<b>drop event {k + 1}</b> at add step {step} ({_esc(trigger)})",
        f"dropped {plural(count, 'message')}, {tokens:,} tokens",
        "reasons: " + ", ".join(f"{_esc(r)} ×{n}" for n, r in ranked),
        f"total {before:,} → {after:,} tokens",
    ]
    if ev is not None:
        if ev.accepted:
            lines.append(f"summary {_esc(ev.id)} accepted ({ev.tokens:,} / {ev.budget:,} tokens)")
        elif ev.tokens > ev.budget:
            lines.append(f"summary rejected: {ev.tokens:,} tokens, over the {ev.budget:,} budget")
        elif ev.id is not None and ev.id != getattr(ev, "removed_id", None):
            lines.append(f"summary rejected: {ev.tokens:,} tokens, no room beside the pinned messages")
        removed = getattr(ev, "removed_id", None)
        if removed is not None:
            lines.append(f"summary {_esc(removed)} removed: no room beside the pinned messages")
    return "<br>".join(lines)


@dataclass(frozen=True, eq=False)
class MessageArrays:
    """The settings-free arrays of a conversation (per message, index = add step): ``ids``,
    ``tokens``, ``role_code`` (index in convmem.ROLES). Built once per conversation (the page
    caches them) so that a new setting's :func:`replay_arrays` reads only the replay."""

    ids: tuple[str, ...]
    tokens: np.ndarray
    role_code: np.ndarray


def message_arrays(messages: Sequence) -> MessageArrays:
    """:class:`MessageArrays` of ``messages`` (Message objects). O(n), C-level iteration."""
    n = len(messages)
    return MessageArrays(
        ids=tuple(map(_ID, messages)),
        tokens=np.fromiter(map(_TOKENS, messages), dtype=np.int64, count=n),
        role_code=np.fromiter(map(_ROLE_INDEX.get, map(_ROLE, messages), repeat(0)), dtype=np.int8, count=n),
    )


def _summary_spans_loop(summary_events: Sequence[tuple[int, object]], n: int) -> list[tuple[str, int, int, int]]:
    """Spans of the accepted summaries, event by event (any removals)."""
    spans: list[tuple[str, int, int, int]] = []
    current: tuple[str, int, int] | None = None
    for step, e in summary_events:
        if e.accepted:
            if current is not None:
                spans.append((*current, step))
            current = (e.id, e.tokens, step)
        removed = getattr(e, "removed_id", None)
        if removed is not None and current is not None and current[0] == removed:
            spans.append((*current, step))
            current = None
    if current is not None:
        spans.append((*current, n))
    return spans


def summary_spans(summary_events: Sequence[tuple[int, object]], n: int) -> tuple[tuple[str, int, int, int], ...]:
    """One span ``(id, tokens, first step, end step exclusive)`` per accepted summary, from
    ``CompactionLog.summary_events`` (``(step, SummaryEvent)`` pairs, in order) of a replay of
    ``n`` messages: a summary lasts from the add that accepted it to the add that replaced it, or
    that removed it (the pinned messages left it no room under the limit), else to the end.
    O(events); with no removal (the usual case) at C level: each span ends where the next begins.

    >>> from convmem.history import SummaryEvent
    >>> summary_spans([(3, SummaryEvent(True, "s1", 9, 20)), (7, SummaryEvent(False, "s2", 30, 20)),
    ...                (8, SummaryEvent(True, "s3", 11, 20))], 12)
    (('s1', 9, 3, 8), ('s3', 11, 8, 12))
    """
    if not summary_events:
        return ()
    steps, events = zip(*summary_events)
    if list(map(getattr, events, repeat("removed_id"), repeat(None))).count(None) != len(events):
        return tuple(_summary_spans_loop(summary_events, n))
    accepted = list(map(_ACCEPTED, events))
    first = list(compress(steps, accepted))
    kept = list(compress(events, accepted))
    return tuple(zip(map(_ID, kept), map(_EV_TOKENS, kept), first, [*first[1:], n]))


def replay_arrays(r: Replay, messages: MessageArrays | None = None) -> ReplayArrays:
    """The arrays every builder reads. O(n + dropped) once per replay; ``messages`` is
    :func:`message_arrays` of ``r.messages`` when at hand (the page caches it per conversation:
    a third of the work). Raises ValueError when ``messages`` has another length."""
    n = len(r.messages)
    s = r.settings
    target = s.limit if s.target is None else s.target
    budget = s.summary_budget
    if messages is None:
        messages = message_arrays(r.messages)
    elif len(messages.ids) != n:
        raise ValueError(f"replay_arrays messages has {len(messages.ids)} messages, the replay {n}")
    tokens = messages.tokens
    # C-level iteration (map over attrgetter / dict.get): no Python frame per message.
    dropped_at = np.fromiter(map(_NONE_TO_MINUS_ONE.get, r.dropped_at, r.dropped_at), dtype=np.int64, count=n)
    reason_code = np.fromiter(map(_REASON_CODE.get, r.drop_reason, repeat(_NO_REASON)), dtype=np.int8, count=n)
    summarized = np.fromiter(r.summarized, dtype=bool, count=n)
    totals = np.fromiter(r.totals, dtype=np.int64, count=n)

    events = r.compactions  # a lazy CompactionLog: read its plain columns, never build records
    m = len(events)
    ev_step = np.asarray(events.steps, dtype=np.int64)
    ev_after = np.asarray(events.totals_after, dtype=np.int64)
    ev_count = np.asarray(events.dropped_counts, dtype=np.int64)
    # Per event: tokens dropped and the reason that dropped the most of them, from the per-message
    # arrays (every dropped message belongs to exactly one event, the one at its dropped_at step).
    gone = np.nonzero(dropped_at >= 0)[0]
    event_of = np.searchsorted(ev_step, dropped_at[gone])
    left = tokens
    if r.clearings:
        # A message cleared before it was dropped left the context at its cleared size (what
        # Compaction.dropped_tokens and stats.tokens_dropped count); clearings are in step order.
        left = tokens.copy()
        for c in r.clearings:
            for x in c.cleared:
                left[x.added_step] = x.tokens_after
    ev_tokens = np.bincount(event_of, weights=left[gone], minlength=m).astype(np.int64)[:m]
    nreasons = len(DROP_REASONS)
    per_reason = np.zeros((m, nreasons), dtype=np.int64)
    np.add.at(per_reason, (event_of, np.maximum(reason_code[gone], 0).astype(np.int64)), left[gone] + 1)
    ev_reason = per_reason.argmax(axis=1).astype(np.int8) if m else np.zeros(0, dtype=np.int8)
    ev_reason_counts = np.bincount(
        event_of * nreasons + np.maximum(reason_code[gone], 0), minlength=m * nreasons
    ).reshape(m, nreasons)

    # The summary in context at each add: its tokens over its span (spans are in order and
    # disjoint; contiguous unless one was removed).
    summary_events = events.summary_events
    spans = summary_spans(summary_events, n)
    summary_tokens = np.zeros(n, dtype=np.int64)
    if spans:
        starts = np.fromiter((sp[2] for sp in spans), dtype=np.int64, count=len(spans))
        stops = np.fromiter((sp[3] for sp in spans), dtype=np.int64, count=len(spans))
        lengths = stops - starts
        where = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths) + np.arange(lengths.sum())
        summary_tokens[where] = np.repeat(np.fromiter((sp[1] for sp in spans), dtype=np.int64, count=len(spans)), lengths)

    return ReplayArrays(
        n=n,
        limit=s.limit,
        target=target,
        goal=target - (budget or 0),
        has_target=s.target is not None and s.target < s.limit,
        summary_budget=budget,
        ids=messages.ids,
        tokens=tokens,
        role_code=messages.role_code,
        totals=totals,
        dropped_at=dropped_at,
        reason_code=reason_code,
        summarized=summarized,
        summary_tokens=summary_tokens,
        events=events,
        ev_step=ev_step,
        ev_after=ev_after,
        ev_count=ev_count,
        ev_tokens=ev_tokens,
        ev_reason=ev_reason,
        summary_spans=spans,
        ev_reason_counts=ev_reason_counts,
        summary_at=dict(summary_events),
    )


def _arrays(data: Replay | ReplayArrays) -> ReplayArrays:
    return data if isinstance(data, ReplayArrays) else replay_arrays(data)


def _window(a: ReplayArrays, start: int, stop: int | None) -> tuple[int, int]:
    """Clamp an inclusive step window to [0, n-1]."""
    last = max(a.n - 1, 0)
    stop = last if stop is None else stop
    start = min(max(0, int(start)), last)
    stop = min(max(start, int(stop)), last)
    return start, stop


def minmax_indices(y: np.ndarray, max_points: int) -> np.ndarray:
    """Indices of ``y`` that keep its envelope in at most ``max_points`` points.

    Splits ``y`` into (max_points - 2) // 2 equal buckets and keeps each bucket's argmin and
    argmax, plus the first and last index; sorted, unique. O(len(y)). Everything when it fits.
    """
    n = len(y)
    if n <= max_points:
        return np.arange(n)
    buckets = max(1, (max_points - 2) // 2)
    size = math.ceil(n / buckets)
    padded = np.empty(buckets * size, dtype=y.dtype)
    padded[:n] = y
    padded[n:] = y[-1]
    grid = padded.reshape(buckets, size)
    base = np.arange(buckets) * size
    idx = np.concatenate(([0, n - 1], base + grid.argmin(axis=1), base + grid.argmax(axis=1)))
    return np.unique(np.clip(idx, 0, n - 1))


def _biggest_per_bucket(steps: np.ndarray, weight: np.ndarray, lo: int, hi: int, buckets: int) -> np.ndarray:
    """Positions (into steps) of the largest-weight item in each of ``buckets`` step buckets."""
    span = max(1, hi - lo + 1)
    bucket = ((steps - lo) * buckets) // span
    order = np.lexsort((-weight, bucket))  # by bucket, then weight descending
    _, first = np.unique(bucket[order], return_index=True)
    return np.sort(order[first])


def _hline(name: str, y: float, x0: int, x1: int, color: str, dash: str) -> go.Scatter:
    return go.Scatter(
        x=[x0, x1],
        y=[y, y],
        mode="lines",
        name=name,
        line={"color": color, "dash": dash, "width": 2},
        hovertemplate=f"{_esc(name)}: {y:,} tokens<extra></extra>",
    )


def totals_figure(
    data: Replay | ReplayArrays,
    *,
    start: int = 0,
    stop: int | None = None,
    selected: int | None = None,
    max_points: int = 4000,
    max_markers: int = 400,
) -> go.Figure:
    """Tokens in context after each add, against the limit (and target), drop events marked.

    Traces, in order: "summary in context" (filled area, only when a summary was ever accepted),
    "total after add" (the line, min/max-downsampled to ``max_points``), "limit", "target" (only
    when a target below the limit is set), "cut to (target − summary budget)" (only with
    summaries), "drop events" (one marker per event at its step, y = the total after it, hover:
    how many went, tokens, reasons, summary; ``customdata`` = the event's 0-based index; over ``max_markers`` events in the window,
    the biggest of each step bucket on a strip above the totals, its hover counting the bucket's
    events), and
    "selected event" (when ``selected``, an event index, is given). Steps ``start..stop``
    (inclusive) are shown.
    """
    a = _arrays(data)
    fig = go.Figure()
    if a.n == 0:
        fig.update_layout(title="No messages", xaxis_title=X_STEP, yaxis_title=Y_TOKENS)
        return fig
    lo, hi = _window(a, start, stop)
    steps = np.arange(lo, hi + 1)
    totals = a.totals[lo : hi + 1]
    keep = minmax_indices(totals, max_points)
    x = steps[keep]
    shown_summary = bool(a.summary_spans) and bool(a.summary_tokens[lo : hi + 1].any())
    if shown_summary:
        sy = a.summary_tokens[lo : hi + 1][keep]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=sy,
                name="summary in context",
                mode="lines",
                line={"color": ROLE_COLORS["summary"], "width": 0, "shape": "hv"},
                fill="tozeroy",
                fillcolor="rgba(204,121,167,0.35)",
                hovertemplate="add step %{x}<br>summary %{y:,} tokens<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=totals[keep],
            name="total after add",
            mode="lines",
            line={"color": "#333333", "width": 1.5},
            hovertemplate="add step %{x}<br>total %{y:,} tokens<extra></extra>",
        )
    )
    fig.add_trace(_hline("limit", a.limit, lo, hi, LINE_COLORS["limit"], "dash"))
    if a.has_target:
        fig.add_trace(_hline("target", a.target, lo, hi, LINE_COLORS["target"], "dot"))
    if a.summary_budget is not None:
        fig.add_trace(_hline("cut to (target − summary budget)", a.goal, lo, hi, LINE_COLORS["budget"], "dashdot"))

    in_window = np.nonzero((a.ev_step >= lo) & (a.ev_step <= hi))[0]
    thinned = len(in_window) > max_markers
    ymax = max(int(totals.max()), a.limit)
    hover = None
    if thinned:
        # Too many to draw: the biggest drop of each step bucket, on a strip above the totals (so
        # the markers never bury the line), each hover counting the events it stands for.
        span = max(1, hi - lo + 1)
        bucket = ((a.ev_step[in_window] - lo) * max_markers) // span
        per_bucket = np.bincount(bucket, minlength=max_markers)
        pick = _biggest_per_bucket(a.ev_step[in_window], a.ev_tokens[in_window], lo, hi, max_markers)
        b = bucket[pick]
        b_lo = lo + (b * span + max_markers - 1) // max_markers
        b_hi = np.minimum(hi, lo + ((b + 1) * span + max_markers - 1) // max_markers - 1)
        in_window = in_window[pick]
        hover = [
            f"{plural(int(per_bucket[bk]), 'drop event')} in add steps {int(x0):,}–{int(x1):,}; the biggest:<br>" + text
            for bk, x0, x1, text in zip(b, b_lo, b_hi, event_hovers(a, in_window))
        ]
        y = np.full(len(in_window), ymax * 1.06)
    else:
        y = a.ev_after[in_window]
    colors = [REASON_COLORS.get(DROP_REASONS[code], "#000000") for code in a.ev_reason[in_window]]
    fig.add_trace(
        go.Scatter(
            x=a.ev_step[in_window],
            y=y,
            mode="markers",
            name="drop events" + (" (biggest per bucket, on a strip above)" if thinned else ""),
            marker={
                "symbol": "triangle-down", "size": 7 if thinned else 9, "color": colors,
                "line": {"width": 0.5, "color": "white"},
            },
            customdata=in_window,
            hovertext=hover if hover is not None else event_hovers(a, in_window),
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    if selected is not None and 0 <= selected < len(a.ev_step):
        fig.add_trace(selected_event_trace(a, selected))
    shown = len(x)
    title = "Tokens in context after each add"
    if shown < len(steps):
        title += f" (envelope of {len(steps):,} adds in {shown:,} points)"
    fig.update_layout(
        title=title,
        xaxis_title=X_STEP,
        yaxis_title=Y_TOKENS,
        hovermode="closest",
        legend={"orientation": "h", "y": -0.2},
        margin={"t": 50, "b": 10},
        yaxis={"range": [0, ymax * (1.1 if thinned else 1.08) + 1], "rangemode": "tozero"},
        xaxis={"range": [lo - 0.5, hi + 0.5], **integer_ticks(lo, hi)},  # no half steps
    )
    return fig


def selected_event_trace(a: ReplayArrays, selected: int) -> go.Scatter:
    """The "selected event" ring of :func:`totals_figure` (its last trace) for event ``selected``."""
    return go.Scatter(
        x=[int(a.ev_step[selected])],
        y=[int(a.ev_after[selected])],
        mode="markers",
        name="selected event",
        marker={"symbol": "circle-open", "size": 18, "color": "#000000", "line": {"width": 2}},
        customdata=[selected],
        hovertext=event_hovers(a, [selected]),
        hovertemplate="%{hovertext}<extra></extra>",
    )


def selected_step_line(fig: go.Figure, step: int) -> None:
    """The dotted vertical line :func:`context_window_figure` draws at ``selected_step``."""
    fig.add_vline(x=step, line={"color": "#000000", "dash": "dot", "width": 1})


def _segments(x0: np.ndarray, x1: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Horizontal segments as one line trace: x0→x1 at y, separated by NaN gaps."""
    k = len(y)
    xs = np.full(3 * k, np.nan)
    ys = np.full(3 * k, np.nan)
    xs[0::3], xs[1::3] = x0, x1
    ys[0::3], ys[1::3] = y, y
    return xs, ys


def _spans_in(spans: Sequence[tuple[str, int, int, int]], lo: int, hi: int) -> Sequence[tuple[str, int, int, int]]:
    """The summary spans in context at some step of ``lo..hi``: a contiguous run of ``spans``
    (in order and disjoint, so starts and ends both increase), found by bisection.

    >>> _spans_in([("a", 1, 0, 4), ("b", 1, 4, 9), ("c", 1, 12, 20)], 5, 12)
    [('b', 1, 4, 9), ('c', 1, 12, 20)]
    """
    first = bisect.bisect_right(list(map(_SPAN_STOP, spans)), lo)  # the first span ending after lo
    last = bisect.bisect_right(list(map(_SPAN_START, spans)), hi)  # past the last one starting by hi
    return list(spans[first:last])


def summary_bars(
    spans: Sequence[tuple[str, int, int, int]], n: int, max_bars: int
) -> tuple[np.ndarray, np.ndarray, list[str], int]:
    """The summary row of :func:`context_window_figure`: bars ``(x0, x1, hover texts, k)``.

    ``spans`` are :attr:`ReplayArrays.summary_spans` (id, tokens, first step, end step
    exclusive), in order. Up to ``max_bars`` spans: one bar each (x1 = the last step it is in
    context, at most n - 1). More: runs of up to ``k = ceil(len / max_bars)`` consecutive spans
    become one bar, the hover naming the first and last summary, how many and their largest size;
    a run never bridges a gap (a summary removed before the next was accepted), so the row still
    shows every step without a summary. O(len(spans)) in numpy (10^4 spans at 10^5 messages:
    ~3*10^4 points with hover text would cost ~0.2 s of JSON on every rerun).

    >>> x0, x1, texts, k = summary_bars([("s1", 5, 2, 4), ("s2", 6, 4, 9), ("s3", 7, 12, 20)], 20, 2)
    >>> x0.tolist(), x1.tolist(), k
    ([2.0, 12.0], [9.0, 19.0], 2)
    >>> texts[0]
    '2 summaries s1 … s2 (up to 6 tokens)<br>in context: steps 2–8'
    """
    m = len(spans)
    start = np.fromiter(map(_SPAN_START, spans), dtype=np.int64, count=m)
    stop = np.fromiter(map(_SPAN_STOP, spans), dtype=np.int64, count=m)
    k = max(1, math.ceil(m / max(1, max_bars)))
    if k == 1:
        texts = [f"summary {_esc(sid)} ({tok:,} tokens)<br>in context: steps {s0}–{s1 - 1}" for sid, tok, s0, s1 in spans]
        return start.astype(float), np.minimum(stop, n - 1).astype(float), texts, 1
    tokens = np.fromiter(map(_SPAN_TOKENS, spans), dtype=np.int64, count=m)
    pos = np.arange(m)
    # A new bar every k spans, and wherever a span does not start where the previous one ended.
    new = (pos % k == 0) | np.concatenate(([True], start[1:] != stop[:-1]))
    first = np.flatnonzero(new)
    last = np.append(first[1:], m) - 1
    peak = np.maximum.reduceat(tokens, first)
    texts = []
    for f, l, p in zip(first.tolist(), last.tolist(), peak.tolist()):
        if f == l:
            head = f"summary {_esc(spans[f][0])} ({p:,} tokens)"
        else:
            head = f"{l - f + 1:,} summaries {_esc(spans[f][0])} … {_esc(spans[l][0])} (up to {p:,} tokens)"
        texts.append(f"{head}<br>in context: steps {int(start[f])}–{int(stop[l]) - 1}")
    return start[first].astype(float), np.minimum(stop[last], n - 1).astype(float), texts, k


def context_window_figure(
    data: Replay | ReplayArrays,
    *,
    start: int = 0,
    stop: int | None = None,
    selected_step: int | None = None,
    max_bars: int = 2000,
    max_marks: int = 600,
) -> go.Figure:
    """Which messages are in context at each step: one horizontal bar per message.

    A bar runs from the add that brought the message (x = its own index, so bars start on the
    diagonal) to the add that dropped it, or to the end when it is kept; one trace per role,
    coloured by role. A cross marks where a message was dropped, one trace per drop reason
    ("dropped: <reason>"), coloured by reason, when at most ``max_marks`` bars are drawn (beyond,
    they would hide the bars; a bar's right end is its drop). Accepted summaries are bars on row
    -1 ("summary"). Only messages in context at some step of ``start..stop`` are drawn; when more
    than ``max_bars``, every k-th one (the title says k). ``selected_step`` draws a vertical line.
    """
    a = _arrays(data)
    fig = go.Figure()
    if a.n == 0:
        fig.update_layout(title="No messages", xaxis_title=X_STEP, yaxis_title=Y_MESSAGE)
        return fig
    lo, hi = _window(a, start, stop)
    end = a.end
    idx = np.nonzero((np.arange(a.n) <= hi) & (end >= lo))[0]
    stride = max(1, math.ceil(len(idx) / max_bars))
    if stride > 1:
        idx = idx[::stride]
    width = max(1.0, min(8.0, 600.0 / max(1, len(idx))))
    for code, role in enumerate(ROLES):
        sel = idx[a.role_code[idx] == code]
        if not len(sel):
            continue
        xs, ys = _segments(sel, np.minimum(end[sel], a.n - 1).astype(float), sel.astype(float))
        hover = np.empty(3 * len(sel), dtype=object)
        texts = [
            f"{_esc(a.ids[i])} ({role}, {int(a.tokens[i]):,} tokens)<br>in context: steps {i}–"
            + (f"{int(a.dropped_at[i]) - 1}, dropped at {int(a.dropped_at[i])}" if a.dropped_at[i] >= 0 else f"{a.n - 1} (kept)")
            for i in sel
        ]
        hover[0::3] = texts
        hover[1::3] = texts
        hover[2::3] = ""
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                name=role,
                line={"color": role_color(role), "width": width},
                hovertext=hover,
                hovertemplate="%{hovertext}<extra></extra>",
                connectgaps=False,
            )
        )
    gone = idx[a.dropped_at[idx] >= 0] if len(idx) <= max_marks else idx[:0]
    for code, reason in enumerate(DROP_REASONS):
        sel = gone[a.reason_code[gone] == code]
        if not len(sel):
            continue
        fig.add_trace(
            go.Scatter(
                x=a.dropped_at[sel],
                y=sel,
                mode="markers",
                name=f"dropped: {reason}",
                marker={"symbol": "x-thin", "size": 7, "color": REASON_COLORS.get(reason, "#000000"), "line": {"width": 2, "color": REASON_COLORS.get(reason, "#000000")}},
                hovertext=[
                    f"{_esc(a.ids[i])} dropped at step {int(a.dropped_at[i])}: {reason}"
                    + (" (summarized)" if a.summarized[i] else "")
                    for i in sel
                ],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    spans = _spans_in(a.summary_spans, lo, hi)
    merged = 1
    if spans:
        x0, x1, texts, merged = summary_bars(spans, a.n, max_bars)
        xs, ys = _segments(x0, x1, np.full(len(x0), -1.0))
        hover = np.empty(3 * len(x0), dtype=object)
        hover[0::3] = texts
        hover[1::3] = texts
        hover[2::3] = ""
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                name="summary" if merged == 1 else f"summary (up to {merged:,} per bar)",
                line={"color": ROLE_COLORS["summary"], "width": max(width, 4.0)},
                hovertext=hover,
                hovertemplate="%{hovertext}<extra></extra>",
                connectgaps=False,
            )
        )
    if selected_step is not None and lo <= selected_step <= hi:
        selected_step_line(fig, selected_step)
    title = "Context window over time"
    if stride > 1:
        title += f" (every {stride}th message of {len(np.nonzero((np.arange(a.n) <= hi) & (end >= lo))[0]):,})"
    if merged > 1:
        title += f" (summary row: up to {merged:,} consecutive summaries per bar)"
    ylo = int(idx.min()) if len(idx) else 0
    yhi = int(idx.max()) if len(idx) else 0
    fig.update_layout(
        title=title,
        xaxis_title=X_STEP,
        yaxis_title=Y_MESSAGE,
        hovermode="closest",
        legend={"orientation": "h", "y": -0.2},
        margin={"t": 50, "b": 10},
        xaxis={"range": [lo - 0.5, hi + 0.5], **integer_ticks(lo, hi)},  # no half steps
        yaxis={"range": [yhi + 0.5, min(ylo, -1) - 0.5]},  # message 0 at the top
    )
    return fig


def sweep_figure(rows: Sequence[SweepRow], current_limit: int | None = None) -> go.Figure:
    """Compactions, mean context and messages dropped against the limit: pick a limit by eye.

    Three stacked panels sharing the x axis (limit, tokens); one trace per panel ("compactions",
    "mean context", "messages dropped"); a dotted vertical line at ``current_limit``.
    """
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    x = [r.limit for r in rows]
    panels = [
        ("compactions", [r.stats.compactions for r in rows], "compactions (adds)", REASON_COLORS[DropReason.OVER_LIMIT], ""),
        ("mean context", [r.stats.mean_context for r in rows], "mean context (tokens)", SETTING_COLORS["A"], ":,.0f"),
        ("messages dropped", [r.stats.messages_dropped for r in rows], "messages dropped", REASON_COLORS[DropReason.TOOL_GROUP], ""),
    ]
    for i, (name, y, title, color, fmt) in enumerate(panels, start=1):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines+markers",
                name=name,
                line={"color": color},
                hovertemplate=f"limit %{{x:,}} tokens<br>{name}: %{{y{fmt or ':,'}}}<extra></extra>",
            ),
            row=i,
            col=1,
        )
        fig.update_yaxes(title_text=title, rangemode="tozero", row=i, col=1)
    fig.update_xaxes(title_text=X_LIMIT, row=3, col=1)
    if current_limit is not None:
        fig.add_vline(x=current_limit, line={"color": LINE_COLORS["limit"], "dash": "dot", "width": 2})
    fig.update_layout(
        title="Limit sweep",
        showlegend=False,
        height=560,
        margin={"t": 50, "b": 10},
    )
    return fig


#: Each comparison panel's y axis reaches this many times its taller bar.
BAR_HEADROOM = 1.15

#: The comparison's metrics: (ReplayStats attribute, label, unit for the y axis).
COMPARISON_METRICS: tuple[tuple[str, str, str], ...] = (
    ("compactions", "compactions", "adds"),
    ("prefix_changes", "prefix changes (uncached re-sends)", "adds"),
    ("messages_dropped", "messages dropped", "messages"),
    ("mean_context", "mean context", "tokens"),
    ("max_context", "max context", "tokens"),
    ("tokens_dropped", "tokens dropped", "tokens"),
)


def comparison_figure(a: ReplayStats, b: ReplayStats, labels: tuple[str, str] = ("A", "B")) -> go.Figure:
    """A against B on each metric of :data:`COMPARISON_METRICS`: small multiples of grouped bars.

    One panel per metric (each on its own scale from 0 to :data:`BAR_HEADROOM` times the taller
    bar, y axis titled with its unit); two bar traces per panel, A then B, coloured by
    :data:`SETTING_COLORS` (legend shown once).
    """
    fig = make_subplots(
        rows=2,
        cols=3,
        subplot_titles=[label for _, label, _ in COMPARISON_METRICS],
        vertical_spacing=0.3,
        horizontal_spacing=0.09,
    )
    for k, (attr, label, unit) in enumerate(COMPARISON_METRICS):
        row, col = divmod(k, 3)
        for which, stats in zip(("A", "B"), (a, b)):
            value = getattr(stats, attr)
            name = labels[0] if which == "A" else labels[1]
            fig.add_trace(
                go.Bar(
                    x=[which],
                    y=[value],
                    name=name,
                    legendgroup=which,
                    showlegend=k == 0,
                    marker_color=SETTING_COLORS[which],
                    text=[f"{value:,.0f}"],
                    textposition="auto",
                    hovertemplate=f"{_esc(name)}<br>{_esc(label)}: %{{y:,.0f}} {unit}<extra></extra>",
                ),
                row=row + 1,
                col=col + 1,
            )
        top = max(float(getattr(a, attr)), float(getattr(b, attr)))
        # Headroom over the taller bar, so it never touches the panel's title.
        fig.update_yaxes(
            title_text=unit, range=[0, top * BAR_HEADROOM if top > 0 else 1], row=row + 1, col=col + 1
        )
        fig.update_xaxes(title_text="setting", row=row + 1, col=col + 1)
    fig.update_layout(
        title="A against B on the same conversation",
        barmode="group",
        height=580,
        margin={"t": 80, "b": 10},
        legend={"orientation": "h", "y": -0.15},
    )
    return fig
