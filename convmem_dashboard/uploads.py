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
of every object it reaches plus 16 bytes of allocator rounding per object: containers, dict keys
and CPython's shared singletons once per object, other strings and ints once per reference);
tests/test_hostile_memory.py checks it against tracemalloc.

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
from dataclasses import fields, is_dataclass
from itertools import chain
from operator import attrgetter
from typing import Any

from convmem import MAX_TOKENS, Conversation, FormatError, Message, ToolCall, check_text

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
    ``sys.getsizeof`` + 16 per object reached, None and bools not counted (singletons).

    Containers (and any type JSON does not decode to), dict keys, floats, small ints (-5..256)
    and str of length 0 or 1 (the objects CPython and the JSON decoder share) are counted once
    per object (by id); other str and int leaves once per reference, without an id check (most
    of the cost of a walk that checks every object). So the figure is that of the walk counting
    each object once for what the JSON decoder returns, and more when a str or int is reached
    twice (a provider role held by its record and by ``provider_roles``). Iterative, so deep
    nesting cannot overflow the stack. O(objects).
    """
    seen = {id(None), id(True), id(False)}  # containers (and other types) counted
    shared: set[int] = set()  # keys, small ints and short str counted
    stack = [value]
    pop, push, add, keys_seen = stack.pop, stack.append, seen.add, shared.issuperset
    total = 0
    while stack:
        obj = pop()
        i = id(obj)
        if i in seen:
            continue
        add(i)
        kind = type(obj)
        if kind is dict:
            total += obj.__sizeof__() + _GC_HEAD + _PER_OBJECT
            if not keys_seen(map(id, obj)):  # JSON's keys: one object per document
                total += _new_keys_bytes(obj, shared, push)
            children: Any = obj.values()
        elif kind is list or kind is tuple:
            total += obj.__sizeof__() + _GC_HEAD + _PER_OBJECT
            children = obj
        else:
            total += _other_bytes(obj, push)
            continue
        for child in children:
            kind = type(child)
            if kind is str:
                if len(child) < 2:  # '' and one-character str: CPython's shared singletons
                    i = id(child)
                    if i in shared:
                        continue
                    shared.add(i)
                total += child.__sizeof__() + _PER_OBJECT
            elif kind is int:
                if -5 <= child <= 256:  # CPython's shared small ints
                    i = id(child)
                    if i in shared:
                        continue
                    shared.add(i)
                total += child.__sizeof__() + _PER_OBJECT
            elif child is None or kind is bool:
                continue
            elif kind is float:  # rare; the decoder shares its Infinity and NaN objects
                i = id(child)
                if i in shared:
                    continue
                shared.add(i)
                total += child.__sizeof__() + _PER_OBJECT
            else:
                push(child)  # a container: counted when popped, once by id
    return total


def _new_keys_bytes(record: dict[Any, Any], shared: set[int], push: Any) -> int:
    """Bytes of the str keys of ``record`` not in ``shared`` yet (then added); other keys are
    ``push``-ed for the walk. O(keys)."""
    total = 0
    for key in record:
        if type(key) is not str:
            push(key)
            continue
        i = id(key)
        if i not in shared:
            shared.add(i)
            total += key.__sizeof__() + _PER_OBJECT
    return total


def _other_bytes(obj: Any, push: Any) -> int:
    """sys.getsizeof + 16 of a value of a type JSON does not decode to (a subclass, a root leaf,
    a dataclass such as a coding-agent session's :class:`convmem.AgentSession`), its items (dict
    keys and values, list and tuple items, dataclass fields) ``push``-ed for the walk."""
    if isinstance(obj, dict):
        for key, child in obj.items():
            push(key)
            push(child)
    elif isinstance(obj, (list, tuple)):
        for child in obj:
            push(child)
    elif is_dataclass(obj) and not isinstance(obj, type):
        for f in fields(obj):
            push(getattr(obj, f.name))
    return sys.getsizeof(obj) + _PER_OBJECT


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
        # and the conversation's envelope (convmem.Conversation keeps them; issue 7); a
        # coding-agent session's envelope (AgentSession: usage rows, compactions, skipped lines)
        # is kept even without the records.
        total += _decoded_bytes((c.records, c.parts, c.provider_roles, c.envelope))
        total += _texts_bytes(c.listing_ids) + _tool_calls_bytes(c.tool_calls)
        total += _messages_bytes(c.messages)
    return total


def _texts_bytes(texts: Sequence[Any]) -> int:
    """sys.getsizeof + 16 of each item of ``texts`` (once per reference): ``str.__sizeof__`` at C
    speed when every item is an exact str (what getsizeof answers for one). O(len(texts))."""
    if _JUST_STR.issuperset(map(type, texts)):
        return sum(map(str.__sizeof__, texts)) + _PER_OBJECT * len(texts)
    return sum(map(sys.getsizeof, texts)) + _PER_OBJECT * len(texts)


def _tool_calls_bytes(calls: Sequence[ToolCall]) -> int:
    """sys.getsizeof + 16 of each tool call and of its id, name, arguments and message id."""
    if _JUST_TOOL_CALL.issuperset(map(type, calls)):
        own = _TOOL_CALL_BYTES * len(calls)
    else:
        own = sum(map(sys.getsizeof, calls))
    fields = list(chain.from_iterable(map(_TOOL_CALL_FIELDS, calls)))
    return own + _PER_OBJECT * len(calls) + _texts_bytes(fields)


#: sys.getsizeof of a Message: the same for every one (a slotted class has no per-object dict).
_MESSAGE_BYTES = sys.getsizeof(Message("m", "user", 0))
#: The same for a ToolCall; its four str fields, read at once.
_TOOL_CALL_BYTES = sys.getsizeof(ToolCall("k", "f", "{}", "m"))
_TOOL_CALL_FIELDS = attrgetter("id", "name", "arguments", "message_id")
_JUST_STR = frozenset((str,))
_JUST_TOOL_CALL = frozenset((ToolCall,))


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
            if not _all_ascii(c.listing_ids):
                for x in c.listing_ids:
                    check_text("listing id", x)
            calls = c.tool_calls
            if not (_all_ascii([t.name for t in calls]) and _all_ascii([t.arguments for t in calls])):
                for t in calls:
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


def _all_ascii(texts: Sequence[Any]) -> bool:
    """True when every item is an exact, ASCII str (check_text passes it: nothing to encode),
    tested at C speed; False sends the caller to check_text item by item. O(len(texts))."""
    return _JUST_STR.issuperset(map(type, texts)) and all(map(str.isascii, texts))


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
