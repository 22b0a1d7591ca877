"""smallest_safe_limit against brute force: a replay through History at every limit from 0 up.

Brute force (:func:`kept_at`): History with the settings at one limit, adding every message and
checking after each add that the protected class is still kept (the newest user turn so far, every
system message so far, or one message from its arrival on). Exact answers must equal the smallest
limit that keeps it, with every smaller limit dropping it; the others (a target or a summary
budget: compaction timing is not monotone in the limit) must keep it at the answer and at every
larger limit checked.
"""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convmem import HistorySettings, Message, explain_safe_limit, smallest_safe_limit
from convmem.safe_limit import SafeLimit

FLAGS = ("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user")
FLAG_COMBOS = [dict(zip(FLAGS, bits)) for bits in itertools.product((False, True), repeat=4)]


def settings_at(limit: int, flags: dict, target=None, ref_limit=None, budget=None) -> HistorySettings:
    """The settings at ``limit``, a target keeping its ratio and the budget clipped (sweep_limits)."""
    t = None
    if target is not None:
        t = min(limit, round(target * limit / ref_limit))
    cap = limit if t is None else t
    b = None if budget is None else min(budget, cap)
    return HistorySettings(limit, t, summary_budget=b, **flags)


def kept_at(messages, protect: str, s: HistorySettings) -> bool:
    """Brute force: replay at one limit; False at the first add that drops the protected class."""
    h = s.build()
    newest_user = None
    systems = frozenset(m.id for m in messages if m.role == "system")
    for m in messages:
        if m.role == "user":
            newest_user = m.id
        dropped = set(h.add(m))
        if not dropped:
            continue
        if protect == "latest_user":
            if newest_user in dropped:
                return False
        elif protect == "system":
            if not systems.isdisjoint(dropped):
                return False
        elif protect in dropped:
            return False
    return True


#: CONVMEM_SAFE_LIMIT_EXHAUSTIVE=1: the real-data tests replay at every limit from 0 (about 200 s
#: of CPU for the 32 combinations); by default every limit in the last STRIDE below the answer and
#: every STRIDE-th one before it (the generated conversations always check every limit).
EXHAUSTIVE = os.environ.get("CONVMEM_SAFE_LIMIT_EXHAUSTIVE") == "1"
STRIDE = 64


def smallest_by_brute_force(messages, protect, flags, hi, stride=1, **kw) -> int | None:
    """The smallest limit in 0..hi that keeps the class (None when none does); with ``stride``,
    limits below ``hi - stride`` are tried every ``stride``-th one only."""
    dense_from = max(0, hi - stride) if stride > 1 else 0
    for limit in [*range(0, dense_from, stride), *range(dense_from, hi + 1)]:
        if kept_at(messages, protect, settings_at(limit, flags, **kw)):
            return limit
    return None


def check(messages, protect, flags, *, target=None, ref_limit=None, budget=None, above=3, stride=1) -> SafeLimit:
    policies = dict(flags)
    if target is not None:
        policies.update(target=target, limit=ref_limit)
    if budget is not None:
        policies.update(summary_budget=budget, summarizer=lambda prev, dropped: None)
    got = explain_safe_limit(messages, protect, **policies)
    assert smallest_safe_limit(messages, protect, **policies) == got.limit
    kw = dict(target=target, ref_limit=ref_limit, budget=budget)
    total = sum(m.tokens for m in messages)
    where = f"{protect=} {flags} {kw} -> {got}"
    # Kept at the answer and above (up to the total, where nothing is ever dropped).
    for limit in [*range(got.limit, got.limit + above + 1), total, total + 1]:
        if limit >= got.limit:
            assert kept_at(messages, protect, settings_at(limit, flags, **kw)), f"dropped at {limit}: {where}"
    if got.exact and got.limit > 0:
        assert smallest_by_brute_force(messages, protect, flags, got.limit, stride, **kw) == got.limit, where
        # the deciding step: at limit - 1 the named message goes at that step
        h = settings_at(got.limit - 1, flags, **kw).build()
        dropped_at = {}
        for step, m in enumerate(messages):
            for d in h.add(m):
                dropped_at.setdefault(d, step)
        assert dropped_at.get(got.message_id) == got.step or _dropped_with_call(messages, got, dropped_at), where
    return got


def _dropped_with_call(messages, got, dropped_at) -> bool:
    """A tool result protected by id: its call's drop (or its refusal on arrival) decides."""
    m = next(x for x in messages if x.id == got.message_id)
    return m.role == "tool" and got.message_id in dropped_at


# --------------------------------------------------------------------------------- hand cases


def turn(i, user=10, assistant=30):
    return [Message(f"u{i}", "user", user), Message(f"a{i}", "assistant", assistant)]


def test_hand_cases():
    msgs = [Message("s", "system", 50), *turn(1), *turn(2, 5, 20)]
    assert smallest_safe_limit(msgs) == 40  # u1 + a1
    assert smallest_safe_limit(msgs, "system") == 115  # all of it
    assert smallest_safe_limit(msgs, "system", pin_system=True) == 0
    assert smallest_safe_limit(msgs, pin_system=True) == 90  # the pinned prompt beside the turn
    assert smallest_safe_limit(msgs, "a2") == 20
    assert smallest_safe_limit(msgs, "u2") == 25
    assert smallest_safe_limit(msgs, "u2", pin_latest_user=True) == 0  # the newest, pinned to the end
    # u1 pinned until u2 arrives; a cut passing over it then drops it (pin_moved) at step 3.
    got = explain_safe_limit(msgs, "u1", pin_latest_user=True)
    assert (got.limit, got.step, got.message_id, got.exact) == (65, 4, "u1", True)
    # summaries reserve their budget; a target keeps its ratio to the limit
    assert smallest_safe_limit(msgs, summarizer=print, summary_budget=15) == 55
    assert smallest_safe_limit(msgs, target=30, limit=60) == 79  # round(79 / 2) = 40
    assert not explain_safe_limit(msgs, target=30, limit=60).exact
    for protect in ("latest_user", "system", "a1", "u2"):
        for flags in FLAG_COMBOS:
            check(msgs, protect, flags)


def test_tool_result_needs_its_call():
    msgs = [
        Message("u", "user", 5),
        Message("a", "assistant", 3, tool_call_ids=("c1",)),
        Message("t", "tool", 40, tool_call_id="c1"),
        Message("b", "assistant", 10),
    ]
    assert smallest_safe_limit(msgs, "t") == 50
    assert smallest_safe_limit(msgs, "t", keep_tool_groups=True) == 53  # a, t, b: the call stays
    stray = [Message("u", "user", 5), Message("t", "tool", 4, tool_call_id="nope")]
    with pytest.raises(ValueError, match="'t'.*answers no call"):
        smallest_safe_limit(stray, "t", keep_tool_groups=True)


def test_trivial_and_absent():
    msgs = [Message("a", "assistant", 3)]
    assert explain_safe_limit(msgs).reason == "absent"
    assert explain_safe_limit(msgs, "system").limit == 0
    assert explain_safe_limit([Message("u", "user", 0)]).reason == "fits"
    pinned = explain_safe_limit([Message("u", "user", 9)], pin_latest_user=True)
    assert (pinned.limit, pinned.step, pinned.reason) == (0, None, "pinned")


def test_errors_name_the_field():
    msgs = [Message("u", "user", 3)]
    with pytest.raises(ValueError, match="protect='x'"):
        smallest_safe_limit(msgs, "x")
    with pytest.raises(ValueError, match="target=5 needs the limit"):
        smallest_safe_limit(msgs, target=5)
    with pytest.raises(ValueError, match="unknown policies.*'pin'"):
        smallest_safe_limit(msgs, pin=True)
    with pytest.raises(TypeError, match="pin_system must be a bool"):
        smallest_safe_limit(msgs, pin_system=1)
    with pytest.raises(ValueError, match="repeats"):
        smallest_safe_limit(msgs * 2)
    with pytest.raises(ValueError, match="summary_budget go together"):
        smallest_safe_limit(msgs, summary_budget=3)


# --------------------------------------------------------------------------------- hypothesis

ROLES = ("system", "user", "assistant", "tool")


@st.composite
def conversations(draw):
    n = draw(st.integers(1, 9))
    out = []
    calls: list[str] = []
    for i in range(n):
        role = draw(st.sampled_from(ROLES))
        tokens = draw(st.integers(0, 12))
        if role == "assistant" and draw(st.booleans()):
            cid = f"c{i}"
            calls.append(cid)
            out.append(Message(f"m{i}", role, tokens, tool_call_ids=(cid,)))
        elif role == "tool":
            how = draw(st.sampled_from(("id", "position", "stray")))
            if how == "id" and calls:
                out.append(Message(f"m{i}", role, tokens, tool_call_id=draw(st.sampled_from(calls))))
            elif how == "stray":
                out.append(Message(f"m{i}", role, tokens, tool_call_id="gone"))
            else:
                out.append(Message(f"m{i}", role, tokens))
        else:
            out.append(Message(f"m{i}", role, tokens))
    return out


def _protects(messages):
    return ["latest_user", "system", *(m.id for m in messages)]


@settings(max_examples=300)
@given(conversations(), st.sampled_from(FLAG_COMBOS))
def test_exact_against_brute_force(messages, flags):
    total = sum(m.tokens for m in messages)
    for protect in _protects(messages):
        try:
            got = explain_safe_limit(messages, protect, **flags)
        except ValueError as e:  # a stray tool result: no limit keeps it
            assert "answers no call" in str(e)
            assert smallest_by_brute_force(messages, protect, flags, total + 1) is None
            continue
        check(messages, protect, flags)
        if got.exact:
            assert smallest_by_brute_force(messages, protect, flags, total + 1) == got.limit


@settings(max_examples=200)
@given(
    conversations(),
    st.sampled_from(FLAG_COMBOS),
    st.integers(1, 10),
    st.one_of(st.none(), st.integers(0, 6)),
)
def test_target_and_budget_keep_from_the_answer_up(messages, flags, tenths, budget):
    for protect in ("latest_user", "system", messages[-1].id):
        try:
            got = check(messages, protect, flags, target=tenths, ref_limit=10, budget=budget, above=8)
        except ValueError as e:
            assert "answers no call" in str(e) or "target of 0" in str(e)
            continue
        brute = smallest_by_brute_force(
            messages, protect, flags, got.limit, target=tenths, ref_limit=10, budget=budget
        )
        assert brute is not None and brute <= got.limit


# --------------------------------------------------------------------------------- real retail


@pytest.fixture(scope="module")
def retail(tau_retail_file):
    from convmem import load_conversations
    from convmem.tokens import make_counter

    return load_conversations(tau_retail_file, counter=make_counter(per_message_overhead=0))


@pytest.mark.realdata
@pytest.mark.parametrize("protect", ["latest_user", "system"])
@pytest.mark.parametrize("flags", FLAG_COMBOS, ids=lambda f: "+".join(k for k, v in f.items() if v) or "none")
def test_every_retail_conversation_against_brute_force(retail, protect, flags):
    """Exact: the limits from 0 to the answer replayed (all of them with EXHAUSTIVE), on all 115
    conversations: every one below the answer drops the class, the answer and above keep it."""
    exact = 0
    for conv in retail:
        msgs = list(conv.messages)
        got = check(msgs, protect, flags, above=1, stride=1 if EXHAUSTIVE else STRIDE)
        exact += got.exact
    assert exact == len(retail)  # no target or budget: exact everywhere on this data


@pytest.mark.realdata
@pytest.mark.parametrize("protect", ["latest_user", "system"])
@pytest.mark.parametrize(
    "policy",
    [dict(target=50, ref_limit=100), dict(budget=200), dict(target=80, ref_limit=100, budget=100)],
    ids=["target50%", "budget200", "target80%+budget100"],
)
def test_retail_with_target_or_summaries_keeps_from_the_answer_up(retail, protect, policy):
    flags = dict(keep_tool_groups=True, start_on_user=True)
    for conv in retail:
        msgs = list(conv.messages)
        got = check(msgs, protect, flags, above=3, **policy)
        assert not got.exact


# ------------------------------------------------------------- against the step-by-step version

import dataclasses  # noqa: E402

import reference_safe_limit as reference  # noqa: E402


def _both(messages, protect, **policies):
    """(fields of the SafeLimit, or the error) from convmem and from the step-by-step reference."""
    out = []
    for fn in (explain_safe_limit, reference.explain_safe_limit):
        try:
            out.append(dataclasses.astuple(fn(messages, protect, **policies)))
        except (ValueError, TypeError) as e:
            out.append((type(e).__name__, str(e)))
    return out


@settings(max_examples=300)
@given(
    conversations(),
    st.sampled_from(FLAG_COMBOS),
    st.one_of(st.none(), st.integers(0, 10)),
    st.one_of(st.none(), st.integers(0, 6)),
)
def test_same_answer_as_the_step_by_step_version(messages, flags, tenths, budget):
    """The C-level windows give the reference's limit, step, message, need, exactness and reason
    (or the same error), for every protected class and policy."""
    policies = dict(flags)
    if tenths is not None:
        policies.update(target=tenths, limit=10)
    if budget is not None:
        from convmem import ExtractiveSummarizer

        policies.update(summary_budget=budget, summarizer=ExtractiveSummarizer)
    for protect in _protects(messages):
        got, want = _both(messages, protect, **policies)
        assert got == want, protect


@pytest.mark.parametrize("seed", [1, 2])
def test_same_answer_on_long_generated_conversations(seed):
    """Thousands of turns, tool groups and system messages (convmem.synthetic)."""
    from convmem.synthetic import generate_conversation

    msgs = generate_conversation(3000, seed=seed).messages
    for flags in FLAG_COMBOS:
        for protect in ("latest_user", "system", msgs[7].id, msgs[1500].id, msgs[-1].id):
            got, want = _both(msgs, protect, **flags)
            assert got == want, (flags, protect)
            got, want = _both(msgs, protect, target=7, limit=10, **flags)
            assert got == want, (flags, protect)


@pytest.mark.realdata
def test_same_answer_on_every_retail_conversation(retail):
    for conv in retail:
        msgs = list(conv.messages)
        for flags in FLAG_COMBOS:
            for protect in ("latest_user", "system", msgs[len(msgs) // 2].id):
                got, want = _both(msgs, protect, **flags)
                assert got == want, (conv.id, flags, protect)
