"""The Message value (SPEC §2).

>>> m = Message("a1", "assistant", 12, tool_call_ids=("c1", "c2"))
>>> m.role, m.tokens, m.tool_call_ids
('assistant', 12, ('c1', 'c2'))
>>> Message("u1", "user", -1)
Traceback (most recent call last):
...
ValueError: Message.tokens must be a non-negative int, got -1
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Message", "ROLES"]

#: The four roles of OpenAI-style chat; order is the dashboard's legend order.
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation: a frozen, slotted value.

    Args:
        id: unique id within the conversation (non-empty str).
        role: one of ``"system"``, ``"user"``, ``"assistant"``, ``"tool"``.
        tokens: the message's token count, a non-negative int (``bool`` is rejected).
        content: the text, if known; convmem never needs it to decide anything.
        tool_call_ids: for an assistant message that calls tools, the ids of those calls.
        tool_call_id: for a tool message, the id of the call it answers.

    Raises:
        TypeError: a field has the wrong type (names the field and the value).
        ValueError: a field has a bad value: empty id, unknown role, negative tokens, tool call ids
            on a non-assistant message, tool_call_id on a non-tool message, duplicate call ids.
    """

    id: str
    role: str
    tokens: int
    content: str | None = None
    tool_call_ids: tuple[str, ...] = ()
    tool_call_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str):
            raise TypeError(f"Message.id must be a str, got {self.id!r}")
        if not self.id:
            raise ValueError("Message.id must be a non-empty str, got ''")
        if not isinstance(self.role, str):
            raise TypeError(f"Message.role must be a str, got {self.role!r}")
        if self.role not in ROLES:
            raise ValueError(f"Message.role must be one of {ROLES}, got {self.role!r}")
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, int):
            raise TypeError(f"Message.tokens must be an int (not bool), got {self.tokens!r}")
        if self.tokens < 0:
            raise ValueError(f"Message.tokens must be a non-negative int, got {self.tokens!r}")
        if self.content is not None and not isinstance(self.content, str):
            raise TypeError(f"Message.content must be a str or None, got {self.content!r}")
        ids = self.tool_call_ids
        if isinstance(ids, list):
            ids = tuple(ids)
            object.__setattr__(self, "tool_call_ids", ids)
        if not isinstance(ids, tuple):
            raise TypeError(f"Message.tool_call_ids must be a tuple of str, got {ids!r}")
        for call_id in ids:
            if not isinstance(call_id, str):
                raise TypeError(f"Message.tool_call_ids must hold str, got {call_id!r} in {ids!r}")
            if not call_id:
                raise ValueError(f"Message.tool_call_ids must hold non-empty str, got '' in {ids!r}")
        if len(set(ids)) != len(ids):
            raise ValueError(f"Message.tool_call_ids has a duplicate id: {ids!r}")
        if ids and self.role != "assistant":
            raise ValueError(
                f"Message.tool_call_ids is only for assistant messages, got role {self.role!r}"
            )
        cid = self.tool_call_id
        if cid is not None:
            if not isinstance(cid, str):
                raise TypeError(f"Message.tool_call_id must be a str or None, got {cid!r}")
            if not cid:
                raise ValueError("Message.tool_call_id must be a non-empty str or None, got ''")
            if self.role != "tool":
                raise ValueError(
                    f"Message.tool_call_id is only for tool messages, got role {self.role!r}"
                )
