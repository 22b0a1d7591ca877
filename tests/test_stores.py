"""The test doubles of convmem.testing: VirtualClock, PagedStore, ScriptedStore, FlakyStore."""

from __future__ import annotations

import dataclasses
import math
from itertools import groupby

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convmem import Message, PageLoadError, TransientError, load_history
from convmem.loading import (
    STOP_EMPTY_PAGE,
    STOP_END,
    STOP_NO_PROGRESS,
    STOP_REPEATED_CURSOR,
    LoadReport,
)
from convmem.testing import (
    FAULT_EFFECTS,
    FAULT_NAMES,
    FaultConfig,
    FlakyCall,
    FlakyStore,
    PagedStore,
    ScriptedStore,
    TruthDiff,
    VirtualClock,
    compare_to_truth,
)


def msgs(n, prefix="m"):
    return [Message(f"{prefix}{i}", "user", 1) for i in range(n)]


def ids(messages):
    return [m.id for m in messages]


def load(store, clock=None, **options):
    clock = clock or VirtualClock()
    report = LoadReport()
    loaded = load_history(store, sleep=clock.sleep, clock=clock, report=report, **options)
    return ids(loaded), report


# -- VirtualClock ----------------------------------------------------------------------------------


def test_virtual_clock():
    clock = VirtualClock(start=10)
    assert clock() == clock.monotonic() == clock.now == 10.0
    clock.sleep(0.5)
    clock.sleep(0)
    clock.sleep(2)
    assert clock() == 12.5 and clock.sleeps == [0.5, 0.0, 2.0] and clock.slept == 2.5
    assert "now=12.5" in repr(clock)


@pytest.mark.parametrize(
    "seconds, error", [(-0.1, ValueError), (math.nan, ValueError), (math.inf, ValueError),
                       ("1", TypeError), (None, TypeError), (True, TypeError)]
)
def test_virtual_clock_rejects_bad_sleeps(seconds, error):
    clock = VirtualClock()
    with pytest.raises(error, match=r"seconds .*" + repr(seconds).replace("(", r"\(")):
        clock.sleep(seconds)
    assert clock.sleeps == [] and clock.now == 0.0


def test_virtual_clock_rejects_bad_start():
    with pytest.raises(TypeError, match="start"):
        VirtualClock("0")
    with pytest.raises(ValueError, match="start"):
        VirtualClock(math.inf)


def test_a_load_on_the_virtual_clock_takes_no_real_time_and_matches_the_report():
    clock = VirtualClock()
    store = ScriptedStore({None: [TransientError] * 4 + [(["a"], None)]})
    report = LoadReport()
    load_history(store, sleep=clock.sleep, clock=clock, report=report, base_delay=60.0,
                 max_delay=3600.0)
    assert list(report.delays) == clock.sleeps and len(clock.sleeps) == 4
    assert report.elapsed == clock.now == pytest.approx(sum(clock.sleeps))
    assert [c.started_at for c in report.calls] == pytest.approx(
        [0.0] + [sum(clock.sleeps[:i]) for i in range(1, 5)]
    )


# -- PagedStore ------------------------------------------------------------------------------------


def test_paged_store_pages_and_cursors():
    store = PagedStore(msgs(5), 2)
    assert store.page_count == 3
    page, nxt = store.fetch_page(None)
    assert ids(page) == ["m0", "m1"] and nxt == "p2"
    page, nxt = store("p2")
    assert ids(page) == ["m2", "m3"] and nxt == "p4"
    page, nxt = store("p4")
    assert ids(page) == ["m4"] and nxt is None
    assert store.calls == [None, "p2", "p4"]
    assert ids(store.truth) == ["m0", "m1", "m2", "m3", "m4"]


def test_paged_store_exact_multiple_and_empty():
    store = PagedStore(msgs(4), 2)
    assert store("p2") == (msgs(4)[2:], None)
    empty = PagedStore([], 3)
    assert empty(None) == ([], None) and empty.page_count == 1
    got, report = load(PagedStore([], 3))
    assert got == [] and report.stop_reason == STOP_EMPTY_PAGE


@pytest.mark.parametrize("cursor", ["p1", "p0", "p6", "p8", "x", "p02", "p-2", "", 2, ("p", 2)])
def test_paged_store_unknown_cursor_names_it(cursor):
    store = PagedStore(msgs(6), 2)
    with pytest.raises(ValueError, match="unknown cursor " + repr(cursor).replace("(", r"\(")
                       .replace(")", r"\)")):
        store(cursor)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 9, 10])
@pytest.mark.parametrize("page_size", [1, 2, 3, 10, 11])
def test_load_history_over_paged_store_is_the_truth(n, page_size):
    store = PagedStore(msgs(n), page_size)
    got, report = load(store)
    assert got == ids(store.truth)
    assert len(store.calls) == store.page_count
    assert report.stop_reason == (STOP_EMPTY_PAGE if n == 0 else STOP_END)


@pytest.mark.parametrize(
    "messages, page_size, error, text",
    [
        (msgs(3), 0, ValueError, "page_size must be >= 1, got 0"),
        (msgs(3), 2.0, TypeError, "page_size must be an int, got 2.0"),
        (msgs(3), True, TypeError, "page_size must be an int, got True"),
        ("m1", 2, TypeError, "messages must be a list of Message, got 'm1'"),
        (["m1"], 2, TypeError, "messages[0] must be a Message, got 'm1'"),
        (msgs(2) + msgs(1), 2, ValueError, "messages[2] repeats the id 'm0'"),
    ],
)
def test_paged_store_validates(messages, page_size, error, text):
    with pytest.raises(error) as info:
        PagedStore(messages, page_size)
    assert text in str(info.value)


# -- ScriptedStore ---------------------------------------------------------------------------------


def test_scripted_store_responses_in_order_and_the_last_repeats():
    store = ScriptedStore({None: [(["a"], "X"), (["b"], "Y")], "X": TransientError("down")})
    assert ids(store(None)[0]) == ["a"]
    assert store(None) == ([Message("b", "user", 1)], "Y")
    assert store(None) == ([Message("b", "user", 1)], "Y")
    for _ in range(3):
        with pytest.raises(TransientError, match="down"):
            store("X")
    assert store.calls == [None, None, None, "X", "X", "X"]
    assert store.count(None) == 3 and store.count("X") == 3 and store.count("Y") == 0


def test_scripted_store_exception_classes_and_messages():
    m = Message("a", "assistant", 5)
    store = ScriptedStore({None: [KeyError, ([m, "b"], 7)]})
    with pytest.raises(KeyError, match="scripted KeyError at cursor None"):
        store(None)
    page, nxt = store(None)
    assert page == [m, Message("b", "user", 1)] and nxt == 7


def test_scripted_store_unknown_cursor():
    store = ScriptedStore({None: (["a"], "B")})
    with pytest.raises(ValueError, match=r"no script for cursor 'B'; scripted cursors: \[None\]"):
        store("B")
    assert store.calls == ["B"]


@pytest.mark.parametrize(
    "script, error, text",
    [
        ([], TypeError, "script must be a dict"),
        ({None: []}, ValueError, "cursor None has no responses"),
        ({None: (["a"],)}, TypeError, "(page, next_cursor) or an exception"),
        ({None: "oops"}, TypeError, "got 'oops'"),
        ({"c": ("a", None)}, TypeError, "the page for cursor 'c' must be a list"),
        ({None: ([3], None)}, TypeError, "holds 3"),
        ({None: (["a"], ["x"])}, TypeError, "next cursor ['x'] for cursor None is unhashable"),
    ],
)
def test_scripted_store_validates(script, error, text):
    with pytest.raises(error) as info:
        ScriptedStore(script)
    assert text in str(info.value)


# -- FaultConfig -----------------------------------------------------------------------------------


def test_fault_config_defaults_are_no_faults():
    cfg = FaultConfig()
    assert (cfg.failure_rate, cfg.burst_length, cfg.repeated_cursor, cfg.cursor_cycle,
            cfg.wrap_around, cfg.empty_page, cfg.overlap, cfg.seed) == (
        0.0, 1, None, None, False, None, 0, 0)
    assert cfg.walk_faults == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.seed = 3
    assert not hasattr(cfg, "__dict__")
    full = FaultConfig(repeated_cursor=2, cursor_cycle=2, empty_page=1, overlap=1)
    assert full.walk_faults == ("repeated_cursor", "cursor_cycle", "empty_page", "overlap")
    assert FaultConfig(wrap_around=True).walk_faults == ("wrap_around",)


@pytest.mark.parametrize(
    "field, value, error",
    [
        ("failure_rate", -0.1, ValueError),
        ("failure_rate", 1.01, ValueError),
        ("failure_rate", math.nan, ValueError),
        ("failure_rate", "0.5", TypeError),
        ("failure_rate", True, TypeError),
        ("burst_length", 0, ValueError),
        ("burst_length", 2.0, TypeError),
        ("repeated_cursor", 0, ValueError),
        ("repeated_cursor", "2", TypeError),
        ("cursor_cycle", 1, ValueError),
        ("cursor_cycle", 2.5, TypeError),
        ("wrap_around", 1, TypeError),
        ("empty_page", 0, ValueError),
        ("empty_page", True, TypeError),
        ("overlap", -1, ValueError),
        ("overlap", None, TypeError),
        ("seed", "7", TypeError),
        ("seed", None, TypeError),
    ],
)
def test_fault_config_validates_every_field(field, value, error):
    with pytest.raises(error) as info:
        FaultConfig(**{field: value})
    assert f"FaultConfig.{field}" in str(info.value) and repr(value) in str(info.value)


def test_fault_config_cycle_and_wrap_are_exclusive():
    with pytest.raises(ValueError, match="cursor_cycle=2 and wrap_around=True"):
        FaultConfig(cursor_cycle=2, wrap_around=True)


def test_every_fault_has_a_documented_effect():
    assert set(FAULT_EFFECTS) == set(FAULT_NAMES)
    assert FAULT_EFFECTS["empty_page"].startswith("loses every page after the empty one")
    assert FAULT_EFFECTS["overlap"].startswith("loses nothing")


# -- FlakyStore: transient failures ----------------------------------------------------------------


def test_flaky_store_without_faults_pages_like_the_paged_store():
    truth = msgs(7)
    flaky = FlakyStore(PagedStore(truth, 3))
    got, report = load(flaky)
    assert got == ids(truth)
    assert [c.cursor for c in flaky.calls] == [None, "p3", "p6"]
    assert [(c.outcome, c.faults, c.page_size) for c in flaky.calls] == [
        ("ok", (), 3), ("ok", (), 3), ("ok", (), 1)]
    assert [c.next_cursor for c in flaky.calls] == ["p3", "p6", None]
    assert all(c.at is None for c in flaky.calls)
    assert flaky.fired == () and flaky.page_count == 3


def test_flaky_store_is_deterministic_per_seed():
    def walk(seed):
        clock = VirtualClock()
        flaky = FlakyStore(PagedStore(msgs(30), 4), FaultConfig(failure_rate=0.4, seed=seed),
                           clock=clock)
        got, _ = load(flaky, clock=clock, attempts=50, random=flaky.rng_for_jitter())
        assert got == ids(msgs(30))
        return flaky.calls, clock.sleeps

    assert walk(11) == walk(11)
    patterns = {tuple(c.outcome for c in walk(seed)[0]) for seed in range(10)}
    assert len(patterns) > 1


def test_flaky_store_records_injected_failures_with_times():
    clock = VirtualClock()
    flaky = FlakyStore(PagedStore(msgs(6), 2), FaultConfig(failure_rate=1.0), clock=clock)
    with pytest.raises(PageLoadError) as info:
        load(flaky, clock=clock, attempts=3)
    assert info.value.cursor is None and info.value.loaded == []
    assert [(c.index, c.cursor, c.outcome, c.fault) for c in flaky.calls] == [
        (0, None, "transient", "transient"),
        (1, None, "transient", "transient"),
        (2, None, "transient", "transient"),
    ]
    assert [c.at for c in flaky.calls] == [0.0, clock.sleeps[0], clock.sleeps[0] + clock.sleeps[1]]
    assert flaky.fired == ("transient",)
    assert "injected transient failure at the first page (cursor None)" in str(info.value.__cause__)
    # the message counts calls from 1, as the dashboard's call log and the CLI's table do (the
    # last of the three calls raised it; FlakyCall.index is the list position, from 0)
    assert str(info.value.__cause__).endswith("(call #3, counted from 1)")


@pytest.mark.parametrize("burst", [2, 3, 5])
def test_bursts_fail_that_many_calls_in_a_row_on_the_cursor(burst):
    flaky = FlakyStore(PagedStore(msgs(40), 3), FaultConfig(failure_rate=0.3, burst_length=burst,
                                                              seed=4))
    got, report = load(flaky, attempts=100)
    assert got == ids(msgs(40))
    runs = [
        len(list(group))
        for (cursor, outcome), group in groupby(flaky.calls, key=lambda c: (c.cursor, c.outcome))
        if outcome == "transient"
    ]
    assert runs and all(r % burst == 0 for r in runs)
    assert report.transient_failures == sum(runs)


def test_flaky_store_over_a_plain_fetch_page():
    inner = ScriptedStore({None: (["a"], "B"), "B": [TransientError, (["b"], None)]})
    flaky = FlakyStore(inner, FaultConfig(failure_rate=0.5, seed=1))
    got, _ = load(flaky, attempts=20)
    assert got == ["a", "b"]
    assert flaky.truth is None and flaky.page_count is None
    # The scripted store's own TransientError is recorded without an injected fault name.
    own = [c for c in flaky.calls if c.outcome == "transient" and c.faults == ()]
    assert len(own) == 1 and own[0].cursor == "B"
    # Injected failures never reach the wrapped store.
    injected = sum(1 for c in flaky.calls if c.faults == ("transient",))
    assert len(inner.calls) == len(flaky.calls) - injected


def test_flaky_store_records_other_errors_from_the_wrapped_store():
    flaky = FlakyStore(ScriptedStore({None: (["a"], "B"), "B": KeyError}))
    with pytest.raises(KeyError):
        load(flaky)
    assert [c.outcome for c in flaky.calls] == ["ok", "error"]


@pytest.mark.parametrize(
    "faults, name",
    [
        (FaultConfig(repeated_cursor=1), "repeated_cursor"),
        (FaultConfig(cursor_cycle=2), "cursor_cycle"),
        (FaultConfig(wrap_around=True), "wrap_around"),
        (FaultConfig(empty_page=1), "empty_page"),
        (FaultConfig(overlap=1), "overlap"),
    ],
)
def test_walk_faults_need_a_paged_store(faults, name):
    with pytest.raises(ValueError, match=f"FaultConfig.{name}=.* needs a PagedStore"):
        FlakyStore(lambda cursor: ([], None), faults)


def test_flaky_store_validates():
    with pytest.raises(TypeError, match="faults must be a FaultConfig, got 0.5"):
        FlakyStore(PagedStore(msgs(2), 1), 0.5)
    with pytest.raises(TypeError, match="wrap a PagedStore or a fetch_page callable, got 3"):
        FlakyStore(3, FaultConfig())
    with pytest.raises(TypeError, match="clock must be"):
        FlakyStore(PagedStore(msgs(2), 1), FaultConfig(), clock=1.0)
    with pytest.raises(ValueError, match="overlap=3 must be below the PagedStore's page_size=3"):
        FlakyStore(PagedStore(msgs(9), 3), FaultConfig(overlap=3))


def test_flaky_store_unknown_cursor():
    flaky = FlakyStore(PagedStore(msgs(6), 2))
    with pytest.raises(ValueError, match="unknown cursor 'p2'"):
        flaky("p2")  # a valid PagedStore cursor, but this view never issued it yet
    with pytest.raises(ValueError, match=r"unknown cursor \['x'\]"):
        flaky(["x"])
    assert [c.outcome for c in flaky.calls] == ["error", "error"]


# -- FlakyStore: each walk fault, observed in the calls --------------------------------------------


def test_repeated_cursor_loses_every_page_after_the_stuck_one():
    truth = msgs(10)
    flaky = FlakyStore(PagedStore(truth, 2), FaultConfig(repeated_cursor=2))
    got, report = load(flaky)
    assert [c.cursor for c in flaky.calls] == [None, "p2", "p4"]
    assert flaky.calls[-1].faults == ("repeated_cursor",) and flaky.calls[-1].next_cursor == "p4"
    assert report.stop_reason == STOP_REPEATED_CURSOR
    assert got == ["m0", "m1", "m2", "m3", "m4", "m5"]
    diff = compare_to_truth(got, truth)
    assert diff.lost == ("m6", "m7", "m8", "m9") and not diff.ok
    assert flaky.explain_loss(got).startswith("lost 4 of 10 messages because repeated_cursor")


def test_repeated_cursor_on_the_last_page_loses_nothing():
    flaky = FlakyStore(PagedStore(msgs(6), 2), FaultConfig(repeated_cursor=2))
    got, report = load(flaky)
    assert got == ids(msgs(6)) and report.stop_reason == STOP_REPEATED_CURSOR
    beyond = FlakyStore(PagedStore(msgs(6), 2), FaultConfig(repeated_cursor=3))
    assert load(beyond)[1].stop_reason == STOP_END and beyond.fired == ()


def test_cursor_cycle_points_the_last_page_back_and_loses_nothing():
    truth = msgs(10)
    flaky = FlakyStore(PagedStore(truth, 2), FaultConfig(cursor_cycle=2))
    got, report = load(flaky)
    assert [c.cursor for c in flaky.calls] == [None, "p2", "p4", "p6", "p8"]
    assert flaky.calls[-1].faults == ("cursor_cycle",) and flaky.calls[-1].next_cursor == "p2"
    assert report.stop_reason == STOP_REPEATED_CURSOR
    assert got == ids(truth) and compare_to_truth(got, truth).ok
    assert flaky.explain_loss(got) == "nothing lost, nothing repeated: 10 of 10 loaded"


def test_cursor_cycle_past_the_end_points_to_itself_and_one_page_has_no_cycle():
    flaky = FlakyStore(PagedStore(msgs(5), 2), FaultConfig(cursor_cycle=99))
    got, report = load(flaky)
    assert flaky.calls[-1].cursor == flaky.calls[-1].next_cursor == "p4"
    assert got == ids(msgs(5)) and report.stop_reason == STOP_REPEATED_CURSOR
    single = FlakyStore(PagedStore(msgs(2), 5), FaultConfig(cursor_cycle=2))
    assert load(single)[1].stop_reason == STOP_END and single.fired == ()


def test_wrap_around_serves_the_first_page_again_under_fresh_cursors():
    truth = msgs(5)
    flaky = FlakyStore(PagedStore(truth, 2), FaultConfig(wrap_around=True))
    got, report = load(flaky)
    assert [c.cursor for c in flaky.calls] == [None, "p2", "p4", "w1:p0"]
    assert flaky.calls[-1].faults == ("wrap_around",) and flaky.calls[-1].page_size == 2
    assert report.stop_reason == STOP_NO_PROGRESS
    assert got == ids(truth)
    # Forever: walking it by hand goes round after round.
    walk, cursor = [], "w1:p0"
    for _ in range(7):
        page, cursor = flaky(cursor)
        walk.append((ids(page), cursor))
    assert walk == [
        (["m0", "m1"], "w1:p2"), (["m2", "m3"], "w1:p4"), (["m4"], "w2:p0"),
        (["m0", "m1"], "w2:p2"), (["m2", "m3"], "w2:p4"), (["m4"], "w3:p0"),
        (["m0", "m1"], "w3:p2"),
    ]


def test_empty_page_in_the_middle():
    truth = msgs(10)
    flaky = FlakyStore(PagedStore(truth, 2), FaultConfig(empty_page=2))
    got, report = load(flaky)
    assert [c.cursor for c in flaky.calls] == [None, "p2", "e4"]
    assert (flaky.calls[-1].page_size, flaky.calls[-1].next_cursor, flaky.calls[-1].fault) == (
        0, "p4", "empty_page")
    assert report.stop_reason == STOP_EMPTY_PAGE
    assert got == ["m0", "m1", "m2", "m3"]
    assert compare_to_truth(got, truth).lost == ("m4", "m5", "m6", "m7", "m8", "m9")
    assert "lost 6 of 10 messages because empty_page" in flaky.explain_loss(got)

    lenient = FlakyStore(PagedStore(truth, 2), FaultConfig(empty_page=2))
    got, report = load(lenient, empty_page_ends=False)
    assert [c.cursor for c in lenient.calls] == [None, "p2", "e4", "p4", "p6", "p8"]
    assert got == ids(truth) and report.stop_reason == STOP_END


def test_empty_page_after_the_last_page_never_fires():
    flaky = FlakyStore(PagedStore(msgs(6), 2), FaultConfig(empty_page=3))
    got, report = load(flaky)
    assert got == ids(msgs(6)) and report.stop_reason == STOP_END and flaky.fired == ()


def test_overlap():
    truth = msgs(7)
    flaky = FlakyStore(PagedStore(truth, 3), FaultConfig(overlap=1))
    got, report = load(flaky)
    assert [c.cursor for c in flaky.calls] == [None, "p2", "p4"]
    assert [c.faults for c in flaky.calls] == [(), ("overlap",), ("overlap",)]
    assert got == ids(truth) and report.duplicates_skipped == 2 and report.stop_reason == STOP_END
    assert flaky.page_count == 3


def test_faults_combine_and_fired_lists_them_in_order():
    clock = VirtualClock()
    flaky = FlakyStore(
        PagedStore(msgs(12), 3),
        FaultConfig(failure_rate=0.3, overlap=1, empty_page=2, cursor_cycle=2, seed=3),
        clock=clock,
    )
    got, report = load(flaky, clock=clock, empty_page_ends=False, attempts=30)
    assert got == ids(msgs(12)) and report.stop_reason == STOP_REPEATED_CURSOR
    assert set(flaky.fired) == {"transient", "overlap", "empty_page", "cursor_cycle"}
    assert flaky.calls[-1].next_cursor == "p2"
    assert all(c.at is not None for c in flaky.calls)


# -- compare_to_truth ------------------------------------------------------------------------------


def test_compare_to_truth():
    truth = msgs(5)
    assert compare_to_truth(truth, truth) == TruthDiff((), (), (), False, 5, 5)
    assert compare_to_truth(truth, truth).ok
    diff = compare_to_truth(["m0", "m3", "m0", "x", "m3", "m2"], truth)
    assert diff.lost == ("m1", "m4")
    assert diff.repeated == ("m0", "m3")
    assert diff.extra == ("x",)
    assert diff.out_of_order  # m2 after m3
    assert (diff.loaded_count, diff.truth_count, diff.ok) == (6, 5, False)
    assert compare_to_truth([], []).ok
    assert compare_to_truth([], ["a", "b"]).lost == ("a", "b")


def test_compare_to_truth_validates():
    with pytest.raises(ValueError, match="truth repeats the id 'a'"):
        compare_to_truth([], ["a", "b", "a"])
    with pytest.raises(TypeError, match=r"loaded\[1\] must be a Message or a str id, got 3"):
        compare_to_truth(["a", 3], [])
    with pytest.raises(TypeError, match="truth must be a list"):
        compare_to_truth([], "abc")


def test_flaky_call_fault_property():
    assert FlakyCall(0, None, "ok", (), None).fault is None
    assert FlakyCall(0, "p2", "ok", ("wrap_around", "overlap"), 1.5).fault == "wrap_around+overlap"


def test_explain_loss_needs_a_truth():
    with pytest.raises(ValueError, match="needs a wrapped PagedStore"):
        FlakyStore(lambda c: ([], None)).explain_loss([])


# -- properties ------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(0, 40),
    page_size=st.integers(1, 8),
    failure_rate=st.floats(0, 0.5),
    burst_length=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_transient_faults_never_lose_or_repeat(n, page_size, failure_rate, burst_length, seed):
    truth = msgs(n)
    clock = VirtualClock()
    flaky = FlakyStore(
        PagedStore(truth, page_size),
        FaultConfig(failure_rate=failure_rate, burst_length=burst_length, seed=seed),
        clock=clock,
    )
    # attempts >> burst_length: giving up needs ~33 bursts in a row (p <= 0.5**33 per page).
    got, report = load(flaky, clock=clock, attempts=100, random=flaky.rng_for_jitter())
    assert got == ids(truth)
    assert compare_to_truth(got, flaky.truth).ok
    assert report.stop_reason == (STOP_EMPTY_PAGE if n == 0 else STOP_END)
    assert report.transient_failures == sum(1 for c in flaky.calls if c.outcome == "transient")
    assert report.pages == sum(1 for c in flaky.calls if c.outcome == "ok")


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(0, 30),
    page_size=st.integers(1, 6),
    data=st.data(),
    empty_page_ends=st.booleans(),
)
def test_walk_faults_lose_only_what_they_document(n, page_size, data, empty_page_ends):
    overlap = data.draw(st.integers(0, page_size - 1), label="overlap")
    repeated = data.draw(st.none() | st.integers(1, 8), label="repeated_cursor")
    empty = data.draw(st.none() | st.integers(1, 8), label="empty_page")
    end = data.draw(st.sampled_from(["none", "cycle", "wrap"]), label="end")
    faults = FaultConfig(
        overlap=overlap,
        repeated_cursor=repeated,
        empty_page=empty,
        cursor_cycle=data.draw(st.integers(2, 9)) if end == "cycle" else None,
        wrap_around=end == "wrap",
        failure_rate=data.draw(st.floats(0, 0.3), label="failure_rate"),
        seed=data.draw(st.integers(0, 1000), label="seed"),
    )
    truth = msgs(n)
    flaky = FlakyStore(PagedStore(truth, page_size), faults)
    # max_pages bounds an empty store wrapping around with empty_page_ends=False (endless empty
    # pages under fresh cursors: only the page cap ends that walk).
    got, report = load(flaky, attempts=100, empty_page_ends=empty_page_ends, max_pages=200)
    diff = compare_to_truth(got, truth)
    # Never repeated, never out of order, nothing invented; what is loaded is a prefix of the truth.
    assert not diff.repeated and not diff.out_of_order and not diff.extra
    assert got == ids(truth)[: len(got)]
    lossy = {"repeated_cursor"} | ({"empty_page"} if empty_page_ends else set())
    if diff.lost:
        assert lossy & set(flaky.fired)
        assert flaky.explain_loss(got, empty_page_ends=empty_page_ends).startswith(
            f"lost {len(diff.lost)} of {n} messages because "
        )
    if not lossy & set(flaky.fired):
        assert diff.ok
    assert report.stop_reason is not None


# -- where the doubles live (issue 12 item 8) --------------------------------------------------------


def test_doubles_live_in_convmem_testing_not_in_the_top_level():
    import convmem
    import convmem.testing as testing
    from convmem.testing import _moved

    assert set(testing.__all__) == set(_moved.MOVED) | {"MemoryStore"}
    assert not set(testing.__all__) & set(convmem.__all__)
    for name in testing.__all__:
        assert hasattr(testing, name), name
    assert testing.VirtualClock.__module__ == "convmem.testing.clock"
    assert testing.PagedStore.__module__ == "convmem.testing.stores"
    assert testing.FlakyStore.__module__ == "convmem.testing.faults"
    assert testing.compare_to_truth.__module__ == "convmem.testing.truth"


@pytest.mark.parametrize("module", ["convmem", "convmem.stores"])
def test_old_import_paths_still_resolve_with_a_deprecation_warning(module):
    import importlib

    import convmem.testing as testing

    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.PagedStore moved to convmem\.testing"):
        assert getattr(mod, "PagedStore") is testing.PagedStore
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        getattr(mod, "NoSuchThing")


def test_without_sqlalchemy_the_import_error_says_which_extra_to_install():
    """The new user imported convmem.stores without the [sql] extra and got a bare
    ModuleNotFoundError; it now names the extra (still a ModuleNotFoundError for sqlalchemy)."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys; sys.modules['sqlalchemy'] = None\n"  # an import of it raises ModuleNotFoundError
        "try:\n    import convmem.stores\n"
        "except ModuleNotFoundError as e:\n    print(e.name, '|', e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parent.parent)
    name, _, message = done.stdout.strip().partition(" | ")
    assert name == "sqlalchemy" and "pip install 'convmem[sql]'" in message, done.stdout + done.stderr
