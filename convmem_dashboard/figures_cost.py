"""Figures of the cost panel (Token budget page): pure functions of convmem values to plotly.

* :func:`cache_steps_figure`: per request, input tokens served from the cache, written to it and
  sent uncached, for A and for B (one panel each; summed over runs of steps when long).
* :func:`sweep_cost_figure`: cost (USD) and input tokens sent against the limit.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from convmem import CostSweepRow, PromptCache

from .colors import LINE_COLORS, SETTING_COLORS
from .tables_cost import step_buckets

__all__ = ["CACHE_COLORS", "cache_steps_figure", "sweep_cost_figure"]

#: served from cache (green: cheap), written (orange), uncached (vermilion: full price).
CACHE_COLORS = {"cached": "#009E73", "written": "#E69F00", "uncached": "#D55E00"}
_NAMES = {"cached": "served from cache", "written": "written to cache", "uncached": "uncached"}


def cache_steps_figure(a: PromptCache, b: PromptCache | None = None, max_points: int = 400) -> go.Figure:
    """Stacked bars per request (x: add step) of cached / written / uncached input tokens.

    One panel for A, a second for B when given; over ``max_points`` steps, bars are sums over equal
    runs of steps (the hover names the run and the panel). Trace names: "served from cache",
    "written to cache", "uncached" in each panel; the legend shows the first panel's three, for
    both (same colours), and each panel's title names it.
    """
    panels = [("A", a)] + ([("B", b)] if b is not None else [])
    fig = make_subplots(
        rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=0.08,
        subplot_titles=[f"{name}: {c.pricing.provider}" for name, c in panels],
    )
    width = 1
    for row, (name, cache) in enumerate(panels, start=1):
        buckets = step_buckets(cache, max_points)
        width = max(width, buckets.width)
        x = (buckets.start + buckets.stop) / 2
        custom = list(zip(buckets.start.tolist(), buckets.stop.tolist()))
        for part in ("cached", "written", "uncached"):
            fig.add_trace(
                go.Bar(
                    x=x,
                    y=getattr(buckets, part),
                    width=buckets.width * 0.9,
                    name=_NAMES[part],  # one legend for both panels: no "A" in it (a new user read B's as A's)
                    legendgroup=part,
                    showlegend=row == 1,
                    marker={"color": CACHE_COLORS[part]},
                    customdata=custom,
                    hovertemplate=(
                        f"steps %{{customdata[0]:,}}–%{{customdata[1]:,}}<br>{_NAMES[part]}: "
                        "%{y:,} tokens<extra>" + name + "</extra>"
                    ),
                ),
                row=row,
                col=1,
            )
        fig.update_yaxes(title_text="input tokens", rangemode="tozero", row=row, col=1)
    title = "Input tokens per request"
    if width > 1:
        title += f" (summed over {width:,} steps per bar)"
    fig.update_xaxes(title_text="add step (one request after each add)", row=len(panels), col=1)
    fig.update_layout(
        title=title, barmode="stack", bargap=0, height=220 + 200 * len(panels),
        legend={"orientation": "h", "y": -0.15}, margin={"t": 70, "b": 10},
    )
    return fig


def sweep_cost_figure(rows: Sequence[CostSweepRow], current_limit: int | None = None) -> go.Figure:
    """Cost (USD, top) and input tokens sent / served from cache (bottom) against the limit.

    Traces: "cost", "tokens sent", "served from cache"; a dotted line at ``current_limit``. A limit
    whose cost dips while tokens sent rise is a rarer, deeper compaction the cache rewards.
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    x = [r.limit for r in rows]
    fig.add_trace(
        go.Scatter(
            x=x, y=[r.cache.cost for r in rows], mode="lines+markers", name="cost",
            line={"color": LINE_COLORS["limit"]},
            hovertemplate="limit %{x:,} tokens<br>cost $%{y:,.4f}<extra></extra>",
        ),
        row=1, col=1,
    )
    for name, values, color in (
        ("tokens sent", [r.cache.sent for r in rows], SETTING_COLORS["A"]),
        ("served from cache", [r.cache.cached for r in rows], CACHE_COLORS["cached"]),
    ):
        fig.add_trace(
            go.Scatter(
                x=x, y=values, mode="lines+markers", name=name, line={"color": color},
                hovertemplate=f"limit %{{x:,}} tokens<br>{name}: %{{y:,}} tokens<extra></extra>",
            ),
            row=2, col=1,
        )
    fig.update_yaxes(title_text="cost (USD)", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="input tokens", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="limit (tokens)", row=2, col=1)
    if current_limit is not None:
        fig.add_vline(x=current_limit, line={"color": LINE_COLORS["limit"], "dash": "dot", "width": 2})
    fig.update_layout(title="What each limit costs", height=460, margin={"t": 50, "b": 10},
                      legend={"orientation": "h", "y": -0.2})
    return fig
