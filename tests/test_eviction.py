"""evict_conversations, eviction_curve, kept_from, explain_eviction (SPEC §5, CASES E1-E7)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convmem import eviction_curve, evict_conversations, explain_eviction, kept_from


def reference_evict(conversations: list[list[str]], max_listings: int) -> list[str]:
    """Straight from the words: while the kept mention more than the cap, drop the oldest."""
    kept = [list(c) for c in conversations]
    while len({x for c in kept for x in c}) > max_listings:
        kept.pop(0)
    return list(dict.fromkeys(x for c in kept for x in c))


def reference_curve(conversations: list[list[str]]) -> list[int]:
    return [len({x for c in conversations[k:] for x in c}) for k in range(len(conversations) + 1)]


@pytest.mark.parametrize(
    ("conversations", "cap", "expected"),
    [
        pytest.param([["p1", "p2"], ["p2", "p3"], ["p4", "p1"]], 3, ["p4", "p1"], id="E1-seed"),
        pytest.param([["p1", "p1"], ["p1"]], 1, ["p1"], id="E2-seed"),
        pytest.param([["A", "A", "A"], ["B"]], 2, ["A", "B"], id="E3-distinct-not-mentions"),
        pytest.param([["A", "A", "A"], ["B"]], 1, ["B"], id="E3-cap-1"),
        pytest.param([["L1", "L2"], ["L2", "L3"], ["L3", "L4"]], 3, ["L2", "L3", "L4"], id="E4-recount"),
        pytest.param([["a"], ["b"], ["c"], ["d"]], 3, ["b", "c", "d"], id="E5-only-oldest"),
        pytest.param([["a", "b", "c"]], 2, [], id="E6-newest-alone-over"),
        pytest.param([], 5, [], id="E7-empty"),
        pytest.param([[], ["a"], []], 0, [], id="cap-zero-empty-convs"),
        pytest.param([[], []], 0, [], id="all-empty-cap-zero"),
    ],
)
def test_hand_cases(conversations, cap, expected):
    assert evict_conversations(conversations, cap) == expected
    assert reference_evict(conversations, cap) == expected


def test_curve_hand_values():
    assert eviction_curve([["p1", "p2"], ["p2", "p3"], ["p4", "p1"]]) == [4, 4, 2, 0]
    assert eviction_curve([["L1", "L2"], ["L2", "L3"], ["L3", "L4"]]) == [4, 3, 2, 0]
    assert eviction_curve([[], []]) == [0, 0, 0]
    assert eviction_curve([]) == [0]


def test_scan_stops_at_the_cap_and_never_reads_older_conversations():
    """Cost is linear in the mentions kept: the scan reads whole conversations newest first and
    stops at the one that passes the cap; conversations older than it are never read."""
    reads: list[str] = []

    class Counting(list):
        def __iter__(self):
            for x in super().__iter__():
                reads.append(x)
                yield x

    class Exploding(list):
        def __iter__(self):
            raise AssertionError("an older dropped conversation was read")

        __getitem__ = __iter__

    convs = [Exploding(["x"] * 10), Counting(["d", "e", "f", "g"]), ["a", "b"], ["c"]]
    assert evict_conversations(convs, 3) == ["a", "b", "c"]
    assert kept_from(convs, 3) == 2
    assert reads == ["d", "e", "f", "g"] * 2  # the conversation that passed the cap, once per call


def test_validation_names_field_and_value():
    with pytest.raises(ValueError, match="max_listings.*-1"):
        evict_conversations([["a"]], -1)
    with pytest.raises(TypeError, match="max_listings.*True"):
        evict_conversations([["a"]], True)
    with pytest.raises(TypeError, match=r"conversations\[1\].*'abc'"):
        evict_conversations([["a"], "abc"], 1)
    with pytest.raises(TypeError, match=r"conversations\[0\]\[1\].*7"):
        evict_conversations([["a", 7]], 5)
    with pytest.raises(TypeError, match="conversations must be"):
        eviction_curve("p1")
    with pytest.raises(TypeError, match=r"conversations\[0\]\[0\].*None"):
        eviction_curve([[None]])


ids = st.sampled_from([f"L{i}" for i in range(12)])
conversation_lists = st.lists(st.lists(ids, max_size=8), max_size=12)


@settings(max_examples=500, deadline=None)
@given(conversations=conversation_lists, cap=st.integers(min_value=0, max_value=14))
def test_evict_matches_reference_for_every_cap(conversations, cap):
    assert evict_conversations(conversations, cap) == reference_evict(conversations, cap)
    k = kept_from(conversations, cap)
    kept = conversations[k:]
    assert len({x for c in kept for x in c}) <= cap
    # the longest suffix that fits: one more conversation would pass the cap
    if k > 0:
        assert len({x for c in conversations[k - 1 :] for x in c}) > cap


@settings(max_examples=500, deadline=None)
@given(conversations=conversation_lists)
def test_curve_matches_reference_and_answers_every_cap(conversations):
    curve = eviction_curve(conversations)
    assert curve == reference_curve(conversations)
    assert all(a >= b for a, b in zip(curve, curve[1:]))
    for cap in range(max(curve) + 2):
        expected_k = next(k for k, c in enumerate(curve) if c <= cap)
        assert kept_from(conversations, cap) == expected_k


@settings(max_examples=300, deadline=None)
@given(conversations=conversation_lists, cap=st.integers(min_value=0, max_value=14))
def test_explain_released_is_exactly_the_drop_in_count(conversations, cap):
    steps = explain_eviction(conversations, cap)
    curve = reference_curve(conversations)
    assert len(steps) == len(conversations)
    k = kept_from(conversations, cap)
    for s in steps:
        assert (s.count_before, s.count_after) == (curve[s.index], curve[s.index + 1])
        assert len(s.released) == s.count_before - s.count_after
        newer = {x for c in conversations[s.index + 1 :] for x in c}
        assert set(s.shared) == set(conversations[s.index]) & newer
        assert set(s.released).isdisjoint(newer)
        assert s.dropped == (s.index < k)


def test_every_id_the_scan_reads_is_checked_and_named():
    # in the conversation that passes the cap, after the id that passed it (the scan read it)
    with pytest.raises(TypeError, match=r"conversations\[0\]\[2\] must be a listing id \(str\), got 7"):
        evict_conversations([["x", "y", 7], ["a"]], 2)
    # unhashable ids are named too, newest conversation first
    with pytest.raises(TypeError, match=r"conversations\[1\]\[1\].*\['no'\]"):
        eviction_curve([[3], ["a", ["no"]]])
    # older than the conversation that passes the cap: never read, never reported
    assert evict_conversations([[None], ["x", "y"], ["a"]], 2) == ["a"]
    assert evict_conversations(["not a list", ["x", "y"], ["a"]], 2) == ["a"]
    with pytest.raises(TypeError, match=r"conversations\[0\] must be a list of listing ids"):
        eviction_curve(["not a list", ["a"]])
    # str subclasses are str
    class Tag(str):
        pass

    assert evict_conversations([[Tag("a"), "b"], ["a"]], 5) == ["a", "b"]
    assert eviction_curve([[Tag("a")], ["a"]]) == [1, 1, 0]


@settings(max_examples=200, deadline=None)
@given(conversations=conversation_lists, cap=st.integers(min_value=0, max_value=14))
def test_first_appearance_order_with_early_stop(conversations, cap):
    """The order pass stops once every kept id is placed; the result is the full first-appearance list."""
    k = kept_from(conversations, cap)
    want = list(dict.fromkeys(x for c in conversations[k:] for x in c))
    assert evict_conversations(conversations, cap) == want
