"""replay's policy walk (convmem.replay._walk_policies) against History, with hypothesis.

With any of pin_system, pin_latest_user, keep_tool_groups and start_on_user on (a target or not;
no summaries, no clearing), replay and sweep_limits walk the conversation in one loop instead of
driving History.add per message (issue 10 item 3). History is the reference: for each of the 15
non-empty combinations of the four flags, without and with a target, the whole Replay (totals, kept
counts, drop steps and reasons, prefix changes, every compaction record, the final context, the
stats) must equal the per-add reference replay (tests/reference_replay.py, which reads History after
every add), and sweep_limits must equal its History path. Conversations carry system messages,
user/assistant turns, tool calls answered by id, by position, late, orphan or twice-declared, and
zero-token and oversize messages (tests/test_history_properties.py). The 115 real retail
conversations are replayed under every combination too.
"""

from __future__ import annotations

import importlib
import itertools
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import HistorySettings, load_conversations, replay, sweep_limits
from reference_replay import reference_replay
from test_history_properties import KINDS, conversations
from test_replay_reference import assert_same, unique

replay_module = importlib.import_module("convmem.replay")  # the module (convmem.replay is the function)

POLICIES = ("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user")
#: The 15 non-empty combinations of the four flags, as keyword dicts.
COMBOS = [dict(zip(POLICIES, bits)) for bits in itertools.product([False, True], repeat=4) if any(bits)]


def combo_id(flags: dict) -> str:
    return "+".join(name for name, on in flags.items() if on)


def walked(s: HistorySettings) -> bool:
    """True when replay takes the policy walk for ``s`` (the path under test)."""
    return replay_module._policy_walk_applies(s.build())


def history_sweep(msgs, s: HistorySettings, limits) -> list:
    """sweep_limits through History.add (the walk switched off)."""
    with mock.patch.object(replay_module, "_policy_walk_applies", lambda h: False):
        return sweep_limits(msgs, s, limits)


@st.composite
def cases(draw, flags: dict, with_target: bool):
    limit = draw(st.one_of(st.integers(0, 40), st.integers(40, 400)))
    target = draw(st.integers(0, limit)) if with_target else None
    msgs = unique(draw(conversations(limit, 40, KINDS)))
    limits = draw(st.lists(st.integers(0, 400), min_size=1, max_size=3))
    return HistorySettings(limit, target, **flags), msgs, limits


@pytest.mark.parametrize("with_target", [False, True], ids=["no_target", "target"])
@pytest.mark.parametrize("flags", COMBOS, ids=combo_id)
def test_policy_walk_equals_history(flags, with_target):
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(cases(flags, with_target))
    def check(case):
        s, msgs, limits = case
        assert walked(s)
        assert_same(replay(msgs, s), reference_replay(msgs, s, None))
        assert sweep_limits(msgs, s, limits) == history_sweep(msgs, s, limits)

    check()


def test_policy_walk_is_not_taken_with_summaries_or_clearing():
    assert not walked(HistorySettings(100, pin_system=True, summary_budget=10))
    assert not walked(HistorySettings(100, keep_tool_groups=True, clear_trigger=50))
    assert not walked(HistorySettings(100, start_on_user=True, clear_thinking_keep=1))
    assert not walked(HistorySettings(100))  # the base rule has its own walk
    assert all(walked(HistorySettings(100, 60, **flags)) for flags in COMBOS)


@pytest.mark.parametrize("flags", COMBOS, ids=combo_id)
def test_policy_walk_on_a_long_synthetic_conversation(flags):
    """2,000 messages of the dashboard's synthetic data; limits that bite, with and without target."""
    from convmem.synthetic import generate_conversation

    msgs = list(generate_conversation(2_000, seed=7).messages)
    for s in (HistorySettings(3_000, **flags), HistorySettings(3_000, 2_000, **flags)):
        got = replay(msgs, s)
        assert_same(got, reference_replay(msgs, s, None))
        assert got.stats.compactions > 10  # the case exercises compaction
    s = HistorySettings(3_000, 2_000, **flags)
    assert sweep_limits(msgs, s, [1_000, 4_000]) == history_sweep(msgs, s, [1_000, 4_000])


@pytest.fixture(scope="module")
def retail(tau_retail_file):
    convs = load_conversations(tau_retail_file)
    assert len(convs) == 115
    return convs


@pytest.mark.realdata
@pytest.mark.parametrize("flags", COMBOS, ids=combo_id)
def test_policy_walk_on_every_real_retail_conversation(retail, flags):
    """All 115 tau-bench retail conversations (tool calls answered by id, a ~1,200-token system
    prompt) under limits 1000-8000, with and without a target, and the file as one stream."""
    compactions = 0
    for conv in retail:
        msgs = list(conv.messages)
        for limit in (1_000, 2_000, 4_000, 8_000):
            for target in (None, limit // 2):
                s = HistorySettings(limit, target, **flags)
                got = replay(msgs, s)
                assert_same(got, reference_replay(msgs, s, None))
                compactions += got.stats.compactions
    assert compactions > 0
    stream = [m for c in retail for m in c.messages]
    s = HistorySettings(4_000, 3_000, **flags)
    assert_same(replay(stream, s), reference_replay(stream, s, None))
    assert sweep_limits(stream, s, [1_000, 8_000]) == history_sweep(stream, s, [1_000, 8_000])
