"""Message validation (SPEC §2) and the error hierarchy (SPEC §7)."""

from __future__ import annotations

import dataclasses

import pytest

import convmem
from convmem import ConvmemError, FormatError, Message, PageLoadError, TransientError


def test_message_fields_and_defaults():
    m = Message("a1", "assistant", 12, content="hi", tool_call_ids=("c1", "c2"))
    assert (m.id, m.role, m.tokens, m.content, m.tool_call_ids, m.tool_call_id) == (
        "a1", "assistant", 12, "hi", ("c1", "c2"), None,
    )
    t = Message("t1", "tool", 0, tool_call_id="c1")
    assert t.tokens == 0 and t.tool_call_id == "c1" and t.tool_call_ids == ()


def test_message_is_frozen_slotted_and_hashable():
    m = Message("u1", "user", 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.tokens = 4  # type: ignore[misc]
    assert not hasattr(m, "__dict__")
    assert {m, Message("u1", "user", 3)} == {m}


def test_list_of_call_ids_is_stored_as_tuple():
    assert Message("a", "assistant", 1, tool_call_ids=["c1"]).tool_call_ids == ("c1",)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        (dict(id=1, role="user", tokens=1), TypeError, r"Message.id .* 1"),
        (dict(id="", role="user", tokens=1), ValueError, r"Message.id .*''"),
        (dict(id="x", role="robot", tokens=1), ValueError, r"Message.role .*'robot'"),
        (dict(id="x", role=None, tokens=1), TypeError, r"Message.role .*None"),
        (dict(id="x", role="user", tokens=True), TypeError, r"Message.tokens .*True"),
        (dict(id="x", role="user", tokens=1.5), TypeError, r"Message.tokens .*1.5"),
        (dict(id="x", role="user", tokens=-1), ValueError, r"Message.tokens .*-1"),
        (dict(id="x", role="user", tokens=1, content=5), TypeError, r"Message.content .*5"),
        (dict(id="x", role="user", tokens=1, tool_call_ids=("c",)), ValueError, r"tool_call_ids .*'user'"),
        (dict(id="x", role="assistant", tokens=1, tool_call_ids="c1"), TypeError, r"tool_call_ids .*'c1'"),
        (dict(id="x", role="assistant", tokens=1, tool_call_ids=("c", "c")), ValueError, r"duplicate"),
        (dict(id="x", role="assistant", tokens=1, tool_call_ids=("",)), ValueError, r"tool_call_ids"),
        (dict(id="x", role="user", tokens=1, tool_call_id="c"), ValueError, r"tool_call_id .*'user'"),
        (dict(id="x", role="tool", tokens=1, tool_call_id=3), TypeError, r"tool_call_id .*3"),
        (dict(id="x", role="tool", tokens=1, tool_call_id=""), ValueError, r"tool_call_id"),
    ],
)
def test_bad_fields_name_field_and_value(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        Message(**kwargs)


def test_error_tree_subclasses_the_builtins_it_resembles():
    assert issubclass(TransientError, ConvmemError) and issubclass(TransientError, ConnectionError)
    assert issubclass(PageLoadError, ConvmemError) and issubclass(PageLoadError, RuntimeError)
    assert issubclass(FormatError, ConvmemError) and issubclass(FormatError, ValueError)
    err = PageLoadError("gave up", cursor="A", attempts=5, loaded=[Message("m1", "user", 1)])
    assert (err.cursor, err.attempts, [m.id for m in err.loaded]) == ("A", 5, ["m1"])
    f = FormatError("unknown role 'robot'", source="x.jsonl", line=3, field="messages[1].role")
    assert str(f) == "x.jsonl, line 3, field 'messages[1].role': unknown role 'robot'"
    assert (f.line, f.field, f.source) == (3, "messages[1].role", "x.jsonl")


def test_public_names_are_exported_and_exist():
    assert len(convmem.__all__) == len(set(convmem.__all__))
    for name in convmem.__all__:
        assert hasattr(convmem, name), name
    for name in ("Message", "History", "load_history", "evict_conversations", "eviction_curve",
                 "TransientError", "PageLoadError", "ConvmemError", "load_conversations"):
        assert name in convmem.__all__


def test_library_never_imports_streamlit():
    import pathlib

    root = pathlib.Path(convmem.__file__).parent
    for path in root.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "import streamlit" not in text and "from streamlit" not in text, path.name
