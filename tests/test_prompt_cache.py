"""convmem.prompt_cache: per-request cached / written / uncached input tokens and their price.

The O(n) prefix (unchanged_prefix_tokens, from the compaction records) is checked against a brute
force that rebuilds every per-step context with context_at and takes the common prefix by id and
content (prefix_tokens_of_contexts): by hypothesis over generated conversations (system messages,
parallel tool calls, late and orphan tool results, zero-token and oversize messages, content for
the extractive summarizer) under every policy combination, and on every real retail conversation.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import (
    ANTHROPIC_SONNET,
    OPENAI_GPT,
    PROVIDERS,
    CachePricing,
    HistorySettings,
    Message,
    cache_accounting,
    common_prefix_tokens,
    context_at,
    load_conversations,
    prefix_tokens_of_contexts,
    prompt_cache,
    replay,
    sweep_limit_costs,
    sweep_limits,
    unchanged_prefix_tokens,
)
from convmem.synthetic import generate_conversation

WORDS = ["order", "refund", "shoes", "size", "blue", "address", "zip", "exchange", "item", "ok"]


def words(text: str) -> int:
    return len(text.split())


def brute_force(messages, s: HistorySettings, count_tokens=None) -> tuple[int, ...]:
    """Every per-step context rebuilt from scratch; common prefix by id and content."""
    return prefix_tokens_of_contexts(
        context_at(messages, s, step, count_tokens=count_tokens) for step in range(len(messages))
    )


# ---------------------------------------------------------------------------------- hand cases


def test_append_only_reuses_the_whole_previous_prompt():
    msgs = [Message(f"m{i}", "user", 500) for i in range(4)]
    r = replay(msgs, HistorySettings(limit=10_000))
    assert unchanged_prefix_tokens(r) == (0, 500, 1000, 1500)
    c = prompt_cache(r, ANTHROPIC_SONNET)
    # 1,000 < 1,024: step 2's prefix is not served; step 3 reads 1,500.
    assert c.cached == (0, 0, 0, 1500)
    assert c.written == (0, 0, 1500, 500)  # steps 0-1 are below the minimum: not written
    assert c.uncached == (500, 1000, 0, 0)
    t = c.totals
    assert (t.requests, t.sent, t.cached, t.written, t.uncached) == (4, 5000, 1500, 2000, 1500)
    assert t.cost == pytest.approx((1500 * 2.0 + 1500 * 0.2 + 2000 * 2.5) / 1e6)
    assert t.cached_share == pytest.approx(0.3)
    assert c.cost_without_cache == pytest.approx(5000 * 2.0 / 1e6)


def test_openai_serves_whole_128_token_blocks():
    sent = [1300, 1400, 2000]
    prefix = [0, 1300, 1400]
    c = cache_accounting(sent, prefix, OPENAI_GPT)
    assert c.cached == (0, 1280, 1280)
    # no write fee: written tokens are priced as input
    assert c.totals.cost == pytest.approx((2560 * 0.25 + (4700 - 2560) * 2.5) / 1e6)


def test_pinned_system_prompt_stays_cached_across_a_drop():
    msgs = [Message("sys", "system", 1200)] + [Message(f"m{i}", "user", 400) for i in range(5)]
    s = HistorySettings(limit=2400, pin_system=True)
    r = replay(msgs, s)
    prefix = unchanged_prefix_tokens(r)
    assert prefix == brute_force(msgs, s)
    # step 4 drops m0 (the oldest unpinned): the pinned system prompt (1,200) is still the prefix
    assert r.dropped_at[1] == 4
    assert prefix[4] == 1200
    assert prompt_cache(r, ANTHROPIC_SONNET).cached[4] == 1200


def test_a_new_summary_breaks_the_prefix_at_the_summary():
    msgs = [Message("sys", "system", 5, "be brief")] + [
        Message(f"m{i}", "user", 6, " ".join(WORDS[(i + k) % 10] for k in range(6))) for i in range(12)
    ]
    s = HistorySettings(limit=30, target=20, pin_system=True, summary_budget=6)
    r = replay(msgs, s, count_tokens=words)
    assert r.stats.summaries_accepted >= 2
    prefix = unchanged_prefix_tokens(r)
    assert prefix == brute_force(msgs, s, count_tokens=words)
    second = r.compactions.summary_events[1][0]  # the step that replaced the first summary
    assert prefix[second] == 5  # only the pinned system prompt before the replaced summary


def test_content_identity_not_only_ids():
    a = [Message("x", "user", 700, "hello"), Message("y", "user", 700, "world")]
    edited = [a[0], replace(a[1], content="[cleared]", tokens=3)]  # same id, new content
    assert common_prefix_tokens(a, edited) == 700
    assert common_prefix_tokens(a, list(a)) == 1400
    assert prefix_tokens_of_contexts([a, edited, edited]) == (0, 700, 703)


def test_pricing_errors_name_the_field():
    with pytest.raises(ValueError, match="cached_per_mtok"):
        replace(OPENAI_GPT, cached_per_mtok=-1.0)
    with pytest.raises(ValueError, match="input_per_mtok"):
        replace(OPENAI_GPT, input_per_mtok=float("nan"))
    with pytest.raises(ValueError, match="increment"):
        replace(OPENAI_GPT, increment=0)
    with pytest.raises(TypeError, match="min_cacheable"):
        replace(OPENAI_GPT, min_cacheable=1024.0)
    with pytest.raises(ValueError, match=r"prefix\[1\]"):
        cache_accounting([10, 10], [0, 11], OPENAI_GPT)
    with pytest.raises(ValueError, match="same length"):
        cache_accounting([10], [0, 0], OPENAI_GPT)


def test_presets_are_the_documented_numbers():
    assert set(PROVIDERS) == {"anthropic", "openai"}
    a, o = ANTHROPIC_SONNET, OPENAI_GPT
    assert a.cached_per_mtok == pytest.approx(0.1 * a.input_per_mtok)  # cache read 0.1x
    assert a.write_per_mtok == pytest.approx(1.25 * a.input_per_mtok)  # 5-minute write 1.25x
    assert (a.min_cacheable, a.increment) == (1024, 1)
    assert (o.min_cacheable, o.increment) == (1024, 128)
    assert o.write_per_mtok == o.input_per_mtok  # no cache-write fee
    assert all("2026-11-30" in p.source for p in PROVIDERS.values())


def test_rarer_deeper_compaction_sends_more_and_costs_less():
    """The issue's point, on a hand-made conversation: trigger 4,000 cut to 2,000 sends more
    tokens than cutting to 3,600 (a tiny cut every few messages) but reuses the cache far more."""
    msgs = [Message("sys", "system", 1100)] + [Message(f"m{i}", "user" if i % 2 else "assistant", 200) for i in range(120)]
    shallow = replay(msgs, HistorySettings(4000, 3600, pin_system=True))
    deep = replay(msgs, HistorySettings(4000, 2000, pin_system=True))
    a, b = prompt_cache(shallow, ANTHROPIC_SONNET).totals, prompt_cache(deep, ANTHROPIC_SONNET).totals
    assert deep.stats.compactions < shallow.stats.compactions
    assert b.sent < a.sent  # deeper cuts also send less here...
    assert b.cost < a.cost
    # ...and a policy that sends MORE can still cost less: no target (cut to the limit every add)
    every_add = prompt_cache(replay(msgs, HistorySettings(2000, pin_system=True)), ANTHROPIC_SONNET).totals
    assert every_add.sent == 227_900 and b.sent == 342_100  # 50% more tokens sent...
    assert round(every_add.cost, 4) == 0.2634 and round(b.cost, 4) == 0.1399  # ...47% cheaper


# ------------------------------------------------------------------------------- brute force


@pytest.mark.parametrize(
    "s",
    [
        HistorySettings(limit=3_000),
        HistorySettings(limit=3_000, target=1_500),
        HistorySettings.all_policies(3_000, target=2_000),
        HistorySettings.all_policies(3_000, target=2_000, summary_budget=300),
        HistorySettings(3_000, 1_800, True, True, False, False, 300),
        HistorySettings(limit=50),
    ],
    ids=repr,
)
def test_synthetic_conversation_matches_brute_force(s):
    msgs = list(generate_conversation(250, seed=7).messages)
    r = replay(msgs, s, count_tokens=words)
    assert unchanged_prefix_tokens(r) == brute_force(msgs, s, count_tokens=words)


TOOLISH = ["user"] * 5 + ["assistant"] * 3 + ["calls"] * 3 + ["answer"] * 4 + ["noid", "orphan", "system"]


@st.composite
def conversations(draw, limit: int) -> list[Message]:
    msgs: list[Message] = []
    for _ in range(draw(st.integers(0, 2))):
        msgs.append(Message(f"m{len(msgs)}", "system", draw(st.integers(0, limit // 2 + 1)), "rules here"))
    unanswered: list[str] = []
    for _ in range(draw(st.integers(0, 28))):
        i = len(msgs)
        kind = draw(st.sampled_from(TOOLISH))
        tok = draw(st.one_of(st.integers(0, max(1, limit // 4)), st.integers(0, limit + 5)))
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=0, max_size=5)))
        if kind in ("user", "assistant", "system"):
            m = Message(f"m{i}", kind, tok, text)
        elif kind == "calls":
            ids = tuple(f"c{i}_{j}" for j in range(draw(st.integers(1, 3))))
            unanswered.extend(ids)
            m = Message(f"m{i}", "assistant", tok, text, tool_call_ids=ids)
        elif kind == "answer" and unanswered:
            cid = unanswered.pop(draw(st.integers(0, len(unanswered) - 1)))
            m = Message(f"m{i}", "tool", tok, text, tool_call_id=cid)
        elif kind == "orphan":
            m = Message(f"m{i}", "tool", tok, text, tool_call_id=f"zz{i}")
        else:
            m = Message(f"m{i}", "tool", tok, text)
        msgs.append(m)
    return msgs


@st.composite
def scenarios(draw):
    limit = draw(st.integers(1, 60))
    target = draw(st.one_of(st.none(), st.integers(0, limit)))
    flags = [draw(st.booleans()) for _ in range(4)]
    budget = None
    if draw(st.booleans()):
        budget = draw(st.integers(0, limit if target is None else target))
    s = HistorySettings(limit, target, *flags, summary_budget=budget)
    return draw(conversations(limit)), s


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_prefix_matches_brute_force(scenario):
    msgs, s = scenario
    try:
        s.build()
    except (ValueError, TypeError):
        return  # settings History refuses (e.g. a budget that leaves no room): nothing to replay
    r = replay(msgs, s, count_tokens=words)
    fast = unchanged_prefix_tokens(r)
    assert fast == brute_force(msgs, s, count_tokens=words)
    for step, p in enumerate(fast):  # never more than either request
        assert 0 <= p <= r.totals[step] and (step == 0 or p <= r.totals[step - 1])


@pytest.mark.parametrize("combo", list(itertools.product([False, True], repeat=4)))
def test_every_policy_combination_with_summaries(combo):
    msgs = list(generate_conversation(160, seed=11).messages)
    for s in (
        HistorySettings(1_500, 900, *combo, summary_budget=120),
        HistorySettings(1_500, None, *combo),
    ):
        r = replay(msgs, s, count_tokens=words)
        assert unchanged_prefix_tokens(r) == brute_force(msgs, s, count_tokens=words)


# ------------------------------------------------------------------------------------ sweep


def test_sweep_limit_costs_matches_replay_and_sweep_limits():
    msgs = list(generate_conversation(200, seed=2).messages)
    base = HistorySettings.all_policies(4_000, target=2_000)
    limits = [2_000, 3_000, 4_000]
    rows = sweep_limit_costs(msgs, base, limits, OPENAI_GPT)
    plain = sweep_limits(msgs, base, limits)
    assert [r.limit for r in rows] == limits
    assert [r.target for r in rows] == [1_000, 1_500, 2_000]
    assert [r.stats for r in rows] == [r.stats for r in plain]
    for row in rows:
        s = replace(base, limit=row.limit, target=row.target)
        assert row.cache == prompt_cache(replay(msgs, s), OPENAI_GPT).totals


# -------------------------------------------------------------------------------- real data

REAL_POLICIES = [
    HistorySettings(2_000),
    HistorySettings(4_000, 2_000),
    HistorySettings.all_policies(2_000),
    HistorySettings.all_policies(4_000, target=2_000),
    HistorySettings.all_policies(4_000, target=2_400, summary_budget=400),
    HistorySettings(4_000, 2_400, False, False, True, True, 400),
    HistorySettings(4_000, 2_400, True, True, True, True, clear_trigger=2_000, clear_keep=3),
    HistorySettings(3_000, clear_trigger=1_500, clear_keep=1, clear_at_least=200),
]


@pytest.mark.realdata
@pytest.mark.parametrize("s", REAL_POLICIES, ids=repr)
def test_real_retail_conversations_match_brute_force(tau_retail_file, s):
    convs = load_conversations(tau_retail_file)
    assert len(convs) == 115
    for conv in convs:
        msgs = list(conv.messages)
        r = replay(msgs, s)
        assert unchanged_prefix_tokens(r) == brute_force(msgs, s), conv.id


# ------------------------------------------------------------------- in-place edits (clearing)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.data())
def test_in_place_edits_break_the_prefix_at_the_first_edited_message(scenario, data):
    """What clearing (issue 11) will do: messages of the context replaced by a cleared version
    (same id). The fast path with ``edits`` equals the brute force over the edited contexts."""
    msgs, s = scenario
    try:
        s.build()
    except (ValueError, TypeError):
        return
    r = replay(msgs, s, count_tokens=words)
    ids = {m.id for m in msgs}
    latest: dict[str, Message] = {}
    edits: dict[int, list[Message]] = {}
    contexts = []
    previous: list[Message] = []
    for step in range(len(msgs)):
        if step and previous and data.draw(st.booleans(), label=f"edit at {step}"):
            kept = [m for m in previous if m.id in ids]
            if kept:
                chosen = data.draw(st.lists(st.sampled_from(kept), max_size=2, unique_by=lambda m: m.id))
                new = [replace(m, content=f"[cleared {step}]", tokens=data.draw(st.integers(0, 3))) for m in chosen]
                edits[step] = new
                latest.update((m.id, m) for m in new)
        ctx = [latest.get(m.id, m) if m.id in ids else m for m in context_at(msgs, s, step, count_tokens=words)]
        contexts.append(ctx)
        previous = ctx
    edited = replace(r, totals=tuple(sum(m.tokens for m in c) for c in contexts))
    assert unchanged_prefix_tokens(edited, edits) == prefix_tokens_of_contexts(contexts)


def test_edits_naming_an_unknown_id_raise():
    msgs = [Message(f"m{i}", "user", 10) for i in range(3)]
    r = replay(msgs, HistorySettings(100))
    assert unchanged_prefix_tokens(r, {2: [replace(msgs[0], content="x", tokens=1)]})[2] == 0
    with pytest.raises(KeyError, match="'nope'"):
        unchanged_prefix_tokens(r, {1: [Message("nope", "user", 1)]})


@pytest.mark.parametrize(
    "s",
    [
        HistorySettings(3_000, clear_trigger=1_500, clear_keep=2),
        HistorySettings(3_000, clear_trigger=1_500, clear_keep=0, clear_at_least=300),
        HistorySettings.all_policies(3_000, target=2_000),
        replace(HistorySettings.all_policies(3_000, target=2_000, summary_budget=300), clear_trigger=1_800, clear_keep=1),
    ],
    ids=repr,
)
def test_history_clearing_breaks_the_prefix_at_the_first_cleared_message(s):
    """History's own clearings (issue 11) are read from the replay: checked against the brute force
    over context_at, whose cleared tool results are placeholder messages (same id, new content)."""
    msgs = list(generate_conversation(220, seed=13).messages)
    r = replay(msgs, s, count_tokens=words)
    if s.clear_trigger is not None:
        assert r.stats.clearings > 0
    assert unchanged_prefix_tokens(r) == brute_force(msgs, s, count_tokens=words)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.data())
def test_clearing_policies_match_brute_force(scenario, data):
    msgs, s = scenario
    s = replace(
        s,
        clear_trigger=data.draw(st.integers(0, s.limit), label="trigger"),
        clear_keep=data.draw(st.integers(0, 3), label="keep"),
        clear_at_least=data.draw(st.integers(0, 10), label="at least"),
    )
    try:
        s.build()
    except (ValueError, TypeError):
        return
    r = replay(msgs, s, count_tokens=words)
    assert unchanged_prefix_tokens(r) == brute_force(msgs, s, count_tokens=words)


# ------------------------------------------------------- the replay walks' logs (default counter)


def _drops_of_records(log):
    """(steps, events, [(seqs, reasons) per record]) read from the log's full records."""
    raw = log._raw
    return (
        tuple(r[0] for r in raw),
        tuple(r[6] for r in raw),
        [([seq for (seq, _m), _why in r[5]], [why for _pair, why in r[5]]) for r in raw],
    )


@pytest.mark.parametrize("combo", list(itertools.product([False, True], repeat=4)))
@pytest.mark.parametrize("summaries", [False, True])
def test_the_walks_logs_give_the_prefix_their_records_give(combo, summaries):
    """With convmem's own counter the replay takes its fast walks (the summary walk's range
    records, the base rule's flat records, the policy walk's per-step columns), whose logs
    unchanged_prefix_tokens reads as columns (_drop_columns), not as records: each record's drops
    and reasons must be the ones its full record holds, and the prefix the brute force's."""
    from convmem.prompt_cache import _drop_columns

    msgs = list(generate_conversation(160, seed=12).messages)
    s = HistorySettings(1_500, None, *combo, summary_budget=200 if summaries else None)
    r = replay(msgs, s)
    steps, events, starts, seqs, reasons = _drop_columns(r.compactions)
    want_steps, want_events, want_drops = _drops_of_records(r.compactions)
    assert (tuple(steps), tuple(events)) == (want_steps, want_events)
    got = [(list(seqs[a:b]), list(reasons[a:b])) for a, b in zip(starts, starts[1:])]
    assert got == want_drops
    assert any(why is not None for _seqs, whys in got for why in whys)
    assert unchanged_prefix_tokens(r) == brute_force(msgs, s)
