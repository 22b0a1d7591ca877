"""Hand cases with exact values for History's fast paths (convmem/history.py ``_compact`` and
``_finish``), each also run in lockstep with the brute-force reference (tests/reference_history.py).

- Drops are sorted by add step only when tool results went with their call: a result that arrived
  after a later message is dropped with its call, then that later message is cut too, and the
  returned ids are still oldest first.
- Without such results the drops come from the oldest end in order and are returned as they are.
- start_on_user dropping a tool-group head inline with the cut (one pass), and a pinned system
  message passed over by it.
"""

from __future__ import annotations

from convmem import History, Message
from reference_history import run_lockstep


def _late_result() -> list[Message]:
    return [
        Message("a1", "assistant", 2, tool_call_ids=("c1",)),
        Message("u1", "user", 2),
        Message("t1", "tool", 2, tool_call_id="c1"),  # late: after u1
        Message("u2", "user", 2),
        Message("a2", "assistant", 7),
    ]


def test_group_dropped_before_an_older_message_is_returned_in_add_order():
    h = History(10, keep_tool_groups=True)
    out = [h.add(m) for m in _late_result()]
    # a2 brings the total to 15: a1 goes with t1 (11), then u1 (9). Oldest first: a1, u1, t1.
    assert out == [[], [], [], [], ["a1", "u1", "t1"]]
    (c,) = h.compactions
    assert [(d.id, d.reason, d.added_step) for d in c.dropped] == [
        ("a1", "over_limit", 0),
        ("u1", "over_limit", 1),
        ("t1", "tool_group", 2),
    ]
    assert (c.total_before, c.total_after) == (15, 9)
    assert h.messages() == ["u2", "a2"]
    run_lockstep(_late_result(), limit=10, keep_tool_groups=True)


def test_drops_in_order_without_tool_results_are_not_reordered():
    msgs = [Message(f"m{i}", "user" if i % 2 == 0 else "assistant", 3) for i in range(7)]
    h = History(10, keep_tool_groups=True, pin_system=True)
    out = [h.add(m) for m in msgs]
    assert out == [[], [], [], ["m0"], ["m1"], ["m2"], ["m3"]]
    h = History(10, target=4, keep_tool_groups=True)
    assert [h.add(m) for m in msgs] == [[], [], [], ["m0", "m1", "m2"], [], [], ["m3", "m4", "m5"]]
    run_lockstep(msgs, limit=10, target=4, keep_tool_groups=True)


def _start_on_user_case() -> list[Message]:
    return [
        Message("s", "system", 1),
        Message("u0", "user", 2),
        Message("a1", "assistant", 2, tool_call_ids=("c1",)),
        Message("t1", "tool", 2, tool_call_id="c1"),
        Message("a2", "assistant", 2),
        Message("u3", "user", 3),
    ]


def test_start_on_user_drops_a_group_head_and_passes_a_pinned_system_message():
    h = History(11, pin_system=True, keep_tool_groups=True, start_on_user=True)
    out = [h.add(m) for m in _start_on_user_case()]
    # u3 brings 12 > 11: s is pinned (parked), u0 is cut (10); then a1 leads: it goes with t1,
    # and a2 after them, so u3 leads.
    assert out[-1] == ["u0", "a1", "t1", "a2"]
    (c,) = h.compactions
    assert [(d.id, d.reason) for d in c.dropped] == [
        ("u0", "over_limit"),
        ("a1", "start_on_user"),
        ("t1", "tool_group"),
        ("a2", "start_on_user"),
    ]
    assert h.messages() == ["s", "u3"] and h.total() == 4 and len(h) == 2
    for flags in ({}, {"pin_latest_user": True}, {"target": 5}):
        run_lockstep(_start_on_user_case(), limit=11, pin_system=True, keep_tool_groups=True,
                     start_on_user=True, **flags)


def test_unpinned_system_passed_over_by_start_on_user_goes_with_the_message_after_it():
    msgs = [
        Message("u0", "user", 5),
        Message("s1", "system", 1),
        Message("a1", "assistant", 1),
        Message("u1", "user", 1),
        Message("a2", "assistant", 1),
    ]
    h = History(8, start_on_user=True)
    assert [h.add(m) for m in msgs] == [[], [], [], [], ["u0", "s1", "a1"]]
    assert h.messages() == ["u1", "a2"]
    h = History(8, start_on_user=True, pin_system=True)
    assert [h.add(m) for m in msgs][-1] == ["u0", "a1"]
    assert h.messages() == ["s1", "u1", "a2"]
    run_lockstep(msgs, limit=8, start_on_user=True)
    run_lockstep(msgs, limit=8, start_on_user=True, pin_system=True)
