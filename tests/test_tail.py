"""Newest-first tail loading (issue 12, item 4): load_tail keeps exactly what a full load fed
through History keeps at the end, with fewer fetches where a stop can be proven.

The reference is the brute force: ``load_history`` of the whole conversation (oldest first), every
message added to ``History(limit, **policies)``, then ``context()``. Run against every store of the
shared suite (memory, SQLite in memory and in a file, PostgreSQL) and, with hypothesis, against
random conversations, policies, budgets and page sizes on the in-memory store.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import History, Message, PageLoadError, TransientError, load_history
from convmem.tail import TAIL_PROVEN, TailLoad, load_tail
from convmem.testing import MemoryStore, ScriptedStore
from store_support import clean_postgres, make_store, postgres_url, store  # noqa: F401

POLICIES = ("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user")


def brute_force(messages, limit, **policies):
    history = History(limit, **policies)
    for m in messages:
        history.add(m)
    return tuple(history.context())


def agent_conversation(n, seed, *, prefix="m", system_every=0):
    """An agent-shaped conversation: a system prompt, user turns, assistant replies, tool calls
    (by id, by position, some re-declared, some unanswered or answering nothing)."""
    rng = random.Random(seed)
    out = [Message(f"{prefix}sys", "system", rng.randint(5, 40), content="You are helpful.")]
    k = 0
    while len(out) < n:
        k += 1
        if system_every and k % system_every == 0:
            out.append(Message(f"{prefix}s{k}", "system", rng.randint(1, 20)))
            continue
        out.append(Message(f"{prefix}u{k}", "user", rng.randint(1, 60)))
        r = rng.random()
        if r < 0.35:
            calls = tuple(f"{prefix}c{k}_{j}" for j in range(rng.randint(1, 2)))
            if rng.random() < 0.1 and k > 3:
                calls = (f"{prefix}c{k - 2}_0",)  # a re-declared call id
            out.append(Message(f"{prefix}a{k}", "assistant", rng.randint(5, 40), tool_call_ids=calls))
            for j, call in enumerate(calls):
                if rng.random() < 0.85:
                    out.append(Message(f"{prefix}t{k}_{j}", "tool", rng.randint(0, 120),
                                       tool_call_id=call))
        elif r < 0.45:
            out.append(Message(f"{prefix}a{k}", "assistant", rng.randint(5, 40)))
            out.append(Message(f"{prefix}p{k}", "tool", rng.randint(0, 80)))  # by position
        elif r < 0.5:
            out.append(Message(f"{prefix}o{k}", "tool", rng.randint(0, 30), tool_call_id="nowhere"))
        out.append(Message(f"{prefix}r{k}", "assistant", rng.randint(1, 90)))
    return out[:n]


def systems_of(messages):
    return [m for m in messages if m.role == "system"]


# -- every store of the shared suite ---------------------------------------------------------------

EARLY = [
    {},
    {"keep_tool_groups": True},
    {"pin_latest_user": True},
    {"pin_system": True},
    {"pin_system": True, "pin_latest_user": True, "keep_tool_groups": True},
]


@pytest.mark.parametrize("policies", EARLY, ids=lambda p: "+".join(p) or "base")
def test_the_tail_is_what_a_full_load_plus_history_keeps_with_fewer_fetches(make_store, policies):
    store = make_store(page_size=7)
    messages = agent_conversation(400, seed=3, system_every=25)
    store.append("c1", messages)
    store.append("other", agent_conversation(30, seed=4, prefix="o"))
    limit = 300
    full = load_history(store.pager("c1"))
    assert full == messages
    expected = brute_force(full, limit, **policies)

    extra = {"system_messages": systems_of(messages)} if policies.get("pin_system") else {}
    tail = load_tail(store.pager("c1", newest_first=True), limit, total_messages=len(messages),
                     **policies, **extra)
    assert tail.messages == expected  # every field of every message
    assert tail.tokens == sum(m.tokens for m in expected) <= limit
    assert tail.stopped_early and tail.stop_reason == TAIL_PROVEN and tail.why_full is None
    assert tail.full_load_pages == -(-400 // 7) == 58
    assert tail.pages < 58 / 4  # the kept suffix is ~a tenth of the conversation
    assert tail.page_ratio == tail.pages / 58


AGENT = {"pin_system": True, "pin_latest_user": True, "keep_tool_groups": True,
         "start_on_user": True, "target": 250}  # the README's agent, scaled down


@pytest.mark.parametrize(
    "policies", [{"start_on_user": True}, {"target": 250}, {"target": 250, "pin_latest_user": True},
                 AGENT],
    ids=["start_on_user", "target", "target+pin_latest_user", "agent"],
)
def test_with_target_or_start_on_user_the_tail_proves_a_synchronization(make_store, policies):
    store = make_store(page_size=7)
    messages = agent_conversation(400, seed=8, system_every=30)
    store.append("c1", messages)
    extra = {"system_messages": systems_of(messages)} if policies.get("pin_system") else {}
    tail = load_tail(store.pager("c1", newest_first=True), 300, total_messages=400,
                     **policies, **extra)
    assert tail.messages == brute_force(load_history(store.pager("c1")), 300, **policies)
    assert tail.stopped_early and tail.stop_reason == TAIL_PROVEN
    assert tail.pages < 58 / 4 and tail.full_load_pages == 58


def test_pin_system_without_the_system_messages_fetches_everything_and_is_still_exact(make_store):
    store = make_store(page_size=50)
    messages = agent_conversation(300, seed=5)
    store.append("c1", messages)
    tail = load_tail(store.pager("c1", newest_first=True), 250, pin_system=True)
    assert tail.messages == brute_force(messages, 250, pin_system=True)
    assert not tail.stopped_early and tail.stop_reason == "end"
    assert tail.pages == tail.full_load_pages == 6
    assert "system_messages=" in tail.why_full


def test_the_synchronization_proof_gives_up_past_its_cap(monkeypatch):
    import convmem.tail

    # one-token messages: what is kept depends on the phase of the compactions, i.e. on the whole
    # conversation - until a 15-token message makes every possible history compact at once
    messages = [Message(f"u{i}", "user", 1) for i in range(199)] + [Message("big", "user", 15)]
    store = MemoryStore(page_size=10)
    store.append("c1", messages)
    kept = brute_force(messages, 20, target=10)
    tail = load_tail(store.pager("c1", newest_first=True), 20, target=10)
    assert tail.messages == kept and tail.stopped_early and tail.pages == 1
    uniform = MemoryStore(page_size=10)
    uniform.append("c1", messages[:-1])
    tail = load_tail(uniform.pager("c1", newest_first=True), 20, target=10)
    assert tail.messages == brute_force(messages[:-1], 20, target=10) and tail.pages == 20
    monkeypatch.setattr(convmem.tail, "PROOF_MESSAGES", 5)
    tail = load_tail(store.pager("c1", newest_first=True), 20, target=10)
    assert tail.messages == kept and not tail.stopped_early and tail.pages == 20


def test_a_budget_bigger_than_the_conversation_reads_it_all(store):
    messages = agent_conversation(20, seed=6)
    store.append("c1", messages)
    tail = load_tail(store.pager("c1", newest_first=True), 10**6, keep_tool_groups=True)
    assert tail.messages == tuple(brute_force(messages, 10**6, keep_tool_groups=True))
    assert not tail.stopped_early and tail.pages == tail.full_load_pages == 7
    assert load_tail(store.pager("empty", newest_first=True), 100).messages == ()


def test_a_pinned_system_prompt_from_the_start_is_kept_ahead_of_the_tail():
    store = MemoryStore(page_size=2)
    prompt = Message("sys", "system", 5)
    body = [Message(f"m{i}", "user" if i % 2 else "assistant", 10) for i in range(40)]
    store.append("c1", [prompt, *body])
    tail = load_tail(store.pager("c1", newest_first=True), 35, pin_system=True,
                     system_messages=[prompt])
    assert [m.id for m in tail.messages] == ["sys", "m37", "m38", "m39"]
    assert tail.messages == brute_force([prompt, *body], 35, pin_system=True)
    assert tail.stopped_early and tail.pages == 2 and tail.messages_fetched == 4


def test_pin_latest_user_stops_only_past_a_user_message():
    # the newest user message is far back: it stays pinned, so the tail must reach it
    messages = [Message("u0", "user", 3)] + [Message(f"a{i}", "assistant", 10) for i in range(30)]
    store = MemoryStore(page_size=4)
    store.append("c1", messages)
    tail = load_tail(store.pager("c1", newest_first=True), 25, pin_latest_user=True)
    assert [m.id for m in tail.messages] == ["u0", "a28", "a29"]
    assert tail.messages == brute_force(messages, 25, pin_latest_user=True)
    assert tail.pages == 8 and not tail.stopped_early  # the user message is the oldest


def test_retries_and_options_go_to_the_walk():
    store = ScriptedStore({None: (["m3", "m2"], "d2"), "d2": [TransientError, (["m1"], None)]})
    tail = load_tail(store, 1, sleep=lambda s: None, attempts=2)
    assert [m.id for m in tail.messages] == ["m3"]
    assert tail.stopped_early and tail.report.retries == 0 and store.calls == [None]
    store = ScriptedStore({None: (["m3"], "d2"), "d2": TransientError})
    with pytest.raises(PageLoadError):
        load_tail(store, 5, sleep=lambda s: None, attempts=2)


def test_bad_options_name_the_field_and_the_value():
    fetch = MemoryStore().pager("c1", newest_first=True)
    with pytest.raises(ValueError, match="target must be <= limit"):
        load_tail(fetch, 10, target=20)
    with pytest.raises(ValueError, match=r"system_messages\[0\] has role 'user'"):
        load_tail(fetch, 10, pin_system=True, system_messages=[Message("u", "user", 1)])
    with pytest.raises(TypeError, match="system_messages must be a list"):
        load_tail(fetch, 10, pin_system=True, system_messages="sys")
    with pytest.raises(TypeError, match="resume is not supported"):
        load_tail(fetch, 10, resume=None)
    with pytest.raises(TypeError, match="History limit must be an int"):
        load_tail(fetch, "10")
    with pytest.raises(ValueError, match="total_messages must be an int >= 0, got -1"):
        load_tail(fetch, 10, total_messages=-1)
    assert isinstance(load_tail(fetch, 10), TailLoad)


# -- hypothesis against the brute force -----------------------------------------------------------


@st.composite
def tail_cases(draw):
    n = draw(st.integers(0, 60))
    seed = draw(st.integers(0, 10**6))
    messages = agent_conversation(n, seed, system_every=draw(st.sampled_from([0, 4, 9])))
    if messages and draw(st.booleans()):
        messages = messages[1:]  # no system prompt at the start
    policies = {p: draw(st.booleans()) for p in POLICIES}
    limit = draw(st.integers(0, 400))
    if draw(st.integers(0, 4)) == 0:
        policies["target"] = draw(st.integers(0, limit))
    return messages, policies, limit, draw(st.integers(1, 9))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tail_cases())
def test_hypothesis_the_tail_equals_the_brute_force(case):
    messages, policies, limit, page_size = case
    store = MemoryStore(page_size=page_size)
    if messages:
        store.append("c1", messages)
    extra = {}
    if policies["pin_system"] and random.Random(len(messages)).random() < 0.8:
        extra["system_messages"] = systems_of(messages)
    tail = load_tail(store.pager("c1", newest_first=True), limit, **policies, **extra)
    assert tail.messages == brute_force(messages, limit, **policies)
    full_pages = max(1, -(-len(messages) // page_size))
    assert tail.pages <= full_pages
    if tail.stopped_early:
        # proven: nothing older than what was fetched is kept (pins aside), and the walk stopped
        assert tail.why_full is None and tail.report.stop_reason == "closed"
        fetched = {m.id for m in messages[len(messages) - tail.messages_fetched:]}
        assert all(m.id in fetched or m.role == "system" for m in tail.messages)
    else:
        assert tail.pages == full_pages == tail.full_load_pages


def test_messages_arriving_during_a_tail_load_are_left_for_the_next_one(make_store):
    store = make_store(page_size=5)
    messages = agent_conversation(120, seed=9)
    store.append("c1", messages)
    pager = store.pager("c1", newest_first=True)
    late = [Message("late1", "user", 50), Message("late2", "assistant", 50)]

    def fetch_page(cursor):
        page = pager(cursor)
        if cursor is None:
            store.append("c1", late)  # arrives after the first page: past the walk's top
        return page

    tail = load_tail(fetch_page, 150, keep_tool_groups=True)
    assert tail.messages == brute_force(messages, 150, keep_tool_groups=True)
    assert tail.stopped_early
    again = load_tail(store.pager("c1", newest_first=True), 150, keep_tool_groups=True)
    assert again.messages == brute_force(messages + late, 150, keep_tool_groups=True)
