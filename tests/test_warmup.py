"""convmem_dashboard.warmup: a page's modules load under its question; the token counter is built
after the first view's run, once."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from convmem_dashboard import warmup

ROOT = Path(__file__).resolve().parent.parent


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
    monkeypatch.setattr(warmup, "counter_built", lambda: False)
    monkeypatch.setattr(warmup, "missing_modules", lambda modules: [])
    monkeypatch.setattr(warmup, "_build_default_counter", lambda: built.append(threading.current_thread().name))
    warmup.warm_up("Token budget")  # the main thread: nothing to wait for, nothing started
    assert warmup._COUNTER_LOADER == []
    script = threading.Thread(target=warmup.warm_up, args=("Token budget",), name="ScriptRunner.scriptThread")
    script.start()
    script.join(timeout=10)
    assert len(warmup._COUNTER_LOADER) == 1
    warmup._COUNTER_LOADER[0].join(timeout=10)
    assert built == ["convmem-counter-loader"]


def test_warm_up_starts_no_loader_once_the_counter_is_built(fresh_process, monkeypatch):
    """The launcher builds the counter before the server listens: the first view's run then starts
    no thread (starting one waited 0.03-0.08 s for the interpreter lock in a cold Home)."""
    from convmem.tokens import default_counter

    monkeypatch.setattr(warmup, "missing_modules", lambda modules: [])
    default_counter.cache_clear()
    assert warmup.counter_built() is False
    default_counter()
    assert warmup.counter_built() is True
    script = threading.Thread(target=warmup.warm_up, args=("Home",), name="ScriptRunner.scriptThread")
    script.start()
    script.join(timeout=10)
    assert warmup._COUNTER_LOADER == []


def test_counter_built_imports_nothing():
    """warm_up runs before convmem is imported under plain ``streamlit run``: the check must not
    import it (that import is what warm_up draws its spinner for)."""
    code = ("import sys; from convmem_dashboard import warmup; "
            "print(warmup.counter_built(), 'convmem.tokens' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


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


def test_page_modules_reads_the_top_level_imports_in_order(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    page = tmp_path / "page.py"
    page.write_text(
        "import os.path, json\n"
        "from pkg import mod as m, sub, attr\n"  # a module, a package, an attribute
        "from pkg.mod import thing\n"
        "from . import sibling\n"  # relative: left out
        "import json\n"  # once
        "def f():\n    import csv\n"  # not top level: left out
    )
    assert warmup.page_modules(page, tmp_path) == ("os.path", "json", "pkg", "pkg.mod", "pkg.sub")


PAGE_FILES = sorted((ROOT / "app_pages").glob("*.py"))


def test_every_page_file_is_checked():
    assert [p.stem for p in PAGE_FILES] == ["agent_session", "flaky_store", "home", "listing_eviction", "token_budget",
                                              "your_data"]


@pytest.mark.parametrize("page", PAGE_FILES, ids=lambda p: p.stem)
def test_page_modules_of_each_page_are_importable_modules(page):
    names = warmup.page_modules(page)
    assert "streamlit" in names and any(n.startswith("convmem_dashboard.") for n in names)
    for name in names:
        assert __import__("importlib").import_module(name).__name__ == name
    assert "convmem_dashboard.data.current_dataset" not in names  # a function, not a module


def test_token_budget_page_modules():
    names = warmup.page_modules(ROOT / "app_pages" / "token_budget.py")
    assert names.index("convmem_dashboard.cache_budget") < names.index("convmem_dashboard.clearing_view")  # file order
    assert {"convmem_dashboard.clearing_view", "convmem_dashboard.panel_cost", "convmem_dashboard.data"} <= set(names)


def _warm_up_script(module: str) -> None:
    import streamlit as st

    from convmem_dashboard.warmup import warm_up

    slot = warm_up("Test page", "What does the page answer?", ("json", module))
    st.text(f"slot: {slot is not None}")
    if slot is not None:
        st.text("data picker ran")  # drawn under the question, as dashboard.py's picker
        slot.empty()
    st.markdown("Page body")


def test_warm_up_shows_the_question_while_a_module_is_missing_then_nothing(tmp_path, monkeypatch, fresh_process):
    module = "convmem_warmup_probe"
    (tmp_path / f"{module}.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    at = AppTest.from_function(_warm_up_script, args=(module,), default_timeout=30).run()
    assert not at.exception
    assert module in sys.modules
    assert [t.value for t in at.text] == ["slot: True", "data picker ran"]
    # the question was drawn, then emptied by the caller: only the page's markdown is left
    assert [m.value for m in at.markdown] == ["Page body"]
    at.run()  # the module is imported now: nothing drawn, no slot
    assert not at.exception
    assert [t.value for t in at.text] == ["slot: False"]
    assert [m.value for m in at.markdown] == ["Page body"]


def test_warm_up_keeps_the_question_in_its_slot(tmp_path, monkeypatch, fresh_process):
    module = "convmem_warmup_probe_kept"
    (tmp_path / f"{module}.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)

    def script(name: str) -> None:
        from convmem_dashboard.warmup import warm_up

        warm_up("Test page", "What does the page answer?", (name,))

    at = AppTest.from_function(script, args=(module,), default_timeout=30).run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["**What does the page answer?**"]
    assert at.get("spinner") == []  # the spinner is gone once the imports are done


def test_a_rerun_that_is_still_starting_is_waited_for_not_joined(fresh_process, monkeypatch):
    """threading.enumerate() lists a thread from start() on, but join() refuses it until it
    runs: the loader died on such a rerun ("cannot join thread before it is started", session
    21's benchmark) and the counter was never built in idle time."""
    from convmem_dashboard import idle_lines

    first, release = _held_run()
    starting = threading.Thread(target=lambda: None, name=first.name)  # listed, never started
    real = threading.enumerate
    served, mine = [], []

    def listed() -> list:  # this loader's first look finds the starting rerun; every other call is real
        if threading.current_thread() in mine and not served:
            served.append(starting)
            return [starting]
        return real()

    monkeypatch.setattr(idle_lines.threading, "enumerate", listed)
    built = []
    loader = warmup.load_counter_after(first, lambda: built.append(True))
    mine.append(loader)  # before the run ends: the loader is still waiting for it
    release.set()
    loader.join(timeout=10)
    assert served and built == [True] and not loader.is_alive()
