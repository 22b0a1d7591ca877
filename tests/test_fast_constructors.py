"""The loader's fast constructors (convmem.formats._base.new_message / new_tool_call): a class
with Message's (ToolCall's) slots sets them and becomes the class by ``__class__`` assignment, so
the values are true, frozen Messages and ToolCalls equal to the validated ones; a twin of another
layout falls back to the validating constructor. (Session 23: about half the cost of setting the
slots through their descriptors, at 10^5 messages the loader's most expensive Python step.)
"""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError

import pytest

from convmem import Message, ToolCall
from convmem.formats import _base
from convmem.limits import MAX_TOKENS


@pytest.mark.parametrize("fields", [
    ("m1", "user", 0, None, (), None),
    ("a", "assistant", MAX_TOKENS, "x", ("k1", "k2"), None),
    ("t", "tool", 7, "é", (), "k1"),
])
def test_new_message_is_a_frozen_message_equal_to_the_validated_one(fields):
    m = _base.new_message(*fields)
    ref = Message(*fields)
    assert type(m) is Message and m == ref and hash(m) == hash(ref) and repr(m) == repr(ref)
    with pytest.raises(FrozenInstanceError):
        m.tokens = 1  # type: ignore[misc]
    t = _base.new_tool_call("k1", "f", "{}", fields[0])
    assert type(t) is ToolCall and t == ToolCall("k1", "f", "{}", fields[0])
    with pytest.raises(FrozenInstanceError):
        t.name = "g"  # type: ignore[misc]


def test_a_twin_of_another_layout_falls_back_to_the_validating_constructor():
    class Other:  # other slots: CPython refuses the __class__ assignment
        __slots__ = ("id",)

        def __init__(self, *fields):
            self.__class__ = Message

    assert _base._fast(Message, _base._MESSAGE_FIELDS, Other) is Message
    assert _base.new_message is _base._MessageFields  # the real twin passes the check


def test_fast_values_pickle_and_compare_as_messages():
    m = _base.new_message("m1", "user", 3, "hi", (), None)
    back = pickle.loads(pickle.dumps(m))
    assert type(back) is Message and back == m == Message("m1", "user", 3, "hi")
    assert {m: 1}[Message("m1", "user", 3, "hi")] == 1  # same hash as the validated value


@pytest.mark.parametrize("n, seed", [(0, 0), (1, 3), (7, 1), (2_000, 7), (2_001, 11)])
def test_generate_conversation_equals_one_built_with_checked_values(n, seed, monkeypatch):
    """generate_conversation builds its messages with the loader's fast constructors: the same
    conversation as one built through Message's and ToolCall's checks (each value valid)."""
    from convmem import synthetic

    fast = synthetic.generate_conversation(n, seed=seed)
    monkeypatch.setattr(synthetic, "new_message", lambda *fields: Message(*fields))
    monkeypatch.setattr(synthetic, "new_tool_call", lambda *fields: ToolCall(*fields))
    checked = synthetic.generate_conversation(n, seed=seed)
    assert fast == checked and len(fast.messages) == n
    assert all(type(m) is Message for m in fast.messages) and all(type(c) is ToolCall for c in fast.tool_calls)
