"""convmem.replay against the per-add reference (tests/reference_replay.py), with hypothesis.

replay fills its per-message columns from History's records after the add loop (issue 10 item 3:
one limit step at 10^5 messages under 1 s); the reference reads History after every add. Every
field of the Replay must be equal: totals, kept counts, prefix changes, drop steps, reasons,
summarized flags, every compaction record (built), the final context, the summaries, the clearings
and the stats, for every policy combination with a target, a summary budget, clearing and thinking.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import HistorySettings, Message, replay
from reference_replay import reference_replay
from test_history_properties import KINDS, TOOL_KINDS, conversations, thinking_of, tool_names_of


def words(text: str) -> int:
    return len(text.split())


def unique(msgs: list[Message]) -> list[Message]:
    """Ids made unique (replay's precondition) and some text for the summarizer to extract."""
    return [replace(m, id=f"m{i}", content=f"text {i} " * (m.tokens % 4 + 1)) for i, m in enumerate(msgs)]


@st.composite
def cases(draw):
    clearing = draw(st.booleans())
    limit = draw(st.one_of(st.integers(0, 40), st.integers(40, 400)))
    target = draw(st.one_of(st.none(), st.integers(0, limit)))
    cap = limit if target is None else target
    budget = draw(st.one_of(st.none(), st.integers(0, cap)))
    flags = draw(st.lists(st.booleans(), min_size=4, max_size=4))
    s = HistorySettings(limit, target, *flags, summary_budget=budget)
    msgs = unique(draw(conversations(limit, 40, TOOL_KINDS if clearing else KINDS)))
    if clearing:
        if draw(st.booleans()):
            s = replace(s, clear_trigger=draw(st.integers(0, limit)), clear_keep=draw(st.integers(0, 3)),
                        clear_at_least=draw(st.sampled_from([0, 1, limit // 3])),
                        exclude_tools=draw(st.sampled_from([(), ("keepme",)])))
        if draw(st.booleans()):
            s = replace(s, clear_thinking_keep=draw(st.integers(0, 2)))
    return s, msgs


def assert_same(got, want) -> None:
    for name in ("messages", "settings", "totals", "kept_counts", "prefix_changed", "dropped_at", "drop_reason",
                 "summarized", "final_context", "summaries", "clearings", "cleared_at", "stats"):
        assert getattr(got, name) == getattr(want, name), name
    assert list(got.compactions) == list(want.compactions)
    for name in ("steps", "message_ids", "totals_before", "totals_after", "dropped_counts", "triggers",
                 "summary_events"):
        assert getattr(got.compactions, name) == getattr(want.compactions, name), name
    assert got.compactions._raw == want.compactions._raw  # what convmem.prompt_cache reads
    # The log's columns against its own built records (the reference's log is a CompactionLog too).
    built = list(got.compactions)
    assert got.compactions.summary_events == tuple((c.step, c.summary) for c in built if c.summary is not None)
    assert got.compactions.dropped_counts == tuple(len(c.dropped) for c in built)
    assert got.compactions.totals_before == tuple(c.total_before for c in built)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_replay_equals_the_per_add_reference(case):
    s, msgs = case
    kw = dict(count_tokens=words, tool_names=tool_names_of(msgs), thinking=thinking_of(msgs))
    assert_same(replay(msgs, s, **kw), reference_replay(msgs, s, kw["count_tokens"], kw["tool_names"], kw["thinking"]))


def test_replay_equals_the_reference_on_a_long_synthetic_conversation():
    """2,000 messages, the page's default shapes: base rule, all policies, summaries."""
    from convmem.synthetic import generate_conversation

    msgs = list(generate_conversation(2_000, seed=5).messages)
    for s in (HistorySettings(3_000), HistorySettings(3_000, 2_000), HistorySettings.all_policies(3_000),
              HistorySettings(3_000, summary_budget=400), HistorySettings.all_policies(3_000, 2_500, 400)):
        got = replay(msgs, s)
        assert_same(got, reference_replay(msgs, s, None))
        assert got.stats.compactions > 10  # the case exercises compaction


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 60), max_size=120), st.integers(0, 150), st.one_of(st.none(), st.floats(0, 1)))
def test_base_rule_walk_equals_the_reference(toks, limit, target_ratio):
    """The base rule (no policy) takes replay's two-pointer walk, no History: same Replay."""
    msgs = [Message(f"m{i}", "user", t) for i, t in enumerate(toks)]
    s = HistorySettings(limit, None if target_ratio is None else int(limit * target_ratio))
    assert_same(replay(msgs, s), reference_replay(msgs, s, None))
