"""Clearing (context editing): the hand cases of issue 11, each also run against the brute-force
reference (tests/reference_history.py), and replay / sweep with clearing on.

Rules: Anthropic ``clear_tool_uses_20250919`` and LangChain ``ClearToolUsesEdit`` (see
convmem.history.ClearToolUses); the choices where they are silent are in docs/decisions.md
("Clearing").
"""

from __future__ import annotations

import pytest

from convmem import ClearToolUses, HistorySettings, Message, replay, sweep_limits
from convmem.history import OVER_LIMIT, TOOL_GROUP, History
from convmem.replay import context_at
from reference_history import run_lockstep

PH = 4  # placeholder tokens


def M(id: str, role: str, tokens: int, **kw) -> Message:
    return Message(id, role, tokens, **kw)


def tool_turns(n: int, result_tokens: int = 100, call_tokens: int = 10) -> list[Message]:
    """A user message, then n (assistant call, tool result) pairs."""
    msgs = [M("u", "user", 20)]
    for i in range(n):
        msgs.append(M(f"a{i}", "assistant", call_tokens, tool_call_ids=(f"c{i}",)))
        msgs.append(M(f"t{i}", "tool", result_tokens, tool_call_id=f"c{i}", content=f"result {i}"))
    return msgs


def test_oldest_result_cleared_first_newest_three_kept():
    clear = ClearToolUses(trigger=300, keep=3, placeholder_tokens=PH)
    h = History(10_000, clear=clear)
    msgs = tool_turns(5)
    for m in msgs[:7]:  # u, three calls and results: 350 tokens, but only 3 results: none clearable
        assert h.add(m) == []
    assert h.clearings == [] and h.total() == 350
    h.add(msgs[7])
    h.add(msgs[8])  # the fourth result: t0 is the oldest, outside the newest 3
    (c,) = h.clearings
    assert (c.step, c.message_id, c.cleared_ids, c.total_before, c.total_after) == (8, "t3", ["t0"], 460, 364)
    assert c.freed_tokens == 96 and c.trigger == 300 and c.reason == "tool_results"
    h.add(msgs[9])
    h.add(msgs[10])
    assert [x.cleared_ids for x in h.clearings] == [["t0"], ["t1"]]
    sent = {m.id: m for m in h.context()}
    assert [i for i, m in sent.items() if m.content == "[cleared]"] == ["t0", "t1"]
    assert [sent[f"t{i}"].tokens for i in range(5)] == [PH, PH, 100, 100, 100]
    # The calls stay; the originals stay reachable; nothing was dropped.
    assert h.messages() == [m.id for m in msgs] and h.compactions == []
    assert h.original("t0") is msgs[2] and h.original("t4") is msgs[10]
    assert h.is_cleared("t1") and not h.is_cleared("t2") and not h.is_cleared("a0")
    assert sent["t0"].tool_call_id == "c0" and h.total() == sum(m.tokens for m in sent.values())
    with pytest.raises(KeyError, match="'nope'"):
        h.original("nope")
    run_lockstep(msgs, limit=10_000, clear=clear)


def test_exclude_tools_keeps_named_tools_result():
    msgs = tool_turns(5)
    names = {"c0": "get_order", "c1": "search", "c2": "search", "c3": "search", "c4": "search"}
    clear = ClearToolUses(trigger=300, keep=3, exclude_tools=("get_order",), placeholder_tokens=PH)
    h = History(10_000, clear=clear, tool_names=names)
    for m in msgs:
        h.add(m)
    assert [c.cleared_ids for c in h.clearings] == [["t1"]]  # t0 is get_order's: never cleared
    assert not h.is_cleared("t0") and h.context()[2].tokens == 100
    run_lockstep(msgs, limit=10_000, clear=clear, tool_names=names)


def test_clear_at_least_above_what_is_clearable_clears_nothing():
    msgs = tool_turns(5)
    # Clearable at the end: t0, t1 -> 2 * (100 - 4) = 192 tokens < 200.
    clear = ClearToolUses(trigger=100, keep=3, clear_at_least=200, placeholder_tokens=PH)
    h = History(10_000, clear=clear)
    for m in msgs:
        h.add(m)
    assert h.clearings == [] and h.total() == 20 + 5 * 110
    assert all(m.content != "[cleared]" for m in h.context())
    run_lockstep(msgs, limit=10_000, clear=clear)
    # At exactly what is clearable it clears both at once (one cache break).
    h2 = History(10_000, clear=ClearToolUses(trigger=100, keep=3, clear_at_least=192, placeholder_tokens=PH))
    for m in msgs:
        h2.add(m)
    assert [c.cleared_ids for c in h2.clearings] == [["t0", "t1"]]


def test_clearing_then_dropping_when_clearing_is_not_enough():
    msgs = tool_turns(4)  # 20 + 4 * 110 = 460
    clear = ClearToolUses(trigger=200, keep=1, placeholder_tokens=PH)
    h = History(300, keep_tool_groups=True, clear=clear)
    for m in msgs[:-1]:
        assert h.add(m) == []
    assert [c.cleared_ids for c in h.clearings] == [["t0"], ["t1"]]  # at the 2nd and 3rd results
    assert h.total() == 20 + 3 * 10 + 2 * PH + 100 + 10  # 168 with a3's call
    dropped = h.add(msgs[-1])  # t3: 268 -> t2 cleared -> 172, under the limit: nothing dropped
    assert dropped == [] and h.clearings[-1].cleared_ids == ["t2"]
    # A big result: clearing frees too little, so History drops from the oldest end after it.
    big = [M("a9", "assistant", 10, tool_call_ids=("c9",)), M("t9", "tool", 250, tool_call_id="c9")]
    assert h.add(big[0]) == []
    got = h.add(big[1])
    last = h.clearings[-1]
    assert last.cleared_ids == ["t3"] and (last.total_before, last.total_after) == (432, 336)
    comp = h.compactions[-1]
    assert comp.total_before == last.total_after  # the compaction starts where clearing ended
    assert got == ["u", "a0", "t0", "a1", "t1"]
    assert [(d.id, d.reason, d.tokens) for d in comp.dropped][:3] == [
        ("u", OVER_LIMIT, 20), ("a0", OVER_LIMIT, 10), ("t0", TOOL_GROUP, PH)
    ]  # a cleared result leaves with its placeholder's tokens
    assert h.messages() == ["a2", "t2", "a3", "t3", "a9", "t9"] and h.total() == 288
    assert not h.is_cleared("t0") and h.is_cleared("t2")  # a dropped message's original is forgotten
    run_lockstep(msgs + big, limit=300, keep_tool_groups=True, clear=clear)


def test_parallel_call_group_cleared_together():
    msgs = [
        M("u", "user", 20),
        M("a0", "assistant", 10, tool_call_ids=("p1", "p2")),
        M("t0a", "tool", 100, tool_call_id="p1"),
        M("t0b", "tool", 100, tool_call_id="p2"),
        M("a1", "assistant", 10, tool_call_ids=("q1", "q2")),
        M("t1a", "tool", 100, tool_call_id="q1"),
        M("t1b", "tool", 100, tool_call_id="q2"),
    ]
    clear = ClearToolUses(trigger=400, keep=2, placeholder_tokens=PH)  # passed at t1b: 440
    h = History(10_000, keep_tool_groups=True, clear=clear)
    for m in msgs:
        h.add(m)
    (c,) = h.clearings
    assert c.cleared_ids == ["t0a", "t0b"] and c.step == 6  # both results of the group, one record
    assert [m.tokens for m in h.context()] == [20, 10, PH, PH, 10, 100, 100]
    run_lockstep(msgs, limit=10_000, keep_tool_groups=True, clear=clear)


def test_protected_result_dropped_with_its_call_hands_protection_back():
    # A late result of an old call sits in the newest `keep`; when its call is dropped, the newest
    # result not yet cleared before it is protected again (the tail refills from the queue).
    msgs = [
        M("a0", "assistant", 30, tool_call_ids=("c0", "z")),
        M("t0", "tool", 0, tool_call_id="c0"),  # clearing it would cost 1 token
        M("a1", "assistant", 1, tool_call_ids=("c1",)),
        M("t1", "tool", 15, tool_call_id="c1"),
        M("tz", "tool", 5, tool_call_id="z"),  # late: answers a0, the newest (protected) result
        M("u", "user", 55),  # 106: clearing t0 + t1 frees 13 < 14: none; a0 goes with t0 and tz
        M("a2", "assistant", 1, tool_call_ids=("c2",)),  # 72 > 60: t1 is protected again: no clearing
        M("t2", "tool", 5, tool_call_id="c2"),  # t1 leaves the newest 1: cleared (frees 14)
    ]
    clear = ClearToolUses(trigger=60, keep=1, clear_at_least=14, placeholder_tokens=1)
    h, _ = run_lockstep(msgs, limit=100, keep_tool_groups=True, clear=clear)
    assert h.compactions[0].dropped_ids == ["a0", "t0", "tz"]
    assert [(c.step, c.cleared_ids) for c in h.clearings] == [(7, ["t1"])]
    assert h.messages() == ["a1", "t1", "u", "a2", "t2"] and h.total() == 1 + 1 + 55 + 1 + 5


def test_validation_names_the_field():
    with pytest.raises(TypeError, match="ClearToolUses trigger must be an int"):
        ClearToolUses(trigger="100")
    with pytest.raises(ValueError, match="clear_at_least must be a non-negative int, got -5"):
        ClearToolUses(clear_at_least=-5)
    with pytest.raises(TypeError, match="exclude_tools must be a tuple of str"):
        ClearToolUses(exclude_tools=(1,))
    with pytest.raises(TypeError, match="History clear must be a ClearToolUses"):
        History(10, clear={"trigger": 5})
    assert ClearToolUses(exclude_tools=["b", "a"]).exclude_tools == ("b", "a")
    assert (ClearToolUses().trigger, ClearToolUses().keep, ClearToolUses().clear_at_least) == (100_000, 3, 0)


def test_replay_marks_clearings_and_cache_breaks():
    msgs = tool_turns(5)
    s = HistorySettings(10_000, clear_trigger=300, clear_keep=3, placeholder_tokens=PH)
    r = replay(msgs, s)
    assert r.cleared_at == (None, None, 8, None, 10, None, None, None, None, None, None)
    assert [c.cleared_ids for c in r.clearings] == [["t0"], ["t1"]]
    assert r.stats.clearings == 2 and r.stats.messages_cleared == 2 and r.stats.tokens_cleared == 192
    assert r.stats.prefix_changes == 2 and r.stats.compactions == 0  # each clearing breaks the cache
    assert r.prefix_changed[8] and r.prefix_changed[10] and sum(r.prefix_changed) == 2
    assert r.stats.tokens_sent == sum(r.totals)
    assert [m.tokens for m in context_at(msgs, s, 8)][2] == PH
    off = replay(msgs, HistorySettings(10_000))
    assert off.stats.tokens_sent - r.stats.tokens_sent == 96 * 3 + 96  # t0 cleared for 3 adds, t1 for 1
    # sweep_limits' stats-only pass equals replay's, clearing and drops together.
    for row in sweep_limits(msgs, HistorySettings(300, clear_trigger=250, clear_keep=1), [150, 300, 600]):
        trigger = round(250 * row.limit / 300)  # at_limit: the trigger keeps its ratio (125, 250, 500)
        assert row.stats == replay(msgs, HistorySettings(row.limit, clear_trigger=trigger, clear_keep=1)).stats


def test_a_cleared_then_dropped_message_counts_its_placeholder():
    """tokens_dropped counts what left the context: a tool result cleared before it was dropped
    counts its placeholder, in replay, sweep_limits and History's records alike (docs/decisions.md,
    "Clearing"); the freed part is in tokens_cleared. Before, replay counted the original size
    (460 here) while sweep_limits counted 76."""
    msgs = tool_turns(5)
    s = HistorySettings(110, clear_trigger=150, clear_keep=1, placeholder_tokens=PH)
    r = replay(msgs, s)
    assert r.dropped_at == (2, 3, 4, 5, 6, 7, 8, 9, 10, None, None)
    assert r.cleared_at == (None, None, 4, None, 6, None, 8, None, 10, None, None)
    # u (20) and a0..a3 (4 x 10) at their size, t0..t3 cleared first: 4 x PH
    assert r.stats.tokens_dropped == 20 + 4 * 10 + 4 * PH == 76
    assert r.stats.tokens_cleared == 4 * (100 - PH)
    assert sum(m.tokens for c in r.compactions for m in c.dropped) == 76
    (row,) = sweep_limits(msgs, s, [110])
    assert row.stats == r.stats


# ------------------------------------------------------------------ the real retail conversations


@pytest.mark.realdata
def test_real_retail_drop_summarize_clear(tau_retail_file):
    """benchmarks/bench_clearing.py's figures at trigger 3,000 tokens, keep 3 and keep 1 (measured
    once, asserted exactly; docs/decisions.md "Clearing" discusses them)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from bench_clearing import rows

    from convmem import load_conversations
    from convmem.tokens import make_counter

    counter = make_counter(per_message_overhead=0)
    convs = load_conversations(tau_retail_file, counter=counter)
    table = rows(convs, counter.count_text, settings=[(3000, 3), (3000, 1)])
    got = {(t, k, name): (sent, breaks, dropped, cleared) for t, k, name, sent, breaks, dropped, cleared in table}
    assert got[(None, None, "none")] == (11_920_173, 0, 0, 0)
    assert got[(3000, 3, "drop")] == (7_773_861, 464, 2_510, 0)
    assert got[(3000, 3, "summarize")] == (7_840_863, 449, 2_620, 0)
    assert got[(3000, 3, "clear")] == (7_884_482, 488, 2_374, 363)
    assert got[(3000, 3, "clear+")] == (7_770_039, 462, 2_510, 6)
    assert got[(3000, 1, "clear")] == (8_204_768, 571, 1_824, 732)
    assert got[(3000, 1, "clear+")] == (7_864_011, 465, 2_470, 167)


def test_thinking_cleared_keeping_the_newest_turns():
    # An OpenAI reasoning item (all thinking) and Anthropic-style turns (part thinking, with calls).
    msgs = [
        M("u", "user", 10),
        M("r0", "assistant", 50, content="reasoning summary"),
        M("a0", "assistant", 40, content="text", tool_call_ids=("c0",)),
        M("t0", "tool", 5, tool_call_id="c0"),
        M("a1", "assistant", 40, content="text", tool_call_ids=("c1",)),
        M("t1", "tool", 5, tool_call_id="c1"),
    ]
    thinking = {"r0": 50, "a0": 30, "a1": 25}
    from convmem.history import CLEAR_THINKING, ClearThinking

    h, _ = run_lockstep(msgs, limit=1000, keep_tool_groups=True, clear_thinking=ClearThinking(1), thinking=thinking)
    assert [(c.step, c.reason, c.cleared_ids, c.freed_tokens) for c in h.clearings] == [
        (2, CLEAR_THINKING, ["r0"], 50), (4, CLEAR_THINKING, ["a0"], 30)
    ]
    sent = {m.id: m for m in h.context()}
    assert (sent["r0"].tokens, sent["r0"].content) == (0, "")  # all thinking: nothing left of it
    assert (sent["a0"].tokens, sent["a0"].content, sent["a0"].tool_call_ids) == (10, "text", ("c0",))
    assert sent["a1"].tokens == 40 and h.original("a0") is msgs[2]
    assert h.total() == 10 + 0 + 10 + 5 + 40 + 5
    # keep=2: only r0 loses its thinking.
    h2, _ = run_lockstep(msgs, limit=1000, clear_thinking=ClearThinking(2), thinking=thinking)
    assert [c.cleared_ids for c in h2.clearings] == [["r0"]]


def test_replay_thinking_from_a_responses_conversation():
    from convmem import parse_conversations
    from convmem.replay import thinking_tokens_of

    items = [
        {"type": "message", "role": "user", "content": "hi", "tokens": 5},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}], "tokens": 30},
        {"type": "message", "role": "assistant", "content": "ok", "tokens": 3},
        {"type": "message", "role": "user", "content": "more", "tokens": 5},
        {"type": "reasoning", "id": "rs_2", "summary": [{"type": "summary_text", "text": "again"}], "tokens": 20},
        {"type": "message", "role": "assistant", "content": "done", "tokens": 3},
    ]
    import json

    (c,) = parse_conversations(json.dumps(items))
    thinking = thinking_tokens_of(c)
    tokens = {m.id: m.tokens for m in c.messages}
    assert thinking == {"rs_1": tokens["rs_1"], "rs_2": tokens["rs_2"]} and min(thinking.values()) > 0
    s = HistorySettings(1000, clear_thinking_keep=1)
    r = replay(c.messages, s, thinking=thinking)
    assert [x.cleared_ids for x in r.clearings] == [["rs_1"]] and r.cleared_at[1] == 4
    assert r.totals[-1] == c.total_tokens - tokens["rs_1"] and r.stats.prefix_changes == 1
    assert r.final_context[1].content == "" and r.final_context[4].tokens == tokens["rs_2"]
    (row,) = sweep_limits(c.messages, s, [1000], thinking=thinking)
    assert row.stats == r.stats
    (bare,) = parse_conversations(json.dumps(items), provider_records=False)
    assert bare.messages == c.messages  # the same messages: only the records tell reasoning apart
    with pytest.raises(ValueError, match="needs the provider records of conversation 'c1' "
                                         r"\(openai-responses\): load it with provider_records=True"):
        thinking_tokens_of(bare)  # not {}: a replay would silently clear no thinking


@pytest.mark.parametrize(
    "settings",
    [
        HistorySettings(300, keep_tool_groups=True, clear_trigger=250, clear_keep=1),
        HistorySettings(300, clear_trigger=200, clear_keep=2, clear_at_least=90),
        HistorySettings.all_policies(260, summary_budget=30),
        HistorySettings(250, 200, True, True, True, True, 20, clear_trigger=120, clear_keep=0),
    ],
)
def test_prompt_cache_prefix_breaks_at_the_first_cleared_message(settings):
    """The cost view's prefix with clearing equals the brute force over every context_at."""
    from convmem.prompt_cache import prefix_tokens_of_contexts, unchanged_prefix_tokens

    msgs = [M("s", "system", 30), *tool_turns(6)[1:4], M("u", "user", 40), *tool_turns(6)[4:], M("u2", "user", 90)]
    msgs[1:1] = [M("u0", "user", 20)]
    r = replay(msgs, settings)
    brute = prefix_tokens_of_contexts(context_at(msgs, settings, s) for s in range(len(msgs)))
    if settings.clear_trigger is not None:
        assert r.clearings
    assert unchanged_prefix_tokens(r) == brute  # the default takes the replay's clearings
