"""Conversation files: every format to exact Message fields, auto-detection, every error's line and
field, a hypothesis fuzz that only FormatError escapes, listing extraction, CSV, round trips."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import (
    Conversation,
    FormatError,
    Message,
    ToolCall,
    extract_listing_ids,
    group_by_user,
    load_conversations,
    make_listing_extractor,
    parse_conversations,
    to_openai_jsonl,
)
from convmem.tokens import ApproxCounter


class WordCounter:
    """A transparent counter: whitespace-separated words of content, call names and arguments."""

    name = "words"

    def count_text(self, text: str) -> int:
        return len(text.split())

    def count_message(self, role, content, tool_calls=()) -> int:
        n = self.count_text(content or "")
        for name, args in tool_calls:
            n += self.count_text(name) + self.count_text(args)
        return n


W = WordCounter()


def parse(data, **kw):
    kw.setdefault("counter", W)
    kw.setdefault("source_name", "t.json")
    return parse_conversations(data, **kw)


def err(data, **kw) -> FormatError:
    with pytest.raises(FormatError) as info:
        parse(data, **kw)
    return info.value


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


OPENAI = [
    {"role": "system", "content": "You are a shop agent."},
    {"role": "user", "content": "Swap 1234567890 please"},
    {"role": "assistant", "content": "Checking both.", "tool_calls": [
        call("k1", "get_item", '{"item_id": "1234567890"}'),
        call("k2", "get_item", '{"item_id": "2222222222"}'),
    ], "function_call": None},
    {"role": "tool", "tool_call_id": "k1", "name": "get_item", "content": "item 1234567890 ok"},
    {"role": "tool", "tool_call_id": "k2", "content": "item 2222222222 gone"},
    {"role": "assistant", "content": [{"type": "text", "text": "Done:"},
                                      {"type": "text", "text": "1234567890 kept."}]},
]

OPENAI_EXPECTED = (
    Message("c1:0", "system", 5, content="You are a shop agent."),
    Message("c1:1", "user", 3, content="Swap 1234567890 please"),
    # "Checking both." 2 + 2 x (get_item 1 + 2 argument words)
    Message("c1:2", "assistant", 8, content="Checking both.", tool_call_ids=("k1", "k2")),
    Message("c1:3", "tool", 3, content="item 1234567890 ok", tool_call_id="k1"),
    Message("c1:4", "tool", 3, content="item 2222222222 gone", tool_call_id="k2"),
    Message("c1:5", "assistant", 3, content="Done:\n1234567890 kept."),
)
OPENAI_LISTINGS = ("1234567890", "1234567890", "2222222222", "1234567890", "2222222222",
                   "1234567890")


# ---------------------------------------------------------------------------------------------
# Formats


def test_openai_list_exact_fields():
    (c,) = parse(json.dumps(OPENAI))
    assert c.id == "c1" and c.user_id is None
    assert c.messages == OPENAI_EXPECTED
    assert c.listing_ids == OPENAI_LISTINGS
    assert c.distinct_listing_ids == ("1234567890", "2222222222")
    assert c.tool_calls == (
        ToolCall("k1", "get_item", '{"item_id": "1234567890"}', "c1:2"),
        ToolCall("k2", "get_item", '{"item_id": "2222222222"}', "c1:2"),
    )
    assert c.total_tokens == 25
    assert c.source == "t.json" and c.source_format == "openai-chat"
    assert c.title == "Swap 1234567890 please"


def test_openai_object_with_ids_tokens_and_user():
    doc = {"id": "conv-9", "user_id": "u7", "messages": [
        {"id": "m1", "role": "user", "content": "hi there", "tokens": 40},
        {"role": "assistant", "tool_calls": [call("z", "f", {"a": 1})]},  # no content key
        {"role": "tool", "tool_call_id": "z", "content": "r"},
    ]}
    (c,) = parse(json.dumps(doc))
    assert (c.id, c.user_id) == ("conv-9", "u7")
    assert c.messages == (
        Message("m1", "user", 40, content="hi there"),  # given tokens win over counting
        Message("conv-9:1", "assistant", 2, content=None, tool_call_ids=("z",)),
        Message("conv-9:2", "tool", 1, content="r", tool_call_id="z"),
    )
    assert c.tool_calls[0].arguments == '{"a":1}'  # object arguments kept as compact JSON


def test_openai_list_of_conversation_objects():
    doc = [{"id": "a", "messages": [{"role": "user", "content": "x"}]},
           {"user_id": "u", "messages": []}]
    a, b = parse(json.dumps(doc))
    assert (a.id, b.id, b.user_id, b.messages) == ("a", "c2", "u", ())


def test_jsonl_lines_of_lists_and_objects():
    lines = [
        json.dumps([{"role": "user", "content": "one 1111111111"}]),
        "",
        json.dumps({"id": "b", "user_id": "u1", "messages": [{"role": "user", "content": "two"}]}),
        "   ",
        json.dumps({"messages": [{"role": "user", "content": "three"}]}),
    ]
    convs = parse("\n".join(lines) + "\n")
    assert [(c.id, c.user_id) for c in convs] == [("c1", None), ("b", "u1"), ("c3", None)]
    assert [c.source_format for c in convs] == ["openai-chat"] * 3
    assert convs[0].messages == (Message("c1:0", "user", 2, content="one 1111111111"),)
    assert convs[0].listing_ids == ("1111111111",)


def test_jsonl_crlf_and_bom():
    data = ("\ufeff" + json.dumps([{"role": "user", "content": "a"}]) + "\r\n"
            + json.dumps([{"role": "user", "content": "b"}]) + "\r\n").encode()
    convs = parse(data)
    assert [c.messages[0].content for c in convs] == ["a", "b"]


def test_tau_bench_rows():
    rows = [
        {"task_id": 3, "trial": 0, "reward": 1.0, "info": {"task": {"user_id": "yusuf_1"}},
         "traj": OPENAI},
        {"task_id": 3, "trial": 1, "info": {}, "traj": [{"role": "user", "content": "hey"}]},
    ]
    a, b = parse(json.dumps(rows))
    assert (a.id, a.user_id, a.source_format) == ("task3-trial0", "yusuf_1", "tau-bench")
    assert [m.id for m in a.messages] == [f"task3-trial0:{i}" for i in range(6)]
    assert [(m.role, m.tokens, m.tool_call_ids, m.tool_call_id) for m in a.messages] == [
        (m.role, m.tokens, m.tool_call_ids, m.tool_call_id) for m in OPENAI_EXPECTED]
    assert (b.id, b.user_id) == ("task3-trial1", None)


ANTHROPIC = {
    "model": "claude", "system": "Be brief.", "messages": [
        {"role": "user", "content": "Find 1234567890"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "tu1", "name": "lookup", "input": {"id": "1234567890"}},
            {"type": "tool_use", "id": "tu2", "name": "stock", "input": {}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu1", "content": "found it"},
            {"type": "tool_result", "tool_use_id": "tu2",
             "content": [{"type": "text", "text": "3 left"}]},
            {"type": "text", "text": "thanks, and?"},
        ]},
        {"role": "assistant", "content": "That's all."},
    ],
}


def test_anthropic_blocks_map_to_messages():
    (c,) = parse(json.dumps(ANTHROPIC))
    assert c.source_format == "anthropic"
    assert c.messages == (
        Message("c1:0", "system", 2, content="Be brief."),
        Message("c1:1", "user", 2, content="Find 1234567890"),
        # "Looking." 1 + lookup 1 + '{"id":"1234567890"}' 1 + stock 1 + '{}' 1
        Message("c1:2", "assistant", 5, content="Looking.", tool_call_ids=("tu1", "tu2")),
        Message("c1:3", "tool", 2, content="found it", tool_call_id="tu1"),
        Message("c1:4", "tool", 2, content="3 left", tool_call_id="tu2"),
        Message("c1:5", "user", 2, content="thanks, and?"),
        Message("c1:6", "assistant", 2, content="That's all."),
    )
    assert c.tool_calls == (ToolCall("tu1", "lookup", '{"id":"1234567890"}', "c1:2"),
                            ToolCall("tu2", "stock", "{}", "c1:2"))
    assert c.listing_ids == ("1234567890", "1234567890")


def test_anthropic_system_blocks_list_and_jsonl():
    obj = {"system": [{"type": "text", "text": "Rule one."}],
           "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                        {"role": "assistant", "content": [{"type": "tool_use", "id": "t",
                                                           "name": "f", "input": {}}]},
                        {"role": "user", "content": [{"type": "tool_result",
                                                      "tool_use_id": "t"}]}]}
    (a,) = parse(json.dumps([obj]))
    assert [(m.role, m.content) for m in a.messages] == [
        ("system", "Rule one."), ("user", "hi"), ("assistant", None), ("tool", "")]
    convs = parse(json.dumps(obj) + "\n" + json.dumps(obj | {"id": "second"}) + "\n")
    assert [c.id for c in convs] == ["c1", "second"]
    assert [c.source_format for c in convs] == ["anthropic"] * 2
    (forced,) = parse(json.dumps({"messages": [{"role": "user", "content": "x"}]}),
                      format="anthropic")
    assert forced.source_format == "anthropic"


def test_anthropic_message_ids_with_split():
    obj = {"system": "s", "messages": [
        {"role": "assistant", "id": "a1", "content": [{"type": "tool_use", "id": "t",
                                                       "name": "f", "input": {}}]},
        {"role": "user", "id": "u1", "content": [{"type": "tool_result", "tool_use_id": "t",
                                                  "content": "r"},
                                                 {"type": "text", "text": "ok"}]}]}
    (c,) = parse(json.dumps(obj))
    assert [m.id for m in c.messages] == ["c1:0", "a1", "u1:0", "u1:1"]


CSV_TEXT = (
    "conversation_id,user_id,id,role,tokens,content,tool_call_ids,tool_call_id\n"
    "a,u1,s,system,20,,,\n"
    'a,u1,m1,user,30,"Want 1234567890,\nand more",,\n'
    "b,,x1,user,5,hello,,\n"
    "a,u1,m2,assistant,40,,c1 c2,\n"
    "a,u1,m3,tool,12,result,,c1\n"
    "a,u1,m4,tool, 7 ,,,\n"
)


def test_csv_exact_fields_and_grouping():
    a, b = parse(CSV_TEXT, counter=None)  # tokens are given: no counter is ever needed
    assert (a.id, a.user_id, a.source_format) == ("a", "u1", "csv")
    assert a.messages == (
        Message("s", "system", 20),
        Message("m1", "user", 30, content="Want 1234567890,\nand more"),
        Message("m2", "assistant", 40, tool_call_ids=("c1", "c2")),
        Message("m3", "tool", 12, content="result", tool_call_id="c1"),
        Message("m4", "tool", 7),  # CSV tool rows may be unlinked
    )
    assert a.listing_ids == ("1234567890",)
    assert (b.id, b.user_id, b.messages) == ("b", None, (Message("x1", "user", 5,
                                                                 content="hello"),))


def test_csv_minimal_columns_one_conversation():
    (c,) = parse("id,role,tokens\ns,system,20\nu1,user,30\n")
    assert c.id == "c1" and [m.tokens for m in c.messages] == [20, 30]


def test_load_from_path_binary_and_text_files(tmp_path):
    p = tmp_path / "conv.jsonl"
    p.write_text(json.dumps(OPENAI) + "\n")
    (from_path,) = load_conversations(p, counter=W)
    assert from_path.source == "conv.jsonl"
    with p.open("rb") as f:
        (from_bin,) = load_conversations(f, counter=W)
    (from_text,) = load_conversations(io.StringIO(p.read_text()), counter=W, source_name="x")
    assert from_path == from_bin == from_text
    assert from_bin.source == "conv.jsonl" and from_text.source == "x"
    assert from_path.messages == OPENAI_EXPECTED


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        (json.dumps(OPENAI), "openai-chat"),
        (json.dumps({"messages": OPENAI}), "openai-chat"),
        (json.dumps(OPENAI) + "\n" + json.dumps(OPENAI), "openai-chat"),
        (json.dumps([{"task_id": 1, "trial": 0, "traj": OPENAI}]), "tau-bench"),
        (json.dumps(ANTHROPIC), "anthropic"),
        (json.dumps(ANTHROPIC) + "\n" + json.dumps(ANTHROPIC | {"id": "z"}), "anthropic"),
        (CSV_TEXT, "csv"),
    ],
)
def test_auto_detection(data, fmt):
    assert {c.source_format for c in parse(data)} == {fmt}
    assert {c.source_format for c in parse(data.encode("utf-8"))} == {fmt}


def test_explicit_format_mismatch_is_an_error():
    # "openai" is an alias of openai-chat, which reads JSON and JSONL alike
    assert len(parse(json.dumps(OPENAI) + "\n" + json.dumps(OPENAI), format="openai")) == 2
    e = err(json.dumps({"messages": []}), format="tau-bench")
    assert "missing 'task_id'" in str(e)
    e = err(json.dumps(OPENAI), format="csv")
    assert e.line == 1 and "unknown column" in str(e)
    no_system = {k: v for k, v in ANTHROPIC.items() if k != "system"}
    e = err(json.dumps(no_system), format="openai")
    assert (e.line, e.field) == (2, "content[1].type")
    assert "'tool_use'" in str(e)
    e = err(json.dumps({"system": "s", "messages": [U]}), format="openai")
    assert (e.line, e.field) == (None, "system") and "format='anthropic'" in str(e)
    with pytest.raises(ValueError, match="format must be one of"):
        parse("[]", format="yaml")


# ---------------------------------------------------------------------------------------------
# Errors: line and field


def msgs(*ms):
    return json.dumps(list(ms))


U = {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    ("data", "line", "field", "text"),
    [
        # JSON document holding one conversation: line = 1-based message index
        (msgs(U, {"role": "bot", "content": "x"}), 2, "role", "unknown role 'bot'"),
        (msgs({"role": 3, "content": "x"}), 1, "role", "unknown role 3 (number)"),
        (msgs(U, {"content": "x"}), 2, "role", "missing 'role'"),
        (msgs(U, U, {"role": "user"}), 3, "content", "missing 'content'"),
        (msgs({"role": "user", "content": None}), 1, "content", "content is null"),
        (msgs({"role": "assistant", "content": None}), 1, "content", "content is null"),
        (msgs({"role": "user", "content": 5}), 1, "content", "got number"),
        (msgs({"role": "user", "content": [{"type": "image_url"}]}), 1, "content[0].image_url",
         "an image_url part needs an object 'image_url'"),
        (msgs({"role": "user", "content": [{"type": "video"}]}), 1, "content[0].type",
         "unsupported content part type 'video'"),
        (msgs({"role": "assistant", "content": "x", "tool_calls": {"id": "a"}}), 1,
         "tool_calls", "'tool_calls' must be a list, got object"),
        (msgs({"role": "user", "content": "x", "tool_calls": [call("a", "f", "{}")]}), 1,
         "tool_calls", "only assistant messages"),
        (msgs({"role": "assistant", "content": "x", "tool_calls": [{"function": {}}]}), 1,
         "tool_calls[0].function.name", "non-empty string 'name'"),
        (msgs({"role": "assistant", "content": "x", "tool_calls": [{"id": 5}]}), 1,
         "tool_calls[0].id", "'id' must be a string"),
        (msgs({"role": "assistant", "content": "x", "tool_calls": [{"id": "a"}]}), 1,
         "tool_calls[0].function", "object 'function'"),
        (msgs({"role": "assistant", "content": "x",
               "tool_calls": [{"id": "a", "function": {"name": "f"}}]}), 1,
         "tool_calls[0].function.arguments", "missing 'arguments'"),
        (msgs({"role": "assistant", "content": "x",
               "tool_calls": [{"id": "a", "function": {"arguments": "{}"}}]}), 1,
         "tool_calls[0].function.name", "'name'"),
        (msgs({"role": "assistant", "content": "x",
               "tool_calls": [call("a", "f", "{}"), call("a", "g", "{}")]}), 1,
         "tool_calls[1].id", "duplicate tool call id 'a'"),
        (msgs({"role": "assistant", "content": "x", "function_call": {"name": "f"}}), 1,
         "function_call.arguments", "missing 'arguments'"),
        (msgs({"role": "user", "content": "x", "function_call": {"name": "f"}}), 1,
         "function_call", "only assistant messages may have function_call"),
        (msgs(U, {"role": "function", "content": "r"}), 2, "name", "needs a non-empty string"),
        (msgs(U, {"role": "function", "name": "f", "content": "r"}), 2, "name",
         "function result 'f' answers no earlier unanswered function call"),
        (msgs(U, {"role": "tool", "content": "r"}), 2, "tool_call_id",
         "without a call id answers no earlier unanswered call"),
        (msgs(U, {"role": "tool", "content": "r", "tool_call_id": "nope"}), 2, "tool_call_id",
         "tool_call_id 'nope' answers no earlier tool call in conversation 'c1'"),
        (msgs({"role": "tool", "content": "r", "tool_call_id": "a"},
              {"role": "assistant", "content": None, "tool_calls": [call("a", "f", "{}")]}), 1,
         "tool_call_id", "answers no earlier tool call"),
        (msgs({"role": "assistant", "content": None, "tool_calls": [call("a", "f", "{}")]},
              {"role": "tool", "content": "r", "tool_call_id": "a"},
              {"role": "tool", "content": "r", "tool_call_id": "a"}), 3, "tool_call_id",
         "already answered by message 2"),
        (msgs({"role": "user", "content": "x", "tool_call_id": "a"}), 1, "tool_call_id",
         "only tool messages"),
        (msgs({"id": "m", **U}, {"id": "m", **U}), 2, "id", "duplicate message id 'm'"),
        (msgs({"id": "c1:1", **U}, U), 2, "id", "duplicate message id 'c1:1'"),
        (msgs({"id": 7, **U}), 1, "id", "message id must be a non-empty string"),
        (msgs({"tokens": -1, **U}), 1, "tokens", "non-negative integer, got -1"),
        (msgs({"tokens": True, **U}), 1, "tokens", "got True"),
        (msgs({"tokens": 2.5, **U}), 1, "tokens", "got 2.5"),
        (msgs(U, "hello"), 2, None, "a message must be an object, got string"),
    ],
)
def test_message_errors_name_line_and_field(data, line, field, text):
    e = err(data)
    assert (e.source, e.line, e.field) == ("t.json", line, field)
    assert text in str(e)
    assert str(e).startswith(f"t.json, line {line}")


def test_errors_in_jsonl_use_physical_line_and_json_path():
    lines = [json.dumps([U]), "", json.dumps({"messages": [U, {"role": "robot", "content": ""}]})]
    e = err("\n".join(lines), strict=True)
    assert (e.line, e.field) == (3, "messages[1].role")
    lines[2] = json.dumps([U, {"role": "tool", "tool_call_id": "q", "content": ""}])
    e = err("\n".join(lines), strict=True)
    assert (e.line, e.field) == (3, "[1].tool_call_id")
    e = err(json.dumps([U]) + "\n" + '{"messages": [}' + "\n", strict=True)
    assert (e.line, e.field) == (2, None) and "invalid JSON at column 15" in str(e)
    # json's messages that end in "at" get the place after them (a new user read one as cut off)
    r = parse_conversations(json.dumps([U]) + "\n" + '[{"role": "user", "content": "x' + "\n")
    assert [str(s) for s in r.skipped] == ["line 2: invalid JSON: Unterminated string starting at column 30"]
    e = err(json.dumps([U]) + "\n" + json.dumps(U) + "\n", strict=True)
    assert e.line == 2 and "single message" in str(e)
    e = err(json.dumps([U]) + "\n" + "42\n", strict=True)
    assert e.line == 2 and "got number" in str(e)
    e = err(json.dumps({"id": "a", "messages": []}) + "\n" + json.dumps({"id": "a",
                                                                          "messages": []}),
            strict=True)
    assert (e.line, e.field) == (2, "id") and "duplicate conversation id 'a'" in str(e)


def test_errors_in_a_list_of_conversations_use_conversation_index():
    doc = [{"messages": [U]}, {"messages": [U, U, {"role": "user", "content": None}]}]
    e = err(json.dumps(doc), strict=True)
    assert (e.line, e.field) == (2, "messages[2].content")
    e = err(json.dumps([{"messages": [U]}, {"messages": "no"}]), strict=True)
    assert (e.line, e.field) == (2, "messages") and "'messages' must be a list" in str(e)
    e = err(json.dumps([{"messages": [U]}, {"messages": [], "user_id": ["x"]}]), strict=True)
    assert (e.line, e.field) == (2, "user_id")


def test_tau_bench_errors():
    row = {"task_id": 0, "trial": 0, "traj": [U]}
    e = err(json.dumps([row, {"task_id": 1, "trial": 0}]), strict=True)
    assert (e.line, e.field) == (2, "traj") and "missing 'traj'" in str(e)
    e = err(json.dumps([row, {"trial": 0, "traj": []}]), strict=True)
    assert (e.line, e.field) == (2, "task_id")
    e = err(json.dumps([row, {"task_id": 1, "trial": 0, "traj": [U, {"role": "x",
                                                                     "content": ""}]}]), strict=True)
    assert (e.line, e.field) == (2, "traj[1].role")
    e = err(json.dumps([row, row]), strict=True)
    assert (e.line, e.field) == (2, "task_id") and "duplicate conversation id" in str(e)
    e = err(json.dumps([row, {**row, "task_id": 2, "info": {"task": {"user_id": 5.5}}}]),
            strict=True)
    assert (e.line, e.field) == (2, "info.task.user_id")
    e = err(json.dumps([row, "x"]), strict=True)
    assert e.line == 2 and "must be an object" in str(e)


def test_anthropic_errors():
    def conv(*ms, **kw):
        return json.dumps({"system": "s", "messages": list(ms), **kw})

    e = err(conv({"role": "system", "content": "x"}))
    assert (e.line, e.field) == (1, "role") and "top-level 'system'" in str(e)
    e = err(conv(U, {"role": "assistant", "content": [{"type": "image", "source": {}}]}))
    assert (e.line, e.field) == (2, "content[0].type") and "'image'" in str(e)
    e = err(conv({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "q"}]}))
    assert (e.line, e.field) == (1, "content[0].tool_use_id")
    assert "answers no earlier tool call" in str(e)
    e = err(conv({"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                               "input": {}}]}))
    assert (e.line, e.field) == (1, "content[0].type")
    e = err(conv({"role": "assistant", "content": [{"type": "tool_use", "id": "t",
                                                    "name": "f"}]}))
    assert (e.line, e.field) == (1, "content[0].input")
    e = err(conv({"role": "assistant", "content": [
        {"type": "text", "text": "a"},
        {"type": "tool_use", "id": "t", "name": "f", "input": {}},
        {"type": "tool_use", "id": "t", "name": "g", "input": {}}]}))
    assert (e.line, e.field) == (1, "content[2].id")
    e = err(conv(U, system=5))
    assert (e.line, e.field) == (None, "system")
    e = err(json.dumps({"system": [{"type": "text"}], "messages": []}))
    assert (e.line, e.field) == (None, "system[0].text")
    e = err(conv({"role": "user"}))
    assert (e.line, e.field) == (1, "content")


@pytest.mark.parametrize(
    ("data", "line", "field", "text"),
    [
        ("id,role,tokens\nm1,user,1.5\n", 2, "tokens", "got '1.5'"),
        ("id,role,tokens\nm1,user,-1\n", 2, "tokens", "got '-1'"),
        ("id,role,tokens\nm1,user,\n", 2, "tokens", "got ''"),
        ("id,role,tokens\nm1,user,abc\n", 2, "tokens", "got 'abc'"),
        ("id,role,tokens\nm1,user,٣\n", 2, "tokens", "non-negative integer"),
        ("id,role,tokens\nm1,user,3\nm2,bot,4\n", 3, "role", "unknown role 'bot'"),
        ("id,role,tokens\nm1,user,3\nm1,user,4\n", 3, "id", "duplicate message id 'm1'"),
        ("id,role,tokens\n,user,3\n", 2, "id", "id is empty"),
        ("id,role\nm1,user\n", 1, "tokens", "missing column 'tokens'"),
        ("id,role,tokens,extra\n", 1, "extra", "unknown column 'extra'"),
        ("id,role,tokens,id\n", 1, "id", "duplicate column"),
        ("id,role,tokens\nm1,user\n", 2, None, "expected 3 fields, got 2"),
        ("id,role,tokens\n", 1, None, "no rows after the CSV header"),
        ('id,role,tokens,content\nm1,user,3,"a\nb"\nm2,user,x,c\n', 4, "tokens", "got 'x'"),
        ("id,role,tokens,tool_call_id\nm1,tool,3,k9\n", 2, "tool_call_id", "answers no earlier"),
        ("id,role,tokens,tool_call_ids\nm1,user,3,k1\n", 2, "tool_call_ids", "only assistant"),
        ("id,role,tokens,tool_call_id\nm1,user,3,k1\n", 2, "tool_call_id", "only tool rows"),
        ("id,role,tokens,conversation_id,user_id\nm1,user,3,a,u1\nm2,user,3,a,u2\n", 3,
         "user_id", "differs from 'u1' given on line 2"),
        ("id,role,tokens,conversation_id\nm1,user,3, \n", 2, "conversation_id", "empty"),
    ],
)
def test_csv_errors(data, line, field, text):
    e = err(data, format="csv")
    assert (e.line, e.field) == (line, field)
    assert text in str(e)
    assert str(err(data)) == str(e)  # auto-detected as CSV (header names id and role): same error


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ("", "empty file"),
        ("  \n\t\n", "empty file"),
        (b"", "empty file"),
        (b"\xef\xbb\xbf", "empty file"),
        ("hello world\n", "unknown format"),
        # every JSON / JSONL format is named, the coding-agent sessions too (a new user missed them)
        ("hello world\n", "gemini, tau-bench, claude-code, codex-cli) or CSV with header id,role,tokens"),
        ("42", "unknown format"),
        ("[]", "empty list"),
        ('{"foo": 1}', "unknown format: expected one of openai-chat, "),
        ('{"foo": 1}', "found an object with keys ['foo']"),
        ('[1, 2]', "found a number value 1"),
        ('[{"a": 1}]', "found an object with keys ['a']"),
        (b"[\xff]", "not UTF-8 text"),
        ("[" * 100_000 + "]" * 100_000, "invalid JSON"),
        ('[{"role": "user", "content": "x", "tokens": ' + "9" * 5000 + "}]", "invalid JSON"),
    ],
)
def test_file_level_errors(data, text):
    e = err(data)
    assert text in str(e)


def test_invalid_json_document_reports_line_and_column():
    data = '[\n  {"role": "user",\n   "content": "hi"\n  },\n  {"role": \n]\n'
    e = err(data)
    assert e.line == 6 and e.field is None
    assert "invalid JSON at line 6 column 1: Expecting value" in str(e)


def test_size_cap(tmp_path):
    data = json.dumps(OPENAI)
    n = len(data.encode())
    assert len(parse(data, max_bytes=n)) == 1
    e = err(data, max_bytes=n - 1)
    assert "over the" in str(e) and e.line is None
    e = err(data.encode(), max_bytes=10)
    assert f"file is {n:,} bytes, over the 10-byte cap" in str(e)
    p = tmp_path / "big.json"
    p.write_text(data)
    with pytest.raises(FormatError, match="over the 100-byte cap"):
        load_conversations(p, max_bytes=100)
    with pytest.raises(FormatError, match="over the 100-byte cap"):
        load_conversations(io.BytesIO(data.encode()), max_bytes=100)
    with pytest.raises(ValueError, match="max_bytes must be positive"):
        parse(data, max_bytes=0)
    with pytest.raises(TypeError, match="data must be bytes or str"):
        parse(123)


def test_format_error_is_value_error_and_missing_file_is_oserror(tmp_path):
    with pytest.raises(ValueError):
        parse("nope")
    with pytest.raises(FileNotFoundError):
        load_conversations(tmp_path / "absent.json")


# ---------------------------------------------------------------------------------------------
# Fuzz: only FormatError ever escapes

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=25,
)
IDS = st.sampled_from(["k1", "k2", "m1", "c1:0", ""]) | st.none() | st.integers(0, 2)
TEXT = st.text(max_size=12) | st.sampled_from(["1234567890", "x 2222222222 y"])
ROLE_VALUES = st.sampled_from(["user", "assistant", "tool", "system"]) | st.sampled_from(
    ["bot", "", None, 1, ["user"]])
BLOCKS = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "image", None])},
    optional={"text": TEXT | st.none(), "id": IDS, "name": st.sampled_from(["f", "", None]),
              "input": st.none() | st.dictionaries(st.text(max_size=3), TEXT, max_size=2),
              "tool_use_id": IDS,
              "content": TEXT | st.none() | st.lists(st.fixed_dictionaries(
                  {"type": st.sampled_from(["text", "image"])}, optional={"text": TEXT}),
                  max_size=2)},
)
CONTENT = st.none() | TEXT | st.lists(BLOCKS, max_size=3) | st.integers()
FUNCTION = st.fixed_dictionaries(
    {}, optional={"name": st.sampled_from(["f", "g", "", None]),
                  "arguments": TEXT | st.dictionaries(st.text(max_size=3), TEXT, max_size=2)
                  | st.integers() | st.none()})
TOOL_CALLS = st.none() | st.integers() | st.lists(
    st.fixed_dictionaries({}, optional={"id": IDS, "type": st.just("function"),
                                        "function": FUNCTION | st.none()}) | st.integers(),
    max_size=3)
MESSAGE = st.fixed_dictionaries(
    {"role": ROLE_VALUES},
    optional={"content": CONTENT, "tool_calls": TOOL_CALLS, "tool_call_id": IDS, "id": IDS,
              "tokens": st.integers(-1, 5) | st.booleans() | st.none() | st.floats(0, 2),
              "function_call": st.none() | st.just({"name": "f"})},
)
MESSAGES = st.lists(MESSAGE | json_values, max_size=8)


def only_format_error(data, **kw):
    try:
        out = parse_conversations(data, counter=ApproxCounter(), **kw)
    except FormatError as e:
        assert e.source == "<input>"
        assert isinstance(e.line, (int, type(None))) and (e.line is None or e.line >= 1)
        return None
    assert all(isinstance(c, Conversation) for c in out)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_fuzz_random_json_only_raises_format_error(value):
    text = json.dumps(value)
    only_format_error(text)
    only_format_error(text.encode("utf-8", "surrogatepass"))
    only_format_error(text + "\n" + text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MESSAGES, st.sampled_from(["auto", "openai", "jsonl", "tau-bench", "anthropic"]))
def test_fuzz_near_valid_messages_only_raise_format_error(value, fmt):
    only_format_error(json.dumps(value), format=fmt)
    only_format_error(json.dumps({"messages": value, "user_id": "u"}), format=fmt)
    only_format_error(json.dumps([{"task_id": 1, "trial": 0, "traj": value}]), format=fmt)
    only_format_error(json.dumps({"system": "s", "messages": value}), format=fmt)


def _paths(node, out):
    """Every (container, key) under node, so a mutation can reach any depth."""
    if isinstance(node, dict):
        for k in list(node):
            out.append((node, k))
            _paths(node[k], out)
    elif isinstance(node, list):
        for i in range(len(node)):
            out.append((node, i))
            _paths(node[i], out)
    return out


BASES = [
    OPENAI,
    {"id": "x", "user_id": "u", "messages": OPENAI},
    ANTHROPIC,
    [{"task_id": 1, "trial": 0, "info": {"task": {"user_id": "u"}}, "traj": OPENAI}],
    [{"messages": OPENAI}, ANTHROPIC],
]
REPLACEMENTS = json_values | IDS | ROLE_VALUES | CONTENT | TOOL_CALLS | BLOCKS | MESSAGE


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutated_valid_files_only_raise_format_error(data):
    """Valid files of every format with 1-3 random edits anywhere (replace, delete, duplicate)."""
    doc = json.loads(json.dumps(data.draw(st.sampled_from(BASES))))
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(doc, [])
        if not paths:
            break
        parent, key = data.draw(st.sampled_from(paths))
        op = data.draw(st.sampled_from(["replace", "delete", "duplicate"]))
        if op == "replace":
            parent[key] = data.draw(REPLACEMENTS)
        elif op == "delete":
            del parent[key]
        elif isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))
    text = json.dumps(doc)
    only_format_error(text)
    if isinstance(doc, list) and doc and all(isinstance(x, dict) for x in doc):
        only_format_error("\n".join(json.dumps(x) for x in doc))  # as JSONL


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80) | st.binary(max_size=80).map(lambda b: b))
def test_fuzz_random_text_and_bytes(data):
    for fmt in ("auto", "csv", "jsonl"):
        only_format_error(data, format=fmt)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["m1", "m2", "user", "tool", "assistant", "3", "-1", "",
                                          "k1", "k1 k2", "a", '"q"']), min_size=0, max_size=9),
                max_size=5))
def test_fuzz_csv_rows(rows):
    header = "id,role,tokens,content,conversation_id,user_id,tool_call_ids,tool_call_id"
    text = "\n".join([header] + [",".join(r) for r in rows])
    only_format_error(text)


# ---------------------------------------------------------------------------------------------
# Listing extraction, grouping, the Conversation value, writing


def test_listing_ids_in_message_order_content_then_arguments():
    ms = [
        {"role": "user", "content": "first 3333333333 then 1111111111"},
        {"role": "assistant", "content": "about 2222222222", "tool_calls": [
            call("a", "f", '{"item_ids": ["1111111111", "4444444444"]}'),
            call("b", "f", '{"x": "12345678901"}')]},  # 11 digits: not a listing
        {"role": "tool", "tool_call_id": "a", "content": "1111111111/5555555555"},
        {"role": "tool", "tool_call_id": "b", "content": "phone 555-123-4567, zip 19122"},
    ]
    (c,) = parse(json.dumps(ms))
    assert c.listing_ids == ("3333333333", "1111111111", "2222222222", "1111111111",
                             "4444444444", "1111111111", "5555555555")
    assert c.distinct_listing_ids == ("3333333333", "1111111111", "2222222222", "4444444444",
                                      "5555555555")


def test_custom_listing_extractor():
    ms = [{"role": "user", "content": "sku-12 and sku-7, 1234567890"}]
    (c,) = parse(json.dumps(ms), listing_extractor=lambda t: re_findall(r"sku-\d+", t))
    assert c.listing_ids == ("sku-12", "sku-7")
    only = make_listing_extractor({"1234567890"})
    (c,) = parse(json.dumps(ms + [{"role": "user", "content": "9999999999 1234567890"}]),
                 listing_extractor=only)
    assert c.listing_ids == ("1234567890", "1234567890")
    with pytest.raises(TypeError, match="must yield str"):
        parse(json.dumps(ms), listing_extractor=lambda t: [1])
    with pytest.raises(TypeError, match="must be callable"):
        parse(json.dumps(ms), listing_extractor="x")
    assert extract_listing_ids("a1234567890b 0000000000") == ["1234567890", "0000000000"]


def re_findall(pattern, text):
    import re

    return re.findall(pattern, text)


def test_group_by_user_file_order_and_none_bucket():
    lines = [json.dumps({"id": i, "user_id": u, "messages": []})
             for i, u in [("a", "u2"), ("b", "u1"), ("c", None), ("d", "u2"), ("e", None)]]
    groups = group_by_user(parse("\n".join(lines)))
    assert list(groups) == ["u2", "u1", None]
    assert {k: [c.id for c in v] for k, v in groups.items()} == {
        "u2": ["a", "d"], "u1": ["b"], None: ["c", "e"]}
    with pytest.raises(TypeError, match="Conversation values"):
        group_by_user([["a"]])


def test_conversation_value_checks_and_title():
    long = "word " * 30
    c = Conversation("c", None, [Message("m", "user", 1, content=long)], ["1"])
    assert isinstance(c.messages, tuple) and c.listing_ids == ("1",)
    assert c.title == ("word " * 12)[:59] + "…" and len(c.title) == 60
    assert Conversation("e", None, ()).title is None
    with pytest.raises(ValueError, match="Conversation.id"):
        Conversation("", None, ())
    with pytest.raises(TypeError, match="Conversation.messages must hold Message"):
        Conversation("c", None, ("m",))
    with pytest.raises(TypeError, match="Conversation.user_id"):
        Conversation("c", 3, ())
    hash(c)


def test_to_openai_jsonl_round_trips_every_format():
    for data in (json.dumps(OPENAI), json.dumps(ANTHROPIC)):
        convs = parse(data)
        text = to_openai_jsonl(convs)
        again = parse_conversations(text, counter=ApproxCounter())  # tokens travel with the file
        assert again == convs
        assert [c.tool_calls for c in again] == [c.tool_calls for c in convs]
    (c,) = parse(json.dumps(OPENAI))
    first = json.loads(to_openai_jsonl([c]).splitlines()[0])
    assert first["messages"][2] == {
        "id": "c1:2", "role": "assistant", "content": "Checking both.",
        "tool_calls": [call("k1", "get_item", '{"item_id": "1234567890"}'),
                       call("k2", "get_item", '{"item_id": "2222222222"}')],
        "tokens": 8}
    no_tokens = json.loads(to_openai_jsonl([c], include_tokens=False))
    assert "tokens" not in no_tokens["messages"][0]
    csv_convs = parse(CSV_TEXT)
    with pytest.raises(ValueError, match="no name/arguments"):
        to_openai_jsonl(csv_convs)


def test_csv_huge_token_cell_is_a_format_error():
    from convmem import FormatError, parse_conversations

    with pytest.raises(FormatError) as info:
        parse_conversations("id,role,tokens\nm1,user," + "9" * 4301 + "\n", source_name="t.csv")
    assert (info.value.line, info.value.field) == (2, "tokens")


def test_csv_cell_longer_than_the_csv_module_default_loads():
    from convmem import parse_conversations

    convs = parse_conversations('id,role,tokens,content\nm1,tool,1,"' + "x" * 200_000 + '"\n')
    assert len(convs[0].messages[0].content) == 200_000
