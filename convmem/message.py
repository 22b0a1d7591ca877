"""The Message value (SPEC §2).

>>> m = Message("a1", "assistant", 12, tool_call_ids=("c1", "c2"))
>>> m.role, m.tokens, m.tool_call_ids
('assistant', 12, ('c1', 'c2'))
>>> Message("u1", "user", -1)
Traceback (most recent call last):
...
ValueError: Message.tokens must be a non-negative int, got -1
>>> Message("u1", "user", 2**53)
Traceback (most recent call last):
...
ValueError: Message.tokens must be at most MAX_TOKENS = 2**53 - 1 = 9,007,199,254,740,991, got 9007199254740992
>>> Message("u1", "user", 1, content="ok \\ud800 then")
Traceback (most recent call last):
...
ValueError: Message.content holds a lone UTF-16 surrogate U+D800 at index 3 (text no encoder can write), got 'ok \\ud800 then'
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass

from .limits import MAX_TOKENS

__all__ = ["Message", "ROLES", "check_text"]

#: Longest excerpt of a bad value quoted in an error message (characters).
_SHOWN = 60


def _shown(text: str, at: int = 0) -> str:
    """``repr`` of at most _SHOWN characters of ``text`` around index ``at`` (bounded)."""
    if len(text) <= _SHOWN:
        return repr(text)
    start = max(0, min(at - _SHOWN // 2, len(text) - _SHOWN))
    head = "..." if start else ""
    tail = "..." if start + _SHOWN < len(text) else ""
    return f"{head}{text[start:start + _SHOWN]!r}{tail} ({len(text):,} characters)"


_REPR = reprlib.Repr()  # Python 3.11: limits are attributes, not constructor arguments
_REPR.maxlevel, _REPR.maxtuple, _REPR.maxlist, _REPR.maxdict, _REPR.maxset = 2, 6, 6, 4, 6
_REPR.maxstring = _REPR.maxother = _SHOWN


def _short_repr(value: object) -> str:
    """A bounded description of any value for an error message (never raises, never huge).

    >>> _short_repr(10**5000)
    'an int of 16,610 bits'
    >>> _short_repr(tuple(str(i) for i in range(10**5)))
    "('0', '1', '2', '3', '4', '5', ...)"
    """
    if isinstance(value, str):
        return _shown(value)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an int of {value.bit_length():,} bits"
    try:
        return _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a foreign __repr__ may raise anything
        return f"<{type(value).__name__} object>"


def check_text(field: str, text: str) -> str:
    """``text`` unchanged when every UTF-8 encoder can write it, else a readable ValueError.

    A str may hold lone UTF-16 surrogates (U+D800..U+DFFF), e.g. from a JSON escape ``"\\ud800"``;
    no encoder writes them, so they would fail later, far from the input (a page's protobuf, a
    download). This is the one check of every string that enters convmem: Message fields, and
    (convmem_dashboard.uploads) the other strings of an upload.

    O(1) for ASCII text, else one UTF-8 encode (O(len)).

    >>> check_text("id", "caf\\u00e9")
    'café'
    >>> check_text("id", "a\\udc80b")
    Traceback (most recent call last):
    ...
    ValueError: id holds a lone UTF-16 surrogate U+DC80 at index 1 (text no encoder can write), got 'a\\udc80b'
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{field} holds a lone UTF-16 surrogate U+{ord(text[exc.start]):04X} at index "
            f"{exc.start:,} (text no encoder can write), got {_shown(text, exc.start)}"
        ) from None
    return text

#: The four roles of OpenAI-style chat; order is the dashboard's legend order.
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation: a frozen, slotted value.

    Args:
        id: unique id within the conversation (non-empty str).
        role: one of ``"system"``, ``"user"``, ``"assistant"``, ``"tool"``.
        tokens: the message's token count, an int in ``[0, MAX_TOKENS]`` (``bool`` is rejected);
            MAX_TOKENS = 2**53 - 1 (convmem.limits): exact in int64 and float64, so every figure
            and the browser show the true count.
        content: the text, if known; convmem never needs it to decide anything.
        tool_call_ids: for an assistant message that calls tools, the ids of those calls.
        tool_call_id: for a tool message, the id of the call it answers.

    Every str field (id, content, call ids) must be encodable: a lone UTF-16 surrogate is a
    ValueError (:func:`check_text`). Checking costs O(1) per ASCII field (one encode otherwise).

    Raises:
        TypeError: a field has the wrong type (names the field and the value).
        ValueError: a field has a bad value: empty id, unknown role, tokens below 0 or above
            MAX_TOKENS, a lone surrogate in a str field, tool call ids on a non-assistant
            message, tool_call_id on a non-tool message, duplicate call ids.
        Messages name the field and quote at most 60 characters of the value (never huge).
    """

    id: str
    role: str
    tokens: int
    content: str | None = None
    tool_call_ids: tuple[str, ...] = ()
    tool_call_id: str | None = None

    def __post_init__(self) -> None:
        # Hot path (every message of every upload, replay and store): locals, ASCII fast paths;
        # the bounded descriptions are built only when raising.
        mid, role, tokens, content = self.id, self.role, self.tokens, self.content
        if not isinstance(mid, str):
            raise TypeError(f"Message.id must be a str, got {_short_repr(mid)}")
        if not mid:
            raise ValueError("Message.id must be a non-empty str, got ''")
        if not mid.isascii():
            check_text("Message.id", mid)
        if role not in ROLES:
            if not isinstance(role, str):
                raise TypeError(f"Message.role must be a str, got {_short_repr(role)}")
            raise ValueError(f"Message.role must be one of {ROLES}, got {_short_repr(role)}")
        if tokens.__class__ is not int:
            if isinstance(tokens, bool) or not isinstance(tokens, int):
                raise TypeError(f"Message.tokens must be an int (not bool), got {_short_repr(tokens)}")
        if not 0 <= tokens <= MAX_TOKENS:
            if tokens < 0:
                raise ValueError(f"Message.tokens must be a non-negative int, got {_short_repr(tokens)}")
            raise ValueError(
                f"Message.tokens must be at most MAX_TOKENS = 2**53 - 1 = {MAX_TOKENS:,}, "
                f"got {_short_repr(tokens)}"
            )
        if content is not None:
            if not isinstance(content, str):
                raise TypeError(f"Message.content must be a str or None, got {_short_repr(content)}")
            if not content.isascii():
                check_text("Message.content", content)
        ids = self.tool_call_ids
        if ids:
            if isinstance(ids, list):
                ids = tuple(ids)
                object.__setattr__(self, "tool_call_ids", ids)
            if not isinstance(ids, tuple):
                raise TypeError(f"Message.tool_call_ids must be a tuple of str, got {_short_repr(ids)}")
            for call_id in ids:
                if not isinstance(call_id, str):
                    raise TypeError(
                        f"Message.tool_call_ids must hold str, got {_short_repr(call_id)} in {_short_repr(ids)}"
                    )
                if not call_id:
                    raise ValueError(f"Message.tool_call_ids must hold non-empty str, got '' in {_short_repr(ids)}")
                if not call_id.isascii():
                    check_text("Message.tool_call_ids", call_id)
            if len(set(ids)) != len(ids):
                raise ValueError(f"Message.tool_call_ids has a duplicate id: {_short_repr(ids)}")
            if role != "assistant":
                raise ValueError(
                    f"Message.tool_call_ids is only for assistant messages, got role {_short_repr(role)}"
                )
        elif ids != ():
            if isinstance(ids, list):
                object.__setattr__(self, "tool_call_ids", ())
            else:
                raise TypeError(f"Message.tool_call_ids must be a tuple of str, got {_short_repr(ids)}")
        cid = self.tool_call_id
        if cid is not None:
            if not isinstance(cid, str):
                raise TypeError(f"Message.tool_call_id must be a str or None, got {_short_repr(cid)}")
            if not cid:
                raise ValueError("Message.tool_call_id must be a non-empty str or None, got ''")
            if not cid.isascii():
                check_text("Message.tool_call_id", cid)
            if role != "tool":
                raise ValueError(
                    f"Message.tool_call_id is only for tool messages, got role {_short_repr(role)}"
                )
