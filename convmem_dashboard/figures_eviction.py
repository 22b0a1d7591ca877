"""Figures of the Listing eviction page: pure builders (plain data in, plotly Figure out).

* :func:`conversation_timeline`: one horizontal bar per conversation, oldest at the top; the bar's
  length is its distinct listing ids, split into the ids whose last mention is there ("released"
  when it goes, solid) and the ids newer conversations mention again ("shared", hatched); kept and
  dropped conversations have the outcome colours. The ids are on hover.
* :func:`eviction_curve_figure`: distinct listing ids left against conversations dropped
  (``convmem.eviction_curve``), the cap as a horizontal line, the chosen k marked.

Text from the data is escaped before it reaches plotly.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from .colors import LINE_COLORS, OUTCOME_COLORS
from .wording import plural

__all__ = ["CAP_WIDTH", "WEBGL_THRESHOLD", "conversation_timeline", "escape", "eviction_curve_figure", "ids_hover"]

#: Above this many points the curve is drawn with WebGL (go.Scattergl).
WEBGL_THRESHOLD = 2_000
#: The cap line's width (px): thinner than the curve's 2.5.
CAP_WIDTH = 1.2
_IDS_PER_LINE = 4
_MAX_IDS_ON_HOVER = 60


def escape(text: object) -> str:
    """Text safe for plotly hover/labels: '&', '<' and '>' become entities."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def ids_hover(ids: Sequence[str]) -> str:
    """Ids for a hover box: escaped, a few per line, at most 60 (then "... and N more")."""
    if not ids:
        return "(none)"
    shown = [escape(x) for x in ids[:_MAX_IDS_ON_HOVER]]
    lines = [
        ", ".join(shown[i : i + _IDS_PER_LINE]) for i in range(0, len(shown), _IDS_PER_LINE)
    ]
    if len(ids) > _MAX_IDS_ON_HOVER:
        lines.append(f"... and {len(ids) - _MAX_IDS_ON_HOVER} more")
    return "<br>".join(lines)


def conversation_timeline(
    conversation_ids: Sequence[str],
    released: Sequence[Sequence[str]],
    shared: Sequence[Sequence[str]],
    k: int,
    *,
    titles: Sequence[str] | None = None,
) -> go.Figure:
    """A shopper's conversations as a timeline, oldest first (top), kept vs dropped coloured.

    Args:
        conversation_ids: the conversations, oldest first.
        released: per conversation, the distinct ids whose last mention is in it.
        shared: per conversation, the distinct ids newer conversations mention too.
        k: how many of the oldest conversations are dropped.
        titles: optional per-conversation title for hover.

    Traces (bars, stacked): "dropped: released ids", "dropped: shared with newer", "kept: ...",
    "kept: shared with newer", each with ``meta`` = (fate, part); a trace is left out when it has no
    conversation. Each conversation's bars add up to its distinct listing ids.
    """
    n = len(conversation_ids)
    labels = [f"#{i + 1} {escape(c)}" for i, c in enumerate(conversation_ids)]
    fig = go.Figure()
    for fate, rows in (("dropped", range(0, min(k, n))), ("kept", range(min(k, n), n))):
        rows = list(rows)
        if not rows:
            continue
        color = OUTCOME_COLORS[fate]
        for part, source, pattern in (
            ("released", released, ""),
            ("shared with newer", shared, "/"),
        ):
            hover = []
            for i in rows:
                distinct = len(released[i]) + len(shared[i])
                head = f"<b>#{i + 1} {escape(conversation_ids[i])}</b> ({fate})"
                if titles is not None and titles[i]:
                    head += f"<br>{escape(titles[i])}"
                hover.append(
                    f"{head}<br>{plural(distinct, 'distinct id')}; {len(source[i])} {part}:"
                    f"<br>{ids_hover(source[i])}"
                )
            fig.add_trace(
                go.Bar(
                    x=[len(source[i]) for i in rows],
                    y=[labels[i] for i in rows],
                    orientation="h",
                    name=f"{fate}: {part}",
                    meta=[fate, part],
                    legendgroup=fate,
                    marker={
                        "color": color,
                        "pattern": {"shape": pattern, "fillmode": "overlay", "fgcolor": "white"},
                        "line": {"color": color, "width": 1},
                    },
                    hovertext=hover,
                    hoverinfo="text",
                )
            )
    fig.update_layout(
        barmode="stack",
        xaxis_title="distinct listing ids in the conversation (count)",
        yaxis_title="conversation (oldest at the top)",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        height=max(220, min(900, 90 + 34 * n)),
        hoverlabel={"align": "left"},
    )
    fig.update_yaxes(categoryorder="array", categoryarray=labels, autorange="reversed")
    return fig


def eviction_curve_figure(curve: Sequence[int], cap: int, k: int) -> go.Figure:
    """Distinct listing ids left against conversations dropped, with the cap and the chosen k.

    Args:
        curve: ``eviction_curve(...)``: ``curve[j]`` ids left after dropping the j oldest.
        cap: max_listings, drawn as a horizontal line (a layout shape at ``y = cap``).
        k: the conversations evict_conversations drops under ``cap`` (the smallest j with
            ``curve[j] <= cap``), marked on the curve.

    Traces: "distinct ids left" (the curve: a solid step line with a marker per k), "chosen k"
    (one marker at ``(k, curve[k])``). The cap is a thin dashed line of another colour, drawn
    below the curve.
    """
    xs = list(range(len(curve)))
    scatter = go.Scattergl if len(curve) > WEBGL_THRESHOLD else go.Scatter
    fig = go.Figure()
    fig.add_trace(
        scatter(
            x=xs,
            y=list(curve),
            # Markers always: a flat stretch lying on the cap line still shows its points.
            mode="lines+markers",
            line={"shape": "hv", "color": OUTCOME_COLORS["kept"], "width": 2.5},
            marker={"size": 7 if len(curve) <= 200 else 4, "color": OUTCOME_COLORS["kept"]},
            name="distinct ids left",
            meta="curve",
            hovertemplate="drop %{x} oldest → %{y} distinct ids left<extra></extra>",
        )
    )
    if curve:
        kk = max(0, min(k, len(curve) - 1))
        fig.add_trace(
            go.Scatter(
                x=[kk],
                y=[curve[kk]],
                mode="markers",
                name=f"chosen: drop {kk}",
                meta="chosen",
                marker={
                    "size": 16,
                    "symbol": "star",
                    "color": OUTCOME_COLORS["dropped"],
                    "line": {"color": "black", "width": 1},
                },
                hovertemplate=(
                    f"cap {cap}: drop the {kk} oldest → {curve[kk]} distinct ids left"
                    "<extra></extra>"
                ),
            )
        )
        fig.add_vline(
            x=kk, name="chosen k", line={"color": OUTCOME_COLORS["dropped"], "width": 1, "dash": "dot"}
        )
    # The cap: thin, dashed, another colour than the curve, and under it, so the curve (and a
    # flat stretch of it lying exactly on the cap) stays in view.
    fig.add_hline(
        y=cap,
        name="cap",
        layer="below",
        line={"color": LINE_COLORS["cap"], "width": CAP_WIDTH, "dash": "dash"},
        annotation_text=f"cap max_listings = {cap}",
        annotation_position="top right",
        annotation_font_color=LINE_COLORS["cap"],
    )
    top = max([*curve, cap, 1])
    fig.update_layout(
        xaxis_title="oldest conversations dropped (count)",
        yaxis_title="distinct listing ids left (count)",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        height=340,
    )
    fig.update_xaxes(
        tickformat="d",
        dtick=1 if len(curve) <= 30 else None,
        range=[-0.3, max(1, len(curve) - 1) + 0.3],
    )
    fig.update_yaxes(range=[0, top * 1.12])
    return fig
