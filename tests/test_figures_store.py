"""Flaky store page: the pure figure and table builders (plain pytest, no streamlit)."""

from __future__ import annotations

import random

import plotly.graph_objects as go
import pytest

from convmem import LoadReport, Message, PageLoadError, load_history
from convmem.testing import FaultConfig, FlakyStore, PagedStore, VirtualClock
from convmem_dashboard.colors import OUTCOME_COLORS
from convmem_dashboard.figures_store import (
    WEBGL_THRESHOLD,
    call_timeline,
    escape,
    timeline_extent,
    x_range,
)
from convmem_dashboard.table_layout import ROW_PX, WRAP_ROW_PX, fit_height
from convmem_dashboard.tables_store import (
    END_CURSOR,
    FIRST_PAGE,
    LoadSettings,
    call_table,
    call_table_view,
    error_table,
    error_table_view,
    fault_outcome_view,
    explain_stop,
    failure_message,
    fault_outcome_table,
    run_simulation,
    step_state,
    truth_table,
)

MESSAGES = [Message(f"m{i}", ("user", "assistant")[i % 2], 10 + i) for i in range(40)]


def direct_report(messages, page_size, faults, settings=LoadSettings()):
    """The same run, straight from convmem (what the page must agree with)."""
    clock = VirtualClock()
    store = FlakyStore(PagedStore(messages, page_size), faults, clock=clock)
    report = LoadReport()
    try:
        load_history(
            store, attempts=settings.attempts, base_delay=settings.base_delay,
            max_delay=settings.max_delay, deadline=settings.deadline,
            empty_page_ends=settings.empty_page_ends, sleep=clock.sleep, clock=clock,
            random=store.rng_for_jitter(), report=report,
        )
    except PageLoadError:
        pass
    return report, store


def markers(fig: go.Figure) -> dict[str, int]:
    return {t.meta: len(t.x) for t in fig.data if t.mode == "markers"}


# -- the simulation --------------------------------------------------------------------------------


def test_run_matches_a_direct_load_and_loses_nothing():
    faults = FaultConfig(failure_rate=0.4, burst_length=2, overlap=2, seed=3)
    run = run_simulation(MESSAGES, 6, faults, LoadSettings(attempts=8))
    report, store = direct_report(MESSAGES, 6, faults, LoadSettings(attempts=8))
    assert run.ok and run.error is None
    assert run.summary == report.summary()
    assert len(run.calls) == len(report.calls) == len(store.calls)
    assert [c["outcome"] for c in run.calls] == [c.outcome for c in report.calls]
    assert [c["fault"] for c in run.calls] == [c.fault or "" for c in store.calls]
    assert run.loaded_ids == tuple(m.id for m in MESSAGES)
    assert run.summary["retries"] > 0 and run.summary["duplicates_skipped"] > 0
    assert explain_stop(run).endswith(
        "the walk reached the end of the conversation."
    ) and "Call #" in explain_stop(run)


def test_retries_share_a_request_row_and_loaded_after_accumulates():
    run = run_simulation(MESSAGES, 5, FaultConfig(failure_rate=0.5, seed=1), LoadSettings(attempts=10))
    for prev, row in zip(run.calls, run.calls[1:]):
        if row["attempt"] > 1:
            assert row["request"] == prev["request"] and row["cursor"] == prev["cursor"]
        else:
            assert row["request"] == prev["request"] + 1
    assert run.calls[-1]["loaded_after"] == len(MESSAGES)


def test_empty_page_loses_the_rest_and_says_why():
    run = run_simulation(MESSAGES, 5, FaultConfig(empty_page=2), LoadSettings())
    assert run.stop_reason == "empty_page"
    assert run.loaded_ids == tuple(f"m{i}" for i in range(10))
    assert run.lost_ids == tuple(f"m{i}" for i in range(10, 40))
    assert "lost 30 of 40" in run.explanation and "empty_page" in run.explanation
    lost = truth_table(run, only_problems=True)
    assert list(lost["id"]) == list(run.lost_ids)
    assert set(lost["status"]) == {"lost"}
    assert all("empty_page" in why for why in lost["why"])
    # Following the empty page instead loses nothing.
    run2 = run_simulation(MESSAGES, 5, FaultConfig(empty_page=2), LoadSettings(empty_page_ends=False))
    assert run2.ok and run2.stop_reason == "end"


def test_repeated_cursor_and_wrap_around_stop_reasons():
    stuck = run_simulation(MESSAGES, 5, FaultConfig(repeated_cursor=3), LoadSettings())
    assert stuck.stop_reason == "repeated_cursor" and len(stuck.lost_ids) == 20
    assert "next cursor" in explain_stop(stuck)
    wrap = run_simulation(MESSAGES, 5, FaultConfig(wrap_around=True), LoadSettings())
    assert wrap.stop_reason == "no_progress" and wrap.ok
    cycle = run_simulation(MESSAGES, 5, FaultConfig(cursor_cycle=2), LoadSettings())
    assert cycle.stop_reason == "repeated_cursor" and cycle.ok


def test_page_load_error_is_data_not_an_exception():
    run = run_simulation(MESSAGES, 5, FaultConfig(failure_rate=1.0), LoadSettings(attempts=3))
    assert run.error is not None and run.failure == "attempts_exhausted"
    # The first page's cursor (None in convmem) is shown as "(first page)", never as Python's None.
    assert run.error["cursor"] == FIRST_PAGE and run.error["attempts"] == 3 and run.error["loaded"] == 0
    assert run.stop_reason is None and len(run.lost_ids) == 40
    text = failure_message(run)
    assert text.startswith("The first page kept failing") and "resume from the first page" in text
    assert "3 attempts" in text and "0 of 40" in text
    assert explain_stop(run) == text
    assert [c["cursor"] for c in run.calls] == [FIRST_PAGE] * 3
    assert set(call_table(run)["cursor"]) == {FIRST_PAGE}
    assert truth_table(run)["why"][0] == (
        "not reached yet: the load raised at the first page; a resume from there loads it"
    )
    assert set(truth_table(run)["status"]) == {"not loaded yet"}  # never "lost" (issue 10.4)
    assert step_state(run, 0)["next"] == "The loader will request the first page."


def test_cursors_shown_without_python_none():
    run = run_simulation(MESSAGES, 10, FaultConfig(failure_rate=0.5, seed=2), LoadSettings(attempts=9))
    table = call_table(run)
    assert "None" not in set(table["cursor"]) | set(table["next cursor"])
    assert table["cursor"].iloc[0] == FIRST_PAGE
    assert table["next cursor"].iloc[-1] == END_CURSOR  # the last page has no next cursor
    assert explain_stop(run).startswith(f"Call #{len(run.calls)} (cursor ")  # numbered from 1
    first_only = run_simulation(MESSAGES[:3], 10, FaultConfig(), LoadSettings())
    assert explain_stop(first_only).startswith("Call #1 (the first page): ")


def test_deadline_failure_is_worded_as_a_deadline():
    run = run_simulation(
        MESSAGES, 5, FaultConfig(failure_rate=1.0, seed=2),
        LoadSettings(attempts=10, base_delay=1.0, max_delay=1.0, deadline=0.5),
    )
    assert run.failure == "deadline"
    assert "deadline" in failure_message(run)


def test_bad_settings_raise_a_named_error():
    with pytest.raises(ValueError, match="overlap"):
        run_simulation(MESSAGES, 3, FaultConfig(overlap=3), LoadSettings())


def test_fault_outcome_table_counts_every_call_per_fault():
    faults = FaultConfig(failure_rate=0.3, overlap=1, seed=5, wrap_around=True)
    run = run_simulation(MESSAGES, 5, faults, LoadSettings(attempts=8))
    table = fault_outcome_table(run).set_index("fault")
    assert {"transient", "overlap", "wrap_around", "(no fault)"} <= set(table.index)
    assert table.loc["transient", "transient"] == run.summary["transient_failures"]
    assert table.loc["transient", "ok"] == 0
    # A call that shows no fault is counted once; one with two faults in both rows.
    n_fault_mentions = sum(len(c["fault"].split("+")) if c["fault"] else 1 for c in run.calls)
    assert int(table["calls"].sum()) == n_fault_mentions
    assert (table["calls"] == table["ok"] + table["transient"] + table["error"]).all()
    assert "de-duplicated" in table.loc["overlap", "effect on a load"]


def test_configured_fault_that_never_fires_has_a_zero_row():
    run = run_simulation(MESSAGES, 5, FaultConfig(repeated_cursor=50), LoadSettings())
    table = fault_outcome_table(run).set_index("fault")
    assert table.loc["repeated_cursor", "calls"] == 0


def test_step_state_replays_the_counters():
    run = run_simulation(MESSAGES, 5, FaultConfig(failure_rate=0.4, overlap=1, seed=9), LoadSettings(attempts=9))
    full = step_state(run, len(run.calls))
    assert full["done"]
    assert full["retries"] == run.summary["retries"]
    assert full["pages"] == run.summary["pages"]
    assert full["duplicates"] == run.summary["duplicates_skipped"]
    assert full["loaded"] == run.summary["messages_loaded"]
    assert full["at"] == pytest.approx(run.summary["elapsed"])
    first = step_state(run, 1)
    assert first["calls"] == 1 and not first["done"]
    assert "next request" in first["next"] or "retry" in first["next"]
    assert step_state(run, 0)["last"] is None
    assert step_state(run, 10**6)["calls"] == len(run.calls)


def test_call_table_has_one_row_per_call():
    run = run_simulation(MESSAGES, 5, FaultConfig(failure_rate=0.3, seed=4), LoadSettings())
    assert len(call_table(run)) == len(run.calls)
    assert len(call_table(run, 3)) == 3
    assert "at (s)" in call_table(run).columns


# -- the timeline figure ---------------------------------------------------------------------------


def test_timeline_marker_counts_match_the_reports_calls():
    faults = FaultConfig(failure_rate=0.5, burst_length=2, seed=11)
    run = run_simulation(MESSAGES, 4, faults, LoadSettings(attempts=6))
    report, _ = direct_report(MESSAGES, 4, faults, LoadSettings(attempts=6))
    fig = call_timeline(run.calls)
    counts = markers(fig)
    assert sum(counts.values()) == len(report.calls)
    assert counts["ok"] == report.pages
    assert counts["transient"] == report.transient_failures
    # One backoff segment (x0, x1, None) per retry, as long as the delay.
    backoff = next(t for t in fig.data if t.meta == "backoff")
    assert len(backoff.x) == 3 * report.retries
    widths = [backoff.x[i + 1] - backoff.x[i] for i in range(0, len(backoff.x), 3)]
    assert widths == pytest.approx(list(report.delays))


def test_timeline_outcome_colours_and_axes():
    run = run_simulation(MESSAGES, 5, FaultConfig(failure_rate=0.5, seed=2), LoadSettings(attempts=9))
    fig = call_timeline(run.calls)
    assert {t.meta for t in fig.data} == {"ok", "transient", "backoff"}
    for trace in fig.data:
        if trace.mode == "markers":
            assert trace.marker.color == OUTCOME_COLORS[trace.meta]
        else:
            assert trace.line.color == OUTCOME_COLORS["backoff"]
    assert "(s)" in fig.layout.xaxis.title.text
    assert "request" in fig.layout.yaxis.title.text
    # First request at the top: a reversed range with one tick per request.
    n = run.calls[-1]["request"]
    assert tuple(fig.layout.yaxis.range) == (n + 0.5, 0.5) and fig.layout.yaxis.dtick == 1


def test_timeline_without_failures_has_no_backoff_trace():
    run = run_simulation(MESSAGES, 10, FaultConfig(), LoadSettings())
    fig = call_timeline(run.calls)
    assert [t.meta for t in fig.data] == ["ok"]
    assert list(fig.data[0].y) == [1, 2, 3, 4]


def test_timeline_hover_escapes_text_and_names_the_fault():
    row = {
        "index": 0, "request": 1, "cursor": "<script>", "attempt": 1, "outcome": "transient",
        "fault": "transient", "error": "TransientError: <b>boom</b>", "started_at": 0.0,
        "delay_after": 0.5, "page_size": 0, "new_messages": 0, "duplicates": 0,
        "next_cursor": "", "loaded_after": 0,
    }
    fig = call_timeline([row])
    hover = fig.data[0].hovertext[0]
    assert "<script>" not in hover and "&lt;script&gt;" in hover
    assert "&lt;b&gt;boom" in hover
    assert "injected fault: transient" in hover
    assert escape("a<b") == "a&lt;b"


def test_timeline_uses_webgl_for_many_calls():
    rng = random.Random(0)
    rows = [
        {
            "index": i, "request": i + 1, "cursor": f"p{i}", "attempt": 1,
            "outcome": "ok" if rng.random() < 0.8 else "transient", "fault": "", "error": "",
            "started_at": float(i), "delay_after": None, "page_size": 1, "new_messages": 1,
            "duplicates": 0, "next_cursor": f"p{i + 1}", "loaded_after": i,
        }
        for i in range(WEBGL_THRESHOLD + 1)
    ]
    fig = call_timeline(rows)
    assert fig.layout.yaxis.autorange == "reversed"
    assert all(isinstance(t, go.Scattergl) for t in fig.data)
    assert sum(len(t.x) for t in fig.data) == len(rows)


def test_empty_timeline_is_a_valid_figure():
    fig = call_timeline([])
    assert len(fig.data) == 0 and "(s)" in fig.layout.xaxis.title.text


def test_a_prefix_drawn_in_the_whole_runs_frame():
    run = run_simulation(MESSAGES, 5, FaultConfig(failure_rate=0.5, seed=2), LoadSettings(attempts=9))
    end, rows = timeline_extent(run.calls)
    assert end == pytest.approx(run.summary["elapsed"])
    assert rows == run.calls[-1]["request"]
    fig = call_timeline(run.calls[:2], extent=(end, rows))
    assert sum(len(t.x) for t in fig.data if t.mode == "markers") == 2
    assert tuple(fig.layout.yaxis.range) == (rows + 0.5, 0.5)
    assert fig.layout.xaxis.range[0] < 0 < end < fig.layout.xaxis.range[1]


def test_timeline_pads_the_time_axis_so_markers_at_zero_are_whole():
    run = run_simulation(MESSAGES, 5, FaultConfig(failure_rate=0.5, seed=2), LoadSettings(attempts=9))
    end, _rows = timeline_extent(run.calls)
    for fig in (call_timeline(run.calls), call_timeline(run.calls[:2], extent=(end, _rows))):
        lo, hi = fig.layout.xaxis.range
        assert lo == pytest.approx(-0.02 * end) and hi == pytest.approx(1.02 * end)
    assert min(c["started_at"] for c in run.calls) == 0.0
    # No failure: every call starts at 0; the axis still has room on both sides of 0.
    flat = call_timeline(run_simulation(MESSAGES, 10, FaultConfig(), LoadSettings()).calls)
    assert tuple(flat.layout.xaxis.range) == (-0.005, 0.005)
    assert x_range(2.0) == pytest.approx([-0.04, 2.04])


# -- how the tables are shown ----------------------------------------------------------------------


def test_call_log_is_as_tall_as_its_rows_and_errors_get_their_own_table():
    run = run_simulation(MESSAGES, 5, FaultConfig(failure_rate=1.0), LoadSettings(attempts=5))
    view = call_table_view(len(call_table(run)))
    assert view["height"] == fit_height(5) == ROW_PX * 6 + 3  # header + 5 rows, no empty rows
    assert "error" not in view["column_order"]
    assert set(view["column_order"]) == set(call_table(run).columns) - {"error"}
    many = call_table_view(500)
    assert many["height"] == fit_height(12, max_rows=12)  # a long log scrolls past 12 rows
    errors = error_table(run)
    assert list(errors.columns) == ["call #", "cursor", "attempt", "fault", "error"]
    assert list(errors["call #"]) == [1, 2, 3, 4, 5] and set(errors["cursor"]) == {FIRST_PAGE}
    assert list(call_table(run)["call #"]) == list(range(1, len(run.calls) + 1))  # as "Calls shown"
    assert all(e.startswith("TransientError: ") for e in errors["error"])
    assert error_table_view(len(errors))["column_config"]["error"]["width"] == "large"
    assert error_table(run_simulation(MESSAGES, 5, FaultConfig(), LoadSettings())).empty


def test_fault_table_wraps_the_effect_text():
    run = run_simulation(MESSAGES, 5, FaultConfig(failure_rate=0.3, empty_page=3), LoadSettings())
    table = fault_outcome_table(run)
    view = fault_outcome_view(len(table))
    assert view["row_height"] == WRAP_ROW_PX > 64  # Streamlit wraps text only in rows over 4rem
    assert view["column_config"]["effect on a load"]["width"] == "large"
    assert set(view["column_config"]) <= set(table.columns)
    assert view["height"] == fit_height(len(table), row_height=WRAP_ROW_PX)


def test_call_log_shows_a_dash_not_none_where_there_was_no_backoff():
    view = call_table_view(3)
    assert view["placeholder"] == "–"
    assert view["column_config"]["cursor"]["width"] >= 95  # "(first page)" is not cut


def test_coinciding_retries_get_a_count_label():
    """Issue 10.4: two retries 0.2 ms apart on one request draw as one marker; a "×2" label
    keeps them countable. Calls far apart or on other requests get no label."""
    base = {"cursor": "p5", "fault": "", "error": "", "page_size": 0, "new_messages": 0,
            "duplicates": 0, "next_cursor": ""}
    calls = [
        {**base, "index": 0, "request": 1, "attempt": 1, "outcome": "ok", "started_at": 0.0,
         "delay_after": None, "page_size": 5, "new_messages": 5},
        {**base, "index": 1, "request": 2, "attempt": 1, "outcome": "transient",
         "started_at": 0.0, "delay_after": 0.0002},
        {**base, "index": 2, "request": 2, "attempt": 2, "outcome": "transient",
         "started_at": 0.0002, "delay_after": 0.5},
        {**base, "index": 3, "request": 2, "attempt": 3, "outcome": "ok", "started_at": 0.5002,
         "delay_after": None},
    ]
    fig = call_timeline(calls)
    labels = [t for t in fig.data if t.meta == "coinciding"]
    assert len(labels) == 1
    assert list(labels[0].text) == ["×2"]
    assert (labels[0].x[0], labels[0].y[0]) == (0.0, 2)
    # request 1's call at t = 0 is on another row: not counted with request 2's
    assert sum(len(t.x) for t in fig.data if t.mode == "markers") == 4
    spread = [{**c, "started_at": c["index"] * 1.0} for c in calls]
    assert not [t for t in call_timeline(spread).data if t.meta == "coinciding"]
