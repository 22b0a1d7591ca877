"""Part 1: load_history (SPEC §3), the hand cases L1-L10 of CASES.md, and adversarial stores."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from convmem import (
    ConvmemError,
    Message,
    PageLoadError,
    TransientError,
    load_history,
    load_history_with_report,
)
from convmem.loading import (
    FAILURE_ATTEMPTS,
    FAILURE_DEADLINE,
    FAILURE_ERROR,
    STOP_EMPTY_PAGE,
    STOP_END,
    STOP_NO_PROGRESS,
    STOP_PAGE_CAP,
    STOP_REASONS,
    STOP_REPEATED_CURSOR,
    CallRecord,
    LoadReport,
    backoff_bound,
)
from convmem.testing import ScriptedStore, VirtualClock

T = TransientError


def ids(messages):
    return [m.id for m in messages]


def run(script_or_store, **options):
    """Load on a virtual clock; returns (ids, store, report, clock)."""
    store = script_or_store if callable(script_or_store) else ScriptedStore(script_or_store)
    clock = VirtualClock()
    report = LoadReport()
    options.setdefault("random", random.Random(0))
    loaded = load_history(store, sleep=clock.sleep, clock=clock, report=report, **options)
    return ids(loaded), store, report, clock


def no_sleep(seconds):  # pragma: no cover - called only when a test fails
    raise AssertionError(f"slept {seconds} s")


# -- the seed and CASES.md L1-L10 ------------------------------------------------------------------


def test_seed_example_three_calls():
    pages = {None: (["m1", "m2"], "c1"), "c1": (["m3"], "c2"), "c2": ([], None)}
    calls = []

    def fetch_page(cursor):
        calls.append(cursor)
        page, nxt = pages[cursor]
        return [Message(i, "user", 1) for i in page], nxt

    assert ids(load_history(fetch_page)) == ["m1", "m2", "m3"]
    assert calls == [None, "c1", "c2"]


def test_L1_seed():
    got, store, report, clock = run(
        {None: (["m1", "m2"], "c1"), "c1": (["m3"], "c2"), "c2": ([], None)}
    )
    assert got == ["m1", "m2", "m3"]
    assert store.calls == [None, "c1", "c2"]
    # An empty page with a None cursor: rule 1 comes first.
    assert report.stop_reason == STOP_EMPTY_PAGE
    assert clock.sleeps == []


def test_L2_cursor_cycle():
    got, store, report, _ = run(
        {None: (["m1"], "A"), "A": (["m2"], "B"), "B": (["m3"], "A")}
    )
    assert got == ["m1", "m2", "m3"]
    assert store.calls == [None, "A", "B"]
    assert report.stop_reason == STOP_REPEATED_CURSOR


def test_L3_stuck_cursor():
    got, store, report, _ = run({None: (["m1", "m2"], "T"), "T": (["m3"], "T")})
    assert got == ["m1", "m2", "m3"]
    assert store.calls == [None, "T"]
    assert report.stop_reason == STOP_REPEATED_CURSOR


def test_L4_retry_one_call_not_the_walk():
    got, store, report, clock = run(
        {
            None: (["m0", "m1"], "p2"),
            "p2": [T, (["m2", "m3"], "p3")],
            "p3": (["m4", "m5"], None),
        }
    )
    assert got == ["m0", "m1", "m2", "m3", "m4", "m5"]
    assert store.calls == [None, "p2", "p2", "p3"]
    assert store.count(None) == 1
    assert len(clock.sleeps) == 1
    assert report.stop_reason == STOP_END
    assert report.retries == 1 and report.pages == 3 and report.duplicates_skipped == 0


def test_L5_wrap_around_same_cursors():
    got, store, report, _ = run(
        {None: (["m1", "m2"], "c1"), "c1": (["m3", "m4"], "c2"), "c2": (["m1", "m2"], "c1")}
    )
    assert got == ["m1", "m2", "m3", "m4"]
    assert store.calls == [None, "c1", "c2"]
    # "c1" was requested before: rule 3 fires before rule 4 (the page also added nothing).
    assert report.stop_reason == STOP_REPEATED_CURSOR
    assert report.duplicates_skipped == 2


def test_L6_overlapping_pages():
    got, store, report, _ = run(
        {None: (["m1", "m2", "m3"], "3"), "3": (["m3", "m4", "m5"], "6"), "6": (["m6"], None)}
    )
    assert got == ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert got.count("m3") == 1
    assert store.calls == [None, "3", "6"]
    assert report.duplicates_skipped == 1
    assert report.stop_reason == STOP_END


def test_L7_empty_page_with_a_cursor():
    script = {None: (["m1"], "A"), "A": ([], "B"), "B": (["m2"], None)}
    got, store, report, _ = run(script)
    assert got == ["m1"]
    assert store.calls == [None, "A"]
    assert report.stop_reason == STOP_EMPTY_PAGE

    got, store, report, _ = run(script, empty_page_ends=False)
    assert got == ["m1", "m2"]
    assert store.calls == [None, "A", "B"]
    assert report.stop_reason == STOP_END


def test_L8_not_transient_propagates_unretried():
    store = ScriptedStore({None: (["m1"], "A"), "A": ValueError("bad cursor")})
    report = LoadReport()
    with pytest.raises(ValueError, match="bad cursor") as info:
        load_history(store, sleep=no_sleep, report=report)
    assert not isinstance(info.value, PageLoadError)
    assert store.count("A") == 1
    assert store.calls == [None, "A"]
    assert report.delays == ()
    assert report.failure == FAILURE_ERROR
    assert report.error == "ValueError: bad cursor"
    assert [c.outcome for c in report.calls] == ["ok", "error"]


def test_L9_never_recovers():
    store = ScriptedStore({None: (["m1"], "A"), "A": T})
    clock = VirtualClock()
    report = LoadReport()
    with pytest.raises(PageLoadError) as info:
        load_history(store, sleep=clock.sleep, clock=clock, report=report)
    error = info.value
    assert error.cursor == "A"
    assert error.attempts == 5
    assert ids(error.loaded) == ["m1"]
    assert store.calls == [None, "A", "A", "A", "A", "A"]
    assert len(clock.sleeps) == 4
    assert isinstance(error.__cause__, TransientError)
    assert error.report is report
    assert report.failure == FAILURE_ATTEMPTS
    assert report.stop_reason is None
    assert isinstance(error, ConvmemError) and isinstance(error, RuntimeError)
    assert "'A'" in str(error) and "5 attempt" in str(error)


@pytest.mark.parametrize("base_delay, max_delay", [(0.1, 10.0), (0.1, 0.25), (1.0, 1.0)])
def test_L10_jitter_bounds(base_delay, max_delay):
    first_delays = []
    for seed in range(20):
        store = ScriptedStore({None: [T, T, T, (["m1"], None)]})
        clock = VirtualClock()
        got = load_history(
            store,
            sleep=clock.sleep,
            clock=clock,
            random=random.Random(seed),
            base_delay=base_delay,
            max_delay=max_delay,
        )
        assert ids(got) == ["m1"]
        assert len(clock.sleeps) == 3
        for k, delay in enumerate(clock.sleeps):
            assert 0 <= delay <= min(max_delay, base_delay * 2**k)
        first_delays.append(clock.sleeps[0])
    assert len(set(first_delays)) > 1


def test_L10_with_the_global_random_source():
    firsts = []
    for _ in range(20):
        clock = VirtualClock()
        store = ScriptedStore({None: [T, T, T, (["m1"], None)]})
        assert ids(load_history(store, sleep=clock.sleep, clock=clock)) == ["m1"]
        assert [d <= b for d, b in zip(clock.sleeps, [0.1, 0.2, 0.4])] == [True] * 3
        firsts.append(clock.sleeps[0])
    assert len(set(firsts)) > 1


def test_jitter_is_exactly_random_times_the_bound():
    draws = iter([0.5, 0.25, 1.0, 0.0])
    _, _, report, clock = run(
        {None: [T, T, T, T, (["m1"], None)]},
        random=lambda: next(draws),
        base_delay=0.5,
        max_delay=3.0,
    )
    # bounds 0.5, 1.0, 2.0, min(3.0, 4.0) = 3.0
    assert clock.sleeps == [0.25, 0.25, 2.0, 0.0]
    assert list(report.delays) == clock.sleeps


def test_backoff_bound():
    assert [backoff_bound(k, 0.1, 1.0) for k in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert backoff_bound(10_000, 2.0, 7.0) == 7.0
    assert backoff_bound(3, 0, 7.0) == 0.0
    with pytest.raises(ValueError, match="k must be"):
        backoff_bound(-1, 0.1, 1.0)


def test_random_may_be_a_random_instance_or_callable():
    for source in (random.Random(3), random.Random(3).random):
        _, _, report, _ = run({None: [T, (["m1"], None)]}, random=source)
        assert report.delays == (random.Random(3).random() * 0.1,)


def test_random_out_of_range_is_a_value_error():
    with pytest.raises(ValueError, match=r"random must return a number in \[0, 1\], got 2"):
        run({None: [T, (["m1"], None)]}, random=lambda: 2)


# -- the five stop rules and their order -----------------------------------------------------------


def test_stop_reasons_constant_in_check_order():
    assert STOP_REASONS == ("empty_page", "end", "repeated_cursor", "no_progress", "page_cap")


def test_empty_first_page():
    got, store, report, _ = run({None: ([], None)})
    assert got == [] and store.calls == [None]
    assert report.stop_reason == STOP_EMPTY_PAGE


def test_empty_page_with_none_cursor_and_empty_page_ends_false_is_end():
    got, _, report, _ = run({None: (["m1"], "A"), "A": ([], None)}, empty_page_ends=False)
    assert got == ["m1"]
    assert report.stop_reason == STOP_END


def test_empty_page_with_repeated_cursor_and_empty_page_ends_false():
    got, store, report, _ = run({None: (["m1"], "A"), "A": ([], "A")}, empty_page_ends=False)
    assert got == ["m1"] and store.calls == [None, "A"]
    assert report.stop_reason == STOP_REPEATED_CURSOR


def test_endless_empty_pages_are_bounded_by_the_page_cap():
    calls = []

    def fetch_page(cursor):
        calls.append(cursor)
        n = 0 if cursor is None else cursor
        return [], n + 1

    got, _, report, _ = run(fetch_page, empty_page_ends=False, max_pages=7)
    assert got == [] and calls == [None, 1, 2, 3, 4, 5, 6]
    assert report.stop_reason == STOP_PAGE_CAP and report.pages == 7


def test_end():
    got, store, report, _ = run({None: (["m1"], "A"), "A": (["m2"], None)})
    assert got == ["m1", "m2"] and store.calls == [None, "A"]
    assert report.stop_reason == STOP_END


def test_repeated_cursor_beats_no_progress():
    # The page points back to itself AND adds nothing new: rule 3 is checked before rule 4.
    got, store, report, _ = run({None: (["m1"], "A"), "A": (["m1"], "A")})
    assert got == ["m1"] and store.calls == [None, "A"]
    assert report.stop_reason == STOP_REPEATED_CURSOR


def test_repeated_cursor_any_earlier_cursor_not_just_the_last():
    script = {None: (["a"], "A"), "A": (["b"], "B"), "B": (["c"], "C"), "C": (["d"], "A")}
    got, store, report, _ = run(script)
    assert got == ["a", "b", "c", "d"] and store.calls == [None, "A", "B", "C"]
    assert report.stop_reason == STOP_REPEATED_CURSOR


def test_no_progress_on_a_store_that_wraps_with_fresh_cursors():
    got, store, report, _ = run(
        {None: (["m1", "m2"], "c1"), "c1": (["m3"], "c2"), "c2": (["m1", "m2"], "c3")}
    )
    assert got == ["m1", "m2", "m3"] and store.calls == [None, "c1", "c2"]
    assert report.stop_reason == STOP_NO_PROGRESS


def test_no_progress_only_when_the_whole_page_is_old():
    got, _, report, _ = run(
        {None: (["m1", "m2"], "c1"), "c1": (["m2", "m3"], "c2"), "c2": (["m4"], None)}
    )
    assert got == ["m1", "m2", "m3", "m4"] and report.stop_reason == STOP_END


def test_page_cap():
    def fetch_page(cursor):
        n = 0 if cursor is None else cursor
        return [Message(f"m{n}", "user", 1)], n + 1

    got, _, report, _ = run(fetch_page, max_pages=3)
    assert got == ["m0", "m1", "m2"] and report.stop_reason == STOP_PAGE_CAP


def test_end_is_checked_before_the_page_cap():
    got, _, report, _ = run({None: (["m1"], None)}, max_pages=1)
    assert got == ["m1"] and report.stop_reason == STOP_END
    got, _, report, _ = run({None: (["m1"], "A")}, max_pages=1)
    assert got == ["m1"] and report.stop_reason == STOP_PAGE_CAP


def test_duplicates_within_one_page_are_skipped():
    got, _, report, _ = run({None: (["a", "a", "b", "a"], None)})
    assert got == ["a", "b"] and report.duplicates_skipped == 2


def test_first_occurrence_is_kept():
    first = Message("x", "user", 1, content="first")
    second = Message("x", "user", 1, content="second")
    loaded = load_history(ScriptedStore({None: ([first], "A"), "A": ([second], None)}))
    assert [m.content for m in loaded] == ["first"]


def test_cursors_can_be_any_hashable():
    got, store, _, _ = run({None: (["a"], 1), 1: (["b"], ("t", 2)), ("t", 2): (["c"], None)})
    assert got == ["a", "b", "c"] and store.calls == [None, 1, ("t", 2)]


# -- retries ---------------------------------------------------------------------------------------


def test_caller_added_types_are_retried():
    got, store, report, clock = run(
        {None: [TimeoutError("slow"), (["m1"], None)]}, retry_on=(TimeoutError,)
    )
    assert got == ["m1"] and store.calls == [None, None]
    assert len(clock.sleeps) == 1
    assert [c.outcome for c in report.calls] == ["transient", "ok"]
    assert report.calls[0].error == "TimeoutError: slow"


def test_caller_added_types_exhausted_raise_page_load_error_from_them():
    store = ScriptedStore({None: TimeoutError})
    with pytest.raises(PageLoadError) as info:
        load_history(store, retry_on=(TimeoutError,), attempts=2, sleep=lambda s: None)
    assert isinstance(info.value.__cause__, TimeoutError)
    assert info.value.attempts == 2 and info.value.cursor is None and info.value.loaded == []


def test_without_retry_on_other_errors_propagate_at_once():
    store = ScriptedStore({None: (["m1"], "A"), "A": TimeoutError})
    with pytest.raises(TimeoutError):
        load_history(store, sleep=no_sleep)
    assert store.calls == [None, "A"]


@pytest.mark.parametrize("exc", [KeyError("k"), RuntimeError("boom"), ConnectionError("reset")])
def test_non_transient_errors_are_not_retried(exc):
    store = ScriptedStore({None: [exc, (["m1"], None)]})
    with pytest.raises(type(exc)):
        load_history(store, sleep=no_sleep)
    assert store.calls == [None]


def test_transient_subclass_is_retried():
    class Throttled(TransientError):
        pass

    got, store, _, _ = run({None: [Throttled("429"), (["m1"], None)]})
    assert got == ["m1"] and store.calls == [None, None]


@pytest.mark.parametrize("attempts", [1, 2, 3, 7])
def test_attempts_bound(attempts):
    store = ScriptedStore({None: (["m1"], "A"), "A": T})
    clock = VirtualClock()
    with pytest.raises(PageLoadError) as info:
        load_history(store, attempts=attempts, sleep=clock.sleep, clock=clock)
    assert info.value.attempts == attempts
    assert store.count("A") == attempts
    assert len(clock.sleeps) == attempts - 1


def test_recovery_on_the_last_attempt():
    got, store, _, clock = run({None: [T, T, (["m1"], None)]}, attempts=3)
    assert got == ["m1"] and len(store.calls) == 3 and len(clock.sleeps) == 2


def test_retries_are_per_call_not_per_run():
    # Each of three pages fails twice; attempts=3 is enough for every call.
    script = {
        None: [T, T, (["a"], "B")],
        "B": [T, T, (["b"], "C")],
        "C": [T, T, (["c"], None)],
    }
    got, store, report, _ = run(script, attempts=3)
    assert got == ["a", "b", "c"] and len(store.calls) == 9
    assert report.retries == 6 and report.transient_failures == 6 and report.pages == 3


def test_deadline_stops_before_a_sleep_that_would_pass_it():
    # Every delay is exactly 1 s (random 1.0, bounds capped at 1.0).
    options = dict(random=lambda: 1.0, base_delay=1.0, max_delay=1.0, attempts=10)
    store = ScriptedStore({None: T})
    clock = VirtualClock()
    report = LoadReport()
    with pytest.raises(PageLoadError) as info:
        load_history(store, deadline=2.5, sleep=clock.sleep, clock=clock, report=report, **options)
    # t=0 fail, 0+1<=2.5 sleep; t=1 fail, 1+1<=2.5 sleep; t=2 fail, 2+1>2.5 give up.
    assert info.value.attempts == 3 and clock.sleeps == [1.0, 1.0]
    assert report.failure == FAILURE_DEADLINE
    assert "deadline" in str(info.value)
    assert report.elapsed == 2.0


def test_deadline_boundary_a_sleep_ending_exactly_at_it_is_allowed():
    options = dict(random=lambda: 1.0, base_delay=1.0, max_delay=1.0, attempts=10)
    for deadline, expected_attempts in [(2.0, 3), (1.999, 2), (0, 1)]:
        store = ScriptedStore({None: T})
        clock = VirtualClock()
        with pytest.raises(PageLoadError) as info:
            load_history(store, deadline=deadline, sleep=clock.sleep, clock=clock, **options)
        assert info.value.attempts == expected_attempts, deadline


def test_deadline_counts_from_the_start_of_the_run():
    clock = VirtualClock()
    inner = ScriptedStore({None: (["m1"], "A"), "A": T})

    def slow(cursor):
        clock.sleep(5.0)  # each call takes 5 virtual seconds
        return inner(cursor)

    with pytest.raises(PageLoadError) as info:
        load_history(slow, deadline=10.5, base_delay=1.0, max_delay=1.0, random=lambda: 1.0,
                     sleep=clock.sleep, clock=clock)
    # "A" fails at t=10 (after 2 calls of 5 s); 10 + 1 > 10.5: no retry.
    assert info.value.attempts == 1 and ids(info.value.loaded) == ["m1"]


def test_deadline_never_cuts_off_pages_that_succeed():
    clock = VirtualClock()
    inner = ScriptedStore({None: (["a"], "B"), "B": (["b"], "C"), "C": (["c"], None)})

    def slow(cursor):
        clock.sleep(10.0)
        return inner(cursor)

    got = load_history(slow, deadline=1.0, sleep=clock.sleep, clock=clock)
    assert ids(got) == ["a", "b", "c"]


def test_page_load_error_loaded_is_a_copy_in_order_without_duplicates():
    store = ScriptedStore({None: (["a", "b"], "B"), "B": (["b", "c"], "C"), "C": T})
    with pytest.raises(PageLoadError) as info:
        load_history(store, attempts=2, sleep=lambda s: None)
    error = info.value
    assert ids(error.loaded) == ["a", "b", "c"] and error.cursor == "C"
    assert error.report.pages == 2 and error.report.duplicates_skipped == 1
    assert error.report.messages_loaded == 3
    assert [c.outcome for c in error.report.calls] == ["ok", "ok", "transient", "transient"]
    assert error.report.calls[-1].delay_after is None
    assert error.report.calls[-2].delay_after == error.report.delays[0]


def test_page_load_error_lets_the_caller_resume():
    failing = {"on": True}
    base = ScriptedStore({None: (["a"], "B"), "B": (["b"], "C"), "C": (["c"], None)})

    def fetch_page(cursor):
        if cursor == "B" and failing["on"]:
            raise TransientError("down")
        return base(cursor)

    with pytest.raises(PageLoadError) as info:
        load_history(fetch_page, attempts=2, sleep=lambda s: None)
    failing["on"] = False
    resume_at = info.value.cursor
    rest = load_history(lambda c: fetch_page(resume_at if c is None else c))
    assert ids(info.value.loaded) + ids(rest) == ["a", "b", "c"]


# -- the report ------------------------------------------------------------------------------------


def test_report_of_L4_in_full():
    events = []
    clock = VirtualClock()
    store = ScriptedStore(
        {None: (["m0", "m1"], "p2"), "p2": [T, (["m2", "m3"], "p3")], "p3": (["m4", "m5"], None)}
    )
    report = LoadReport()
    load_history(
        store,
        sleep=clock.sleep,
        clock=clock,
        random=lambda: 0.5,
        report=report,
        on_event=lambda record: events.append((record, clock.now)),
    )
    d = 0.05  # 0.5 * min(10, 0.1 * 2**0)
    assert report.calls == (
        CallRecord(0, None, 1, "ok", 2, 2, 0, "p2", None, 0.0, None),
        CallRecord(1, "p2", 1, "transient", 0, 0, 0, None,
                   "TransientError: scripted TransientError at cursor 'p2'", 0.0, d),
        CallRecord(2, "p2", 2, "ok", 2, 2, 0, "p3", None, d, None),
        CallRecord(3, "p3", 1, "ok", 2, 2, 0, None, None, d, None),
    )
    assert [e[0] for e in events] == list(report.calls)
    # The failed call's event arrives before its backoff sleep.
    assert events[1][1] == 0.0 and events[2][1] == d
    assert report.delays == (d,)
    assert (report.pages, report.retries, report.transient_failures) == (3, 1, 1)
    assert (report.duplicates_skipped, report.messages_loaded) == (0, 6)
    assert report.stop_reason == STOP_END and report.failure is None and report.error is None
    assert report.elapsed == d and report.finished
    assert report.summary()["total_delay"] == d
    rows = report.to_rows()
    assert rows[1]["outcome"] == "transient" and rows[1]["delay_after"] == d
    assert "stop_reason='end'" in repr(report)


def test_report_is_read_only():
    _, _, report, _ = run({None: (["a"], None)})
    assert isinstance(report.calls, tuple) and isinstance(report.delays, tuple)
    with pytest.raises(AttributeError):
        report.pages = 9
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.calls[0].outcome = "error"


def test_report_must_be_fresh_and_a_load_report():
    _, _, report, _ = run({None: (["a"], None)})
    with pytest.raises(ValueError, match="fresh LoadReport"):
        load_history(ScriptedStore({None: (["a"], None)}), report=report)
    with pytest.raises(TypeError, match=r"report must be a LoadReport or None, got \{\}"):
        load_history(ScriptedStore({None: (["a"], None)}), report={})


def test_load_history_with_report():
    messages, report = load_history_with_report(
        ScriptedStore({None: (["a"], "B"), "B": (["b"], None)}), max_pages=5
    )
    assert ids(messages) == ["a", "b"] and report.pages == 2 and report.stop_reason == STOP_END
    mine = LoadReport()
    _, same = load_history_with_report(ScriptedStore({None: (["a"], None)}), report=mine)
    assert same is mine


def test_an_on_event_error_propagates_as_is():
    class Boom(Exception):
        pass

    def on_event(record):
        raise Boom(record.index)

    report = LoadReport()
    with pytest.raises(Boom):
        load_history(ScriptedStore({None: [T, (["a"], None)]}), on_event=on_event,
                     sleep=no_sleep, report=report)
    assert report.failure == FAILURE_ERROR and len(report.calls) == 1


# -- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "option, value, error",
    [
        ("max_pages", 0, ValueError),
        ("max_pages", -3, ValueError),
        ("max_pages", 2.0, TypeError),
        ("max_pages", True, TypeError),
        ("attempts", 0, ValueError),
        ("attempts", "5", TypeError),
        ("attempts", None, TypeError),
        ("base_delay", -0.1, ValueError),
        ("base_delay", math.nan, ValueError),
        ("base_delay", "0.1", TypeError),
        ("max_delay", -1, ValueError),
        ("max_delay", math.inf, ValueError),
        ("max_delay", False, TypeError),
        ("deadline", -1.0, ValueError),
        ("deadline", "10", TypeError),
        ("empty_page_ends", "no", TypeError),
        ("empty_page_ends", 0, TypeError),
        ("retry_on", TimeoutError, TypeError),
        ("retry_on", [TimeoutError], TypeError),
        ("retry_on", ("TimeoutError",), TypeError),
        ("retry_on", (KeyboardInterrupt,), TypeError),
        ("sleep", None, TypeError),
        ("clock", 12.5, TypeError),
        ("random", 0.5, TypeError),
        ("on_event", "print", TypeError),
    ],
)
def test_bad_options_name_the_field_and_value(option, value, error):
    store = ScriptedStore({None: (["a"], None)})
    with pytest.raises(error) as info:
        load_history(store, **{option: value})
    text = str(info.value)
    assert option in text
    shown = repr(value[0]) if isinstance(value, tuple) and value else repr(value)
    assert shown in text
    assert store.calls == []  # validated before any call


def test_fetch_page_must_be_callable():
    with pytest.raises(TypeError, match=r"fetch_page must be callable, got \{\}"):
        load_history({})


@pytest.mark.parametrize(
    "returned, what",
    [
        ([Message("a", "user", 1)], "2-tuple"),
        (([Message("a", "user", 1)], None, 3), "2-tuple"),
        (None, "2-tuple"),
        (("ab", None), "not a list of Message"),
        ((Message("a", "user", 1), None), "not a list of Message"),
        ((["a"], None), "item 0 is not a Message"),
        (([Message("a", "user", 1)], ["next"]), "unhashable next cursor"),
    ],
)
def test_malformed_pages_are_type_errors_naming_the_cursor(returned, what):
    calls = []

    def fetch_page(cursor):
        calls.append(cursor)
        if cursor is None:
            return [Message("z", "user", 1)], "C7"
        return returned

    report = LoadReport()
    with pytest.raises(TypeError) as info:
        # Even a caller retrying TypeError does not retry a malformed page: it is a store bug.
        load_history(fetch_page, retry_on=(TypeError,), sleep=no_sleep, report=report)
    assert "fetch_page('C7')" in str(info.value) and what in str(info.value)
    assert calls == [None, "C7"]
    assert report.failure == FAILURE_ERROR and report.calls[-1].outcome == "error"


def test_a_tuple_page_is_accepted():
    got, _, _, _ = run(lambda c: ((Message("a", "user", 1),), None))
    assert got == ["a"]


# -- adversarial stores (hypothesis) against a brute-force reference -------------------------------

CURSORS = ["a", "b", "c", "d", "e"]
IDS = [f"m{i}" for i in range(8)]

page_response = st.tuples(
    st.lists(st.sampled_from(IDS), max_size=4),
    # "z" is never scripted: the store raises ValueError for it (a store bug, not transient).
    st.sampled_from([None, *CURSORS, *CURSORS, "z"]),
)
# Mostly pages, some transient failures ("T"), a few other errors ("V").
response = st.integers(0, 9).flatmap(
    lambda n: st.just("V") if n == 0 else st.just("T") if n <= 3 else page_response
)
scripts = st.fixed_dictionaries(
    {c: st.lists(response, min_size=1, max_size=4) for c in [None, *CURSORS]}
)


def build(script):
    """The hypothesis script as a ScriptedStore script; unscripted cursors raise KeyError."""
    out = {}
    for cursor, responses in script.items():
        out[cursor] = [
            T if r == "T" else ValueError if r == "V" else (list(r[0]), r[1]) for r in responses
        ]
    return out


def reference(script, max_pages, attempts, empty_page_ends):
    """A plain loop with no tenacity: (kind, ids, calls, detail)."""
    served = {c: 0 for c in script}
    calls, loaded, seen, requested = [], [], set(), set()
    cursor, pages = None, 0
    while True:
        requested.add(cursor)
        for attempt in range(1, attempts + 1):
            calls.append(cursor)
            if cursor not in script:
                return "ValueError", loaded, calls, cursor
            responses = script[cursor]
            r = responses[min(served[cursor], len(responses) - 1)]
            served[cursor] += 1
            if r == "V":
                return "ValueError", loaded, calls, cursor
            if r != "T":
                break
        else:
            return "PageLoadError", loaded, calls, cursor
        page, nxt = r
        new = 0
        for i in page:
            if i not in seen:
                seen.add(i)
                loaded.append(i)
                new += 1
        pages += 1
        if not page and empty_page_ends:
            return "ok", loaded, calls, STOP_EMPTY_PAGE
        if nxt is None:
            return "ok", loaded, calls, STOP_END
        if nxt in requested:
            return "ok", loaded, calls, STOP_REPEATED_CURSOR
        if page and new == 0:
            return "ok", loaded, calls, STOP_NO_PROGRESS
        if pages >= max_pages:
            return "ok", loaded, calls, STOP_PAGE_CAP
        cursor = nxt


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=scripts,
    max_pages=st.integers(1, 8),
    attempts=st.integers(1, 4),
    empty_page_ends=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_adversarial_stores_match_the_reference(script, max_pages, attempts, empty_page_ends, seed):
    store = ScriptedStore(build(script))
    clock = VirtualClock()
    report = LoadReport()
    kind, want_ids, want_calls, detail = reference(script, max_pages, attempts, empty_page_ends)
    event(detail if kind == "ok" else kind)
    try:
        got = ids(
            load_history(
                store,
                max_pages=max_pages,
                attempts=attempts,
                empty_page_ends=empty_page_ends,
                sleep=clock.sleep,
                clock=clock,
                random=random.Random(seed),
                report=report,
            )
        )
        outcome = "ok"
    except PageLoadError as error:
        outcome, got = "PageLoadError", ids(error.loaded)
        assert error.cursor == detail and error.attempts == attempts
        assert isinstance(error.__cause__, TransientError)
    except ValueError:
        outcome, got = "ValueError", None
    assert outcome == kind
    assert store.calls == want_calls
    assert len(store.calls) <= max_pages * attempts
    if got is not None:
        assert got == want_ids
        assert len(got) == len(set(got))
    if kind == "ok":
        assert report.stop_reason == detail
        assert report.pages <= max_pages
    assert len(clock.sleeps) == report.retries == len(report.calls) - report.pages - (
        0 if kind == "ok" else 1
    )
    assert [c.cursor for c in report.calls] == store.calls


@settings(max_examples=200, deadline=None)
@given(
    pages=st.lists(
        st.tuples(st.lists(st.sampled_from(IDS), max_size=4), st.integers(0, 6)), max_size=12
    ),
    max_pages=st.integers(1, 30),
)
def test_walks_always_end_and_never_repeat_an_id(pages, max_pages):
    """Cursors are indexes into `pages` (an index past the end means None); cycles happen often."""

    def fetch_page(cursor):
        if not pages:
            return [], None
        page_ids, nxt = pages[cursor or 0]
        return [Message(i, "user", 1) for i in page_ids], (nxt if nxt < len(pages) else None)

    calls = []
    loaded, report = load_history_with_report(
        lambda c: (calls.append(c), fetch_page(c))[1], max_pages=max_pages
    )
    got = ids(loaded)
    assert len(got) == len(set(got))
    assert len(calls) <= max_pages and len(calls) == report.pages
    # first-seen order over the pages actually served
    expected, seen = [], set()
    for c in calls:
        for m in fetch_page(c)[0]:
            if m.id not in seen:
                seen.add(m.id)
                expected.append(m.id)
    assert got == expected
    assert report.stop_reason in STOP_REASONS


def test_an_on_event_error_on_a_page_still_closes_the_report():
    def on_event(record):
        if record.outcome == "ok":
            raise RuntimeError("dashboard bug")

    report = LoadReport()
    with pytest.raises(RuntimeError, match="dashboard bug"):
        load_history(ScriptedStore({None: (["a"], None)}), on_event=on_event, report=report)
    assert report.finished and report.failure == FAILURE_ERROR
    assert report.error == "RuntimeError: dashboard bug" and report.stop_reason is None


# -- foreign objects in error messages are described in bounded size (issue 9) ----------------------


def test_a_huge_list_instead_of_a_page_gets_a_short_type_error():
    huge = [Message(f"m{i}", "user", 1) for i in range(10**6)]
    report = LoadReport()
    with pytest.raises(TypeError) as info:
        load_history(lambda cursor: huge, report=report, sleep=no_sleep)
    text = str(info.value)
    assert text.startswith("fetch_page(None) must return a 2-tuple (list of Message, next cursor")
    assert len(text) <= 500, len(text)
    assert "list of 1,000,000 items" in text and "Message(" in text
    assert report.failure == FAILURE_ERROR and len(report.error) <= 500
    assert [c.outcome for c in report.calls] == ["error"]


def test_a_huge_foreign_item_on_a_page_and_a_huge_cursor_are_bounded():
    big = "x" * 10**6
    with pytest.raises(TypeError) as info:
        run(lambda cursor: ([Message("a", "user", 1)], big) if cursor is None else ([object()], None))
    text = str(info.value)
    assert len(text) <= 500 and "item 0 is not a Message" in text
    assert "1,000,000 characters" in text or "..." in text


def test_long_error_text_is_clipped_in_the_report_and_the_page_load_error():
    with pytest.raises(PageLoadError) as info:
        run({None: T("x" * 10**6)}, attempts=3)
    report = info.value.report
    assert all(len(c.error) <= 300 for c in report.calls)
    assert report.calls[0].error.startswith("TransientError: xxx")
    assert report.calls[0].error.endswith("(1,000,016 characters)")
    assert len(str(info.value)) < 1000


class _Unprintable(TransientError):
    def __str__(self):
        raise AttributeError("no message")


def test_a_retryable_error_whose_str_raises_is_retried_and_reported():
    got, store, report, _ = run({None: [_Unprintable(), _Unprintable(), (["a"], None)]})
    assert got == ["a"] and store.calls == [None, None, None]
    assert report.retries == 2 and report.transient_failures == 2
    assert [c.error for c in report.calls] == [
        "_Unprintable: <str() of the error raised>",
        "_Unprintable: <str() of the error raised>",
        None,
    ]


def test_an_unprintable_error_that_keeps_failing_raises_page_load_error():
    with pytest.raises(PageLoadError) as info:
        run({None: _Unprintable()}, attempts=2)
    assert "_Unprintable: <str() of the error raised>" in str(info.value)
    assert isinstance(info.value.__cause__, _Unprintable)
    assert info.value.report.error.startswith("PageLoadError: fetch_page(None) kept failing")


def test_a_retryable_first_failure_enters_the_retry_path_with_the_same_records():
    """The first attempt runs outside tenacity; a failure then is handed over unchanged."""
    events = []
    got, _, report, clock = run(
        {None: [T("a"), (["m1"], "c")], "c": [T("b"), T("c"), (["m2"], None)]},
        random=lambda: 0.5,
        on_event=events.append,
    )
    assert got == ["m1", "m2"]
    assert [(c.cursor, c.attempt, c.outcome, c.delay_after) for c in report.calls] == [
        (None, 1, "transient", 0.05),
        (None, 2, "ok", None),
        ("c", 1, "transient", 0.05),
        ("c", 2, "transient", 0.1),
        ("c", 3, "ok", None),
    ]
    assert events == list(report.calls) and report.delays == (0.05, 0.05, 0.1)
    assert clock.now == pytest.approx(0.2)


class _TaggedMessage(Message):
    __slots__ = ()


def test_a_page_of_message_subclasses_is_accepted_and_deduplicated():
    a, b = Message("a", "user", 1), _TaggedMessage("b", "user", 2)
    got, _, report, _ = run(lambda c: ([a, b, b, _TaggedMessage("a", "user", 9)], None))
    assert got == ["a", "b"] and report.duplicates_skipped == 2 and report.messages_loaded == 2


def test_a_bad_item_late_on_a_page_leaves_nothing_of_that_page_loaded():
    pages = {None: ([Message("a", "user", 1)], "p"), "p": ([Message("b", "user", 1), 7], None)}
    report = LoadReport()
    with pytest.raises(TypeError, match=r"fetch_page\('p'\) returned a page whose item 1 is not a Message: 7"):
        load_history(lambda c: pages[c], report=report)
    assert report.messages_loaded == 1 and report.pages == 1
    assert [c.outcome for c in report.calls] == ["ok", "error"]
