"""Conversation files: load OpenAI, Anthropic, tau-bench and CSV conversations as convmem values.

A :class:`Conversation` is a frozen value: its id, the shopper's ``user_id``, its
:class:`~convmem.Message` tuple (tool calls linked by id) and the listing ids it mentions, in order
of mention with repeats — the input of Part 3 (``evict_conversations``).

Formats (``format="auto"`` detects them from the content):

========== ==================================================================================
openai     a JSON document: a list of OpenAI chat messages (one conversation), an object
           ``{"messages": [...], "id"?, "user_id"?}``, or a list of such objects
jsonl      one conversation per line: a list of messages or an object with ``"messages"``
           (each line OpenAI or Anthropic, detected per line)
tau-bench  a tau-bench run file: a JSON list of rows ``{task_id, trial, info, traj}``;
           id ``f"task{task_id}-trial{trial}"``, user_id ``info.task.user_id``
anthropic  Anthropic Messages: ``{"system"?, "messages": [...]}`` as one object, a list of them,
           or JSONL of them; ``tool_use`` blocks become the assistant's ``tool_call_ids``,
           each ``tool_result`` block becomes its own ``"tool"`` message (before a ``"user"``
           message holding the text blocks, if any)
csv        header ``id,role,tokens`` plus optional ``content``, ``conversation_id``,
           ``user_id``, ``tool_call_ids`` (space-separated) and ``tool_call_id``;
           tokens are given, never counted
========== ==================================================================================

Decisions (also in docs/decisions.md):

* Tokens: a message's own ``"tokens"`` (a convmem extension, written by :func:`to_openai_jsonl`)
  is used as given; otherwise the counter counts content plus each call's name and arguments
  (:mod:`convmem.tokens`; the default counter is loaded only if some message needs counting).
* Message ids: the message's own ``"id"`` if present, else ``f"{conversation_id}:{index}"``
  (0-based index among the conversation's messages). A duplicate id in one conversation is an error.
* Conversation ids: the object's ``"id"`` if present, else ``f"c{k}"`` (1-based, in file order).
  A duplicate conversation id in one file is an error.
* A tool result whose ``tool_call_id`` answers no earlier call of its conversation, or answers a
  call already answered, is an **error** (field ``tool_call_id``), not a flag: every result in the
  real retail data is linked, and an orphan result breaks ``keep_tool_groups``. A call that is
  never answered is fine (a conversation may end anywhere). In CSV a tool row may leave
  tool_call_id empty.
* Content lists keep only text parts (joined with ``"\\n"``); any other part type (images, audio,
  thinking) is an error naming it, so nothing is dropped silently. ``content`` may be null or
  absent only on an assistant message that calls tools. Legacy ``function_call`` is an error.
* Unknown extra keys (``name``, ``model``, ``reward``...) are ignored; unknown CSV columns are
  errors.
* Listing ids: ``extract_listing_ids`` (a strict 10-digit match) runs over each message's content,
  then each tool call's arguments, in message order; any ``callable(text) -> iterable[str]`` may
  replace it.
* :func:`group_by_user` puts conversations with no user id under the key ``None`` (one bucket).

Errors: every malformed input raises :class:`~convmem.FormatError` naming the source, the line
(1-based line for JSONL and CSV; for a JSON document the 1-based index of the message when the
document is one conversation, else of the conversation) and the field (a JSON path within that
record, 0-based indices: ``"traj[4].tool_call_id"``), with a readable reason. Only a missing or
unreadable file raises ``OSError`` instead.

>>> convs = parse_conversations(
...     '[{"role": "user", "content": "Is 1234567890 in stock?", "tokens": 7},'
...     ' {"role": "assistant", "content": null, "tokens": 12, "tool_calls": [{"id": "k1",'
...     ' "type": "function", "function": {"name": "get_item", "arguments": "{}"}}]},'
...     ' {"role": "tool", "tool_call_id": "k1", "content": "yes", "tokens": 1}]')
>>> c = convs[0]
>>> c.id, [m.id for m in c.messages], c.messages[1].tool_call_ids, c.listing_ids, c.total_tokens
('c1', ['c1:0', 'c1:1', 'c1:2'], ('k1',), ('1234567890',), 20)
>>> parse_conversations('[{"role": "bot", "content": "hi"}]', source_name="up.json")
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
convmem.errors.FormatError: up.json, line 1, field 'role': unknown role 'bot' (expected one of ...)
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .errors import FormatError
from .message import ROLES, Message
from .tokens import TokenCounter, default_counter

__all__ = [
    "Conversation",
    "DEFAULT_MAX_BYTES",
    "FORMATS",
    "LISTING_ID_PATTERN",
    "ToolCall",
    "extract_listing_ids",
    "group_by_user",
    "load_conversations",
    "make_listing_extractor",
    "parse_conversations",
    "to_openai_jsonl",
]

#: The size cap of :func:`load_conversations` / :func:`parse_conversations` (50 MiB).
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
#: Accepted values of ``format``.
FORMATS: tuple[str, ...] = ("auto", "openai", "jsonl", "tau-bench", "anthropic", "csv")
#: A listing id: exactly 10 digits, not part of a longer digit run.
LISTING_ID_PATTERN = re.compile(r"(?<!\d)\d{10}(?!\d)")

_CSV_REQUIRED = ("id", "role", "tokens")
_CSV_OPTIONAL = ("content", "conversation_id", "user_id", "tool_call_ids", "tool_call_id")
_TITLE_CHARS = 60


def extract_listing_ids(text: str) -> list[str]:
    """The 10-digit listing ids in ``text``, in order, with repeats. O(len(text)).

    >>> extract_listing_ids("swap 1234567890 for 0987654321, not 12345678901 or 123456789")
    ['1234567890', '0987654321']
    """
    return LISTING_ID_PATTERN.findall(text)


def make_listing_extractor(
    catalog_ids: Iterable[str] | None = None, *, pattern: str | re.Pattern[str] = LISTING_ID_PATTERN
) -> Callable[[str], list[str]]:
    """A listing extractor: ``pattern`` matches, kept only when in ``catalog_ids`` (if given).

    The default 10-digit pattern also matches other 10-digit ids (the real retail data's
    ``product_id`` values are 10 digits too); a catalog of item ids keeps only listings.
    Returns ``callable(text) -> list[str]``, O(len(text)) per call.

    Raises:
        TypeError: a catalog id is not a str.

    >>> only = make_listing_extractor({"1234567890"})
    >>> only("product 5555555555, item 1234567890")
    ['1234567890']
    """
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern
    if catalog_ids is None:
        return rx.findall
    allowed = frozenset(catalog_ids)
    for x in allowed:
        if not isinstance(x, str):
            raise TypeError(f"catalog_ids must hold str values, got {x!r}")

    def extract(text: str) -> list[str]:
        return [x for x in rx.findall(text) if x in allowed]

    return extract


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call made by an assistant message.

    Attributes:
        id: the call id (what a tool message's ``tool_call_id`` names).
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
        source_format: ``"openai-json"``, ``"openai-jsonl"``, ``"anthropic-json"``,
            ``"anthropic-jsonl"``, ``"tau-bench"``, ``"csv"`` or None (built in code).
        total_tokens: the sum of the messages' tokens (computed once, O(n)).

    ``source`` and ``source_format`` are metadata: equality and hashing ignore them, so a
    conversation written with :func:`to_openai_jsonl` and read back compares equal.

    Raises:
        TypeError: a field has the wrong type (lists are accepted and stored as tuples).
        ValueError: an empty id.

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
    total_tokens: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str):
            raise TypeError(f"Conversation.id must be a str, got {self.id!r}")
        if not self.id:
            raise ValueError("Conversation.id must be a non-empty str, got ''")
        if self.user_id is not None and not isinstance(self.user_id, str):
            raise TypeError(f"Conversation.user_id must be a str or None, got {self.user_id!r}")
        for name, kind in (("messages", Message), ("listing_ids", str), ("tool_calls", ToolCall)):
            value = getattr(self, name)
            if isinstance(value, list):
                value = tuple(value)
                object.__setattr__(self, name, value)
            if not isinstance(value, tuple):
                raise TypeError(f"Conversation.{name} must be a tuple, got {value!r}")
            for item in value:
                if not isinstance(item, kind):
                    raise TypeError(
                        f"Conversation.{name} must hold {kind.__name__} values, got {item!r}"
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


# ----------------------------------------------------------------------------------------------
# Parsing


def _kind(value: Any) -> str:
    """JSON type name of a decoded value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Where:
    """Maps (message index, sub-field) to FormatError's (line, field) for one conversation."""

    __slots__ = ("line", "prefix", "per_message")

    def __init__(self, line: int | None, prefix: str, per_message: bool) -> None:
        self.line = line  # the record's line (JSONL/CSV) or 1-based conversation index
        self.prefix = prefix  # JSON path of the message list inside the record
        self.per_message = per_message  # the document is one conversation: line = message index

    def msg(self, i: int, sub: str | None = None) -> tuple[int | None, str | None]:
        if self.per_message:
            return i + 1, sub
        path = f"{self.prefix}[{i}]"
        return self.line, (f"{path}.{sub}" if sub else path)

    def conv(self, sub: str | None) -> tuple[int | None, str | None]:
        return (None if self.per_message else self.line), sub


class _Builder:
    """Accumulates one conversation's messages, checking ids and tool-call links."""

    def __init__(self, parser: _Parser, conv_id: str) -> None:
        self.p = parser
        self.conv_id = conv_id
        self.messages: list[Message] = []
        self.ids: set[str] = set()
        self.calls: dict[str, int] = {}  # call id -> 1-based position of its message
        self.answered: dict[str, int] = {}
        self.tool_calls: list[ToolCall] = []
        self.listings: list[str] = []

    def next_id(self, own: Any, where: tuple[int | None, str | None], suffix: str = "") -> str:
        if own is None:
            return f"{self.conv_id}:{len(self.messages)}"
        if not isinstance(own, str) or not own:
            self.p.fail(f"message id must be a non-empty string, got {_short(own)}", where)
        return own + suffix

    def add(
        self,
        *,
        msg_id: str,
        role: str,
        content: str | None,
        calls: Sequence[tuple[str, str, str]] = (),  # (call id, name, arguments)
        answers: str | None = None,
        tokens: int | None,
        where_id: tuple[int | None, str | None],
        where_calls: Callable[[int], tuple[int | None, str | None]] | None = None,
        where_answer: tuple[int | None, str | None] = (None, None),
    ) -> None:
        if msg_id in self.ids:
            self.p.fail(
                f"duplicate message id {msg_id!r} in conversation {self.conv_id!r}", where_id
            )
        position = len(self.messages) + 1
        for j, (call_id, _name, _args) in enumerate(calls):
            if call_id in self.calls:
                where = where_calls(j) if where_calls else where_id
                self.p.fail(
                    f"duplicate tool call id {call_id!r} (already used by message "
                    f"{self.calls[call_id]} of conversation {self.conv_id!r})",
                    where,
                )
            self.calls[call_id] = position
        if answers is not None:
            if answers not in self.calls:
                self.p.fail(
                    f"tool_call_id {answers!r} answers no earlier tool call in conversation "
                    f"{self.conv_id!r}",
                    where_answer,
                )
            if answers in self.answered:
                self.p.fail(
                    f"tool_call_id {answers!r} was already answered by message "
                    f"{self.answered[answers]} of conversation {self.conv_id!r}",
                    where_answer,
                )
            self.answered[answers] = position
        if tokens is None:
            tokens = self.p.counter.count_message(
                role, content, [(name, args) for _cid, name, args in calls]
            )
        try:
            message = Message(
                msg_id,
                role,
                tokens,
                content=content,
                tool_call_ids=tuple(cid for cid, _n, _a in calls),
                tool_call_id=answers,
            )
        except (TypeError, ValueError) as exc:  # pragma: no cover - fields are checked above
            self.p.fail(str(exc), where_id)
        self.messages.append(message)
        self.ids.add(msg_id)
        for cid, name, args in calls:
            self.tool_calls.append(ToolCall(cid, name, args, msg_id))
        extract = self.p.extractor
        if content:
            self.listings.extend(self.p.check_ids(extract(content)))
        for _cid, _name, args in calls:
            if args:
                self.listings.extend(self.p.check_ids(extract(args)))

    def build(self, user_id: str | None, fmt: str) -> Conversation:
        return Conversation(
            self.conv_id,
            user_id,
            tuple(self.messages),
            tuple(self.listings),
            tuple(self.tool_calls),
            source=self.p.source,
            source_format=fmt,
        )


class _Parser:
    def __init__(
        self,
        source: str,
        counter: TokenCounter | None,
        extractor: Callable[[str], Iterable[str]] | None,
    ) -> None:
        self.source = source
        self._counter = counter
        self.extractor = extract_listing_ids if extractor is None else extractor
        self.conv_ids: set[str] = set()
        self.auto_ids = 0

    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = default_counter()
        return self._counter

    def fail(self, reason: str, where: tuple[int | None, str | None] = (None, None)) -> Any:
        raise FormatError(reason, source=self.source, line=where[0], field=where[1])

    @staticmethod
    def check_ids(ids: Iterable[str]) -> list[str]:
        out = list(ids)
        for x in out:
            if not isinstance(x, str):
                raise TypeError(f"listing_extractor must yield str values, got {x!r}")
        return out

    # -- conversation-level ----------------------------------------------------------------

    def conv_id(self, obj: dict[str, Any], key: str, where: _Where) -> str:
        self.auto_ids += 1
        raw = obj.get(key)
        if raw is None:
            cid = f"c{self.auto_ids}"
        elif isinstance(raw, str) and raw:
            cid = raw
        elif isinstance(raw, int) and not isinstance(raw, bool):
            cid = str(raw)
        else:
            self.fail(
                f"conversation id must be a non-empty string or an integer, got {_short(raw)}",
                where.conv(key),
            )
        return self.claim(cid, where.conv(key))

    def claim(self, cid: str, where: tuple[int | None, str | None]) -> str:
        if cid in self.conv_ids:
            self.fail(f"duplicate conversation id {cid!r}", where)
        self.conv_ids.add(cid)
        return cid

    def user_id(self, raw: Any, where: tuple[int | None, str | None]) -> str | None:
        if raw is None:
            return None
        if isinstance(raw, str):
            return raw
        if isinstance(raw, int) and not isinstance(raw, bool):
            return str(raw)
        return self.fail(f"user_id must be a string or null, got {_short(raw)}", where)

    def conversation_object(
        self, obj: Any, where: _Where, dialect: str, container: str
    ) -> Conversation:
        """An object with "messages" (OpenAI or Anthropic) or a tau-bench row with "traj"."""
        if not isinstance(obj, dict):
            self.fail(
                "a conversation must be an object with 'messages' or a list of messages, "
                f"got {_kind(obj)}",
                where.conv(None),
            )
        if "traj" in obj and "messages" not in obj and dialect != "anthropic":
            return self.tau_row(obj, where, container)
        if "messages" not in obj:
            if "role" in obj:
                self.fail(
                    "this is a single message, not a conversation: JSONL holds one conversation "
                    "per line (a list of messages or an object with 'messages')",
                    where.conv(None),
                )
            self.fail("missing 'messages'", where.conv("messages"))
        messages = obj["messages"]
        if not isinstance(messages, list):
            self.fail(f"'messages' must be a list, got {_kind(messages)}", where.conv("messages"))
        if dialect == "auto":
            dialect = _dialect(obj, messages)
        elif dialect == "openai" and "system" in obj:
            self.fail(
                "a top-level 'system' is Anthropic's format (use format='anthropic'); OpenAI puts "
                "the system prompt in a message with role 'system'",
                where.conv("system"),
            )
        cid = self.conv_id(obj, "id", where)
        uid = self.user_id(obj.get("user_id"), where.conv("user_id"))
        if dialect == "anthropic":
            b = self.anthropic_messages(obj, messages, cid, where)
        else:
            b = self.openai_messages(messages, cid, where)
        return b.build(uid, f"{dialect}-{container}")

    def tau_row(self, row: Any, where: _Where, container: str = "json") -> Conversation:
        if not isinstance(row, dict):
            self.fail(f"a tau-bench row must be an object, got {_kind(row)}", where.conv(None))
        parts = []
        for key in ("task_id", "trial"):
            if key not in row:
                self.fail(f"missing '{key}'", where.conv(key))
            value = row[key]
            if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
                self.fail(
                    f"'{key}' must be an integer or a non-empty string, got {_short(value)}",
                    where.conv(key),
                )
            parts.append(value)
        if "traj" not in row:
            self.fail("missing 'traj'", where.conv("traj"))
        traj = row["traj"]
        if not isinstance(traj, list):
            self.fail(f"'traj' must be a list of messages, got {_kind(traj)}", where.conv("traj"))
        uid = None
        info = row.get("info")
        if info is not None:
            if not isinstance(info, dict):
                self.fail(f"'info' must be an object, got {_kind(info)}", where.conv("info"))
            task = info.get("task")
            if task is not None:
                if not isinstance(task, dict):
                    self.fail(
                        f"'info.task' must be an object, got {_kind(task)}", where.conv("info.task")
                    )
                uid = self.user_id(task.get("user_id"), where.conv("info.task.user_id"))
        cid = self.claim(f"task{parts[0]}-trial{parts[1]}", where.conv("task_id"))
        self.auto_ids += 1
        b = self.openai_messages(traj, cid, where)
        return b.build(uid, "tau-bench")

    # -- OpenAI ------------------------------------------------------------------------------

    def openai_messages(self, messages: list[Any], cid: str, where: _Where) -> _Builder:
        b = _Builder(self, cid)
        for i, raw in enumerate(messages):
            self.openai_message(b, raw, i, where)
        return b

    def role(self, raw: dict[str, Any], at: tuple[int | None, str | None], allowed: Sequence[str],
             hint: str = "") -> str:
        if "role" not in raw:
            self.fail("missing 'role'", at)
        role = raw["role"]
        if not isinstance(role, str) or role not in allowed:
            shown = repr(role) if isinstance(role, str) else f"{_short(role)} ({_kind(role)})"
            self.fail(f"unknown role {shown} (expected one of {', '.join(allowed)}){hint}", at)
        return role

    def text_parts(self, parts: list[Any], at: Callable[[str], tuple[int | None, str | None]],
                   key: str = "content") -> str:
        texts = []
        for j, part in enumerate(parts):
            if not isinstance(part, dict):
                self.fail(f"a content part must be an object, got {_kind(part)}", at(f"{key}[{j}]"))
            ptype = part.get("type")
            if ptype != "text":
                self.fail(
                    f"unsupported content part type {_short(ptype)} (only text parts are read)",
                    at(f"{key}[{j}].type"),
                )
            text = part.get("text")
            if not isinstance(text, str):
                self.fail(f"a text part needs a string 'text', got {_kind(text)}",
                          at(f"{key}[{j}].text"))
            texts.append(text)
        return "\n".join(texts)

    def openai_message(self, b: _Builder, raw: Any, i: int, where: _Where) -> None:
        def at(sub: str | None = None) -> tuple[int | None, str | None]:
            return where.msg(i, sub)

        if not isinstance(raw, dict):
            self.fail(f"a message must be an object, got {_kind(raw)}", at())
        role = self.role(raw, at("role"), ROLES)
        calls: list[tuple[str, str, str]] = []
        raw_calls = raw.get("tool_calls")
        if raw_calls is not None:
            if not isinstance(raw_calls, list):
                self.fail(f"'tool_calls' must be a list, got {_kind(raw_calls)}", at("tool_calls"))
            if raw_calls and role != "assistant":
                self.fail(f"only assistant messages may have tool_calls, not {role!r}",
                          at("tool_calls"))
            seen: set[str] = set()
            for j, call in enumerate(raw_calls):
                cat = f"tool_calls[{j}]"
                if not isinstance(call, dict):
                    self.fail(f"a tool call must be an object, got {_kind(call)}", at(cat))
                call_id = call.get("id")
                if not isinstance(call_id, str) or not call_id:
                    self.fail(f"a tool call needs a non-empty string 'id', got {_short(call_id)}",
                              at(f"{cat}.id"))
                if call_id in seen:
                    self.fail(f"duplicate tool call id {call_id!r} in one message", at(f"{cat}.id"))
                seen.add(call_id)
                fn = call.get("function")
                if not isinstance(fn, dict):
                    self.fail(f"a tool call needs an object 'function', got {_kind(fn)}",
                              at(f"{cat}.function"))
                name = fn.get("name")
                if not isinstance(name, str) or not name:
                    self.fail(f"a function needs a non-empty string 'name', got {_short(name)}",
                              at(f"{cat}.function.name"))
                if "arguments" not in fn:
                    self.fail("missing 'arguments'", at(f"{cat}.function.arguments"))
                args = fn["arguments"]
                if isinstance(args, (dict, list)):
                    args = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
                elif not isinstance(args, str):
                    self.fail(f"'arguments' must be a JSON string or object, got {_kind(args)}",
                              at(f"{cat}.function.arguments"))
                calls.append((call_id, name, args))
        if raw.get("function_call") is not None:
            self.fail("legacy 'function_call' is not supported; use 'tool_calls'",
                      at("function_call"))
        if "content" not in raw:
            if not (role == "assistant" and calls):
                self.fail("missing 'content'", at("content"))
            content = None
        else:
            value = raw["content"]
            if value is None:
                if not (role == "assistant" and calls):
                    self.fail(
                        "content is null (only an assistant message with tool_calls may omit it)",
                        at("content"),
                    )
                content = None
            elif isinstance(value, str):
                content = value
            elif isinstance(value, list):
                content = self.text_parts(value, at)
            else:
                self.fail(
                    f"content must be a string or a list of text parts, got {_kind(value)}",
                    at("content"),
                )
        answers = None
        if role == "tool":
            if "tool_call_id" not in raw or raw["tool_call_id"] is None:
                self.fail("a tool message needs 'tool_call_id'", at("tool_call_id"))
            answers = raw["tool_call_id"]
            if not isinstance(answers, str) or not answers:
                self.fail(f"tool_call_id must be a non-empty string, got {_short(answers)}",
                          at("tool_call_id"))
        elif raw.get("tool_call_id") is not None:
            self.fail(f"only tool messages may have tool_call_id, not {role!r}", at("tool_call_id"))
        tokens = raw.get("tokens")
        if tokens is not None and (
            isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0
        ):
            self.fail(f"tokens must be a non-negative integer, got {_short(tokens)}", at("tokens"))
        b.add(
            msg_id=b.next_id(raw.get("id"), at("id")),
            role=role,
            content=content,
            calls=calls,
            answers=answers,
            tokens=tokens,
            where_id=at("id"),
            where_calls=lambda j: at(f"tool_calls[{j}].id"),
            where_answer=at("tool_call_id"),
        )

    # -- Anthropic ---------------------------------------------------------------------------

    def anthropic_messages(
        self, obj: dict[str, Any], messages: list[Any], cid: str, where: _Where
    ) -> _Builder:
        b = _Builder(self, cid)
        system = obj.get("system")
        if system is not None:
            at_sys = where.conv("system")
            if isinstance(system, str):
                text = system
            elif isinstance(system, list):
                text = self.text_parts(system, where.conv, key="system")
            else:
                self.fail(
                    f"'system' must be a string or a list of text blocks, got {_kind(system)}",
                    at_sys,
                )
            if text:
                b.add(msg_id=b.next_id(None, at_sys), role="system", content=text, tokens=None,
                      where_id=at_sys)
        for i, raw in enumerate(messages):
            self.anthropic_message(b, raw, i, where)
        return b

    def anthropic_message(self, b: _Builder, raw: Any, i: int, where: _Where) -> None:
        def at(sub: str | None = None) -> tuple[int | None, str | None]:
            return where.msg(i, sub)

        if not isinstance(raw, dict):
            self.fail(f"a message must be an object, got {_kind(raw)}", at())
        role = self.role(
            raw, at("role"), ("user", "assistant"),
            " - an Anthropic system prompt goes in the top-level 'system'",
        )
        if "content" not in raw:
            self.fail("missing 'content'", at("content"))
        content = raw["content"]
        own = raw.get("id")
        if isinstance(content, str):
            b.add(msg_id=b.next_id(own, at("id")), role=role, content=content, tokens=None,
                  where_id=at("id"))
            return
        if not isinstance(content, list):
            self.fail(f"content must be a string or a list of blocks, got {_kind(content)}",
                      at("content"))
        texts: list[str] = []
        calls: list[tuple[str, str, str]] = []
        results: list[tuple[int, str, str]] = []  # (block index, tool_use_id, text)
        for j, block in enumerate(content):
            bat = f"content[{j}]"
            if not isinstance(block, dict):
                self.fail(f"a content block must be an object, got {_kind(block)}", at(bat))
            btype = block.get("type")
            if btype == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    self.fail(f"a text block needs a string 'text', got {_kind(text)}",
                              at(f"{bat}.text"))
                texts.append(text)
            elif btype == "tool_use":
                if role != "assistant":
                    self.fail("tool_use blocks belong to assistant messages", at(f"{bat}.type"))
                call_id, name = block.get("id"), block.get("name")
                if not isinstance(call_id, str) or not call_id:
                    self.fail(f"tool_use needs a non-empty string 'id', got {_short(call_id)}",
                              at(f"{bat}.id"))
                if any(call_id == c[0] for c in calls):
                    self.fail(f"duplicate tool call id {call_id!r} in one message", at(f"{bat}.id"))
                if not isinstance(name, str) or not name:
                    self.fail(f"tool_use needs a non-empty string 'name', got {_short(name)}",
                              at(f"{bat}.name"))
                if "input" not in block:
                    self.fail("missing 'input'", at(f"{bat}.input"))
                args = json.dumps(block["input"], ensure_ascii=False, separators=(",", ":"))
                calls.append((call_id, name, args))
            elif btype == "tool_result":
                if role != "user":
                    self.fail("tool_result blocks belong to user messages", at(f"{bat}.type"))
                use_id = block.get("tool_use_id")
                if not isinstance(use_id, str) or not use_id:
                    self.fail(
                        f"tool_result needs a non-empty string 'tool_use_id', got {_short(use_id)}",
                        at(f"{bat}.tool_use_id"),
                    )
                rc = block.get("content")
                if rc is None:
                    text = ""
                elif isinstance(rc, str):
                    text = rc
                elif isinstance(rc, list):
                    text = self.text_parts(rc, lambda sub, _b=bat: at(f"{_b}.{sub}"))
                else:
                    self.fail(
                        f"tool_result content must be a string or a list of text blocks, "
                        f"got {_kind(rc)}",
                        at(f"{bat}.content"),
                    )
                results.append((j, use_id, text))
            else:
                self.fail(
                    f"unsupported content block type {_short(btype)} "
                    "(expected text, tool_use or tool_result)",
                    at(f"{bat}.type"),
                )
        n_out = len(results) + (1 if (role == "assistant" or texts or not results) else 0)
        for k, (j, use_id, text) in enumerate(results):
            b.add(
                msg_id=b.next_id(own, at("id"), f":{k}" if n_out > 1 else ""),
                role="tool",
                content=text,
                answers=use_id,
                tokens=None,
                where_id=at("id"),
                where_answer=at(f"content[{j}].tool_use_id"),
            )
        if role == "assistant":
            b.add(
                msg_id=b.next_id(own, at("id")),
                role="assistant",
                content="\n".join(texts) if texts else (None if calls else ""),
                calls=calls,
                tokens=None,
                where_id=at("id"),
                where_calls=lambda j: at(f"content[{_nth_block(content, 'tool_use', j)}].id"),
            )
        elif texts or not results:
            b.add(
                msg_id=b.next_id(own, at("id"), f":{len(results)}" if n_out > 1 else ""),
                role="user",
                content="\n".join(texts),
                tokens=None,
                where_id=at("id"),
            )

    # -- documents -----------------------------------------------------------------------------

    def json_document(self, doc: Any, fmt: str) -> list[Conversation]:
        """A whole JSON document: one conversation, a list of conversations, or tau-bench rows."""
        dialect = "anthropic" if fmt == "anthropic" else ("openai" if fmt == "openai" else "auto")
        if isinstance(doc, dict):
            if fmt == "tau-bench":
                self.fail("a tau-bench run file is a JSON list of rows, got an object")
            return [self.conversation_object(doc, _Where(None, "messages", True), dialect, "json")]
        if not isinstance(doc, list):
            self.fail(f"a conversation document must be a JSON array or object, got {_kind(doc)}")
        if not doc:
            self.fail("the document is an empty list: no messages or conversations")
        first = doc[0]
        if fmt == "tau-bench" or (fmt == "auto" and isinstance(first, dict) and "traj" in first):
            return [self.tau_row(row, _Where(k + 1, "traj", False)) for k, row in enumerate(doc)]
        if isinstance(first, dict) and "messages" in first:
            return [
                self.conversation_object(obj, _Where(k + 1, "messages", False), dialect, "json")
                for k, obj in enumerate(doc)
            ]
        if isinstance(first, dict) and "role" in first:
            d = _dialect({}, doc) if dialect == "auto" else dialect
            return [self.message_list(doc, _Where(None, "", True), d, "json")]
        self.fail(
            "unknown format: a JSON list must hold messages (with 'role'), conversations (with "
            f"'messages') or tau-bench rows (with 'traj'); item 1 is {_kind(first)}"
            + (f" with keys {sorted(first)[:8]}" if isinstance(first, dict) else ""),
            (1, None),
        )
        return []  # pragma: no cover

    def message_list(self, messages: list[Any], where: _Where, dialect: str, container: str
                     ) -> Conversation:
        cid = f"c{self.auto_ids + 1}"
        self.auto_ids += 1
        cid = self.claim(cid, where.conv(None))
        if dialect == "anthropic":
            b = self.anthropic_messages({}, messages, cid, where)
        else:
            b = self.openai_messages(messages, cid, where)
        return b.build(None, f"{dialect}-{container}")

    def jsonl(self, text: str, fmt: str) -> list[Conversation]:
        dialect = "anthropic" if fmt == "anthropic" else "auto"
        out: list[Conversation] = []
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                self.fail(f"invalid JSON at column {exc.colno}: {exc.msg}", (lineno, None))
            except (ValueError, RecursionError) as exc:
                self.fail(f"invalid JSON: {exc}", (lineno, None))
            if isinstance(value, list):
                d = _dialect({}, value) if dialect == "auto" else dialect
                out.append(self.message_list(value, _Where(lineno, "", False), d, "jsonl"))
            elif isinstance(value, dict):
                out.append(
                    self.conversation_object(value, _Where(lineno, "messages", False), dialect,
                                             "jsonl")
                )
            else:
                self.fail(
                    "each JSONL line must be a list of messages or an object with 'messages', "
                    f"got {_kind(value)}",
                    (lineno, None),
                )
        if not out:
            self.fail("empty file: no conversations")
        return out

    def csv(self, text: str) -> list[Conversation]:
        # A cell may be as long as the file (a long tool result): lift the csv module's 128 KiB
        # default cell cap (process-wide; only ever raised, to the size cap in force).
        if csv.field_size_limit() < len(text) + 1:
            csv.field_size_limit(len(text) + 1)
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        try:
            header = next(reader, None)
            while header is not None and not any(h.strip() for h in header):
                header = next(reader, None)
        except csv.Error as exc:
            self.fail(f"invalid CSV: {exc}", (reader.line_num, None))
        if header is None:
            self.fail("empty file: no CSV header")
        header_line = reader.line_num
        cols = [h.strip() for h in header]
        index: dict[str, int] = {}
        for k, name in enumerate(cols):
            if name not in _CSV_REQUIRED + _CSV_OPTIONAL:
                self.fail(
                    f"unknown column {name!r} (expected {', '.join(_CSV_REQUIRED)} and optionally "
                    f"{', '.join(_CSV_OPTIONAL)})",
                    (header_line, name),
                )
            if name in index:
                self.fail(f"duplicate column {name!r}", (header_line, name))
            index[name] = k
        for name in _CSV_REQUIRED:
            if name not in index:
                self.fail(f"missing column {name!r}", (header_line, name))
        builders: dict[str, _Builder] = {}
        users: dict[str, tuple[str | None, int]] = {}
        line = header_line
        while True:
            start = line + 1
            try:
                row = next(reader, None)
            except csv.Error as exc:
                self.fail(f"invalid CSV: {exc}", (reader.line_num, None))
            line = reader.line_num
            if row is None:
                break
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != len(cols):
                self.fail(f"expected {len(cols)} fields, got {len(row)}", (start, None))

            def cell(name: str, _row: list[str] = row) -> str | None:
                return _row[index[name]] if name in index else None

            conv_key = cell("conversation_id")
            if conv_key is None:
                conv_key = "c1"
            elif not conv_key.strip():
                self.fail("conversation_id is empty", (start, "conversation_id"))
            uid_cell = cell("user_id")
            uid = uid_cell if uid_cell else None
            b = builders.get(conv_key)
            if b is None:
                b = builders[conv_key] = _Builder(self, self.claim(conv_key, (start,
                                                                              "conversation_id")))
                users[conv_key] = (uid, start)
            elif users[conv_key][0] != uid:
                self.fail(
                    f"user_id {uid!r} differs from {users[conv_key][0]!r} given on line "
                    f"{users[conv_key][1]} for conversation {conv_key!r}",
                    (start, "user_id"),
                )
            msg_id = cell("id")
            if not msg_id:
                self.fail("id is empty", (start, "id"))
            role = cell("role")
            if role not in ROLES:
                self.fail(f"unknown role {role!r} (expected one of {', '.join(ROLES)})",
                          (start, "role"))
            raw_tokens = (cell("tokens") or "").strip()
            if not (raw_tokens.isascii() and raw_tokens.isdigit()) or len(raw_tokens) > 18:
                shown = raw_tokens if len(raw_tokens) <= 40 else raw_tokens[:37] + "..."
                self.fail(f"tokens must be a non-negative integer below 10**18, got {shown!r}",
                          (start, "tokens"))
            call_ids = tuple((cell("tool_call_ids") or "").split())
            if call_ids and role != "assistant":
                self.fail(f"only assistant rows may have tool_call_ids, not {role!r}",
                          (start, "tool_call_ids"))
            if len(set(call_ids)) != len(call_ids):
                self.fail(f"duplicate id in tool_call_ids {call_ids!r}", (start, "tool_call_ids"))
            answers = (cell("tool_call_id") or "").strip() or None
            if answers is not None and role != "tool":
                self.fail(f"only tool rows may have tool_call_id, not {role!r}",
                          (start, "tool_call_id"))
            content = cell("content") or None
            b.add(
                msg_id=msg_id,
                role=role,
                content=content,
                calls=[(c, "", "") for c in call_ids],
                answers=answers,
                tokens=int(raw_tokens),
                where_id=(start, "id"),
                where_calls=lambda _j, _s=start: (_s, "tool_call_ids"),
                where_answer=(start, "tool_call_id"),
            )
        if not builders:
            self.fail("no rows after the CSV header", (header_line, None))
        out = []
        for key, b in builders.items():
            conv = b.build(users[key][0], "csv")
            # CSV gives call ids only: no names or arguments to keep.
            out.append(Conversation(conv.id, conv.user_id, conv.messages, conv.listing_ids, (),
                                    source=conv.source, source_format="csv"))
        return out


def _nth_block(content: list[Any], btype: str, n: int) -> int:
    """Index in ``content`` of the n-th (0-based) block of type ``btype``."""
    seen = -1
    for j, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == btype:
            seen += 1
            if seen == n:
                return j
    return n  # pragma: no cover


def _dialect(obj: dict[str, Any], messages: list[Any]) -> str:
    """"anthropic" if the conversation uses a top-level system or tool_use/tool_result blocks."""
    if "system" in obj:
        return "anthropic"
    for m in messages:
        if isinstance(m, dict):
            content = m.get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") in ("tool_use", "tool_result"):
                        return "anthropic"
    return "openai"


def _looks_like_csv_header(first_line: str) -> bool:
    try:
        cols = {c.strip() for c in next(csv.reader([first_line]))}
    except (csv.Error, StopIteration):
        return False
    return set(_CSV_REQUIRED) <= cols


def parse_conversations(
    data: bytes | str,
    *,
    counter: TokenCounter | None = None,
    listing_extractor: Callable[[str], Iterable[str]] | None = None,
    format: str = "auto",
    source_name: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> list[Conversation]:
    """Parse a conversation file's bytes (e.g. from ``st.file_uploader``) or text.

    Args:
        data: UTF-8 bytes (a BOM is allowed) or text.
        counter: counts tokens of messages that do not carry ``"tokens"``; default
            :func:`convmem.tokens.default_counter` (loaded only when needed).
        listing_extractor: ``callable(text) -> iterable[str]`` finding listing ids; default
            :func:`extract_listing_ids`.
        format: one of :data:`FORMATS` (see the module docstring); ``"auto"`` detects by content.
        source_name: the name errors and conversations carry (default ``"<input>"``).
        max_bytes: the size cap; larger input raises FormatError before parsing.

    Returns:
        the conversations in file order. O(size of the input + tokenizing).

    Raises:
        FormatError: malformed input, with source, line and field (module docstring).
        ValueError/TypeError: a bad argument (format, max_bytes, counter output, extractor output).
    """
    source = "<input>" if source_name is None else str(source_name)
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(f"max_bytes must be an int, got {max_bytes!r}")
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes!r}")
    if listing_extractor is not None and not callable(listing_extractor):
        raise TypeError(f"listing_extractor must be callable, got {listing_extractor!r}")
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        if len(raw) > max_bytes:
            raise FormatError(f"file is {len(raw):,} bytes, over the {max_bytes:,}-byte cap",
                              source=source)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise FormatError(f"not UTF-8 text: {exc.reason} at byte {exc.start}",
                              source=source) from None
    elif isinstance(data, str):
        text = data
        if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
            raise FormatError(f"text is over the {max_bytes:,}-byte cap", source=source)
        if text.startswith("\ufeff"):
            text = text[1:]
    else:
        raise TypeError(f"data must be bytes or str, got {type(data).__name__}")
    return _parse_text(text, _Parser(source, counter, listing_extractor), format)


def _parse_text(text: str, p: _Parser, fmt: str) -> list[Conversation]:
    stripped = text.lstrip()
    if not stripped:
        p.fail("empty file")
    if fmt == "csv":
        return p.csv(text)
    if fmt == "jsonl":
        return p.jsonl(text, fmt)
    if fmt == "auto" and stripped[0] not in "[{":
        first_line = stripped.split("\n", 1)[0]
        if _looks_like_csv_header(first_line):
            return p.csv(text)
        p.fail(
            "unknown format: expected a JSON document (OpenAI, Anthropic, tau-bench), JSONL, or "
            f"CSV with header id,role,tokens; the file starts with {_short(first_line, 30)}"
        )
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and fmt in ("auto", "anthropic"):
            return p.jsonl(text, fmt)  # several JSON values: one per line
        if exc.msg == "Extra data":
            p.fail(
                f"invalid JSON at line {exc.lineno} column {exc.colno}: a second JSON value "
                f"follows the first (JSONL? use format='jsonl')",
                (exc.lineno, None),
            )
        p.fail(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
               (exc.lineno, None))
    except RecursionError:
        p.fail("invalid JSON: nested too deeply")
    except ValueError as exc:  # e.g. an integer with too many digits
        p.fail(f"invalid JSON: {exc}")
    return p.json_document(doc, fmt)


def load_conversations(
    path_or_file: str | os.PathLike[str] | IO[bytes] | IO[str],
    *,
    counter: TokenCounter | None = None,
    listing_extractor: Callable[[str], Iterable[str]] | None = None,
    format: str = "auto",
    source_name: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> list[Conversation]:
    """Load conversations from a path or an open file (binary or text); see
    :func:`parse_conversations` for the arguments, formats and errors.

    The file is never read past ``max_bytes + 1`` bytes. ``source_name`` defaults to the file's
    base name.

    Raises:
        FormatError: malformed or oversized content. OSError: the file cannot be opened or read.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(f"max_bytes must be an int, got {max_bytes!r}")
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes!r}")
    if isinstance(path_or_file, (str, os.PathLike)):
        path = Path(path_or_file)
        name = path.name if source_name is None else source_name
        size = path.stat().st_size
        if size > max_bytes:
            raise FormatError(f"file is {size:,} bytes, over the {max_bytes:,}-byte cap",
                              source=name)
        with path.open("rb") as f:
            data: bytes | str = f.read(max_bytes + 1)
    elif hasattr(path_or_file, "read"):
        name = source_name
        if name is None:
            raw_name = getattr(path_or_file, "name", None)
            name = os.path.basename(raw_name) if isinstance(raw_name, str) else "<input>"
        data = path_or_file.read(max_bytes + 1)
        if not isinstance(data, (bytes, str)):
            raise TypeError(f"file read() must return bytes or str, got {type(data).__name__}")
    else:
        raise TypeError(f"path_or_file must be a path or a file object, got {path_or_file!r}")
    return parse_conversations(
        data,
        counter=counter,
        listing_extractor=listing_extractor,
        format=format,
        source_name=name,
        max_bytes=max_bytes,
    )


# ----------------------------------------------------------------------------------------------
# Writing


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
        calls = {tc.id: tc for tc in conv.tool_calls}
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
                    tc = calls.get(cid)
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
