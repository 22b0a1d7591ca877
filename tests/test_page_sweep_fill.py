"""The limit sweep fills in slices (issue 10 item 3; convmem_dashboard.panel_sweep, sweep_rows).

Pure parts (fill order, slice sizes, one slice) against brute force; then AppTest on the 10^4-message
synthetic conversation, where a full run computes at most 5 new limits (FULL_RUN_MESSAGES) and a
follow-up run at most 10 (FOLLOW_UP_MESSAGES). AppTest's ``run()`` is a full run and a fragment's
``run_every`` timer never fires in it, so :func:`follow_up_run` asks AppTest's script runner for a
fragment rerun of the registered fragments, as the frontend's timer does (``is_auto_rerun``). New
limits are counted at ``cache_budget.limit_run`` (one call per replay); every expected row comes
from convmem.sweep_limits / sweep_limit_costs.
"""

from __future__ import annotations

import pytest
import streamlit.testing.v1.local_script_runner as local_script_runner
from streamlit.testing.v1 import AppTest

from convmem import HistorySettings, sweep_limit_costs, sweep_limits
from convmem_dashboard import cache_budget as cb
from convmem_dashboard import panel_sweep
from convmem_dashboard.panel_cost import sweep_pricing
from convmem_dashboard.sweep_rows import (
    FOLLOW_UP_MESSAGES,
    FULL_RUN_MESSAGES,
    NotCached,
    fill_order,
    fill_slice,
    new_limits_per_run,
)
from apptest_support import dashboard_app, metrics, ok

PAGE = "app_pages/token_budget.py"
DATA = "synthetic-10000"
N = 10_000


# ------------------------------------------------------------------------------------ pure parts
@pytest.mark.parametrize("count", range(0, 41))
def test_fill_order_is_a_permutation_ends_first_then_halves(count):
    order = fill_order(count)
    assert sorted(order) == list(range(count))
    if count >= 2:
        assert order[:2] == [0, count - 1]
    if count >= 3:
        assert order[2] == (count - 1) // 2
    # coarse to fine: after the first k limits, no gap between neighbours done is over twice the
    # smallest possible (the grid halved level by level)
    for k in range(2, count + 1):
        done = sorted(order[:k])
        biggest = max(b - a for a, b in zip(done, done[1:]))
        assert biggest <= 2 * -(-(count - 1) // (k - 1)), (count, k, done)


def test_new_limits_per_run_bounds_the_messages_replayed():
    assert [new_limits_per_run(n, FULL_RUN_MESSAGES, 0) for n in (10, 2_500, 10_000, 50_000, 50_001, 100_000)] == [
        5_000, 20, 5, 1, 0, 0
    ]
    assert [new_limits_per_run(n, FOLLOW_UP_MESSAGES, 1) for n in (1, 10_000, 100_000, 10**6)] == [100_000, 10, 1, 1]
    assert new_limits_per_run(0, 100, 0) == 100  # an empty conversation costs one message per limit


class FakeCache:
    """A row cache: ``cached`` limits answer a peek, the others are computed (counted) on demand."""

    def __init__(self, cached):
        self.cached = set(cached)
        self.computed = []

    def __call__(self, limit, peek):
        if limit not in self.cached:
            if peek:
                raise NotCached(limit)
            self.computed.append(limit)
            self.cached.add(limit)
        return f"row {limit}"


@pytest.mark.parametrize("budget", [0, 1, 3, 20])
def test_fill_slice_shows_every_cached_limit_and_computes_at_most_the_budget(budget):
    limits = list(range(100, 2_100, 100))  # 20 limits
    cached = {100, 700, 1_300, 2_000}
    cache = FakeCache(cached)
    rows, computed = fill_slice(limits, cache, budget)
    assert computed == len(cache.computed) == min(budget, 16)
    assert set(rows) == cached | set(cache.computed)
    assert all(rows[limit] == f"row {limit}" for limit in rows)
    # the new ones are the first uncached limits in fill order
    assert cache.computed == [limits[i] for i in fill_order(20) if limits[i] not in cached][:budget]


def test_fill_slices_complete_a_sweep_in_ceil_runs():
    limits = list(range(1, 21))
    cache, runs = FakeCache(()), 0
    while len(cache.cached) < 20:
        _, computed = fill_slice(limits, cache, 3)
        assert computed == min(3, 20 - 3 * runs)
        runs += 1
    assert runs == 7 and sorted(cache.computed) == limits


# ------------------------------------------------------------------------------------ on the page
@pytest.fixture
def replays(monkeypatch):
    """Every new limit's replay, as the settings it ran at (Streamlit's row caches emptied first)."""
    for f in (cb.get_limit_run, cb.get_limit_stats, cb.get_limit_cost):
        f.clear()
    seen = []
    real = cb.limit_run

    def counting(messages, settings):
        seen.append(settings)
        return real(messages, settings)

    monkeypatch.setattr(cb, "limit_run", counting)
    return seen


def follow_up_run(at: AppTest, monkeypatch) -> AppTest:
    """One follow-up run: AppTest's script runner reruns the registered fragments only, as the
    frontend does when a fragment's ``run_every`` timer fires (AppTest has no timer)."""
    fragments = list(at._fragment_storage._fragments)
    real = local_script_runner.RerunData
    with monkeypatch.context() as m:
        m.setattr(local_script_runner, "RerunData",
                  lambda **kw: real(**kw, fragment_id_queue=fragments, is_auto_rerun=True))
        return at.run()


def open_sweep(query: dict | None = None) -> AppTest:
    at = dashboard_app()
    at.query_params.update({"data": DATA, "cmp": "false", "sweep": "true", **(query or {})})
    at.run()
    at.switch_page(PAGE)
    return ok(at.run())


def sweep_rows_shown(at: AppTest):
    return next(d.value for d in at.dataframe if "mean context (tokens)" in d.value.columns)


def bar_texts(at: AppTest) -> list[str]:
    return [p.proto.text for p in at.get("progress")]


def expected(at: AppTest):
    """The grid, the settings and convmem's rows, from what the page shows (no target, no policy)."""
    conv = cb.conversation(DATA, at.selectbox(key="conv").value)
    settings = HistorySettings(at.slider(key="limit").value)
    return conv, settings


def assert_rows_are_convmems(at: AppTest, conv, settings, limits) -> None:
    table = sweep_rows_shown(at)
    shown = list(table["limit (tokens)"])
    assert shown == sorted(shown) and set(shown) <= set(limits)
    rows = sweep_limits(conv.messages, settings, shown)
    assert table["compactions"].tolist() == [r.stats.compactions for r in rows]
    assert table["tokens dropped"].tolist() == [r.stats.tokens_dropped for r in rows]
    assert table["mean context (tokens)"].tolist() == [round(r.stats.mean_context, 1) for r in rows]


def test_full_runs_fill_the_sweep_five_limits_at_a_time_then_show_it_whole(replays):
    at = open_sweep()
    conv, settings = expected(at)
    grid_limits = [s.limit for s in replays]
    total = None
    for run in range(1, 10):
        shown = len(sweep_rows_shown(at)) if any("mean context (tokens)" in d.value.columns for d in at.dataframe) else 0
        if not bar_texts(at):
            break
        total = total or int(bar_texts(at)[0].split(" of ")[1])
        assert len(replays) == min(5 * run, total)  # each full run: at most 5 new limits at 10^4 messages
        assert bar_texts(at) == [panel_sweep.fill_text(len(replays), total)]  # "Sweeping limits: 5 of 20"
        assert shown == len(replays)
        assert any(c.value == panel_sweep.partial_caption(shown, total) for c in at.caption)
        assert not any("sweep_cost" in c.proto.id for c in at.get("plotly_chart"))  # no cost of a part
        assert_rows_are_convmems(at, conv, settings, grid_limits)
        ok(at.run())
        grid_limits = [s.limit for s in replays]
    assert run == -(-total // 5) and len(replays) == total == 20  # "Limits to try": 20
    table = sweep_rows_shown(at)
    limits = list(table["limit (tokens)"])
    assert sorted(limits) == sorted(s.limit for s in replays)
    assert_rows_are_convmems(at, conv, settings, limits)
    costs = sweep_limit_costs(conv.messages, settings, limits, sweep_pricing())
    cost_table = next(d.value for d in at.dataframe if "cost (USD)" in d.value.columns)
    assert cost_table["cost (USD)"].tolist() == [round(c.cache.cost, 4) for c in costs] and len(costs) == total
    assert any(c.value == panel_sweep.COMPLETE_CAPTION for c in at.caption)
    ok(at.run())
    assert len(replays) == total and not bar_texts(at)  # complete and cached: nothing more runs


def test_follow_up_runs_compute_ten_limits_each_then_rerun_the_whole_page(replays, monkeypatch):
    at = open_sweep({"pin_sys": "true"})
    assert len(replays) == 5 and bar_texts(at) == [panel_sweep.fill_text(5, 20)]
    at = follow_up_run(at, monkeypatch)  # draws the 5 done, then computes 10 more
    assert len(replays) == 15 and bar_texts(at) == [panel_sweep.fill_text(5, 20)]
    assert len(sweep_rows_shown(at)) == 5
    assert not at.metric  # a fragment run: the rest of the page was not rerun
    at = follow_up_run(at, monkeypatch)  # draws 15, computes the last 5, reruns the whole page
    assert len(replays) == 20 and not bar_texts(at)
    conv = cb.conversation(DATA, at.selectbox(key="conv").value)
    settings = HistorySettings(at.slider(key="limit").value, pin_system=True)
    limits = list(sweep_rows_shown(at)["limit (tokens)"])
    assert len(limits) == 20 and at.metric  # the whole page, the sweep complete
    assert [r.stats.compactions for r in sweep_limits(conv.messages, settings, limits)] == (
        sweep_rows_shown(at)["compactions"].tolist()
    )


def test_a_click_on_a_partial_sweep_sets_the_limit_for_the_whole_page(replays, monkeypatch):
    """The chart's callback runs in a follow-up run (the chart is the fragment's) and keeps the
    pick; the follow-up run reruns the page, which sets the limit before the slider. (In a browser
    a limit set in the follow-up run itself lost to the URL's in that rerun; AppTest does not
    reproduce that, tests/e2e/test_sweep_progress_e2e.py clicks a partial chart for real.)"""
    at = open_sweep({"on_user": "true"})
    before = at.slider(key="limit").value
    at.query_params["limit"] = str(before)  # as in the browser: the URL carries the slider's value
    ok(at.run())
    done = list(sweep_rows_shown(at)["limit (tokens)"])
    picked = next(limit for limit in done if limit != before)
    at.session_state["_sweep_picked"] = picked  # what the chart's on_select callback does
    at = ok(follow_up_run(at, monkeypatch))
    assert at.slider(key="limit").value == picked and at.metric  # the whole page reran at the new limit
    conv = cb.conversation(DATA, at.selectbox(key="conv").value)
    assert metrics(at)["Compactions"] == f"{sweep_limits(conv.messages, HistorySettings(picked, start_on_user=True), [picked])[0].stats.compactions:,}"
    assert bar_texts(at)  # still filling, now through the new limit


# ------------------------------------------------------------------- clearing's trigger and keep
def clearing_bar_texts(at: AppTest) -> list[str]:
    return [t for t in bar_texts(at) if t.startswith(panel_sweep.CLEARING_BAR_LABEL)]


def clearing_rows_shown(at: AppTest):
    return next((d.value for d in at.dataframe if "cache breaks" in d.value.columns), None)


def test_clearing_sweep_fills_after_the_limits_then_shows_convmems_rows(replays, monkeypatch):
    """With clearing on, the complete limit sweep is followed by clearing's (trigger, keep) sweep,
    filled the same way: at most 5 new replays per full run at 10^4 messages (limits first, then
    pairs), then follow-up runs of 10; the finished table equals convmem.sweep_clearing_costs."""
    from convmem import sweep_clearing_costs
    from convmem_dashboard.clearing_view import clearing_sweep_grid, with_clearing

    at = open_sweep({"clr": "true"})
    limits_total = int(bar_texts(at)[0].split(" of ")[1])
    runs = 1
    while not clearing_bar_texts(at):  # the limits, 5 per full run; then the pairs start
        assert len(replays) <= 5 * runs and clearing_rows_shown(at) is None
        ok(at.run())
        runs += 1
    limit = at.slider(key="limit").value
    trigger, keep = at.number_input(key="clr_trig").value, at.number_input(key="clr_keep").value
    triggers, keeps = clearing_sweep_grid(limit, trigger, keep)
    total = len(triggers) * len(keeps)

    def pairs_replayed() -> int:
        """Pairs with a replay: the limit sweep's run at the current limit is the current pair's."""
        grid = {(t, k) for t in triggers for k in keeps}
        return len(grid & {(s.clear_trigger, s.clear_keep) for s in replays if s.limit == limit})

    pairs_done = pairs_replayed()
    assert len(replays) <= 5 * runs and 1 <= pairs_done < total
    assert clearing_bar_texts(at) == [panel_sweep.clearing_fill_text(pairs_done, total)]
    assert any(c.value == panel_sweep.clearing_partial_caption(pairs_done, total) for c in at.caption)
    assert len(clearing_rows_shown(at)) == pairs_done
    while clearing_bar_texts(at):
        before = len(replays)
        at = ok(follow_up_run(at, monkeypatch))
        assert len(replays) - before <= 10  # one follow-up run: at most 10 replays at 10^4 messages
    assert pairs_replayed() == total and len(replays) == limits_total + total - 1 and at.metric  # the page reran
    conv = cb.conversation(DATA, at.selectbox(key="conv").value)
    base = with_clearing(HistorySettings(limit), True, trigger, keep, at.number_input(key="clr_min").value)
    want = sweep_clearing_costs(conv.messages, base, list(triggers), list(keeps), sweep_pricing())
    table = clearing_rows_shown(at)
    assert list(zip(table["trigger (tokens)"], table["keep"])) == [(r.trigger, r.keep) for r in want]
    assert table["tokens sent"].tolist() == [r.stats.tokens_sent for r in want]
    assert table["clearings"].tolist() == [r.stats.clearings for r in want]
    ok(at.run())
    assert len(replays) == limits_total + total - 1 and not bar_texts(at)  # cached: nothing more runs


def test_with_clearing_at_the_limit_a_new_limit_reuses_every_swept_limit(replays):
    """Clearing on with its default trigger (the limit): a click on a swept limit used to restart
    the sweep from 0 (a new user), because each swept limit kept the page's trigger, which had
    just moved with the limit. at_limit scales the trigger as it scales a target, so the settings
    at a swept limit no longer depend on the page's limit: the new limit's sweep is all cached."""
    at = open_sweep({"clr": "true"})
    for _ in range(12):
        if not bar_texts(at):
            break
        ok(at.run())
    assert not bar_texts(at)
    limits = list(sweep_rows_shown(at)["limit (tokens)"])
    current = at.slider(key="limit").value
    replayed = len(replays)
    at.slider(key="limit").set_value(next(limit for limit in limits if limit != current))
    ok(at.run())
    assert not [t for t in bar_texts(at) if t.startswith(panel_sweep.BAR_LABEL + ":")]  # no limit to fill
    assert [s.limit for s in replays[replayed:]] == [at.slider(key="limit").value] * (len(replays) - replayed)
    assert list(sweep_rows_shown(at)["limit (tokens)"]) == limits  # every limit cached: the same rows
