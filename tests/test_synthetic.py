"""Synthetic data: determinism, shapes, tool linkage, 10^5 messages, round trips, sample_data."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from convmem import (
    ROLES,
    Conversation,
    extract_listing_ids,
    group_by_user,
    load_conversations,
    parse_conversations,
    to_openai_jsonl,
)
from convmem.synthetic import generate_conversation, generate_shoppers
from convmem.tokens import ApproxCounter, find_cl100k_file

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
APPROX = ApproxCounter()


class NoCounting:
    """A counter that fails if used: proves a file's tokens are read, not counted."""

    name = "forbidden"

    def count_text(self, text):  # pragma: no cover - only on a bug
        raise AssertionError("counted")

    count_message = count_text


def assert_linked(conv: Conversation, *, all_answered: bool) -> None:
    """Every tool result answers an earlier call of its conversation, once."""
    open_calls: set[str] = set()
    answered: set[str] = set()
    for m in conv.messages:
        if m.role == "tool":
            assert m.tool_call_id in open_calls, (conv.id, m.id)
            open_calls.discard(m.tool_call_id)
            answered.add(m.tool_call_id)
        open_calls.update(m.tool_call_ids)
    if all_answered:
        assert not open_calls, (conv.id, open_calls)
    assert {tc.id for tc in conv.tool_calls} == answered | open_calls


@pytest.fixture(scope="module")
def shoppers():
    return generate_shoppers(seed=11, n_shoppers=5, conversations_per_shopper=(2, 5),
                             counter=APPROX)


def test_shoppers_deterministic(shoppers):
    again = generate_shoppers(seed=11, n_shoppers=5, conversations_per_shopper=(2, 5),
                              counter=APPROX)
    assert again == shoppers
    assert to_openai_jsonl(again) == to_openai_jsonl(shoppers)
    other = generate_shoppers(seed=12, n_shoppers=5, conversations_per_shopper=(2, 5),
                              counter=APPROX)
    assert other != shoppers


def test_shoppers_shape(shoppers):
    groups = group_by_user(shoppers)
    assert len(groups) == 5 and None not in groups
    assert all(2 <= len(v) <= 5 for v in groups.values())
    for user, convs in groups.items():
        assert [c.id for c in convs] == [f"{user}-{k}" for k in range(1, len(convs) + 1)]
    # an interleaved timeline, not one shopper after another
    runs = sum(1 for a, b in zip(shoppers, shoppers[1:]) if a.user_id != b.user_id)
    assert runs > len(groups) - 1
    for c in shoppers:
        assert c.messages[0].role == "system"
        assert c.messages[1].role == "user"
        assert c.messages[-1].role == "assistant"
        assert {m.role for m in c.messages} <= set(ROLES)
        assert [m.id for m in c.messages] == [f"{c.id}:{i}" for i in range(len(c.messages))]
        assert all(m.tokens > 0 for m in c.messages)
        assert c.source == "synthetic" and c.source_format == "synthetic"
        assert_linked(c, all_answered=True)
    msgs = [m for c in shoppers for m in c.messages]
    assert any(len(m.tool_call_ids) >= 2 for m in msgs)  # parallel calls
    assert any(m.content == "Error: 503 Service Unavailable" for m in msgs)  # retried errors
    assert 5 < len({m.tokens for m in msgs})  # varied counts


def test_shoppers_tokens_are_the_counters(shoppers):
    c = shoppers[0]
    calls = {tc.id: (tc.name, tc.arguments) for tc in c.tool_calls}
    for m in c.messages:
        expected = APPROX.count_message(m.role, m.content,
                                        [calls[i] for i in m.tool_call_ids])
        assert m.tokens == expected


def test_shoppers_listing_ids_are_shared_catalog_items(shoppers):
    for c in shoppers:
        assert all(len(x) == 10 and x.isdigit() for x in c.listing_ids)
        texts = []
        for m in c.messages:
            texts.append(m.content or "")
            texts.extend(tc.arguments for tc in c.tool_calls if tc.message_id == m.id)
        assert list(c.listing_ids) == [x for t in texts for x in extract_listing_ids(t)]
    all_ids = Counter(x for c in shoppers for x in c.distinct_listing_ids)
    assert len(all_ids) <= 8 * 6  # one small catalog: at most 8 products x 6 variants
    assert max(all_ids.values()) >= 3  # ids recur across conversations
    shared = [u for u, cs in group_by_user(shoppers).items()
              if any(set(a.listing_ids) & set(b.listing_ids)
                     for i, a in enumerate(cs) for b in cs[i + 1:])]
    assert shared  # some shopper's conversations mention the same listing again


def test_shoppers_round_trip_through_jsonl(shoppers):
    text = to_openai_jsonl(shoppers)
    back = parse_conversations(text, counter=NoCounting())
    assert back == shoppers
    # without tokens in the file, the same counter recounts the same numbers
    recount = parse_conversations(to_openai_jsonl(shoppers, include_tokens=False),
                                  counter=APPROX)
    assert recount == shoppers


def test_shoppers_argument_checks():
    with pytest.raises(ValueError, match="n_shoppers"):
        generate_shoppers(n_shoppers=0)
    with pytest.raises(ValueError, match="conversations_per_shopper"):
        generate_shoppers(conversations_per_shopper=(3, 2))
    with pytest.raises(TypeError, match="conversations_per_shopper"):
        generate_shoppers(conversations_per_shopper=[1, 2])
    with pytest.raises(ValueError, match="n_products"):
        generate_shoppers(n_products=13)
    with pytest.raises(TypeError, match="seed"):
        generate_shoppers(seed="1")


def test_generate_conversation_deterministic_and_shaped():
    a = generate_conversation(2_000, seed=5)
    assert a == generate_conversation(2_000, seed=5)
    assert a != generate_conversation(2_000, seed=6)
    assert len(a.messages) == 2_000
    assert a.messages[0].role == "system" and a.messages[1].role == "user"
    assert len({m.id for m in a.messages}) == 2_000
    roles = Counter(m.role for m in a.messages)
    assert roles["system"] == 1 and min(roles["user"], roles["assistant"], roles["tool"]) > 100
    assert any(len(m.tool_call_ids) >= 2 for m in a.messages)
    assert_linked(a, all_answered=True)
    assert all(1 <= m.tokens <= 8_000 for m in a.messages[1:])
    assert len(a.listing_ids) > 500 and all(len(x) == 10 for x in a.listing_ids)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 6, 7, 13, 50])
def test_generate_conversation_exact_lengths_keep_links(n):
    c = generate_conversation(n, seed=n)
    assert len(c.messages) == n
    assert_linked(c, all_answered=True)


def test_generate_conversation_round_trip():
    c = generate_conversation(5_000, seed=2, conversation_id="big", user_id="u9")
    back = parse_conversations(to_openai_jsonl([c]), counter=NoCounting())
    assert back == [c]  # listing ids re-extracted by the default extractor match the recorded


def test_generate_conversation_1e5_messages():
    c = generate_conversation(100_000, seed=1)
    assert len(c.messages) == 100_000
    assert c.messages[-1].id == "synthetic:99999"
    assert c.total_tokens == sum(m.tokens for m in c.messages) > 10**6
    assert_linked(c, all_answered=True)


def test_generate_conversation_argument_checks():
    with pytest.raises(ValueError, match="n_messages"):
        generate_conversation(-1)
    with pytest.raises(TypeError, match="n_messages"):
        generate_conversation(10.0)
    with pytest.raises(ValueError, match="conversation_id"):
        generate_conversation(3, conversation_id="")


# ---------------------------------------------------------------------------------------------
# scripts/make_sample_data.py and the committed sample_data/


def _script():
    spec = importlib.util.spec_from_file_location("make_sample_data",
                                                  ROOT / "scripts" / "make_sample_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_script_is_byte_identical_twice(tmp_path):
    script = _script()
    if find_cl100k_file() is None and not script.SHARED_CACHE.is_dir():
        pytest.skip("cl100k_base not available offline (needs ../shared/real_data)")
    for run in ("one", "two"):
        assert script.main(["--out-dir", str(tmp_path / run)]) == 0
    for name in ("shoppers.jsonl", "README.md"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    # and the committed files are what the script writes now
    for name in ("shoppers.jsonl", "README.md"):
        assert (tmp_path / "one" / name).read_bytes() == (ROOT / "sample_data" / name).read_bytes()


def test_sample_data_loads_without_real_data():
    # tokens are in the file, so no tokenizer (and no ../shared) is needed to load it
    convs = load_conversations(SAMPLE, counter=NoCounting())
    assert SAMPLE.stat().st_size < 300_000
    assert 20 <= len(convs) <= 40
    groups = group_by_user(convs)
    assert len(groups) == 8 and all(len(v) >= 2 for v in groups.values())
    assert sum(c.total_tokens for c in convs) == 24_187
    assert sum(len(c.messages) for c in convs) == 435
    for c in convs:
        assert_linked(c, all_answered=True)
    first = json.loads(SAMPLE.read_text().splitlines()[0])
    assert set(first) == {"id", "user_id", "messages"}
