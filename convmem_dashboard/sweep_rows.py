"""The limit sweep's rows, one limit at a time (pure: no Streamlit).

:func:`convmem.sweep_limits` and :func:`convmem.sweep_limit_costs` compute every limit in one call;
the page caches and reports progress per limit instead, so it needs one limit's work as a value:
:func:`limit_run` replays the conversation once at one limit (``HistorySettings.at_limit``) and
keeps what the priced sweep reads (the replay's stats and the two per-request arrays that
prompt-cache pricing reads), whatever the pricing; :func:`cost_row` prices a run into the
:func:`convmem.sweep_limit_costs` row, equal to it field for field (tests/test_sweep_rows.py).
A priced row's stats are the limit's ``replay(...).stats``, equal to its :func:`convmem.sweep_limits`
row (docs/decisions.md), so the page takes the stats row from it; without a pricing the page runs
sweep_limits' stats-only pass.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from convmem import (
    CachePricing,
    CacheTotals,
    CostSweepRow,
    HistorySettings,
    Message,
    ReplayStats,
    SweepRow,
    replay,
    unchanged_prefix_tokens,
)

__all__ = ["LimitRun", "SweepRows", "limit_run", "cache_totals", "cost_row"]

#: Largest value an ``array('i')`` holds; larger token counts are kept as ``'q'``.
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class LimitRun:
    """One limit's replay, reduced to what the sweep reads.

    ``sent[s]``: tokens request ``s`` sends (the replay's total after add ``s``); ``prefix[s]``:
    tokens of its prefix unchanged since request ``s - 1``. Both have one entry per message, as
    compact int arrays (4 or 8 bytes per entry instead of a tuple of Python ints).
    """

    settings: HistorySettings
    stats: ReplayStats
    sent: array
    prefix: array


@dataclass(frozen=True, slots=True)
class SweepRows:
    """The sweep's rows in limit order: the stats of each limit and, when a pricing was given,
    each limit priced (None otherwise)."""

    stats: list[SweepRow]
    costs: list[CostSweepRow] | None


def _compact(values: Sequence[int]) -> array:
    """``values`` (non-negative ints) as the smallest of array('i') / array('q') holding them."""
    return array("i" if max(values, default=0) <= _INT32_MAX else "q", values)


def limit_run(messages: Sequence[Message], settings: HistorySettings) -> LimitRun:
    """Replay ``messages`` under ``settings`` (already at the swept limit) and keep the stats, the
    tokens sent and the unchanged prefix per request. O(n) time plus History's cost, O(n) memory
    (about 8 bytes per message kept). Raises what :func:`convmem.replay` raises."""
    r = replay(messages, settings)
    return LimitRun(settings, r.stats, _compact(r.totals), _compact(unchanged_prefix_tokens(r)))


def cache_totals(sent: array, prefix: array, pricing: CachePricing) -> CacheTotals:
    """``convmem.cache_accounting(sent, prefix, pricing).totals``, vectorized: the same rule per
    request (served prefix: 0 under ``min_cacheable``, else rounded down to ``increment``; a request
    of at least ``min_cacheable`` tokens writes the rest) summed with numpy, and the same price
    formula on the same int sums, so the totals are equal, cost included (tests/test_sweep_rows.py).

    For a replay's own arrays (each prefix in [0, sent]; not re-checked). O(n), a few ms per 10^5
    requests against ~50 ms for cache_accounting's per-request tuples.
    """
    s = np.frombuffer(sent, dtype=sent.typecode).astype(np.int64)
    p = np.frombuffer(prefix, dtype=prefix.typecode).astype(np.int64)
    low = pricing.min_cacheable
    cached = np.where((p < low) | (p <= 0), 0, p - p % pricing.increment)
    written = np.where((s >= low) & (s > 0), s - cached, 0)
    tc, tw, total = int(cached.sum()), int(written.sum()), int(s.sum())
    tu = total - tc - tw
    cost = (tc * pricing.cached_per_mtok + tw * pricing.write_per_mtok + tu * pricing.input_per_mtok) / 1e6
    return CacheTotals(len(s), tc + tw + tu, tc, tw, tu, cost)


def cost_row(run: LimitRun, pricing: CachePricing) -> CostSweepRow:
    """The :func:`convmem.sweep_limit_costs` row of this limit under ``pricing`` (O(n))."""
    totals = cache_totals(run.sent, run.prefix, pricing)
    return CostSweepRow(run.settings.limit, run.settings.target, run.stats, totals)
