"""Summary lines counted ahead (ExtractiveSummarizer.warm) and in idle time (convmem_dashboard.idle_lines).

The first replay with summaries counts one line per message; warming makes and counts them before
(the dashboard does it while summaries are off, between script runs). A warmed replay must be
the same replay and must count no line again; the idle worker must never count while a script
run is alive.
"""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict

import pytest

from convmem import ExtractiveSummarizer, HistorySettings, Message, replay
from convmem.synthetic import generate_conversation
from convmem.tokens import TiktokenCounter
from convmem_dashboard import idle_lines
from test_replay_reference import assert_same


def fresh(n: int, seed: int) -> list[Message]:
    """New message objects (the line cache is keyed by object identity)."""
    return list(generate_conversation(n, seed=seed).messages)


def test_a_warmed_replay_is_the_same_replay_and_counts_no_line(monkeypatch):
    cold, warm = fresh(3_000, 41), fresh(3_000, 41)
    s = HistorySettings.all_policies(3_000, None, 300)
    want = replay(cold, s)
    assert ExtractiveSummarizer(max_tokens=0).warm(warm) == 3_000
    assert ExtractiveSummarizer(max_tokens=0).warm(warm) == 0  # all cached now

    def no_batch_counts(self, texts):
        raise AssertionError(f"a warmed replay counted {len(list(texts))} lines")

    monkeypatch.setattr(TiktokenCounter, "count_texts", no_batch_counts)
    got = replay(warm, s)
    assert got.stats.summaries_accepted > 10
    assert_same(got, want)


def test_warm_with_a_counter_that_is_not_convmems_shares_nothing():
    msgs = fresh(50, 42)
    assert ExtractiveSummarizer(max_tokens=0, count_tokens=len).warm(msgs) == 0


@pytest.fixture
def idle(monkeypatch):
    """A fresh worker state (as in a new server process), short quiet period and threshold."""
    monkeypatch.setattr(idle_lines, "_QUEUE", queue.SimpleQueue())
    monkeypatch.setattr(idle_lines, "_QUEUED", OrderedDict())
    monkeypatch.setattr(idle_lines, "_WORKER", [])
    monkeypatch.setattr(idle_lines, "QUIET_S", 0.05)
    monkeypatch.setattr(idle_lines, "MIN_MESSAGES", 100)
    monkeypatch.setattr(idle_lines, "BATCH", 64)


def uncounted(msgs) -> int:
    """How many of ``msgs`` have no line in the default counter's line cache (read only)."""
    from convmem.summarizers import _cached_lines, _own_counter_memo, _default_count

    cache = _cached_lines((120, id(_own_counter_memo(_default_count()))))
    return sum(id(m) not in cache for m in msgs)


def in_a_script_thread(fn):
    """Run ``fn`` in a thread named as Streamlit's script threads; return (thread, release event)."""
    release = threading.Event()
    out = {}

    def body():
        out["value"] = fn()
        release.wait(timeout=30)

    t = threading.Thread(target=body, name="ScriptRunner.scriptThread", daemon=True)
    t.start()
    return t, release, out


def wait_until(done, tries: int = 200, pause: float = 0.05) -> None:
    """Poll ``done()`` until it is true (at most ``tries`` times, ``pause`` s apart); no fixed sleep."""
    for _ in range(tries):
        if done():
            return
        threading.Event().wait(pause)


def warm_raising_on(monkeypatch, broken, error: Exception) -> None:
    """ExtractiveSummarizer.warm raises ``error`` for a batch of ``broken``, warms others as before."""
    real_warm = ExtractiveSummarizer.warm

    def warm(self, messages):
        if messages and messages[0] is broken[0]:
            raise error
        return real_warm(self, messages)

    monkeypatch.setattr(ExtractiveSummarizer, "warm", warm)


def test_the_worker_counts_only_once_no_script_runs(idle):
    msgs = fresh(300, 43)
    run, release, out = in_a_script_thread(lambda: idle_lines.warm_later("d/c", msgs))
    threading.Event().wait(0.4)  # the run is still alive: nothing may be counted
    assert out["value"] is True
    assert uncounted(msgs) == 300
    release.set()
    run.join(timeout=10)
    worker = idle_lines._WORKER[0]
    wait_until(lambda: uncounted(msgs) == 0)
    assert uncounted(msgs) == 0
    assert worker.is_alive()  # one worker per process, waiting for the next conversation


def test_a_conversation_is_queued_once_and_short_ones_never(idle):
    long, short = fresh(150, 44), fresh(50, 45)
    assert idle_lines.warm_later("d/long", long) is True
    assert idle_lines.warm_later("d/long", long) is False
    assert idle_lines.warm_later("d/short", short) is False
    assert list(idle_lines._QUEUED) == ["d/long"]


def test_wait_for_quiet_waits_for_every_run_and_a_quiet_period_after_it(idle):
    naps = []
    release = threading.Event()
    run = threading.Thread(target=lambda: release.wait(timeout=30), name="ScriptRunner.scriptThread", daemon=True)
    run.start()
    waiter = threading.Thread(target=lambda: idle_lines.wait_for_quiet("ScriptRunner.scriptThread", 0.01, naps.append))
    waiter.start()
    waiter.join(timeout=0.3)
    assert waiter.is_alive() and naps == []  # the run is alive: no quiet period has started
    release.set()
    waiter.join(timeout=10)
    assert not waiter.is_alive() and naps == [0.01]


def test_the_worker_outlives_a_counter_that_cannot_load(idle, monkeypatch):
    """A server without its rank file (or tiktoken): warm raises what the default counter raises.
    The worker must skip that conversation and keep serving the queue; a dead worker would leave
    every later conversation queued for good (uncounted, and referenced by the queue after its
    dataset is evicted)."""
    from convmem.tokens import EncodingUnavailableError

    broken, later = fresh(150, 46), fresh(150, 47)
    warm_raising_on(monkeypatch, broken, EncodingUnavailableError("no rank file for cl100k_base (test)"))
    assert idle_lines.warm_later("d/broken", broken) is True
    worker = idle_lines._WORKER[0]
    wait_until(lambda: idle_lines._QUEUE.empty())
    threading.Event().wait(0.2)  # the broken conversation has been taken and tried
    assert idle_lines.warm_later("d/later", later) is True
    wait_until(lambda: uncounted(later) == 0)
    assert uncounted(later) == 0
    assert uncounted(broken) == 150
    assert idle_lines._WORKER[0].is_alive() and idle_lines._WORKER == [worker]


def test_a_worker_ended_by_an_unexpected_error_is_started_again(idle, monkeypatch):
    broken, later = fresh(150, 48), fresh(150, 49)
    warm_raising_on(monkeypatch, broken, RuntimeError("unexpected (test)"))
    monkeypatch.setattr(threading, "excepthook", lambda args: None)  # the worker's end, expected here
    assert idle_lines.warm_later("d/broken", broken) is True
    first = idle_lines._WORKER[0]
    first.join(timeout=10)
    assert not first.is_alive()
    assert idle_lines.warm_later("d/later", later) is True
    wait_until(lambda: uncounted(later) == 0)
    assert uncounted(later) == 0
    assert idle_lines._WORKER[0] is not first and idle_lines._WORKER[0].is_alive()


def test_the_worker_keeps_no_conversation_once_counted(idle):
    """After its lines are counted, a conversation is referenced by nothing of the worker's (its
    dataset may be evicted: the worker must not keep it alive while it waits for the next one)."""
    import gc
    import weakref

    class Conversation(list):  # a list subclass can be weakly referenced
        pass

    conv = Conversation(fresh(150, 50))
    gone = weakref.ref(conv)
    assert idle_lines.warm_later("d/evicted", conv) is True
    wait_until(lambda: uncounted(conv) == 0)
    assert uncounted(conv) == 0
    del conv
    for _ in range(200):  # the worker ends its batch and waits on the queue again
        gc.collect()
        if gone() is None:
            break
        threading.Event().wait(0.05)
    assert gone() is None


def test_wait_for_quiet_waits_out_a_run_that_is_still_starting(idle, monkeypatch):
    """threading.enumerate() lists a thread from start() on (threading's "limbo"), but join()
    raises RuntimeError until it runs: the worker died on it for good (bench_pages, session 20).
    A starting run counts as busy: a quiet period, then the check again."""
    starting = threading.Thread(target=lambda: None, name="ScriptRunner.scriptThread")  # never started
    seen = iter([[starting], []])
    monkeypatch.setattr(idle_lines.threading, "enumerate", lambda: next(seen))
    naps = []
    idle_lines.wait_for_quiet("ScriptRunner.scriptThread", 0.01, naps.append)
    assert naps == [0.01]
