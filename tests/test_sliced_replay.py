"""convmem.SlicedReplay: replay() done a slice at a time gives the same Replay (hypothesis).

Every path replay takes (the base rule, the policy walk, the clearing walk, the summary walk,
History's add loop with and without a summarizer) is advanced in random slices, with the pause
points made dense (PAUSE_EVERY patched to 1..5 adds), and the result must equal the per-add
reference replay (tests/reference_replay.py, History read after every add). Progress, errors, the
GC state and concurrent callers are checked too.
"""

from __future__ import annotations

import gc
import importlib
import re
import threading
import traceback
from dataclasses import replace
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import HistorySettings, Message, SlicedReplay, generate_conversation, replay
from reference_replay import reference_replay
from test_history_properties import TOOL_KINDS, conversations, thinking_of, tool_names_of
from test_replay_reference import assert_same, unique, words

replay_module = importlib.import_module("convmem.replay")  # the module (convmem.replay is the function)

FLAGS = ("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user")


@st.composite
def cases(draw):
    limit = draw(st.one_of(st.integers(0, 40), st.integers(40, 400)))
    msgs = unique(draw(conversations(limit, 40, TOOL_KINDS)))
    s = HistorySettings(
        limit,
        draw(st.one_of(st.none(), st.integers(0, limit))),
        **{name: draw(st.booleans()) for name in FLAGS},
    )
    if draw(st.booleans()):
        s = replace(s, summary_budget=draw(st.integers(0, max(limit, 1))))
    if draw(st.booleans()):
        s = replace(s, clear_trigger=draw(st.integers(0, limit)), clear_keep=draw(st.integers(0, 3)),
                    clear_at_least=draw(st.sampled_from([0, 1, limit // 3])))
    if draw(st.booleans()):
        s = replace(s, clear_thinking_keep=draw(st.integers(0, 2)))
    # None: convmem's own counter (the walks); words: a custom counter (History's add loop with
    # a summarizer, the walks with summaries refused)
    count = draw(st.sampled_from([None, words]))
    return s, msgs, count


def advance_in_slices(job: SlicedReplay, sizes: list[int]) -> list[int]:
    """Advance ``job`` to its end by the sizes (cycled); the ``added`` seen after each call."""
    seen = []
    i = 0
    while not job.advance(sizes[i % len(sizes)]):
        seen.append(job.added)
        i += 1
    seen.append(job.added)
    return seen


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(1, 5), st.lists(st.integers(1, 7), min_size=1, max_size=4))
def test_a_sliced_replay_equals_the_per_add_reference(case, pause_every, sizes):
    s, msgs, count = case
    kw = dict(count_tokens=count, tool_names=tool_names_of(msgs), thinking=thinking_of(msgs))
    try:
        want = reference_replay(msgs, s, count, kw["tool_names"], kw["thinking"])
    except (TypeError, ValueError) as exc:  # settings History refuses: the same error, every call
        job = SlicedReplay(msgs, s, **kw)
        for _ in range(2):
            with pytest.raises(type(exc), match="^" + re.escape(str(exc)) + "$"):
                job.advance(sizes[0])
        return
    with mock.patch.object(replay_module, "PAUSE_EVERY", pause_every):
        job = SlicedReplay(msgs, s, **kw)
        seen = advance_in_slices(job, sizes)
    assert_same(job.result(), want)
    assert seen == sorted(seen) and seen[-1] == len(msgs) == job.total
    assert all(0 <= a <= len(msgs) for a in seen)
    assert job.done


def test_each_walk_pauses_where_told():
    """At 10 messages and a pause every 2 adds, advance(1) stops after 2 adds on every path that
    pauses (it adds at least what was asked, up to the next pause point), and the base rule
    (no pause point) is done by the first call."""
    msgs = [Message(f"m{i}", "user" if i % 2 == 0 else "assistant", 10) for i in range(10)]
    paths = {
        "policy walk": HistorySettings(30, pin_latest_user=True),
        "clearing walk": HistorySettings(30, clear_trigger=20),
        "summary walk": HistorySettings(30, summary_budget=10),
        "History's loop with a summarizer": HistorySettings(30, summary_budget=10, pin_system=True),
    }
    with mock.patch.object(replay_module, "PAUSE_EVERY", 2):
        for name, s in paths.items():
            count = words if "History" in name else None  # a custom counter: no walk
            job = SlicedReplay(msgs, s, count_tokens=count)
            assert (job.advance(1), job.added) == (False, 2), name
            assert (job.advance(3), job.added) == (False, 6), name
            assert (job.advance(100), job.added) == (True, 10), name
            assert_same(job.result(), replay(msgs, s, count_tokens=count))
        base = SlicedReplay(msgs, HistorySettings(30))
        assert (base.advance(1), base.added) == (True, 10)


def test_history_loop_without_summaries_pauses():
    """Clearing of thinking with a bad thinking count leaves the replay to History.add (no walk):
    that loop pauses too, and the error it meets is History's."""
    msgs = [Message(f"m{i}", "user" if i % 2 == 0 else "assistant", 10) for i in range(10)]
    s = HistorySettings(30, clear_thinking_keep=0)
    assert not replay_module._clearing_walk_applies(msgs, s.build(thinking={"m1": 1.5}), None)
    with mock.patch.object(replay_module, "PAUSE_EVERY", 3):
        job = SlicedReplay(msgs, s, thinking={"m1": 1.5})
        with pytest.raises((TypeError, ValueError)) as first:
            advance_in_slices(job, [1])
    with pytest.raises(type(first.value)):
        job.advance(1)  # the same error again: the replay is not resumed
    with pytest.raises(type(first.value)):
        job.result()
    assert job.done
    job = SlicedReplay(msgs, s, thinking={"m1": 4})
    with mock.patch.object(replay_module, "PAUSE_EVERY", 3):
        assert (job.advance(1), job.added) == (False, 3)
        advance_in_slices(job, [2])
    assert_same(job.result(), reference_replay(msgs, s, None, None, {"m1": 4}))


def test_errors_progress_and_bad_arguments():
    msgs = [Message("a", "user", 1), Message("a", "user", 1)]  # a duplicate id
    job = SlicedReplay(msgs, HistorySettings(10))
    assert (job.total, job.added, job.done) == (2, 0, False)
    with pytest.raises(RuntimeError, match="not done: 0 of 2 messages added"):
        job.result()
    with pytest.raises(ValueError, match="'a'"):
        job.advance(1)
    with pytest.raises(ValueError, match="'a'"):
        job.advance(1)
    for bad in (0, -3, 1.5, True, "2"):
        with pytest.raises(ValueError, match="max_messages must be an int of at least 1"):
            SlicedReplay([], HistorySettings(10)).advance(bad)
    with pytest.raises(TypeError, match="HistorySettings"):
        SlicedReplay([], {"limit": 10})
    empty = SlicedReplay([], HistorySettings(10))
    assert empty.advance(1) and empty.result().totals == ()
    assert empty.finish() is empty.result()


def test_the_gc_state_is_restored_after_each_slice():
    msgs = generate_conversation(3000, seed=3).messages
    s = HistorySettings(2000, pin_latest_user=True, summary_budget=200)
    job = SlicedReplay(msgs, s)
    assert gc.isenabled()
    while not job.advance(500):
        assert gc.isenabled()
    gc.disable()
    try:
        job2 = SlicedReplay(msgs, s)
        job2.advance(500)
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()
    assert_same(job.result(), replay(msgs, s))


def test_concurrent_callers_take_turns():
    """Four threads advance one job in slices of 1 (a pause every 3 adds): one Replay, equal to
    replay()'s; no 'generator already executing'."""
    msgs = generate_conversation(400, seed=5).messages
    s = HistorySettings(900, keep_tool_groups=True, clear_trigger=700, summary_budget=150)
    errors = []
    with mock.patch.object(replay_module, "PAUSE_EVERY", 3):
        job = SlicedReplay(msgs, s)

        def worker():
            try:
                while not job.advance(1):
                    continue
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert_same(job.result(), replay(msgs, s))


def test_a_long_conversation_in_dashboard_slices():
    """10^4 synthetic messages with clearing and summaries (the Token budget page's heaviest
    path), in slices of 3,000 with the real pause spacing: 3 calls, the same Replay."""
    msgs = generate_conversation(10_000, seed=7).messages
    s = HistorySettings(3200, summary_budget=300, clear_trigger=3200, clear_keep=3, clear_at_least=30)
    job = SlicedReplay(msgs, s)
    seen = advance_in_slices(job, [3000])
    assert seen == [4096, 8192, 10_000]  # each call stops at the first pause point past its share
    assert_same(job.result(), replay(msgs, s))


# ------------------------------------------------------------------ session 23 breaker's findings


def words_interrupted_once():
    """A counter (words) whose first call raises KeyboardInterrupt: Ctrl-C in the middle of a slice."""
    calls = [0]

    def count(text: str) -> int:
        calls[0] += 1
        if calls[0] == 1:
            raise KeyboardInterrupt
        return words(text)

    return count


def test_an_interrupted_slice_starts_over_on_the_next_call():
    """KeyboardInterrupt (or SystemExit) in a slice is not the replay's error: it propagates, the
    GC is back on, and the next call replays from the start (it was re-raised forever)."""
    msgs = generate_conversation(300, seed=11).messages
    s = HistorySettings(900, summary_budget=150)  # a custom counter: History's loop, the summarizer counts
    job = SlicedReplay(msgs, s, count_tokens=words_interrupted_once())
    with mock.patch.object(replay_module, "PAUSE_EVERY", 7):
        with pytest.raises(KeyboardInterrupt):
            advance_in_slices(job, [5])
        assert gc.isenabled()
        assert (job.done, job.added) == (False, 0)
        with pytest.raises(RuntimeError, match="not done: 0 of 300"):
            job.result()
        seen = advance_in_slices(job, [5])
    assert seen[0] == 7 and seen[-1] == 300
    assert_same(job.result(), reference_replay(msgs, s, words, None, None))


def test_a_failed_job_keeps_its_error_not_its_partial_replay():
    """The stored error's traceback neither grows with each call that raises it again (each held
    the frames of its caller: a dashboard's script runs) nor holds the partial replay through the
    replay's frames (the History and columns of 10^4 adds: ~3 MB)."""
    msgs = generate_conversation(10_000, seed=13).messages
    last = [m for m in msgs if m.role == "assistant"][-1]
    s = HistorySettings(3200, clear_thinking_keep=1)
    bad = {last.id: -1}  # History raises at the last assistant message, after ~10^4 adds
    with pytest.raises(ValueError) as direct:
        replay(msgs, s, thinking=bad)
    traceback.extract_tb(direct.value.__traceback__)  # linecache reads the files before the count
    gc.collect()
    import tracemalloc

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        job = SlicedReplay(msgs, s, thinking=bad)
        depths = []
        for call in (job.finish, job.finish, job.finish, job.finish, job.result):
            with pytest.raises(ValueError, match="^" + re.escape(str(direct.value)) + "$") as err:
                call()
            depths.append(len(traceback.extract_tb(err.value.__traceback__)))
            del err
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert job.done
    assert depths[1:4] == depths[1:2] * 3, depths  # no growth from one call to the next
    assert held < 300_000, held


def test_the_messages_are_taken_as_they_are_when_the_job_is_made():
    """A list changed between slices (a live conversation growing) does not change the replay: it
    raised IndexError; and a non-sequence is refused as replay refuses it."""
    msgs = list(generate_conversation(60, seed=17).messages)
    for s in (HistorySettings(300, pin_latest_user=True), HistorySettings(300, summary_budget=50),
              HistorySettings(300, clear_trigger=200), HistorySettings(300, summary_budget=50, pin_system=True)):
        live = list(msgs)
        with mock.patch.object(replay_module, "PAUSE_EVERY", 5):
            job = SlicedReplay(live, s)
            job.advance(1)
            live.append(Message("late", "user", 5))
            live[0] = Message("swapped", "user", 500)
            got = job.finish()
        assert_same(got, replay(msgs, s))
        assert job.total == 60
    with pytest.raises(TypeError) as direct:
        replay(iter(msgs), HistorySettings(10))
    with pytest.raises(TypeError, match="^messages must be a sequence .*list_iterator"):
        SlicedReplay(iter(msgs), HistorySettings(10))
    assert str(direct.value).startswith("messages must be a sequence")


def test_an_abandoned_job_leaves_no_cycle():
    """A partial job dropped (a dashboard cache evicting it) frees its History at once, without the
    cyclic GC: History's loop with a summarizer closed a cycle through its record sink, which
    only a full collection found (the slices had moved it to the oldest generation)."""
    msgs = generate_conversation(400, seed=19).messages
    s = HistorySettings(900, summary_budget=150)
    from convmem.history import History

    def histories() -> int:
        return sum(1 for o in gc.get_objects() if isinstance(o, History))

    gc.collect()
    gc.disable()
    try:
        start = histories()
        with mock.patch.object(replay_module, "PAUSE_EVERY", 50):
            job = SlicedReplay(msgs, s, count_tokens=words)
            job.advance(60)
        assert histories() == start + 1
        del job
        assert histories() == start
    finally:
        gc.enable()


def test_two_threads_pausing_the_gc_leave_it_on():
    """Thread A's slice pauses the GC; the main thread's slice of another job starts meanwhile and
    A's ends between the main thread's reading the GC's state and its turning it off. Each caller
    restoring what it read left the GC off for good (A turned it on, the main thread had read
    "off"); pauses that overlap share one, and the last to end turns it back on."""
    inside, go = threading.Event(), threading.Event()

    def blocking_words(text: str) -> int:
        if not inside.is_set():
            inside.set()
            go.wait(10)
        return words(text)

    msgs = generate_conversation(200, seed=23).messages
    s = HistorySettings(700, summary_budget=100)  # a custom counter: History's loop calls it
    job_a = SlicedReplay(msgs, s, count_tokens=blocking_words)
    job_b = SlicedReplay(msgs, HistorySettings(700, pin_system=True))
    a = threading.Thread(target=job_a.finish)
    real_disable = gc.disable

    def disable_after_a_ends() -> None:
        if threading.current_thread() is threading.main_thread() and inside.is_set() and not go.is_set():
            go.set()
            a.join(10)
        real_disable()

    assert gc.isenabled()
    try:
        with mock.patch.object(gc, "disable", disable_after_a_ends):
            a.start()
            assert inside.wait(10)
            job_b.finish()
            go.set()
            a.join(10)
        assert gc.isenabled()
    finally:
        gc.enable()
    assert_same(job_a.result(), reference_replay(msgs, s, words, None, None))


def test_an_interruption_after_the_last_slice_keeps_the_replay():
    """KeyboardInterrupt while the last slice's GC pause ends (the Replay made): it propagates,
    the job stays done with its Replay (setting it back called the start it had let go: a
    TypeError hid the interruption), and the GC is back on."""
    msgs = generate_conversation(50, seed=29).messages
    s = HistorySettings(300, pin_latest_user=True)
    job = SlicedReplay(msgs, s)
    gc_module = importlib.import_module("convmem._gc")

    def interrupted() -> None:
        raise KeyboardInterrupt

    assert gc.isenabled()
    try:
        with mock.patch.object(gc_module, "promote_young", interrupted):
            with pytest.raises(KeyboardInterrupt):
                job.advance(100)
        assert gc.isenabled()
    finally:
        gc.enable()
    assert job.done and job.added == 50
    assert_same(job.result(), replay(msgs, s))


def tool_turns(n: int) -> list[Message]:
    """User, assistant calling one tool, its 30-token result, assistant: ``n`` messages."""
    out = []
    for i in range(n):
        if i % 4 == 0:
            out.append(Message(f"u{i}", "user", 10, content="hello world"))
        elif i % 4 == 1:
            out.append(Message(f"a{i}", "assistant", 10, content="calling", tool_call_ids=(f"c{i}",)))
        elif i % 4 == 2:
            out.append(Message(f"t{i}", "tool", 30, content="result " * 10, tool_call_id=f"c{i - 1}"))
        else:
            out.append(Message(f"a{i}", "assistant", 10, content="ok"))
    return out


def test_the_tool_names_and_thinking_are_taken_as_they_are_when_the_job_is_made():
    """Break24: the caller's tool_names and thinking mappings were read as the slices ran, so a
    mapping changed between slices (cleared here) changed the replay: clearing kept the excluded
    tool's results of the later slices (9 clearings instead of none)."""
    msgs = tool_turns(40)
    s = HistorySettings(60, clear_trigger=50, clear_keep=1, exclude_tools=("keep",), clear_thinking_keep=0)
    names = {f"c{i}": "keep" for i in range(1, 40, 4)}
    thinking = {f"a{i}": 6 for i in range(3, 40, 4)}
    want = replay(msgs, s, tool_names=dict(names), thinking=dict(thinking))
    with mock.patch.object(replay_module, "PAUSE_EVERY", 2):
        job = SlicedReplay(msgs, s, tool_names=names, thinking=thinking)
        job.advance(1)
        names.clear()
        thinking.clear()
        got = job.finish()
    assert_same(got, want)
    assert (want.stats.clearings, want.stats.messages_cleared) == (10, 10)  # thinking only: the tools are excluded


def test_advance_called_from_inside_its_own_slice_raises_instead_of_hanging():
    """Break24: a token counter (or summarizer) calling the job's advance() from inside a slice
    waited for ever on the job's own lock. It is a RuntimeError now, which the replay meets as
    its counter's error (kept: every later call raises it); another thread still takes turns."""
    msgs = tool_turns(40)
    s = HistorySettings(60, summary_budget=20, pin_system=True)  # History's loop with a summarizer
    seen: list[str] = []
    job_box: list[SlicedReplay] = []

    def reentering(text: str) -> int:
        if job_box:
            try:
                job_box.pop().advance(1)
            except RuntimeError as exc:
                seen.append(str(exc))
                raise
        return len(text.split())

    with mock.patch.object(replay_module, "PAUSE_EVERY", 2):
        job = SlicedReplay(msgs, s, count_tokens=reentering)
        job_box.append(job)
        done = threading.Event()
        outcome: list[BaseException] = []

        def run() -> None:
            try:
                job.finish()
            except BaseException as exc:  # the outcome, checked below
                outcome.append(exc)
            done.set()

        threading.Thread(target=run, daemon=True).start()
        assert done.wait(30), "advance() from inside its own slice hung"
    assert seen == ["advance() was called from inside its own slice (by the token counter or summarizer)"]
    assert isinstance(outcome[0], Exception) and seen[0] in str(outcome[0])
    with pytest.raises(Exception, match=re.escape(seen[0])):
        job.advance(1)
    assert job.done
