"""replay's clearing walk (convmem.replay._walk_clearing) against History, with hypothesis.

With clearing on (tool results, thinking, or both), summaries or not, replay walks the conversation
in one loop instead of driving History.add per message (issue 10 item 3: a clearing change on the
Token budget page under 1 s at 10^5 messages); the clearing itself is History's own code. History
is the reference: for each of the 16 combinations of pin_system, pin_latest_user, keep_tool_groups
and start_on_user, with and without a target, the whole Replay (totals, kept counts, drop steps and
reasons, prefix changes, every compaction record with cleared messages as their placeholders, the
final context, the clearings, cleared_at, the stats) must equal the per-add reference replay
(tests/reference_replay.py, which reads History after every add). Conversations carry tool calls
answered by id, by position, late, orphan or twice-declared, thinking turns (all or half
thinking), excluded tools and placeholders bigger than some results (tests/test_history_properties.py).
The 115 real retail conversations are replayed under every combination too.
"""

from __future__ import annotations

import importlib
import itertools
from dataclasses import replace
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import HistorySettings, Message, load_conversations, replay, sweep_limits
from convmem.replay import tool_names_of
from reference_replay import reference_replay
from test_history_properties import TOOL_KINDS, conversations, thinking_of
from test_history_properties import tool_names_of as drawn_tool_names
from test_replay_policy_walk import with_contents
from test_replay_reference import assert_same, unique

replay_module = importlib.import_module("convmem.replay")  # the module (convmem.replay is the function)

POLICIES = ("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user")
#: The 16 combinations of the four flags (none included), as keyword dicts.
COMBOS = [dict(zip(POLICIES, bits)) for bits in itertools.product([False, True], repeat=4)]


def combo_id(flags: dict) -> str:
    return "+".join(name for name, on in flags.items() if on) or "none"


def walked(msgs, s: HistorySettings, thinking=None) -> bool:
    """True when replay takes the clearing walk for ``s`` (the path under test)."""
    return replay_module._clearing_walk_applies(msgs, s.build(thinking=thinking), None)


def history_sweep(msgs, s: HistorySettings, limits, **kw) -> list:
    """sweep_limits through History.add (every walk but the base rule's switched off)."""
    with mock.patch.object(replay_module, "_clearing_walk_applies", lambda *args: False), \
            mock.patch.object(replay_module, "_policy_walk_applies", lambda *args: False):
        return sweep_limits(msgs, s, limits, **kw)


@st.composite
def cases(draw, flags: dict, with_target: bool):
    limit = draw(st.one_of(st.integers(0, 40), st.integers(40, 400)))
    target = draw(st.integers(0, limit)) if with_target else None
    msgs = unique(draw(conversations(limit, 40, TOOL_KINDS)))
    s = HistorySettings(limit, target, **flags)
    tools, thinking = draw(st.sampled_from([(True, False), (False, True), (True, True)]))
    if tools:
        s = replace(
            s,
            clear_trigger=draw(st.integers(0, limit)),
            clear_keep=draw(st.integers(0, 3)),
            clear_at_least=draw(st.sampled_from([0, 1, limit // 3])),
            exclude_tools=draw(st.sampled_from([(), ("keepme",), ("keepme", "search")])),
            placeholder_tokens=draw(st.sampled_from([0, 4, 30])),  # 30: more than some results
        )
    if thinking:
        s = replace(s, clear_thinking_keep=draw(st.integers(0, 2)))
    return s, msgs


@pytest.mark.parametrize("with_target", [False, True], ids=["no_target", "target"])
@pytest.mark.parametrize("flags", COMBOS, ids=combo_id)
def test_clearing_walk_equals_history(flags, with_target):
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(cases(flags, with_target))
    def check(case):
        s, msgs = case
        names, thinking = drawn_tool_names(msgs), thinking_of(msgs)
        assert walked(msgs, s, thinking)
        got = replay(msgs, s, tool_names=names, thinking=thinking)
        assert_same(got, reference_replay(msgs, s, None, names, thinking))
        limits = [s.limit // 2, s.limit + 7]
        kw = dict(tool_names=names, thinking=thinking)
        assert sweep_limits(msgs, s, limits, **kw) == history_sweep(msgs, s, limits, **kw)

    check()


@pytest.mark.parametrize("flags", COMBOS, ids=combo_id)
def test_clearing_walk_with_summaries_equals_history(flags):
    """Clearing and summaries together (texts of mixed length, budgets down to 0): the summarizer
    gets the dropped messages as they were sent (a cleared result as its placeholder), as
    History's does; the whole Replay equals the per-add reference, every summary's text too."""

    @st.composite
    def summary_cases(draw):
        s, msgs = draw(cases(flags, draw(st.booleans())))
        budget = draw(st.integers(0, s.target if s.target is not None else s.limit))
        return replace(s, summary_budget=budget), draw(with_contents(msgs))

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(summary_cases())
    def check(case):
        s, msgs = case
        names, thinking = drawn_tool_names(msgs), thinking_of(msgs)
        assert walked(msgs, s, thinking)
        got = replay(msgs, s, tool_names=names, thinking=thinking)
        assert_same(got, reference_replay(msgs, s, None, names, thinking))
        limits = [s.limit // 2, s.limit + 7]
        kw = dict(tool_names=names, thinking=thinking)
        assert sweep_limits(msgs, s, limits, **kw) == history_sweep(msgs, s, limits, **kw)

    check()


def test_clearing_walk_is_taken_with_valid_thinking_and_walkable_summaries():
    s = HistorySettings(100, keep_tool_groups=True, clear_trigger=50)
    assert walked([], s) and walked([], HistorySettings(100, clear_thinking_keep=0))
    assert walked([], replace(s, summary_budget=10))  # summaries with clearing: this walk too
    # ... unless a message id could be a summary's (History knows the kept ids).
    assert not walked([Message("summary-2", "user", 1)], replace(s, summary_budget=10))
    assert not walked([], HistorySettings(100))  # no clearing: the base rule's walk
    assert not walked([], HistorySettings(100, pin_system=True))  # the policy walk
    msgs = unique([Message("a", "assistant", 5)])
    think = HistorySettings(100, clear_thinking_keep=1)
    assert walked(msgs, think, {"m0": 3})
    for bad in (True, -1, 2.0, "3"):  # History.add raises on these: replay leaves them to it
        assert not walked(msgs, think, {"m0": bad})
        with pytest.raises((TypeError, ValueError), match=r"thinking\['m0'\]"):
            replay(msgs, think, thinking={"m0": bad})


@pytest.mark.parametrize("flags", [COMBOS[0], COMBOS[-1], dict(keep_tool_groups=True)], ids=combo_id)
def test_clearing_walk_on_a_long_synthetic_conversation(flags):
    """2,000 messages of the dashboard's synthetic data; limits and triggers that bite."""
    from convmem.synthetic import generate_conversation

    msgs = list(generate_conversation(2_000, seed=7).messages)
    thinking = {m.id: m.tokens // 3 for m in msgs[::5] if m.role == "assistant"}
    for s in (
        HistorySettings(3_000, clear_trigger=3_000, **flags),
        HistorySettings(3_000, 2_000, clear_trigger=1_500, clear_keep=1, clear_at_least=200, **flags),
        HistorySettings(3_000, clear_trigger=2_500, clear_thinking_keep=1, **flags),
        HistorySettings(3_000, 2_400, clear_trigger=2_000, clear_thinking_keep=1, summary_budget=300, **flags),
    ):
        assert walked(msgs, s, thinking)
        got = replay(msgs, s, thinking=thinking)
        assert_same(got, reference_replay(msgs, s, None, None, thinking))
        assert got.stats.compactions > 10 and got.stats.clearings > 10  # the case exercises both
        assert (s.summary_budget is None) == (got.stats.summaries_accepted == 0)


@pytest.fixture(scope="module")
def retail(tau_retail_file):
    convs = load_conversations(tau_retail_file)
    assert len(convs) == 115
    return convs


@pytest.mark.realdata
@pytest.mark.parametrize("flags", COMBOS, ids=combo_id)
def test_clearing_walk_on_every_real_retail_conversation(retail, flags):
    """All 115 tau-bench retail conversations (tool calls answered by id, a ~1,200-token system
    prompt) under limits 1000-8000, with and without a target, clearing at the limit or at half of
    it (get_order_details excluded in one setting), thinking cleared on a third of the assistant
    turns, and the file as one stream."""
    clearings = compactions = 0
    for conv in retail:
        msgs = list(conv.messages)
        names = tool_names_of(conv)
        thinking = {m.id: m.tokens // 2 for m in msgs[::3] if m.role == "assistant"}
        for limit in (1_000, 2_000, 4_000, 8_000):
            for s in (
                HistorySettings(limit, clear_trigger=limit, **flags),
                HistorySettings(limit, limit // 2, clear_trigger=limit // 2, clear_keep=1, **flags),
                HistorySettings(limit, clear_trigger=limit // 2, exclude_tools=("get_order_details",),
                                clear_at_least=100, clear_thinking_keep=1, **flags),
            ):
                got = replay(msgs, s, tool_names=names, thinking=thinking)
                assert_same(got, reference_replay(msgs, s, None, names, thinking))
                clearings += got.stats.clearings
                compactions += got.stats.compactions
    assert clearings > 0 and compactions > 0
    stream = [m for c in retail for m in c.messages]
    s = HistorySettings(4_000, 3_000, clear_trigger=3_000, **flags)
    assert_same(replay(stream, s), reference_replay(stream, s, None))
