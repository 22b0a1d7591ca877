"""History (SPEC §4): the seed example, hand cases H1-H9 of cases/CASES.md, validation, pinned
overflow, the summarizer and the compaction records.

Every case is also run against the brute-force reference (tests/reference_history.py), so a case
pins both the values CASES.md states and the whole record (reasons, triggers, totals).
"""

from __future__ import annotations

import re

import pytest

from convmem import Message
from convmem.history import (
    OVER_LIMIT,
    PIN_MOVED,
    START_ON_USER,
    TOO_BIG,
    TOOL_GROUP,
    TRIGGER_ARRIVAL,
    TRIGGER_LIMIT,
    TRIGGER_PIN_MOVED,
    Compaction,
    History,
)
from reference_history import FakeSummarizer, ReferenceHistory, record_of, run_lockstep


def M(id: str, role: str, tokens: int, **kw) -> Message:
    return Message(id, role, tokens, **kw)


def adds(h, msgs):
    return [h.add(m) for m in msgs]


def reasons(c: Compaction) -> list[tuple[str, str]]:
    return [(d.id, d.reason) for d in c.dropped]


# ---------------------------------------------------------------------------------------- H1-H9


def test_h1_seed():
    h = History(100)
    assert h.add(M("s", "system", 20)) == []
    assert h.add(M("u1", "user", 30)) == []
    assert h.add(M("a1", "assistant", 40)) == []
    assert h.total() == 90
    assert h.add(M("u2", "user", 25)) == ["s"]
    assert h.messages() == ["u1", "a1", "u2"]
    assert h.total() == 95
    assert h.add(M("t1", "tool", 120)) == ["u1", "a1", "u2", "t1"]
    assert h.messages() == []
    assert h.total() == 0
    assert not h.over_limit
    c1, c2 = h.compactions
    assert (c1.step, c1.message_id, c1.trigger, c1.total_before, c1.total_after) == (
        3, "u2", TRIGGER_LIMIT, 115, 95
    )
    assert reasons(c1) == [("s", OVER_LIMIT)]
    assert (c2.step, c2.trigger, c2.total_before, c2.total_after) == (4, TRIGGER_LIMIT, 215, 0)
    # t1 alone is over the limit: too_big; the others went because the total was over.
    assert reasons(c2) == [("u1", OVER_LIMIT), ("a1", OVER_LIMIT), ("u2", OVER_LIMIT), ("t1", TOO_BIG)]
    assert [d.tokens for d in c2.dropped] == [30, 40, 25, 120]
    assert [d.added_step for d in c2.dropped] == [1, 2, 3, 4]
    assert c2.dropped_tokens == 215
    assert c1.summary is None and c2.summary is None


def test_h2_equal_fits():
    h = History(10)
    assert h.add(M("a", "user", 4)) == []
    assert h.add(M("b", "assistant", 6)) == []
    assert h.total() == 10 and not h.over_limit
    assert h.add(M("c", "user", 4)) == ["a"]
    assert h.messages() == ["b", "c"]
    assert h.total() == 10


def test_h3_limit_zero():
    h = History(0)
    assert h.add(M("u1", "user", 5)) == ["u1"]
    assert h.messages() == [] and h.total() == 0
    assert h.add(M("z", "user", 0)) == []
    assert h.messages() == ["z"] and h.total() == 0
    assert h.add(M("a", "assistant", 1)) == ["z", "a"]
    assert h.messages() == [] and h.total() == 0
    assert reasons(h.compactions[-1]) == [("z", OVER_LIMIT), ("a", TOO_BIG)]


H4 = [
    M("u1", "user", 1),
    M("a1", "assistant", 1, tool_call_ids=("c1",)),
    M("t1", "tool", 1, tool_call_id="c1"),
    M("u2", "user", 1),
    M("a2", "assistant", 1),
    M("u3", "user", 1),
    M("a3", "assistant", 1),
]


def test_h4_tool_groups():
    h = History(5, keep_tool_groups=True)
    assert adds(h, H4) == [[], [], [], [], [], ["u1"], ["a1", "t1"]]
    assert h.messages() == ["u2", "a2", "u3", "a3"]
    assert h.total() == 4  # below the limit: the group went as one unit
    assert reasons(h.compactions[-1]) == [("a1", OVER_LIMIT), ("t1", TOOL_GROUP)]


def test_h4_without_the_policy():
    h = History(5)
    assert adds(h, H4) == [[], [], [], [], [], ["u1"], ["a1"]]
    # valid per the base rules, and exactly the shape a provider rejects
    assert h.messages() == ["t1", "u2", "a2", "u3", "a3"]
    assert h.total() == 5


H5 = [M("s", "system", 2), M("u1", "user", 2), M("a1", "assistant", 2), M("u2", "user", 2), M("a2", "assistant", 2)]


def test_h5_pin_system():
    h = History(6, pin_system=True)
    assert adds(h, H5) == [[], [], [], ["u1"], ["a1"]]
    assert h.messages() == ["s", "u2", "a2"]
    assert h.total() == 6


def test_h5_without_the_pin():
    h = History(6)
    assert adds(h, H5) == [[], [], [], ["s"], ["u1"]]
    assert h.messages() == ["a1", "u2", "a2"]
    assert h.total() == 6


def test_h6_start_on_user():
    h = History(7, start_on_user=True)
    msgs = [M("u1", "user", 2), M("a1", "assistant", 2), M("u2", "user", 2), M("a2", "assistant", 2)]
    assert adds(h, msgs) == [[], [], [], ["u1", "a1"]]
    assert h.messages() == ["u2", "a2"]
    assert h.total() == 4
    assert reasons(h.compactions[-1]) == [("u1", OVER_LIMIT), ("a1", START_ON_USER)]


def test_h6_without_the_policy():
    h = History(7)
    msgs = [M("u1", "user", 2), M("a1", "assistant", 2), M("u2", "user", 2), M("a2", "assistant", 2)]
    assert adds(h, msgs)[-1] == ["u1"]
    assert h.messages() == ["a1", "u2", "a2"]


def test_h7_long_run():
    limit, n = 100_000, 200_000
    h = History(limit)
    # An independent running window (the base rule only): the test's own arithmetic.
    tokens = [i % 7 + 1 for i in range(n)]
    lo = 0
    window = 0
    dropped_total = 0
    for i in range(n):
        got = h.add(Message(f"m{i}", "user", tokens[i]))
        window += tokens[i]
        want_lo = lo
        while window > limit:
            window -= tokens[want_lo]
            want_lo += 1
        assert len(got) == want_lo - lo
        if got:
            assert got[0] == f"m{lo}" and got[-1] == f"m{want_lo - 1}"
        lo = want_lo
        dropped_total += len(got)
        assert h.total() == window  # read after each add
        assert h.total() <= limit
    assert dropped_total == 175_000
    assert h.messages() == [f"m{i}" for i in range(175_000, 200_000)]
    assert h.total() == 99_994


H8_COUNTS = [9000, 2000, 2500, 3000, 1500, 4000, 2000, 1000]
H8 = [M(f"x{i}", "user", t) for i, t in enumerate(H8_COUNTS)]


def test_h8_target():
    h = History(20_000, target=10_000)
    out = adds(h, H8)
    assert out[:5] == [[]] * 5
    assert sum(H8_COUNTS[:5]) == 18_000
    assert out[5] == ["x0", "x1", "x2"]
    c = h.compactions[0]
    assert (c.step, c.trigger, c.total_before, c.total_after) == (5, TRIGGER_LIMIT, 22_000, 8_500)
    assert out[6:] == [[], []]
    assert h.messages() == ["x3", "x4", "x5", "x6", "x7"]
    assert h.total() == 11_500  # above the target, below the limit
    assert len(h.compactions) == 1


def test_h9_which_run_to_keep():
    # The first seven fit a 24,000 trigger; the eighth passes it, so all eight are cut at once.
    h = History(24_000, target=10_000)
    out = adds(h, H8)
    assert out[:7] == [[]] * 7
    assert out[7] == ["x0", "x1", "x2", "x3"]
    # the newest run that fits, not the older [x1, x2, x3, x4] (9,000) that also fits
    assert h.messages() == ["x4", "x5", "x6", "x7"]
    assert h.total() == 8_500


CASES = [
    (dict(limit=100), [M("s", "system", 20), M("u1", "user", 30), M("a1", "assistant", 40), M("u2", "user", 25), M("t1", "tool", 120)]),
    (dict(limit=10), [M("a", "user", 4), M("b", "assistant", 6), M("c", "user", 4)]),
    (dict(limit=0), [M("u1", "user", 5), M("z", "user", 0), M("a", "assistant", 1)]),
    (dict(limit=5, keep_tool_groups=True), H4),
    (dict(limit=5), H4),
    (dict(limit=6, pin_system=True), H5),
    (dict(limit=6), H5),
    (dict(limit=7, start_on_user=True), [M("u1", "user", 2), M("a1", "assistant", 2), M("u2", "user", 2), M("a2", "assistant", 2)]),
    (dict(limit=20_000, target=10_000), H8),
    (dict(limit=24_000, target=10_000), H8),
]


@pytest.mark.parametrize("policy,msgs", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_cases_agree_with_reference(policy, msgs):
    run_lockstep(msgs, **policy)


# ---------------------------------------------------------------------------------- validation


def _raises(exc, fn, *needles):
    with pytest.raises(exc) as ei:
        fn()
    text = str(ei.value)
    for n in needles:
        assert n in text, f"{text!r} does not name {n!r}"
    return text


def f_sum(prev, dropped):
    return Message("s", "system", 0)


@pytest.mark.parametrize(
    "kwargs,exc,needles",
    [
        (dict(limit=-1), ValueError, ["limit", "-1"]),
        (dict(limit=1.5), TypeError, ["limit", "1.5"]),
        (dict(limit="10"), TypeError, ["limit", "'10'"]),
        (dict(limit=None), TypeError, ["limit", "None"]),
        (dict(limit=True), TypeError, ["limit", "True"]),
        (dict(limit=False), TypeError, ["limit", "False"]),
        (dict(limit=10, target=11), ValueError, ["target", "11", "10"]),
        (dict(limit=10, target=-1), ValueError, ["target", "-1"]),
        (dict(limit=10, target=2.0), TypeError, ["target", "2.0"]),
        (dict(limit=10, target=True), TypeError, ["target", "True"]),
        (dict(limit=10, target=5, summarizer=f_sum, summary_budget=6), ValueError, ["summary_budget", "6", "5"]),
        (dict(limit=10, summarizer=f_sum, summary_budget=11), ValueError, ["summary_budget", "11", "10"]),
        (dict(limit=10, summarizer=f_sum, summary_budget=-1), ValueError, ["summary_budget", "-1"]),
        (dict(limit=10, summarizer=f_sum, summary_budget=1.0), TypeError, ["summary_budget", "1.0"]),
        (dict(limit=10, summary_budget=3), ValueError, ["summary_budget", "3", "summarizer"]),
        (dict(limit=10, summarizer=f_sum), ValueError, ["summarizer", "summary_budget", "None"]),
    ],
)
def test_bad_settings_name_field_and_value(kwargs, exc, needles):
    limit = kwargs.pop("limit")
    _raises(exc, lambda: History(limit, **kwargs), *needles)


def test_limits_at_the_edges_are_valid():
    History(0)
    History(10, target=10)
    History(10, target=0)
    History(10, summarizer=f_sum, summary_budget=10)
    History(10, target=4, summarizer=f_sum, summary_budget=4)
    History(10, summarizer=f_sum, summary_budget=0)


@pytest.mark.parametrize("bad", [None, "u1", ("u1", "user", 3), {"id": "u1"}, 3])
def test_add_non_message(bad):
    h = History(10)
    h.add(M("u1", "user", 3))
    _raises(TypeError, lambda: h.add(bad), "message", repr(bad))
    assert h.messages() == ["u1"] and h.total() == 3 and h.compactions == []


# ------------------------------------------------------------------------- pinned overflow


def test_pinned_system_bigger_than_limit():
    h = History(10, pin_system=True)
    assert h.add(M("s", "system", 15)) == []
    assert h.messages() == ["s"] and h.total() == 15 and h.over_limit
    assert h.add(M("u1", "user", 1)) == ["u1"]  # dropped on arrival
    assert h.add(M("a1", "assistant", 0)) == ["a1"]  # even a zero-token one: the total is over
    assert h.add(M("s2", "system", 2)) == []  # pinned: kept
    assert h.messages() == ["s", "s2"] and h.total() == 17 and h.over_limit
    assert h.add(M("u2", "user", 20)) == ["u2"]
    assert [reasons(c) for c in h.compactions] == [
        [("u1", OVER_LIMIT)],
        [("a1", OVER_LIMIT)],
        [("u2", TOO_BIG)],
    ]
    assert all(c.total_after == c.total_before - c.dropped_tokens for c in h.compactions)
    assert h.compactions[-1].total_after == 17


def test_pinned_system_overflow_without_pin_is_dropped():
    h = History(10)
    assert h.add(M("s", "system", 15)) == ["s"]
    assert not h.over_limit and h.total() == 0


def test_pinned_latest_user_bigger_than_limit_then_pin_moves():
    h = History(5, pin_latest_user=True)
    assert h.add(M("u1", "user", 8)) == []
    assert h.over_limit and h.messages() == ["u1"]
    assert h.add(M("a1", "assistant", 1)) == ["a1"]  # dropped on arrival, passing over u1
    # u1 was kept only by its pin and a1 after it went: the pin moves, u1 goes (pin_moved)
    assert h.add(M("u2", "user", 1)) == ["u1"]
    assert h.messages() == ["u2"] and h.total() == 1 and not h.over_limit
    c = h.compactions[-1]
    assert c.trigger == TRIGGER_PIN_MOVED and reasons(c) == [("u1", PIN_MOVED)]
    assert (c.step, c.total_before, c.total_after) == (2, 9, 1)


def test_pin_moves_onto_run_user_becomes_ordinary():
    h = History(5, pin_latest_user=True)
    assert h.add(M("u1", "user", 8)) == []
    # nothing after u1 went: u1 rejoins the run as an ordinary message and is cut (too big)
    assert h.add(M("u2", "user", 1)) == ["u1"]
    c = h.compactions[-1]
    assert c.trigger == TRIGGER_LIMIT and reasons(c) == [("u1", TOO_BIG)]
    assert h.messages() == ["u2"]


def test_pinned_overflow_agrees_with_reference():
    msgs = [M("s", "system", 15), M("u1", "user", 1), M("a1", "assistant", 0), M("s2", "system", 2), M("u2", "user", 20)]
    run_lockstep(msgs, limit=10, pin_system=True)
    run_lockstep(msgs, limit=10, pin_system=True, pin_latest_user=True, start_on_user=True)
    msgs = [M("u1", "user", 8), M("a1", "assistant", 1), M("u2", "user", 1), M("a2", "assistant", 9)]
    run_lockstep(msgs, limit=5, pin_latest_user=True)


# --------------------------------------------------------------------------------- tool groups


def test_tool_result_whose_call_is_gone_is_refused_on_arrival():
    calls = []

    def summ(prev, dropped):
        calls.append([m.id for m in dropped])
        return M(f"S{len(calls)}", "system", 0)

    h = History(3, keep_tool_groups=True, summarizer=summ, summary_budget=0)
    assert h.add(M("a1", "assistant", 2, tool_call_ids=("c1",))) == []
    assert h.add(M("u1", "user", 2)) == ["a1"]
    assert calls == [["a1"]]
    assert h.add(M("t1", "tool", 1, tool_call_id="c1")) == ["t1"]
    assert calls == [["a1"]]  # never in the context: not summarized
    c = h.compactions[-1]
    assert c.trigger == TRIGGER_ARRIVAL and reasons(c) == [("t1", TOOL_GROUP)] and c.summary is None
    assert c.step == 2 and not c.dropped[0].summarized
    assert h.messages() == ["S1", "u1"] and h.total() == 2


def test_orphan_tool_result_is_refused_and_positional_grouping():
    h = History(100, keep_tool_groups=True)
    assert h.add(M("t0", "tool", 1)) == ["t0"]  # no assistant at all
    assert h.add(M("u1", "user", 1)) == []
    assert h.add(M("a1", "assistant", 1, tool_call_ids=("c1", "c2"))) == []
    assert h.add(M("t1", "tool", 1, tool_call_id="c2")) == []
    assert h.add(M("t2", "tool", 1)) == []  # no id: joins the most recent assistant (a1)
    # An id no kept message declared answers no call in the context: refused, never positional.
    assert h.add(M("t3", "tool", 1, tool_call_id="zz")) == ["t3"]
    assert h.compactions[-1].trigger == TRIGGER_ARRIVAL
    assert h.messages() == ["u1", "a1", "t1", "t2"]
    assert h.add(M("u2", "user", 98)) == ["u1", "a1", "t1", "t2"]
    assert reasons(h.compactions[-1]) == [
        ("u1", OVER_LIMIT), ("a1", OVER_LIMIT), ("t1", TOOL_GROUP), ("t2", TOOL_GROUP)
    ]


def test_late_tool_result_goes_with_its_call_wherever_it_sits():
    msgs = [
        M("u1", "user", 1),
        M("a1", "assistant", 1, tool_call_ids=("c1", "c2")),
        M("t1", "tool", 1, tool_call_id="c1"),
        M("u2", "user", 1),
        M("a2", "assistant", 1),
        M("t2", "tool", 1, tool_call_id="c2"),  # late: answers a1, after a2
        M("u3", "user", 5),
    ]
    h = History(9, keep_tool_groups=True)
    out = adds(h, msgs)
    assert out[-1] == ["u1", "a1", "t1", "t2"]
    assert h.messages() == ["u2", "a2", "u3"] and h.total() == 7
    run_lockstep(msgs, limit=9, keep_tool_groups=True)


# ------------------------------------------------------------------------------- summarizer


def test_summarizer_never_called_with_nothing():
    s = FakeSummarizer([1])
    h = History(100, summarizer=s, summary_budget=5)
    for i in range(20):
        h.add(M(f"u{i}", "user", 1))
    assert s.calls == [] and h.summary is None and h.compactions == []


def _summary_history(sizes, **kw):
    s = FakeSummarizer(sizes)
    seen = []
    h = History(10, pin_system=True, summarizer=s, summary_budget=3, on_compaction=seen.append, **kw)
    return h, s, seen


def test_summarizer_arguments_placement_and_replacement():
    h, s, seen = _summary_history([3, 1])
    assert adds(h, [M("s", "system", 2), M("u1", "user", 2), M("a1", "assistant", 2), M("u2", "user", 2), M("a2", "assistant", 2)]) == [[]] * 5
    # 12 > 10: live cut to target - budget = 7 (drops u1, a1, u2 -> 6), summary of 3 -> 9
    assert h.add(M("u3", "user", 2)) == ["u1", "a1", "u2"]
    assert s.calls == [(None, ["u1", "a1", "u2"])]
    assert h.messages() == ["s", "sum0", "a2", "u3"]  # right after the pinned system prompt
    assert h.total() == 9 and h.summary.id == "sum0"
    c = h.compactions[-1]
    assert (c.total_before, c.total_after) == (12, 9)
    assert c.summary.accepted and c.summary.id == "sum0" and c.summary.tokens == 3
    assert c.summary.budget == 3 and c.summary.replaced_id is None and c.summary.reason is None
    assert all(d.summarized for d in c.dropped)
    # 9 + 2 = 11 > 10: live 8 > 7, a2 goes; the summarizer gets the summary in place
    assert h.add(M("a3", "assistant", 2)) == ["a2"]
    assert s.calls[-1] == ("sum0", ["a2"])
    assert h.messages() == ["s", "sum1", "u3", "a3"] and h.total() == 7
    c = h.compactions[-1]
    assert c.summary.accepted and c.summary.replaced_id == "sum0"
    assert seen == h.compactions


def test_oversize_summary_rejected_and_reported_previous_kept():
    h, s, seen = _summary_history([3, 5])
    adds(h, [M("s", "system", 2), M("u1", "user", 2), M("a1", "assistant", 2), M("u2", "user", 2), M("a2", "assistant", 2), M("u3", "user", 2)])
    assert h.summary.id == "sum0"
    assert h.add(M("a3", "assistant", 2)) == ["a2"]
    assert s.calls[-1] == ("sum0", ["a2"])
    c = h.compactions[-1]
    assert not c.summary.accepted
    assert c.summary.id == "sum1" and c.summary.tokens == 5 and c.summary.budget == 3
    assert c.summary.replaced_id is None and c.summary.reason  # says why
    assert "5" in c.summary.reason and "3" in c.summary.reason
    assert not any(d.summarized for d in c.dropped)
    assert h.summary.id == "sum0"  # never stored over budget
    assert h.messages() == ["s", "sum0", "u3", "a3"] and h.total() == 9 and c.total_after == 9
    assert seen == h.compactions


def test_summary_live_cut_to_target_minus_budget():
    s = FakeSummarizer([4])
    h = History(20, target=12, summarizer=s, summary_budget=4)
    msgs = [M(f"m{i}", "user" if i % 2 == 0 else "assistant", 3) for i in range(7)]
    out = adds(h, msgs)
    assert out[:6] == [[]] * 6  # 18 <= 20
    # 21 > 20: live cut to 12 - 4 = 8 -> m5, m6 (6); summary 4 -> 10 <= target
    assert out[6] == ["m0", "m1", "m2", "m3", "m4"]
    assert h.messages() == ["sum0", "m5", "m6"] and h.total() == 10
    assert s.calls == [(None, ["m0", "m1", "m2", "m3", "m4"])]
    run_lockstep(msgs, limit=20, target=12, summary_sizes=[4], summary_budget=4)


def test_summary_role_is_ignored_by_start_on_user():
    # a user-role summary must not count as the first user turn
    msgs = [M("u1", "user", 2), M("a1", "assistant", 2), M("a2", "assistant", 2), M("u2", "user", 2), M("a3", "assistant", 2)]
    h, _ = run_lockstep(msgs, limit=8, start_on_user=True, summary_sizes=[1], summary_role="user", summary_budget=2)
    assert h.messages() == ["sum0", "u2", "a3"]


def test_summarizer_gets_every_dropped_message_of_the_add():
    s = FakeSummarizer([0])
    h = History(6, start_on_user=True, keep_tool_groups=True, summarizer=s, summary_budget=0)
    adds(h, [
        M("u1", "user", 1),
        M("a1", "assistant", 1, tool_call_ids=("c1",)),
        M("t1", "tool", 1, tool_call_id="c1"),
        M("u2", "user", 1),
        M("a2", "assistant", 1),
        M("u3", "user", 1),
    ])
    assert h.add(M("a3", "assistant", 2)) == ["u1", "a1", "t1"]
    assert s.calls == [(None, ["u1", "a1", "t1"])]
    assert reasons(h.compactions[-1]) == [("u1", OVER_LIMIT), ("a1", OVER_LIMIT), ("t1", TOOL_GROUP)]


# ------------------------------------------------------------------------------------- records


def test_on_compaction_gets_the_same_records():
    seen = []
    h = History(6, pin_system=True, keep_tool_groups=True, start_on_user=True, on_compaction=seen.append)
    msgs = [
        M("s", "system", 1), M("u1", "user", 2), M("a1", "assistant", 1, tool_call_ids=("c",)),
        M("t1", "tool", 1, tool_call_id="c"), M("a2", "assistant", 2), M("u2", "user", 1),
        M("t9", "tool", 1, tool_call_id="c"), M("a3", "assistant", 9),
    ]
    out = adds(h, msgs)
    assert seen == h.compactions
    assert [c.dropped_ids for c in seen] == [x for x in out if x]
    assert [c.step for c in seen] == [i for i, x in enumerate(out) if x]
    for c in seen:
        assert c.message_id == msgs[c.step].id
    run_lockstep(msgs, limit=6, pin_system=True, keep_tool_groups=True, start_on_user=True)


def test_start_on_user_record_and_unpinned_system_before_dropped():
    # An unpinned mid-conversation system message before a leading assistant goes with it.
    msgs = [M("u1", "user", 3), M("s1", "system", 1), M("a1", "assistant", 1), M("u2", "user", 1), M("a2", "assistant", 1)]
    h = History(6, start_on_user=True)
    out = adds(h, msgs)
    assert out[-1] == ["u1", "s1", "a1"]
    assert reasons(h.compactions[-1]) == [("u1", OVER_LIMIT), ("s1", START_ON_USER), ("a1", START_ON_USER)]
    assert h.messages() == ["u2", "a2"]
    # pinned, the system message stays (a pin, before the suffix)
    h = History(6, start_on_user=True, pin_system=True)
    out = adds(h, msgs)
    assert out[-1] == ["u1", "a1"]
    assert h.messages() == ["s1", "u2", "a2"]
    run_lockstep(msgs, limit=6, start_on_user=True)
    run_lockstep(msgs, limit=6, start_on_user=True, pin_system=True)


def test_records_are_reference_records():
    msgs = [M("s", "system", 20), M("u1", "user", 30), M("a1", "assistant", 40), M("u2", "user", 25), M("t1", "tool", 120)]
    h = History(100)
    r = ReferenceHistory(100)
    for m in msgs:
        assert h.add(m) == r.add(m)
    assert [record_of(c) for c in h.compactions] == r.records
    for c in h.compactions:
        assert re.fullmatch(r"\d+", str(c.step))
        assert c.total_after <= c.total_before


def test_dropped_ids_oldest_first_when_a_result_sits_after_a_later_message():
    # rule 8: add returns every dropped id oldest first (by seq), also when a tool result that goes
    # with its call sits after a message dropped later in the same cut; the record and the
    # summarizer's list follow the same order (rule 7: "oldest first").
    msgs = [
        M("a1", "assistant", 1, tool_call_ids=("c1",)),
        M("u1", "user", 1),
        M("t1", "tool", 1, tool_call_id="c1"),  # late: after u1
        M("u2", "user", 3),
    ]
    s = FakeSummarizer([0])
    h = History(3, keep_tool_groups=True, summarizer=s, summary_budget=0)
    assert adds(h, msgs) == [[], [], [], ["a1", "u1", "t1"]]
    assert reasons(h.compactions[-1]) == [("a1", OVER_LIMIT), ("u1", OVER_LIMIT), ("t1", TOOL_GROUP)]
    assert s.calls == [(None, ["a1", "u1", "t1"])]
    assert h.messages() == ["sum0", "u2"]


def test_pin_moved_trigger_when_also_over_the_limit():
    # rules 1 and 4: a moved pin makes this add a compaction; here the new pinned user message is
    # also over the limit on its own, so the record's trigger is `limit` (it would run anyway),
    # though the only drop is the moved pin.
    h = History(2, pin_latest_user=True)
    assert h.add(M("u0", "user", 0)) == []
    assert h.add(M("a1", "assistant", 3)) == ["a1"]  # too big; passes over the pinned u0
    assert h.add(M("u2", "user", 3)) == ["u0"]
    assert h.messages() == ["u2"] and h.over_limit
    c = h.compactions[-1]
    assert reasons(c) == [("u0", PIN_MOVED)]
    assert (c.total_before, c.total_after) == (3, 3)
    assert c.trigger == TRIGGER_LIMIT


def test_arrival_record_totals():
    h = History(10, keep_tool_groups=True)
    h.add(M("u1", "user", 4))
    assert h.add(M("t0", "tool", 3, tool_call_id="nobody")) == ["t0"]
    c = h.compactions[-1]
    # total_before: the total before the add plus the new message's tokens (what it would have been)
    assert (c.trigger, c.step, c.total_before, c.total_after) == (TRIGGER_ARRIVAL, 1, 7, 4)
    assert h.total() == 4 and h.messages() == ["u1"]


# ----------------------------------------------------------------------- record cap, reading


def test_records_cap_keeps_the_latest_and_callback_sees_all():
    seen = []
    h = History(1, records=2, on_compaction=seen.append)
    for i in range(6):
        h.add(M(f"u{i}", "user", 1))
    assert [c.step for c in seen] == [1, 2, 3, 4, 5]
    assert h.compactions == seen[-2:]
    h = History(1, records=None)
    adds(h, [M(f"u{i}", "user", 1) for i in range(1500)])
    assert len(h.compactions) == 1499
    h = History(1)
    adds(h, [M(f"u{i}", "user", 1) for i in range(1500)])
    assert len(h.compactions) == 1024 and h.compactions[-1].step == 1499
    h = History(1, records=0)
    assert h.add(M("a", "user", 1)) == [] and h.add(M("b", "user", 1)) == ["a"]
    assert h.compactions == []


@pytest.mark.parametrize("bad,exc,needle", [(-1, ValueError, "-1"), (1.5, TypeError, "1.5"), (True, TypeError, "True")])
def test_bad_records_cap(bad, exc, needle):
    _raises(exc, lambda: History(10, records=bad), "records", needle)


@pytest.mark.parametrize("flag", ["pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user"])
def test_policy_flags_must_be_bool(flag):
    _raises(TypeError, lambda: History(10, **{flag: 1}), flag, "1")


def test_reading_properties():
    s = FakeSummarizer([1])
    h = History(10, target=8, summarizer=s, summary_budget=2)
    assert (h.limit, h.target, h.summary_budget, h.steps, len(h), h.summary) == (10, 8, 2, 0, 0, None)
    adds(h, [M(f"u{i}", "user", 3) for i in range(4)])
    assert h.steps == 4
    assert h.messages() == ["sum0", "u2", "u3"] and len(h) == 3 and h.summary.id == "sum0"
    assert h.total() == 7
    assert History(10).target == 10 and History(10).summary_budget == 0


# ----------------------------------------------------------------- summaries beside heavy pins


def test_summary_rejected_when_pins_leave_no_room_under_the_limit():
    """A summary within its budget is still rejected when, beside pinned messages that exceed the
    goal, it would put the total over the limit: over_limit is only ever the pins' doing."""
    h = History(100, pin_system=True, summary_budget=50, summarizer=lambda prev, d: M("S", "system", 50))
    h.add(M("sys", "system", 60))
    h.add(M("u1", "user", 30))
    assert h.add(M("u2", "user", 20)) == ["u1", "u2"]
    assert h.messages() == ["sys"] and h.total() == 60 and not h.over_limit
    event = h.compactions[-1].summary
    assert not event.accepted and "over the limit of 100" in event.reason
    assert h.summary is None


def test_summary_in_place_removed_when_a_new_pin_leaves_no_room():
    sizes = iter([4, 4, 4])
    h = History(
        5, pin_latest_user=True, start_on_user=True, summary_budget=4,
        summarizer=lambda prev, d: M(f"s{len(d)}", "system", next(sizes)),
    )
    h.add(M("m0", "tool", 5))
    assert h.add(M("m1", "system", 3)) == ["m0", "m1"]
    assert h.summary is not None and h.total() == 4
    assert h.add(M("m2", "user", 2)) == []  # nothing dropped, but the summary must go
    assert h.summary is None and h.messages() == ["m2"] and h.total() == 2 and not h.over_limit
    c = h.compactions[-1]
    assert c.dropped == () and c.summary.removed_id == "s2" and "no room" in c.summary.reason


def test_a_failing_summarizer_is_recorded_and_raised_with_the_drops():
    from convmem import SummarizerError

    def boom(prev, dropped):
        raise TimeoutError("LLM timed out")

    seen = []
    h = History(10, summarizer=boom, summary_budget=2, on_compaction=seen.append)
    h.add(M("u1", "user", 5))
    h.add(M("a1", "assistant", 4))
    with pytest.raises(SummarizerError, match=r"\['u1', 'a1'\].*TimeoutError: LLM timed out") as info:
        h.add(M("u2", "user", 5))
    assert isinstance(info.value.__cause__, TimeoutError)
    assert info.value.compaction.dropped_ids == ["u1", "a1"]
    assert seen == [info.value.compaction] and h.compactions == [info.value.compaction]
    assert not info.value.compaction.summary.accepted and info.value.compaction.summary.id is None
    assert h.messages() == ["u2"] and h.total() == 5


def test_a_summarizer_returning_a_non_message_raises_summarizer_error():
    from convmem import SummarizerError

    h = History(10, summarizer=lambda prev, d: "not a message", summary_budget=2)
    h.add(M("u1", "user", 6))
    with pytest.raises(SummarizerError) as info:
        h.add(M("u2", "user", 6))
    assert isinstance(info.value.__cause__, TypeError)
    assert info.value.compaction.dropped_ids == ["u1"]


# ------------------------------------------------------------------ unique ids (SPEC §2, issue 9)


def test_a_kept_id_is_refused_and_nothing_changes():
    h = History(10)
    h.add(M("a", "user", 2))
    with pytest.raises(ValueError, match=r"History.add message id 'a' is already kept"):
        h.add(M("a", "assistant", 3))
    assert h.messages() == ["a"] and h.total() == 2 and h.steps == 1 and h.compactions == []


def test_a_dropped_id_may_come_back():
    h = History(3)
    assert h.add(M("a", "user", 2)) == [] and h.add(M("b", "user", 2)) == ["a"]
    assert h.add(M("a", "user", 1)) == []  # 'a' is no longer kept: it may be added again
    assert h.messages() == ["b", "a"] and h.total() == 3
    run_lockstep([M("a", "user", 2), M("b", "user", 2), M("a", "user", 1)], limit=3)


def test_the_id_of_the_summary_in_place_is_refused():
    h = History(4, summarizer=lambda prev, dropped: M("S", "system", 1, content="sum"), summary_budget=1)
    h.add(M("u1", "user", 2))
    h.add(M("u2", "user", 3))
    assert h.summary is not None and h.summary.id == "S"
    with pytest.raises(ValueError, match="'S' is already the id of the summary in place"):
        h.add(M("S", "user", 1))


def test_every_policy_refuses_a_kept_id():
    msgs = [M("s", "system", 1), M("u", "user", 1), M("a", "assistant", 1, tool_call_ids=("c",)),
            M("t", "tool", 1, tool_call_id="c")]
    for repeat in msgs:
        h = History(50, pin_system=True, pin_latest_user=True, keep_tool_groups=True,
                    start_on_user=True, target=40)
        adds(h, msgs)
        with pytest.raises(ValueError, match=re.escape(repr(repeat.id))):
            h.add(M(repeat.id, "user", 1))
        assert h.messages() == ["s", "u", "a", "t"]


def _summarizing(limit, summary):
    calls = []

    def summarizer(prev, dropped):
        calls.append(prev)
        return summary(len(calls))

    return History(limit, summarizer=summarizer, summary_budget=3), calls


@pytest.mark.parametrize("content", ["", "   ", " \n\t "])
def test_a_blank_summary_is_rejected_and_the_earlier_one_stays(content):
    texts = {1: "the user wants a refund", 2: content}
    h, calls = _summarizing(8, lambda k: M(f"S{k}", "system", 2, content=texts[k]))
    adds(h, [M("u1", "user", 5), M("u2", "user", 5)])  # u1 dropped, S1 accepted
    assert h.summary.id == "S1" and h.compactions[-1].summary.accepted
    assert h.add(M("u3", "user", 5)) == ["u2"]  # S2 is blank: rejected, S1 stays
    event = h.compactions[-1].summary
    assert not event.accepted and event.id == "S2" and event.replaced_id is None
    assert event.reason == "summary 'S2' is blank (its content is empty or whitespace only)"
    assert h.summary.id == "S1" and h.messages() == ["S1", "u3"] and h.total() == 7
    assert not h.compactions[-1].dropped[0].summarized


def test_a_summary_taking_a_kept_id_is_rejected():
    h, _ = _summarizing(8, lambda k: M("u2", "system", 1, content="clash"))
    h.add(M("u1", "user", 4))
    assert h.add(M("u2", "user", 5)) == ["u1"]
    event = h.compactions[-1].summary
    assert not event.accepted and event.id == "u2"
    assert event.reason == "summary id 'u2' is the id of a kept message; ids must be unique (SPEC §2)"
    assert h.summary is None and h.messages() == ["u2"]


def test_a_summary_with_no_content_is_still_accepted():
    # content None: a token-only summary (test doubles, counts without text); only blank text is refused
    h, _ = _summarizing(8, lambda k: M(f"S{k}", "system", 2))
    adds(h, [M("u1", "user", 5), M("u2", "user", 5)])
    assert h.summary.id == "S1"
