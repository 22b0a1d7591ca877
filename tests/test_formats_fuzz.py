"""Fuzz every format: mutated hand-made files (one per quirk per format) only ever raise
FormatError, and every conversation of a JSONL file is either loaded or skipped (never lost)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import FORMATS, Conversation, FormatError, parse_conversations
from convmem.tokens import ApproxCounter

DATA = Path(__file__).parent / "data" / "formats"
JSON_FILES = sorted(p for p in DATA.iterdir() if p.suffix == ".json")
DOCS = [json.loads(p.read_text()) for p in JSON_FILES]

LEAVES = (st.none() | st.booleans() | st.integers(-2, 3) | st.text(max_size=6)
          | st.sampled_from(["call_0", "toolu_1", "c1", "", "user", "model", "ai", "function",
                             "developer", "tool", "text", "tool_use", "tool_result",
                             "function_call", "function_call_output", "image_url", "refusal"]))
VALUES = st.recursive(LEAVES, lambda c: st.lists(c, max_size=3)
                      | st.dictionaries(st.sampled_from(["type", "role", "content", "id", "name",
                                                         "parts", "data", "call_id", "text"]),
                                        c, max_size=3), max_leaves=8)


def _paths(node, out):
    if isinstance(node, dict):
        for k in list(node):
            out.append((node, k))
            _paths(node[k], out)
    elif isinstance(node, list):
        for i in range(len(node)):
            out.append((node, i))
            _paths(node[i], out)
    return out


def only_format_error(text, **kw):
    try:
        r = parse_conversations(text, counter=ApproxCounter(), **kw)
    except FormatError as e:
        assert e.line is None or (isinstance(e.line, int) and e.line >= 1)
        return None
    assert all(isinstance(c, Conversation) for c in r)
    return r


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_files_of_every_format_only_raise_format_error(data):
    doc = json.loads(json.dumps(data.draw(st.sampled_from(DOCS))))
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(doc, [])
        if not paths:
            break
        parent, key = data.draw(st.sampled_from(paths))
        op = data.draw(st.sampled_from(["replace", "delete", "duplicate"]))
        if op == "replace":
            parent[key] = data.draw(VALUES)
        elif op == "delete":
            del parent[key]
        elif isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))
    text = json.dumps(doc)
    fmt = data.draw(st.sampled_from(["auto", *FORMATS]))
    only_format_error(text, format=fmt)
    only_format_error(text, format=fmt, strict=True)
    # as a JSONL file of three copies: each line is loaded or skipped, never lost
    r = only_format_error("\n".join([text, text.replace('"id"', '"xid"'), "[]"]), format=fmt)
    if r is not None:
        assert len(r) + len(r.skipped) == 3


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(DOCS), st.sampled_from(["a", "a.b", "a[-1]", "[0]", "answer.x[0].y"]))
def test_messages_path_on_any_file_only_raises_format_error(doc, path):
    only_format_error(json.dumps(doc), messages_path=path)
    only_format_error(json.dumps({"a": {"b": doc}, "answer": doc}), messages_path=path)
