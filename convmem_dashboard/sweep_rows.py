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

The page fills a sweep in slices (issue 10 item 3): :func:`fill_slice` looks every limit up in the
caches first (a miss raises :class:`NotCached` without computing) and computes at most a given
number of new limits per script run, in :func:`fill_order` (coarse to fine, so a partial chart
spans the range early); :func:`new_limits_per_run` is that number for a conversation's size.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from convmem import (
    CachePricing,
    CacheTotals,
    ClearingSweepRow,
    CostSweepRow,
    HistorySettings,
    Message,
    ReplayStats,
    SweepRow,
    replay,
    unchanged_prefix_tokens,
)

__all__ = [
    "ClearingRows",
    "FULL_RUN_MESSAGES",
    "FOLLOW_UP_MESSAGES",
    "LimitRun",
    "NotCached",
    "SweepRows",
    "limit_run",
    "cache_totals",
    "cost_row",
    "fill_order",
    "fill_slice",
    "new_limits_per_run",
]

#: Largest value an ``array('i')`` holds; larger token counts are kept as ``'q'``.
_INT32_MAX = 2**31 - 1
#: Messages replayed at most for new sweep limits in a full script run (a widget change, the
#: expander opened): 0 new limits above 50,000 messages, so the page's own rerun stays under 1 s
#: (one new limit at 10^5 costs 0.1-0.9 s on top of it); every limit at once up to 2,500.
FULL_RUN_MESSAGES = 50_000
#: Messages replayed at most for new limits in a follow-up (fragment) run, which still computes
#: at least one: one limit per run at 10^5 messages (0.1-0.9 s), ten at 10^4.
FOLLOW_UP_MESSAGES = 100_000

Row = TypeVar("Row")


class NotCached(LookupError):
    """Raised by a cached sweep lookup asked only to peek (``_peek=True``) at a limit it has not
    computed: nothing was computed and nothing is cached."""


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
    #: Limits in the sweep's grid: ``len(stats) < total`` while it is still filling (the rows
    #: then hold the limits done so far, in limit order).
    total: int
    #: Limits this call computed (replayed) rather than found cached.
    computed: int = 0

    @property
    def complete(self) -> bool:
        """Whether every limit of the grid has its row."""
        return len(self.stats) == self.total


@dataclass(frozen=True, slots=True)
class ClearingRows:
    """The clearing sweep's rows done so far, in ``triggers``-major order (as
    :func:`convmem.sweep_clearing_costs` gives them), out of ``total`` (trigger, keep) pairs."""

    rows: list[ClearingSweepRow]
    total: int
    computed: int = 0

    @property
    def complete(self) -> bool:
        """Whether every pair of the grid has its row."""
        return len(self.rows) == self.total


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


def new_limits_per_run(n_messages: int, budget_messages: int, at_least: int) -> int:
    """New sweep limits one script run may compute: ``budget_messages`` messages replayed at most
    (one limit replays all ``n_messages``), and never fewer than ``at_least``. O(1)."""
    return max(at_least, budget_messages // max(1, n_messages))


def fill_order(count: int) -> list[int]:
    """Indices ``0..count - 1`` coarse to fine: both ends, then the middle, then the middles of
    each half, and so on (breadth first), so the first few limits of a partial sweep span its
    whole range. A permutation; O(count)."""
    if count <= 0:
        return []
    order, seen = [], set()

    def take(i: int) -> None:
        if i not in seen:
            seen.add(i)
            order.append(i)

    take(0)
    take(count - 1)
    spans = [(0, count - 1)]
    while spans:
        nxt = []
        for lo, hi in spans:
            if hi - lo > 1:
                mid = (lo + hi) // 2
                take(mid)
                nxt += [(lo, mid), (mid, hi)]
        spans = nxt
    return order


def fill_slice(
    limits: Sequence[int], row_at: Callable[[int, bool], Row], new_limits: int
) -> tuple[dict[int, Row], int]:
    """One script run's share of a sweep: every limit already cached, plus at most ``new_limits``
    new ones computed, in :func:`fill_order`.

    ``row_at(limit, peek)`` returns the limit's row; with ``peek`` True it raises
    :class:`NotCached` instead of computing one. Returns the rows found (limit -> row) and how
    many were computed. O(len(limits)) lookups plus the computed limits' cost.
    """
    rows: dict[int, Row] = {}
    computed = 0
    for i in fill_order(len(limits)):
        limit = limits[i]
        try:
            rows[limit] = row_at(limit, True)
        except NotCached:
            if computed < new_limits:
                rows[limit] = row_at(limit, False)
                computed += 1
    return rows, computed
