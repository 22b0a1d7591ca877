"""In-memory fake stores: :class:`PagedStore` over a list, :class:`ScriptedStore` from a script,
:class:`MemoryStore` with SQLStore's API."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..keyset import ConversationInfo, KeysetPager, _check_id, _encode, _message_rows, new_pager
from ..message import Message
from ._checks import _is_int, _message_tuple

__all__ = ["MemoryStore", "PagedStore", "ScriptedStore"]


class PagedStore:
    """An in-memory paged store over ``messages`` (oldest first), ``page_size`` messages per page.

    ``fetch_page(cursor)`` (also ``store(cursor)``) returns ``(page, next_cursor)``: the first page
    for ``None``, then opaque string cursors ``"p<offset>"`` (``"p3"`` is the page starting at
    message 3); the last page's next cursor is ``None``. An empty store serves one empty page.
    Every cursor passed is appended to ``calls``. O(page_size) per call.

    Raises:
        TypeError: ``messages`` is not a list of Message, ``page_size`` not an int.
        ValueError: ``page_size < 1``, a repeated message id; ``fetch_page`` with a cursor this
            store never issues (names the cursor).

    >>> from convmem import Message
    >>> store = PagedStore([Message(f"m{i}", "user", 1) for i in range(5)], 2)
    >>> page, nxt = store.fetch_page(None); [m.id for m in page], nxt
    (['m0', 'm1'], 'p2')
    >>> page, nxt = store("p4"); [m.id for m in page], nxt
    (['m4'], None)
    >>> store.calls, store.page_count
    ([None, 'p4'], 3)
    >>> store("p3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: PagedStore: unknown cursor 'p3' (expected None or 'p<offset>' with offset a ...)
    """

    def __init__(self, messages: Sequence[Message], page_size: int) -> None:
        self.messages: tuple[Message, ...] = _message_tuple("PagedStore", messages)
        if not _is_int(page_size):
            raise TypeError(f"PagedStore: page_size must be an int, got {page_size!r}")
        if page_size < 1:
            raise ValueError(f"PagedStore: page_size must be >= 1, got {page_size!r}")
        self.page_size = page_size
        self.calls: list[Any] = []

    @property
    def truth(self) -> list[Message]:
        """Every message, in order: what a correct load returns."""
        return list(self.messages)

    @property
    def page_count(self) -> int:
        """Pages a full walk serves (1 for an empty store)."""
        return max(1, -(-len(self.messages) // self.page_size))

    def _offset(self, cursor: Any) -> int:
        if cursor is None:
            return 0
        n = len(self.messages)
        if isinstance(cursor, str) and cursor[:1] == "p" and cursor[1:].isdigit():
            offset = int(cursor[1:])
            if f"p{offset}" == cursor and 0 < offset < n and offset % self.page_size == 0:
                return offset
        raise ValueError(
            f"PagedStore: unknown cursor {cursor!r} (expected None or 'p<offset>' with offset a "
            f"positive multiple of {self.page_size} below {n})"
        )

    def fetch_page(self, cursor: str | None) -> tuple[list[Message], str | None]:
        """The page at ``cursor`` and the next cursor (None after the last page)."""
        self.calls.append(cursor)
        offset = self._offset(cursor)
        end = offset + self.page_size
        page = list(self.messages[offset:end])
        return page, (f"p{end}" if end < len(self.messages) else None)

    __call__ = fetch_page

    def __repr__(self) -> str:
        return f"PagedStore({len(self.messages)} messages, page_size={self.page_size})"



def _is_exception(value: Any) -> bool:
    return isinstance(value, BaseException) or (
        isinstance(value, type) and issubclass(value, BaseException)
    )


class ScriptedStore:
    """A fake store that follows a script: ``cursor -> response`` or ``cursor -> [responses]``.

    A response is ``(page, next_cursor)`` or an exception (instance or class) to raise. A page is a
    list of Message, or of str ids as shorthand for ``Message(id, "user", 1)``. The n-th call with a
    cursor gets its n-th response; the last response repeats forever (the CASES.md notation).
    Every cursor passed is appended to ``calls``; ``count(cursor)`` says how often one was passed.
    An exception class is raised as ``cls("scripted <Name> at cursor <cursor>")``.

    Raises:
        TypeError / ValueError: a malformed script (names the cursor and the response);
            ``fetch_page`` with a cursor the script does not have raises ValueError naming it.

    >>> from convmem import TransientError, load_history
    >>> store = ScriptedStore({None: (["m0", "m1"], "p2"),
    ...                        "p2": [TransientError, (["m2", "m3"], "p3")],
    ...                        "p3": (["m4", "m5"], None)})
    >>> [m.id for m in load_history(store, sleep=lambda s: None)]
    ['m0', 'm1', 'm2', 'm3', 'm4', 'm5']
    >>> store.calls, store.count("p2")
    ([None, 'p2', 'p2', 'p3'], 2)
    """

    def __init__(self, script: Mapping[Any, Any]) -> None:
        if not isinstance(script, Mapping):
            raise TypeError(
                f"ScriptedStore: script must be a dict cursor -> responses, got {script!r}"
            )
        self._script: dict[Any, list[Any]] = {}
        for cursor, value in script.items():
            responses = value if isinstance(value, list) else [value]
            if not responses:
                raise ValueError(f"ScriptedStore: cursor {cursor!r} has no responses")
            self._script[cursor] = [self._response(cursor, r) for r in responses]
        self._served: dict[Any, int] = dict.fromkeys(self._script, 0)
        self.calls: list[Any] = []

    @staticmethod
    def _response(cursor: Any, response: Any) -> Any:
        if _is_exception(response):
            return response
        if not isinstance(response, tuple) or len(response) != 2:
            raise TypeError(
                f"ScriptedStore: a response for cursor {cursor!r} must be (page, next_cursor) or "
                f"an exception, got {response!r}"
            )
        page, next_cursor = response
        if not isinstance(page, (list, tuple)):
            raise TypeError(
                f"ScriptedStore: the page for cursor {cursor!r} must be a list, got {page!r}"
            )
        messages = []
        for item in page:
            if isinstance(item, str):
                item = Message(item, "user", 1)
            elif not isinstance(item, Message):
                raise TypeError(
                    f"ScriptedStore: a page for cursor {cursor!r} holds {item!r}, not a Message or "
                    f"an id"
                )
            messages.append(item)
        try:
            hash(next_cursor)
        except TypeError:
            raise TypeError(
                f"ScriptedStore: next cursor {next_cursor!r} for cursor {cursor!r} is unhashable"
            ) from None
        return tuple(messages), next_cursor

    def fetch_page(self, cursor: Any) -> tuple[list[Message], Any]:
        """The next scripted response for ``cursor``: a page, or a raised exception."""
        self.calls.append(cursor)
        responses = self._script.get(cursor)
        if responses is None:
            raise ValueError(
                f"ScriptedStore: no script for cursor {cursor!r}; scripted cursors: "
                f"{list(self._script)!r}"
            )
        served = self._served[cursor]
        self._served[cursor] = served + 1
        response = responses[min(served, len(responses) - 1)]
        if isinstance(response, BaseException):
            raise response.with_traceback(None)
        if isinstance(response, type):
            raise response(f"scripted {response.__name__} at cursor {cursor!r}")
        page, next_cursor = response
        return list(page), next_cursor

    __call__ = fetch_page

    def count(self, cursor: Any) -> int:
        """How many times ``cursor`` was passed to ``fetch_page``. O(calls)."""
        return sum(1 for c in self.calls if c == cursor and type(c) is type(cursor))

    def __repr__(self) -> str:
        return f"ScriptedStore({len(self._script)} cursors, {len(self.calls)} calls)"



# -- MemoryStore -----------------------------------------------------------------------------------


class MemoryStore:
    """An in-memory store with :class:`convmem.stores.SQLStore`'s API: appends, keyset cursors,
    high-water marks, newest-first paging. The reference the store suite checks every SQL backend
    against, and a store for tests that need appends without a database.

    Each conversation is a list; a message's sequence number is its 1-based index, so a page is a
    slice: O(page_size) per call, O(len(messages)) per append. One lock serializes every call
    (thread-safe; an append is all or nothing). ``pager()`` returns the same
    :class:`~convmem.keyset.KeysetPager` SQLStore does.

    Raises:
        TypeError / ValueError: as SQLStore's methods (bad ids, a repeated or existing message id,
            a cursor or mark it did not issue, a closed store).

    >>> from convmem import Message, load_history
    >>> store = MemoryStore(page_size=2)
    >>> mark = store.append("c1", [Message(f"m{i}", "user", 1) for i in range(3)])
    >>> _ = store.append("c1", [Message("late", "user", 1)])
    >>> [m.id for m in load_history(store.pager("c1", high_water=mark))]
    ['m0', 'm1', 'm2']
    >>> [m.id for m in load_history(store.pager("c1", after=mark))]
    ['late']
    """

    def __init__(self, *, page_size: int = 100) -> None:
        if not _is_int(page_size):
            raise TypeError(f"MemoryStore: page_size must be an int, got {page_size!r}")
        if page_size < 1:
            raise ValueError(f"MemoryStore: page_size must be >= 1, got {page_size!r}")
        self.page_size = page_size
        self._messages: dict[str, list[Message]] = {}
        self._ids: dict[str, set[str]] = {}
        self._users: dict[str, str | None] = {}
        self._listings: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def _check_open(self, owner: str) -> None:
        if self._closed:
            raise ValueError(f"{owner}: the store is closed")

    # -- what KeysetPager calls ------------------------------------------------------------------

    def _page(self, cid: str, lo: int, hi: int, n: int, *, descending: bool) -> list[Any]:
        self._check_open("MemoryStore.pager")
        with self._lock:
            messages = self._messages.get(cid, [])
            top = min(hi, len(messages))
            if descending:
                seqs = range(top, max(lo, top - n), -1)
            else:
                seqs = range(lo + 1, min(top, lo + n) + 1)
            return [(seq, messages[seq - 1]) for seq in seqs]

    @staticmethod
    def _message(cid: str, row: Any) -> Message:
        return row[1]

    # -- the API ---------------------------------------------------------------------------------

    def pager(
        self,
        conversation_id: str,
        *,
        newest_first: bool = False,
        after: str | None = None,
        high_water: str | None = None,
        page_size: int | None = None,
    ) -> KeysetPager:
        """The ``fetch_page(cursor)`` callable for a conversation; as :meth:`SQLStore.pager`."""
        self._check_open("MemoryStore.pager")
        return new_pager(
            self, "MemoryStore.pager", conversation_id, newest_first, after, high_water,
            self.page_size if page_size is None else page_size,
        )

    def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        user_id: str | None = None,
        listing_ids: Sequence[str] = (),
    ) -> str:
        """Append ``messages`` to a conversation (all or nothing); returns the mark after them."""
        self._check_open("MemoryStore.append")
        cid = _check_id("MemoryStore.append", "conversation_id", conversation_id)
        if user_id is not None:
            _check_id("MemoryStore.append", "user_id", user_id)
        batch = _message_rows("MemoryStore.append", messages)
        with self._lock:
            known = self._ids.get(cid, set())
            for message in batch:
                if message.id in known:
                    raise ValueError(
                        f"MemoryStore.append: conversation {cid!r} already holds message "
                        f"{message.id!r}"
                    )
            if cid in self._users:
                if user_id is not None and self._users[cid] != user_id:
                    raise ValueError(
                        f"MemoryStore.append: conversation {cid!r} belongs to user_id "
                        f"{self._users[cid]!r}, not {user_id!r}"
                    )
            else:
                self._users[cid] = user_id
                self._listings[cid] = tuple(listing_ids)
                self._messages[cid] = []
                self._ids[cid] = known
            self._messages[cid].extend(batch)
            known.update(message.id for message in batch)
            return _encode("m", len(self._messages[cid]), cid)

    def high_water_mark(self, conversation_id: str) -> str:
        """The mark after the newest message of the conversation now."""
        self._check_open("MemoryStore.high_water_mark")
        cid = _check_id("MemoryStore.high_water_mark", "conversation_id", conversation_id)
        with self._lock:
            return _encode("m", len(self._messages.get(cid, ())), cid)

    def cursor_after(self, conversation_id: str, message_id: str) -> str:
        """The mark after message ``message_id`` (ValueError if the conversation lacks it). O(n)."""
        self._check_open("MemoryStore.cursor_after")
        cid = _check_id("MemoryStore.cursor_after", "conversation_id", conversation_id)
        mid = _check_id("MemoryStore.cursor_after", "message_id", message_id)
        with self._lock:
            for seq, message in enumerate(self._messages.get(cid, ()), start=1):
                if message.id == mid:
                    return _encode("m", seq, cid)
        raise ValueError(f"MemoryStore.cursor_after: conversation {cid!r} has no message {mid!r}")

    def conversation_ids(self) -> list[str]:
        """Every conversation id, in the order they were first appended to."""
        self._check_open("MemoryStore.conversation_ids")
        with self._lock:
            return list(self._messages)

    def conversations(self) -> list[ConversationInfo]:
        """Every conversation's ConversationInfo, in :meth:`conversation_ids` order."""
        self._check_open("MemoryStore.conversations")
        with self._lock:
            return [
                ConversationInfo(
                    cid, self._users[cid], self._listings[cid], len(messages),
                    _encode("m", len(messages), cid),
                )
                for cid, messages in self._messages.items()
            ]

    def close(self) -> None:
        """Forget everything; later calls raise ValueError. Idempotent."""
        self._closed = True
        self._messages.clear()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._messages)} conversations, page_size={self.page_size})"
