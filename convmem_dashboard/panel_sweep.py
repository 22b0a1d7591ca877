"""The Token budget page's limit sweep, filled in slices without blocking the page (issue 10 item 3).

One new limit replays the whole conversation (0.1-0.9 s at 10^5 messages), so a script run
computes only a bounded slice of the sweep (sweep_rows.new_limits_per_run, docs/decisions.md):

* a full run (a widget change, the expander opened) computes at most FULL_RUN_MESSAGES messages'
  worth of new limits: none above 50,000 messages, every limit of a small conversation;
* while limits are missing, the sweep is drawn by a fragment rerun every FILL_EVERY seconds
  (``st.fragment(run_every=...)``): each such follow-up run draws the limits done so far with a
  bar ("Sweeping limits: 7 of 20"), then computes at least one more limit (FOLLOW_UP_MESSAGES'
  worth); the run that finds every limit done reruns the whole page (``st.rerun()``), which draws
  the complete sweep with no fragment, so the frontend's timer stops.

With clearing on, the complete limit sweep is followed by clearing's sweep (each trigger with each
keep: up to 25 replays), filled the same way with its own bar; the full run's budget left after
the limits it computed goes to it first.

A follow-up run whose slice raises (a limit convmem.replay refuses: a message id equal to the
summary in place at that limit) reruns the page, which shows the error and the limits done and
registers no fragment while the settings stay the same: the failing limit is replayed once, not on
every tick of the timer.

Cached limits show at once (every limit is looked up before any is computed). A click on a point
of a partial chart sets the limit and reruns the whole page; the price widgets sit outside the
sweep (full reruns), so prices reprice as the sweep fills.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from convmem import CachePricing, HistorySettings, SafeLimit

from . import cache_budget as cb
from . import panel_cost
from .clearing_view import clearing_sweep_grid
from .panel_safe_limit import mark_safe_limit
from .sweep_rows import FOLLOW_UP_MESSAGES, FULL_RUN_MESSAGES, SweepRows, new_limits_per_run
from .tables_budget import sweep_table, sweep_view
from . import view_token_budget as vm
from .show_table import show_table

__all__ = [
    "FILL_EVERY", "BAR_LABEL", "CLEARING_BAR_LABEL", "COMPLETE_CAPTION", "apply_pick", "clearing_fill_text",
    "clearing_partial_caption", "fill_text", "partial_caption", "render",
]

#: Seconds between follow-up runs while the sweep fills (the frontend's timer; a tick that comes
#: while a run is still going waits for it: runs follow each other, never overlap).
FILL_EVERY = 0.2
#: The bar's label while the sweep fills.
BAR_LABEL = "Sweeping limits"
#: The limit clicked in the sweep, until apply_pick sets it.
_PICKED = "_sweep_picked"
#: Set by a full run just before it calls the fragment: the fragment's first call (inside that
#: full run) computes nothing more, its later calls (follow-up runs) compute a slice.
_FULL_RUN = "_sweep_full_run"
#: ``(the sweep's key, message)`` of a follow-up run whose slice raised (a limit convmem.replay
#: refuses, e.g. a message id equal to the summary in place there): the full run it reruns shows
#: the message and registers no fragment, so no timer replays the failing limit again.
_FAILED = "_sweep_failed"


def fill_text(done: int, total: int) -> str:
    """The bar's text: how many limits of how many are done ("Sweeping limits: 7 of 20")."""
    return f"{BAR_LABEL}: {done:,} of {total:,}"


def _on_sweep_pick() -> None:
    """A click on a point of the limit sweep picks that point's limit (:func:`apply_pick` sets it)."""
    state = st.session_state.get("sweep_pick")
    limit = vm.sweep_pick(state.selection.points if state is not None else [])
    if limit is not None:
        st.session_state[_PICKED] = limit


def apply_pick(limit_key: str) -> None:
    """Set ``limit_key`` (the limit slider's key) to the limit clicked in the sweep, if any; call
    it in the full run before that slider. The click may come in a follow-up (fragment) run, which
    then reruns the page: the slider is bound to the URL, and in a run that ``st.rerun()`` started
    the URL's value wins over one set in an earlier run, not over one set in the same run before
    the widget (Streamlit's query-param binding)."""
    picked = st.session_state.pop(_PICKED, None)
    if picked is not None:
        st.session_state[limit_key] = picked


#: Under the chart of a complete sweep.
COMPLETE_CAPTION = (
    "The current policies at evenly spaced limits, the current one among them (a target "
    "keeps its % of the limit); the dotted line is the current limit. Look for the knee "
    "where compactions stop falling fast; click a point to use its limit."
)


def _sweep_chart(
    dataset_key: str, conv_id: str, settings: HistorySettings, swept: SweepRows, safe: SafeLimit | None
) -> None:
    """The sweep chart of the rows done (a click on a point sets the limit; the safe limit marked)."""
    st.plotly_chart(
        mark_safe_limit(cb.get_sweep_figure(dataset_key, conv_id, settings, swept.stats), safe),
        key="sweep_pick", on_select=_on_sweep_pick, selection_mode="points",
    )


def _sweep_table(swept: SweepRows) -> None:
    show_table(sweep_table(swept.stats), hide_index=True, key="sweep_table", **sweep_view(len(swept.stats)))


def partial_caption(done: int, total: int) -> str:
    """Under the bar of a partial sweep: how many limits of how many, and that the rest are coming."""
    return (
        f"Partial sweep: {done:,} of {total:,} limits done, the rest fill in on their own (one "
        "replay each; the page stays usable meanwhile). The costs per limit appear once every "
        "limit is done." + (" Click a point to use its limit." if done else "")
    )


def _partial_view(
    dataset_key: str, conv_id: str, settings: HistorySettings, swept: SweepRows, safe: SafeLimit | None
) -> None:
    done, total = len(swept.stats), swept.total
    st.progress(done / total, text=fill_text(done, total))
    st.caption(partial_caption(done, total))  # right under the bar: both drawn before the chart
    if done:
        _sweep_chart(dataset_key, conv_id, settings, swept, safe)
        _sweep_table(swept)


def _fill(
    dataset_key: str, conv_id: str, settings: HistorySettings, limits: tuple[int, ...],
    pricing: CachePricing | None, n_messages: int, safe: SafeLimit | None,
) -> None:
    """The fragment: the limits done so far, then (in a follow-up run) one slice more."""
    follow_up = not st.session_state.pop(_FULL_RUN, False)
    if follow_up and _PICKED in st.session_state:
        st.rerun()  # a click on a partial chart's point: the whole page follows its limit
    swept = cb.get_sweep_rows(dataset_key, conv_id, settings, limits, pricing, new_limits=0)
    if follow_up and swept.complete:
        st.rerun()  # completed meanwhile (by another session): never a bar at "N of N"
    _partial_view(dataset_key, conv_id, settings, swept, safe)
    if follow_up:
        new = new_limits_per_run(n_messages, FOLLOW_UP_MESSAGES, 1)
        try:
            complete = cb.get_sweep_rows(dataset_key, conv_id, settings, limits, pricing, new_limits=new).complete
        except Exception as exc:  # noqa: BLE001 - shown by the full run, which stops the fill
            key = _sweep_key(dataset_key, conv_id, settings, limits, pricing)
            st.session_state[_FAILED] = (key, f"{type(exc).__name__}: {exc}")
            complete = True
        if complete:
            st.rerun()  # the whole page draws the complete sweep (or the failure), and its timer stops


def _sweep_key(
    dataset_key: str, conv_id: str, settings: HistorySettings, limits: tuple, pricing: CachePricing | None
) -> tuple:
    """What identifies one fill: the conversation, the settings, the grid (the limits, or
    clearing's triggers and keeps) and the pricing."""
    return dataset_key, conv_id, repr(settings), limits, repr(pricing)


def render(
    dataset_key: str, conv_id: str, settings: HistorySettings, limits: Sequence[int], n_messages: int,
    safe: SafeLimit | None,
) -> None:
    """The sweep over ``limits`` (inside the open expander): complete when its limits are cached
    or few enough to compute in this run (``FULL_RUN_MESSAGES``), else filled by follow-up fragment
    runs. ``n_messages``: the conversation's size (the cost of one limit). ``safe``: the smallest
    safe limit to mark, or None. Raises what convmem.replay raises for settings History refuses."""
    pricing, pricing_error = panel_cost.sweep_pricing_or_error()
    limits = tuple(limits)
    failed = st.session_state.pop(_FAILED, None)
    if failed is not None and failed[0] == _sweep_key(dataset_key, conv_id, settings, limits, pricing):
        st.session_state[_FAILED] = failed  # kept while these settings stay: the fill stays stopped
        done = cb.get_sweep_rows(dataset_key, conv_id, settings, limits, pricing, new_limits=0)
        st.error(
            f"The limit sweep stopped at {len(done.stats):,} of {done.total:,} limits: one limit could "
            f"not be replayed. {failed[1]}"
        )
        if done.stats:  # the limits done, with no bar: nothing more fills in
            _sweep_chart(dataset_key, conv_id, settings, done, safe)
            _sweep_table(done)
        return
    full = new_limits_per_run(n_messages, FULL_RUN_MESSAGES, 0)
    swept = cb.get_sweep_rows(dataset_key, conv_id, settings, limits, pricing, new_limits=full)
    if swept.complete:
        _sweep_chart(dataset_key, conv_id, settings, swept, safe)
        st.caption(COMPLETE_CAPTION)
        _sweep_table(swept)
        panel_cost.render_sweep(swept.costs, pricing, pricing_error, settings.limit)
        if settings.clear_trigger is not None:  # issue 11: the sweep covers clearing's trigger and keep
            if pricing_error is not None:
                st.error(pricing_error)
            else:
                _clearing(dataset_key, conv_id, settings, pricing, n_messages, max(0, full - swept.computed))
        return
    st.session_state[_FULL_RUN] = True
    st.fragment(_fill, run_every=FILL_EVERY)(dataset_key, conv_id, settings, limits, pricing, n_messages, safe)


# ---------------------------------------------------------------------- clearing's trigger and keep
#: The clearing sweep's bar label while it fills (after the limit sweep is complete).
CLEARING_BAR_LABEL = "Sweeping clearing's trigger and keep"
#: As _FULL_RUN and _FAILED, for the clearing sweep's fragment.
_CLEARING_FULL_RUN = "_clearing_sweep_full_run"
_CLEARING_FAILED = "_clearing_sweep_failed"


def clearing_fill_text(done: int, total: int) -> str:
    """The clearing bar's text ("Sweeping clearing's trigger and keep: 7 of 25")."""
    return f"{CLEARING_BAR_LABEL}: {done:,} of {total:,}"


def clearing_partial_caption(done: int, total: int) -> str:
    """Under the clearing bar: how many (trigger, keep) pairs of how many, the rest coming."""
    return (
        f"Partial clearing sweep: {done:,} of {total:,} (trigger, keep) pairs done, the rest fill in "
        "on their own (one replay each; the page stays usable meanwhile)."
    )


def _clearing(
    dataset_key: str, conv_id: str, settings: HistorySettings, pricing: CachePricing, n_messages: int,
    budget: int,
) -> None:
    """The clearing sweep, filled like the limit sweep: complete when its pairs are cached or at
    most ``budget`` of them are new (what the full run's FULL_RUN_MESSAGES left after the limits
    it computed), else drawn by follow-up fragment runs that each compute one slice."""
    triggers, keeps = clearing_sweep_grid(settings.limit, settings.clear_trigger, settings.clear_keep)
    failed = st.session_state.pop(_CLEARING_FAILED, None)
    if failed is not None and failed[0] == _sweep_key(dataset_key, conv_id, settings, (triggers, keeps), pricing):
        st.session_state[_CLEARING_FAILED] = failed  # kept while these settings stay: no new fill
        done = cb.get_clearing_rows(dataset_key, conv_id, settings, triggers, keeps, pricing, new_pairs=0)
        st.error(
            f"Clearing's sweep stopped at {len(done.rows):,} of {done.total:,} (trigger, keep) pairs: "
            f"one could not be replayed. {failed[1]}"
        )
        if done.rows:
            panel_cost.render_clearing_sweep(done.rows, settings)
        return
    swept = cb.get_clearing_rows(dataset_key, conv_id, settings, triggers, keeps, pricing, new_pairs=budget)
    if swept.complete:
        panel_cost.render_clearing_sweep(swept.rows, settings)
        return
    st.session_state[_CLEARING_FULL_RUN] = True
    st.fragment(_fill_clearing, run_every=FILL_EVERY)(
        dataset_key, conv_id, settings, triggers, keeps, pricing, n_messages
    )


def _fill_clearing(
    dataset_key: str, conv_id: str, settings: HistorySettings, triggers: tuple[int, ...],
    keeps: tuple[int, ...], pricing: CachePricing, n_messages: int,
) -> None:
    """The clearing sweep's fragment: the pairs done so far under a bar, then (in a follow-up run)
    one slice more; the run that completes it reruns the whole page (its timer stops)."""
    follow_up = not st.session_state.pop(_CLEARING_FULL_RUN, False)
    swept = cb.get_clearing_rows(dataset_key, conv_id, settings, triggers, keeps, pricing, new_pairs=0)
    if follow_up and swept.complete:
        st.rerun()  # completed meanwhile (by another session): never a bar at "N of N"
    done, total = len(swept.rows), swept.total
    st.progress(done / total, text=clearing_fill_text(done, total))
    st.caption(clearing_partial_caption(done, total))
    if done:
        panel_cost.render_clearing_sweep(swept.rows, settings)
    if follow_up:
        new = new_limits_per_run(n_messages, FOLLOW_UP_MESSAGES, 1)
        try:
            complete = cb.get_clearing_rows(
                dataset_key, conv_id, settings, triggers, keeps, pricing, new_pairs=new
            ).complete
        except Exception as exc:  # noqa: BLE001 - shown by the full run, which stops the fill (as _fill)
            key = _sweep_key(dataset_key, conv_id, settings, (triggers, keeps), pricing)
            st.session_state[_CLEARING_FAILED] = (key, f"{type(exc).__name__}: {exc}")
            complete = True
        if complete:
            st.rerun()  # the whole page draws the complete clearing sweep (or the failure)
