"""Export and round trips: parse -> dump -> parse is identical for every format (hand-made files,
the real retail file, hypothesis-generated conversations); keep + dump writes what History kept;
wrapped logs load with messages_path; unknown files name the supported formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import (
    FORMATS,
    Conversation,
    FormatError,
    History,
    Message,
    ToolCall,
    dump_conversations,
    load_conversations,
    parse_conversations,
)
from convmem.tokens import ApproxCounter



DATA = Path(__file__).parent / "data" / "formats"
REAL_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "real_data"
TOOLBENCH = REAL_DATA / "toolbench" / "G1_answer"
A = ApproxCounter()


def fields(convs):
    """What "identical" means across a round trip (docs/decisions.md, Formats)."""
    return [(c.id, c.user_id, c.messages, c.listing_ids, c.tool_calls, c.records, c.parts,
             c.provider_roles) for c in convs]


FILES = sorted(p.name for p in DATA.iterdir())


@pytest.mark.parametrize("name", FILES)
def test_same_format_round_trip_on_hand_made_files(name):
    r = load_conversations(DATA / name, counter=A)
    text = dump_conversations(r, r.format)
    again = parse_conversations(text, counter=A)
    assert again.format == r.format
    assert fields(again) == fields(r)
    assert dump_conversations(again, r.format) == text  # a fixed point


@pytest.mark.parametrize("name", FILES)
def test_provider_records_false_loads_the_same_conversations_without_them(name):
    """provider_records=False: the same ids, messages, listing ids and tool calls; no records,
    parts, provider roles or envelope; dump builds each conversation from its messages, and that
    text loads the same messages again."""
    full = load_conversations(DATA / name, counter=A)
    bare = load_conversations(DATA / name, counter=A, provider_records=False)
    assert [(c.id, c.user_id, c.messages, c.listing_ids, c.tool_calls, c.source_format) for c in bare] == [
        (c.id, c.user_id, c.messages, c.listing_ids, c.tool_calls, c.source_format) for c in full
    ]
    assert [s.reason for s in bare.skipped] == [s.reason for s in full.skipped] and bare.format == full.format
    assert all((c.records, c.parts, c.provider_roles, c.envelope) == ((), (), (), None) for c in bare)  # (sessions: tests/test_agent_sessions.py)
    assert any(c.records for c in full)  # the option changed something
    again = parse_conversations(dump_conversations(bare, "openai-chat"), counter=A)
    assert [[(m.role, m.content, m.tool_call_ids, m.tool_call_id) for m in c.messages] for c in again] == [
        [(m.role, m.content, m.tool_call_ids, m.tool_call_id) for m in c.messages] for c in bare
    ]


def test_provider_records_must_be_a_bool():
    with pytest.raises(TypeError, match="provider_records must be a bool, got 'no'"):
        parse_conversations('[{"role": "user", "content": "hi"}]', provider_records="no")


def test_real_retail_round_trip(tau_retail_file):
    r = load_conversations(tau_retail_file, counter=A)
    text = dump_conversations(r, "tau-bench")
    again = parse_conversations(text, counter=A)
    assert fields(again) == fields(r)
    assert json.loads(text) == json.loads(tau_retail_file.read_text())
    # and through OpenAI chat JSONL (same messages, ids by position)
    chat = parse_conversations(dump_conversations(r, "openai-chat"), counter=A)
    assert [[(m.role, m.content, m.tool_call_ids, m.tool_call_id) for m in c.messages]
            for c in chat] == [[(m.role, m.content, m.tool_call_ids, m.tool_call_id)
                                for m in c.messages] for c in r]


CROSS_SAFE = ["openai-chat", "anthropic", "langchain", "tau-bench", "csv"]


@pytest.mark.parametrize("target", CROSS_SAFE)
@pytest.mark.parametrize("name", ["openai_chat_reused_ids.json", "anthropic_reused_ids.json",
                                  "langchain_messages.json", "openai_responses_items.json"])
def test_cross_format_dump_keeps_roles_content_and_links(name, target):
    r = load_conversations(DATA / name, counter=A)
    again = parse_conversations(dump_conversations(r, target), counter=A)
    assert again.format == target

    def norm(c):
        return [(m.role, m.content or "", len(m.tool_call_ids), m.tool_call_id is not None)
                for m in c.messages]

    assert [norm(c) for c in again] == [norm(c) for c in r]
    for c in again:  # every result still answers a call made before it
        seen: set[str] = set()
        for m in c.messages:
            seen.update(m.tool_call_ids)
            if m.tool_call_id is not None:
                assert m.tool_call_id in seen


def test_keep_then_dump_writes_what_history_kept():
    (c,) = load_conversations(DATA / "anthropic_reused_ids.json", counter=A)
    h = History(4, pin_system=True, keep_tool_groups=True)
    for m in c.messages:
        h.add(m)
    kept = c.keep(h.messages())
    assert [m.id for m in kept.messages] == h.messages()
    out = json.loads(dump_conversations([kept], "anthropic"))
    original = json.loads((DATA / "anthropic_reused_ids.json").read_text())
    assert out["system"] == original["system"]
    kept_turns = out["messages"]
    # the last user turn was split (tool_result, text); each kept piece keeps its own blocks
    assert all(t in original["messages"] or t["content"][0] in original["messages"][4]["content"]
               for t in kept_turns)
    again = parse_conversations(json.dumps(out), counter=A)
    assert [(m.role, m.content) for m in again[0].messages] == [
        (m.role, m.content) for m in kept.messages]


def test_keep_partial_split_turn_keeps_only_its_blocks():
    (c,) = load_conversations(DATA / "anthropic_reused_ids.json", counter=A)
    ids = [m.id for m in c.messages]
    kept = c.keep([ids[0], ids[6]])  # system and the user's "thanks", not the tool result
    out = json.loads(dump_conversations([kept], "anthropic"))
    assert out == {"system": "Be brief.", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]}]}
    no_system = json.loads(dump_conversations([c.keep(ids[1:3])], "anthropic"))
    assert "system" not in no_system and len(no_system["messages"]) == 2
    with pytest.raises(ValueError, match="no message 'nope'"):
        c.keep(["nope"])
    with pytest.raises(TypeError):
        c.keep("c1:0")


def test_dump_errors():
    with pytest.raises(ValueError, match="format must be one of"):
        dump_conversations([], "yaml")
    with pytest.raises(ValueError, match="dump needs a format name"):
        dump_conversations([], "auto")
    with pytest.raises(TypeError, match="Conversation values"):
        dump_conversations(["x"], "openai-chat")


# ---------------------------------------------------------------------------------------------
# Hypothesis: generated conversations round-trip through every format


@st.composite
def conversations(draw):
    n_turns = draw(st.integers(0, 5))
    messages: list[Message] = []
    calls: list[ToolCall] = []
    text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                   max_size=12).filter(lambda s: s.strip() == s and s != "")
    if draw(st.booleans()):
        messages.append(Message(f"c:{len(messages)}", "system", 1, content=draw(text)))
    for t in range(n_turns):
        messages.append(Message(f"c:{len(messages)}", "user", 1, content=draw(text)))
        k = draw(st.integers(0, 2))
        reuse = draw(st.booleans())
        ids = [f"call_{j}" if reuse else f"t{t}_{j}" for j in range(k)]
        mid = f"c:{len(messages)}"
        if k:
            messages.append(Message(mid, "assistant", 1, tool_call_ids=tuple(ids)))
            for cid in ids:
                calls.append(ToolCall(cid, "fn", json.dumps({"q": draw(text)}), mid))
            for cid in ids:
                messages.append(Message(f"c:{len(messages)}", "tool", 1, content=draw(text),
                                        tool_call_id=cid))
        messages.append(Message(f"c:{len(messages)}", "assistant", 1, content=draw(text)))
    return Conversation("c", None, tuple(messages), (), tuple(calls))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.sampled_from(["openai-chat", "openai-responses", "anthropic",
                                         "langchain", "gemini", "tau-bench", "csv"]))
def test_generated_conversations_round_trip(conv, fmt):
    if not conv.messages:
        return
    text0 = dump_conversations([conv], fmt)
    first = parse_conversations(text0, counter=A, format=fmt)
    assert first.format == fmt
    # auto-detection may read a plain-text conversation as a more general format (an Anthropic
    # conversation without system or tool blocks is also OpenAI chat): the messages are the same
    auto = parse_conversations(text0, counter=A)
    assert [c.messages for c in auto] == [c.messages for c in first]
    text = dump_conversations(first, fmt)
    second = parse_conversations(text, counter=A, format=fmt)
    assert fields(second) == fields(first)
    assert dump_conversations(second, fmt) == text
    # the normalized messages survive the first (cross-format) dump as far as the format can say
    got = [(m.role, m.tool_call_id is not None, len(m.tool_call_ids)) for m in first[0].messages]
    want = [(m.role, m.tool_call_id is not None, len(m.tool_call_ids)) for m in conv.messages]
    if fmt in ("openai-chat", "anthropic", "langchain", "tau-bench", "csv", "gemini"):
        assert got == want


# ---------------------------------------------------------------------------------------------
# Wrapped logs (messages_path) and unknown files


def test_toolbench_files_load_with_messages_path():
    if not TOOLBENCH.is_dir():
        pytest.skip(f"toolbench data not found at {TOOLBENCH} (needs ../shared/real_data)")
    loaded = 0
    for path in sorted(TOOLBENCH.glob("*.json")):
        doc = json.loads(path.read_text())
        train = doc["answer_generation"].get("train_messages")
        if train is None:  # one file has no train_messages: a clear error, not a crash
            with pytest.raises(FormatError, match="messages_path .* found nothing"):
                load_conversations(path, counter=A,
                                   messages_path="answer_generation.train_messages[-1]")
            continue
        r = load_conversations(path, counter=A,
                               messages_path="answer_generation.train_messages[-1]")
        (c,) = r
        raw = train[-1]
        assert len(c.messages) == len(raw) and c.records == tuple(raw)
        assert c.messages[0].role == "system"
        for m, rec in zip(c.messages, raw):
            if rec["role"] == "function":
                assert m.role == "tool" and m.tool_call_id is not None
            if rec.get("function_call"):
                assert len(m.tool_call_ids) == 1
        loaded += 1
        with pytest.raises(FormatError) as info:
            load_conversations(path, counter=A)
        assert "messages_path='answer_generation.train_messages[-1]'" in str(info.value)
        assert "openai-chat" in str(info.value)
    assert loaded == 4


def test_messages_path_on_each_jsonl_line_and_bad_paths():
    lines = [json.dumps({"run": {"log": [{"role": "user", "content": f"q{k}"}]}})
             for k in range(3)]
    lines[1] = json.dumps({"run": {}})
    r = parse_conversations("\n".join(lines), messages_path="run.log", counter=A)
    assert [c.messages[0].content for c in r] == ["q0", "q2"]
    assert r.skipped[0].line == 2 and "found nothing" in r.skipped[0].reason
    with pytest.raises(ValueError, match="not a JMESPath expression"):
        parse_conversations("{}", messages_path="a[")
    with pytest.raises(TypeError, match="messages_path must be a str"):
        parse_conversations("{}", messages_path=3)


def test_unknown_file_lists_the_supported_formats():
    with pytest.raises(FormatError) as info:
        parse_conversations('{"events": [1, 2]}')
    text = str(info.value)
    for name in FORMATS:
        assert name in text
    assert "found an object with keys ['events']" in text
