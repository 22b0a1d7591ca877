"""Streaming (iter_pages / iter_messages) and resuming a failed load (issue 12, items 3 and 5).

load_history is iter_pages collected, so every test of test_loading.py covers the walk; here:
the stream hands over the same messages and the same report as load_history, holds only the page
at hand, stops when closed; and a load that failed with PageLoadError, resumed from the error,
ends with exactly the history (and stop reason) of a clean load.
"""

from __future__ import annotations

import gc
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import Message, PageLoadError, TransientError, load_history
from convmem.loading import (
    STOP_CLOSED,
    LoadedPage,
    LoadReport,
    iter_messages,
    iter_pages,
)
from convmem.testing import FaultConfig, FlakyStore, PagedStore, ScriptedStore, VirtualClock

T = TransientError


def ids(messages):
    return [m.id for m in messages]


def no_sleep(seconds):
    pass


# -- streaming -------------------------------------------------------------------------------------


def test_pages_come_one_by_one_with_their_new_messages():
    store = ScriptedStore({None: (["a", "b"], "B"), "B": (["b", "c", "c"], "C"),
                           "C": [T, (["d"], None)]})
    report = LoadReport()
    pages = list(iter_pages(store, report=report, sleep=no_sleep))
    assert pages == [
        LoadedPage(0, None, "B", (Message("a", "user", 1), Message("b", "user", 1)), 2, 0),
        LoadedPage(1, "B", "C", (Message("c", "user", 1),), 3, 2),
        LoadedPage(2, "C", None, (Message("d", "user", 1),), 1, 0),
    ]
    assert (report.stop_reason, report.pages, report.retries, report.messages_loaded) == (
        "end", 3, 1, 4
    )
    assert ids(iter_messages(ScriptedStore({None: (["a", "b"], None)}))) == ["a", "b"]


def test_nothing_is_fetched_before_the_first_next_and_options_are_checked_at_the_call():
    store = ScriptedStore({None: (["a"], None)})
    stream = iter_pages(store)
    assert store.calls == []
    assert ids(next(stream).messages) == ["a"] and store.calls == [None]
    with pytest.raises(ValueError, match="attempts must be >= 1, got 0"):
        iter_pages(store, attempts=0)
    with pytest.raises(TypeError, match="unique_ids must be a bool, got 1"):
        iter_pages(store, unique_ids=1)


def test_closing_the_stream_stops_the_walk_and_closes_the_report():
    store = PagedStore([Message(f"m{i}", "user", 1) for i in range(10)], 2)
    report = LoadReport()
    for page in iter_pages(store, report=report):
        if page.index == 1:
            break
    assert store.calls == [None, "p2"]
    assert (report.stop_reason, report.finished, report.messages_loaded) == (STOP_CLOSED, True, 4)


def test_a_consumer_that_stops_at_the_last_page_still_sees_the_stop_reason():
    report = LoadReport()
    stream = iter_pages(ScriptedStore({None: (["a"], None)}), report=report)
    next(stream)
    stream.close()
    assert report.stop_reason == "end"


def test_unique_ids_trusts_the_store_and_keeps_no_ids():
    store = ScriptedStore({None: (["a", "b"], "B"), "B": (["b", "c"], None)})
    pages = list(iter_pages(store, unique_ids=True))
    assert [ids(p.messages) for p in pages] == [["a", "b"], ["b", "c"]]  # not de-duplicated
    # the no-progress rule cannot fire; a repeated cursor still ends a wrap-around
    store = ScriptedStore({None: (["a"], "B"), "B": (["a"], "C"), "C": (["a"], "B")})
    report = LoadReport()
    assert len(list(iter_pages(store, unique_ids=True, report=report))) == 3
    assert report.stop_reason == "repeated_cursor"
    report = LoadReport()
    assert len(list(iter_pages(store, report=report))) == 2
    assert report.stop_reason == "no_progress"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(0, 60),
    page_size=st.integers(1, 7),
    seed=st.integers(0, 10**6),
    faults=st.fixed_dictionaries({
        "failure_rate": st.sampled_from([0.0, 0.3, 0.6]),
        "overlap": st.sampled_from([0, 1, 2]),
        "wrap_around": st.booleans(),
    }),
)
def test_hypothesis_the_stream_is_load_history_page_by_page(n, page_size, seed, faults):
    faults["overlap"] = min(faults["overlap"], page_size - 1)
    truth = [Message(f"m{i}", "user", i) for i in range(n)]

    def run(loader):
        clock = VirtualClock()
        store = FlakyStore(PagedStore(truth, page_size), FaultConfig(seed=seed, **faults),
                           clock=clock)
        report = LoadReport()
        options = dict(sleep=clock.sleep, clock=clock, random=store.rng_for_jitter(),
                       report=report, attempts=4)
        try:
            out = loader(store, options)
        except PageLoadError as error:
            out = ("PageLoadError", error.cursor)
        return out, report.summary(), report.to_rows()

    def stream(store, options):
        return [m for page in iter_pages(store, **options) for m in page.messages]

    assert run(stream) == run(lambda store, options: load_history(store, **options))


def test_the_stream_holds_one_page_not_the_history():
    n, page_size = 50_000, 500

    def fetch_page(cursor):
        start = cursor or 0
        page = [Message(f"m{i}", "user", 1, content="x" * 200) for i in range(start, start + page_size)]
        return page, (start + page_size if start + page_size < n else None)

    def peak(consume):
        gc.collect()
        tracemalloc.start()
        try:
            consume()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    def stream_count():
        assert sum(1 for _ in iter_messages(fetch_page, unique_ids=True)) == n

    def load_count():
        assert len(load_history(fetch_page)) == n

    streamed, loaded = peak(stream_count), peak(load_count)
    # the load holds 50,000 messages (~20 MB); the stream a page (~0.2 MB) and per-call records
    assert streamed * 10 < loaded, (streamed, loaded)


# -- resume ----------------------------------------------------------------------------------------


class OutageStore:
    """Pages ``cursor -> (ids, next_cursor)``; a cursor in ``down`` fails with TransientError on
    every call until ``recover()`` (a permanent failure that later ends)."""

    def __init__(self, pages, down=()):
        self.pages = pages
        self.down = set(down)
        self.calls = []

    def __call__(self, cursor):
        self.calls.append(cursor)
        if cursor in self.down:
            raise TransientError(f"store down at {cursor!r}")
        page_ids, nxt = self.pages[cursor]
        return [Message(i, "user", 1) for i in page_ids], nxt

    def recover(self, cursor):
        self.down.discard(cursor)


def load_until_done(store, loader=load_history, **options):
    """Load, and on each PageLoadError let the store recover there and resume from the error."""
    error, failures = None, 0
    while True:
        report = LoadReport()
        try:
            return loader(store, resume=error, report=report, attempts=2, sleep=no_sleep,
                          **options), report, failures
        except PageLoadError as exc:
            assert exc.report is report and exc.loaded is not None
            error, failures = exc, failures + 1
            store.recover(exc.cursor)


PAGES = {None: (["a", "b"], 1), 1: (["b", "c"], 2), 2: (["d"], 3), 3: (["a", "e"], None)}


def test_a_failure_on_the_first_page_resumes_from_nothing():
    store = OutageStore(PAGES, down={None})
    with pytest.raises(PageLoadError) as info:
        load_history(store, attempts=3, sleep=no_sleep)
    assert info.value.cursor is None and info.value.loaded == []
    store.recover(None)
    assert ids(load_history(store, resume=info.value)) == ["a", "b", "c", "d", "e"]


def test_duplicates_across_the_resume_boundary_are_removed():
    store = OutageStore(PAGES, down={2})
    with pytest.raises(PageLoadError) as info:
        load_history(store, attempts=2, sleep=no_sleep)
    assert ids(info.value.loaded) == ["a", "b", "c"] and info.value.cursor == 2
    store.recover(2)
    report = LoadReport()
    # page 3 repeats "a" from before the failure: skipped
    assert ids(load_history(store, resume=info.value, report=report)) == ["a", "b", "c", "d", "e"]
    assert (report.pages, report.duplicates_skipped, report.messages_loaded) == (2, 1, 5)
    assert store.calls == [None, 1, 2, 2, 2, 3]


def test_the_stop_rules_see_one_walk_across_the_boundary():
    # a cycle None -> 1 -> 2 -> 1: the resumed run knows 1 was requested before the failure at 2
    cycle = {None: (["a"], 1), 1: (["b"], 2), 2: (["c"], 1)}
    assert ids(load_until_done(OutageStore(cycle, down={2}))[0]) == ["a", "b", "c"]
    messages, report, failures = load_until_done(OutageStore(cycle, down={2}))
    assert (report.stop_reason, failures) == ("repeated_cursor", 1)
    # max_pages counts the pages of both runs
    long = {i if i else None: ([f"m{i}"], i + 1) for i in range(10)}
    messages, report, _ = load_until_done(OutageStore(long, down={3, 6}), max_pages=5)
    assert ids(messages) == ["m0", "m1", "m2", "m3", "m4"] and report.stop_reason == "page_cap"


def test_a_hand_made_error_resumes_from_its_loaded_messages_and_report():
    error = PageLoadError("by hand", cursor=2, attempts=1, loaded=[Message("a", "user", 1)])
    assert ids(load_history(OutageStore(PAGES), resume=error)) == ["a", "d", "e"]
    with pytest.raises(TypeError, match="resume must be the PageLoadError"):
        load_history(OutageStore(PAGES), resume=ValueError("x"))
    bad = PageLoadError("by hand", cursor=2, attempts=1, loaded=["a"])
    with pytest.raises(TypeError, match="item 0 is not a Message"):
        load_history(OutageStore(PAGES), resume=bad)


def test_a_streamed_load_resumes_without_the_messages_it_handed_over():
    store = OutageStore(PAGES, down={3})
    got = []
    with pytest.raises(PageLoadError) as info:
        for page in iter_pages(store, attempts=2, sleep=no_sleep):
            got += page.messages
    assert info.value.loaded == [] and info.value.cursor == 3
    store.recover(3)
    for page in iter_pages(store, resume=info.value):
        got += page.messages
    assert ids(got) == ["a", "b", "c", "d", "e"]  # "a" on page 3 is known from before


@st.composite
def outage_cases(draw):
    n = draw(st.integers(1, 12))
    pool = [f"m{i}" for i in range(draw(st.integers(1, 20)))]
    pages = {}
    cursors = [None, *range(1, n)]
    for k, cursor in enumerate(cursors):
        page_ids = draw(st.lists(st.sampled_from(pool), max_size=4))
        nxt = cursors[k + 1] if k + 1 < n else None
        if draw(st.integers(0, 9)) == 0:
            nxt = draw(st.sampled_from(cursors))  # a cycle or a stuck cursor
        pages[cursor] = (page_ids, nxt)
    down = draw(st.sets(st.sampled_from(cursors), max_size=4))
    return pages, down, draw(st.integers(1, 15)), draw(st.booleans())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outage_cases())
def test_hypothesis_a_resumed_load_ends_as_a_clean_one(case):
    pages, down, max_pages, empty_page_ends = case
    options = dict(max_pages=max_pages, empty_page_ends=empty_page_ends)
    clean_report = LoadReport()
    clean = load_history(OutageStore(pages), report=clean_report, **options)
    messages, report, failures = load_until_done(OutageStore(pages, down=down), **options)
    assert messages == clean
    assert report.stop_reason == clean_report.stop_reason
    # streamed and resumed: the same messages, handed over once each
    streamed = []

    def stream(store, **o):
        for page in iter_pages(store, **o):
            streamed.extend(page.messages)  # handed over page by page, kept by the caller

    load_until_done(OutageStore(pages, down=down), loader=stream, **options)
    assert streamed == clean
