"""``python -m convmem_dashboard [streamlit run options]``: the dashboard's server, with the modules
every page needs already imported.

``streamlit run dashboard.py`` serves the same app, but the first page view after the server
started then imports numpy, pandas, pyarrow, plotly and convmem under its spinner (about 1.4 s of
a 1.8 s first run on the bundled sample, 2 cores under load; 0.4 s with them imported:
docs/decisions.md, "The server imports what every page needs before it listens"). This launcher
imports them first, as a web server preloads its application, then hands its arguments to
``streamlit run dashboard.py`` (e.g. ``--server.port 8600``), so the server answers its health
check only once they are in. It also imports what the rest of a first run imported (session 23,
docs/decisions.md "A cold first view imports nothing"): the two Streamlit modules a first run
imports (:data:`PRELOAD`), and the dashboard's own modules (:func:`dashboard_modules`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import logging
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "PRELOAD", "STREAMLIT_FIRST_RUN", "dashboard_modules", "main", "preload", "streamlit_first_run",
    "warm_default_counter", "warm_default_data", "warm_module_files", "warm_module_files_when_serving",
]

#: Imported before the server starts, in this order (the slow first imports of a page view);
#: pyarrow.pandas_compat is pyarrow's pandas conversion, imported by the first st.dataframe.
PRELOAD = ("numpy", "pandas", "pyarrow", "pyarrow.pandas_compat", "plotly.graph_objects", "convmem")
#: Streamlit's own modules that a first run imports, when the installed Streamlit has them
#: (internal names, checked for the pinned version by tests/test_readme.py; a later Streamlit
#: without one still starts): the emoji catalog st.set_page_config checks an emoji page icon
#: against (dashboard.py's favicon; 0.2-0.45 s, the largest import left in a cold first view
#: once the libraries were in), the Material icon names the pages' and links' icons are checked
#: against, and st.dataframe's table-type adapters.
STREAMLIT_FIRST_RUN = ("streamlit.emojis", "streamlit.material_icon_names", "streamlit.dataframe.lazy_df_adapters")
#: The entry script Streamlit runs (beside the convmem_dashboard package), and its pages' folder.
DASHBOARD = Path(__file__).resolve().parent.parent / "dashboard.py"
PAGES_DIR = DASHBOARD.parent / "app_pages"
#: Streamlit's logger that warns, for each ``st.cache_data`` decorated with no server running yet,
#: that it checked the cache's parameters against an in-memory storage (see :func:`preload`).
_CACHE_DATA_LOGGER = "streamlit.runtime.caching.cache_data_api"
#: Streamlit's logger that warns when Streamlit code runs outside a script run (see
#: :func:`warm_default_data`).
_SCRIPT_CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


def streamlit_first_run() -> tuple[str, ...]:
    """The ones of :data:`STREAMLIT_FIRST_RUN` the installed Streamlit has (found without being
    imported; their parent packages are), in order. O(len(STREAMLIT_FIRST_RUN)) lookups."""
    return tuple(name for name in STREAMLIT_FIRST_RUN if _installed(name))


def _installed(name: str) -> bool:
    """Whether module ``name`` can be imported (a missing parent package counts as missing)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def dashboard_modules(pages_dir: Path = PAGES_DIR, entry: Path = DASHBOARD) -> tuple[str, ...]:
    """The modules dashboard.py's first view imports for any page: warm_up's
    :data:`~convmem_dashboard.warmup.HEAVY_MODULES`, then what ``entry`` (dashboard.py) and each
    ``*.py`` page file in ``pages_dir`` import at their top level
    (:func:`~convmem_dashboard.warmup.page_modules`), each once, in first-seen order. Reads the
    files (O(their size)); raises OSError / SyntaxError when one cannot be read / parsed.
    """
    from .warmup import HEAVY_MODULES, page_modules

    names = [*HEAVY_MODULES, *page_modules(entry)]
    for page in sorted(pages_dir.glob("*.py")):
        names.extend(page_modules(page.resolve()))
    return tuple(dict.fromkeys(names))


@contextlib.contextmanager
def _muted(*names: str) -> Iterator[None]:
    """Silence the loggers ``names`` below ERROR inside the block (then restore their levels)."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _cache_params_warnings_muted() -> contextlib.AbstractContextManager[None]:
    """Silence :data:`_CACHE_DATA_LOGGER` below ERROR inside the block (then restore its level).

    ``st.cache_data`` checks its parameters when it decorates, against the running server's
    cache storage, or with none yet against a throwaway in-memory one, and says so with a
    warning. The storage a cache really uses is taken on its first call, inside the server's
    runs, so the preloaded modules' caches are the server's: the warning is noise there.
    """
    return _muted(_CACHE_DATA_LOGGER)


def preload(pages_dir: Path = PAGES_DIR) -> None:
    """Import :data:`PRELOAD`, :func:`streamlit_first_run`, then :func:`dashboard_modules`
    (their caches' parameter checks not logged, see :func:`_cache_params_warnings_muted`), in
    order, then builds convmem's default token counter (:func:`warm_default_counter`), reads the
    bundled sample into the dashboard's caches (:func:`warm_default_data`) and fills
    the module-by-file table Streamlit's first element reads (:func:`warm_module_files`). Nothing
    is frozen (``gc.freeze``): convmem's loads and replays move what they made to the oldest
    generation with a freeze and unfreeze of their own, which they skip while anything else is
    frozen (convmem._gc.promote_young). A first view then imports nothing: warm_up finds every module in and draws no spinner. 1-3 s on 2
    loaded cores, once, before the server listens; raises what the imports raise (never in a
    working install)."""
    for name in (*PRELOAD, *streamlit_first_run()):
        importlib.import_module(name)
    with _cache_params_warnings_muted():
        for name in dashboard_modules(pages_dir):
            importlib.import_module(name)
    warm_default_counter()
    warm_default_data()
    warm_module_files()


#: A code object whose file no module has (an in-memory name): ``inspect.getmodule`` of it walks
#: ``sys.modules`` for the modules not in its table yet (:func:`warm_module_files`).
_UNMAPPED_CODE = compile("", "<convmem_dashboard: warm module files>", "exec")


def warm_module_files() -> None:
    """Fill the standard library's module-by-file table (``inspect.getmodule``'s cache) now, for
    every module imported so far and not yet in it.

    The first element any script run of the process draws makes Streamlit ask whether it runs in
    a REPL (``streamlit.env_util.is_repl``: ``inspect.stack()``). Its frames include the page's
    script, whose file no module has, so ``inspect.getmodule`` walks ``sys.modules`` and resolves
    the real path of every module not in the table yet (one ``os.path.realpath``, a few
    ``lstat`` calls each). With the preloaded libraries that is about 1,450 modules: 0.22 s of a
    cold Home's 0.46 s script run (session 24's profile), before its first element reached the
    browser. Done here, a first view's check finds nothing new to resolve.

    The walk is forced with a code object whose file no module has: ``is_repl()`` itself, called
    here, finds every frame of this thread's stack in the table after the first call and walks
    nothing (session 27: the second call, once the server ran, left the 130-170 modules
    imported by the server's start to the first view, 0.15 s of its run). O(modules) dictionary
    lookups, plus one path resolution per module not yet in the table.
    """
    inspect.getmodule(_UNMAPPED_CODE)


def warm_module_files_when_serving(timeout_s: float = 60.0, poll_s: float = 0.1) -> threading.Thread:
    """Run :func:`warm_module_files` again, in a daemon thread, once Streamlit's runtime has
    started (its state past ``INITIAL``). Starting the server imports about 130 more modules
    after the preload (uvicorn, starlette, websockets, anyio, h11: session 25's count), whose
    paths the first view's REPL check would otherwise resolve inside that view's run. Gives up
    after ``timeout_s`` seconds (a server that never starts); polls every ``poll_s`` seconds.
    Returns the thread (started)."""

    def run() -> None:
        from streamlit.runtime.runtime import Runtime, RuntimeState

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if Runtime.exists() and Runtime.instance().state is not RuntimeState.INITIAL:
                warm_module_files()
                return
            time.sleep(poll_s)

    thread = threading.Thread(target=run, name="convmem-warm-module-files", daemon=True)
    thread.start()
    return thread


def warm_default_counter() -> bool:
    """Build ``convmem.tokens.default_counter()`` (process-wide, built once: cl100k_base's ranks
    read from the packaged file, 0.25-0.35 s) now, not in the first Token budget view, which
    needs it to count summary lines (convmem_dashboard.idle_lines). True when built; False when
    no encoding file is usable (EncodingUnavailableError: the pages then say so themselves)."""
    from convmem.tokens import EncodingUnavailableError, default_counter

    try:
        default_counter()
    except EncodingUnavailableError:
        return False
    return True


def warm_default_data() -> None:
    """Read the bundled sample (the data of a link without ``?data=``) and list its conversations
    into the dashboard's caches now (``st.cache_resource`` and ``st.cache_data`` keep one cache per
    function for the whole process, made before the server starts or after; for ``persist=None``
    the in-memory storage Streamlit uses with no server yet behaves as the server's): a fresh
    server's first view then finds both, as a later view does (about 0.04 s of that view's run:
    session 25's profile). Streamlit's warnings that no server or script run exists yet are not
    logged."""
    from convmem_dashboard.selection import choices_of

    with _muted(_CACHE_DATA_LOGGER, _SCRIPT_CONTEXT_LOGGER):
        choices_of("sample")


def main(argv: Sequence[str] | None = None) -> None:
    """:func:`preload`, :func:`warm_module_files_when_serving`, then run ``streamlit run dashboard.py *argv`` (default: this process's
    arguments). Exits with Streamlit's exit status (raises SystemExit)."""
    preload()
    warm_module_files_when_serving()
    from streamlit.web import cli

    args = list(sys.argv[1:] if argv is None else argv)
    cli.main(args=["run", str(DASHBOARD), *args], prog_name="streamlit")


if __name__ == "__main__":
    main()
