"""Cached computations of the Token budget page, keyed by plain values only.

Every function takes the dataset key, the conversation id and a :class:`convmem.HistorySettings`
(a frozen dataclass of ints and bools): hashing those costs microseconds, so a rerun never hashes
the conversation's messages. Each computation makes one call into convmem.

* ``st.cache_resource`` holds the big immutable results (the Replay, its numpy arrays, the message
  table): sharing one object beats ``st.cache_data``'s pickled copy per rerun. Callers must not
  mutate them (the page only reads).
* ``st.cache_data`` holds small values (sweep rows, JSON text).
* The limit sweep is cached per limit (:func:`get_sweep_rows`): a row is keyed by the settings at
  that limit (``HistorySettings.at_limit``), so a second opening, a click on a swept limit or a
  new price reuses every row it can; a run may compute only some new limits (the page fills the
  sweep in slices, convmem_dashboard.panel_sweep).
* The figures are cached too (``st.cache_resource``, keyed by the same plain values plus the
  window and the selection): building a plotly Figure validates every property and cost more
  than the rest of a rerun (~0.3-0.7 s each at 10^5 messages); st.plotly_chart only reads them
  (``Figure.to_dict`` copies).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pandas as pd
import streamlit as st

from convmem import (
    CachePricing,
    ClearingSweepRow,
    CostSweepRow,
    Conversation,
    HistorySettings,
    Replay,
    ReplayStats,
    SlicedReplay,
    SweepRow,
    sweep_limits,
)

from .data import get_dataset
from .sweep_rows import ClearingRows, LimitRun, NotCached, SweepRows, cost_row, fill_slice, limit_run
import plotly.graph_objects as go

from .figures_budget import (
    MessageArrays,
    ReplayArrays,
    message_arrays,
    comparison_figure,
    context_window_figure,
    replay_arrays,
    selected_event_trace,
    selected_step_line,
    sweep_figure,
    totals_figure,
)
from .tables_budget import base_table, context_at_step, context_records, messages_table

__all__ = [
    "conversation",
    "get_replay",
    "replay_job",
    "get_arrays",
    "get_message_arrays",
    "get_base_table",
    "get_table",
    "get_table_rows",
    "get_stats",
    "get_limit_run",
    "get_limit_stats",
    "get_limit_cost",
    "get_sweep_rows",
    "get_clearing_rows",
    "get_context_records",
    "message_index",
    "get_totals_figure",
    "get_context_figure",
    "get_comparison_figure",
    "get_sweep_figure",
]


@st.cache_resource(show_spinner=False, max_entries=64)
def conversation(dataset_key: str, conv_id: str) -> Conversation:
    """The conversation ``conv_id`` of dataset ``dataset_key`` (KeyError when absent)."""
    return get_dataset(dataset_key).conversation(conv_id)


@st.cache_resource(show_spinner=False, max_entries=16)
def message_index(dataset_key: str, conv_id: str) -> dict[str, int]:
    """Message id -> its position (= its add step) in the conversation (read-only)."""
    return {m.id: i for i, m in enumerate(conversation(dataset_key, conv_id).messages)}


@st.cache_resource(show_spinner=False, max_entries=12)
def replay_job(dataset_key: str, conv_id: str, settings: HistorySettings) -> SlicedReplay:
    """The conversation's replay under ``settings`` as a :class:`convmem.SlicedReplay`: the page
    advances it a bounded slice per script run (convmem_dashboard.panel_replay), every other
    caller drives it to its end (:func:`get_replay`). Shared by the sessions (its lock makes them
    take turns); an entry evicted mid-way starts over (and panel_replay then ends it in one run)."""
    return SlicedReplay(conversation(dataset_key, conv_id).messages, settings)


def get_replay(dataset_key: str, conv_id: str, settings: HistorySettings) -> Replay:
    """convmem.replay of the conversation under ``settings`` (O(n); ~1 s per 10^5 messages with
    clearing and summaries, none once :func:`replay_job`'s replay is done). Raises what the
    replay raised, on every call."""
    return replay_job(dataset_key, conv_id, settings).finish()


@st.cache_resource(show_spinner=False, max_entries=16)
def get_message_arrays(dataset_key: str, conv_id: str) -> MessageArrays:
    """The conversation's ids, tokens and role codes as arrays (settings-free: once per
    conversation, ~30 ms at 10^5 messages that a new setting no longer pays)."""
    return message_arrays(conversation(dataset_key, conv_id).messages)


@st.cache_resource(show_spinner=False, max_entries=12)
def get_arrays(dataset_key: str, conv_id: str, settings: HistorySettings) -> ReplayArrays:
    """The replay as the numpy arrays the figures read (built once per replay)."""
    return replay_arrays(get_replay(dataset_key, conv_id, settings), get_message_arrays(dataset_key, conv_id))


@st.cache_resource(show_spinner=False, max_entries=16)
def get_base_table(dataset_key: str, conv_id: str) -> pd.DataFrame:
    """The settings-free columns of the message table (ids, roles, tokens, previews)."""
    return base_table(conversation(dataset_key, conv_id).messages)


@st.cache_resource(show_spinner=False, max_entries=12)
def get_table(dataset_key: str, conv_id: str, settings: HistorySettings) -> pd.DataFrame:
    """The table of every message (read-only: shared between sessions)."""
    return messages_table(get_replay(dataset_key, conv_id, settings), get_base_table(dataset_key, conv_id))


def get_table_rows(dataset_key: str, conv_id: str, settings: HistorySettings, start: int, stop: int) -> pd.DataFrame:
    """Rows ``start..stop - 1`` of :func:`get_table`, built alone from the cached replay (the page
    shows 1,000 rows at a time: O(stop - start), ~5 ms, against ~0.1 s for all 10^5 rows; the CSV
    download builds the whole table on click)."""
    return messages_table(get_replay(dataset_key, conv_id, settings), start=start, stop=stop)


def get_stats(dataset_key: str, conv_id: str, settings: HistorySettings) -> ReplayStats:
    """The replay's summary figures (from the cached replay)."""
    return get_replay(dataset_key, conv_id, settings).stats


#: The sweep looks up two cached rows per limit on every rerun with it open (~40): Streamlit's
#: generic hashing of these frozen dataclasses (field by field, through ``dataclasses.asdict``)
#: cost ~1 ms per lookup; their ``repr`` names every field exactly and costs microseconds.
_BY_REPR = {HistorySettings: repr, CachePricing: repr}


#: Shown while one limit (or clearing pair) of the sweep replays (Streamlit shows it only after its
#: 0.5 s delay, so a fast one flashes nothing), under the partial sweep's bar (panel_sweep).
SWEEP_STEP_SPINNER = "Sweeping: replaying the conversation once more (one more limit, or one more clearing pair)…"


@st.cache_resource(show_spinner=SWEEP_STEP_SPINNER, max_entries=48, hash_funcs=_BY_REPR)
def get_limit_run(dataset_key: str, conv_id: str, settings: HistorySettings, _peek: bool = False) -> LimitRun:
    """One limit of the sweep (``settings`` already at that limit): one replay, kept as its stats
    and two int arrays (~8 bytes per message; read-only, shared). O(n) plus History's cost.
    ``_peek`` (not part of the cache key): raise sweep_rows.NotCached instead of replaying."""
    if _peek:
        raise NotCached(settings.limit)
    return limit_run(conversation(dataset_key, conv_id).messages, settings)


@st.cache_data(show_spinner=SWEEP_STEP_SPINNER, max_entries=1024, hash_funcs=_BY_REPR)
def get_limit_stats(dataset_key: str, conv_id: str, settings: HistorySettings, _peek: bool = False) -> ReplayStats:
    """The stats of one limit of the sweep (``settings`` already at that limit): the
    convmem.sweep_limits row, by its stats-only pass (no replay arrays; ~0.05-0.2 s per 10^5
    messages). A few ints: cached long after the runs are evicted. ``_peek``: as get_limit_run."""
    if _peek:
        raise NotCached(settings.limit)
    return sweep_limits(conversation(dataset_key, conv_id).messages, settings, [settings.limit])[0].stats


@st.cache_data(show_spinner=False, max_entries=1024, hash_funcs=_BY_REPR)
def get_limit_cost(
    dataset_key: str, conv_id: str, settings: HistorySettings, pricing: CachePricing, _peek: bool = False
) -> CostSweepRow:
    """One limit of the sweep priced: the run's requests through the prompt cache (O(n), a few ms
    per 10^5 messages with sweep_rows.cache_totals; the run itself is reused across prices).
    ``_peek``: raise sweep_rows.NotCached when the run is not cached (a cached run is priced)."""
    return cost_row(get_limit_run(dataset_key, conv_id, settings, _peek=_peek), pricing)


def get_sweep_rows(
    dataset_key: str,
    conv_id: str,
    settings: HistorySettings,
    limits: Sequence[int],
    pricing: CachePricing | None,
    new_limits: int | None = None,
) -> SweepRows:
    """The sweep over ``limits`` (each at ``settings.at_limit(limit)``): the stats rows and, when
    ``pricing`` is given, the priced rows, equal to convmem.sweep_limits / sweep_limit_costs.

    Every limit is cached on its own (keyed by the settings at that limit), so only limits never
    seen under these settings cost anything: with a pricing, one replay (~0.3-1 s per 10^5
    messages) whose stats are the stats row and whose arrays later prices reuse; without one
    (the prices make no pricing), sweep_limits' stats-only pass. ``new_limits``: compute at most
    that many of them (sweep_rows.fill_slice; None: all); the rows then hold every cached limit
    plus those, in limit order, and ``total`` says how many the grid has. Raises what
    convmem.replay raises for settings History refuses at a limit.
    """

    def row_at(limit: int, peek: bool):
        s = settings.at_limit(limit)
        if pricing is None:
            return None, get_limit_stats(dataset_key, conv_id, s, _peek=peek)
        cost = get_limit_cost(dataset_key, conv_id, s, pricing, _peek=peek)  # carries its replay's stats
        return cost, cost.stats

    found, computed = fill_slice(limits, row_at, len(limits) if new_limits is None else new_limits)
    done = [limit for limit in limits if limit in found]
    stats = [SweepRow(limit, found[limit][1]) for limit in done]
    costs = None if pricing is None else [found[limit][0] for limit in done]
    return SweepRows(stats, costs, len(limits), computed)


def get_clearing_rows(
    dataset_key: str,
    conv_id: str,
    settings: HistorySettings,
    triggers: Sequence[int],
    keeps: Sequence[int],
    pricing: CachePricing,
    new_pairs: int | None = None,
) -> ClearingRows:
    """Clearing's sweep (issue 11): each ``(trigger, keep)`` pair of ``triggers`` x ``keeps`` at
    ``settings`` with those two replaced, the rest as given; rows equal to
    convmem.sweep_clearing_costs' (one replay per pair, priced by sweep_rows.cache_totals, which
    equals prompt_cache's totals). Each pair is one cached run (get_limit_run: keyed by its
    settings, so a price change reprices without a replay). ``new_pairs``: compute at most that
    many pairs not cached yet (sweep_rows.fill_slice; None: all); the rows then hold the cached
    pairs plus those, in ``triggers``-major order. Raises what convmem.replay raises."""
    pairs = [(trigger, keep) for trigger in triggers for keep in keeps]

    def row_at(pair: tuple[int, int], peek: bool) -> ClearingSweepRow:
        trigger, keep = pair
        s = replace(settings, clear_trigger=trigger, clear_keep=keep)
        cost = get_limit_cost(dataset_key, conv_id, s, pricing, _peek=peek)
        return ClearingSweepRow(trigger, keep, cost.stats, cost.cache)

    found, computed = fill_slice(pairs, row_at, len(pairs) if new_pairs is None else new_pairs)
    return ClearingRows([found[p] for p in pairs if p in found], len(pairs), computed)


@st.cache_data(show_spinner=False, max_entries=64)
def get_context_records(dataset_key: str, conv_id: str, settings: HistorySettings, step: int) -> list[dict]:
    """The context right after add ``step`` as OpenAI-like records (rebuilt from the cached
    replay); the page's download escapes them (convmem_dashboard.export_safety)."""
    r = get_replay(dataset_key, conv_id, settings)
    return context_records(context_at_step(r, step, get_arrays(dataset_key, conv_id, settings)))


#: Drop events drawn at most (thinned beyond: the biggest per step bucket, counted in the hover).
MAX_MARKERS = 200
#: Message bars drawn at most in the context chart over a wide window (its JSON grows with them).
MAX_BARS = 800


@st.cache_resource(show_spinner=False, max_entries=8)
def _totals_base(dataset_key: str, conv_id: str, settings: HistorySettings, start: int, stop: int) -> dict:
    """totals_figure with no event selected, as the figure's dict (read-only)."""
    a = get_arrays(dataset_key, conv_id, settings)
    return totals_figure(a, start=start, stop=stop, max_markers=MAX_MARKERS).to_dict()


@st.cache_resource(show_spinner=False, max_entries=8)
def _context_base(dataset_key: str, conv_id: str, settings: HistorySettings, start: int, stop: int) -> dict:
    """context_window_figure with no step marked, as the figure's dict (read-only)."""
    a = get_arrays(dataset_key, conv_id, settings)
    return context_window_figure(a, start=start, stop=stop, max_bars=MAX_BARS).to_dict()


def get_totals_figure(
    dataset_key: str, conv_id: str, settings: HistorySettings, start: int, stop: int, selected: int | None
) -> go.Figure:
    """figures_budget.totals_figure of the cached replay: the cached figure without a selection,
    rebuilt unvalidated (already valid), plus the selected event's ring. Another selection
    costs one small trace, not a new figure."""
    fig = go.Figure(_totals_base(dataset_key, conv_id, settings, start, stop), _validate=False)
    a = get_arrays(dataset_key, conv_id, settings)
    if selected is not None and 0 <= selected < len(a.ev_step):
        fig.add_trace(selected_event_trace(a, selected))
    return fig


def get_context_figure(
    dataset_key: str, conv_id: str, settings: HistorySettings, start: int, stop: int, selected_step: int | None
) -> go.Figure:
    """figures_budget.context_window_figure of the cached replay, the step's line added to the
    cached figure (as get_totals_figure)."""
    fig = go.Figure(_context_base(dataset_key, conv_id, settings, start, stop), _validate=False)
    if selected_step is not None and start <= selected_step <= stop:
        selected_step_line(fig, selected_step)
    return fig


@st.cache_resource(show_spinner=False, max_entries=8)
def _comparison_base(dataset_key: str, conv_id: str, a: HistorySettings, b: HistorySettings) -> dict:
    return comparison_figure(get_stats(dataset_key, conv_id, a), get_stats(dataset_key, conv_id, b)).to_dict()


def get_comparison_figure(dataset_key: str, conv_id: str, a: HistorySettings, b: HistorySettings) -> go.Figure:
    """figures_budget.comparison_figure of A's and B's stats (a fresh copy of the cached one:
    callers may add to it)."""
    return go.Figure(_comparison_base(dataset_key, conv_id, a, b), _validate=False)


@st.cache_resource(show_spinner=False, max_entries=8)
def _sweep_base(
    dataset_key: str, conv_id: str, settings: HistorySettings, done: tuple[int, ...], _rows: Sequence[SweepRow]
) -> dict:
    return sweep_figure(list(_rows), settings.limit).to_dict()


def get_sweep_figure(
    dataset_key: str, conv_id: str, settings: HistorySettings, rows: Sequence[SweepRow]
) -> go.Figure:
    """figures_budget.sweep_figure of ``rows`` (:func:`get_sweep_rows`' rows, all of them or the
    limits done so far: cached by the values that determine them, the settings and those limits),
    the current limit marked (a fresh copy of the cached one: the page adds the safe limit's line
    to it)."""
    return go.Figure(_sweep_base(dataset_key, conv_id, settings, tuple(r.limit for r in rows), rows), _validate=False)
