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


# -- issue 9: one validation of every number and string that enters ---------------------------------

from hypothesis import given, strategies as st  # noqa: E402

from convmem import MAX_TOKENS, check_text  # noqa: E402


def test_max_tokens_is_the_largest_count_exact_in_float64():
    assert MAX_TOKENS == 9_007_199_254_740_991 == 2**53 - 1
    assert Message("m", "user", MAX_TOKENS).tokens == MAX_TOKENS
    assert float(MAX_TOKENS) == MAX_TOKENS and float(MAX_TOKENS + 2) != MAX_TOKENS + 2


@pytest.mark.parametrize("tokens", [MAX_TOKENS + 1, 2**63, 10**30, 10**5000], ids=["cap+1", "2**63", "1e30", "1e5000"])
def test_tokens_over_the_cap_are_a_readable_value_error(tokens):
    with pytest.raises(ValueError) as info:
        Message("m", "user", tokens)
    text = str(info.value)
    assert text.startswith("Message.tokens must be at most MAX_TOKENS = 2**53 - 1 = 9,007,199,254,740,991, got ")
    assert len(text) < 200  # a 5,000-digit int is described by its size, not printed


@pytest.mark.parametrize(
    ("kwargs", "field", "code", "index"),
    [
        (dict(id="a\ud800", role="user", tokens=1), "Message.id", "D800", 1),
        (dict(id="x", role="user", tokens=1, content="hi \udfff"), "Message.content", "DFFF", 3),
        (dict(id="x", role="assistant", tokens=1, tool_call_ids=("ok", "\udc00c")), "Message.tool_call_ids", "DC00", 0),
        (dict(id="x", role="tool", tokens=1, tool_call_id="é\ud83d"), "Message.tool_call_id", "D83D", 1),
    ],
)
def test_lone_surrogates_are_rejected_naming_field_code_point_and_index(kwargs, field, code, index):
    with pytest.raises(ValueError) as info:
        Message(**kwargs)
    assert str(info.value).startswith(f"{field} holds a lone UTF-16 surrogate U+{code} at index {index} ")


def test_a_surrogate_deep_in_a_huge_content_is_quoted_around_it_and_bounded():
    content = "a" * 1_000_000 + "\ud800" + "b" * 1_000_000
    with pytest.raises(ValueError) as info:
        Message("m", "user", 1, content=content)
    text = str(info.value)
    assert "at index 1,000,000 " in text and "\\ud800" in text and "(2,000,001 characters)" in text
    assert len(text) < 250


def test_paired_surrogates_are_ordinary_text():
    emoji = "\U0001F600 caf\u00e9"  # one code point above the BMP: no lone surrogate
    assert Message("m", "user", 1, content=emoji).content == emoji


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(id=list(range(10**6)), role="user", tokens=1),
        dict(id="x", role="r" * 10**6, tokens=1),
        dict(id="x", role="user", tokens=1, content=b"\x00" * 10**6),
        dict(id="x", role="assistant", tokens=1, tool_call_ids=tuple(str(i) for i in range(10**5)) + (3,)),
    ],
)
def test_errors_describe_foreign_values_in_bounded_text(kwargs):
    with pytest.raises((TypeError, ValueError)) as info:
        Message(**kwargs)
    assert len(str(info.value)) < 300


@given(st.text())
def test_check_text_accepts_exactly_what_utf8_can_encode(text):
    try:
        text.encode("utf-8")
        encodable = True
    except UnicodeEncodeError:
        encodable = False
    if encodable:
        assert check_text("f", text) is text
    else:
        with pytest.raises(ValueError, match=r"^f holds a lone UTF-16 surrogate U\+D[89A-F][0-9A-F]{2} at index "):
            check_text("f", text)
