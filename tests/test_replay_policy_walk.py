"""replay's policy walk (convmem.replay._walk_policies) against History, with hypothesis.

With any of pin_system, pin_latest_user, keep_tool_groups and start_on_user on (a target or not,
summaries or not; no clearing), replay and sweep_limits walk the conversation in one loop instead of
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

import dataclasses
import importlib
import itertools
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import HistorySettings, Message, load_conversations, replay, sweep_limits
from reference_replay import reference_replay
from test_history_properties import KINDS, conversations
from test_replay_reference import assert_same, unique

replay_module = importlib.import_module("convmem.replay")  # the module (convmem.replay is the function)

POLICIES = ("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user")
#: The 15 non-empty combinations of the four flags, as keyword dicts.
COMBOS = [dict(zip(POLICIES, bits)) for bits in itertools.product([False, True], repeat=4) if any(bits)]


def combo_id(flags: dict) -> str:
    return "+".join(name for name, on in flags.items() if on)


def walked(s: HistorySettings, msgs=()) -> bool:
    """True when replay takes the policy walk for ``s`` on ``msgs`` (the path under test)."""
    return replay_module._policy_walk_applies(s.build(), msgs, None)


def history_sweep(msgs, s: HistorySettings, limits) -> list:
    """sweep_limits through History.add (the walk switched off)."""
    with mock.patch.object(replay_module, "_policy_walk_applies", lambda *args: False):
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


def test_policy_walk_is_taken_with_summaries_and_not_with_clearing():
    assert walked(HistorySettings(100, pin_system=True, summary_budget=10))
    assert not walked(HistorySettings(100, keep_tool_groups=True, clear_trigger=50))
    assert not walked(HistorySettings(100, start_on_user=True, clear_thinking_keep=1))
    assert not walked(HistorySettings(100))  # the base rule has its own walk
    assert not walked(HistorySettings(100, summary_budget=10))  # so do summaries alone
    assert all(walked(HistorySettings(100, 60, **flags)) for flags in COMBOS)
    assert all(walked(HistorySettings(100, 60, summary_budget=20, **flags)) for flags in COMBOS)
    # A message id a summary id could repeat: History decides (it refuses such an add).
    s = HistorySettings(100, pin_system=True, summary_budget=10)
    assert not walked(s, [Message("summary-1", "user", 1)])
    assert walked(s, [Message("summary", "user", 1), Message("my-summary-1", "user", 1)])
    # A summarizer counter that is not convmem's own: History decides.
    assert not replay_module._policy_walk_applies(s.build(len), (), len)


#: Words for message contents: summaries are lines of them, clipped to the budget.
WORDS = ("order", "refund", "item", "9472105831", "shipped", "the", "a", "Yes.", "no?", "—", "emoji 🙂", "x" * 30)


@st.composite
def with_contents(draw, msgs: list[Message]) -> list[Message]:
    """``msgs`` with a text on most of them (empty, one word, or a long run of words)."""
    out = []
    for m in msgs:
        kind = draw(st.sampled_from(["none", "empty", "short", "long", "long"]))
        if kind == "none":
            out.append(m)
            continue
        n = {"empty": 0, "short": 1}.get(kind) or draw(st.integers(2, 60))
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n)))
        out.append(dataclasses.replace(m, content=text))
    return out


@st.composite
def summary_cases(draw, flags: dict):
    limit = draw(st.one_of(st.integers(0, 40), st.integers(40, 400)))
    target = draw(st.one_of(st.none(), st.integers(0, limit)))
    budget = draw(st.integers(0, limit if target is None else target))
    msgs = draw(with_contents(unique(draw(conversations(limit, 40, KINDS)))))
    limits = draw(st.lists(st.integers(0, 400), min_size=1, max_size=3))
    return HistorySettings(limit, target, summary_budget=budget, **flags), msgs, limits


@pytest.mark.parametrize("flags", COMBOS, ids=combo_id)
def test_policy_walk_with_summaries_equals_history(flags):
    """Summaries with every combination of the four flags (a target or not): the same Replay as the
    per-add reference (its summarizer eager, so every summary's text is compared too), and the same
    sweep as History's."""

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(summary_cases(flags))
    def check(case):
        s, msgs, limits = case
        assert walked(s, msgs)
        assert_same(replay(msgs, s), reference_replay(msgs, s, None))
        assert sweep_limits(msgs, s, limits) == history_sweep(msgs, s, limits)

    check()


def test_policy_walk_with_summaries_covers_every_summary_outcome():
    """One synthetic conversation per outcome History can record with pins on: accepted, refused
    over the budget, refused over the limit (the pins leave no room), removed later."""
    from convmem.synthetic import generate_conversation

    msgs = list(generate_conversation(2_000, seed=11).messages)
    reasons = set()
    for s in (HistorySettings.all_policies(3_000, 2_500, 400), HistorySettings.all_policies(1_300, None, 1),
              HistorySettings(1_300, pin_system=True, pin_latest_user=True, summary_budget=600)):
        got = replay(msgs, s)
        assert_same(got, reference_replay(msgs, s, None))
        for _step, event in got.compactions.summary_events:
            if event.accepted:
                reasons.add("accepted")
            elif "over the summary_budget" in event.reason:
                reasons.add("over budget")  # a budget of 1 is under the header's 2 tokens
            elif "with the pinned messages the total would be" in event.reason:
                reasons.add("over limit")
            if event.removed_id:
                reasons.add("removed")
    assert reasons == {"accepted", "over budget", "over limit", "removed"}


def test_policy_walk_with_summaries_leaves_a_summary_id_collision_to_history():
    """A message whose id a summary would repeat: replay takes History's path and matches it
    (History refuses the summary whose id is a kept message's)."""
    msgs = [Message("s0", "system", 5, content="rules")] + [
        Message(f"summary-{i}" if i == 3 else f"m{i}", "user" if i % 2 else "assistant", 9, content=f"turn {i} text")
        for i in range(1, 30)
    ]
    s = HistorySettings(60, pin_system=True, summary_budget=20)
    assert not walked(s, msgs)
    assert_same(replay(msgs, s), reference_replay(msgs, s, None))


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


@pytest.mark.realdata
def test_policy_walk_with_summaries_on_every_real_retail_conversation(retail):
    """All 115 retail conversations under every combination with summaries (limits 1,500 and
    4,000, a target or not): the same Replay as the per-add reference."""
    accepted = 0
    for flags in COMBOS:
        for conv in retail:
            msgs = list(conv.messages)
            for s in (HistorySettings(1_500, None, summary_budget=300, **flags),
                      HistorySettings(4_000, 3_000, summary_budget=500, **flags)):
                got = replay(msgs, s)
                assert_same(got, reference_replay(msgs, s, None))
                accepted += got.stats.summaries_accepted
    assert accepted > 0


def test_policy_walk_with_summaries_preloads_lines_in_proportion_to_the_drops(monkeypatch):
    """Pinned system messages every few turns make most compactions start past a pinned one (not
    where the last ended), so the summarizer falls back to its plain call and drops the lines it
    had appended ahead. The lines made ahead (and thrown away) must stay in proportion to the
    messages summarized, not one PRELOAD_BLOCK per fallback (that made the walk 14-21x slower than
    History.add at 2x10^4 messages). Counts the lines made, never the time; and the Replay still
    equals History's."""
    from convmem.summarizers import ExtractiveSummarizer
    from convmem.synthetic import generate_conversation

    msgs = []
    for i, m in enumerate(generate_conversation(1_500, seed=3).messages):
        msgs.append(m)
        if i % 7 == 0:
            msgs.append(Message(f"sys{i}", "system", 30, content=f"note {i}: rules apply"))
    made = [0]
    real = ExtractiveSummarizer._entries

    def spy(self, dropped, count, memo, **kw):
        made[0] += len(dropped)
        return real(self, dropped, count, memo, **kw)

    monkeypatch.setattr(ExtractiveSummarizer, "_entries", spy)
    s = HistorySettings(3_000, 2_500, pin_system=True, summary_budget=400)
    got = replay(msgs, s)
    summarized = got.stats.messages_dropped
    assert got.stats.compactions > 500 and summarized > 1_000  # the case falls back often
    assert made[0] <= 3 * len(msgs)
    assert_same(got, reference_replay(msgs, s, None))


#: Adversarial contents (break19): emoji, CJK, RTL, combining marks, zero-width and odd whitespace,
#: lone punctuation, the summary header and role-like words, lines far over line_chars.
ODD_TEXTS = ("🙂", "👍🏽", "—", ".", "!?", "...", "日本語のテキスト", "مرحبا", "e\u0301", "\u200b", "\t", "\n", "\u2028",
             "\x85", "a:b", "user:", "Earlier:", "summary-1", "…", "ǅ", "ﬁ", "𝔘𝔫𝔦", "\r\n", "::", "z9", "x" * 300)
#: Ids a summary id ("summary-<n>") is close to without repeating: the walk still applies.
NEAR_SUMMARY_IDS = ("summary", "summary_1", "Summary-1", "summar-1", "x-summary-1", "summary1", " summary-1")


@st.composite
def odd_cases(draw):
    flags = draw(st.sampled_from(COMBOS))
    limit = draw(st.one_of(st.integers(0, 12), st.integers(12, 400)))
    target = draw(st.one_of(st.none(), st.integers(0, limit), st.just(limit)))
    cap = limit if target is None else target
    budget = draw(st.one_of(st.integers(0, cap), st.just(cap), st.just(0)))
    msgs = []
    for i, m in enumerate(draw(conversations(limit, 40, KINDS))):
        mid = draw(st.sampled_from(NEAR_SUMMARY_IDS)) + f"#{i}" if draw(st.integers(0, 9)) == 0 else f"m{i}"
        text = draw(st.one_of(st.none(), st.just(""), st.just(" \n\t"),
                              st.lists(st.sampled_from(ODD_TEXTS), max_size=40).map(" ".join),
                              st.lists(st.sampled_from(ODD_TEXTS), max_size=6).map("".join)))
        msgs.append(dataclasses.replace(m, id=mid, content=text))
    limits = draw(st.lists(st.integers(0, 400), min_size=1, max_size=3))
    return HistorySettings(limit, target, summary_budget=budget, **flags), msgs, limits


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_cases())
def test_policy_walk_with_summaries_on_odd_texts_and_near_summary_ids(case):
    """Summaries with any combination of the flags on adversarial contents (None, blank, emoji,
    unicode whitespace, the header, very long lines) and ids near the summaries' (budget 0, equal
    to the target or the limit; limits down to 0): the walk is taken and equals History, replay
    and sweep_limits."""
    s, msgs, limits = case
    assert walked(s, msgs)
    assert_same(replay(msgs, s), reference_replay(msgs, s, None))
    assert sweep_limits(msgs, s, limits) == history_sweep(msgs, s, limits)
