"""Token counting: exact offline encodings shipped with convmem, the provider's chat rule (case F2),
models, tool calls, the content-only mode, the approximation and the no-download rule.

Every test here runs on a clean clone: the encodings come from convmem/encodings/, never from
../shared (the `clean_env` fixture points tiktoken's cache at an empty folder).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

import convmem
from convmem import tokens as tk
from convmem.conversations import ToolCall
from convmem.tokens import (
    CL100K_CACHE_KEY,
    ENCODINGS,
    ApproxCounter,
    EncodingUnavailableError,
    TiktokenCounter,
    count_prompt,
    default_counter,
    encoding_for_model,
    find_cl100k_file,
    find_encoding_file,
    make_counter,
)

SHARED_F2 = (Path(__file__).resolve().parent.parent.parent
             / "shared/cases/formats/openai_cookbook_name_fields.json")

# Computed once with tiktoken 0.14.0 (encode_ordinary), then frozen here.
KNOWN = [  # (text, cl100k_base, o200k_base)
    ("", 0, 0),
    ("hello world", 2, 2),
    ("Hello, world!", 4, 4),
    ("The item 1234567890 is in stock.", 11, 11),
    ("get_product_details", 3, 3),
    ('{"product_id":"6086499569"}', 9, 9),
    ("<|endoftext|>", 7, 7),  # special-token text counts as plain text, never raises
    ("naïve café 東京", 7, 5),
]

# Case F2: OpenAI's cookbook example ("How to count tokens with tiktoken"), inlined so the test
# needs no ../shared; test_f2_inline_copy_is_the_case_file checks it equals the case file.
F2 = [
    {"role": "system", "content": "You are a helpful, pattern-following assistant that translates "
                                  "corporate jargon into plain English."},
    {"role": "system", "name": "example_user",
     "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant",
     "content": "Things working well together will increase revenue."},
    {"role": "system", "name": "example_user",
     "content": "Let's circle back when we have more bandwidth to touch base on opportunities for "
                "increased leverage."},
    {"role": "system", "name": "example_assistant",
     "content": "Let's talk later when we're less busy about how to do better."},
    {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the "
                                "client deliverable."},
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    """A fresh machine: no convmem cache variable, tiktoken's cache dir an empty folder."""
    monkeypatch.delenv("CONVMEM_TIKTOKEN_CACHE", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    empty = tmp_path / "empty-tiktoken-cache"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))
    return empty


@pytest.fixture(autouse=True)
def forbid_get_encoding(monkeypatch):
    """Fail the test if tiktoken.get_encoding (which may download) is ever called."""
    import tiktoken

    def boom(name):  # pragma: no cover - only runs on a bug
        raise AssertionError(f"tiktoken.get_encoding({name!r}) was called")

    monkeypatch.setattr(tiktoken, "get_encoding", boom)


@pytest.fixture
def fresh_load(monkeypatch):
    """Forget the encodings loaded so far, so the next make_counter reads the files again."""
    monkeypatch.setattr(tk, "_ENCODINGS_LOADED", {})


def cookbook_reference(messages, encoding) -> int:
    """The cookbook's num_tokens_from_messages, written out independently of convmem."""
    n = 0
    for m in messages:
        n += 3
        for key, value in m.items():
            n += len(encoding.encode(value))
            if key == "name":
                n += 1
    return n + 3


# ---------------------------------------------------------------------------------------------
# Shipped files


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_shipped_files_match_the_registry_hashes(name):
    spec = ENCODINGS[name]
    path = Path(tk.__file__).parent / "encodings" / spec.file
    assert hashlib.sha256(path.read_bytes()).hexdigest() == spec.sha256
    assert find_encoding_file(name) == path


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_patterns_hashes_and_special_tokens_equal_tiktokens_own(name, monkeypatch):
    """tiktoken_ext.openai_public's constructors, with the loader stubbed (no file, no network)."""
    from tiktoken_ext import openai_public

    seen = {}

    def fake_load(url, expected_hash=None):
        seen["hash"] = expected_hash
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", fake_load)
    theirs = getattr(openai_public, name)()
    spec = ENCODINGS[name]
    assert seen["hash"] == spec.sha256
    assert theirs["pat_str"] == spec.pat_str
    assert theirs["special_tokens"] == dict(spec.special_tokens)


@pytest.mark.parametrize(("text", "cl100k", "o200k"), KNOWN)
def test_known_counts_on_a_clean_machine(text, cl100k, o200k):
    assert make_counter("gpt-4").count_text(text) == cl100k
    assert make_counter("gpt-4o").count_text(text) == o200k


def test_encodings_are_built_from_the_shipped_files(fresh_load):
    c = make_counter()
    assert isinstance(c, TiktokenCounter)
    assert (c.name, c.encoding_name, c.exact) == ("cl100k_base", "cl100k_base", True)
    assert "convmem/encodings/cl100k_base.tiktoken" in c.detail.replace("\\", "/")
    assert c.encoding.n_vocab == 100277
    assert make_counter("gpt-4o").encoding.n_vocab == 200019
    # loaded once per process
    assert make_counter().encoding is c.encoding


def test_corrupt_shipped_file_falls_back_to_a_valid_cache_copy(
    monkeypatch, tmp_path, clean_env, fresh_load
):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "cl100k_base.tiktoken").write_bytes(b"not the rank file\n")
    real = Path(tk.__file__).parent / "encodings" / "cl100k_base.tiktoken"
    monkeypatch.setattr(tk, "_SHIPPED_DIR", shipped)
    # nothing valid anywhere: a clear error, never an approximation, never a download
    with pytest.raises(EncodingUnavailableError, match="cl100k_base.*approximate=True"):
        make_counter()
    assert find_cl100k_file() is None
    # a copy in tiktoken's cache dir under its cache name is used, and found as such
    shutil.copyfile(real, clean_env / CL100K_CACHE_KEY)
    assert find_cl100k_file() == (clean_env / CL100K_CACHE_KEY, True)
    assert make_counter().count_text("Hello, world!") == 4
    # $CONVMEM_TIKTOKEN_CACHE is looked at before tiktoken's directory
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copyfile(real, mine / CL100K_CACHE_KEY)
    monkeypatch.setenv("CONVMEM_TIKTOKEN_CACHE", str(mine))
    assert find_cl100k_file() == (mine / CL100K_CACHE_KEY, False)
    # the corrupt shipped file is left as it was (tiktoken would delete and re-download)
    assert (shipped / "cl100k_base.tiktoken").read_bytes() == b"not the rank file\n"


def test_empty_tiktoken_cache_dir_is_not_searched(monkeypatch):
    assert tk._tiktoken_cache_dir({"TIKTOKEN_CACHE_DIR": ""}) is None
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert make_counter().name == "cl100k_base"  # the shipped file needs no cache at all


def test_find_respects_tiktoken_dir_precedence(tmp_path):
    env = {"DATA_GYM_CACHE_DIR": str(tmp_path)}
    assert tk._tiktoken_cache_dir(env) == str(tmp_path)
    env["TIKTOKEN_CACHE_DIR"] = "/elsewhere"
    assert tk._tiktoken_cache_dir(env) == "/elsewhere"


def test_unknown_encoding_is_refused():
    with pytest.raises(ValueError, match="encoding must be one of"):
        make_counter(encoding="p50k_base")
    with pytest.raises(ValueError, match="encoding must be one of"):
        find_encoding_file("r50k_base")


# ---------------------------------------------------------------------------------------------
# Case F2 and the chat rule


def test_f2_cookbook_example_cl100k_129_and_o200k_124():
    assert count_prompt(F2, "gpt-4") == 129
    assert count_prompt(F2, "gpt-4o") == 124
    assert count_prompt(F2, "gpt-3.5-turbo") == 129
    assert count_prompt(F2, "gpt-4o-mini") == 124
    # the same through count_message: sum(message tokens) + reply_priming
    for model, expected in (("gpt-4", 129), ("gpt-4o", 124)):
        c = make_counter(model)
        per_message = [c.count_message(m["role"], m["content"], name=m.get("name")) for m in F2]
        assert sum(per_message) + c.reply_priming == expected
        assert c.reply_priming == 3
        assert cookbook_reference(F2, c.encoding) == expected


def test_f2_inline_copy_is_the_case_file():
    if not SHARED_F2.is_file():
        pytest.skip(f"case file not found at {SHARED_F2} (needs ../shared)")
    assert json.loads(SHARED_F2.read_text()) == F2


def test_f2_each_message_by_hand():
    c = make_counter("gpt-4")
    # 3 per message + role "system" (1) + content; + name tokens + 1 where there is a name
    assert c.count_text("system") == 1
    assert (c.count_text("example_user"), c.count_text("example_assistant")) == (2, 3)
    assert c.count_message("system", "New synergies will help drive top-line growth.",
                           name="example_user") == 3 + 1 + c.count_text(F2[1]["content"]) + 2 + 1
    # without names the four example messages cost (2 + 1) * 2 + (3 + 1) * 2 = 14 tokens less
    no_names = [{k: v for k, v in m.items() if k != "name"} for m in F2]
    assert count_prompt(no_names, "gpt-4") == 129 - 14


def test_content_only_mode_is_the_old_definition():
    c = make_counter(per_message_overhead=0)
    assert (c.per_message_overhead, c.reply_priming) == (0, 0)
    args = '{"product_id":"6086499569"}'
    # name (3) + arguments (9); content None adds nothing; role and name are not counted
    assert c.count_message("assistant", None, [("get_product_details", args)]) == 12
    assert c.count_message("user", "hello world", name="bob") == 2
    assert count_prompt(F2, counter=c) == sum(c.count_text(m["content"]) for m in F2)


def test_tool_calls_in_every_shape_chat_and_content_only():
    args = '{"product_id":"6086499569"}'
    calls = [
        ("get_product_details", args),
        {"id": "x", "type": "function", "function": {"name": "get_product_details",
                                                     "arguments": args}},
        ToolCall("k", "get_product_details", args, "m"),
        ("get_product_details", {"product_id": "6086499569"}),  # non-str args: compact JSON
    ]
    content_only = make_counter(per_message_overhead=0)
    chat = make_counter()
    text = "The item 1234567890 is in stock."
    assert content_only.count_message("assistant", text, calls) == 11 + 4 * 12
    # chat: 3 + role "assistant" (1) + content + each call (name 3 + args 9 + 3)
    assert chat.count_message("assistant", text, calls) == 3 + 1 + 11 + 4 * 15
    # count_prompt reads tool_calls and a legacy function_call alike
    legacy = {"role": "assistant", "content": None,
              "function_call": {"name": "get_product_details", "arguments": args}}
    modern = {"role": "assistant", "content": None, "tool_calls": [calls[1]]}
    assert count_prompt([legacy], "gpt-4") == count_prompt([modern], "gpt-4") == 3 + 1 + 15 + 3


def test_any_provider_role_is_counted_as_text():
    c = make_counter("gpt-4o")
    for role in ("developer", "function", "human", "model", "tool", "user"):
        assert c.count_message(role, "hi") == 3 + c.count_text(role) + 1
    assert c.count_text("developer") == 1
    with pytest.raises(ValueError, match="role must be a non-empty str"):
        c.count_message("", "hi")
    with pytest.raises(TypeError, match="role must be a str"):
        c.count_message(None, "hi")


def test_old_call_shape_still_works():
    # (role, content, tool_calls) positional, one of the four roles: what convmem called before
    c = make_counter(per_message_overhead=0)
    assert c.count_message("tool", "hello world") == 2
    assert c.count_message("assistant", "", [("get_product_details", "{}")], ) == 3 + 1


def test_custom_overhead_replaces_the_three():
    c = make_counter(per_message_overhead=4)
    assert (c.per_message_overhead, c.reply_priming) == (4, 3)
    assert c.count_message("user", "hello world") == 4 + 1 + 2


def test_bad_input_is_named():
    c = make_counter()
    with pytest.raises(TypeError, match="text must be a str"):
        c.count_text(b"hi")
    with pytest.raises(TypeError, match="content must be a str or None"):
        c.count_message("user", ["hi"])
    with pytest.raises(TypeError, match="name must be a str or None"):
        c.count_message("user", "hi", name=3)
    with pytest.raises(TypeError, match="tool call must be"):
        c.count_message("assistant", None, ["just a string"])
    with pytest.raises(TypeError, match="tool call name must be a str"):
        c.count_message("assistant", None, [(3, "{}")])
    with pytest.raises(TypeError, match="one ImageRef"):
        c.count_message("user", None, images=convmem.ImageRef(10, 10))
    with pytest.raises(ValueError, match="per_message_overhead"):
        make_counter(per_message_overhead=-1)
    with pytest.raises(TypeError, match="per_message_overhead"):
        make_counter(per_message_overhead=True)
    with pytest.raises(TypeError, match="approximate must be a bool"):
        make_counter(approximate=1)
    with pytest.raises(TypeError, match=r"messages\[0\] must be a dict"):
        count_prompt(["hi"], "gpt-4")
    with pytest.raises(ValueError, match=r"messages\[1\].role"):
        count_prompt([{"role": "user", "content": ""}, {"content": "x"}], "gpt-4")
    with pytest.raises(TypeError, match=r"messages\[0\].content"):
        count_prompt([{"role": "user", "content": 5}], "gpt-4")


# ---------------------------------------------------------------------------------------------
# Models


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-mini", "gpt-4o-2024-08-06", "o1", "o3",
                                   "o4-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-5", "gpt-5-mini",
                                   "chatgpt-4o-latest", "gpt-oss-120b"])
def test_o200k_models(model):
    assert encoding_for_model(model) == ("o200k_base", True)
    c = make_counter(model)
    assert (c.encoding_name, c.exact, c.model) == ("o200k_base", True, model)


@pytest.mark.parametrize("model", ["gpt-4", "gpt-4-0613", "gpt-4-turbo", "gpt-3.5-turbo",
                                   "gpt-3.5-turbo-0125"])
def test_cl100k_models(model):
    assert encoding_for_model(model) == ("cl100k_base", True)
    assert make_counter(model).encoding_name == "cl100k_base"


def test_unknown_model_counts_with_the_default_encoding_flagged_inexact():
    c = make_counter("grok-3")
    assert (c.encoding_name, c.exact) == ("cl100k_base", False)
    assert "unknown to tiktoken" in c.detail
    with pytest.raises(ValueError, match="p50k_base, which convmem does not ship"):
        make_counter("text-davinci-003")
    with pytest.raises(TypeError, match="model must be a str"):
        make_counter(5)


@pytest.mark.parametrize("model", ["claude-3-5-sonnet-20241022", "claude-sonnet-4", "gemini-2.0-flash",
                                   "models/gemini-1.5-pro"])
def test_providers_without_a_public_tokenizer_are_approximate(model):
    c = make_counter(model)
    assert isinstance(c, ApproxCounter) and not c.exact
    assert "not public" in c.detail
    assert c.count_message("user", "Hello, world!") == 3 + 1 + 4


def test_encoding_argument_overrides_the_model():
    assert make_counter("gpt-4o", encoding="cl100k_base").encoding_name == "cl100k_base"


def test_default_counter_is_exact_cl100k_chat_and_cached():
    default_counter.cache_clear()
    try:
        c = default_counter()
        assert c is default_counter()
        assert (c.name, c.exact, c.per_message_overhead, c.reply_priming) == (
            "cl100k_base", True, 3, 3)
    finally:
        default_counter.cache_clear()


# ---------------------------------------------------------------------------------------------
# The approximation


def test_approximate_only_when_asked():
    c = make_counter(approximate=True)
    assert isinstance(c, ApproxCounter) and c.name == "approx-cl100k-regex" and not c.exact
    assert "asked for" in c.detail
    assert c.count_message("user", "Hello, world!") == 3 + 1 + 4
    assert make_counter(approximate=True, per_message_overhead=0).reply_priming == 0


def test_approx_counter_values():
    c = ApproxCounter()
    # one token per pre-tokenizer piece of <= 10 UTF-8 bytes
    assert c.count_text("Hello, world!") == 4  # "Hello" "," " world" "!"
    assert c.count_text("The item 1234567890 is in stock.") == 11  # digits go in runs of 3
    assert c.count_text("supercalifragilisticexpialidocious") == 4  # 34 bytes -> ceil(34/10)
    assert c.count_text("東京") == 1  # 6 bytes: CJK is undercounted (documented)
    assert c.count_text("") == 0
    assert c.count_message("assistant", None, [("get_product_details",
                                                '{"product_id":"6086499569"}')]) == 12
    with pytest.raises(ValueError, match="per_message_overhead"):
        ApproxCounter(per_message_overhead=-1)


def test_short_string_memo_is_bounded_and_right():
    c = make_counter()
    names = [f"tool_{i}" for i in range(5000)]
    got = [c.count_message("assistant", None, [(n, "")]) for n in names]
    assert got == [3 + 1 + c.count_text(n) + 3 for n in names]
    assert len(c._short) <= 4096
    long_name = "x" * 65  # longer strings are not remembered
    c.count_message("user", "", name=long_name)
    assert long_name not in c._short


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_rank_files_parse_as_tiktokens_loader_reads_them(name):
    """tk._parse_ranks equals tiktoken.load.load_tiktoken_bpe's parse (written out: that function
    would fetch through its cache), entry for entry and in order."""
    import base64

    data = find_encoding_file(name).read_bytes()
    theirs = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}
    ours = tk._parse_ranks(data)
    assert list(ours.items()) == list(theirs.items())
    assert len(ours) == {"cl100k_base": 100256, "o200k_base": 199998}[name]


@pytest.mark.parametrize("data", [b"IQ== 0\nIg== 1 2\n", b"IQ== 0\nIg==\n", b"IQ== 0\n\nIg== 1 extra\n"])
def test_a_rank_line_that_is_not_one_pair_is_refused(data):
    with pytest.raises(ValueError, match="one 'base64 rank' pair"):
        tk._parse_ranks(data)
