"""Write the hostile-input corpus (tests/hostile_corpus/*) and its manifest, expected.json.

    .venv/bin/python tests/hostile_corpus/make_corpus.py

Each file is small and written here byte by byte, with the outcome expected of it written by
hand next to it (never read back from convmem): ``accepted`` with the number of conversations
and messages, or ``error`` with substrings the readable FormatError message must contain
(case-insensitive). ``pending`` marks an expectation today's importer does not meet yet (it gives
a less helpful message): tests/test_hostile_corpus.py runs those as xfail(strict=True), so they
fail loudly once the importer rewrite meets them and the mark must go. ``home`` overrides the
expectation for the Home page (the dashboard checks more than the library: strings outside
messages, token totals; convmem_dashboard.uploads). Big files (huge lines, many lines) are built
by the test at run time (GENERATED below), not committed.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAX = 2**53 - 1

CORPUS: dict[str, tuple[bytes, dict]] = {}


def ok(conversations: int, messages: int, **extra) -> dict:
    return {"expect": "accepted", "conversations": conversations, "messages": messages, **extra}


def err(*substrings: str, **extra) -> dict:
    return {"expect": "error", "error": list(substrings), **extra}


def add(name: str, data: bytes | str, expect: dict) -> None:
    CORPUS[name] = (data.encode("utf-8") if isinstance(data, str) else data, expect)


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)


CHAT = [
    {"role": "system", "content": "You are a shop assistant.", "tokens": 6},
    {"role": "user", "content": "Is 1234567890 in stock? café ✓", "tokens": 9},
    {"role": "assistant", "content": "Yes, it is.", "tokens": 4},
]
CHAT_TEXT = dumps(CHAT)

# ------------------------------------------------------------------------------------ encodings
add("utf16le_bom.json", b"\xff\xfe" + CHAT_TEXT.encode("utf-16-le"),
    err("UTF-16", pending="importer rewrite"))
add("utf16be_bom.jsonl", b"\xfe\xff" + (dumps({"messages": CHAT}) + "\n").encode("utf-16-be"),
    err("UTF-16", pending="importer rewrite"))
add("utf8_bom.json", b"\xef\xbb\xbf" + CHAT_TEXT.encode(), ok(1, 3))
add("bom_only.json", b"\xef\xbb\xbf", err("empty file"))
add("latin1.csv", "id,role,tokens,content\nm1,user,3,caf\xe9 cr\xe8me\n".encode("latin-1"),
    err("not UTF-8"))
add("mixed_encoding.jsonl",
    (dumps({"messages": CHAT[:2]}) + "\n").encode() + (dumps({"messages": [{"role": "user", "content": "na\u00efve", "tokens": 2}]}) + "\n").encode("latin-1"),
    err("not UTF-8"))
add("surrogate_bytes.csv", b"id,role,tokens,content\nm1,user,3,bad \xed\xa0\x80 bytes\n", err("not UTF-8"))
add("empty.json", b"", err("empty file"))
add("whitespace_only.jsonl", b"  \n\n\t \n", err("empty file"))
add("nul_byte_raw.json", CHAT_TEXT.replace("Yes, it is.", "Yes,\x00 it is."), err("invalid JSON"))
add("nul_escape.json", CHAT_TEXT.replace("Yes, it is.", "Yes,\\u0000 it is."), ok(1, 3))
add("nul_byte.csv", b"id,role,tokens,content\nm1,user,3,a\x00b\n", ok(1, 1))

# --------------------------------------------------------------------------------- surrogates
add("surrogate_content.json", '[{"role": "user", "content": "lone \\ud800 here", "tokens": 3}]',
    err("content", "lone UTF-16 surrogate", "U+D800"))
add("surrogate_message_id.jsonl", '{"messages": [{"id": "m\\udfff", "role": "user", "content": "x", "tokens": 1}]}\n',
    err("lone UTF-16 surrogate", "U+DFFF"))
add("surrogate_tool_call_id.json",
    '[{"role": "user", "content": "q", "tokens": 1},'
    ' {"role": "assistant", "content": null, "tokens": 2, "tool_calls": [{"id": "k\\udc00", "type": "function",'
    ' "function": {"name": "f", "arguments": "{}"}}]}]',
    err("lone UTF-16 surrogate", "U+DC00"))
add("surrogate_conversation_id.jsonl", '{"id": "c\\ud83d", "messages": [{"id": "m1", "role": "user", "content": "x", "tokens": 1}]}\n',
    err("lone UTF-16 surrogate", "U+D83D", pending="importer rewrite", home=err("conversation 1: id", "U+D83D")))
add("surrogate_user_id.json", '{"user_id": "\\udbff", "messages": [{"role": "user", "content": "x", "tokens": 1}]}',
    err("lone UTF-16 surrogate", "U+DBFF", pending="importer rewrite", home=err("user_id", "U+DBFF")))
add("surrogate_tool_arguments.json",
    '[{"role": "user", "content": "q", "tokens": 1},'
    ' {"role": "assistant", "content": null, "tokens": 2, "tool_calls": [{"id": "k1", "type": "function",'
    ' "function": {"name": "f", "arguments": "{\\"a\\": \\"\\ud800\\"}"}}]}]',
    err("lone UTF-16 surrogate", "U+D800", pending="importer rewrite", home=err("tool call arguments", "U+D800")))
add("surrogate_pair_ok.json", '[{"role": "user", "content": "smile \\ud83d\\ude00", "tokens": 2}]', ok(1, 1))

# ------------------------------------------------------------------------------------- numbers


def one(tokens_json: str) -> str:
    return '[{"role": "user", "content": "hi", "tokens": ' + tokens_json + "}]"


add("tokens_max.jsonl", dumps({"messages": [{"role": "user", "content": "huge count", "tokens": MAX}]}) + "\n", ok(1, 1))
add("tokens_2pow53.jsonl", dumps({"messages": [{"role": "user", "content": "x", "tokens": MAX + 1}]}) + "\n",
    err("tokens", "9,007,199,254,740,991"))
add("tokens_1e30.json", one(str(10**30)), err("tokens"))
add("tokens_5000_digits.json", one("9" * 5000), err("invalid JSON"))
add("tokens_negative.json", one("-1"), err("tokens", "-1"))
add("tokens_float.json", one("3.5"), err("tokens", "3.5"))
add("tokens_nan.json", one("NaN"), err("tokens"))
add("tokens_infinity.json", one("-Infinity"), err("tokens"))
add("tokens_1e400.json", one("1e400"), err("tokens"))
add("tokens_bool.json", one("true"), err("tokens"))
add("tokens_string.json", one('"12"'), err("tokens"))
add("tokens_sum_over_max.jsonl",
    dumps({"messages": [{"role": "user", "content": "a", "tokens": MAX}, {"role": "assistant", "content": "b", "tokens": MAX}]}) + "\n",
    ok(1, 2, home=err("tokens in all", "MAX_TOKENS")))
add("tokens_zero.jsonl", dumps({"messages": [dict(m, tokens=0) for m in CHAT]}) + "\n", ok(1, 3))
add("tokens_2pow53.csv", f"id,role,tokens\nm1,user,{MAX + 1}\n", err("tokens", "9,007,199,254,740,991"))
add("tokens_1e30.csv", f"id,role,tokens\nm1,user,{10**30}\n", err("tokens"))
add("tokens_max.csv", f"id,role,tokens\nm1,user,{MAX}\nm2,assistant,0\n", ok(1, 2))

# ------------------------------------------------------------------------------- formula cells
add("formula_cells.csv",
    "conversation_id,user_id,id,role,tokens,content\n"
    '"=HYPERLINK(""http://x"")",@u,=1+1,user,3,"=SUM(A1:A2) 1234567890"\n'
    '"=HYPERLINK(""http://x"")",@u,+2,assistant,4," -cmd|\' /C calc\'!A0"\n'
    "-c2,@u,\t@tab,user,2,\"\t=tab\"\n",
    ok(2, 3))
# formula_cells.jsonl is written by hand (tests/test_hostile_downloads.py uses it); see MANUAL.

# ------------------------------------------------------------------------------ deep nesting
add("deep_nesting.json", "[" * 5000 + "]" * 5000, err("nested too deeply"))
add("deep_content.json", '[{"role": "user", "content": ' + "[" * 300 + "]" * 300 + ', "tokens": 1}]', err("content"))
add("deep_arguments_text.json",
    '[{"role": "user", "content": "q", "tokens": 1}, {"role": "assistant", "content": null, "tokens": 2,'
    ' "tool_calls": [{"id": "k1", "type": "function", "function": {"name": "f", "arguments": '
    + dumps("[" * 3000 + "]" * 3000) + "}}]}]",
    ok(1, 2))

# ----------------------------------------------------------------------------- wrong shapes
add("csv_cr_only.csv", "id,role,tokens\rm1,user,3\rm2,assistant,4\r", ok(1, 2, pending="importer rewrite"))
add("csv_no_tokens_column.csv", "id,role,content\nm1,user,hello\n", err("missing column 'tokens'", pending="importer rewrite"))
add("csv_unknown_column.csv", "id,role,tokens,colour\nm1,user,3,red\n", err("colour"))
add("csv_duplicate_column.csv", "id,role,tokens,tokens\nm1,user,3,4\n", err("duplicate column"))
add("csv_bad_role.csv", "id,role,tokens\nm1,robot,3\n", err("unknown role", "robot"))
add("csv_columns_reordered.csv", "tokens,role,id\n3,user,m1\n4,assistant,m2\n", ok(1, 2))
add("csv_crlf.csv", "id,role,tokens,content\r\nm1,user,3,hi\r\nm2,assistant,4,\"two\r\nlines\"\r\n", ok(1, 2))
add("json_number.json", "42", err())
add("json_object_without_messages.json", '{"foo": 1}', err("messages"))
add("json_trailing_garbage.json", CHAT_TEXT + " }", err("invalid JSON"))
add("role_unknown.jsonl", dumps({"messages": [{"role": "bot", "content": "x", "tokens": 1}]}) + "\n", err("unknown role", "bot"))
add("content_image_part.json",
    '[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}], "tokens": 1}]',
    ok(1, 1))  # an image part is a documented OpenAI content part: kept and counted (issue 7)
add("duplicate_message_ids.jsonl",
    dumps({"messages": [{"id": "a", "role": "user", "content": "x", "tokens": 1}, {"id": "a", "role": "assistant", "content": "y", "tokens": 1}]}) + "\n",
    err("duplicate message id"))
add("orphan_tool_result.json", '[{"role": "tool", "tool_call_id": "nope", "content": "x", "tokens": 1}]',
    err("answers no earlier tool call"))
add("empty_list.json", "[]", err())

# -------------------------------------------------------------------------- accepted oddities
add("html_and_markdown.json",
    dumps([{"role": "user", "content": "<script>alert(1)</script> **bold** [x](javascript:alert(1))", "tokens": 9}]),
    ok(1, 1))
add("bidi_and_zero_width.jsonl",
    dumps({"id": "\u202ereversed", "user_id": "z\u200bw", "messages": [{"id": "\u2066m\u2069", "role": "user", "content": "\u202eabc\u202c", "tokens": 2}]}) + "\n",
    ok(1, 1))
add("long_ids.jsonl",
    dumps({"id": "c" * 5000, "user_id": "u" * 5000, "messages": [{"id": "m" * 5000, "role": "user", "content": "x", "tokens": 1}]}) + "\n",
    ok(1, 1))
add("many_tiny_conversations.jsonl",
    "".join(dumps({"id": f"c{k}", "user_id": f"u{k % 7}", "messages": [{"role": "user", "content": f"order {1000000000 + k}", "tokens": 1}]}) + "\n" for k in range(500)),
    ok(500, 500))
add("anthropic_tool_use.json", dumps({
    "system": "You help.",
    "messages": [
        {"role": "user", "content": "Find 1234567890"},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                          {"type": "tool_use", "id": "t1", "name": "find", "input": {"q": "1234567890"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "=found"}]},
    ],
}), ok(1, 4))

MANUAL = {"formula_cells.jsonl": ok(2, 7, note="hand-written; tests/test_hostile_downloads.py")}

#: Built by tests/test_hostile_corpus.py at run time (too big to commit): name -> expectation.
GENERATED = {
    "huge_line.jsonl": ok(1, 2, note="one 8 MiB single-line message with its tokens given"),
    "many_lines.jsonl": ok(20_000, 20_000, note="20,000 one-message conversations"),
    "huge_csv_cell.csv": ok(1, 1, note="one 8 MiB CSV cell"),
}


def main() -> None:
    manifest = {"files": {}, "generated": GENERATED}
    for name, (data, expect) in sorted(CORPUS.items()):
        (HERE / name).write_bytes(data)
        manifest["files"][name] = expect
    for name, expect in MANUAL.items():
        assert (HERE / name).is_file(), name
        manifest["files"][name] = expect
    manifest["files"] = dict(sorted(manifest["files"].items()))
    (HERE / "expected.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(manifest['files'])} files, {len(GENERATED)} generated at test time")


if __name__ == "__main__":
    main()
