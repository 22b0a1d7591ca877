"""History's memory is bounded by what it keeps, never by what was ever added (issue 8).

The leak this guards against: with ``keep_tool_groups`` and unique tool-call ids (what real agents
send), every group and its results stayed referenced forever through the call-id map. Here 10^5
messages go through History; its internal maps must stay the size of what is kept, and traced
memory must not grow between 2x10^4 and 10^5 adds.
"""

from __future__ import annotations

import gc
import random
import tracemalloc

import pytest

from convmem import History, Message

N = 100_000


def agent_messages(n: int, seed: int = 7):
    """An agent's conversation: user turns, tool calls with unique ids (some never answered)."""
    rng = random.Random(seed)
    i = 0
    produced = 0
    while produced < n:
        i += 1
        yield Message(f"u{i}", "user", rng.randint(5, 60))
        produced += 1
        calls = tuple(f"call_{i}_{k}" for k in range(rng.choice((1, 1, 2, 3))))
        yield Message(f"a{i}", "assistant", rng.randint(5, 40), tool_call_ids=calls)
        produced += 1
        for k, c in enumerate(calls):
            if rng.random() < 0.9:  # some calls are never answered
                yield Message(f"t{i}_{k}", "tool", rng.randint(20, 300), tool_call_id=c)
                produced += 1
        if rng.random() < 0.1:
            yield Message(f"t{i}_late", "tool", 9, tool_call_id=f"call_{max(1, i - 50)}_0")
            produced += 1  # answers a call long gone: refused on arrival


def internal_sizes(h: History) -> dict[str, int]:
    return {
        "run": len(h._run),
        "dead": len(h._dead),
        "groups": len(h._groups),
        "group_of": len(h._group_of),
        "ids": len(h._ids),
        "records": len(h._records),
        "group_results": sum(len(g.results) for g in set(h._group_of.values())),
    }


POLICIES = [
    dict(keep_tool_groups=True),
    dict(keep_tool_groups=True, pin_system=True, pin_latest_user=True, start_on_user=True, target=1500),
]


@pytest.mark.parametrize("policy", POLICIES, ids=["tool_groups", "all_policies"])
def test_internal_maps_stay_the_size_of_what_is_kept(policy):
    h = History(2000, **policy)
    peak: dict[str, int] = {}
    for step, m in enumerate(agent_messages(N)):
        h.add(m)
        if step % 997 == 0:
            kept = len(h)
            sizes = internal_sizes(h)
            assert sizes["ids"] == kept, sizes
            # every entry refers to something kept: at most a few call ids per kept message
            assert sizes["run"] <= 2 * kept + 1, sizes
            assert sizes["dead"] <= sizes["run"], sizes
            assert sizes["group_of"] <= kept and sizes["groups"] <= 3 * kept, sizes
            assert sizes["group_results"] <= kept, sizes
            for key, value in sizes.items():
                peak[key] = max(peak.get(key, 0), value)
    assert h.steps == N
    # a 2000-token window keeps well under 200 messages of these sizes
    assert peak["ids"] < 200 and peak["groups"] < 400 and peak["records"] == 1024


def test_traced_memory_does_not_grow_with_what_was_ever_added():
    h = History(2000, keep_tool_groups=True, pin_system=True, start_on_user=True, records=64)
    messages = list(agent_messages(N))
    gc.collect()
    tracemalloc.start()
    try:
        for m in messages[: N // 5]:
            h.add(m)
        gc.collect()
        at_20k, _ = tracemalloc.get_traced_memory()
        for m in messages[N // 5 :]:
            h.add(m)
        gc.collect()
        at_100k, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Before the fix this grew by tens of MB (every group and result kept); now only the window
    # (under 200 messages) and 64 records move, whatever the number of adds.
    assert at_100k - at_20k < 64 * 1024, (at_20k, at_100k)
