"""Figures of the Flaky store page: pure builders (plain data in, plotly Figure out; no streamlit).

:func:`call_timeline` draws a run's call log on the virtual clock: x is the time a call started
(seconds), y is the page request it belongs to (a request and its retries share a row, first
request at the top). Each call is one marker coloured by outcome (ok / transient / error); each
backoff sleep is a horizontal segment from the failed call to its retry. Calls take no time on the
virtual clock, so only backoff moves a row to the right. Hover shows the cursor, the attempt, the
injected fault and what the page brought; text from the data is escaped ('<' never reaches plotly
as markup).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from convmem.outcomes import CallOutcome

from .colors import OUTCOME_COLORS

__all__ = [
    "COINCIDE_FRACTION",
    "WEBGL_THRESHOLD",
    "X_PAD",
    "call_timeline",
    "coinciding_calls",
    "escape",
    "timeline_extent",
    "x_range",
]

#: Calls of one request closer in time than this fraction of the time span draw on top of each
#: other (a 10-px marker in a ~1,000-px plot): they get a count label ("×2").
COINCIDE_FRACTION = 0.01

#: Above this many points a trace is drawn with WebGL (go.Scattergl).
WEBGL_THRESHOLD = 2_000

#: Room left of t = 0 and right of the last call, as a fraction of the time span.
X_PAD = 0.02

_OUTCOME_LABELS = {
    CallOutcome.OK: "ok (page served)",
    CallOutcome.TRANSIENT: "transient failure",
    CallOutcome.ERROR: "error",
}
_SYMBOLS = {CallOutcome.OK: "circle", CallOutcome.TRANSIENT: "x", CallOutcome.ERROR: "diamond"}


def escape(text: Any) -> str:
    """Text safe for plotly hover/labels: '&', '<' and '>' become entities."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _hover(row: Mapping[str, Any]) -> str:
    lines = [
        f"call #{row['index'] + 1} · request {row['request']} · attempt {row['attempt']}",
        f"cursor: {escape(row['cursor'])}",
        f"outcome: <b>{escape(row['outcome'])}</b>",
        f"injected fault: {escape(row['fault'] or 'none')}",
        f"at: {row['started_at']:.3f} s",
    ]
    if row["outcome"] == CallOutcome.OK:
        lines.append(
            f"page: {row['page_size']} msg ({row['new_messages']} new, {row['duplicates']} dup)"
        )
        lines.append(f"next cursor: {escape(row['next_cursor'])}")
    if row.get("error"):
        lines.append(f"error: {escape(row['error'])[:160]}")
    if row["delay_after"] is not None:
        lines.append(f"backoff: {row['delay_after']:.3f} s, then retry")
    return "<br>".join(lines)


def coinciding_calls(
    calls: Sequence[Mapping[str, Any]], span: float, fraction: float = COINCIDE_FRACTION
) -> list[tuple[float, int, int]]:
    """Groups of two or more calls of one request whose markers would coincide: each as
    ``(started_at of its first call, request, calls in the group)``. Calls are grouped while each
    starts within ``fraction * span`` seconds (at least 1 µs) of the group's first. O(n log n).

    >>> calls = [{"request": 1, "started_at": t} for t in (0.0, 0.0002, 0.5)]
    >>> coinciding_calls(calls, 0.5)
    [(0.0, 1, 2)]
    """
    tol = max(span * fraction, 1e-6)
    groups: list[tuple[float, int, int]] = []
    ordered = sorted(calls, key=lambda c: (c["request"], c["started_at"]))
    i = 0
    while i < len(ordered):
        first = ordered[i]
        j = i + 1
        while (
            j < len(ordered)
            and ordered[j]["request"] == first["request"]
            and ordered[j]["started_at"] - first["started_at"] <= tol
        ):
            j += 1
        if j - i >= 2:
            groups.append((first["started_at"], first["request"], j - i))
        i = j
    return groups


def timeline_extent(calls: Sequence[Mapping[str, Any]]) -> tuple[float, int]:
    """(last virtual second any call or backoff reaches, number of page requests) of a run."""
    end = max((c["started_at"] + (c["delay_after"] or 0.0) for c in calls), default=0.0)
    return end, (calls[-1]["request"] if calls else 1)


def call_timeline(
    calls: Sequence[Mapping[str, Any]],
    *,
    title: str | None = None,
    extent: tuple[float, int] | None = None,
) -> go.Figure:
    """The call timeline of one run.

    Args:
        calls: one mapping per call with the keys of ``tables_store.FlakyRun.calls`` (index,
            request, cursor, attempt, outcome, fault, error, started_at, delay_after, page_size,
            new_messages, duplicates, next_cursor).
        title: the figure title, or None.
        extent: fix the axes to ``(seconds, requests)`` (:func:`timeline_extent` of the whole
            run), so stepping through a prefix of the calls fills the picture in without
            rescaling it; None fits the axes to ``calls``.

    Traces: one marker trace per outcome present, named by outcome (``meta`` holds the outcome
    key), then one "backoff" line trace whose segments are the sleeps. Marker counts add up to
    ``len(calls)``. WebGL traces above :data:`WEBGL_THRESHOLD` calls.
    """
    big = len(calls) > WEBGL_THRESHOLD
    scatter = go.Scattergl if big else go.Scatter
    fig = go.Figure()
    by_outcome: dict[str, list[Mapping[str, Any]]] = {}
    for row in calls:
        by_outcome.setdefault(row["outcome"], []).append(row)
    for outcome in [*CallOutcome, *sorted(set(by_outcome) - set(_SYMBOLS))]:
        rows = by_outcome.get(outcome)
        if not rows:
            continue
        fig.add_trace(
            scatter(
                # numpy arrays: plotly validates lists item by item (slow at 10^4+ calls).
                x=np.fromiter((r["started_at"] for r in rows), float, len(rows)),
                y=np.fromiter((r["request"] for r in rows), int, len(rows)),
                mode="markers",
                name=_OUTCOME_LABELS.get(outcome, outcome),
                meta=outcome,
                marker={
                    "color": OUTCOME_COLORS.get(outcome, "#7F7F7F"),
                    "symbol": _SYMBOLS.get(outcome, "circle"),
                    "size": 6 if big else 10,
                    "line": {"width": 0 if big else 1, "color": "white"},
                },
                hovertext=np.array([_hover(r) for r in rows], dtype=object),
                hoverinfo="text",
            )
        )
    xs: list[float | None] = []
    ys: list[int | None] = []
    for row in calls:
        delay = row["delay_after"]
        if delay is None:
            continue
        xs += [row["started_at"], row["started_at"] + delay, None]
        ys += [row["request"], row["request"], None]
    if xs:
        fig.add_trace(
            scatter(
                x=np.array(xs, dtype=float),  # None -> NaN: a gap between segments
                y=np.array(ys, dtype=float),
                mode="lines",
                name="backoff sleep",
                meta="backoff",
                line={"color": OUTCOME_COLORS["backoff"], "width": 3},
                hoverinfo="skip",
            )
        )
    end_all, _requests = extent if extent is not None else timeline_extent(calls)
    groups = coinciding_calls(calls, end_all)
    if groups:
        # Markers on top of each other still count: a label with how many calls are there.
        fig.add_trace(
            go.Scatter(
                x=np.fromiter((g[0] for g in groups), float, len(groups)),
                y=np.fromiter((g[1] for g in groups), float, len(groups)),
                mode="text",
                text=[f"×{g[2]:,}" for g in groups],
                textposition="top right",
                textfont={"size": 12 if _requests <= 60 else 9, "color": "#444"},
                name="calls drawn on top of each other (count)",
                meta="coinciding",
                hovertext=[f"{g[2]:,} calls of request {g[1]:,} within "
                           f"{max(end_all * COINCIDE_FRACTION, 1e-6):.4f} s" for g in groups],
                hoverinfo="text",
            )
        )
    fig.update_layout(
        title=title,
        xaxis_title="virtual time since the load started (s)",
        yaxis_title="page request (retries share a row)",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        margin={"l": 10, "r": 10, "t": 40 if title is None else 70, "b": 10},
        hovermode="closest",
    )
    end, rows = extent if extent is not None else timeline_extent(calls)
    fig.update_layout(height=max(280, min(640, 120 + 24 * rows)))
    if rows <= 30:
        fig.update_yaxes(range=[rows + 0.5, 0.5], dtick=1, tickformat="d")
    elif extent is not None:
        fig.update_yaxes(range=[rows + 0.5, 0.5], tickformat="d")
    else:
        fig.update_yaxes(autorange="reversed", tickformat="d")
    # Padded on both sides so a marker at t = 0 (every first call) or at the end is drawn whole.
    fig.update_xaxes(range=x_range(end), zeroline=True)
    return fig


def x_range(end: float, pad: float = X_PAD) -> list[float]:
    """The timeline's x range for calls from 0 to ``end`` seconds: ``pad`` of the span on each
    side (at least 5 ms, so a run whose calls all start at 0 still has a visible span).

    >>> x_range(1.0)
    [-0.02, 1.02]
    """
    margin = max(end * pad, 0.005)
    return [-margin, end + margin]
