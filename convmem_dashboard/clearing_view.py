"""Clearing (context editing, issue 11) on the Token budget page: settings, chart marks, figures.

Pure helpers the page calls (plain pytest tests them): :func:`with_clearing` turns the page's
clearing widgets into :class:`~convmem.HistorySettings`; :func:`mark_clearings` adds the clearings
to the token budget chart as their own trace (apart from the drop events); :func:`clearing_caption`
and :func:`clearing_comparison_table` say what clearing did, for A and for A against B;
:func:`clearing_sweep_grid` and :func:`clearing_sweep_table` sweep clearing's trigger and keep.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from convmem import Clearing, ClearingSweepRow, HistorySettings, Replay, ReplayStats
from .wording import plural

__all__ = [
    "CLEARING_COLOR",
    "CLEARING_TRACE",
    "clearing_caption",
    "clearing_comparison_table",
    "clearing_sweep_grid",
    "clearing_sweep_table",
    "mark_clearings",
    "with_clearing",
]

#: The trace name of the clearing marks (drops are "drop events").
CLEARING_TRACE = "clearings"
#: Teal diamonds: apart from the drop events' triangles.
CLEARING_COLOR = "#17becf"


def with_clearing(
    settings: HistorySettings, on: bool, trigger: int | None, keep: int, at_least: int
) -> HistorySettings:
    """``settings`` with clearing on (trigger in tokens, default: the limit) or off.

    >>> s = with_clearing(HistorySettings(500), True, None, 3, 0)
    >>> (s.clear_trigger, s.clear_keep, s.clear_at_least)
    (500, 3, 0)
    >>> with_clearing(s, False, 100, 3, 0).clear_trigger is None
    True
    """
    if not on:
        return replace(settings, clear_trigger=None)
    trigger = settings.limit if trigger is None else min(int(trigger), settings.limit)
    return replace(settings, clear_trigger=trigger, clear_keep=int(keep), clear_at_least=int(at_least))


def mark_clearings(
    fig: go.Figure, r: Replay, start: int = 0, stop: int | None = None, max_markers: int = 400
) -> go.Figure:
    """Add the clearings in steps ``start..stop`` to the token budget chart as one trace, at the
    total after each one's add (hover: what was cleared, tokens before → after). Returns ``fig``.

    Over ``max_markers`` clearings in the window (a 10^5-message replay can clear 10^4 times),
    the one that freed the most tokens in each of ``max_markers`` equal step buckets stands for
    its bucket, its hover counting the clearings it stands for (as the drop events are thinned).
    O(clearings in the window); the figure holds at most ``max_markers`` points.
    """
    stop = len(r.totals) - 1 if stop is None else stop
    shown = [c for c in r.clearings if start <= c.step <= stop]
    if not shown:
        return fig
    if len(shown) > max_markers:
        shown, hover = _biggest_per_bucket(shown, start, stop, max_markers)
    else:
        hover = [_clearing_hover(c) for c in shown]
    fig.add_trace(
        go.Scatter(
            x=[c.step for c in shown],
            y=[r.totals[c.step] for c in shown],
            mode="markers",
            name=CLEARING_TRACE,
            marker=dict(symbol="diamond", size=9, color=CLEARING_COLOR),
            hovertext=hover,
            hoverinfo="text",
        )
    )
    return fig


def _clearing_hover(c: Clearing) -> str:
    return (
        f"step {c.step}: cleared {len(c.cleared)} {c.reason.replace('_', ' ')} "
        f"({c.total_before:,} → {c.total_after:,} tokens)"
    )


def _biggest_per_bucket(
    shown: list[Clearing], start: int, stop: int, buckets: int
) -> tuple[list[Clearing], list[str]]:
    """The clearing that freed the most tokens in each of ``buckets`` equal step buckets of
    ``start..stop`` (the earliest on a tie), oldest first, and their hovers (how many clearings
    each stands for, in which steps). O(len(shown) log len(shown))."""
    steps = np.fromiter((c.step for c in shown), dtype=np.int64, count=len(shown))
    freed = np.fromiter((c.total_before - c.total_after for c in shown), dtype=np.int64, count=len(shown))
    span = max(1, stop - start + 1)
    bucket = ((steps - start) * buckets) // span
    per_bucket = np.bincount(bucket, minlength=buckets)
    order = np.lexsort((-freed, bucket))  # by bucket, then freed tokens descending (stable: earliest first)
    _, first = np.unique(bucket[order], return_index=True)
    pick = np.sort(order[first])
    picked = [shown[i] for i in pick.tolist()]
    hover = []
    for c, b in zip(picked, bucket[pick].tolist()):
        x0 = start + (b * span + buckets - 1) // buckets
        x1 = min(stop, start + ((b + 1) * span + buckets - 1) // buckets - 1)
        hover.append(
            f"{plural(int(per_bucket[b]), 'clearing')} in add steps {x0:,}–{x1:,}; the biggest:<br>" + _clearing_hover(c)
        )
    return picked, hover


def clearing_caption(stats: ReplayStats, settings: HistorySettings | None = None) -> str:
    """One line on what clearing did: empty when it is off; with clearing on (``settings`` given
    with a ``clear_trigger``) and no clearing run, why nothing changed (a new user turned it on
    over the sample with keep 3 and saw no number move, and nothing saying so).

    >>> from convmem import replay, Message
    >>> clearing_caption(replay([Message("u", "user", 1)], HistorySettings(5)).stats)
    ''
    >>> s = HistorySettings(5, clear_trigger=5)
    >>> print(clearing_caption(replay([Message("u", "user", 1)], s).stats, s))
    Clearing is on but never ran: the total never passed the trigger (5 tokens) with more than the newest 3 tool results to clear and at least 0 tokens to free. Lower the trigger or "Keep newest tool results".
    """
    if not stats.clearings:
        if settings is None or settings.clear_trigger is None:
            return ""
        return (
            f"Clearing is on but never ran: the total never passed the trigger ({settings.clear_trigger:,} "
            f"tokens) with more than the newest {plural(settings.clear_keep, 'tool result')} to clear and at least "
            f"{settings.clear_at_least:,} tokens to free. Lower the trigger or \"Keep newest tool results\"."
        )
    return (
        f"Clearing: {plural(stats.clearings, 'clearing')} replaced {plural(stats.messages_cleared, 'message')} "
        f"by a placeholder, freeing {stats.tokens_cleared:,} tokens; teal diamonds mark them "
        "(each breaks the prompt cache from the first cleared message on)."
    )


def clearing_comparison_table(a: ReplayStats, b: ReplayStats) -> pd.DataFrame:
    """Rows: tokens sent (the sum of the context after every add), prefix changes (cache
    breaks), clearings, messages cleared, tokens freed by clearing, messages dropped; columns
    metric, A, B, B − A."""
    rows = [
        ("Tokens sent (sum over adds)", a.tokens_sent, b.tokens_sent),
        ("Prefix changes (cache breaks)", a.prefix_changes, b.prefix_changes),
        ("Clearings", a.clearings, b.clearings),
        ("Messages cleared", a.messages_cleared, b.messages_cleared),
        ("Tokens freed by clearing", a.tokens_cleared, b.tokens_cleared),
        ("Messages dropped", a.messages_dropped, b.messages_dropped),
    ]
    return pd.DataFrame(
        [(name, x, y, y - x) for name, x, y in rows], columns=["metric", "A", "B", "B − A"]
    )


#: Keeps swept beside the current one (Anthropic's and LangChain's default is 3).
SWEEP_KEEPS = (0, 1, 3, 5)
#: Triggers swept, as fractions of the limit, beside the current one.
SWEEP_TRIGGER_SHARES = (0.25, 0.5, 0.75, 1.0)


def clearing_sweep_grid(limit: int, trigger: int | None, keep: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (triggers, keeps) the clearing sweep tries: a quarter, half, three quarters and all of
    the limit plus the current trigger (tokens); keeps 0, 1, 3, 5 plus the current one. Sorted,
    no repeats; 25 pairs at most.

    >>> clearing_sweep_grid(1000, 600, 2)
    ((250, 500, 600, 750, 1000), (0, 1, 2, 3, 5))
    >>> clearing_sweep_grid(0, None, 3)
    ((0,), (0, 1, 3, 5))
    """
    triggers = {round(limit * s) for s in SWEEP_TRIGGER_SHARES}
    triggers.add(limit if trigger is None else trigger)
    return tuple(sorted(triggers)), tuple(sorted({*SWEEP_KEEPS, keep}))


def clearing_sweep_table(rows: list[ClearingSweepRow], trigger: int | None = None, keep: int | None = None) -> pd.DataFrame:
    """One row per (trigger, keep): tokens sent, clearings, cache breaks (requests whose prompt
    changed before its end), the cached share and the price; ``current`` marks the page's setting.

    >>> from convmem import ANTHROPIC_SONNET, HistorySettings, Message, sweep_clearing_costs
    >>> msgs = [Message("u", "user", 5), Message("a", "assistant", 5, tool_call_ids=("c",)),
    ...         Message("t", "tool", 50, tool_call_id="c"), Message("u2", "user", 5)]
    >>> rows = sweep_clearing_costs(msgs, HistorySettings(100), [40], [0, 3], ANTHROPIC_SONNET)
    >>> clearing_sweep_table(rows, 40, 3)[["keep", "tokens sent", "clearings", "current"]].values.tolist()
    [[0, 48, 1, ''], [3, 140, 0, '◀']]
    """
    return pd.DataFrame(
        [
            {
                "trigger (tokens)": r.trigger,
                "keep": r.keep,
                "tokens sent": r.stats.tokens_sent,
                "clearings": r.stats.clearings,
                "cache breaks": r.stats.prefix_changes,
                "cached share": round(r.cache.cached_share, 3),
                "cost (USD)": round(r.cache.cost, 4),
                "current": "◀" if (r.trigger, r.keep) == (trigger, keep) else "",
            }
            for r in rows
        ],
        columns=["trigger (tokens)", "keep", "tokens sent", "clearings", "cache breaks", "cached share",
                 "cost (USD)", "current"],
    )
