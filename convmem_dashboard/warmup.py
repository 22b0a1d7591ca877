"""The first view after the server started: the libraries the pages need load under a spinner.

A freshly started server has imported Streamlit (and plotly, which Streamlit imports) but not
pandas, numpy and pyarrow, which every page's tables need: about 1-1.4 s on a loaded 2-core
machine, the largest part of a cold first view of the bundled sample (benchmarks/bench_cold.py).
Imported inside a page, they hold the page back with nothing on screen; dashboard.py calls
:func:`warm_up` before the page runs, so that wait shows the page's question and a spinner with
the elapsed time instead (issue 10 item 3: progress, never blank placeholders). Both go once the
modules are in; the page then draws itself. Later views find the modules imported and pay
nothing (a ``sys.modules`` lookup per module).
"""

from __future__ import annotations

import importlib
import sys

import streamlit as st

__all__ = ["HEAVY_MODULES", "missing_modules", "warm_up"]

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


def warm_up(page_title: str, question: str | None = None) -> None:
    """Import :data:`HEAVY_MODULES` not imported yet, showing the page's ``question`` (bold, as
    the page shows it) and a spinner naming ``page_title`` meanwhile; both are removed before
    the page runs.

    Streamlit shows the spinner only when the block lasts over its delay (0.5 s); a warm server
    draws nothing at all. Raises what the imports raise (never in a working install).
    """
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
