"""The upload registry's memory estimate (convmem_dashboard.uploads) and the loader's positions.

``_decoded_bytes`` counts containers, dict keys, small ints and short str once per object, and
other str, int and float leaves once per reference (no id check: session 20). The walk that
counts every object once by id (the one before, kept here as the reference) is a lower bound of
it for any value (shared objects and subclasses included), and equal to it for what the JSON
decoder returns. The loader builds a fault's (line, field) only for text that may be at fault;
the faults must still name them.
"""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convmem import Conversation, FormatError, Message, parse_conversations, to_openai_jsonl
from convmem.synthetic import generate_conversation
from convmem_dashboard.uploads import _decoded_bytes, estimated_bytes

PER_OBJECT = 16


def reference_decoded_bytes(value):
    """sys.getsizeof + 16 of every object reachable through dicts (keys and values), lists and
    tuples, each object once by id; None and bools not counted (the walk before session 19)."""
    seen, stack, total = set(), [value], 0
    while stack:
        obj = stack.pop()
        if obj is None or isinstance(obj, bool) or id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj) + PER_OBJECT
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
    return total


class Text(str):
    """A str subclass (has a __dict__: sys.getsizeof is not str.__sizeof__ for it)."""


class Record(dict):
    """A dict subclass."""


LEAVES = (st.none() | st.booleans() | st.integers() | st.integers(-5, 300)
          | st.floats(allow_nan=False) | st.text(max_size=12)
          | st.text(alphabet=st.characters(min_codepoint=0x100), max_size=5)
          | st.text(max_size=4).map(Text))
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    | st.dictionaries(st.text(max_size=3), inner, max_size=2).map(Record),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(VALUES, st.integers(0, 3))
def test_decoded_bytes_is_at_least_the_getsizeof_walk(value, shares):
    # the same objects reached several times (records shared by the envelope, split turns)
    root = [value] * (shares + 1) + [(value, [value])]
    assert _decoded_bytes(root) >= reference_decoded_bytes(root)


@settings(max_examples=300, deadline=None)
@given(VALUES, st.integers(0, 3))
def test_decoded_bytes_is_exactly_the_getsizeof_walk_on_decoded_json(value, shares):
    decoded = json.loads(json.dumps({"a": value, "b": [value, {"a": value}]}))
    root = ([decoded] * (shares + 1), decoded["b"])  # containers reached several times
    assert _decoded_bytes(root) == reference_decoded_bytes(root)


def test_decoded_bytes_counts_a_leaf_reached_twice_twice_and_shared_singletons_once():
    text = "a longer string"
    small, short = 7, "x"
    value = [text, text, small, small, short, short, 2**70, None, True]
    size = sys.getsizeof
    expected = (size(value) + 2 * size(text) + size(small) + size(short) + size(2**70)
                + PER_OBJECT * 6)
    assert _decoded_bytes(value) == expected
    assert reference_decoded_bytes(value) == expected - size(text) - PER_OBJECT


def test_decoded_bytes_counts_memoized_keys_once_and_each_value():
    records = json.loads('[{"role": "user", "content": "hi"}, {"role": "user", "content": "hé"}]')
    assert records[0].keys() == records[1].keys()
    size = sys.getsizeof
    keys = size("role") + size("content")
    values = size("user") * 2 + size("hi") + size("hé")  # values are not memoized: 4 objects
    dicts = size(records[0]) + size(records[1])
    expected = size(records) + dicts + keys + values + PER_OBJECT * 9
    assert _decoded_bytes(records) == expected
    assert _decoded_bytes((records, records[0], None, True)) == expected + size((1, 2, 3, 4)) + PER_OBJECT


def reference_estimated_bytes(conversations):
    """estimated_bytes with sys.getsizeof everywhere (the reference for the C-level sizes)."""
    size = sys.getsizeof
    total = size(conversations) + PER_OBJECT
    for c in conversations:
        objs = [c, c.id, c.user_id, c.messages, c.listing_ids, c.tool_calls, c.source, c.source_format]
        total += sum(size(o) for o in objs if o is not None) + PER_OBJECT * len(objs)
        total += size(c.total_tokens)
        total += reference_decoded_bytes((c.records, c.parts, c.provider_roles, c.envelope))
        total += sum(size(x) + PER_OBJECT for x in c.listing_ids)
        for t in c.tool_calls:
            total += sum(map(size, (t, t.id, t.name, t.arguments, t.message_id))) + 5 * PER_OBJECT
        for m in c.messages:
            total += size(m) + size(m.id) + size(m.tokens) + 3 * PER_OBJECT
            if m.content is not None:
                total += size(m.content) + PER_OBJECT
            if m.tool_call_ids:
                total += size(m.tool_call_ids) + PER_OBJECT
                total += sum(size(x) + PER_OBJECT for x in m.tool_call_ids)
            if m.tool_call_id is not None:
                total += size(m.tool_call_id) + PER_OBJECT
    return total


def test_estimated_bytes_is_within_a_tenth_above_the_reference_on_parsed_uploads():
    synthetic = parse_conversations(to_openai_jsonl(
        [generate_conversation(3000, seed=k, conversation_id=f"c{k}") for k in range(3)]))
    non_ascii = parse_conversations(json.dumps(
        [{"role": "user", "content": "héllo ✓ " * 5 + str(i), "tokens": i * 10**9} for i in range(300)]))
    built = (Conversation("b", "u", (Message("m1", "user", 3, content="x 1234567890"),)),)
    assert sum(len(c.tool_calls) for c in synthetic) > 0  # calls, call ids and answers sized too
    for convs in (tuple(synthetic), tuple(non_ascii), built):
        reference = reference_estimated_bytes(convs)
        # a provider role is its record's "role" string too: the one leaf counted twice now
        twice = sum(sys.getsizeof(p) + PER_OBJECT for c in convs for p in c.provider_roles)
        assert 0 < reference <= estimated_bytes(convs) == reference + twice <= 1.1 * reference
    assert estimated_bytes(built) == reference_estimated_bytes(built)  # no records: the same


def _one_call(call: dict, answer: str = "k1") -> str:
    return json.dumps([
        {"role": "user", "content": "q", "tokens": 1},
        {"role": "assistant", "content": None, "tokens": 2, "tool_calls": [call]},
        {"role": "tool", "content": "r", "tool_call_id": answer, "tokens": 1},
    ])


def test_a_lone_surrogate_in_any_tool_call_field_still_names_message_and_field():
    ok = {"id": "k1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    bad_id = {**ok, "id": "k\ud800"}
    bad_name = {**ok, "function": {"name": "f\ud800", "arguments": "{}"}}
    bad_args = {**ok, "function": {"name": "f", "arguments": "{\"a\": \"\ud800\"}"}}
    for call, label, answer in ((bad_id, "tool call id", "k\ud800"), (bad_name, "tool call name", "k1"),
                                (bad_args, "tool call arguments", "k1")):
        with pytest.raises(FormatError) as info:
            parse_conversations(_one_call(call, answer), counter=None, source_name="t.json")
        assert (info.value.line, info.value.field) == (2, "tool_calls"), label
        assert info.value.reason.startswith(f"{label} holds a lone UTF-16 surrogate"), info.value.reason
    assert len(parse_conversations(_one_call(ok), counter=None)[0].tool_calls) == 1


def test_a_lone_surrogate_or_a_bad_count_elsewhere_names_its_field():
    cases = [
        ({"role": "user", "content": "a\ud800", "tokens": 1}, "content", "content holds"),
        ({"role": "user", "id": "m\ud800", "content": "a", "tokens": 1}, "id", "message id holds"),
        ({"role": "user", "content": "a", "tokens": 2**53}, "tokens", "tokens must be"),
        ({"role": "user", "content": "a", "tokens": True}, "tokens", "tokens must be"),
    ]
    for message, field, reason in cases:
        line = json.dumps({"id": "c", "messages": [{"role": "system", "content": "s", "tokens": 1},
                                                    message]})
        result = parse_conversations(f'{{"id": "ok", "messages": []}}\n{line}\n', counter=None)
        assert [c.id for c in result] == ["ok"]
        (skip,) = result.skipped
        assert (skip.line, skip.field) == (2, f"messages[1].{field}"), (message, skip)
        assert skip.reason.startswith(reason), skip.reason


def test_check_upload_names_the_first_bad_listing_id_or_tool_call_field_in_order():
    """check_upload tests ASCII lists at C speed and checks item by item only when one is not:
    the fault named is the first, in the order listing ids, then each call's name and arguments."""
    from convmem import ToolCall
    from convmem_dashboard.uploads import check_upload

    def conv(listings=("0123456789",), calls=()):
        m = Message("m", "assistant", 1, tool_call_ids=tuple(t.id for t in calls))
        return Conversation("c", None, (m,), listings, calls)

    ok = ToolCall("k1", "f", "{}", "m")
    check_upload([conv(("0123456789", "é"), (ok, ToolCall("k2", "fé", "{\"a\": \"ü\"}", "m")))], "x")
    cases = [
        (conv(("0123456789", "a\ud800", "b\udc00")), "listing id holds a lone UTF-16 surrogate U+D800"),
        (conv(calls=(ok, ToolCall("k2", "g", "{\ud801}", "m"), ToolCall("k3", "h\ud802", "{}", "m"))),
         "tool call arguments holds a lone UTF-16 surrogate U+D801"),
        (conv(calls=(ToolCall("k2", "g\ud803", "{\ud804}", "m"),)),
         "tool call name holds a lone UTF-16 surrogate U+D803"),
    ]
    for c, reason in cases:
        with pytest.raises(FormatError) as info:
            check_upload([conv(), c], "x.json")
        assert str(info.value).startswith(f"x.json: conversation 2: {reason}"), str(info.value)
