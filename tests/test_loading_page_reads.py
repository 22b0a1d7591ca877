"""A page whose READ fails retryably (after fetch_page returned) is part of the retried call
(docs/decisions.md, "Reading a page is part of the retried call"; SPEC §3): retried with the same
cursor, bounded by the attempts, never a lost or repeated message."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from convmem import Message, PageLoadError, TransientError, load_history, load_history_with_report
from convmem.loading import FAILURE_ATTEMPTS


class StoreHiccup(Exception):
    """A store's own transient error kind (passed as retry_on)."""


def msgs(*names):
    return [Message(n, "user", 1) for n in names]


class FlakyPage(Sequence):
    """A lazy page: its first ``fail_reads`` iterations raise ``error`` after yielding one item."""

    def __init__(self, items, reads, error):
        self._items, self._reads, self._error = list(items), reads, error

    def __len__(self):
        return len(self._items)

    def __getitem__(self, index):
        return self._items[index]

    def __iter__(self):
        yield self._items[0]
        if self._reads:
            self._reads.pop()
            raise self._error
        yield from self._items[1:]


class FlakyCursorResult(tuple):
    """A (page, next_cursor) result whose cursor read fails while ``reads`` holds a token."""

    def __new__(cls, page, cursor, reads, error):
        self = super().__new__(cls, (page, cursor))
        self._reads, self._error = reads, error
        return self

    def __iter__(self):
        yield self[0]
        if self._reads:
            self._reads.pop()
            raise self._error
        yield self[1]


def store(make_result, pages):
    calls = []

    def fetch_page(cursor):
        calls.append(cursor)
        return make_result(cursor, *pages[cursor])

    return fetch_page, calls


PAGES = {None: (msgs("a", "b", "c"), "p2"), "p2": (msgs("d", "e"), None)}


@pytest.mark.parametrize(
    ("error", "retry_on"),
    [(TransientError("read reset"), ()), (StoreHiccup("read reset"), (StoreHiccup,))],
)
def test_page_iteration_failing_retryably_is_retried_without_repeats(error, retry_on):
    reads = [1, 1]  # the page at "p2" fails to read twice, then reads whole
    fetch_page, calls = store(
        lambda cursor, page, nxt: (FlakyPage(page, reads if cursor == "p2" else [], error), nxt),
        PAGES,
    )
    history, report = load_history_with_report(
        fetch_page, retry_on=retry_on, sleep=lambda s: None, random=lambda: 0.0
    )
    assert [m.id for m in history] == ["a", "b", "c", "d", "e"]
    assert calls == [None, "p2", "p2", "p2"]
    assert report.transient_failures == 2
    assert report.duplicates_skipped == 0


def test_cursor_read_failing_retryably_is_retried():
    reads = [1]
    fetch_page, calls = store(
        lambda cursor, page, nxt: FlakyCursorResult(
            page, nxt, reads if cursor is None else [], TransientError("cursor read")
        ),
        PAGES,
    )
    history = load_history(fetch_page, sleep=lambda s: None, random=lambda: 0.0)
    assert [m.id for m in history] == ["a", "b", "c", "d", "e"]
    assert calls == [None, None, "p2"]


def test_page_that_never_reads_ends_in_page_load_error_with_what_was_loaded():
    forever = [1] * 1000
    fetch_page, calls = store(
        lambda cursor, page, nxt: (
            FlakyPage(page, forever if cursor == "p2" else [], TransientError("x")),
            nxt,
        ),
        PAGES,
    )
    with pytest.raises(PageLoadError) as info:
        load_history(fetch_page, attempts=3, sleep=lambda s: None, random=lambda: 0.0)
    assert info.value.cursor == "p2"
    assert info.value.attempts == 3
    assert [m.id for m in info.value.loaded] == ["a", "b", "c"]
    assert isinstance(info.value.__cause__, TransientError)
    assert info.value.report.failure == FAILURE_ATTEMPTS
    assert calls == [None, "p2", "p2", "p2"]


def test_page_read_failing_with_other_error_propagates_unretried():
    fetch_page, calls = store(
        lambda cursor, page, nxt: (FlakyPage(page, [1], KeyError("bad row")), nxt), PAGES
    )
    with pytest.raises(KeyError):
        load_history(fetch_page, sleep=lambda s: None, random=lambda: 0.0)
    assert calls == [None]
