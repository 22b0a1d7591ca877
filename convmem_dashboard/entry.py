"""Every page runs under dashboard.py (page config, data picker, navigation): this makes sure.

Streamlit keeps a relic of its first multipage API: while no script has called ``st.navigation`` yet
in a server process, an app with a ``pages/`` folder runs a directly linked page *without* its
entry script. A demo link such as ``/token_budget?limit=3000`` opened on a freshly started server
would then miss the data picker and ignore ``?data=``. dashboard.py marks each run it starts; a
page that finds no mark switches that relic off and reruns, now through dashboard.py, keeping
the URL.
"""

from __future__ import annotations

import streamlit as st

__all__ = ["mark_entry", "require_entry"]

_MARK = "_convmem_entry_ran"


def mark_entry() -> None:
    """Called by dashboard.py on every run, before the page runs."""
    st.session_state[_MARK] = True


def require_entry() -> None:
    """Called first by every page: rerun through dashboard.py when it did not start this run."""
    if st.session_state.pop(_MARK, False):
        return
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
    st.rerun()
