"""Keyset paging shared by the stores: opaque cursors and marks, and the pager load_history calls.

A store that pages with :class:`KeysetPager` numbers each conversation's messages 1, 2, 3, ... in
commit order (its *sequence numbers*) and answers one range query: "the first ``n`` messages with
``lo < seq <= hi``, oldest or newest first". :class:`convmem.stores.SQLStore` answers it with an
indexed SQL query, :class:`convmem.testing.MemoryStore` with a list slice. The contract this keeps
(stable, monotonic cursors; high-water marks) is in :mod:`convmem.stores` and docs/decisions.md.

Cursors and marks are opaque strings; one a store did not issue, or issued for another
conversation, is a ValueError naming it.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .message import Message, check_text

__all__ = ["ConversationInfo", "KeysetPager", "KeysetSource", "MAX_SEQ", "new_pager"]

#: The largest sequence number (PostgreSQL BIGINT); an unbounded walk uses it as its upper bound.
MAX_SEQ = 2**63 - 1
#: Digits of MAX_SEQ: a longer run of digits is no cursor (checked before int() reads it).
_MAX_SEQ_DIGITS = len(str(MAX_SEQ))


class KeysetSource(Protocol):
    """What a :class:`KeysetPager` needs from its store."""

    def _page(self, cid: str, lo: int, hi: int, n: int, *, descending: bool) -> list[Any]:
        """Up to ``n`` rows with ``lo < seq <= hi``, by seq (descending: newest first); row[0] is
        the seq. Raises TransientError for a failure a retry can cure."""

    def _message(self, cid: str, row: Any) -> Message:
        """The Message of a row."""


# -- cursors ---------------------------------------------------------------------------------------
#
# A cursor or mark is urlsafe base64 (no padding) of "<kind><seq>.<crc32 of the conversation id>":
# kind "a" = oldest-first cursor, "d" = newest-first cursor, "m" = a mark. An "a" cursor and a mark
# both name the position after message <seq>; a "d" cursor names the position before it.


def _conversation_tag(conversation_id: str) -> str:
    return f"{zlib.crc32(conversation_id.encode('utf-8')):08x}"


def _encode(kind: str, seq: int, conversation_id: str, *, tagged: bool = False) -> str:
    tag = conversation_id if tagged else _conversation_tag(conversation_id)
    raw = f"{kind}{seq}.{tag}".encode("ascii")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _decode(owner: str, name: str, value: Any, kinds: str, conversation_id: str) -> int:
    """The sequence number in ``value``, a cursor or mark of one of ``kinds`` for this conversation.

    Raises ValueError naming the argument and the value for anything else.
    """
    expected = {
        "a": "an oldest-first cursor",
        "d": "a newest-first cursor",
        "m": "a mark from high_water_mark/append",
    }
    what = " or ".join(expected[k] for k in kinds)
    if not isinstance(value, str):
        raise TypeError(f"{owner}: {name} must be {what} (a str), got {value!r}")
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_", validate=True)
        text = raw.decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    kind, (seq_text, dot, tag) = text[:1], text[1:].partition(".")
    # canonical: exactly what _encode writes for some kind, seq and conversation
    if not (
        kind in expected
        and dot
        and seq_text.isdigit()
        and len(seq_text) <= _MAX_SEQ_DIGITS  # int() of 4,301+ digits raised a bare ValueError
        and len(tag) == 8
        and _encode(kind, int(seq_text), tag, tagged=True) == value
    ):
        shown = repr(value) if len(value) <= 100 else f"{value[:100]!r}... ({len(value):,} chars)"
        raise ValueError(f"{owner}: {name} {shown} is not a cursor this store issued")
    if kind not in kinds:
        raise ValueError(f"{owner}: {name} {value!r} is {expected[kind]}, not {what}")
    if tag != _conversation_tag(conversation_id):
        raise ValueError(
            f"{owner}: {name} {value!r} was issued for another conversation, not "
            f"{conversation_id!r}"
        )
    seq = int(seq_text)
    if seq > MAX_SEQ:
        raise ValueError(f"{owner}: {name} {value!r} is out of range")
    return seq


# -- values ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    """What the store knows about a conversation besides its messages.

    Attributes:
        id: the conversation id.
        user_id: the user (shopper) it belongs to, or None.
        listing_ids: the listing ids it mentions, in order of mention, with repeats (as
            :class:`convmem.Conversation` has them; () when appended message by message).
        messages: how many messages it holds.
        mark: the high-water mark now (the position after its newest message).
    """

    id: str
    user_id: str | None
    listing_ids: tuple[str, ...]
    messages: int
    mark: str


def _check_id(owner: str, name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{owner}: {name} must be a str, got {value!r}")
    if not value:
        raise ValueError(f"{owner}: {name} must be a non-empty str, got ''")
    return check_text(f"{owner}: {name}", value)  # a lone surrogate: no database can store it


def _message_rows(owner: str, messages: Any) -> list[Message]:
    if not isinstance(messages, Iterable) or isinstance(messages, (str, bytes, Mapping)):
        raise TypeError(f"{owner}: messages must be a list of Message, got {messages!r}")
    batch = list(messages)
    seen: set[str] = set()
    for position, message in enumerate(batch):
        if not isinstance(message, Message):
            raise TypeError(f"{owner}: messages[{position}] must be a Message, got {message!r}")
        if message.id in seen:
            raise ValueError(f"{owner}: messages[{position}] repeats the id {message.id!r}")
        seen.add(message.id)
    return batch


# -- the pager -------------------------------------------------------------------------------------


class KeysetPager:
    """The ``fetch_page(cursor)`` callable of one conversation (made by a store's ``pager()``).

    ``pager(cursor)`` (also ``pager.fetch_page(cursor)``) returns ``(page, next_cursor)``: up to
    ``page_size`` messages and the cursor of the next page, or None after the last page. The first
    call passes None. Oldest first, each page and the walk are in conversation order; newest first,
    each page and the walk go from the newest message to the oldest. One indexed range query per
    call (keyset on ``(conversation_id, seq)``): O(log n + page_size), whatever page it is.

    Attributes:
        conversation_id, page_size, newest_first: as given.
        after: the sequence number the walk starts after (0: the start).
        high_water: the last sequence number the walk may serve (None: no bound; an oldest-first
            walk then includes what arrives before it reaches the end).
        position: the mark after the newest message served so far (oldest first), or the
            store's mark at the time the first page was served (newest first); pass it as
            ``after=`` for a follow-up that returns only what arrived since. None before any page.

    Raises (from a call):
        TransientError: the database failed in a way a retry can cure (``__cause__`` is the
            SQLAlchemy error); load_history retries it with the same cursor.
        ValueError: a cursor this pager did not issue (names it), a closed store.
    """

    __slots__ = (
        "_store",
        "conversation_id",
        "page_size",
        "newest_first",
        "after",
        "high_water",
        "_position",
    )

    def __init__(
        self,
        store: KeysetSource,
        conversation_id: str,
        page_size: int,
        newest_first: bool,
        after: int,
        high_water: int | None,
    ) -> None:
        self._store = store
        self.conversation_id = conversation_id
        self.page_size = page_size
        self.newest_first = newest_first
        self.after = after
        self.high_water = high_water
        self._position: int | None = None

    @property
    def position(self) -> str | None:
        """The mark after the newest message this walk served (see the class doc), or None."""
        if self._position is None:
            return None
        return _encode("m", self._position, self.conversation_id)

    def fetch_page(self, cursor: str | None) -> tuple[list[Message], str | None]:
        """The page at ``cursor`` (None: the first page) and the next cursor (None: the end)."""
        cid = self.conversation_id
        hi = MAX_SEQ if self.high_water is None else self.high_water
        if self.newest_first:
            if cursor is None:
                upper = hi  # inclusive
            else:
                upper = _decode("KeysetPager", "cursor", cursor, "d", cid) - 1
                upper = min(upper, hi)
            rows = self._store._page(cid, self.after, upper, self.page_size + 1, descending=True)
            if cursor is None and self._position is None:
                top = rows[0][0] if rows else self.after
                self._position = top
        else:
            lower = self.after
            if cursor is not None:
                lower = max(lower, _decode("KeysetPager", "cursor", cursor, "a", cid))
            rows = self._store._page(cid, lower, hi, self.page_size + 1, descending=False)
        more = len(rows) > self.page_size
        rows = rows[: self.page_size]
        page = [self._store._message(cid, row) for row in rows]
        if not self.newest_first:
            last = rows[-1][0] if rows else (self.after if cursor is None else lower)
            if self._position is None or last > self._position:
                self._position = last
        if not more:
            return page, None
        return page, _encode("d" if self.newest_first else "a", rows[-1][0], cid)

    __call__ = fetch_page

    def __repr__(self) -> str:
        order = "newest first" if self.newest_first else "oldest first"
        bound = "" if self.high_water is None else f", high_water={self.high_water}"
        return (
            f"KeysetPager({self.conversation_id!r}, {order}, page_size={self.page_size}, "
            f"after={self.after}{bound})"
        )




def new_pager(
    store: KeysetSource,
    owner: str,
    conversation_id: Any,
    newest_first: Any,
    after: Any,
    high_water: Any,
    page_size: Any,
) -> KeysetPager:
    """A validated :class:`KeysetPager` (the body of a store's ``pager()``; ``owner`` names it in
    errors). ``after`` and ``high_water`` are marks (or oldest-first cursors) or None.

    Raises:
        TypeError / ValueError: a bad id, flag or page_size, a mark that is not one (or is another
            conversation's); each names the argument and the value.
    """
    cid = _check_id(owner, "conversation_id", conversation_id)
    if not isinstance(newest_first, bool):
        raise TypeError(f"{owner}: newest_first must be a bool, got {newest_first!r}")
    if isinstance(page_size, bool) or not isinstance(page_size, int):
        raise TypeError(f"{owner}: page_size must be an int, got {page_size!r}")
    if page_size < 1:
        raise ValueError(f"{owner}: page_size must be >= 1, got {page_size!r}")
    lo = 0 if after is None else _decode(owner, "after", after, "ma", cid)
    hi = None if high_water is None else _decode(owner, "high_water", high_water, "ma", cid)
    return KeysetPager(store, cid, page_size, newest_first, lo, hi)
