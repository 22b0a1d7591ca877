"""The first view after the server started: the libraries the pages need load under a spinner.

A freshly started server has imported Streamlit (and plotly, which Streamlit imports) but not
pandas, numpy and pyarrow, which every page's tables need: about 1-1.4 s on a loaded 2-core
machine, the largest part of a cold first view of the bundled sample (benchmarks/bench_cold.py).
Imported inside a page, they hold the page back with nothing on screen; dashboard.py calls
:func:`warm_up` before the page runs, so that wait shows the page's question and a spinner with
the elapsed time instead (issue 10 item 3: progress, never blank placeholders). Both go once the
modules are in; the page then draws itself. Later views find the modules imported and pay
nothing (a ``sys.modules`` lookup per module).

The token counter is loaded the same way, once per server but off every view: its rank file
(cl100k_base, 0.1-0.3 s) is needed only by the first replay with summaries (and by data that
carries no token counts), so :func:`warm_up` hands it to a background thread that waits until the
first view's script run has ended (:func:`load_counter_after`): the cold first view does not pay
it, nor does the first toggle of "Summaries" that comes after it.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Callable

import streamlit as st

__all__ = ["HEAVY_MODULES", "load_counter_after", "missing_modules", "warm_up"]

#: Modules every page imports (directly or through convmem_dashboard's table builders) whose first
#: import is slow, in import order.
HEAVY_MODULES = ("numpy", "pandas", "plotly.graph_objects")


def missing_modules(modules=HEAVY_MODULES, loaded=None) -> list[str]:
    """The ones of ``modules`` not imported yet (``loaded``: a ``sys.modules``-like mapping).

    >>> missing_modules(("numpy", "pandas"), loaded={"numpy": object()})
    ['pandas']
    >>> missing_modules(("numpy",), loaded={"numpy": object()})
    []
    """
    loaded = sys.modules if loaded is None else loaded
    return [m for m in modules if m not in loaded]


_COUNTER_LOADER: list[threading.Thread] = []  # the one loader thread of the process, once started
#: Seconds with no script thread alive before the counter is built (after the first view's runs).
QUIET_S = 1.0
_LOADER_LOCK = threading.Lock()


def _build_default_counter() -> None:
    """Build convmem's default counter (loads its rank file). A missing rank file or tiktoken is
    left for the view that needs the counter to report (it raises there)."""
    from convmem.tokens import EncodingUnavailableError, default_counter

    try:
        default_counter()
    except (EncodingUnavailableError, ImportError):
        return


def _wait_for_quiet(run: threading.Thread) -> None:
    """Return once ``run`` has ended and no thread of its name (Streamlit's script threads are all
    "ScriptRunner.scriptThread") has been alive for :data:`QUIET_S` seconds: a first view may take
    a second run in a new thread (the browser's rerun after the first), which must not share the
    machine with the loader."""
    while True:
        run.join()
        time.sleep(QUIET_S)
        busy = [t for t in threading.enumerate() if t.name == run.name and t is not threading.current_thread()]
        if not busy:
            return
        run = busy[0]


def load_counter_after(run: threading.Thread, build: Callable[[], None]) -> threading.Thread:
    """Once per process: a daemon thread that waits until the thread ``run`` has ended (the
    script thread of the view being served: Streamlit ends it when the view's run, and any rerun
    queued behind it, is done) and no other thread of its name has run for :data:`QUIET_S`
    seconds, then calls ``build``. Later calls return that same thread and start nothing. O(1);
    the thread's work is ``build``'s (0.1-0.3 s for the default counter), in otherwise idle time.
    tests/test_warmup.py checks the order.
    """
    with _LOADER_LOCK:
        if not _COUNTER_LOADER:

            def wait_then_build() -> None:
                _wait_for_quiet(run)
                build()

            loader = threading.Thread(target=wait_then_build, name="convmem-counter-loader", daemon=True)
            _COUNTER_LOADER.append(loader)
            loader.start()
        return _COUNTER_LOADER[0]


def warm_up(page_title: str, question: str | None = None) -> None:
    """Import :data:`HEAVY_MODULES` not imported yet, showing the page's ``question`` (bold, as
    the page shows it) and a spinner naming ``page_title`` meanwhile; both are removed before
    the page runs. The first call of the process also starts :func:`load_counter_after` the
    current (script) thread, when that is not the main thread (Streamlit runs scripts in their
    own threads; the main thread never ends before the process does).

    Streamlit shows the spinner only when the block lasts over its delay (0.5 s); a warm server
    draws nothing at all. Raises what the imports raise (never in a working install).
    """
    run = threading.current_thread()
    if not _COUNTER_LOADER and run is not threading.main_thread():
        load_counter_after(run, _build_default_counter)
    missing = missing_modules()
    if not missing:
        return
    slot = st.empty()
    with slot.container():
        if question:
            st.markdown(f"**{question}**")
        with st.spinner(
            f"Opening {page_title}: loading pandas and plotly (once, after the server started)…",
            show_time=True,
        ):
            for name in missing:
                importlib.import_module(name)
    slot.empty()
