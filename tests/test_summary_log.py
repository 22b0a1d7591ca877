"""Deferred summaries in replay (issue 10 item 3): Replay.summaries as a lazy SummaryLog.

replay() runs its ExtractiveSummarizer deferred: every line is logged once and each summary is a
span of that log, built into a Message only when read. These tests hold it to the eager
summarizer (what live History use and tests/reference_replay.py run): same Replay columns, same
summary ids, tokens and contents, same compaction records, over random conversations and settings
(pins, tool groups, targets, small budgets, clearing) under convmem's own counters (the
prefix-sum path) and custom ones (additive or not: the generic path), and check the process-wide
line cache across freed and new messages.
"""

from __future__ import annotations

import gc
import pickle
from contextlib import contextmanager
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convmem.summarizers as summarizers
from convmem import ExtractiveSummarizer, History, HistorySettings, Message, SummaryLog, replay, sweep_limits
from convmem.message import ROLES
from convmem.summarizers import _clip, _line, _span_text
from convmem.tokens import make_counter
from reference_replay import reference_replay
from test_history_properties import KINDS, TOOL_KINDS, conversations, thinking_of, tool_names_of
from test_replay_reference import assert_same

TIKTOKEN = make_counter(per_message_overhead=0).count_text
APPROX = make_counter(approximate=True, per_message_overhead=0).count_text


def punctuated(text: str) -> int:
    """A custom counter that is not additive: words, plus one per "?" and per line break."""
    return len(text.split()) + text.count("?") + text.count("\n")


#: Message texts that reach every branch: punctuation and digits at the line ends (the "\n"
#: joins the last piece), non-ASCII, long lines (clipped), blank (a "no text" line).
TEXTS = st.one_of(
    st.text(alphabet="ab c.?!:1\n…é", max_size=60),
    st.sampled_from(["", "Order W123.", "refund?", "x" * 300, "word " * 80, "assistant: hi", "12:30"]),
)


@st.composite
def cases(draw):
    clearing = draw(st.booleans())
    limit = draw(st.one_of(st.integers(0, 40), st.integers(40, 400)))
    target = draw(st.one_of(st.none(), st.integers(0, limit)))
    cap = limit if target is None else target
    budget = draw(st.integers(0, max(cap, 0)))  # summaries always on here, small budgets included
    flags = draw(st.lists(st.booleans(), min_size=4, max_size=4))
    s = HistorySettings(limit, target, *flags, summary_budget=budget)
    msgs = draw(conversations(limit, 40, TOOL_KINDS if clearing else KINDS))
    texts = draw(st.lists(TEXTS, min_size=len(msgs), max_size=len(msgs)))
    msgs = [replace(m, id=f"m{i}", content=t or None) for i, (m, t) in enumerate(zip(msgs, texts))]
    if clearing and draw(st.booleans()):
        s = replace(s, clear_trigger=draw(st.integers(0, limit)), clear_keep=draw(st.integers(0, 3)))
    count = draw(st.sampled_from([TIKTOKEN, APPROX, punctuated, None]))
    return s, msgs, count


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_deferred_replay_equals_the_eager_one(case):
    s, msgs, count = case
    names, thinking = tool_names_of(msgs), thinking_of(msgs)
    got = replay(msgs, s, count_tokens=count, tool_names=names, thinking=thinking)
    want = reference_replay(msgs, s, count, names, thinking)  # History with the eager summarizer
    assert_same(got, want)
    assert isinstance(got.summaries, SummaryLog)
    eager = list(want.summaries)
    built = list(got.summaries)
    assert built == eager  # ids, roles, tokens and contents
    assert [None if m is None else m.id for m in eager] == list(got.summaries.ids)
    assert [0 if m is None else m.tokens for m in eager] == list(got.summaries.tokens)
    counter = count or TIKTOKEN
    for m in built:
        if m is not None:
            assert m.content is not None and m.tokens == counter(m.content) <= s.summary_budget
            assert got.summaries.get(m.id) == m
    assert all(m.content is not None for m in got.final_context if m.id.startswith("summary-"))


def test_pinned_messages_reject_and_remove_summaries_and_the_log_reads_them_back():
    """A pinned system prompt and latest user turn leave a small room: summaries are refused
    (the next call reads the older one back from its span) and removed; still equal to eager."""
    msgs = [Message("sys", "system", 30, content="You are a shop assistant.")]
    for i in range(1, 120):
        role = "user" if i % 3 == 1 else "assistant"
        msgs.append(Message(f"m{i}", role, 5 + (i * 7) % 23, content=f"turn {i}: " + "item W12, size M. " * (i % 5)))
    s = HistorySettings(90, 70, pin_system=True, pin_latest_user=True, summary_budget=40)
    got = replay(msgs, s)
    want = reference_replay(msgs, s, None)
    assert_same(got, want)
    events = [e for _step, e in got.compactions.summary_events]
    assert any(not e.accepted and e.removed_id is None for e in events)  # refused
    assert any(e.removed_id is not None for e in events)  # removed
    assert got.stats.summaries_accepted > 10


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.lists(TEXTS, min_size=1, max_size=5), st.booleans()), min_size=1, max_size=25),
    st.integers(0, 120),
    st.sampled_from([TIKTOKEN, APPROX, punctuated]),
)
def test_deferred_summarizer_equals_the_eager_one_through_rejections(batches, max_tokens, count):
    """Called as History calls it: ``previous`` is the last accepted summary (a rejected one is
    never passed back); ids, tokens and texts equal the eager summarizer's at every call."""
    eager = ExtractiveSummarizer(max_tokens=max_tokens, count_tokens=count)
    deferred = ExtractiveSummarizer(max_tokens=max_tokens, count_tokens=count)
    deferred._defer()
    prev_e = prev_d = None
    step = 0
    accepted = []  # (call, eager text) of each summary taken as previous
    for call, (texts, accept) in enumerate(batches):
        dropped = []
        for t in texts:
            step += 1
            dropped.append(Message(f"m{step}", "user" if step % 2 else "assistant", 1, content=t or None))
        e, d = eager(prev_e, dropped), deferred(prev_d, dropped)
        assert d.content is None
        assert (d.id, d.role, d.tokens) == (e.id, e.role, e.tokens)
        assert _span_text(deferred._spans(), call) == e.content
        assert e.tokens == count(e.content)
        if accept:
            prev_e, prev_d = e, d
            accepted.append((call, e.content))
    # A refused summary's lines may be overwritten (the copy of the one in place is reused), an
    # accepted one's never: each still reads back as the eager text.
    assert [_span_text(deferred._spans(), call) for call, _ in accepted] == [text for _, text in accepted]
    assert set(deferred._made.values()) >= {call for call, _ in accepted}


#: Texts around a line's clip (line_chars 8 or 9: exactly that long, one more), unicode
#: whitespace (collapsed by _clip, never left in a line), cleared-result placeholders.
EDGE_TEXTS = st.one_of(
    TEXTS,
    st.text(alphabet="ab .?\u00a0\u2003\u3000\u200b\u2028\x85\x1c\t\n", min_size=7, max_size=10),
    st.sampled_from(["[cleared]", "\u3000", "abcdefgh", "abcdefghi", "abcdefghij"]),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.lists(st.tuples(st.sampled_from(ROLES), EDGE_TEXTS), min_size=1, max_size=4),
                       st.sampled_from(["accept", "refuse", "remove"])), min_size=1, max_size=25),
    st.integers(0, 60),
    st.sampled_from([TIKTOKEN, APPROX]),
    st.sampled_from([(8, "summary", "system"), (9, "s", "user"), (120, "Σ", "assistant")]),
)
def test_deferred_equals_eager_with_custom_names_through_refusals_and_removals(batches, max_tokens, count, named):
    """break20: line_chars, id_prefix and role other than the defaults (the unchecked summary
    Messages), the same text under different roles (the (role, content) line table), runs of
    refusals (the copy of the summary in place reused) and removals (``previous`` None, as
    History passes when pinned messages leave no room): ids, tokens, texts equal the eager ones."""
    line_chars, id_prefix, role = named
    kw = dict(max_tokens=max_tokens, count_tokens=count, line_chars=line_chars, id_prefix=id_prefix, role=role)
    eager, deferred = ExtractiveSummarizer(**kw), ExtractiveSummarizer(**kw)
    deferred._defer()
    prev_e = prev_d = None
    step = 0
    accepted = []
    for call, (texts, outcome) in enumerate(batches):
        dropped = []
        for r, t in texts:
            step += 1
            extra = {"tool_call_id": "c1"} if r == "tool" else {}
            dropped.append(Message(f"m{step}", r, 1, content=t or None, **extra))
        e, d = eager(prev_e, dropped), deferred(prev_d, dropped)
        assert d == Message(e.id, e.role, e.tokens) and type(d) is Message
        assert _span_text(deferred._spans(), call) == e.content
        if outcome == "accept":
            prev_e, prev_d = e, d
            accepted.append((call, e.content))
        elif outcome == "remove":
            prev_e = prev_d = None
    assert [_span_text(deferred._spans(), call) for call, _ in accepted] == [text for _, text in accepted]


def test_defer_only_before_the_first_call():
    s = ExtractiveSummarizer(max_tokens=20, count_tokens=punctuated)
    s(None, [Message("u1", "user", 1, content="hi")])
    with pytest.raises(RuntimeError, match="before the first summary"):
        s._defer()


def test_line_cache_gives_each_new_message_its_own_line(monkeypatch):
    """Messages are freed and new ones made (CPython reuses freed addresses, so ``id()`` values
    repeat): the cache keys by id but keeps each cached message alive, and is emptied when full,
    so every line is still the new message's own."""
    monkeypatch.setattr(summarizers, "LINE_CACHE_SIZE", 8)
    summarizers._LINE_CACHE.clear()
    summarizers._LINE_KEPT.clear()
    for counter in (TIKTOKEN, punctuated):
        for round_ in range(30):
            msgs = [Message(f"r{round_}-{k}", "user", 1, content=f"round {round_} message {k}?") for k in range(5)]
            s = ExtractiveSummarizer(max_tokens=10_000, count_tokens=counter)
            s._defer()
            s(None, msgs)
            text = _span_text(s._spans(), 0)
            assert text == "Earlier: " + "\n".join(_line(m, 120) for m in msgs)
            assert len(summarizers._LINE_KEPT) <= 8 + len(msgs)  # the bound (plus one call's drops)
            del msgs, s
            gc.collect()
    summarizers._LINE_CACHE.clear()
    summarizers._LINE_KEPT.clear()


def test_line_cache_holds_what_it_keys():
    """Each cached entry's message is alive and its line is that message's line."""
    summarizers._LINE_CACHE.clear()
    summarizers._LINE_KEPT.clear()
    msgs = [Message(f"m{k}", "assistant", 3, content=f"answer {k}: " + "ok. " * k) for k in range(50)]
    r = replay(msgs, HistorySettings(20, summary_budget=15))
    assert r.stats.summaries_accepted > 5
    by_id = {id(m): m for m in summarizers._LINE_KEPT}
    checked = 0
    for (chars, memo_id), cache in summarizers._LINE_CACHE.items():
        for key, entry in cache.items():
            line = entry if memo_id is None else entry[0]
            assert line == _line(by_id[key], chars)
            checked += 1
    assert checked >= r.stats.messages_dropped


def test_summary_log_memory_is_one_line_per_summarized_message():
    """No pins: no summary is refused, so the log holds exactly one line per summarized message
    (O(lines), not O(summaries x budget)); each summary is a span of it."""
    from convmem.synthetic import generate_conversation

    msgs = generate_conversation(3_000, seed=11).messages
    r = replay(msgs, HistorySettings(2_000, summary_budget=300))
    log, tops, los, his = r.summaries._spans
    assert r.stats.summaries_rejected == 0 and r.stats.summaries_accepted > 100
    assert len(log) == sum(r.summarized)
    assert sum(map(len, log)) < sum(len(m.content) for m in r.summaries)  # the eager total, far larger


def test_summary_log_sequence_api():
    msgs = [Message(f"m{k}", "user", 4, content=f"question {k}?") for k in range(30)]
    r = replay(msgs, HistorySettings(12, summary_budget=6))
    log = r.summaries
    n = len(log)
    assert n == r.stats.summaries_accepted > 3
    assert log[-1] == log[n - 1] and log[1:3] == [log[1], log[2]]
    with pytest.raises(IndexError, match=f"SummaryLog index {n} out of range"):
        log[n]
    assert log.get("nope") is None
    assert log == tuple(log) and log == list(log) and log != list(log)[:-1]
    assert repr(log) == f"SummaryLog({n} summaries)"
    again = pickle.loads(pickle.dumps(log))
    assert again == log and again.get(log.ids[0]) == log[0]
    assert len(SummaryLog()) == 0 and replay(msgs, HistorySettings(12)).summaries == ()
    # the stubs convmem.prompt_cache reads: same ids and tokens, no text built
    stubs = list(log._stubs())
    assert [(m.id, m.tokens, m.content) for m in stubs] == [(m.id, m.tokens, None) for m in log]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab .,?!:;'\"()[]-–…é\u0301ü1²½一\u200b\u00a0\t#$%*+/<=>@\\^_`|~s", min_size=1, max_size=40))
def test_a_line_with_its_newline_counts_its_last_piece_again(text):
    """Under cl100k_base, count(line + "\\n") is count(line) with the last piece (a trailing run of
    punctuation) counted again with the "\\n"; the summarizer's sums rest on it."""
    from convmem.summarizers import _last_piece

    s = ExtractiveSummarizer(max_tokens=100, count_tokens=TIKTOKEN)
    s(None, [Message("x", "user", 1, content="warm")])  # resolves the counter (memo, cl100k rule)
    assert s._tails == (TIKTOKEN.__self__.name == "cl100k_base")
    line = _line(Message("m", "user", 1, content=text), 120)
    tokens = TIKTOKEN(line)
    assert s._with_newline(line, tokens, TIKTOKEN) == TIKTOKEN(line + "\n")
    if not line[-1].isalnum():
        piece = _last_piece(line)
        assert piece and line.endswith(piece) and TIKTOKEN(line) - TIKTOKEN(piece) + TIKTOKEN(piece + "\n") == TIKTOKEN(line + "\n")


O200K = make_counter(encoding="o200k_base", per_message_overhead=0).count_text
LINE_TEXTS = st.text(alphabet="ab .,?!:;'\"()[]-–…é\u0301ü1²½一\u200b\u00a0\t#$%*+/<=>@\\^_`|~s", max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE_TEXTS, min_size=1, max_size=12), st.sampled_from([TIKTOKEN, O200K, APPROX, punctuated]))
def test_newlines_by_the_last_two_characters_are_each_lines_own(texts, count):
    """_with_newlines (a table by each line's last two characters) gives count(line + "\n") for
    every line, under cl100k_base, o200k_base, the approximation and a custom counter; the table
    is reused across lines that share their ending."""
    s = ExtractiveSummarizer(max_tokens=100, count_tokens=count)
    s(None, [Message("x", "user", 1, content="warm")])  # resolves the counter
    lines = [_line(Message(f"m{i}", "user", 1, content=t or None), 120) for i, t in enumerate(texts)]
    lines += [ln[-2:] for ln in lines] + [ln[-1:] for ln in lines]  # bare endings too
    tokens = [count(ln) for ln in lines]
    assert s._with_newlines(lines, tokens, count) == [count(ln + "\n") for ln in lines]
    assert s._with_newlines(lines, tokens, count) == [count(ln + "\n") for ln in lines]  # table filled


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=20), st.data())
def test_line_entries_of_a_batch_are_each_messages_own(texts, data):
    """_entries: (line, tokens, tokens with "\n", tokens + 1) per dropped message, in order, the
    same whether the message's line was cached by an earlier batch or made in this one (the batch
    of new lines is counted and stored at once)."""
    summarizers._LINE_CACHE.clear()
    summarizers._LINE_KEPT.clear()
    summarizers._TEXT_LINES.clear()
    msgs = [Message(f"m{i}", "user", 1, content=t or None) for i, t in enumerate(texts)]
    msgs.append(msgs[0])  # the same message twice in one batch
    s = ExtractiveSummarizer(max_tokens=100)
    s._defer()
    s._use_counter(TIKTOKEN)
    memo = s._memo
    earlier = data.draw(st.lists(st.sampled_from(msgs), max_size=len(msgs)))
    s._entries(earlier, TIKTOKEN, memo)
    want = [(ln, TIKTOKEN(ln), TIKTOKEN(ln + "\n"), TIKTOKEN(ln) + 1) for ln in (_line(m, 120) for m in msgs)]
    assert s._entries(msgs, TIKTOKEN, memo) == want
    assert s._entries(msgs, TIKTOKEN, memo) == want  # every line cached now
    # A message not batched before is kept, unless an earlier one's short text gave its line.
    by_text = {m.content for m in earlier if m.content and len(m.content) <= 120}
    assert len(summarizers._LINE_KEPT) == len(earlier) + sum(
        m not in earlier and m.content not in by_text for m in msgs
    )


def test_a_message_made_anew_with_a_known_short_text_takes_its_line_from_the_text():
    """A cleared tool result is a new placeholder Message on every replay: its line entry comes
    from the (role, content) table, equal to a freshly made one, and it is not kept; a content
    longer than line_chars is never entered there (its line is made from its own object)."""
    summarizers._LINE_CACHE.clear()
    summarizers._LINE_KEPT.clear()
    summarizers._TEXT_LINES.clear()
    s = ExtractiveSummarizer(max_tokens=100)
    s._defer()
    s._use_counter(TIKTOKEN)
    memo = s._memo
    long_text = "a long tool result, " * 10
    first = [Message("t1", "tool", 4, content="[cleared]"), Message("t2", "tool", 50, content=long_text)]
    made = s._entries(first, TIKTOKEN, memo)
    assert len(summarizers._LINE_KEPT) == 2
    again = [Message("t1", "tool", 4, content="[cleared]"), Message("u1", "user", 4, content="[cleared]"),
             Message("t2", "tool", 50, content=long_text)]
    want = [(ln, TIKTOKEN(ln), TIKTOKEN(ln + "\n"), TIKTOKEN(ln) + 1) for ln in (_line(m, 120) for m in again)]
    assert want[0][0] == "tool: [cleared]" and want[1][0] == "user: [cleared]"
    assert s._entries(again, TIKTOKEN, memo) == want
    assert want[0] == made[0]
    # the placeholder came from the text table; the user message and the long one were made
    assert summarizers._LINE_KEPT[2:] == [again[1], again[2]]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ROLES), st.one_of(TEXTS, st.text(st.characters(blacklist_categories=("Cs",)), max_size=400)), st.integers(8, 60))
def test_a_line_is_its_role_and_clipped_text_whitespace_collapsed(role, text, line_chars):
    """_line's shortcut for a message with text equals the whole collapse of role and clip."""
    m = Message("m", role, 1, content=text or None)
    if text:
        want = " ".join(f"{role}: {_clip(text, line_chars)}".split())
    else:
        want = f"{role}: (1 tokens, no text)"
    assert _line(m, line_chars) == want


#: Separators that decide whether a short text is already one collapsed line: the ASCII space
#: (single, doubled), the other whitespace str.split collapses (tab, line breaks, a control
#: separator, no-break and ideographic spaces), and non-whitespace.
SEPARATORS = st.sampled_from([" ", "  ", "\t", "\n", "\x1c", "\x85", "\u00a0", "\u2028", "\u3000", "-", ""])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text("ab1.é…", min_size=1, max_size=6), min_size=1, max_size=5), SEPARATORS,
       st.sampled_from(["first", "inner", "last"]), st.integers(8, 40))
def test_a_short_collapsed_text_is_its_line_as_it_is(words, sep, where, line_chars):
    """_line's fast path (a text of at most line_chars characters with no whitespace but single
    inner spaces is taken as it is) equals the clip of the text, around the length limit, with
    each kind of whitespace first, inside or last."""
    text = " ".join(words)
    text = sep + text if where == "first" else text + sep if where == "last" else text + sep + words[0]
    m = Message("m", "user", 1, content=text)
    assert _line(m, line_chars) == " ".join(f"user: {_clip(text, line_chars)}".split())


@st.composite
def summary_only_cases(draw):
    """Summaries with no other policy: the case replay walks without History.add."""
    limit = draw(st.one_of(st.integers(0, 40), st.integers(40, 400)))
    target = draw(st.one_of(st.none(), st.integers(0, limit)))
    cap = limit if target is None else target
    s = HistorySettings(limit, target, summary_budget=draw(st.integers(0, cap)))
    msgs = draw(conversations(limit, 40, KINDS))
    texts = draw(st.lists(TEXTS, min_size=len(msgs), max_size=len(msgs)))
    msgs = [replace(m, id=f"m{i}", content=t or None) for i, (m, t) in enumerate(zip(msgs, texts))]
    return s, msgs, draw(st.sampled_from([TIKTOKEN, APPROX, None]))


@contextmanager
def history_add_forbidden():
    """History.add raises inside: the walk must not call it."""
    saved = History.add

    def add(self, message):
        raise AssertionError("History.add called")

    History.add = add
    try:
        yield
    finally:
        History.add = saved


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(summary_only_cases())
def test_summary_walk_equals_history(case):
    s, msgs, count = case
    want = reference_replay(msgs, s, count)
    with history_add_forbidden():
        got = replay(msgs, s, count_tokens=count)
    assert_same(got, want)
    assert list(got.summaries) == list(want.summaries)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(summary_only_cases())
def test_summary_walk_builds_no_compaction_until_one_is_read(case):
    """The walk's range records: nothing expanded by replay; each Compaction read (from the end,
    then all) equals History's, and is built once."""
    s, msgs, count = case
    with history_add_forbidden():
        got = replay(msgs, s, count_tokens=count)
    want = reference_replay(msgs, s, count)
    assert got.compactions._built == {}
    if len(want.compactions):
        assert got.compactions[-1] == want.compactions[-1]
        assert got.compactions[-1] is got.compactions[-1]
        assert list(got.compactions._built) == [len(want.compactions) - 1]
    assert list(got.compactions) == list(want.compactions)
    assert got.compactions.dropped_counts == tuple(len(c.dropped) for c in want.compactions)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(summary_only_cases(), st.lists(st.integers(0, 400), min_size=1, max_size=3))
def test_summary_walk_sweep_stats_equal_history(case, limits):
    """sweep_limits folds the walk's range records into the stats History gives per add."""
    s, msgs, count = case
    with history_add_forbidden():
        rows = sweep_limits(msgs, s, limits, count_tokens=count)
    for row in rows:
        assert row.stats == reference_replay(msgs, s.at_limit(row.limit), count).stats, row.limit


def test_summary_walk_leaves_ids_a_summary_could_repeat_to_history():
    """Message ids shaped like summary ids: History refuses an add whose id is the summary in
    place, and a summary whose id a kept message has; the walk leaves such conversations to
    History, so replay raises and records exactly as History does."""
    msgs = [Message(f"m{k}", "user", 5, content=f"text {k}") for k in range(6)]
    in_place = replay(msgs, HistorySettings(12, summary_budget=6)).final_context[0].id
    assert in_place.startswith("summary-")
    with pytest.raises(ValueError, match=f"'{in_place}' is already the id of the summary in place"):
        replay([*msgs, Message(in_place, "user", 5)], HistorySettings(12, summary_budget=6))
    clash = [Message(f"summary-{k // 2}" if k % 2 == 0 else f"m{k}", "user", 5, content=f"text {k}") for k in range(12)]
    s = HistorySettings(12, summary_budget=6)
    got, want = replay(clash, s), reference_replay(clash, s, None)
    assert_same(got, want)
    assert any("is the id of a kept message" in (e.reason or "") for _step, e in got.compactions.summary_events)


def test_deferred_summaries_are_checked_messages_equal_to_eager_ones():
    """Deferred summaries after the first are built without Message's checks: each equals the
    checked Message, and a new id prefix is checked again (a lone surrogate still raises)."""
    s = ExtractiveSummarizer(max_tokens=30)
    s._defer()
    outs = [s(None, [Message(f"m{i}", "user", 1, content=f"turn {i}")]) for i in range(3)]
    assert outs == [Message(f"summary-{i}", "system", o.tokens) for i, o in enumerate(outs, 1)]
    assert all(type(o) is Message and o.content is None and o.tool_call_ids == () for o in outs)
    s.id_prefix = "bad\ud800"
    with pytest.raises(ValueError, match="surrogate"):
        s(None, [Message("m9", "user", 1, content="turn 9")])
