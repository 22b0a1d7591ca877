"""A replay and the cyclic garbage collector (convmem.replay.replay, convmem._gc.promote_young).

A replay runs with the collector paused and then moves what it made to the oldest generation
unexamined (the first young collection after it used to walk all of it: ~0.1 s of a Token budget
rerun at 10^5 messages). That is only safe when a replay leaves no cyclic garbage behind (it
would wait for a full collection): checked here for every walk and the generic History path
(a counter that is not convmem's own), with policies, summaries, clearing and thinking.
"""

from __future__ import annotations

import gc
from dataclasses import replace

import pytest

from convmem import HistorySettings, replay
from convmem.synthetic import generate_conversation

MESSAGES = generate_conversation(1_500, seed=11).messages
#: Thinking tokens for every assistant message (clear_thinking_keep needs some).
THINKING = {m.id: min(m.tokens, 7) for m in MESSAGES if m.role == "assistant"}
POLICIES = dict(pin_system=True, pin_latest_user=True, keep_tool_groups=True, start_on_user=True)
SETTINGS = {
    "base rule": HistorySettings(1_200),
    "target": HistorySettings(1_200, target=900),
    "policies": HistorySettings(1_200, **POLICIES),
    "summaries": HistorySettings(1_200, summary_budget=200),
    "summaries and policies": HistorySettings(1_200, summary_budget=200, **POLICIES),
    "clearing": HistorySettings(1_200, clear_trigger=1_000),
    "clearing and summaries": HistorySettings(1_200, summary_budget=200, clear_trigger=1_000, **POLICIES),
    "thinking": HistorySettings(1_200, clear_thinking_keep=1),
}


def words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("count", [None, words], ids=["convmem's counter", "a word counter"])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_a_replay_leaves_no_cyclic_garbage_and_nothing_young(name, count):
    # A first replay builds what is built once per process (the default counter, its caches),
    # which may leave garbage of its own; the second is the one held to "no cycle".
    replay(MESSAGES, SETTINGS[name], count_tokens=count, thinking=THINKING)
    gc.collect()
    was = gc.isenabled()
    r = replay(MESSAGES, SETTINGS[name], count_tokens=count, thinking=THINKING)
    assert gc.isenabled() == was
    assert r.stats.compactions > 0
    assert not any(o is r for o in gc.get_objects(generation=0))  # promoted, unexamined
    del r
    assert convmem_garbage() == []  # nothing it made waits for a full collection


#: The modules whose objects a replay makes (its History, walk, records, summarizer).
REPLAY_MODULES = frozenset({"convmem.replay", "convmem.history", "convmem.summarizers"})


def convmem_garbage() -> list[str]:
    """The types of the unreachable objects a full collection finds that a replay makes (a cycle
    through a History, a Replay, a summarizer...). Only those: another thread of the test
    process (a page test's leftovers: the full suite left Conversations) may leave garbage of
    its own meanwhile."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return sorted({type(o).__qualname__ for o in gc.garbage if type(o).__module__ in REPLAY_MODULES})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_a_replay_that_raises_restores_the_collector_and_promotes_nothing():
    gc.collect()
    dup = (*MESSAGES[:10], replace(MESSAGES[3], tokens=1))  # a duplicate id: ValueError
    with pytest.raises(ValueError):
        replay(dup, HistorySettings(100))
    assert gc.isenabled()


def test_a_replay_with_the_collector_off_leaves_it_off():
    gc.disable()
    try:
        r = replay(MESSAGES, HistorySettings(1_200, summary_budget=200))
        assert not gc.isenabled() and r.stats.compactions > 0
    finally:
        gc.enable()
