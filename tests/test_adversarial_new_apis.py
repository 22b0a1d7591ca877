"""Adversarial inputs to the APIs added for issues 10-13 (breaker session): each test failed
before its fix. Stores, prices and inputs are built by hand; values are checked against
History / brute force, errors must name the field and the value."""

from __future__ import annotations

import pytest

from convmem import History, Message
from convmem.stores import SQLStore
from convmem.tail import load_tail
from convmem.testing import MemoryStore


def _conversation() -> list[Message]:
    return [Message(f"m{i}", "user" if i % 2 == 0 else "assistant", 10) for i in range(10)]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_load_tail_refuses_a_pager_that_pages_oldest_first(kind):
    # Before: load_tail(store.pager(cid), 30) kept ['m2', 'm1', 'm0'] - the oldest messages,
    # reversed - where History over the conversation keeps ['m7', 'm8', 'm9'].
    store = MemoryStore(page_size=2) if kind == "memory" else SQLStore("sqlite://", page_size=2)
    store.append("c1", _conversation())
    with pytest.raises(ValueError, match="newest_first=False"):
        load_tail(store.pager("c1"), 30)
    history = History(30)
    for m in _conversation():
        history.add(m)
    tail = load_tail(store.pager("c1", newest_first=True), 30)
    assert [m.id for m in tail.messages] == [m.id for m in history.context()] == ["m7", "m8", "m9"]
