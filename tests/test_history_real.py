"""History on the 115 real tau-bench retail conversations (../shared/real_data; skipped without it).

Each conversation (system prompt, user turns, assistant messages with tool calls, tool results
answering them by tool_call_id; tokens counted by convmem.load_conversations) is added message by
message under limits 1000, 2000, 4000 and 8000, with every policy on and a few other combinations.
After every add: every invariant of SPEC §4 / docs/decisions.md (tests/reference_history.py
check_invariants) and, at every limit (not only 1k and 8k), the brute-force reference (returned ids,
messages(), total(), over_limit, the compaction record, the summarizer's arguments). No sampling:
all 115 conversations for every case. The retail system prompt is ~1,200 tokens, so at 1000 with
pin_system the history is over_limit from the first message and every unpinned message is dropped
on arrival (the pinned-overflow path on real data).

The whole run file is also fed as one long stream (3,804 messages) with every policy on.
"""

from __future__ import annotations

import pytest

from convmem import load_conversations
from reference_history import run_lockstep

pytestmark = pytest.mark.realdata

LIMITS = [1000, 2000, 4000, 8000]

ALL = dict(pin_system=True, pin_latest_user=True, keep_tool_groups=True, start_on_user=True)

POLICIES = {
    "all": dict(ALL),
    "all+target": dict(ALL, target_frac=0.5),
    "all+target+summary": dict(ALL, target_frac=0.6, budget_frac=0.1),
    "base": {},
    "tool_groups": dict(keep_tool_groups=True),
    "pins": dict(pin_system=True, pin_latest_user=True),
    "groups+start_on_user": dict(keep_tool_groups=True, start_on_user=True),
    "no_pins+summary": dict(keep_tool_groups=True, start_on_user=True, budget_frac=0.1),
}


def _kwargs(policy: dict, limit: int) -> dict:
    kw = {k: v for k, v in policy.items() if k not in ("target_frac", "budget_frac")}
    kw["limit"] = limit
    if "target_frac" in policy:
        kw["target"] = int(limit * policy["target_frac"])
    if "budget_frac" in policy:
        budget = int(limit * policy["budget_frac"])
        kw["summary_budget"] = budget
        # alternate: one summary that fits the budget, one over it (rejected), one exactly at it
        kw["summary_sizes"] = [budget // 2, budget + 7, budget]
    return kw


@pytest.fixture(scope="module")
def conversations(tau_retail_file):
    convs = load_conversations(tau_retail_file)
    assert len(convs) == 115
    assert sum(len(c.messages) for c in convs) == 3804
    return convs


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("name", list(POLICIES))
def test_real_conversations_match_reference(conversations, name, limit):
    kw = _kwargs(POLICIES[name], limit)
    compactions = 0
    for conv in conversations:
        h, _ = run_lockstep(conv.messages, **kw)
        compactions += len(h.compactions)
    if limit <= 4000:
        assert compactions > 0  # the limits do bite on this data


@pytest.mark.parametrize("limit", [1000, 8000])
def test_whole_file_as_one_stream(conversations, limit):
    stream = [m for c in conversations for m in c.messages]
    kw = _kwargs(dict(ALL, target_frac=0.6, budget_frac=0.1), limit)
    run_lockstep(stream, records=None, **kw)


def test_pinned_system_prompt_over_1000(conversations):
    """At 1000 the retail system prompt alone is over: kept, over_limit, the rest dropped on
    arrival except the pinned latest user message."""
    from convmem.history import History

    for conv in conversations[:10]:
        h = History(1000, **ALL)
        sys_prompt = conv.messages[0]
        assert sys_prompt.role == "system" and sys_prompt.tokens > 1000
        for m in conv.messages:
            got = h.add(m)
            if m.role == "assistant" or m.role == "tool":
                assert m.id in got
            assert h.over_limit
            kept = h.messages()
            assert kept[0] == sys_prompt.id
            assert all(x == sys_prompt.id or x.startswith(conv.id) for x in kept)
            assert len(kept) <= 2
