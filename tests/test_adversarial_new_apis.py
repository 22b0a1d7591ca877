"""Adversarial inputs to the APIs added for issues 10-13 (breaker session): each test failed
before its fix. Stores, prices and inputs are built by hand; values are checked against
History / brute force, errors must name the field and the value."""

from __future__ import annotations

import pytest

from convmem import History, Message
from convmem.stores import SQLStore
from convmem.tail import load_tail
from convmem.testing import MemoryStore


def _conversation() -> list[Message]:
    return [Message(f"m{i}", "user" if i % 2 == 0 else "assistant", 10) for i in range(10)]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_load_tail_refuses_a_pager_that_pages_oldest_first(kind):
    # Before: load_tail(store.pager(cid), 30) kept ['m2', 'm1', 'm0'] - the oldest messages,
    # reversed - where History over the conversation keeps ['m7', 'm8', 'm9'].
    store = MemoryStore(page_size=2) if kind == "memory" else SQLStore("sqlite://", page_size=2)
    store.append("c1", _conversation())
    with pytest.raises(ValueError, match="newest_first=False"):
        load_tail(store.pager("c1"), 30)
    history = History(30)
    for m in _conversation():
        history.add(m)
    tail = load_tail(store.pager("c1", newest_first=True), 30)
    assert [m.id for m in tail.messages] == [m.id for m in history.context()] == ["m7", "m8", "m9"]


# -- prompt cache accounting: every bad input is a TypeError/ValueError naming the field -------

from convmem import HistorySettings, replay  # noqa: E402
from convmem.prompt_cache import (  # noqa: E402
    CachePricing,
    cache_accounting,
    prompt_cache,
    sweep_limit_costs,
    unchanged_prefix_tokens,
)

_PRICING = CachePricing("x", input_per_mtok=1.0, cached_per_mtok=0.1, write_per_mtok=1.25,
                        min_cacheable=0)


@pytest.mark.parametrize(
    "call, match",
    [
        # Before: 1.5 tokens and True were priced as counts; "a" failed with "'>' not supported".
        (lambda: cache_accounting([1.5], [0], _PRICING), r"sent\[0\] must be an int .*1\.5"),
        (lambda: cache_accounting([True], [False], _PRICING), r"sent\[0\] must be an int .*True"),
        (lambda: cache_accounting([3], ["a"], _PRICING), r"prefix\[0\] must be an int .*'a'"),
        (lambda: cache_accounting(iter([1]), [0], _PRICING), "sent must be a sequence"),
        # Before: AttributeError 'str' object has no attribute 'served' / 'totals' / 'id'.
        (lambda: cache_accounting([1], [0], "anthropic"), "pricing must be a CachePricing.*anthropic"),
        (lambda: prompt_cache([Message("a", "user", 1)], _PRICING), "result must be a Replay"),
        (lambda: CachePricing(None, 1.0, 0.1, 1.25, 0), "provider must be a str, got None"),
    ],
)
def test_cache_accounting_names_the_bad_field(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_unchanged_prefix_tokens_checks_its_edits():
    messages = [Message(f"m{i}", "user", 600) for i in range(6)]
    result = replay(messages, HistorySettings(limit=2_400))
    # Before: IndexError "tuple index out of range" and AttributeError "'str' ... 'id'".
    with pytest.raises(ValueError, match=r"edits has step 99, not a step in \[0, 6\)"):
        unchanged_prefix_tokens(result, edits={99: []})
    with pytest.raises(TypeError, match=r"edits\[0\] must be a list of Message, got 'abc'"):
        unchanged_prefix_tokens(result, edits={0: "abc"})
    assert unchanged_prefix_tokens(result, edits={}) == unchanged_prefix_tokens(result)


def test_sweep_limit_costs_names_bad_limits_and_pricing():
    messages = [Message(f"m{i}", "user", 600) for i in range(6)]
    settings = HistorySettings(limit=2_400)
    with pytest.raises(TypeError, match="limits must be a sequence.*got 5"):
        sweep_limit_costs(messages, settings, 5, _PRICING)
    with pytest.raises(TypeError, match="pricing must be a CachePricing.*openai"):
        sweep_limit_costs(messages, settings, [1_200], "openai")


# -- History clearing: bad thinking counts and placeholders are refused up front ----------------

from convmem.history import ClearThinking, ClearToolUses  # noqa: E402


@pytest.mark.parametrize(
    "value, error, match",
    [
        # Before: "'<' not supported between instances of 'int' and 'str'" mid-add.
        ("5", TypeError, r"thinking\['a1'\] must be an int .*'5'"),
        # Before: True counted as 1 thinking token; -5 silently cleared nothing.
        (True, TypeError, r"thinking\['a1'\] must be an int .*True"),
        (-5, ValueError, r"thinking\['a1'\] must be >= 0 .*-5"),
    ],
)
def test_a_bad_thinking_count_names_the_message_and_changes_nothing(value, error, match):
    history = History(1_000, clear_thinking=ClearThinking(keep=0), thinking={"a1": value})
    history.add(Message("u", "user", 5))
    with pytest.raises(error, match=match):
        history.add(Message("a1", "assistant", 5))
    assert [m.id for m in history.context()] == ["u"] and history.total() == 5
    history.add(Message("a2", "assistant", 5))  # still usable: the failed add left no trace
    assert [m.id for m in history.context()] == ["u", "a2"]


def test_a_placeholder_with_a_lone_surrogate_is_refused_by_clear_tool_uses():
    # Before: accepted, then History.add failed halfway naming "Message.content".
    with pytest.raises(ValueError, match="ClearToolUses placeholder"):
        ClearToolUses(placeholder="\ud800")
