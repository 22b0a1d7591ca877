"""In-memory fake stores: :class:`PagedStore` over a list, :class:`ScriptedStore` from a script."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..message import Message
from ._checks import _is_int, _message_tuple

__all__ = ["PagedStore", "ScriptedStore"]


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

