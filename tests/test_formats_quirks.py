"""Provider quirks, one hand-made file per quirk per format (tests/data/formats/): the expected
messages, roles, links and ids; hand cases F1, F3, F4 (shared/cases/CASES.md); skipped
conversations; what the builder passes to the counter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convmem import (
    FORMATS,
    LISTING_ID_PATTERN,
    FormatError,
    History,
    LoadResult,
    Message,
    Skipped,
    ToolCall,
    extract_listing_ids,
    load_conversations,
    parse_conversations,
)

DATA = Path(__file__).parent / "data" / "formats"


class Words:
    """A transparent counter on the new signature: words of content, call names and arguments,
    +1 for a name, +10 per image; it records every call so tests see what the builder passed."""

    name = "words"

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def count_text(self, text: str) -> int:
        return len(text.split())

    def count_message(self, role, content, tool_calls=(), name=None, images=()):
        self.calls.append((role, content, list(tool_calls), name, tuple(images)))
        n = len((content or "").split())
        for fname, args in tool_calls:
            n += len(fname.split()) + len(args.split())
        return n + (1 if name else 0) + 10 * len(images)


class OldWords:
    """A counter on the old signature (role, content, tool_calls) that rejects provider roles."""

    name = "old"

    def count_text(self, text: str) -> int:
        return len(text.split())

    def count_message(self, role, content, tool_calls=()):
        assert role in ("system", "user", "assistant", "tool"), role
        return len((content or "").split())


def load(name, **kw):
    kw.setdefault("counter", Words())
    return load_conversations(DATA / name, **kw)


def shape(conv):
    return [(m.role, m.content, m.tool_call_ids, m.tool_call_id) for m in conv.messages]


F1 = [("user", "x", (), None), ("assistant", None, ("call_0",), None),
      ("tool", "a", (), "call_0"), ("assistant", None, ("call_0",), None),
      ("tool", "b", (), "call_0")]


def assert_pairs_drop_together(conv):
    """History with keep_tool_groups drops each call with its result (hand case F1)."""
    h = History(conv.messages[1].tokens + conv.messages[2].tokens + 1, keep_tool_groups=True)
    dropped = []
    for m in conv.messages:
        dropped.extend(h.add(m))
    ids = [m.id for m in conv.messages]
    # whatever went, a call and its own result went together, and never a result alone
    for call_i, res_i in ((1, 2), (3, 4)):
        assert (ids[call_i] in dropped) == (ids[res_i] in dropped)
    assert ids[1] in dropped and ids[2] in dropped and ids[4] in h.messages()


# ---------------------------------------------------------------------------------------------
# F1: a tool-call id reused on a later turn


@pytest.mark.parametrize("name", ["openai_chat_reused_ids.json", "openai_chat_reused_ids.jsonl",
                                  "tau_bench_reused_ids.json", "csv_reused_ids.csv"])
def test_f1_reused_call_id_links_to_the_nearest_unanswered_call(name):
    r = load(name)
    assert not r.skipped
    for conv in r:
        assert shape(conv) == F1
        assert_pairs_drop_together(conv)
    if name.endswith(".jsonl"):
        assert [c.id for c in r] == ["r1", "r2"]


def test_f1_anthropic_toolu_reused():
    (c,) = load("anthropic_reused_ids.json")
    assert shape(c) == [
        ("system", "Be brief.", (), None), ("user", "x", (), None),
        ("assistant", None, ("toolu_1",), None), ("tool", "a", (), "toolu_1"),
        ("assistant", "again", ("toolu_1",), None), ("tool", "b", (), "toolu_1"),
        ("user", "thanks", (), None)]
    assert [m.id for m in c.messages] == ["c1:0", "c1:1", "c1:2", "c1:3", "c1:4", "c1:5", "c1:6"]
    assert c.tool_calls == (ToolCall("toolu_1", "read", "{}", "c1:2"),
                            ToolCall("toolu_1", "write", '{"k":1}', "c1:4"))
    assert c.parts == (None, None, None, None, None, (0,), (1,))
    assert c.provider_roles == ("system", "user", "assistant", "user", "assistant", "user",
                                "user")


def test_reused_id_answers_the_nearest_earlier_unanswered_call():
    msgs = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "k", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "k", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "k", "content": "for g"},
        {"role": "tool", "tool_call_id": "k", "content": "for f"},
        {"role": "tool", "tool_call_id": "k", "content": "nobody"},
    ]
    with pytest.raises(FormatError) as info:
        parse_conversations(json.dumps(msgs), counter=Words())
    assert (info.value.line, info.value.field) == (5, "tool_call_id")
    assert "already answered by message 4" in str(info.value)
    (c,) = parse_conversations(json.dumps(msgs[:4]), counter=Words())
    assert [m.tool_call_id for m in c.messages[2:]] == ["k", "k"]


# ---------------------------------------------------------------------------------------------
# F3: legacy function calling; missing ids pair by position


def test_f3_legacy_function_call_pairs_by_position_and_name():
    (c,) = load("openai_chat_legacy_function.json")
    assert shape(c) == [
        ("user", "Weather in Paris?", (), None),
        ("assistant", None, ("c1:1#0",), None),
        ("tool", '{"temp": 21}', (), "c1:1#0"),
        ("assistant", "It is 21 degrees.", (), None)]
    assert c.provider_roles == ("user", "assistant", "function", "assistant")
    assert c.tool_calls == (ToolCall("c1:1#0", "get_weather", '{"city":"Paris"}', "c1:1"),)
    from convmem import dump_conversations

    text = dump_conversations([c], "openai-chat")
    assert json.loads(text) == json.loads((DATA / "openai_chat_legacy_function.json").read_text())


def test_function_results_pair_by_name_not_just_order():
    msgs = [
        {"role": "assistant", "content": None, "function_call": {"name": "a", "arguments": "1"}},
        {"role": "assistant", "content": None, "function_call": {"name": "b", "arguments": "2"}},
        {"role": "function", "name": "b", "content": "B"},
        {"role": "function", "name": "a", "content": "A"},
    ]
    (c,) = parse_conversations(json.dumps(msgs), counter=Words())
    assert [m.tool_call_id for m in c.messages[2:]] == ["c1:1#0", "c1:0#0"]


def test_missing_and_empty_ids_pair_by_position():
    (c,) = load("openai_chat_missing_ids.json")
    assert shape(c) == [
        ("user", "two lookups", (), None),
        ("assistant", None, ("c1:1#0", "c1:1#1"), None),
        ("tool", "one", (), "c1:1#0"),
        ("tool", "two", (), "c1:1#1")]
    assert [tc.name for tc in c.tool_calls] == ["f", "g"]


# ---------------------------------------------------------------------------------------------
# developer, name, content parts; what the counter is given


def test_developer_name_and_content_parts():
    counter = Words()
    (c,) = load("openai_chat_developer_name_parts.json", counter=counter)
    assert (c.id, c.user_id) == ("parts", "u1")
    assert [(m.role, m.content) for m in c.messages] == [
        ("system", "Answer in French."), ("system", "Hello"),
        ("user", "What is in this picture?"), ("assistant", "I cannot see images."),
        ("assistant", "Still no.")]
    assert c.provider_roles == ("developer", "system", "user", "assistant", "assistant")
    # the builder passes the provider role, the name and the image (detail low, size unknown)
    roles = [call[0] for call in counter.calls]
    assert roles == ["developer", "system", "user", "assistant", "assistant"]
    assert [call[3] for call in counter.calls] == [None, "example_user", "alice", None, None]
    (image,) = counter.calls[2][4]
    assert (image.width, image.height, image.detail) == (None, None, "low")
    assert [m.tokens for m in c.messages] == [3, 1 + 1, 5 + 1 + 10, 4, 2]
    # developer is system-type: pin_system keeps it
    h = History(1, pin_system=True)
    for m in c.messages:
        h.add(m)
    assert h.messages()[:2] == ["parts:0", "parts:1"]


def test_old_counter_signature_gets_the_mapped_role():
    (c,) = load("openai_chat_developer_name_parts.json", counter=OldWords())
    assert [m.tokens for m in c.messages] == [3, 1, 5, 4, 2]


# ---------------------------------------------------------------------------------------------
# F4: Responses API items; LangChain; Gemini


def test_f4_responses_items():
    r = load("openai_responses_items.json")
    (c,) = r
    assert r.format == "openai-responses"
    assert shape(c) == [("user", "Weather in Paris?", (), None),
                        ("assistant", None, ("c1",), None),
                        ("tool", "sunny", (), "c1"),
                        ("assistant", "Sunny.", (), None)]
    assert [m.id for m in c.messages] == ["c1:0", "fc_1", "c1:2", "msg_2"]
    from convmem import dump_conversations

    text = dump_conversations(r, "openai-responses")
    assert json.loads(text) == json.loads((DATA / "openai_responses_items.json").read_text())
    assert parse_conversations(text, counter=Words()) == r


def test_responses_reused_call_ids_reasoning_and_developer():
    (c,) = load("openai_responses_reused_and_reasoning.json")
    assert shape(c) == [("system", "Be terse.", (), None), ("user", "go", (), None),
                        ("assistant", "Need a lookup.", (), None)] + F1[1:]
    assert c.messages[2].id == "rs_1"
    assert c.provider_roles[0] == "developer"


def test_langchain_messages_to_dict():
    r = load("langchain_messages.json")
    (c,) = r
    assert r.format == "langchain"
    assert shape(c) == [("system", "You are helpful.", (), None),
                        ("user", "add 2 and 3", (), None),
                        ("assistant", None, ("call_0",), None), ("tool", "5", (), "call_0"),
                        ("assistant", None, ("call_0",), None), ("tool", "10", (), "call_0"),
                        ("assistant", "The answer is 10.", (), None)]
    assert [m.id for m in c.messages] == ["c1:0", "h1", "a1", "c1:3", "a2", "c1:5", "a3"]
    assert c.provider_roles == ("system", "human", "ai", "tool", "ai", "tool", "ai")
    assert c.tool_calls[0] == ToolCall("call_0", "add", '{"a":2,"b":3}', "a1")


def test_gemini_contents_pair_by_name_without_ids():
    r = load("gemini_contents.json")
    (c,) = r
    assert r.format == "gemini"
    assert shape(c) == [
        ("system", "Be brief.", (), None),
        ("user", "Weather in Paris and Rome?", (), None),
        ("assistant", None, ("c1:2#0", "c1:2#1"), None),
        ("tool", '{"time":"10:00"}', (), "c1:2#1"),   # get_time answers the second call
        ("tool", '{"sky":"sunny"}', (), "c1:2#0"),
        ("user", "and tomorrow?", (), None),
        ("assistant", "Sunny, 10:00.", (), None)]
    assert c.parts[3:6] == ((0,), (1,), (2,))


# ---------------------------------------------------------------------------------------------
# One bad conversation is skipped with line, field, value and reason; strict keeps all-or-nothing


def test_one_broken_conversation_of_three_is_skipped():
    r = load("openai_chat_one_broken.jsonl")
    assert isinstance(r, LoadResult)
    assert [c.id for c in r] == ["ok1", "ok2"] and len(r) == 2 and r[1].id == "ok2"
    assert r.skipped == (Skipped("bad", 2, "messages[1].role", "'robot'",
                                 "unknown role 'robot' (expected one of system, developer, "
                                 "user, assistant, tool, function)"),)
    assert r.total == 3 and r.summary() == "Loaded 2 of 3 conversations; 1 skipped"
    with pytest.raises(FormatError) as info:
        load("openai_chat_one_broken.jsonl", strict=True)
    assert (info.value.line, info.value.field) == (2, "messages[1].role")


def test_skips_in_every_container():
    good = [{"role": "user", "content": "hi"}]
    bad = [{"role": "user", "content": 5}]
    r = parse_conversations(json.dumps([{"messages": good}, {"messages": bad},
                                        {"messages": good}]), counter=Words())
    assert [c.id for c in r] == ["c1", "c3"]
    assert [(s.line, s.field) for s in r.skipped] == [(2, "messages[0].content")]
    r = parse_conversations(json.dumps(good) + "\n{not json\n" + json.dumps(good) + "\n",
                            counter=Words())
    assert len(r) == 2 and r.skipped[0].line == 2 and "invalid JSON" in r.skipped[0].reason
    csv_text = ("conversation_id,id,role,tokens\na,m1,user,1\nb,m2,user,x\na,m3,assistant,2\n"
                "b,m4,user,3\n")
    r = parse_conversations(csv_text)
    assert [c.id for c in r] == ["a"] and [m.id for m in r[0].messages] == ["m1", "m3"]
    assert [(s.conversation_id, s.line, s.field) for s in r.skipped] == [("b", 3, "tokens")]



@pytest.mark.parametrize("as_bytes", [False, True])
def test_jsonl_files_joined_with_their_byte_order_marks_load_whole(as_bytes):
    """Break24: JSONL files saved with a UTF-8 BOM and joined (``cat a.jsonl b.jsonl``) carry a BOM
    at the start of a later line; that line was skipped as invalid JSON ("Unexpected UTF-8 BOM
    (decode using utf-8-sig)"), one conversation lost per joined file."""
    line = json.dumps({"messages": [{"role": "user", "content": "hi", "tokens": 2}]})
    text = "\ufeff" + line + "\r\n" + "\ufeff" + line + "\n\ufeff" + line + "\n"
    r = parse_conversations(text.encode("utf-8") if as_bytes else text)
    assert [c.id for c in r] == ["c1", "c2", "c3"] and r.skipped == ()
    assert [[(m.role, m.tokens) for m in c.messages] for c in r] == [[("user", 2)]] * 3
    r = parse_conversations(line + "\n\ufeff\ufeff" + line + "\n")  # two marks: not one file's
    assert [c.id for c in r] == ["c1"] and [s.line for s in r.skipped] == [2]

def test_nothing_loads_raises_the_first_fault():
    with pytest.raises(FormatError, match="line 1, field 'messages\\[0\\].role'"):
        parse_conversations('{"messages": [{"role": "bot", "content": ""}]}\n'
                            '{"messages": [{"role": "bot", "content": ""}]}\n')


def test_registry_and_aliases():
    assert list(FORMATS) == ["openai-chat", "openai-responses", "anthropic", "langchain",
                             "gemini", "tau-bench", "csv", "claude-code", "codex-cli"]
    for name, f in FORMATS.items():
        assert f.name == name and f.description and callable(f.detect)
    data = json.dumps([{"role": "user", "content": "hi"}])
    for fmt in ("auto", "openai", "openai-chat", "jsonl"):
        assert parse_conversations(data, format=fmt, counter=Words()).format == "openai-chat"
    with pytest.raises(ValueError, match="format must be one of"):
        parse_conversations(data, format="yaml")


def test_load_result_behaves_as_the_old_list():
    r = load("openai_chat_reused_ids.jsonl")
    assert r == list(r.conversations) and r[-1].id == "r2" and list(reversed(r))[0].id == "r2"
    assert r[0:1] == r.conversations[0:1]
    assert isinstance(r[0].messages[0], Message)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("0123456789 a\u0661\u00e9\n-"), max_size=60))
def test_listing_extractor_equals_its_pattern(text):
    """The byte-translate extractor finds exactly what LISTING_ID_PATTERN finds (the reference)."""
    assert extract_listing_ids(text) == LISTING_ID_PATTERN.findall(text)
    joined = extract_listing_ids(text + "\n" + text)  # the per-conversation batch: same ids twice
    assert joined == LISTING_ID_PATTERN.findall(text) * 2
