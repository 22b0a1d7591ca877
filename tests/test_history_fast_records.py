"""The records clearing and the walks build without the frozen dataclass ``__init__``
(convmem.history._cleared_message, _clearing_record; convmem.replay._accepted_event): each equals
the object its class's constructor makes, field by field, and the classes still have exactly the
fields those builders set and no ``__post_init__`` check they would skip (a field added to one of
these classes, or a check, fails here before it silently goes unset on the replay path)."""

from __future__ import annotations

import dataclasses
import importlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from convmem.history import (
    CLEAR_THINKING,
    CLEAR_TOOL_RESULTS,
    ClearedMessage,
    Clearing,
    SummaryEvent,
    _cleared_message,
    _clearing_record,
)

replay_module = importlib.import_module("convmem.replay")  # the module (convmem.replay is the function)

ids = st.text(min_size=1, max_size=8)
counts = st.integers(0, 10**6)


def field_values(obj) -> list:
    return [getattr(obj, f.name) for f in dataclasses.fields(obj)]


@pytest.mark.parametrize(
    "cls, built_fields",
    [
        (ClearedMessage, ("id", "role", "tokens_before", "tokens_after", "added_step")),
        (Clearing, ("step", "message_id", "reason", "trigger", "total_before", "total_after", "cleared")),
        (SummaryEvent, ("accepted", "id", "tokens", "budget", "replaced_id", "reason", "removed_id")),
    ],
    ids=["ClearedMessage", "Clearing", "SummaryEvent"],
)
def test_fast_built_classes_have_the_fields_their_builders_set_and_no_checks(cls, built_fields):
    assert tuple(f.name for f in dataclasses.fields(cls)) == built_fields
    assert not hasattr(cls, "__post_init__")


@given(ids, st.sampled_from(["tool", "assistant"]), counts, counts, counts)
def test_cleared_message_equals_the_constructed_one(mid, role, before, after, step):
    fast = _cleared_message(mid, role, before, after, step)
    made = ClearedMessage(mid, role, before, after, step)
    assert fast == made and hash(fast) == hash(made) and repr(fast) == repr(made)
    assert field_values(fast) == [mid, role, before, after, step]


@given(counts, ids, st.sampled_from([CLEAR_TOOL_RESULTS, CLEAR_THINKING]), counts, counts, counts,
       st.lists(st.tuples(ids, counts, counts, counts), max_size=4))
def test_clearing_record_equals_the_constructed_one(step, mid, reason, trigger, before, after, raw):
    cleared = tuple(ClearedMessage(i, "tool", b, a, s) for i, b, a, s in raw)
    fast = _clearing_record(step, mid, reason, trigger, before, after, cleared)
    made = Clearing(step, mid, reason, trigger, before, after, cleared)
    assert fast == made and hash(fast) == hash(made) and repr(fast) == repr(made)
    assert fast.freed_tokens == before - after and fast.cleared_ids == [i for i, *_ in raw]


@given(ids, counts, counts, st.one_of(st.none(), ids))
def test_accepted_event_equals_the_constructed_one(sid, tokens, budget, replaced):
    fast = replay_module._accepted_event(sid, tokens, budget, replaced)
    made = SummaryEvent(True, sid, tokens, budget, replaced_id=replaced)
    assert fast == made and hash(fast) == hash(made) and repr(fast) == repr(made)
    assert field_values(fast) == [True, sid, tokens, budget, replaced, None, None]
    assert replay_module._event_outcome(fast) == (1, 0, True)
