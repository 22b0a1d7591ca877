"""replay / context_at / sweep_limits (what the dashboard draws) and the shipped summarizers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convmem import (
    ExtractiveSummarizer,
    History,
    HistorySettings,
    LLMSummarizer,
    Message,
    context_at,
    replay,
    sweep_limits,
)
from convmem.synthetic import generate_conversation


def words(text: str) -> int:
    return len(text.split())


def conversation(n: int = 400, seed: int = 3) -> list[Message]:
    return list(generate_conversation(n, seed=seed).messages)


SETTINGS = [
    HistorySettings(limit=3_000),
    HistorySettings(limit=3_000, target=1_500),
    HistorySettings.all_policies(3_000, target=2_000),
    HistorySettings.all_policies(3_000, target=2_000, summary_budget=300),
    HistorySettings(limit=50),
]


@pytest.mark.parametrize("s", SETTINGS, ids=repr)
def test_replay_matches_a_history_driven_by_hand(s):
    msgs = conversation()
    r = replay(msgs, s, count_tokens=words)
    h = s.build(count_tokens=words)
    dropped_at: dict[str, int] = {}
    totals = []
    prefix_changes = 0
    previous: list[str] = []
    for step, m in enumerate(msgs):
        for mid in h.add(m):
            dropped_at[mid] = step
        totals.append(h.total())
        now = h.messages()
        # The context "starts with what it started with before" unless something old went or a
        # new summary came in.
        kept_prefix = [x for x in previous if x in now]
        if kept_prefix != previous:
            prefix_changes += 1
        previous = now
    assert list(r.totals) == totals
    assert r.dropped_at == tuple(dropped_at.get(m.id) for m in msgs)
    assert [m.id for m in r.final_context] == h.messages()
    assert r.stats.max_context == max(totals)
    assert r.stats.mean_context == pytest.approx(sum(totals) / len(totals))
    assert r.stats.messages_dropped == len(dropped_at)
    assert r.stats.tokens_dropped == sum(m.tokens for m in msgs if m.id in dropped_at)
    assert r.stats.prefix_changes == prefix_changes
    assert all(reason is not None for reason, d in zip(r.drop_reason, r.dropped_at) if d is not None)


def test_replay_hand_values():
    msgs = [Message(f"m{i}", "user", 4) for i in range(5)]
    r = replay(msgs, HistorySettings(limit=10))
    assert r.totals == (4, 8, 8, 8, 8)
    assert r.dropped_at == (2, 3, 4, None, None)
    assert r.drop_reason == ("over_limit", "over_limit", "over_limit", None, None)
    assert r.prefix_changed == (False, False, True, True, True)
    assert (r.stats.compactions, r.stats.prefix_changes, r.stats.messages_dropped) == (3, 3, 3)


def test_a_too_big_new_message_alone_does_not_change_the_prefix():
    msgs = [Message("s", "system", 5), Message("big", "tool", 50), Message("u", "user", 1)]
    r = replay(msgs, HistorySettings(limit=10, pin_system=True))
    assert r.dropped_at == (None, 1, None) and r.drop_reason[1] == "too_big"
    assert r.prefix_changed == (False, False, False)


@pytest.mark.parametrize("s", SETTINGS[1:4], ids=repr)
def test_context_at_equals_history_after_that_many_adds(s):
    msgs = conversation(200)
    for step in (0, 57, 199):
        h = s.build(count_tokens=words)
        for m in msgs[: step + 1]:
            h.add(m)
        assert context_at(msgs, s, step, count_tokens=words) == h.context()


def test_context_at_rejects_steps_out_of_range():
    msgs = conversation(10)
    with pytest.raises(ValueError, match="step must be in \\[0, 9\\], got 10"):
        context_at(msgs, HistorySettings(limit=100), 10)
    with pytest.raises(TypeError, match="step must be an int"):
        context_at(msgs, HistorySettings(limit=100), "3")


def test_replay_rejects_duplicate_ids_and_non_messages():
    with pytest.raises(ValueError, match="messages\\[1\\].id 'a' repeats messages\\[0\\]"):
        replay([Message("a", "user", 1), Message("a", "user", 1)], HistorySettings(limit=5))
    with pytest.raises(TypeError, match="messages\\[0\\] must be a Message"):
        replay(["a"], HistorySettings(limit=5))
    with pytest.raises(TypeError, match="HistorySettings"):
        replay([], {"limit": 5})


def test_sweep_rows_equal_single_replays():
    msgs = conversation(300)
    base = HistorySettings.all_policies(4_000, target=2_000)
    rows = sweep_limits(msgs, base, [1_000, 2_000, 4_000], count_tokens=words)
    assert [row.limit for row in rows] == [1_000, 2_000, 4_000]
    for row in rows:
        s = HistorySettings.all_policies(row.limit, target=row.limit // 2)
        assert row.stats == replay(msgs, s, count_tokens=words).stats
    # base rules keep the longest suffix that fits, so a bigger limit never drops more messages
    # (compaction counts need not be monotonic: each add past the limit is one compaction)
    plain = sweep_limits(msgs, HistorySettings(limit=1_000), [500, 1_000, 2_000, 4_000])
    dropped = [row.stats.messages_dropped for row in plain]
    assert dropped == sorted(dropped, reverse=True) and dropped[0] > dropped[-1]


# ----------------------------------------------------------------------------- summarizers


def test_extractive_summary_keeps_newest_lines_and_fits():
    s = ExtractiveSummarizer(max_tokens=12, count_tokens=words)
    dropped = [
        Message("u1", "user", 5, content="first question about kettles"),
        Message("a1", "assistant", 5, content="an answer"),
        Message("u2", "user", 5, content="second question"),
    ]
    out = s(None, dropped)
    # the oldest line does not fit whole: it is clipped to the room left, on a word boundary
    assert out.content == "Earlier: user: first…\nassistant: an answer\nuser: second question"
    assert out.tokens == words(out.content) <= 12
    assert (out.id, out.role) == ("summary-1", "system")
    # the previous summary's lines come after the new ones in priority, and are kept if room
    again = ExtractiveSummarizer(max_tokens=40, count_tokens=words)
    first = again(None, dropped[:1])
    second = again(first, dropped[1:])
    assert second.content.splitlines() == [
        "Earlier: user: first question about kettles",
        "assistant: an answer",
        "user: second question",
    ]
    assert second.id == "summary-2"


def test_a_long_newest_line_is_clipped_not_lost():
    s = ExtractiveSummarizer(max_tokens=6, count_tokens=words)
    out = s(None, [Message("u1", "user", 9, content="a very long message with many words in it")])
    assert out.content == "Earlier: user: a very long…" and out.tokens == 5


def test_extractive_summary_never_called_with_nothing_and_validates():
    with pytest.raises(ValueError, match="no dropped messages"):
        ExtractiveSummarizer(max_tokens=5, count_tokens=words)(None, [])
    with pytest.raises(ValueError, match="max_tokens .*-1"):
        ExtractiveSummarizer(max_tokens=-1)
    with pytest.raises(ValueError, match="role .*'boss'"):
        ExtractiveSummarizer(max_tokens=5, role="boss")


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.text(alphabet="ab c\n", max_size=60), min_size=1, max_size=12),
    budget=st.integers(min_value=1, max_value=40),
)
def test_extractive_summary_never_exceeds_its_budget(texts, budget):
    s = ExtractiveSummarizer(max_tokens=budget, count_tokens=words)
    previous = None
    for i in range(0, len(texts), 3):
        dropped = [Message(f"m{i}_{j}", "user", 1, content=t) for j, t in enumerate(texts[i : i + 3])]
        previous = s(previous, dropped)
        assert previous.tokens == words(previous.content) <= budget


def test_history_never_stores_a_summary_over_budget():
    calls = []

    def greedy(previous, dropped):
        calls.append([m.id for m in dropped])
        return Message(f"s{len(calls)}", "system", 3 if len(calls) == 1 else 50)

    h = History(10, summarizer=greedy, summary_budget=4)
    for i in range(8):
        h.add(Message(f"u{i}", "user", 3))
    assert h.summary.id == "s1"  # the second (50 tokens) was rejected, the first stays
    rejected = [c.summary for c in h.compactions if c.summary and not c.summary.accepted]
    assert rejected and "over the summary_budget of 4" in rejected[0].reason
    assert h.total() <= 10
    assert all(calls)  # never called with nothing


def test_llm_summarizer_prompt_and_result():
    prompts = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return "The user wants a refund for order W1."

    s = LLMSummarizer(complete, max_tokens=30, count_tokens=words)
    prev = Message("summary-0", "system", 3, content="User is Ann.")
    out = s(prev, [Message("u1", "user", 4, content="refund order W1 please")])
    assert "at most 30 tokens" in prompts[0]
    assert "User is Ann." in prompts[0] and "user: refund order W1 please" in prompts[0]
    assert (out.content, out.tokens, out.id) == ("The user wants a refund for order W1.", 8, "summary-1")
    with pytest.raises(TypeError, match="must return a str"):
        LLMSummarizer(lambda p: None, max_tokens=5, count_tokens=words)(None, [prev])


@settings(max_examples=60, deadline=None)
@given(
    st.integers(5, 60),
    st.lists(
        st.lists(st.text(alphabet="ab c.\n?", min_size=0, max_size=40), min_size=1, max_size=4),
        min_size=1,
        max_size=12,
    ),
)
def test_extractive_line_count_cache_changes_nothing(max_tokens, batches):
    """The cached summarizer gives exactly what one re-counting every line gives, with fewer counts."""
    calls = {"cached": 0, "fresh": 0}

    def counter(key):
        def count(text):
            calls[key] += 1
            return len(text.split()) + text.count("?")

        return count

    cached = ExtractiveSummarizer(max_tokens=max_tokens, count_tokens=counter("cached"))
    fresh = ExtractiveSummarizer(max_tokens=max_tokens, count_tokens=counter("fresh"))
    prev_c = prev_f = None
    step = 0
    for batch in batches:
        dropped = []
        for text in batch:
            step += 1
            dropped.append(Message(f"m{step}", "user", 1, content=text or None))
        fresh._valid = False  # forget: every line of the previous summary is counted again
        prev_c, prev_f = cached(prev_c, dropped), fresh(prev_f, dropped)
        assert prev_c == prev_f
        assert prev_c.tokens == len(prev_c.content.split()) + prev_c.content.count("?") <= max_tokens
    assert calls["cached"] <= calls["fresh"]


def test_extractive_does_not_recount_the_previous_summary():
    counted = []

    def count(text):
        counted.append(text)
        return len(text.split())

    s = ExtractiveSummarizer(max_tokens=200, count_tokens=count)
    previous = None
    for k in range(30):
        counted.clear()
        previous = s(previous, [Message(f"u{k}", "user", 5, content=f"line number {k} here")])
        # one new line plus the whole text (and the header on the first call only)
        first = ["Earlier:"] if k == 0 else []
        assert counted == first + [f"user: line number {k} here", previous.content]


def _messages_for_sweep(draw_tokens, roles):
    out = []
    last_calls: list[str] = []
    for i, (t, r) in enumerate(zip(draw_tokens, roles)):
        if r == "assistant" and i % 3 == 0:
            last_calls = [f"c{i}"]
            out.append(Message(f"m{i}", "assistant", t, content=f"calling {i}", tool_call_ids=tuple(last_calls)))
        elif r == "tool" and last_calls:
            out.append(Message(f"m{i}", "tool", t, content=f"result {i}", tool_call_id=last_calls.pop()))
        else:
            out.append(Message(f"m{i}", "user" if r == "tool" else r, t, content=f"text {i} " * (t % 5)))
    return out


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(0, 60), min_size=0, max_size=80).flatmap(
        lambda toks: st.tuples(
            st.just(toks),
            st.lists(st.sampled_from(["system", "user", "assistant", "tool"]), min_size=len(toks), max_size=len(toks)),
        )
    ),
    st.integers(0, 150),
    st.one_of(st.none(), st.floats(0, 1)),
    st.lists(st.booleans(), min_size=4, max_size=4),
    st.one_of(st.none(), st.integers(0, 30)),
    st.lists(st.integers(0, 200), min_size=1, max_size=5),
)
def test_sweep_stats_equal_full_replays(msgs_spec, limit, target_ratio, flags, budget, limits):
    """The stats-only sweep (two-pointer for the base rule, a History fold otherwise) equals replay."""
    msgs = _messages_for_sweep(*msgs_spec)
    target = None if target_ratio is None else int(limit * target_ratio)
    cap = limit if target is None else target
    if budget is not None:
        budget = min(budget, cap)
    base = HistorySettings(limit, target, *flags, summary_budget=budget)
    rows = sweep_limits(msgs, base, limits, count_tokens=words)
    for row in rows:
        t = base.target
        if t is not None and base.limit:
            t = min(row.limit, round(t * row.limit / base.limit))
        b = None if budget is None else min(budget, row.limit if t is None else t)
        s = HistorySettings(row.limit, t, *flags, summary_budget=b)
        assert row.stats == replay(msgs, s, count_tokens=words).stats, s


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 60), max_size=120),
    st.integers(0, 150),
    st.one_of(st.none(), st.floats(0, 1)),
    st.lists(st.integers(0, 200), min_size=1, max_size=4),
)
def test_plain_sweep_two_pointer_equals_history(toks, limit, target_ratio, limits):
    msgs = [Message(f"m{i}", "user", t) for i, t in enumerate(toks)]
    target = None if target_ratio is None else int(limit * target_ratio)
    base = HistorySettings(limit, target)
    for row in sweep_limits(msgs, base, limits):
        t = target if target is None or not limit else min(row.limit, round(target * row.limit / limit))
        assert row.stats == replay(msgs, HistorySettings(row.limit, t)).stats


@pytest.mark.parametrize("approximate", [False, True])
def test_extractive_summed_line_counts_equal_whole_text_counts(approximate):
    """With convmem's own counters the summary's tokens are summed from its lines: every summary
    of a replay equals (content and tokens) the one counting the whole text each time."""
    from convmem.tokens import make_counter

    count = make_counter(approximate=approximate, per_message_overhead=0).count_text
    msgs = generate_conversation(1_500, seed=3).messages
    summed = ExtractiveSummarizer(max_tokens=300, count_tokens=count)
    whole = ExtractiveSummarizer(max_tokens=300, count_tokens=count, additive=False)
    assert summed.additive is None and whole.additive is False
    prev_s = prev_w = None
    made = 0
    for i in range(0, len(msgs), 7):
        batch = msgs[i : i + 7]
        prev_s, prev_w = summed(prev_s, batch), whole(prev_w, batch)
        assert prev_s == prev_w
        assert prev_s.tokens == count(prev_s.content) <= 300
        made += 1
    assert made > 200 and prev_s.content.count("\n") > 5


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(st.text(alphabet="ab c.\n?…:1", min_size=0, max_size=50), min_size=1, max_size=4),
        min_size=1,
        max_size=12,
    ),
    st.integers(4, 80),
)
def test_extractive_summed_counts_hold_for_any_text(batches, max_tokens):
    """Punctuation, digits and line breaks at the joins: summing never differs from counting."""
    from convmem.tokens import make_counter

    count = make_counter(per_message_overhead=0).count_text
    summed = ExtractiveSummarizer(max_tokens=max_tokens, count_tokens=count)
    whole = ExtractiveSummarizer(max_tokens=max_tokens, count_tokens=count, additive=False)
    prev_s = prev_w = None
    step = 0
    for batch in batches:
        dropped = []
        for text in batch:
            step += 1
            dropped.append(Message(f"m{step}", "user", 1, content=text or None))
        prev_s, prev_w = summed(prev_s, dropped), whole(prev_w, dropped)
        assert prev_s == prev_w
        assert prev_s.tokens == count(prev_s.content)


def test_extractive_reads_back_a_summary_it_did_not_make_last():
    """A previous summary other than the last one made (History rejected the newer) is read back
    from its text: the result is what a fresh summarizer makes from it."""
    s = ExtractiveSummarizer(max_tokens=30, count_tokens=words)
    first = s(None, [Message("u1", "user", 5, content="alpha beta")])
    s(first, [Message("u2", "user", 5, content="gamma delta")])  # made, then (say) rejected
    again = s(first, [Message("u3", "user", 5, content="epsilon")])
    fresh = ExtractiveSummarizer(max_tokens=30, count_tokens=words)
    fresh.calls = 2
    assert again == fresh(first, [Message("u3", "user", 5, content="epsilon")])
    assert again.content == "Earlier: user: alpha beta\nuser: epsilon"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab \n\t.", max_size=200), st.integers(8, 40))
def test_clip_reads_a_prefix_but_equals_collapsing_the_whole_text(text, max_chars):
    from convmem.summarizers import _clip

    whole = " ".join(text.split())
    expected = whole if len(whole) <= max_chars else whole[: max_chars - 1].rstrip() + "…"
    assert _clip(text, max_chars) == expected
