"""Argument checks shared by the test doubles (private)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..message import Message

__all__ = ["_is_int", "_is_number", "_message_tuple"]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _message_tuple(owner: str, messages: Any) -> tuple[Message, ...]:
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise TypeError(f"{owner}: messages must be a list of Message, got {messages!r}")
    seen: set[str] = set()
    for position, message in enumerate(messages):
        if not isinstance(message, Message):
            raise TypeError(
                f"{owner}: messages[{position}] must be a Message, got {message!r}"
            )
        if message.id in seen:
            raise ValueError(f"{owner}: messages[{position}] repeats the id {message.id!r}")
        seen.add(message.id)
    return tuple(messages)

