"""What the server keeps of uploads: one byte budget, a per-upload message cap, one check.

Every session of a Streamlit server shares the parsed uploads (convmem_dashboard.data keeps one
:class:`UploadRegistry` in ``st.cache_resource``). Memory must be bounded by what is kept, never
by what was ever uploaded, so the registry is bounded by **bytes**, not by a count:

* :data:`UPLOADS_BUDGET_BYTES` (512 MiB): the estimated size of every kept upload together.
  Adding one that does not fit evicts the least recently used uploads (a link to an evicted one
  falls back to the sample with a warning; data.GONE_UPLOAD_WARNING). One upload bigger than the
  whole budget is refused with a readable error.
* :data:`MAX_UPLOAD_MESSAGES` (200,000): messages in one upload. The pages replay a
  conversation in ~1 s per 10^5 messages; a bigger file is refused with a readable error that
  says to use the library (``convmem.load_conversations``) directly.
* :func:`check_upload`: the strings an upload brings besides Message fields (conversation and
  shopper ids, listing ids, tool call names and arguments) must be encodable
  (:func:`convmem.check_text`), and each conversation's token total must fit
  :data:`convmem.MAX_TOKENS` (2**53 - 1), so the figures' int64 and float64 sums are exact.

:func:`estimated_bytes` is an upper bound of the memory the parsed data holds (``sys.getsizeof``
of every object it reaches, counted once per reference, plus 16 bytes of allocator rounding per
object); tests/test_hostile_memory.py checks it against tracemalloc.

>>> from convmem import Conversation, Message
>>> c = Conversation("c1", None, (Message("m1", "user", 3, content="hi"),))
>>> r = UploadRegistry(budget_bytes=10**6, max_messages=10)
>>> r.add("upload:a", "a.json", (c,))
[]
>>> "upload:a" in r, len(r), 0 < r.total_bytes < 10**6
(True, 1, True)
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from convmem import MAX_TOKENS, Conversation, FormatError, Message, check_text

__all__ = [
    "MAX_UPLOAD_MESSAGES",
    "UPLOADS_BUDGET_BYTES",
    "UploadRegistry",
    "check_upload",
    "estimated_bytes",
]

#: Estimated bytes of all parsed uploads a server keeps at once (least recently used go first).
UPLOADS_BUDGET_BYTES = 512 * 1024 * 1024
#: Messages in one upload.
MAX_UPLOAD_MESSAGES = 200_000
#: Allocator rounding and bookkeeping added per object to sys.getsizeof (an upper bound on 64-bit).
_PER_OBJECT = 16


#: What sys.getsizeof adds to ``__sizeof__()`` for a container (the cyclic collector's header).
#: For the exact types JSON decodes to, ``__sizeof__()`` (+ this for dict, list, tuple) is
#: sys.getsizeof's answer at a seventh of its cost per call (getsizeof looks the method up).
_GC_HEAD = sys.getsizeof([]) - [].__sizeof__()


def _decoded_bytes(value: Any) -> int:
    """Upper bound of the bytes a decoded JSON value holds (dicts, lists, tuples, str, numbers):
    ``sys.getsizeof`` + 16 per object, each object once (records share strings), None and bools
    not counted (singletons). Iterative, so deep nesting cannot overflow the stack. O(objects).
    """
    size = sys.getsizeof
    seen = {id(None), id(True), id(False)}
    stack = [value]
    pop, extend, add = stack.pop, stack.extend, seen.add
    total = 0
    while stack:
        obj = pop()
        i = id(obj)
        if i in seen:
            continue
        add(i)
        kind = type(obj)
        if kind is str or kind is int:  # JSON's leaves: __sizeof__, without getsizeof's call
            total += obj.__sizeof__()
        elif kind is dict:
            total += obj.__sizeof__() + _GC_HEAD
            extend(obj)
            extend(obj.values())
        elif kind is list or kind is tuple:
            total += obj.__sizeof__() + _GC_HEAD
            extend(obj)
        else:
            total += size(obj)
            if isinstance(obj, dict):
                extend(obj.keys())
                extend(obj.values())
            elif isinstance(obj, (list, tuple)):
                extend(obj)
    return total + _PER_OBJECT * (len(seen) - 3)


def estimated_bytes(conversations: Sequence[Conversation]) -> int:
    """Upper bound of the bytes the parsed ``conversations`` hold (O(total objects)).

    Reads ``listing_ids`` (extracting them when the loader left them lazy), so the ids a page
    shows later are already counted.
    """
    size = sys.getsizeof
    total = size(conversations) + _PER_OBJECT
    for c in conversations:
        objs = [c, c.id, c.user_id, c.messages, c.listing_ids, c.tool_calls, c.source, c.source_format]
        total += sum(size(o) for o in objs if o is not None) + _PER_OBJECT * len(objs)
        total += size(c.total_tokens)
        # What export needs: each message's provider record, content-part indices, provider role
        # and the conversation's envelope (convmem.Conversation keeps them; issue 7).
        total += _decoded_bytes((c.records, c.parts, c.provider_roles, c.envelope))
        for x in c.listing_ids:
            total += size(x) + _PER_OBJECT
        for t in c.tool_calls:
            total += size(t) + size(t.id) + size(t.name) + size(t.arguments) + size(t.message_id) + 5 * _PER_OBJECT
        total += _messages_bytes(c.messages)
    return total


#: sys.getsizeof of a Message: the same for every one (a slotted class has no per-object dict).
_MESSAGE_BYTES = sys.getsizeof(Message("m", "user", 0))


def _messages_bytes(messages: Sequence[Message]) -> int:
    """sys.getsizeof + 16 of each message and of its id, tokens, content and call ids (objects
    the records may share: counted again, so still an upper bound). O(messages); the usual
    types (Message, str, int) without sys.getsizeof's per-call lookup."""
    size = sys.getsizeof
    total = 3 * _PER_OBJECT * len(messages)
    for m in messages:
        mid, tokens, content = m.id, m.tokens, m.content
        total += (_MESSAGE_BYTES if type(m) is Message else size(m)) \
            + (mid.__sizeof__() if type(mid) is str else size(mid)) \
            + (tokens.__sizeof__() if type(tokens) is int else size(tokens))
        if content is not None:
            total += (content.__sizeof__() if type(content) is str else size(content)) + _PER_OBJECT
        if m.tool_call_ids:
            total += size(m.tool_call_ids) + _PER_OBJECT
            total += sum(size(x) + _PER_OBJECT for x in m.tool_call_ids)
        if m.tool_call_id is not None:
            total += size(m.tool_call_id) + _PER_OBJECT
    return total


def check_upload(conversations: Sequence[Conversation], source: str,
                 max_messages: int | None = None) -> None:
    """Raise FormatError (naming ``source``, the conversation and the field) when a parsed upload
    breaks a cap the pages rely on (see the module docstring); O(size of the strings)."""
    max_messages = MAX_UPLOAD_MESSAGES if max_messages is None else max_messages
    n = sum(len(c.messages) for c in conversations)
    if n > max_messages:
        raise FormatError(
            f"the file holds {n:,} messages, over this dashboard's cap of {max_messages:,} "
            "messages per upload; split the file, or load it with convmem.load_conversations",
            source=source,
        )
    for k, c in enumerate(conversations, start=1):
        where = f"conversation {k}"
        try:
            check_text("id", c.id)
            if c.user_id is not None:
                check_text("user_id", c.user_id)
            for x in c.listing_ids:
                check_text("listing id", x)
            for t in c.tool_calls:
                check_text("tool call name", t.name)
                check_text("tool call arguments", t.arguments)
        except ValueError as exc:
            raise FormatError(f"{where}: {exc}", source=source) from None
        if c.total_tokens > MAX_TOKENS:
            raise FormatError(
                f"{where}: its messages have {c.total_tokens:,} tokens in all, over MAX_TOKENS = "
                f"2**53 - 1 = {MAX_TOKENS:,} (the figures need exact totals)",
                source=source,
            )


class UploadRegistry:
    """Parsed uploads by key, least recently used first, bounded by estimated bytes.

    Thread-safe (the sessions of a server run in threads). ``get`` and ``touch`` mark an upload
    used; ``add`` evicts the least recently used uploads until the new one fits.
    """

    def __init__(self, budget_bytes: int | None = None, max_messages: int | None = None) -> None:
        # None: the module's caps, read when the registry is made (tests patch them).
        self.budget_bytes = UPLOADS_BUDGET_BYTES if budget_bytes is None else budget_bytes
        self.max_messages = MAX_UPLOAD_MESSAGES if max_messages is None else max_messages
        self._items: OrderedDict[str, tuple[str, tuple[Conversation, ...], int]] = OrderedDict()
        self._skipped: dict[str, tuple[Any, ...]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def total_bytes(self) -> int:
        """Estimated bytes of every upload kept (<= budget_bytes)."""
        return self._bytes

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def keys(self) -> list[str]:
        """Keys, least recently used first."""
        with self._lock:
            return list(self._items)

    def get(self, key: str) -> tuple[str, tuple[Conversation, ...]] | None:
        """(file name, conversations) of ``key``, marked as used; None when not kept."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0], item[1]

    def skipped(self, key: str) -> tuple[Any, ...]:
        """The conversations the importer skipped in ``key``'s file (convmem ``Skipped``), or ()."""
        with self._lock:
            return self._skipped.get(key, ())

    def touch(self, key: str) -> None:
        """Mark ``key`` as used (no-op when it is not kept)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)

    # dict-like alias used by data.py
    move_to_end = touch

    def add(self, key: str, name: str, conversations: Sequence[Conversation],
            skipped: Sequence[Any] = ()) -> list[str]:
        """Check and keep an upload; return the keys evicted to make room (oldest use first).

        Raises FormatError (readable, naming the file) when the upload breaks a cap
        (:func:`check_upload`) or alone is bigger than the budget; nothing is evicted then.
        """
        conversations = tuple(conversations)
        check_upload(conversations, name, self.max_messages)
        nbytes = estimated_bytes(conversations)
        if nbytes > self.budget_bytes:
            raise FormatError(
                f"the parsed file takes about {nbytes:,} bytes in memory, over this server's "
                f"{self.budget_bytes:,}-byte budget for uploads; split the file",
                source=name,
            )
        evicted: list[str] = []
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[2]
            while self._items and self._bytes + nbytes > self.budget_bytes:
                gone, (_n, _c, size) = self._items.popitem(last=False)
                self._bytes -= size
                self._skipped.pop(gone, None)
                evicted.append(gone)
            self._items[key] = (name, conversations, nbytes)
            self._skipped[key] = tuple(skipped)
            self._bytes += nbytes
        return evicted
