"""convmem_dashboard.warmup: the token counter is built after the first view's run, once."""

from __future__ import annotations

import threading

import pytest

from convmem_dashboard import warmup


@pytest.fixture
def fresh_process(monkeypatch):
    """No loader started yet (as in a new server process); a short quiet period."""
    monkeypatch.setattr(warmup, "_COUNTER_LOADER", [])
    monkeypatch.setattr(warmup, "QUIET_S", 0.05)


def _held_run(name: str = "ScriptRunner.scriptThread") -> tuple[threading.Thread, threading.Event]:
    release = threading.Event()
    run = threading.Thread(target=release.wait, name=name, daemon=True)  # a failed test does not hang
    run.start()
    return run, release


def test_the_counter_is_built_only_after_the_run_ended(fresh_process):
    run, release = _held_run()
    built = []
    loader = warmup.load_counter_after(run, lambda: built.append(run.is_alive()))
    loader.join(timeout=0.2)
    assert loader.is_alive() and built == []  # still waiting for the view's run
    release.set()
    loader.join(timeout=10)
    assert built == [False]  # built once, the run over
    assert not loader.is_alive()


def test_a_second_run_of_the_first_view_is_waited_for_too(fresh_process):
    """The browser's rerun after the first view runs in a new script thread: the counter waits
    for it, and for a quiet period after it."""
    first, release_first = _held_run()
    built = []
    loader = warmup.load_counter_after(first, lambda: built.append(second.is_alive()))
    release_first.set()
    first.join()
    second, release_second = _held_run()  # within the quiet period
    other, release_other = _held_run("some other thread")  # not a script thread: not waited for
    loader.join(timeout=0.5)
    assert loader.is_alive() and built == []
    release_second.set()
    loader.join(timeout=10)
    assert built == [False] and other.is_alive()
    release_other.set()


def test_one_loader_per_process(fresh_process):
    run, release = _held_run()
    built = []
    first = warmup.load_counter_after(run, lambda: built.append(1))
    second = warmup.load_counter_after(threading.main_thread(), lambda: built.append(2))
    assert second is first
    release.set()
    first.join(timeout=10)
    assert built == [1]
    assert warmup._COUNTER_LOADER == [first]


def test_warm_up_starts_the_loader_from_a_script_thread_only(fresh_process, monkeypatch):
    built = []
    monkeypatch.setattr(warmup, "missing_modules", lambda: [])
    monkeypatch.setattr(warmup, "_build_default_counter", lambda: built.append(threading.current_thread().name))
    warmup.warm_up("Token budget")  # the main thread: nothing to wait for, nothing started
    assert warmup._COUNTER_LOADER == []
    script = threading.Thread(target=warmup.warm_up, args=("Token budget",), name="ScriptRunner.scriptThread")
    script.start()
    script.join(timeout=10)
    assert len(warmup._COUNTER_LOADER) == 1
    warmup._COUNTER_LOADER[0].join(timeout=10)
    assert built == ["convmem-counter-loader"]


def test_a_missing_rank_file_is_left_to_the_view_that_needs_the_counter(monkeypatch):
    import convmem.tokens as tk

    calls = []

    def unavailable():
        calls.append(1)
        raise tk.EncodingUnavailableError("no cl100k_base rank file")

    monkeypatch.setattr(tk, "default_counter", unavailable)
    assert warmup._build_default_counter() is None
    assert calls == [1]


def test_the_default_counter_is_built(monkeypatch):
    import convmem.tokens as tk

    tk.default_counter.cache_clear()
    warmup._build_default_counter()
    assert tk.default_counter.cache_info().currsize == 1
    assert tk.default_counter().name == "cl100k_base"
