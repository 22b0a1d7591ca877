"""Your data's "Open your agent's database" panel: a database URL in, this session's dataset out (streamlit).

The URL is typed into a form that clears on submit, checked and read by
:func:`convmem_dashboard.data.register_database`, and held on the server only: the page, the
sidebar and every link show the URL with its password replaced by ``***`` (``?data=db:<hash>``).
"""

from __future__ import annotations

import streamlit as st

from .data import SAMPLE_DB_KEY, register_database, reread_database
from .db_source import (
    MAX_DB_CONVERSATIONS,
    MAX_DB_MESSAGES,
    DatabaseSourceError,
    conversation_listing,
)
from .show_table import show_table

__all__ = ["database_panel"]

_ERROR = "db_form_error"


def _open() -> None:
    text = st.session_state.get("db_url", "")
    st.session_state["db_url"] = ""  # the URL (and any password) leaves the page either way
    st.session_state.pop(_ERROR, None)
    try:
        key = register_database(text)
    except DatabaseSourceError as exc:
        st.session_state[_ERROR] = str(exc)
        return
    st.session_state["data"] = key


def _open_sample() -> None:
    st.session_state.pop(_ERROR, None)
    st.session_state["data"] = SAMPLE_DB_KEY


def database_panel(current_key: str, conversations=()) -> None:
    """The form, its error (verbatim, no password), and for a database in use: its conversations
    and a "read again" button."""
    st.subheader("Open your agent's database")
    st.caption(
        "A convmem store (convmem.stores.SQLStore) in a SQLite file or PostgreSQL: every page then "
        "shows its conversations, each read with load_history over SQLStore.pager. Opened "
        f"read-only; at most {MAX_DB_CONVERSATIONS:,} conversations and {MAX_DB_MESSAGES:,} "
        "messages are read. The URL stays on this server: links carry only a hash of it. "
        "A link can open one too: ?db=<url>."
    )
    with st.form("db_form", clear_on_submit=True, border=False):
        st.text_input(
            "Database URL or SQLite file path",
            key="db_url",
            placeholder="sqlite:///agent.sqlite  ·  postgresql://user:password@host:5432/db",
            help="SQLite: a file path or sqlite:///path. PostgreSQL: postgresql://… (psycopg 3).",
        )
        st.form_submit_button("Open the database", on_click=_open, icon=":material/database:")
    c1, c2 = st.columns(2)
    c1.button("Open the bundled sample database (SQLite)", on_click=_open_sample,
              key="db_sample")
    if current_key == SAMPLE_DB_KEY or current_key.startswith("db:"):
        c2.button("Read the database again", on_click=reread_database, args=(current_key,),
                  key="db_reread", help="Pick up messages appended since it was read.")
    if current_key == SAMPLE_DB_KEY or current_key.startswith("db:"):
        st.caption(
            f"The {len(conversations):,} conversations read from the database in use; pick one in "
            "the Conversation box under Conversation in use below: every page then shows it."
        )
        show_table(
            conversation_listing(conversations), hide_index=True, height=min(35 * 8 + 3, 35 * (len(conversations) + 1) + 3),
            column_config={"messages": st.column_config.NumberColumn(format="localized"),
                           "tokens": st.column_config.NumberColumn(format="localized")},
        )
    if error := st.session_state.get(_ERROR):
        st.error("Could not open the database; nothing changed. Why:", icon=":material/error:")
        st.code(error, language=None, wrap_lines=True)
