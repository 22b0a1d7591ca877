"""The store suite (issue 12): one set of behaviours run against every store.

Backends (tests/store_support.py): ``memory`` (convmem.testing.MemoryStore), ``sqlite-memory``,
``sqlite-file`` and ``postgresql`` (convmem.stores.SQLStore; PostgreSQL skips with the reason when
no server is configured, and fails instead under CONVMEM_REQUIRE_POSTGRES=1). The read-only
behaviours also run against the offset-cursor PagedStore. Expected values are the messages the test
appended (or the store's final contents), compared by full Message equality.
"""

from __future__ import annotations

import random
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import Message, PageLoadError, TransientError, load_history, load_history_with_report
from convmem.keyset import KeysetPager
from convmem.testing import PagedStore, compare_to_truth
from store_support import clean_postgres, make_store, postgres_url, store  # noqa: F401


def ids(messages):
    return [m.id for m in messages]


def conversation(n, prefix="m"):
    """n messages with every field used: roles, content (unicode too), tool-call linkage."""
    out = []
    i = 0
    while len(out) < n:
        k = len(out)
        if k % 4 == 2 and len(out) + 1 < n:
            call = f"{prefix}call{i}"
            out.append(Message(f"{prefix}{k}", "assistant", k, tool_call_ids=(call, call + "b")))
            out.append(Message(f"{prefix}{k + 1}", "tool", 7, content='{"ok": "é✓"}',
                               tool_call_id=call))
        else:
            role = "user" if k % 2 == 0 else "assistant"
            out.append(Message(f"{prefix}{k}", role, k + 1, content=f"text {k} – ünïcode"))
        i += 1
    return out


def walk(pager):
    """Every (page ids, next cursor) of a walk, following next cursors by hand."""
    pages, cursor = [], None
    while True:
        page, cursor = pager(cursor)
        pages.append(ids(page))
        if cursor is None:
            return pages


# -- reading what was appended ---------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 5, 6, 7, 20])
@pytest.mark.parametrize("page_size", [1, 3, 6])
def test_a_load_returns_exactly_what_was_appended(make_store, n, page_size):
    store = make_store(page_size=page_size)
    messages = conversation(n)
    store.append("c1", messages)
    loaded, report = load_history_with_report(store.pager("c1"))
    assert loaded == messages  # every field round-trips
    # keyset pages look one row ahead: the last page says None, so no empty page is fetched
    assert report.stop_reason == ("end" if n else "empty_page")
    assert report.pages == max(1, -(-n // page_size))
    assert sum(c.duplicates for c in report.calls) == 0


def test_pages_follow_the_page_size_and_cursors_are_opaque_strings(store):
    store.append("c1", conversation(7))
    pages = walk(store.pager("c1"))
    assert pages == [["m0", "m1", "m2"], ["m3", "m4", "m5"], ["m6"]]
    page, cursor = store.pager("c1")(None)
    assert isinstance(cursor, str) and "m2" not in cursor and "3" != cursor
    again, _ = store.pager("c1")(cursor)  # a cursor works with any pager of the conversation
    assert ids(again) == ["m3", "m4", "m5"]
    assert ids(store.pager("c1", page_size=5)(None)[0]) == ["m0", "m1", "m2", "m3", "m4"]


def test_appends_continue_the_sequence_and_conversations_stay_apart(store):
    a, b = conversation(4, "a"), conversation(5, "b")
    store.append("ca", a[:2], user_id="u1")
    store.append("cb", b, user_id="u2")
    store.append("ca", a[2:])
    store.append("ca", [])  # an empty append changes nothing
    assert load_history(store.pager("ca")) == a
    assert load_history(store.pager("cb")) == b
    assert store.conversation_ids() == ["ca", "cb"]
    infos = store.conversations()
    assert [(i.id, i.user_id, i.messages) for i in infos] == [("ca", "u1", 4), ("cb", "u2", 5)]
    assert [i.mark for i in infos] == [store.high_water_mark("ca"), store.high_water_mark("cb")]


def test_an_unknown_conversation_is_empty(store):
    loaded, report = load_history_with_report(store.pager("nobody"))
    assert loaded == [] and report.pages == 1 and report.stop_reason == "empty_page"
    assert store.conversation_ids() == []
    after = store.pager("nobody", after=store.high_water_mark("nobody"))
    assert after(None) == ([], None)


# -- newest first ----------------------------------------------------------------------------------


def test_newest_first_pages_from_the_newest_message(store):
    messages = conversation(8)
    store.append("c1", messages)
    pager = store.pager("c1", newest_first=True)
    assert walk(pager) == [["m7", "m6", "m5"], ["m4", "m3", "m2"], ["m1", "m0"]]
    assert load_history(store.pager("c1", newest_first=True)) == messages[::-1]
    assert pager.position == store.high_water_mark("c1")


def test_newest_first_never_serves_arrivals_and_the_follow_up_gets_them(store):
    store.append("c1", conversation(7))
    pager = store.pager("c1", newest_first=True)
    page, cursor = pager(None)
    assert ids(page) == ["m6", "m5", "m4"]
    store.append("c1", [Message("late1", "user", 1), Message("late2", "user", 1)])
    rest = load_history(lambda c: pager(cursor if c is None else c))
    assert ids(rest) == ["m3", "m2", "m1", "m0"]
    assert ids(load_history(store.pager("c1", after=pager.position))) == ["late1", "late2"]


def test_newest_first_within_bounds(store):
    store.append("c1", conversation(4))
    low = store.high_water_mark("c1")
    store.append("c1", conversation(5, "x"))
    high = store.high_water_mark("c1")
    store.append("c1", conversation(2, "z"))
    between = store.pager("c1", newest_first=True, after=low, high_water=high)
    assert ids(load_history(between)) == ["x4", "x3", "x2", "x1", "x0"]


# -- high-water marks and follow-ups ---------------------------------------------------------------


def test_a_load_stops_at_its_high_water_mark_and_the_follow_up_returns_the_rest(store):
    first = conversation(7)
    mark = store.append("c1", first)
    assert mark == store.high_water_mark("c1")
    pager = store.pager("c1", high_water=mark)
    page, cursor = pager(None)
    later = conversation(5, "late")
    store.append("c1", later[:2])
    rest, report = load_history_with_report(lambda c: pager(cursor if c is None else c))
    store.append("c1", later[2:])
    assert page + rest == first and report.stop_reason == "end"
    assert pager.position == mark
    follow = load_history(store.pager("c1", after=mark))
    assert follow == later
    # a follow-up of the follow-up, bounded by a new mark: nothing twice, nothing missed
    mark2 = store.high_water_mark("c1")
    store.append("c1", [Message("last", "user", 1)])
    assert load_history(store.pager("c1", after=mark, high_water=mark2)) == later
    assert ids(load_history(store.pager("c1", after=mark2))) == ["last"]


def test_position_and_cursor_after_resume_an_unbounded_load(store):
    store.append("c1", conversation(5))
    pager = store.pager("c1")
    assert pager.position is None
    loaded = load_history(pager)
    assert pager.position == store.high_water_mark("c1")
    store.append("c1", [Message("new", "user", 1)])
    assert ids(load_history(store.pager("c1", after=pager.position))) == ["new"]
    resume = store.cursor_after("c1", loaded[2].id)
    assert ids(load_history(store.pager("c1", after=resume))) == ["m3", "m4", "new"]
    with pytest.raises(ValueError, match="conversation 'c1' has no message 'nope'"):
        store.cursor_after("c1", "nope")


@pytest.mark.parametrize("seed", range(5))
def test_marks_partition_a_growing_conversation(store, seed):
    """Random appends and marks: the bounded loads between consecutive marks, concatenated, are
    the whole conversation in order (brute-force reference: the list the test appended)."""
    rng = random.Random(seed)
    truth, marks = [], [None]
    for batch in range(8):
        new = [Message(f"b{batch}m{i}", "user", 1) for i in range(rng.randrange(0, 6))]
        store.append("c1", new)
        truth += new
        if rng.random() < 0.6:
            marks.append(store.high_water_mark("c1"))
    marks.append(store.high_water_mark("c1"))
    got = []
    for lo, hi in zip(marks, marks[1:]):
        got += load_history(store.pager("c1", after=lo, high_water=hi, page_size=rng.randint(1, 4)))
    assert got == truth


# -- errors ----------------------------------------------------------------------------------------


def test_bad_cursors_and_marks_are_value_errors_naming_them(store):
    store.append("c1", conversation(7))
    store.append("c2", conversation(7))
    pager = store.pager("c1")
    with pytest.raises(ValueError, match=r"cursor 'garbage!' is not a cursor this store issued"):
        pager("garbage!")
    with pytest.raises(TypeError, match=r"cursor must be an oldest-first cursor \(a str\), got 3"):
        pager(3)
    _, c2_cursor = store.pager("c2")(None)
    with pytest.raises(ValueError, match="issued for another conversation, not 'c1'"):
        pager(c2_cursor)
    _, newest_cursor = store.pager("c1", newest_first=True)(None)
    with pytest.raises(ValueError, match="is a newest-first cursor, not an oldest-first cursor"):
        pager(newest_cursor)
    with pytest.raises(ValueError, match="after 'nope' is not a cursor this store issued"):
        store.pager("c1", after="nope")
    with pytest.raises(ValueError, match="high_water .* issued for another conversation"):
        store.pager("c1", high_water=store.high_water_mark("c2"))
    with pytest.raises(ValueError, match="page_size must be >= 1, got 0"):
        store.pager("c1", page_size=0)
    with pytest.raises(TypeError, match="newest_first must be a bool, got 'yes'"):
        store.pager("c1", newest_first="yes")
    with pytest.raises(ValueError, match="conversation_id must be a non-empty str"):
        store.pager("")


def test_a_bad_append_writes_nothing(store):
    store.append("c1", conversation(3), user_id="u1")
    before = store.high_water_mark("c1")
    with pytest.raises(ValueError, match=r"messages\[1\] repeats the id 'x'"):
        store.append("c1", [Message("x", "user", 1), Message("x", "user", 1)])
    with pytest.raises(ValueError, match="conversation 'c1' already holds message 'm1'"):
        store.append("c1", [Message("fresh", "user", 1), Message("m1", "user", 1)])
    with pytest.raises(ValueError, match="belongs to user_id 'u1', not 'u2'"):
        store.append("c1", [Message("fresh", "user", 1)], user_id="u2")
    with pytest.raises(TypeError, match=r"messages\[0\] must be a Message, got 'm9'"):
        store.append("c1", ["m9"])
    with pytest.raises(TypeError, match="messages must be a list of Message"):
        store.append("c1", "m9")
    assert store.high_water_mark("c1") == before
    assert load_history(store.pager("c1")) == conversation(3)


def test_a_closed_store_refuses_every_call(make_store):
    store = make_store()
    pager = store.pager("c1")
    store.close()
    store.close()  # idempotent
    for call in (lambda: pager(None), lambda: store.append("c1", []), store.conversation_ids,
                 lambda: store.high_water_mark("c1"), lambda: store.pager("c1")):
        with pytest.raises(ValueError, match="the store is closed"):
            call()


# -- messages arriving while a load pages ----------------------------------------------------------


def _arrival_run(store, seed, bounded):
    """A writer thread appends batches while a load pages; returns (load, follow-up, final, the
    contents at the mark). The two threads run freely, and each randomly (seeded) waits for the
    other's next step at times, so runs cover many interleavings: arrivals before the first page,
    between any two pages, during the last one, after the load."""
    rng = random.Random(seed)
    writer_rng = random.Random(seed + 1000)
    cid = f"c{seed}"
    store.append(cid, [Message(f"s{i}", "user", 1) for i in range(rng.randint(0, 12))])
    appended, paged = threading.Semaphore(0), threading.Semaphore(0)
    writer_done, load_done, go = threading.Event(), threading.Event(), threading.Event()
    errors = []

    def wait_for(step, other_done):
        # bounded: when both sides wait for each other, both go on after 20 ms
        if not other_done.is_set():
            step.acquire(timeout=0.02)

    def writer():
        try:
            go.wait()
            for batch in range(writer_rng.randint(3, 8)):
                if writer_rng.random() < 0.5:
                    wait_for(paged, load_done)
                store.append(cid, [Message(f"w{batch}.{i}", "assistant", 2)
                                   for i in range(writer_rng.randint(1, 4))])
                appended.release()
        except Exception as error:  # pragma: no cover - asserted below
            errors.append(error)
        finally:
            writer_done.set()

    mark = at_mark = None
    if bounded:
        mark = store.high_water_mark(cid)
        at_mark = load_history(store.pager(cid))
    pager = store.pager(cid, high_water=mark, page_size=rng.randint(1, 3))

    def fetch(cursor):
        go.set()
        if rng.random() < 0.5:
            wait_for(appended, writer_done)
        try:
            return pager(cursor)
        finally:
            paged.release()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        loaded = load_history(fetch, max_pages=10**6)
    finally:
        load_done.set()
        go.set()
        thread.join()
    assert not errors, errors
    follow = load_history(store.pager(cid, after=mark if bounded else pager.position))
    final = load_history(store.pager(cid))
    return loaded, follow, final, at_mark


@pytest.mark.parametrize("bounded", [False, True], ids=["unbounded", "high-water"])
def test_arrivals_while_paging_are_neither_skipped_nor_repeated(make_store, bounded):
    store = make_store(page_size=2)
    mid_load = 0
    for seed in range(16):
        loaded, follow, final, at_mark = _arrival_run(store, seed, bounded)
        diff = compare_to_truth(loaded + follow, final)
        assert diff.ok, (seed, diff)
        assert loaded + follow == final
        assert loaded == final[: len(loaded)]  # a prefix: no gaps
        if bounded:
            assert loaded == at_mark  # exactly what the store held at the mark
        mid_load += bool(follow) and any(m.id.startswith("w") for m in loaded)
    if not bounded:  # some runs saw arrivals inside the load and after it
        assert mid_load >= 1


@pytest.mark.parametrize("before_call", [1, 2, 3, 4, None], ids=lambda k: f"before-call-{k}")
@pytest.mark.parametrize("batch", [1, 2, 5])
def test_a_scripted_interleaving_of_appends_between_pages(store, before_call, batch):
    """Deterministic: ``batch`` messages arrive just before call k of an unbounded oldest-first load
    (page size 3, 10 messages: 4 pages), or after the load ended (None). Arrivals during the walk
    are in the load exactly once; later ones come back, once, from the follow-up."""
    base = conversation(10)
    store.append("c1", base)
    pager = store.pager("c1")
    late = [Message(f"late{i}", "user", 1) for i in range(batch)]
    calls = []

    def fetch(cursor):
        calls.append(cursor)
        if len(calls) == before_call:
            store.append("c1", late)
        return pager(cursor)

    loaded = load_history(fetch)
    if before_call is None:
        store.append("c1", late)
    during = before_call is not None
    assert loaded == (base + late if during else base)
    assert len(calls) == -(-(10 + (batch if during else 0)) // 3)
    assert load_history(store.pager("c1", after=pager.position)) == ([] if during else late)


def test_offset_cursors_repeat_or_hide_messages_when_the_list_moves():
    """What a store without stable cursors does (docs/decisions.md): newest-first offset pages
    after an arrival repeat a message (load_history drops it by id); after a removal one message
    is skipped, and nothing on the client can see that gap."""
    rows = [Message(f"m{i}", "user", 1) for i in range(6)]

    def newest_first_offsets(cursor):
        offset = cursor or 0
        newest = rows[::-1]
        page = newest[offset : offset + 2]
        return page, (offset + 2 if offset + 2 < len(newest) else None)

    page, cursor = newest_first_offsets(None)
    rows.append(Message("late", "user", 1))  # an arrival shifts every offset by one
    loaded, report = load_history_with_report(
        lambda c: (page, cursor) if c is None else newest_first_offsets(c)
    )
    assert ids(loaded) == ["m5", "m4", "m3", "m2", "m1", "m0"]  # m4 came twice; dropped by id
    assert sum(c.duplicates for c in report.calls) == 1
    del rows[-1]
    page, cursor = newest_first_offsets(None)
    del rows[-1]  # removing a served message shifts the other way: m3 is never served
    loaded = load_history(lambda c: (page, cursor) if c is None else newest_first_offsets(c))
    assert ids(loaded) == ["m5", "m4", "m2", "m1", "m0"]
    assert compare_to_truth(loaded, rows).lost == ("m3",)


# -- the offset-cursor PagedStore runs the read-only part of the suite -----------------------------


@pytest.mark.parametrize("n,page_size", [(0, 3), (1, 3), (7, 3), (9, 3), (20, 6)])
def test_paged_store_reads_like_the_keyset_stores(n, page_size):
    messages = conversation(n)
    reference = PagedStore(messages, page_size)
    loaded = load_history(reference)
    assert loaded == messages
    from convmem.testing import MemoryStore

    keyset = MemoryStore(page_size=page_size)
    keyset.append("c", messages)
    assert walk(keyset.pager("c")) == walk(reference)
    with pytest.raises(ValueError, match="unknown cursor 'p1'"):
        reference("p1")


def test_keyset_pager_is_the_pager_type_of_every_store(make_store):
    assert isinstance(make_store().pager("c"), KeysetPager)


def test_a_page_load_error_keeps_the_loaded_prefix(make_store):
    store = make_store(page_size=2)
    store.append("c1", conversation(6))
    pager = store.pager("c1")

    def fetch(cursor):
        if cursor is not None and len(fetch.seen) >= 2:
            raise TransientError("down")
        fetch.seen.append(cursor)
        return pager(cursor)

    fetch.seen = []
    with pytest.raises(PageLoadError) as caught:
        load_history(fetch, attempts=2, sleep=lambda s: None)
    assert ids(caught.value.loaded) == ["m0", "m1", "m2", "m3"]
    # resume from the cursor it failed at: the rest, once
    assert ids(load_history(lambda c: pager(caught.value.cursor if c is None else c))) == [
        "m4", "m5"]


# -- bounds against a brute-force reference (hypothesis) -------------------------------------------


@pytest.fixture(scope="module")
def shared_stores():
    """One MemoryStore and one in-memory SQLStore, reused across hypothesis examples (each example
    writes its own conversation id)."""
    from convmem.stores import SQLStore
    from convmem.testing import MemoryStore

    stores = [MemoryStore(), SQLStore("sqlite://")]
    yield stores
    for s in stores:
        s.close()


_example = iter(range(10**9))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(st.integers(0, 5), min_size=1, max_size=6),
    lo_batch=st.integers(0, 6),
    hi_batch=st.integers(0, 6),
    page_size=st.integers(1, 4),
    newest_first=st.booleans(),
    use_lo=st.booleans(),
    use_hi=st.booleans(),
)
def test_any_bounds_and_order_serve_exactly_the_reference_slice(
    shared_stores, batches, lo_batch, hi_batch, page_size, newest_first, use_lo, use_hi
):
    """Appends in batches, a mark after each; a walk between any two marks, either way, with any
    page size, is exactly the slice of the appended list (reversed newest first)."""
    for store in shared_stores:
        cid = f"h{next(_example)}"
        truth, marks = [], [store.high_water_mark(cid)]
        for b, size in enumerate(batches):
            new = [Message(f"b{b}m{i}", "user", i) for i in range(size)]
            marks.append(store.append(cid, new))
            truth += new
        ends = [0]
        for size in batches:
            ends.append(ends[-1] + size)
        lo = min(lo_batch, len(batches)) if use_lo else 0
        hi = min(hi_batch, len(batches)) if use_hi else len(batches)
        pager = store.pager(cid, newest_first=newest_first, page_size=page_size,
                            after=marks[lo] if use_lo else None,
                            high_water=marks[hi] if use_hi else None)
        expected = truth[ends[lo] : ends[hi]] if lo <= hi else []
        if newest_first:
            expected = expected[::-1]
        pages = []
        cursor = None
        while True:
            page, cursor = pager(cursor)
            pages.append(page)
            if cursor is None:
                break
        assert [m for page in pages for m in page] == expected
        assert all(len(page) == page_size for page in pages[:-1])
        assert len(pages) == max(1, -(-len(expected) // page_size))
