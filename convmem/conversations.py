"""Conversations as convmem values, and the load / parse / dump entry points.

A :class:`Conversation` is a frozen value: its id, the shopper's ``user_id``, its
:class:`~convmem.Message` tuple (tool calls linked by id) and the listing ids it mentions, in order
of mention with repeats — the input of Part 3 (``evict_conversations``). It also keeps, per
message, the provider record it came from and the provider's own role, so what History keeps can
be written back out in the format it came in (:meth:`Conversation.keep` +
:func:`dump_conversations`).

Reading files is :mod:`convmem.formats` (one module per provider format, a registry
:data:`~convmem.formats.FORMATS`, a shared builder); this module holds the values and re-exports
the entry points :func:`load_conversations`, :func:`parse_conversations` and
:func:`dump_conversations`, which return a :class:`LoadResult`: the conversations that loaded and,
for every conversation that could not, a :class:`Skipped` with its line, field, value and reason.

>>> r = parse_conversations(
...     '[{"role": "user", "content": "Is 1234567890 in stock?", "tokens": 7},'
...     ' {"role": "assistant", "content": null, "tokens": 12, "tool_calls": [{"id": "k1",'
...     ' "type": "function", "function": {"name": "get_item", "arguments": "{}"}}]},'
...     ' {"role": "tool", "tool_call_id": "k1", "content": "yes", "tokens": 1}]')
>>> c = r[0]
>>> r.format, c.id, [m.id for m in c.messages], c.messages[2].tool_call_id, c.total_tokens
('openai-chat', 'c1', ['c1:0', 'c1:1', 'c1:2'], 'k1', 20)
>>> c.listing_ids
('1234567890',)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from .limits import UPLOAD_MAX_BYTES
from .message import Message

__all__ = [
    "Conversation",
    "DEFAULT_MAX_BYTES",
    "FORMATS",
    "LISTING_ID_PATTERN",
    "LoadResult",
    "Skipped",
    "ToolCall",
    "dump_conversations",
    "extract_listing_ids",
    "group_by_user",
    "load_conversations",
    "make_listing_extractor",
    "parse_conversations",
    "to_openai_jsonl",
]

#: The size cap of :func:`load_conversations` / :func:`parse_conversations`: the one upload cap
#: shared with the dashboard and its server config (:data:`convmem.limits.UPLOAD_MAX_BYTES`).
DEFAULT_MAX_BYTES = UPLOAD_MAX_BYTES
#: A listing id: exactly 10 ASCII digits, not part of a longer run of ASCII digits.
LISTING_ID_PATTERN = re.compile(r"(?<![0-9])[0-9]{10}(?![0-9])")

_TITLE_CHARS = 60
# Every byte that is not an ASCII digit becomes a space; then split (all at C speed).
_ASCII_DIGITS = bytes(c if 48 <= c <= 57 else 32 for c in range(256))


def extract_listing_ids(text: str) -> list[str]:
    """The 10-digit listing ids in ``text``, in order, with repeats. O(len(text)).

    A listing id is a maximal run of exactly 10 ASCII digits (:data:`LISTING_ID_PATTERN`; other
    Unicode digits are not listing digits). Computed by a byte translate and split, 5-10x the
    regex: each non-ASCII character becomes one ``?`` first, so runs end where the regex's do.

    >>> extract_listing_ids("swap 1234567890 for 0987654321, not 12345678901 or 123456789")
    ['1234567890', '0987654321']
    >>> extract_listing_ids("١٢٣1234567890 é0987654321")
    ['1234567890', '0987654321']
    """
    raw = text.encode("ascii", "replace") if not text.isascii() else text.encode()
    return [r for r in raw.translate(_ASCII_DIGITS).decode("ascii").split() if len(r) == 10]


def make_listing_extractor(
    catalog_ids: Iterable[str] | None = None, *, pattern: str | re.Pattern[str] = LISTING_ID_PATTERN
) -> Callable[[str], list[str]]:
    """A listing extractor: ``pattern`` matches, kept only when in ``catalog_ids`` (if given).

    The default 10-digit pattern also matches other 10-digit ids (the real retail data's
    ``product_id`` values are 10 digits too); a catalog of item ids keeps only listings.
    A pattern with one capturing group yields the group (``r"item-(\\d+)"``: the digits); an
    empty match is not an id (``r"\\d*"`` yields the runs of digits only).
    Returns ``callable(text) -> list[str]``, O(len(text)) per call.

    Raises:
        TypeError: a catalog id is not a str.
        ValueError: the pattern has more than one capturing group (names it and the count).

    >>> only = make_listing_extractor({"1234567890"})
    >>> only("product 5555555555, item 1234567890")
    ['1234567890']
    """
    default = pattern is LISTING_ID_PATTERN
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern
    if rx.groups > 1:
        raise ValueError(
            f"pattern {rx.pattern!r} has {rx.groups} capturing groups; a listing pattern may have "
            f"at most one, the id (make the others non-capturing: (?:...))"
        )
    find = extract_listing_ids if default else _nonempty(rx.findall)
    if catalog_ids is None:
        return find
    allowed = frozenset(catalog_ids)
    for x in allowed:
        if not isinstance(x, str):
            raise TypeError(f"catalog_ids must hold str values, got {x!r}")

    def extract(text: str) -> list[str]:
        return [x for x in find(text) if x in allowed]

    return extract


def _nonempty(findall: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    def find(text: str) -> list[str]:
        return [x for x in findall(text) if x]

    return find


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call made by an assistant message.

    Attributes:
        id: the call id (what a tool message's ``tool_call_id`` names); generated as
            ``f"{message_id}#{k}"`` when the provider gave none (legacy ``function_call``).
        name: the function name.
        arguments: the arguments as JSON text (OpenAI's string as given; Anthropic's ``input``
            as compact JSON).
        message_id: the id of the assistant message that made the call.
    """

    id: str
    name: str
    arguments: str
    message_id: str


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation: a frozen, slotted value.

    Attributes:
        id: unique within its file.
        user_id: the shopper, or None when the file does not say.
        messages: in conversation order; assistant ``tool_call_ids`` and tool ``tool_call_id``
            link calls to results.
        listing_ids: the listing ids mentioned, in order of mention, with repeats.
        tool_calls: every tool call's name and arguments, in call order (for display and export).
        source: the file (or upload) name it came from.
        source_format: the :data:`~convmem.formats.FORMATS` name it was read as
            (``"openai-chat"``, ``"anthropic"``, ``"tau-bench"``, ``"csv"``...), or None.
        records: per message, the provider record it came from, as decoded (one record may give
            several messages: an Anthropic user turn with tool results); empty when built in code.
        parts: per message, the indices of its record's content blocks that it holds, or None for
            the whole record; empty when every message holds a whole record.
        provider_roles: per message, the provider's own role (``"developer"``, ``"function"``,
            ``"human"``...); empty when built in code.
        envelope: the conversation-level record (the object around the message list: ids,
            Anthropic ``system``, a tau-bench row...), or None for a bare message list.
        total_tokens: the sum of the messages' tokens (computed once, O(n)).

    ``source``, ``source_format``, ``records``, ``parts``, ``provider_roles`` and ``envelope``
    are metadata: equality and hashing ignore them.

    Raises:
        TypeError: a field has the wrong type (lists are accepted and stored as tuples).
        ValueError: an empty id; per-message metadata not aligned with ``messages``.

    >>> m = Message("m1", "user", 3, content="Hi there")
    >>> c = Conversation("c", "u1", (m,), ("0123456789",))
    >>> c.total_tokens, c.title, c.distinct_listing_ids
    (3, 'Hi there', ('0123456789',))
    """

    id: str
    user_id: str | None
    messages: tuple[Message, ...]
    listing_ids: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    source: str | None = field(default=None, compare=False)
    source_format: str | None = field(default=None, compare=False)
    records: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    parts: tuple[tuple[int, ...] | None, ...] = field(default=(), compare=False, repr=False)
    provider_roles: tuple[str, ...] = field(default=(), compare=False, repr=False)
    envelope: Any = field(default=None, compare=False, repr=False)
    total_tokens: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        lazy = _LISTING_SLOT.__get__(self) is LAZY_LISTINGS
        if not isinstance(self.id, str):
            raise TypeError(f"Conversation.id must be a str, got {self.id!r}")
        if not self.id:
            raise ValueError("Conversation.id must be a non-empty str, got ''")
        if self.user_id is not None and not isinstance(self.user_id, str):
            raise TypeError(f"Conversation.user_id must be a str or None, got {self.user_id!r}")
        for name, kind in (("messages", Message), ("listing_ids", str), ("tool_calls", ToolCall)):
            if lazy and name == "listing_ids":
                continue
            value = getattr(self, name)
            if isinstance(value, list):
                value = tuple(value)
                object.__setattr__(self, name, value)
            if not isinstance(value, tuple):
                raise TypeError(f"Conversation.{name} must be a tuple, got {value!r}")
            for item in value:
                if type(item) is not kind and not isinstance(item, kind):
                    raise TypeError(
                        f"Conversation.{name} must hold {kind.__name__} values, got {item!r}"
                    )
        n = len(self.messages)
        for name in ("records", "parts", "provider_roles"):
            value = getattr(self, name)
            if isinstance(value, list):
                value = tuple(value)
                object.__setattr__(self, name, value)
            if not isinstance(value, tuple):
                raise TypeError(f"Conversation.{name} must be a tuple, got {value!r}")
            if value and len(value) != n:
                raise ValueError(
                    f"Conversation.{name} must have one entry per message ({n}) or none, "
                    f"got {len(value)}"
                )
        object.__setattr__(self, "total_tokens", sum(m.tokens for m in self.messages))

    @property
    def title(self) -> str | None:
        """The first user message's text, whitespace collapsed, cut to 60 characters (or None)."""
        for m in self.messages:
            if m.role == "user" and m.content:
                text = " ".join(m.content.split())
                return text if len(text) <= _TITLE_CHARS else text[: _TITLE_CHARS - 1] + "…"
        return None

    @property
    def distinct_listing_ids(self) -> tuple[str, ...]:
        """The listing ids mentioned, each once, in first-mention order. O(mentions)."""
        return tuple(dict.fromkeys(self.listing_ids))

    def keep(
        self,
        ids: Iterable[str],
        *,
        listing_extractor: Callable[[str], Iterable[str]] | None = None,
    ) -> Conversation:
        """This conversation with only the messages whose id is in ``ids`` (what History kept).

        Order stays conversation order; records, parts and provider roles follow their messages;
        tool calls follow their assistant message; listing ids are extracted again from the kept
        messages' content and call arguments (``listing_extractor``, default
        :func:`extract_listing_ids`). Export is ``dump_conversations([c.keep(kept), ...], fmt)``.
        O(messages + kept text).

        Raises:
            TypeError: ``ids`` is a str, or holds a non-str.
            ValueError: an id that is not a message of this conversation (names it).

        >>> c = Conversation("c", None, (Message("a", "user", 1, content="1234567890"),
        ...                              Message("b", "user", 2, content="x")))
        >>> k = c.keep(["b"])
        >>> [m.id for m in k.messages], k.listing_ids, k.total_tokens
        (['b'], (), 2)
        """
        if isinstance(ids, str):
            raise TypeError(f"keep expects an iterable of message ids, not a str: {ids!r}")
        wanted = set()
        for x in ids:
            if not isinstance(x, str):
                raise TypeError(f"keep expects message ids (str), got {x!r}")
            wanted.add(x)
        idx = [i for i, m in enumerate(self.messages) if m.id in wanted]
        if len(idx) != len(wanted):
            known = {m.id for m in self.messages}
            missing = sorted(wanted - known)
            raise ValueError(f"conversation {self.id!r} has no message {missing[0]!r}")
        messages = tuple(self.messages[i] for i in idx)
        kept_ids = {m.id for m in messages}
        calls = tuple(tc for tc in self.tool_calls if tc.message_id in kept_ids)
        listings: Any = LAZY_LISTINGS  # the default extractor: on first read
        if listing_extractor is not None:
            listings = []
            by_msg: dict[str, list[ToolCall]] = {}
            for tc in calls:
                by_msg.setdefault(tc.message_id, []).append(tc)
            for m in messages:
                if m.content:
                    listings.extend(listing_extractor(m.content))
                for tc in by_msg.get(m.id, ()):
                    if tc.arguments:
                        listings.extend(listing_extractor(tc.arguments))
            listings = tuple(listings)

        def pick(values: tuple[Any, ...]) -> tuple[Any, ...]:
            return tuple(values[i] for i in idx) if values else ()

        return Conversation(
            self.id, self.user_id, messages, listings, calls,
            source=self.source, source_format=self.source_format,
            records=pick(self.records), parts=pick(self.parts),
            provider_roles=pick(self.provider_roles), envelope=self.envelope,
        )


#: ``listing_ids=LAZY_LISTINGS`` (used by the loader) defers extraction to the first read of
#: ``Conversation.listing_ids``: the default extractor over each message's content, then its
#: calls' arguments, in message order (what the loader would have computed; a load does not pay
#: for listings a caller never reads).
LAZY_LISTINGS: tuple[str, ...] = ("<lazy listing ids>",)
_LISTING_SLOT = Conversation.__dict__["listing_ids"]


def _compute_listings(conv: Conversation) -> tuple[str, ...]:
    texts: list[str] = []
    calls = conv.tool_calls
    k, n = 0, len(calls)
    for m in conv.messages:
        if m.content:
            texts.append(m.content)
        if m.tool_call_ids:
            while k < n and calls[k].message_id != m.id:
                k += 1
            while k < n and calls[k].message_id == m.id:
                if calls[k].arguments:
                    texts.append(calls[k].arguments)
                k += 1
    return tuple(extract_listing_ids("\n".join(texts)))


def _get_listings(self: Conversation) -> tuple[str, ...]:
    value = _LISTING_SLOT.__get__(self)
    if value is LAZY_LISTINGS:
        value = _compute_listings(self)
        _LISTING_SLOT.__set__(self, value)
    return value


Conversation.listing_ids = property(  # type: ignore[assignment]
    _get_listings, _LISTING_SLOT.__set__,
    doc="The listing ids mentioned, in order of mention, with repeats (computed on first read "
        "when the loader deferred them). O(1) after the first read.")


@dataclass(frozen=True, slots=True)
class Skipped:
    """A conversation of a file that did not load, and why.

    Attributes:
        conversation_id: its id when known (else None).
        line: 1-based line (JSONL, CSV), or index of the conversation (message, for a document
            that is one conversation) in a JSON document; None when not known.
        field: the field at fault (a JSON path within the record), or None.
        value: a short repr of the offending value, or None.
        reason: readable: what is wrong.
    """

    conversation_id: str | None
    line: int | None
    field: str | None
    value: str | None
    reason: str

    def __str__(self) -> str:
        where = []
        if self.conversation_id is not None:
            where.append(f"conversation {self.conversation_id!r}")
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        return (", ".join(where) + ": " if where else "") + self.reason


@dataclass(frozen=True, slots=True)
class LoadResult(Sequence[Conversation]):
    """What a load returned: a read-only sequence of the conversations that loaded, plus the skips.

    Attributes:
        conversations: in file order.
        skipped: one :class:`Skipped` per conversation that did not load, in file order.
        format: the :data:`~convmem.formats.FORMATS` name the file was read as (the first
            conversation's when records differ).
        source: the file (or upload) name.

    ``len``, iteration and indexing go to ``conversations``, so code written for the list the
    loader used to return keeps working; ``result == [c1, c2]`` compares the conversations.
    """

    conversations: tuple[Conversation, ...]
    skipped: tuple[Skipped, ...] = ()
    format: str = ""
    source: str = "<input>"

    @property
    def total(self) -> int:
        """Conversations in the file: loaded plus skipped."""
        return len(self.conversations) + len(self.skipped)

    def summary(self) -> str:
        """``"Loaded N of M conversations; K skipped"`` (or ``"Loaded N conversations"``)."""
        n = len(self.conversations)
        if not self.skipped:
            return f"Loaded {n:,} conversation{'s' if n != 1 else ''}"
        return f"Loaded {n:,} of {self.total:,} conversations; {len(self.skipped):,} skipped"

    def __len__(self) -> int:
        return len(self.conversations)

    @overload
    def __getitem__(self, i: int) -> Conversation: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Conversation]: ...

    def __getitem__(self, i: int | slice) -> Any:
        return self.conversations[i]

    def __iter__(self) -> Iterator[Conversation]:
        return iter(self.conversations)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LoadResult):
            return (self.conversations, self.skipped) == (other.conversations, other.skipped)
        if isinstance(other, (list, tuple)):
            return list(self.conversations) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def group_by_user(conversations: Iterable[Conversation]) -> dict[str | None, list[Conversation]]:
    """Each shopper's conversations, in file order (oldest first): the input of Part 3.

    Keys appear in first-appearance order. Conversations whose ``user_id`` is None share the key
    None (one "unknown shopper" bucket, not a shopper). O(n).

    Raises:
        TypeError: an item is not a :class:`Conversation`.

    >>> a, b, c = (Conversation(i, u, ()) for i, u in [("a", "u1"), ("b", None), ("c", "u1")])
    >>> {k: [x.id for x in v] for k, v in group_by_user([a, b, c]).items()}
    {'u1': ['a', 'c'], None: ['b']}
    """
    groups: dict[str | None, list[Conversation]] = {}
    for conv in conversations:
        if not isinstance(conv, Conversation):
            raise TypeError(f"group_by_user expects Conversation values, got {conv!r}")
        groups.setdefault(conv.user_id, []).append(conv)
    return groups


def to_openai_jsonl(conversations: Iterable[Conversation], *, include_tokens: bool = True) -> str:
    """Write conversations as OpenAI chat JSONL that :func:`load_conversations` reads back equal.

    One line per conversation: ``{"id", "user_id", "messages": [...]}``; each message keeps its
    ``id``, ``role``, ``content``, ``tool_calls`` (names and arguments from
    ``Conversation.tool_calls``), ``tool_call_id`` and, with ``include_tokens``, its ``tokens``
    (so counts survive the round trip whatever the reader's counter). A None content is written
    as null on an assistant message that calls tools, else as ``""``. Keys keep a fixed order and
    non-ASCII is written as is, so the output is deterministic. O(total size).

    Raises:
        TypeError: an item is not a Conversation.
        ValueError: an assistant message's call id has no :class:`ToolCall` (e.g. CSV input).

    >>> c = Conversation("c1", "u", (Message("m", "user", 2, content="hi"),))
    >>> to_openai_jsonl([c])
    '{"id":"c1","user_id":"u","messages":[{"id":"m","role":"user","content":"hi","tokens":2}]}\\n'
    >>> parse_conversations(to_openai_jsonl([c])) == [c]
    True
    """
    lines = []
    for conv in conversations:
        if not isinstance(conv, Conversation):
            raise TypeError(f"to_openai_jsonl expects Conversation values, got {conv!r}")
        calls = {(tc.message_id, tc.id): tc for tc in conv.tool_calls}
        out_messages = []
        for m in conv.messages:
            d: dict[str, Any] = {"id": m.id, "role": m.role}
            if m.content is None and not (m.role == "assistant" and m.tool_call_ids):
                d["content"] = ""
            else:
                d["content"] = m.content
            if m.tool_call_ids:
                out_calls = []
                for cid in m.tool_call_ids:
                    tc = calls.get((m.id, cid))
                    if tc is None:
                        raise ValueError(
                            f"conversation {conv.id!r}: message {m.id!r} calls {cid!r} but "
                            "Conversation.tool_calls has no name/arguments for it"
                        )
                    out_calls.append(
                        {"id": cid, "type": "function",
                         "function": {"name": tc.name, "arguments": tc.arguments}}
                    )
                d["tool_calls"] = out_calls
            if m.tool_call_id is not None:
                d["tool_call_id"] = m.tool_call_id
            if include_tokens:
                d["tokens"] = m.tokens
            out_messages.append(d)
        record = {"id": conv.id, "user_id": conv.user_id, "messages": out_messages}
        lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


# The readers live in convmem.formats, which needs the values above: imported last.
from .formats import FORMATS  # noqa: E402
from .formats._load import (  # noqa: E402
    dump_conversations,
    load_conversations,
    parse_conversations,
)
