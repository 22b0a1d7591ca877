"""Token counting: exact cl100k numbers, the offline-only rule, the approximation, tool calls."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from convmem import tokens as tk
from convmem.conversations import ToolCall
from convmem.tokens import (
    CL100K_CACHE_KEY,
    ApproxCounter,
    TiktokenCounter,
    default_counter,
    find_cl100k_file,
    make_counter,
)

TIKTOKEN_CACHE = (
    Path(__file__).resolve().parent.parent.parent / "shared/real_data/tokenizers/tiktoken_cache"
)

needs_cache = pytest.mark.skipif(
    not (TIKTOKEN_CACHE / CL100K_CACHE_KEY).is_file(),
    reason=f"cl100k_base file not found in {TIKTOKEN_CACHE} (needs ../shared/real_data)",
)

# Computed once with tiktoken 0.14.0 cl100k_base (encode_ordinary), then frozen here.
CL100K_KNOWN = [
    ("", 0),
    ("hello world", 2),
    ("Hello, world!", 4),
    ("The item 1234567890 is in stock.", 11),
    ("get_product_details", 3),
    ('{"product_id":"6086499569"}', 9),
    ("<|endoftext|>", 7),  # special-token text counts as plain text, never raises
    ("naïve café 東京", 7),
]


@pytest.fixture
def no_cache_env(monkeypatch, tmp_path):
    """An environment where no cl100k file can be found: tiktoken's dir is an empty folder."""
    monkeypatch.delenv("CONVMEM_TIKTOKEN_CACHE", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def forbid_get_encoding(monkeypatch):
    """Fail the test if tiktoken.get_encoding is called (it could try a download)."""
    import tiktoken

    def boom(name):  # pragma: no cover - only runs on a bug
        raise AssertionError(f"tiktoken.get_encoding({name!r}) was called")

    monkeypatch.setattr(tiktoken, "get_encoding", boom)


@needs_cache
@pytest.mark.parametrize(("text", "expected"), CL100K_KNOWN)
def test_cl100k_known_counts(text, expected):
    counter = make_counter()
    assert counter.name == "cl100k_base"
    assert counter.count_text(text) == expected


@needs_cache
def test_default_counter_is_cl100k_and_cached():
    assert default_counter() is default_counter()
    assert default_counter().name == "cl100k_base"
    assert isinstance(default_counter(), TiktokenCounter)


@needs_cache
def test_tool_call_names_and_arguments_are_counted():
    c = make_counter()
    args = '{"product_id":"6086499569"}'
    # name (3) + arguments (9); content None adds nothing; the role is not counted.
    assert c.count_message("assistant", None, [("get_product_details", args)]) == 12
    # content (11) + two calls, in every accepted call shape
    calls = [
        ("get_product_details", args),
        {"id": "x", "type": "function", "function": {"name": "get_product_details",
                                                     "arguments": args}},
    ]
    assert c.count_message("assistant", "The item 1234567890 is in stock.", calls) == 11 + 12 + 12
    tc = ToolCall("k", "get_product_details", args, "m")
    assert c.count_message("assistant", "", [tc]) == 12
    # non-str arguments are counted as compact JSON: the same 9 tokens
    assert c.count_message("assistant", None, [("get_product_details",
                                                {"product_id": "6086499569"})]) == 12
    assert c.count_message("tool", "hello world") == 2


@needs_cache
def test_per_message_overhead_is_added_once_per_message():
    c = make_counter(per_message_overhead=3)
    assert c.count_text("hello world") == 2
    assert c.count_message("user", "hello world") == 5
    assert c.count_message("user", None) == 3


def test_count_message_rejects_bad_input():
    c = ApproxCounter()
    with pytest.raises(ValueError, match="role must be one of"):
        c.count_message("bot", "hi")
    with pytest.raises(TypeError, match="text must be a str"):
        c.count_text(b"hi")
    with pytest.raises(TypeError, match="tool call must be"):
        c.count_message("assistant", None, ["just a string"])
    with pytest.raises(TypeError, match="name must be a str"):
        c.count_message("assistant", None, [(3, "{}")])
    with pytest.raises(ValueError, match="per_message_overhead"):
        ApproxCounter(per_message_overhead=-1)
    with pytest.raises(TypeError, match="per_message_overhead"):
        ApproxCounter(per_message_overhead=True)


def test_approximation_when_cache_absent(no_cache_env, forbid_get_encoding):
    assert find_cl100k_file() is None
    counter = make_counter()
    assert isinstance(counter, ApproxCounter)
    assert counter.name == "approx-cl100k-regex"
    assert "no cl100k_base file" in counter.detail


def test_empty_tiktoken_cache_dir_means_no_cache(monkeypatch, forbid_get_encoding):
    # TIKTOKEN_CACHE_DIR="" makes tiktoken download every time: convmem must not go there.
    monkeypatch.delenv("CONVMEM_TIKTOKEN_CACHE", raising=False)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert find_cl100k_file() is None
    assert make_counter().name == "approx-cl100k-regex"


def test_corrupt_cache_file_is_ignored_and_kept(no_cache_env, forbid_get_encoding):
    bad = no_cache_env / CL100K_CACHE_KEY
    bad.write_bytes(b"not the rank file\n")
    assert find_cl100k_file() is None  # sha256 mismatch: tiktoken would delete and re-download
    assert make_counter().name == "approx-cl100k-regex"
    assert bad.read_bytes() == b"not the rank file\n"


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


@needs_cache
def test_convmem_cache_env_builds_encoding_without_tiktoken_registry(
    monkeypatch, tmp_path, forbid_get_encoding
):
    """The file found via $CONVMEM_TIKTOKEN_CACHE only: the encoding is built from it directly."""
    monkeypatch.setenv("CONVMEM_TIKTOKEN_CACHE", str(TIKTOKEN_CACHE))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tk, "_ENCODINGS", {})
    found = find_cl100k_file()
    assert found == (TIKTOKEN_CACHE / CL100K_CACHE_KEY, False)
    counter = make_counter()
    assert counter.name == "cl100k_base"
    for text, expected in CL100K_KNOWN:
        assert counter.count_text(text) == expected


@needs_cache
def test_copied_pattern_equals_tiktokens_own(monkeypatch):
    import tiktoken

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))
    enc = tiktoken.get_encoding("cl100k_base")
    assert tk._CL100K_PAT == enc._pat_str
    assert tk._CL100K_SPECIAL == enc._special_tokens


def test_default_counter_cache_clear_rechooses(no_cache_env, forbid_get_encoding):
    default_counter.cache_clear()
    try:
        assert default_counter().name == "approx-cl100k-regex"
    finally:
        default_counter.cache_clear()


def test_find_respects_tiktoken_dir_precedence(monkeypatch, tmp_path):
    """DATA_GYM_CACHE_DIR is read only when TIKTOKEN_CACHE_DIR is unset, as tiktoken does."""
    env = {"DATA_GYM_CACHE_DIR": str(tmp_path)}
    assert tk._tiktoken_cache_dir(env) == str(tmp_path)
    env["TIKTOKEN_CACHE_DIR"] = "/elsewhere"
    assert tk._tiktoken_cache_dir(env) == "/elsewhere"
    assert tk._tiktoken_cache_dir({}) == os.path.join(
        __import__("tempfile").gettempdir(), "data-gym-cache"
    )
    assert find_cl100k_file({"TIKTOKEN_CACHE_DIR": str(Path(tmp_path) / "none")}) is None
