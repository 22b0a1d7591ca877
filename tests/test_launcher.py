"""python -m convmem_dashboard (convmem_dashboard/__main__.py): what the server imports before it
listens, so that a cold first view imports nothing (issue 10 item 3)."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

import convmem_dashboard.__main__ as launcher
from convmem_dashboard.warmup import HEAVY_MODULES

ROOT = Path(__file__).resolve().parent.parent


def test_dashboard_modules_are_warm_ups_then_the_entry_then_each_page_in_name_order_once(tmp_path):
    (tmp_path / "b_page.py").write_text("import json\nfrom convmem_dashboard import data\nimport os.path\n")
    (tmp_path / "a_page.py").write_text("import streamlit as st\nimport json\nfrom convmem import FormatError\n")
    (tmp_path / "notes.txt").write_text("import nothing")
    entry = tmp_path / "entry.py"
    entry.write_text("import streamlit as st\nfrom convmem_dashboard.questions import QUESTIONS\n")
    names = launcher.dashboard_modules(tmp_path, entry)
    assert names == (*HEAVY_MODULES, "streamlit", "convmem_dashboard.questions", "json", "convmem",
                     "convmem_dashboard", "os.path")


def test_dashboard_modules_of_the_real_dashboard():
    names = launcher.dashboard_modules()
    assert len(names) == len(set(names))
    assert names[: len(HEAVY_MODULES)] == HEAVY_MODULES
    # dashboard.py's own, Home's and another page's modules
    assert {"convmem_dashboard.gc_tuning", "convmem_dashboard.warmup", "convmem_dashboard.url_params",
            "convmem_dashboard.view_home", "convmem_dashboard.db_panel", "convmem_dashboard.selection",
            "convmem_dashboard.cache_budget", "convmem_dashboard.figures_store"} <= set(names)


def test_streamlit_first_run_modules_are_all_in_the_pinned_streamlit():
    assert launcher.streamlit_first_run() == launcher.STREAMLIT_FIRST_RUN


def test_a_streamlit_without_one_of_them_still_starts(monkeypatch):
    monkeypatch.setattr(launcher, "STREAMLIT_FIRST_RUN",
                        ("streamlit.no_such_module", "streamlit.emojis", "streamlit.no_such_package.module"))
    assert launcher.streamlit_first_run() == ("streamlit.emojis",)


def test_the_cache_warning_is_muted_inside_the_block_only():
    logger = logging.getLogger(launcher._CACHE_DATA_LOGGER)
    before = logger.level
    with pytest.raises(RuntimeError):
        with launcher._cache_params_warnings_muted():
            assert not logger.isEnabledFor(logging.WARNING) and logger.isEnabledFor(logging.ERROR)
            raise RuntimeError("an import failed")
    assert logger.level == before


PRELOADED = """
import os, sys, threading
import convmem_dashboard.__main__ as launcher
from convmem_dashboard.warmup import HEAVY_MODULES, missing_modules, page_modules
if sys.argv[1:] == ["--no-module-files"]:
    launcher.warm_module_files = lambda: None
fresh = [m for m in ("convmem_dashboard.view_home", "streamlit.emojis") if m in sys.modules]
launcher.preload()
missing = [missing_modules((*HEAVY_MODULES, *page_modules(p))) for p in
           (launcher.DASHBOARD, *sorted(launcher.PAGES_DIR.glob("*.py")))]
from convmem.tokens import default_counter
# the REPL check a first view's first element makes, from a thread as a script run: how many
# module paths it resolves
resolved, realpath = [], os.path.realpath
os.path.realpath = lambda *a, **k: resolved.append(1) or realpath(*a, **k)
from streamlit.env_util import is_repl
check = threading.Thread(target=is_repl, name="ScriptRunner.scriptThread")
check.start(); check.join()
os.path.realpath = realpath
import gc
print(fresh, missing, [m for m in launcher.STREAMLIT_FIRST_RUN if m not in sys.modules],
      default_counter.cache_info().currsize, gc.get_freeze_count(), len(sys.modules), len(resolved))
"""


def _preloaded(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PRELOADED, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "No runtime found" not in done.stderr and "WARNING" not in done.stderr, done.stderr
    return done.stdout.strip().rsplit(" ", 3)


def test_after_the_preload_no_page_imports_anything_and_nothing_warned():
    """In a new process (this one imported everything already): before the preload neither Home's
    view module nor the emoji catalog is in; after it, warm_up finds nothing missing for
    dashboard.py or any page (it draws no spinner), and no cache warning went to the console.
    The REPL check of a first view's first element then resolves only the path of a few modules
    (its first call resolves every module's: about 1,450 here, 0.22 s of a cold Home's run)."""
    head, frozen, modules, resolved = _preloaded()
    assert head == "[] [[], [], [], [], [], [], []] [] 1"  # every page (6) and dashboard.py; the token counter built too
    assert int(modules) > 1000 and int(resolved) <= 20, (modules, resolved)
    # nothing left frozen: convmem's loads and replays move what they made to the oldest
    # generation only while nothing else is frozen (convmem._gc.promote_young)
    assert frozen == "0"


def test_without_the_module_files_warmed_the_first_view_would_resolve_every_module():
    """The control for the test above: the same preload without warm_module_files leaves the
    first REPL check to resolve the path of (nearly) every loaded module."""
    _, _, modules, resolved = _preloaded("--no-module-files")
    assert int(resolved) > int(modules) // 2, (modules, resolved)


def test_a_missing_encoding_does_not_stop_the_server(monkeypatch):
    from convmem import tokens

    def unavailable():
        raise tokens.EncodingUnavailableError("no cl100k_base file")

    monkeypatch.setattr(tokens, "default_counter", unavailable)
    assert launcher.warm_default_counter() is False


def test_the_server_runs_no_full_collection_after_each_script_run():
    """.streamlit/config.toml turns off Streamlit's ``gc.collect(2)`` after every run (0.3-0.56 s
    holding the interpreter lock with a 10^5-message replay cached, session 24): checked as
    Streamlit itself reads the file, from the root the README's command is run in."""
    code = "from streamlit import config; print(config.get_option('runner.postScriptGC'))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


#: Statements Streamlit's magic would write: a bare expression that is not a call, a yield, an
#: await or a docstring (streamlit/runtime/scriptrunner/magic.py, Streamlit 1.67).
def _magic_writes(path: Path) -> list[int]:
    import ast

    lines = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for i, stmt in enumerate(body):
                if not isinstance(stmt, ast.Expr) or isinstance(
                    stmt.value, (ast.Call, ast.Yield, ast.YieldFrom, ast.Await)
                ):
                    continue
                docstring = (i == 0 and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
                             and isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)))
                if not docstring:
                    lines.append(stmt.lineno)
    return lines


def test_magic_is_off_and_no_page_relies_on_it(tmp_path):
    """.streamlit/config.toml turns Streamlit's magic off (its AST pass took 7-29 ms per page,
    once per process): no page may then hold a bare expression it meant to show. The scan finds
    one where magic would write it (checked on a file that has one)."""
    code = "from streamlit import config; print(config.get_option('runner.magicEnabled'))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    for page in (launcher.DASHBOARD, *sorted(launcher.PAGES_DIR.glob("*.py"))):
        assert _magic_writes(page) == [], page
    sample = tmp_path / "page.py"
    sample.write_text('"""Doc."""\nimport streamlit as st\nst.title("x")\nif True:\n    "shown by magic"\n')
    assert _magic_writes(sample) == [5]


def test_warm_default_data_fills_the_caches_a_first_view_reads(monkeypatch):
    """The bundled sample and its conversation choices are cached before the first view: that
    view reads neither the file nor groups the conversations again."""
    import streamlit as st

    from convmem_dashboard import data, selection

    st.cache_data.clear()
    st.cache_resource.clear()
    launcher.warm_default_data()
    calls = []
    monkeypatch.setattr(data, "load_conversations", lambda *a, **k: calls.append(a) or ())
    monkeypatch.setattr(selection, "group_by_user", lambda *a: calls.append(a) or {})
    choices = selection.choices_of("sample")
    assert calls == [] and len(choices.ids) > 1 and choices.default in choices.ids


def _paths_a_first_view_resolves(page: Path) -> int:
    """How many module paths Streamlit's REPL check (``env_util.is_repl``: ``inspect.stack()``)
    resolves when it runs from a script run's frame, the page file ``page`` (which no module has)."""
    import os

    resolved, realpath = [], os.path.realpath
    code = compile("from streamlit.env_util import is_repl\nis_repl()\n", str(page), "exec")
    os.path.realpath = lambda *a, **k: resolved.append(a[0]) or realpath(*a, **k)
    try:
        exec(code, {"__name__": "__page__"})
    finally:
        os.path.realpath = realpath
    return len(resolved)


def _warm_in_a_thread() -> None:
    """warm_module_files as the launcher's warming thread runs it: from a thread whose stack holds
    only modules' frames (threading, the launcher)."""
    import threading

    thread = threading.Thread(target=launcher.warm_module_files, name="convmem-warm-module-files")
    thread.start()
    thread.join(60)


def _import_new_modules(tmp_path: Path, monkeypatch, prefix: str, n: int = 3) -> None:
    import importlib

    monkeypatch.syspath_prepend(str(tmp_path))
    for i in range(n):
        (tmp_path / f"{prefix}{i}.py").write_text("VALUE = 1\n")
        importlib.import_module(f"{prefix}{i}")


def test_a_second_warm_resolves_the_modules_imported_since_the_first(tmp_path, monkeypatch):
    """The server's start imports 130-170 modules after the preload's warm (uvicorn, starlette,
    websockets, anyio). The warm run once the server runs must resolve their paths, so that the
    first view's REPL check resolves none (session 27: calling ``is_repl()`` again from the
    warming thread walked nothing, its frames being known, and left 0.15 s to the first view)."""
    page = tmp_path / "page.py"
    page.write_text("from streamlit.env_util import is_repl\nis_repl()\n")
    _warm_in_a_thread()
    _import_new_modules(tmp_path, monkeypatch, "convmem_warm_probe_a")
    _warm_in_a_thread()  # the second warm, from the same call site as the first
    assert _paths_a_first_view_resolves(page) == 0


def test_without_a_second_warm_the_first_view_resolves_the_new_modules(tmp_path, monkeypatch):
    """The control for the test above: modules imported after the last warm are resolved by the
    first view's REPL check, one path each at least."""
    page = tmp_path / "page.py"
    page.write_text("from streamlit.env_util import is_repl\nis_repl()\n")
    _warm_in_a_thread()
    _import_new_modules(tmp_path, monkeypatch, "convmem_warm_probe_b")
    assert _paths_a_first_view_resolves(page) >= 3


class _FakeRuntime:
    """Streamlit's Runtime as warm_module_files_when_serving reads it: exists() and
    instance().state, started after ``start_after`` polls."""

    def __init__(self, start_after: int) -> None:
        self.polls = 0
        self.start_after = start_after

    def exists(self) -> bool:
        self.polls += 1
        return self.polls > self.start_after

    def instance(self):
        from streamlit.runtime.runtime import RuntimeState

        return type("R", (), {"state": RuntimeState.NO_SESSIONS_CONNECTED})()


def test_module_files_are_warmed_again_once_the_server_runs(monkeypatch):
    from streamlit.runtime import runtime

    fake = _FakeRuntime(start_after=3)
    monkeypatch.setattr(runtime, "Runtime", fake)
    warmed = []
    monkeypatch.setattr(launcher, "warm_module_files", lambda: warmed.append(fake.polls))
    launcher.warm_module_files_when_serving(timeout_s=10, poll_s=0.001).join(10)
    assert warmed == [4]  # once, at the first poll that found the runtime started


def test_a_server_that_never_starts_is_given_up(monkeypatch):
    from streamlit.runtime import runtime

    fake = _FakeRuntime(start_after=10**9)
    monkeypatch.setattr(runtime, "Runtime", fake)
    warmed = []
    monkeypatch.setattr(launcher, "warm_module_files", lambda: warmed.append(1))
    thread = launcher.warm_module_files_when_serving(timeout_s=0.05, poll_s=0.001)
    thread.join(5)
    assert not thread.is_alive() and warmed == [] and fake.polls > 1
