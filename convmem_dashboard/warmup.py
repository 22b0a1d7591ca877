"""The first view of a page: the modules it needs load under its question and a spinner.

A freshly started server has imported Streamlit (and plotly, which Streamlit imports) but not
convmem, pandas, numpy and pyarrow, which every page needs: 0.5-1.4 s on a loaded 2-core machine,
the largest part of the server's share of a cold first view of the bundled sample
(benchmarks/bench_cold.py). Imported by dashboard.py's data picker or inside a page, they held
the view back with nothing in the main area. dashboard.py calls :func:`warm_up` right after
``st.navigation``, before anything imports convmem: the page's question is drawn at once, and
the imports (:data:`HEAVY_MODULES`, then the dashboard modules the page file imports,
:func:`page_modules`) run under a spinner with the elapsed time. The question stays while the
data picker loads the dataset (its own spinner) and is removed just before the page draws
itself, question first (issue 10 item 3: progress, never blank placeholders). Later views find
the modules imported and pay nothing (a ``sys.modules`` lookup per module). A server started
with ``python -m convmem_dashboard`` (the README's command) imported every one of them before it
listened (convmem_dashboard.__main__.preload): its first view draws nothing here either.

The token counter is loaded the same way, once per server but off every view: its rank file
(cl100k_base, 0.1-0.3 s) is needed only by the first replay with summaries (and by data that
carries no token counts), so :func:`warm_up` hands it to a background thread that waits until the
first view's script run has ended (:func:`load_counter_after`): the cold first view does not pay
it, nor does the first toggle of "Summaries" that comes after it.
"""

from __future__ import annotations

import ast
import functools
import importlib
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import streamlit as st

__all__ = ["HEAVY_MODULES", "counter_built", "load_counter_after", "missing_modules", "page_modules", "warm_up"]

#: Modules every page imports (directly or through convmem_dashboard's table builders) whose first
#: import is slow, in import order; the data picker's module (convmem with it) last.
HEAVY_MODULES = ("numpy", "pandas", "plotly.graph_objects", "convmem_dashboard.data")
#: The folder that holds the convmem and convmem_dashboard packages (and dashboard.py).
ROOT = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=32)
def page_modules(page_file: str | Path, root: Path = ROOT) -> tuple[str, ...]:
    """The modules a page file imports at its top level, in order, read with :mod:`ast` (the
    file is not run): ``import a.b`` gives ``a.b``; ``from p import x`` gives ``p``, and also
    ``p.x`` when that is a submodule of a package under ``root`` (a ``p/x.py`` file or a
    ``p/x/`` package). Relative imports are left out. O(size of the file), once per path
    (cached); raises OSError / SyntaxError when the file cannot be read / parsed.

    >>> page_modules(ROOT / "app_pages" / "token_budget.py")[:3]
    ('__future__', 're', 'streamlit')
    >>> "convmem_dashboard.cache_budget" in page_modules(ROOT / "app_pages" / "token_budget.py")
    True
    """
    tree = ast.parse(Path(page_file).read_text(encoding="utf-8"))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            folder = root.joinpath(*node.module.split("."))
            names.extend(
                f"{node.module}.{alias.name}" for alias in node.names
                if (folder / f"{alias.name}.py").is_file() or (folder / alias.name / "__init__.py").is_file()
            )
    return tuple(dict.fromkeys(names))


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


def counter_built() -> bool:
    """Whether convmem's default counter is built already (the launcher builds it before the
    server listens: convmem_dashboard.__main__.warm_default_counter). O(1). Then warm_up starts
    no loader thread: starting one in a first view's run cost 0.03-0.08 s of waiting for the
    interpreter lock while the server sent the page (session 24's profile of a cold Home).
    Imports nothing: with convmem not imported yet (``streamlit run dashboard.py``), False."""
    tokens = sys.modules.get("convmem.tokens")
    return tokens is not None and tokens.default_counter.cache_info().currsize > 0


def _wait_for_quiet(run: threading.Thread) -> None:
    """Return once ``run`` has ended and no thread of its name (Streamlit's script threads are all
    "ScriptRunner.scriptThread") has been alive for :data:`QUIET_S` seconds: a first view may take
    a second run in a new thread (the browser's rerun after the first), which must not share the
    machine with the loader. The rest is idle_lines.wait_for_quiet, which also waits out a run
    that is listed but still starting (``join`` refuses it: this loader died on one at 10^5
    messages in session 21's benchmark, "cannot join thread before it is started")."""
    from .idle_lines import wait_for_quiet  # convmem is loaded by the time a view's run ended

    if run.is_alive():
        run.join()
    time.sleep(QUIET_S)
    wait_for_quiet(run.name, QUIET_S)


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


def warm_up(page_title: str, question: str | None = None, modules: Sequence[str] = HEAVY_MODULES):
    """Import the ones of ``modules`` not imported yet (in order), showing the page's
    ``question`` (bold, as the page shows it) and a spinner naming ``page_title`` meanwhile.
    Returns the placeholder that still holds the question (the caller empties it just before the
    page draws its own), or None when nothing was missing (nothing drawn: a warm server shows
    nothing at all). The first call of the process also starts :func:`load_counter_after` the
    current (script) thread, when that is not the main thread and the counter is not built yet
    (:func:`counter_built`) (Streamlit runs scripts in their
    own threads; the main thread never ends before the process does).

    Streamlit shows the spinner only when the block lasts over its delay (0.5 s); the question is
    drawn at once. O(len(modules)) lookups when all are imported. Raises what the imports raise
    (never in a working install).
    """
    run = threading.current_thread()
    if not _COUNTER_LOADER and run is not threading.main_thread() and not counter_built():
        load_counter_after(run, _build_default_counter)
    missing = missing_modules(modules)
    if not missing:
        return None
    slot = st.empty()
    with slot.container():
        if question:
            st.markdown(f"**{question}**")
        with st.spinner(
            f"Opening {page_title}: loading convmem, pandas and plotly (once, after the server started)…",
            show_time=True,
        ):
            for name in missing:
                importlib.import_module(name)
    if question:
        slot.markdown(f"**{question}**")
    else:
        slot.empty()
    return slot
