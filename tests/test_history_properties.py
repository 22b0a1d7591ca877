"""History against the brute-force reference (tests/reference_history.py), with hypothesis.

Conversations carry system messages at the start and mid-conversation, user/assistant turns,
assistant messages with single and parallel tool calls, tool results answering them by id, without
an id (positional grouping), late (after other turns) or orphan (an id nobody declared, or before
any assistant), a call id declared twice, zero-token and oversize messages. Policies are drawn from
every combination of the four flags, a target (none or <= limit) and a summarizer (none, or a
deterministic one with a budget, sometimes returning summaries over the budget).

After EVERY add, run_lockstep compares History with the reference (returned ids, messages(),
total(), over_limit, the new compaction record: dropped ids, tokens, reasons, added steps,
summarized flags, trigger, totals, the summary outcome; the summarizer's arguments; the summary in
place) and checks the invariants on History alone (check_invariants).

Clearing (context editing, ClearToolUses) is drawn on top of every combination: a trigger, keep,
clear_at_least, an excluded tool name and a placeholder size; the clearing records and the tokens of
every message sent are compared too.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import Message
from convmem.history import ClearThinking, ClearToolUses
from reference_history import POLICY_FLAGS, run_lockstep

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KINDS = (
    ["user"] * 6
    + ["assistant"] * 4
    + ["assistant_calls"] * 4
    + ["tool_answer"] * 5
    + ["tool_noid"] * 2
    + ["tool_late"] * 2
    + ["tool_orphan"]
    + ["system"]
    + ["assistant_dup"]
    + ["id_again"]
)


#: Tool-heavy conversations for clearing: mostly calls and their results (some late, some by position).
TOOL_KINDS = (
    ["user"] * 2
    + ["assistant_calls"] * 4
    + ["tool_answer"] * 8
    + ["tool_noid", "tool_late", "system", "assistant", "id_again"]
)


@st.composite
def token_counts(draw, limit: int) -> int:
    kind = draw(st.sampled_from(["zero", "small", "small", "small", "mid", "big"]))
    if kind == "zero":
        return 0
    if kind == "small":
        return draw(st.integers(1, max(1, limit // 4 if limit < 40 else limit // 12)))
    if kind == "mid":
        return draw(st.integers(0, limit))
    return draw(st.integers(limit + 1, limit + 10))  # oversize alone


@st.composite
def conversations(draw, limit: int, max_len: int = 30, kinds: list[str] = KINDS) -> list[Message]:
    msgs: list[Message] = []
    n_sys = draw(st.integers(0, 2))
    for _ in range(n_sys):
        msgs.append(Message(f"m{len(msgs)}", "system", draw(token_counts(limit))))
    declared: list[str] = []  # every call id declared so far
    unanswered: list[str] = []  # declared, not answered yet
    answered: list[str] = []
    n = draw(st.integers(0, max_len))
    for _ in range(n):
        i = len(msgs)
        mid = f"m{i}"
        tok = draw(token_counts(limit))
        kind = draw(st.sampled_from(kinds))
        if kind in ("system", "user", "assistant"):
            m = Message(mid, kind, tok)
        elif kind in ("assistant_calls", "assistant_dup"):
            k = draw(st.integers(1, 3))
            ids = [f"c{i}_{j}" for j in range(k)]
            if kind == "assistant_dup" and declared:
                ids[0] = draw(st.sampled_from(declared))  # a call id declared a second time
            m = Message(mid, "assistant", tok, tool_call_ids=tuple(ids))
            declared.extend(x for x in ids if x not in declared)
            unanswered.extend(ids)
        elif kind == "tool_answer":
            if unanswered:
                # in order mostly (parallel results), sometimes out of order
                cid = unanswered[0] if draw(st.booleans()) else draw(st.sampled_from(unanswered))
                unanswered.remove(cid)
                answered.append(cid)
                m = Message(mid, "tool", tok, tool_call_id=cid)
            else:
                m = Message(mid, "tool", tok)
        elif kind == "tool_late":
            pool = declared
            cid = draw(st.sampled_from(pool)) if pool else None
            m = Message(mid, "tool", tok, tool_call_id=cid)
        elif kind == "tool_noid":
            m = Message(mid, "tool", tok)
        elif kind == "id_again":
            # An id used before (kept: refused with ValueError; dropped: may come back) or the
            # id the fake summarizer gives its first summary.
            again = draw(st.sampled_from([x.id for x in msgs] + ["sum0"]))
            m = Message(again, draw(st.sampled_from(["user", "assistant", "system"])), tok)
        else:  # tool_orphan: an id nobody declared
            m = Message(mid, "tool", tok, tool_call_id=f"zz{i}")
        msgs.append(m)
    return msgs


TOOL_NAMES = ("search", "lookup", "keepme")


def tool_names_of(msgs: list[Message]) -> dict[str, str]:
    """Call id -> tool name for every declared call (a fixed spread over TOOL_NAMES)."""
    names = {}
    for m in msgs:
        for j, cid in enumerate(m.tool_call_ids):
            names.setdefault(cid, TOOL_NAMES[(len(names) + j) % len(TOOL_NAMES)])
    return names


def thinking_of(msgs: list[Message]) -> dict[str, int]:
    """Message id -> thinking tokens: every third assistant message is all thinking (an OpenAI
    reasoning item), every third has half its tokens thinking (an Anthropic turn)."""
    out: dict[str, int] = {}
    for i, m in enumerate(msgs):
        if m.role == "assistant" and i % 3 != 2:
            out.setdefault(m.id, m.tokens if i % 3 == 0 else m.tokens // 2)
    return out


@st.composite
def clear_settings(draw, limit: int) -> ClearToolUses:
    return ClearToolUses(
        trigger=draw(st.integers(0, limit)),
        keep=draw(st.integers(0, 3)),
        clear_at_least=draw(st.sampled_from([0, 0, 1, max(1, limit // 3), limit + 50])),
        exclude_tools=draw(st.sampled_from([(), (), ("keepme",), ("keepme", "search")])),
        placeholder_tokens=draw(st.integers(0, 3)),
    )


@st.composite
def scenarios(draw, max_len: int = 30):
    clearing = draw(st.booleans())
    if clearing:
        limit = draw(st.one_of(st.integers(0, 40), st.integers(40, 400)))
    else:
        limit = draw(st.one_of(st.integers(0, 3), st.integers(4, 40)))
    flags = {f: draw(st.booleans()) for f in POLICY_FLAGS}
    policy: dict = dict(limit=limit, **flags)
    if draw(st.booleans()):
        policy["target"] = draw(st.integers(0, limit))
    goal_cap = policy.get("target", limit)
    summary = {}
    if draw(st.booleans()):
        budget = draw(st.integers(0, goal_cap))
        summary = dict(
            summary_budget=budget,
            # sizes cycle per call; some above the budget (rejected)
            summary_sizes=draw(st.lists(st.integers(0, budget + 3), min_size=1, max_size=4)),
            summary_role=draw(st.sampled_from(["system", "assistant", "user"])),
            summary_kinds=draw(
                st.lists(st.sampled_from(["ok", "ok", "blank", "clash"]), min_size=1, max_size=3)
            ),
        )
    records = draw(st.sampled_from(["default", "default", None, 0, 2]))
    if records != "default":
        policy["records"] = records  # History's record cap; on_compaction still sees every record
    msgs = draw(conversations(limit, max_len, TOOL_KINDS if clearing and draw(st.booleans()) else KINDS))
    if clearing:
        if draw(st.booleans()):
            policy["clear"] = draw(clear_settings(limit))
            policy["tool_names"] = tool_names_of(msgs)
        if draw(st.booleans()):
            policy["clear_thinking"] = ClearThinking(draw(st.integers(0, 2)))
            policy["thinking"] = thinking_of(msgs)
    return policy, summary, msgs


@SETTINGS
@given(scenarios())
def test_history_matches_reference(scenario):
    policy, summary, msgs = scenario
    run_lockstep(msgs, **policy, **summary)


# Every combination of the four flags, each with a target and a summarizer, is also run directly
# (hypothesis draws them too; this makes sure none is starved).
COMBOS = list(itertools.product([False, True], repeat=4))


@pytest.mark.parametrize("clear", [False, True], ids=["keep", "clear"])
@pytest.mark.parametrize("combo", COMBOS, ids=["".join("SUTO"[i] if f else "-" for i, f in enumerate(c)) for c in COMBOS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_flag_combination(combo, clear, data):
    limit = data.draw(st.integers(2, 30), label="limit")
    target = data.draw(st.one_of(st.none(), st.integers(0, limit)), label="target")
    cap = limit if target is None else target
    policy = dict(zip(POLICY_FLAGS, combo), limit=limit, target=target)
    summary = {}
    if data.draw(st.booleans(), label="summarize"):
        budget = data.draw(st.integers(0, cap), label="budget")
        summary = dict(
            summary_budget=budget,
            summary_sizes=data.draw(st.lists(st.integers(0, budget + 2), min_size=1, max_size=3), label="sizes"),
            summary_kinds=data.draw(
                st.lists(st.sampled_from(["ok", "ok", "blank", "clash"]), min_size=1, max_size=3),
                label="kinds",
            ),
        )
    msgs = data.draw(conversations(limit, 25, TOOL_KINDS if clear else KINDS), label="messages")
    if clear:
        policy["clear"] = data.draw(clear_settings(limit), label="clear")
        policy["tool_names"] = tool_names_of(msgs)
        if data.draw(st.booleans(), label="thinking"):
            policy["clear_thinking"] = ClearThinking(data.draw(st.integers(0, 2), label="keep thinking"))
            policy["thinking"] = thinking_of(msgs)
    run_lockstep(msgs, **policy, **summary)


# Long conversations with small messages: many compactions per run.
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(max_len=120))
def test_long_conversations_match_reference(scenario):
    policy, summary, msgs = scenario
    run_lockstep(msgs, **policy, **summary)


# Invariants alone (no reference) on bigger inputs, every flag on.
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(5, 60).flatmap(lambda lim: st.tuples(st.just(lim), conversations(lim, 200))))
def test_invariants_all_policies_on(arg):
    limit, msgs = arg
    run_lockstep(
        msgs,
        compare=False,
        limit=limit,
        pin_system=True,
        pin_latest_user=True,
        keep_tool_groups=True,
        start_on_user=True,
        target=limit // 2,
        summary_budget=limit // 8,
        summary_sizes=[limit // 8, limit // 8 + 1],
    )


# Invariants alone with clearing on as well (memory: the clearing queues stay bounded by what is
# kept; checked on History's internals after the run).
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(5, 60).flatmap(lambda lim: st.tuples(st.just(lim), conversations(lim, 200, TOOL_KINDS))))
def test_invariants_clearing_all_policies_on(arg):
    limit, msgs = arg
    h, _ = run_lockstep(
        msgs,
        compare=False,
        limit=limit,
        pin_system=True,
        pin_latest_user=True,
        keep_tool_groups=True,
        start_on_user=True,
        target=limit // 2,
        clear=ClearToolUses(trigger=limit // 3, keep=2, exclude_tools=("keepme",), placeholder_tokens=1),
        tool_names=tool_names_of(msgs),
        clear_thinking=ClearThinking(1),
        thinking=thinking_of(msgs),
    )
    kept = len(h)
    assert len(h._tstate) <= kept and h._tail_live <= 2
    assert len(h._originals) <= kept and len(h._think_live) <= 1
    assert len(h._think_queue) <= kept + 1
