"""What every format module shares: the :class:`Format` record, the parse context and the builder.

A format module turns one provider record (a conversation) into a :class:`~convmem.Conversation`
by feeding its messages, one by one, to a :class:`Builder`. The builder does what is the same for
every provider (SPEC §2):

* message ids: the record's own ``"id"``, else ``f"{conversation_id}:{index}"``;
* roles: the provider's role is kept (``provider_roles``) and mapped onto the four convmem roles;
* tool-call linking: a result answers the **nearest earlier unanswered** call with its id (ids such
  as ``call_0`` restart every turn); calls and results with no id pair **by position** (first
  unanswered id-less call first; a legacy ``function`` result also by name); a call without an id
  gets a generated one, ``f"{message_id}#{k}"`` (k = its index in the message);
* token counting through ``counter.count_message(provider_role, content, tool_calls, name=...,
  images=...)``, falling back to the older ``count_message(role, content, tool_calls)`` for
  counters that do not take the keywords (a counter that raises TypeError on them);
* listing ids over each message's content, then each call's arguments.

A fault raises :class:`Fault` (a :class:`~convmem.FormatError`) naming line, field and value; the
loader skips that conversation (or, with ``strict=True``, raises it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..agent_sessions import AgentSession
from ..conversations import LAZY_LISTINGS, Conversation, Skipped, ToolCall, extract_listing_ids
from ..errors import FormatError
from ..limits import MAX_TOKENS
from ..message import Message, check_text

try:  # the tokens branch defines ImageRef; until then a local value of the same shape
    from ..tokens import ImageRef
except ImportError:  # pragma: no cover - depends on which tokens.py is present

    @dataclass(frozen=True, slots=True)
    class ImageRef:  # type: ignore[no-redef]
        """An image in a message: pixel size (None when unknown) and OpenAI ``detail``."""

        width: int | None
        height: int | None
        detail: str = "auto"


__all__ = [
    "Builder",
    "Context",
    "Fault",
    "Format",
    "ImageRef",
    "Where",
    "check_tokens",
    "compact_json",
    "kind",
    "regroup",
    "same_format",
    "short",
]

#: Compact JSON text of a value (tool-call arguments given as objects): one encoder, built once
#: (``json.dumps`` with options builds a new encoder per call).
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

_MESSAGE_FIELDS = ("id", "role", "tokens", "content", "tool_call_ids", "tool_call_id")
_TOOL_CALL_FIELDS = ("id", "name", "arguments", "message_id")


class _MessageFields:
    """The slots of a :class:`Message`, set by a plain ``__init__`` that then makes the object a
    Message (``__class__`` assignment; CPython allows it between classes of one layout and
    checks that): the builder checks every field first, so ``__post_init__``'s checks are
    skipped. The hot path of a load: about half the cost of setting the six slots through
    their descriptors, a fifth of ``Message(...)`` (docs/performance.md, session 23)."""

    __slots__ = _MESSAGE_FIELDS

    def __init__(self, id: str, role: str, tokens: int, content: str | None,  # noqa: A002
                 tool_call_ids: tuple[str, ...], tool_call_id: str | None) -> None:
        self.id = id
        self.role = role
        self.tokens = tokens
        self.content = content
        self.tool_call_ids = tool_call_ids
        self.tool_call_id = tool_call_id
        self.__class__ = Message  # type: ignore[assignment]


class _ToolCallFields:
    """:class:`_MessageFields` for a :class:`ToolCall`."""

    __slots__ = _TOOL_CALL_FIELDS

    def __init__(self, id: str, name: str, arguments: str, message_id: str) -> None:  # noqa: A002
        self.id = id
        self.name = name
        self.arguments = arguments
        self.message_id = message_id
        self.__class__ = ToolCall  # type: ignore[assignment]


def _fast(cls: type, names: tuple[str, ...], twin: type) -> Callable[..., Any]:
    """A constructor of ``cls`` (a frozen slotted dataclass) without re-validation: ``twin``
    when ``cls`` has the fields ``names`` in that order and the layout ``twin`` can become
    (checked once, here), else ``cls`` itself (validating: slower, never wrong)."""
    from dataclasses import fields

    if tuple(f.name for f in fields(cls)) != names:  # pragma: no cover - a changed value class
        return cls
    try:
        sample = twin(*names)
    except TypeError:  # pragma: no cover - "object layout differs": a changed value class
        return cls
    return twin if type(sample) is cls else cls


#: Message(id, role, tokens, content, tool_call_ids, tool_call_id) without re-validation.
new_message = _fast(Message, _MESSAGE_FIELDS, _MessageFields)
#: ToolCall(id, name, arguments, message_id) without re-validation.
new_tool_call = _fast(ToolCall, _TOOL_CALL_FIELDS, _ToolCallFields)

#: Provider role -> convmem role, for every provider role any format accepts.
ROLE_MAP: dict[str, str] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}


@dataclass(frozen=True, slots=True)
class Format:
    """One conversation file format, registered in :data:`convmem.formats.FORMATS`.

    Attributes:
        name: the registry key (``"openai-chat"``...).
        description: one line for error messages and the dashboard.
        detect: ``detect(record) -> bool``: does this decoded JSON record (one conversation: a
            message list or an object) look like this format? For a text format (``text=True``),
            ``record`` is the file's first non-blank line. Cheap: key checks, no parsing.
        parse: for a JSON format, ``parse(record, ctx, where) -> Conversation`` for one record
            (raises :class:`Fault`); for a text format, ``parse(text, ctx, where) -> None`` adding
            conversations and skips to ``ctx`` itself.
        dump: ``dump(conversations) -> str``, the file text (:func:`convmem.dump_conversations`).
        text: True for a format read from text (CSV), not from JSON values.
    """

    name: str
    description: str
    detect: Callable[[Any], bool]
    parse: Callable[..., Any]
    dump: Callable[[Sequence[Conversation]], str]
    text: bool = False


def kind(value: Any) -> str:
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


def short(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Fault(FormatError):
    """A FormatError that also carries the offending value's short repr (``.value``)."""

    def __init__(self, message: str, *, source: str, line: int | None, field: str | None,
                 value: str | None = None) -> None:
        super().__init__(message, source=source, line=line, field=field)
        self.value = value


class Where:
    """Maps (message index, sub-field) to FormatError's (line, field) for one conversation.

    ``per_message``: the document is one conversation, so ``line`` is the 1-based message index.
    Otherwise ``line`` is the record's line (JSONL, CSV) or 1-based index in a JSON list, and the
    field is a JSON path inside the record (``prefix[i].sub``).
    """

    __slots__ = ("line", "prefix", "per_message")

    def __init__(self, line: int | None, prefix: str | None, per_message: bool) -> None:
        self.line = line
        self.prefix = prefix
        self.per_message = per_message

    def msg(self, i: int, sub: str | None = None) -> tuple[int | None, str | None]:
        if self.per_message:
            return i + 1, sub
        if self.prefix is None:  # one message per line (CSV): the line says which
            return self.line, sub
        path = f"{self.prefix}[{i}]"
        return self.line, (f"{path}.{sub}" if sub else path)

    def conv(self, sub: str | None) -> tuple[int | None, str | None]:
        return (None if self.per_message else self.line), sub

    def under(self, prefix: str) -> Where:
        """The same record, messages under another path (tau-bench's ``traj``)."""
        return Where(self.line, prefix, self.per_message)


class Context:
    """One load: source name, counter, listing extractor, claimed conversation ids, results."""

    __slots__ = ("source", "_counter", "extract", "check_listings", "conv_ids", "auto_ids",
                 "conversations", "skipped", "strict", "_legacy", "counted", "first", "last",
                 "batch", "keep_records")

    def __init__(self, source: str, counter: Any, extractor: Callable[[str], Iterable[str]] | None,
                 strict: bool, keep_records: bool = True) -> None:
        self.source = source
        # False: conversations carry no provider records, parts, provider roles or envelope
        # (parse_conversations(provider_records=False): a caller that never exports them).
        self.keep_records = keep_records
        self._counter = counter
        self.extract = extract_listing_ids if extractor is None else extractor
        self.check_listings = extractor is not None
        # The default extractor runs once per conversation over its texts joined by "\n" (runs
        # of digits never cross a text boundary, so the ids and their order are the same).
        self.batch = extractor is None
        self.conv_ids: set[str] = set()
        self.auto_ids = 0
        self.conversations: list[Conversation] = []
        self.skipped: list[Any] = []
        self.strict = strict
        self._legacy: bool | None = None  # None: not yet known which count_message signature
        self.counted = False
        self.first: FormatError | None = None  # the first fault, raised when nothing loads
        self.last: Any = None  # the format of the last record detected (auto): a fallback

    def fail(self, reason: str, where: tuple[int | None, str | None] = (None, None),
             value: Any = ...) -> Any:
        raise Fault(reason, source=self.source, line=where[0], field=where[1],
                    value=None if value is ... else short(value))

    def text(self, label: str, text: str, where: tuple[int | None, str | None]) -> str:
        """``text`` if every encoder can write it, else a Fault naming ``label`` and the lone
        surrogate (:func:`convmem.check_text`); O(1) for ASCII text, else one encode."""
        if not text.isascii():
            try:
                check_text(label, text)
            except ValueError as exc:
                self.fail(str(exc), where)
        return text

    def tokens(self, tokens: int, where: tuple[int | None, str | None]) -> int:
        """``tokens`` if within ``[0, MAX_TOKENS]`` (the cap Message enforces), else a Fault."""
        if not 0 <= tokens <= MAX_TOKENS:
            self.fail(f"tokens must be a non-negative integer at most MAX_TOKENS = 2**53 - 1 = "
                      f"{MAX_TOKENS:,}, got {short(tokens)}", where, tokens)
        return tokens

    @property
    def counter(self) -> Any:
        if self._counter is None:
            from ..tokens import default_counter

            self._counter = default_counter()
        return self._counter

    def count(self, role: str, provider_role: str, content: str | None,
              calls: list[tuple[str, str]], name: str | None, images: Sequence[Any]) -> int:
        """Tokens of one message via the counter (new keyword signature, else the old one)."""
        counter = self.counter
        if self._legacy is None:
            try:
                n = counter.count_message(provider_role, content, calls, name=name,
                                          images=images)
            except TypeError:
                n = counter.count_message(role, content, calls)
                self._legacy = True
            else:
                self._legacy = False
        elif self._legacy:
            n = counter.count_message(role, content, calls)
        else:
            n = counter.count_message(provider_role, content, calls, name=name, images=images)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TypeError(f"counter.count_message must return a non-negative int, got {n!r}")
        return n

    def skip(self, exc: FormatError, conversation_id: str | None) -> None:
        """Record a conversation that did not load (or, with ``strict``, raise ``exc``)."""
        if self.first is None:
            self.first = exc
        if self.strict:
            raise exc
        self.skipped.append(Skipped(conversation_id, exc.line, exc.field,
                                    getattr(exc, "value", None), exc.reason))

    def listings(self, text: str) -> Iterable[str]:
        out = self.extract(text)
        if self.check_listings:
            out = list(out)
            for x in out:
                if not isinstance(x, str):
                    raise TypeError(f"listing_extractor must yield str values, got {x!r}")
        return out

    # -- conversation ids ------------------------------------------------------------------

    def claim(self, cid: str, where: tuple[int | None, str | None]) -> str:
        self.text("conversation id", cid, where)
        if cid in self.conv_ids:
            self.fail(f"duplicate conversation id {cid!r}", where, cid)
        self.conv_ids.add(cid)
        return cid

    def conv_id(self, raw: Any, where: tuple[int | None, str | None]) -> str:
        """The record's own id (str or int) if given, else ``c{k}`` (k counts records)."""
        self.auto_ids += 1
        if raw is None:
            cid = f"c{self.auto_ids}"
        elif isinstance(raw, str) and raw:
            cid = raw
        elif isinstance(raw, int) and not isinstance(raw, bool):
            cid = str(raw)
        else:
            self.fail(
                f"conversation id must be a non-empty string or an integer, got {short(raw)}",
                where, raw,
            )
        return self.claim(cid, where)

    def user_id(self, raw: Any, where: tuple[int | None, str | None]) -> str | None:
        if raw is None:
            return None
        if isinstance(raw, str):
            return self.text("user_id", raw, where)
        if isinstance(raw, int) and not isinstance(raw, bool):
            return str(raw)
        return self.fail(f"user_id must be a string or null, got {short(raw)}", where, raw)


def same_format(conv: Conversation, name: str) -> bool:
    """True when ``conv`` was read as format ``name`` and keeps a record per message, so a dump
    can write the records unchanged."""
    return conv.source_format == name and len(conv.records) == len(conv.messages)


def regroup(conv: Conversation, key: str) -> tuple[Any, list[Any]]:
    """(the system record or None, the provider turns) of a conversation read from a format whose
    turns may split into several messages (records shared, block indices in ``parts``).

    Consecutive messages sharing one record object are one turn; a turn whose messages were all
    kept is its record unchanged, else the record with only the kept blocks under ``key``.
    A message whose provider role is ``"system"`` holds the envelope's system value.
    """
    records, parts, proles = conv.records, conv.parts, conv.provider_roles
    system: Any = None
    turns: list[Any] = []
    k, n = 0, len(records)
    while k < n:
        rec = records[k]
        if proles[k] == "system":
            system = rec
            k += 1
            continue
        end = k + 1
        while end < n and records[end] is rec:
            end += 1
        if not parts or all(parts[x] is None for x in range(k, end)):
            turns.append(rec)
        else:
            keep = sorted({j for x in range(k, end) for j in (parts[x] or ())})
            if len(keep) == len(rec[key]):
                turns.append(rec)
            else:
                turns.append({**rec, key: [rec[key][j] for j in keep]})
        k = end
    return system, turns


def check_tokens(ctx: Context, tokens: Any, where: tuple[int | None, str | None]) -> int | None:
    """A record's own ``"tokens"`` (a convmem extension): None or a non-negative int."""
    if tokens is None:
        return None
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        ctx.fail(f"tokens must be a non-negative integer, got {short(tokens)}", where, tokens)
    return ctx.tokens(tokens, where)




class Builder:
    """Accumulates one conversation's messages: ids, roles, tool-call links, tokens, listings.

    ``pending`` maps a call id to the stack of its unanswered calls (message positions), so a
    result answers the nearest earlier one; ``anonymous`` holds id-less calls, oldest first.
    Each add is O(1) plus its text (listings, counting) and, for a result matched by name, the
    id-less calls still unanswered.
    """

    __slots__ = ("ctx", "conv_id", "where", "messages", "records", "parts", "proles", "ids",
                 "pending", "answered", "anonymous", "tool_calls", "listings", "has_parts")

    def __init__(self, ctx: Context, conv_id: str, where: Where) -> None:
        self.ctx = ctx
        self.conv_id = conv_id
        self.where = where
        self.messages: list[Message] = []
        self.records: list[Any] = []
        self.parts: list[tuple[int, ...] | None] = []
        self.proles: list[str] = []
        self.ids: set[str] = set()
        self.pending: dict[str, list[int]] = {}
        self.answered: dict[str, int] = {}
        self.anonymous: list[tuple[str, str, int]] = []  # (generated id, name, position)
        self.tool_calls: list[ToolCall] = []
        self.listings: list[str] = []  # listing ids, or (ctx.batch) the texts to scan at build
        self.has_parts = False

    def message_id(self, own: Any, pos: int, suffix: str = "") -> str:
        """The record's own ``"id"`` (+ suffix for split records) or ``conv:index``."""
        if own is None:
            return f"{self.conv_id}:{len(self.messages)}"
        if not isinstance(own, str) or not own:
            self.ctx.fail(f"message id must be a non-empty string, got {short(own)}",
                          self.where.msg(pos, "id"), own)
        if not own.isascii():  # the position is built only for text that may be at fault
            self.ctx.text("message id", own, self.where.msg(pos, "id"))
        return own + suffix

    def add(
        self,
        pos: int,
        role: str,
        provider_role: str,
        content: str | None,
        record: Any,
        *,
        own_id: Any = None,
        id_suffix: str = "",
        calls: Sequence[tuple[str | None, str, str]] = (),
        answers: str | None = None,
        answer_field: str | None = None,
        by_name: str | None = None,
        name: str | None = None,
        images: Sequence[Any] = (),
        tokens: int | None = None,
        part: tuple[int, ...] | None = None,
        link: bool = True,
    ) -> Message:
        """Append one message.

        Args:
            pos: the message's index in the record's message list (for error positions).
            role: the convmem role; provider_role: the provider's own role string.
            calls: ``(call id or None, name, arguments JSON text)`` per tool call.
            answers: for a tool result, the call id it names (None or "": pair by position).
            answer_field: the sub-field naming ``answers`` (error position), e.g. ``tool_call_id``.
            by_name: for a result paired by position, the function name it must match (legacy).
            tokens: given tokens, else counted.
            part: the indices of the record's content blocks this message holds (split records).
            link: False leaves a tool result without ``answers`` unlinked (CSV) instead of pairing
                it by position.
        """
        messages = self.messages
        if own_id is None:
            msg_id = f"{self.conv_id}:{len(messages)}"
        else:
            msg_id = self.message_id(own_id, pos, id_suffix)
        ids = self.ids
        if msg_id in ids:
            self.ctx.fail(f"duplicate message id {msg_id!r} in conversation {self.conv_id!r}",
                          self.where.msg(pos, "id"), msg_id)
        ids.add(msg_id)
        position = len(messages) + 1
        call_ids: tuple[str, ...] = ()
        ctx = self.ctx
        if calls:
            out = []
            for k, (cid, cname, args) in enumerate(calls):
                if not (cname.isascii() and args.isascii() and (not cid or cid.isascii())):
                    at = self.where.msg(pos, "tool_calls")
                    if cid:
                        ctx.text("tool call id", cid, at)
                    ctx.text("tool call name", cname, at)
                    ctx.text("tool call arguments", args, at)
                if not cid:
                    cid = f"{msg_id}#{k}"
                    self.anonymous.append((cid, cname, position))
                else:
                    stack = self.pending.get(cid)
                    if stack is None:
                        self.pending[cid] = [position]
                    else:
                        stack.append(position)
                out.append(cid)
                self.tool_calls.append(new_tool_call(cid, cname, args, msg_id))
            call_ids = tuple(out)
        answer: str | None = None
        if answers and not answers.isascii():
            ctx.text("tool_call_id", answers, self.where.msg(pos, answer_field))
        if content and not content.isascii():
            ctx.text("content", content, self.where.msg(pos, "content"))
        if role == "tool" and (link or answers):
            answer = self._link(answers, by_name, pos, answer_field, position)
        if tokens is None:
            tokens = ctx.count(role, provider_role, content,
                               [(c[1], c[2]) for c in calls] if calls else [], name, images)
        if not 0 <= tokens <= MAX_TOKENS:  # given or counted: one cap
            ctx.tokens(tokens, self.where.msg(pos, "tokens"))
        message = new_message(msg_id, role, tokens, content, call_ids, answer)
        messages.append(message)
        self.records.append(record)
        self.proles.append(provider_role)
        if part is not None:
            if not self.has_parts:
                self.parts = [None] * (len(messages) - 1)
                self.has_parts = True
            self.parts.append(part)
        elif self.has_parts:
            self.parts.append(None)
        if not ctx.batch:  # the default extractor runs lazily (Conversation.listing_ids)
            if content:
                self.listings.extend(ctx.listings(content))
            for c in calls:
                if c[2]:
                    self.listings.extend(ctx.listings(c[2]))
        return message

    def add_plain(self, pos: int, role: str, provider_role: str, content: str | None,
                  record: Any, name: str | None, images: Sequence[Any],
                  tokens: int | None, own_id: Any = None) -> None:
        """:meth:`add` for a message with no tool calls that answers none, whole record, its
        own id or none (the hot path of a load: most messages)."""
        messages = self.messages
        if own_id is None:
            msg_id = f"{self.conv_id}:{len(messages)}"
        else:
            msg_id = self.message_id(own_id, pos)
        ids = self.ids
        if msg_id in ids:
            self.ctx.fail(f"duplicate message id {msg_id!r} in conversation {self.conv_id!r}",
                          self.where.msg(pos, "id"), msg_id)
        ids.add(msg_id)
        ctx = self.ctx
        if content and not content.isascii():
            ctx.text("content", content, self.where.msg(pos, "content"))
        if tokens is None:
            tokens = ctx.count(role, provider_role, content, [], name, images)
        if not 0 <= tokens <= MAX_TOKENS:  # given or counted: one cap
            ctx.tokens(tokens, self.where.msg(pos, "tokens"))
        messages.append(new_message(msg_id, role, tokens, content, (), None))
        self.records.append(record)
        self.proles.append(provider_role)
        if self.has_parts:
            self.parts.append(None)
        if content and not ctx.batch:
            self.listings.extend(ctx.listings(content))

    def _link(self, answers: str | None, by_name: str | None, pos: int, field: str | None,
              position: int) -> str:
        where = self.where
        if answers:
            stack = self.pending.get(answers)
            if stack:
                stack.pop()
                self.answered[answers] = position
                return answers
            if answers in self.answered:
                self.ctx.fail(
                    f"tool_call_id {answers!r} was already answered by message "
                    f"{self.answered[answers]} of conversation {self.conv_id!r} (no earlier "
                    "unanswered call has this id)",
                    where.msg(pos, field), answers,
                )
            self.ctx.fail(
                f"tool_call_id {answers!r} answers no earlier tool call in conversation "
                f"{self.conv_id!r}",
                where.msg(pos, field), answers,
            )
        anonymous = self.anonymous
        for k, (cid, cname, _p) in enumerate(anonymous):
            if by_name is None or cname == by_name:
                del anonymous[k]
                self.answered[cid] = position
                return cid
        if by_name is not None:
            self.ctx.fail(
                f"function result {by_name!r} answers no earlier unanswered function call of "
                f"that name in conversation {self.conv_id!r}",
                where.msg(pos, "name"), by_name,
            )
        self.ctx.fail(
            f"a tool result without a call id answers no earlier unanswered call without an id "
            f"in conversation {self.conv_id!r}",
            where.msg(pos, field), answers,
        )
        return ""  # pragma: no cover

    def build(self, user_id: str | None, fmt: str, envelope: Any = None, *,
              calls: bool = True) -> Conversation:
        """The conversation; ``calls=False`` leaves ``tool_calls`` empty (CSV: ids only)."""
        return Conversation(
            self.conv_id,
            user_id,
            tuple(self.messages),
            LAZY_LISTINGS if self.ctx.batch else tuple(self.listings),
            tuple(self.tool_calls) if calls else (),
            source=self.ctx.source,
            source_format=fmt,
            **(self._provider_metadata(envelope) if self.ctx.keep_records
               else self._session_only(envelope)),
        )

    @staticmethod
    def _session_only(envelope: Any) -> dict[str, Any]:
        """What ``provider_records=False`` keeps of the envelope: a coding-agent session's
        :class:`~convmem.AgentSession` (the agent's compactions and reported usage: not the
        provider's records, and what :func:`convmem.session_of` and the dashboard's agent views
        read), never a decoded record."""
        return {"envelope": envelope} if isinstance(envelope, AgentSession) else {}

    def _provider_metadata(self, envelope: Any) -> dict[str, Any]:
        """What export needs of the provider's own shapes (Conversation.records and the rest)."""
        return {
            "records": tuple(self.records),
            "parts": tuple(self.parts) if self.has_parts else (),
            "provider_roles": tuple(self.proles),
            "envelope": envelope,
        }


def json_fault(exc: json.JSONDecodeError, where: str) -> str:
    """The fault text of a JSON decoding error at ``where`` ("column 58", "line 2 column 23").
    Some of json's messages end in "at" and expect the place after them ("Unterminated string
    starting at"): they get it there, not before (a new user read "... starting at" as cut off).

    >>> import json
    >>> try: json.loads('{"a": "b')
    ... except json.JSONDecodeError as e: print(json_fault(e, f"column {e.colno}"))
    invalid JSON: Unterminated string starting at column 7
    >>> try: json.loads('[1 2]')
    ... except json.JSONDecodeError as e: print(json_fault(e, f"column {e.colno}"))
    invalid JSON at column 4: Expecting ',' delimiter
    """
    if exc.msg.endswith(" at"):
        return f"invalid JSON: {exc.msg} {where}"
    return f"invalid JSON at {where}: {exc.msg}"
