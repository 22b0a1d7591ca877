"""replay's summaries walk (ExtractiveSummarizer._preload / _call_range: lines appended ahead of
their calls, each call a bisect over prefix sums) against History driven per add with a fresh,
eager ExtractiveSummarizer (tests/reference_replay.py): the same summary ids, texts and tokens,
the same records and events, the same totals, under convmem's own counters (the only ones the walk
takes), on random conversations with unicode, empty content, tool calls and messages over the
budget or the limit. A small PRELOAD_BLOCK makes the calls cross many blocks."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import HistorySettings, Message, replay, summarizers
from convmem.summarizers import ExtractiveSummarizer
from convmem.tokens import ApproxCounter, default_counter
from reference_replay import reference_replay
from test_replay_reference import assert_same

TEXT = st.text(alphabet="ab xyz .,?!:;'\"()-–…é\u0301ü1²½一🙂\u00a0\t\n#$%*/_", max_size=60)
COUNTERS = {"cl100k_base": default_counter().count_text, "approx": ApproxCounter().count_text}


@st.composite
def messages(draw) -> list[Message]:
    out = []
    for i in range(draw(st.integers(1, 60))):
        role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
        content = draw(st.one_of(st.none(), st.just(""), TEXT))
        calls = tuple(f"call{i}-{k}" for k in range(draw(st.integers(0, 2)))) if role == "assistant" else ()
        tokens = draw(st.one_of(st.integers(0, 30), st.integers(30, 400)))  # some over the budget or limit
        out.append(Message(f"m{i}", role, tokens, content=content, tool_call_ids=calls))
    return out


@st.composite
def cases(draw):
    limit = draw(st.integers(1, 300))
    target = draw(st.one_of(st.none(), st.integers(0, limit)))
    budget = draw(st.integers(0, limit if target is None else target))
    return HistorySettings(limit, target, summary_budget=budget), draw(messages()), draw(st.sampled_from(sorted(COUNTERS)))


def walked(monkeypatch) -> list[int]:
    """Count the walk's calls (so a case is known to take the fast path)."""
    calls = [0]
    real = ExtractiveSummarizer._call_range

    def spy(self, *args):
        calls[0] += 1
        return real(self, *args)

    monkeypatch.setattr(ExtractiveSummarizer, "_call_range", spy)
    return calls


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cases(), st.sampled_from([1, 3, summarizers.PRELOAD_BLOCK]))
def test_walk_equals_history_per_add(monkeypatch, case, block):
    s, msgs, counter = case
    monkeypatch.setattr(summarizers, "PRELOAD_BLOCK", block)
    calls = walked(monkeypatch)
    count = COUNTERS[counter]
    got = replay(msgs, s, count_tokens=count)
    want = reference_replay(msgs, s, count)
    assert_same(got, want)
    assert [m.content for m in got.summaries] == [m.content for m in want.summaries]
    assert calls[0] == sum(e.summary is not None for e in want.compactions if e.dropped)


def test_walk_covers_refused_summaries_and_the_line_cache(monkeypatch):
    """A summary refused (budget 0: even the header is over it) sends the next call through the
    plain path (the lines appended ahead dropped, the previous summary read back); a second replay
    reads every line from the process-wide cache. Both equal History per add."""
    from convmem.synthetic import generate_conversation

    monkeypatch.setattr(summarizers, "PRELOAD_BLOCK", 16)
    msgs = list(generate_conversation(600, seed=3).messages)
    count = COUNTERS["cl100k_base"]
    for s in (HistorySettings(900, summary_budget=0), HistorySettings(900, 700, summary_budget=150),
              HistorySettings(400, summary_budget=400)):
        for _ in range(2):  # cold, then the line cache warm
            got = replay(msgs, s, count_tokens=count)
            want = reference_replay(msgs, s, count)
            assert_same(got, want)
            assert got.stats.summaries_accepted + got.stats.summaries_rejected > 20
    assert replay(msgs, HistorySettings(900, summary_budget=0)).stats.summaries_rejected > 20


def test_walk_log_holds_only_summarized_lines():
    """The lines appended ahead of their calls are dropped when the log is read: one line per
    summarized message, as before the preload."""
    from convmem.synthetic import generate_conversation

    msgs = generate_conversation(5_000, seed=11).messages
    r = replay(msgs, HistorySettings(2_000, summary_budget=300))
    log = r.summaries._spans[0]
    assert r.stats.summaries_rejected == 0 and len(log) == sum(r.summarized) < len(msgs)
