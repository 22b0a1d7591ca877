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


def test_walk_cold_then_warm_and_all_refused(monkeypatch):
    """A long conversation, the lines made and counted in blocks (cold), then read from the
    process-wide cache (warm); and a budget under the header's tokens (every summary refused).
    All equal History per add."""
    from convmem.synthetic import generate_conversation

    monkeypatch.setattr(summarizers, "PRELOAD_BLOCK", 16)
    msgs = list(generate_conversation(600, seed=3).messages)
    count = COUNTERS["cl100k_base"]
    for s in (HistorySettings(900, summary_budget=0), HistorySettings(900, 700, summary_budget=150),
              HistorySettings(400, summary_budget=400)):
        summarizers._LINE_CACHE.clear()
        summarizers._LINE_KEPT.clear()
        for _ in range(2):  # cold, then the line cache warm
            got = replay(msgs, s, count_tokens=count)
            want = reference_replay(msgs, s, count)
            assert_same(got, want)
            assert got.stats.summaries_accepted + got.stats.summaries_rejected > 20
    assert replay(msgs, HistorySettings(900, summary_budget=0)).stats.summaries_rejected > 20


@st.composite
def call_plans(draw):
    """Calls over one message list: each a range (contiguous with the last one or not) and the
    previous summary to pass (None, the one made last, or an earlier one: History refused the
    last)."""
    msgs = draw(messages())
    plan, at = [], 0
    for _ in range(draw(st.integers(1, 12))):
        first = draw(st.one_of(st.just(at), st.integers(0, len(msgs) - 1)))
        stop = draw(st.integers(first + 1, len(msgs)))
        plan.append((first, stop, draw(st.sampled_from(["none", "last", "earlier"]))))
        at = stop if stop < len(msgs) else 0
    return msgs, plan, draw(st.integers(0, 80)), draw(st.sampled_from(sorted(COUNTERS)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call_plans(), st.sampled_from([1, 2, 64]))
def test_call_range_equals_the_plain_call(monkeypatch, plan, block):
    """_call_range(previous, first, stop) is self(previous, messages[first:stop]): the same
    summaries (ids, tokens, texts) for any order of ranges and any previous summary, including
    the ones the walk never makes (a range not where the last ended, a refused summary's
    predecessor), which take the plain path."""
    monkeypatch.setattr(summarizers, "PRELOAD_BLOCK", block)
    msgs, calls, budget, counter = plan
    fast = ExtractiveSummarizer(max_tokens=budget, count_tokens=COUNTERS[counter])
    plain = ExtractiveSummarizer(max_tokens=budget, count_tokens=COUNTERS[counter])
    fast._defer()
    plain._defer()
    fast._preload(msgs)
    made: dict[str, list] = {"fast": [], "plain": []}
    for first, stop, which in calls:
        for name, s in (("fast", fast), ("plain", plain)):
            seen = made[name]
            previous = {"none": None, "last": seen[-1] if seen else None,
                        "earlier": seen[-2] if len(seen) > 1 else None}[which]
            seen.append(s._call_range(previous, first, stop) if name == "fast" else s(previous, msgs[first:stop]))
    assert [(m.id, m.tokens) for m in made["fast"]] == [(m.id, m.tokens) for m in made["plain"]]
    texts = {name: [summarizers._span_text(s._spans(), k) for k in range(s.calls)] for name, s in
             (("fast", fast), ("plain", plain))}
    assert texts["fast"] == texts["plain"]
    for m, text in zip(made["plain"], texts["plain"]):
        assert m.tokens == COUNTERS[counter](text)  # each summary's exact count


def test_walk_log_holds_only_summarized_lines():
    """The lines appended ahead of their calls are dropped when the log is read: one line per
    summarized message, as before the preload."""
    from convmem.synthetic import generate_conversation

    msgs = generate_conversation(5_000, seed=11).messages
    r = replay(msgs, HistorySettings(2_000, summary_budget=300))
    log = r.summaries._spans[0]
    assert r.stats.summaries_rejected == 0 and len(log) == sum(r.summarized) < len(msgs)


def test_count_lines_reads_its_own_counts_when_another_thread_clears_the_memo():
    """The line-count memo is shared by every thread and cleared at its size cap; a clear right
    after this call's update (another thread's) must not lose the counts just made (a KeyError
    out of replay() before)."""

    class ClearedAfterUpdate(dict):
        def update(self, *args, **kwargs):
            super().update(*args, **kwargs)
            self.clear()

    counter = default_counter()
    memo = ClearedAfterUpdate({"known line": 7})
    lines = ["a b", "known line", "c", "a b"]
    assert ExtractiveSummarizer._count_lines(lines, counter.count_text, memo) == [2, 7, 1, 2]


def test_a_refused_summary_does_not_read_the_one_in_place_back(monkeypatch):
    """When History keeps refusing new summaries (a budget close to the limit, pins), every call
    gets the older summary in place as ``previous``: its lines are copied from the log with their
    counts, never rebuilt from its text and recounted (that read-back made such a replay of 10^5
    messages take ~40 s). The Replay stays the per-add reference's."""
    import convmem.summarizers as summarizers_module
    from convmem import HistorySettings, replay
    from convmem.synthetic import generate_conversation
    from reference_replay import reference_replay
    from test_replay_reference import assert_same

    msgs = list(generate_conversation(1_500, seed=17).messages)
    s = HistorySettings(3_100, keep_tool_groups=True, pin_system=True, summary_budget=3_000)
    want = reference_replay(msgs, s, None)
    read_back = []
    real = summarizers_module._span_text
    monkeypatch.setattr(summarizers_module, "_span_text", lambda *a: read_back.append(a[1]) or real(*a))
    got = replay(msgs, s)
    assert got.stats.summaries_rejected > 100 and got.stats.summaries_accepted > 0
    assert len(read_back) <= 1  # at most the final context's summary text
    assert_same(got, want)
