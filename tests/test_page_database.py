"""AppTest: the dashboard on a live database (issue 12.7) and the Flaky store page over a SQLite
store with messages arriving while it pages (issue 12.6).

Databases are made here (a SQLite file in tmp_path; a PostgreSQL database of its own on
``$CONVMEM_TEST_POSTGRES_URL``, skipped with the reason when unset, failing with
``CONVMEM_REQUIRE_POSTGRES=1``: tests/store_support.py). Expected values come from convmem
directly (SQLStore, load_history), never from the dashboard's helpers.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from apptest_support import PAGES, YOUR_DATA, dataset_named, metrics, ok, open_dashboard_page
from convmem import load_conversations, load_history
from convmem.stores import SQLStore
from store_support import postgres_url  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
SAMPLE_SQLITE = ROOT / "sample_data" / "shoppers.sqlite"
SQLITE_STORE = "SQLite store (keyset cursors)"
SECRET = "s3cret-dbdash-pw"


def all_text(at: AppTest) -> str:
    """Every text the page shows (and the URL), to check a password never reaches the browser."""
    parts = [str(dict(at.query_params))]
    for kind in ("title", "markdown", "caption", "error", "warning", "info", "success", "code"):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    parts += [str(s.options) for s in at.selectbox]
    parts += [str(t.value) for t in at.text_input]
    return "\n".join(parts)


@pytest.fixture(scope="module")
def conversations():
    return load_conversations(SAMPLE)[:5]


@pytest.fixture
def sqlite_db(tmp_path, conversations):
    path = tmp_path / "agent.sqlite"
    SQLStore.from_conversations(f"sqlite:///{path}", conversations).close()
    return path


def conv_ids(at: AppTest) -> list[str]:
    """The conversation picker's options as ids (its labels end with " · <id>")."""
    picker = next(s for s in at.selectbox if s.key == "conv")
    return [o.rsplit(" · ", 1)[-1] for o in picker.options]


def chosen(at: AppTest) -> str:
    return next(s for s in at.selectbox if s.key == "conv").value


def open_your_data() -> AppTest:
    """Your data: the database form (Home draws no widget below its links)."""
    return ok(open_dashboard_page(YOUR_DATA))


def submit_database(at: AppTest, text: str) -> AppTest:
    at.text_input(key="db_url").set_value(text)
    next(b for b in at.button if b.label == "Open the database").click()
    return ok(at.run())


def db_error(at: AppTest) -> str | None:
    heads = [e.value for e in at.error]
    for head in ("Could not open the database; nothing changed. Why:",
                 "The database could not be opened; showing the sample data. Open it again, or "
                 "another one, on Your data. Why:"):
        if head in heads:
            return next(c.value for c in at.code)
    return None


def test_open_a_sqlite_file_on_your_data_lists_its_conversations(sqlite_db, conversations):
    at = submit_database(open_your_data(), str(sqlite_db))
    assert db_error(at) is None
    key = at.session_state["data"]
    assert key.startswith("db:") and len(key) == 3 + 16
    shown = metrics(at)
    assert shown["Conversations"] == f"{len(conversations):,}"
    assert shown["Messages"] == f"{sum(len(c.messages) for c in conversations):,}"
    assert str(sqlite_db.name) in dataset_named(at).replace("\\", "")
    assert at.text_input(key="db_url").value == ""  # the form clears: the URL is not kept in view
    assert any("load_history over SQLStore.pager" in c.value for c in at.caption)
    # the picker is on this page now (below), not on every page: the caption says where it is
    assert (f"The {len(conversations):,} conversations read from the database in use; pick one in the "
            "Conversation box under Conversation in use below: every page then shows it."
            in [c.value for c in at.caption])
    listing = next(d.value for d in at.dataframe if "conversation" in d.value.columns)
    assert list(listing["conversation"]) == [c.id for c in conversations]
    assert list(listing["messages"]) == [len(c.messages) for c in conversations]
    assert list(listing["tokens"]) == [sum(m.tokens for m in c.messages) for c in conversations]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_a_database_conversation_from_a_link(sqlite_db, conversations, page):
    key = submit_database(open_your_data(), f"sqlite:///{sqlite_db}").session_state["data"]
    # A link carries only the key; a session of the same server adopts the database.
    at = ok(open_dashboard_page(page, {"data": key}))
    assert at.session_state["data"] == key
    assert db_error(at) is None
    with SQLStore(f"sqlite:///{sqlite_db}") as store:
        ids = store.conversation_ids()
        counts = {cid: len(load_history(store.pager(cid))) for cid in ids}
    if page == "app_pages/flaky_store.py":
        assert conv_ids(at) == ids
        cid = chosen(at)
        assert metrics(at)[f"Loaded (of {counts[cid]:,} messages)"] == f"{counts[cid]:,}"
        # any of them opens: the last one, by the shared ?conv= selection
        at = ok(open_dashboard_page(page, {"data": key, "conv": ids[-1]}))
        assert chosen(at) == ids[-1]
        assert metrics(at)[f"Loaded (of {counts[ids[-1]]:,} messages)"] == f"{counts[ids[-1]]:,}"
    elif page == "app_pages/token_budget.py":
        assert set(conv_ids(at)) == set(ids)


def test_db_url_parameter_opens_the_database_and_leaves_the_url(sqlite_db, conversations):
    at = ok(open_dashboard_page("app_pages/flaky_store.py", {"db": f"sqlite:///{sqlite_db}"}))
    assert at.session_state["data"].startswith("db:")
    assert "db" not in at.query_params
    assert conv_ids(at) == [c.id for c in conversations]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("nope/agent.sqlite", "no SQLite file at 'nope/agent.sqlite'"),
        ("oracle://u:" + SECRET + "@h/db", "only SQLite and PostgreSQL databases can be opened, got 'oracle://u:***@h/db'"),
        ("sqlite://", "in-memory database"),
        ("postgresql://agent:" + SECRET + "@127.0.0.1:1/memory", "could not open 'postgresql+psycopg://agent:***@127.0.0.1:1/memory'"),
        ("http://example.com", "only SQLite and PostgreSQL"),
        ("x" * 1001, "over the 1,000-character cap"),
    ],
)
def test_bad_urls_are_readable_messages_without_the_password(text, expected):
    at = submit_database(open_your_data(), text)
    message = db_error(at)
    assert message is not None and expected in message
    assert SECRET not in all_text(at)
    assert at.session_state["data"] == "sample"


def test_a_file_that_is_not_a_database_or_has_no_convmem_tables(tmp_path):
    text_file = tmp_path / "notes.sqlite"
    text_file.write_text("not a database")
    assert "file is not a database" in db_error(submit_database(open_your_data(), str(text_file)))
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE messages (id TEXT)")
    message = db_error(submit_database(open_your_data(), str(other)))
    assert "is not a convmem store: it has no table convmem_conversations, convmem_messages" in message
    # Opened read-only: the dashboard created nothing in it.
    with sqlite3.connect(other) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["messages"]


def test_bad_db_parameter_is_a_readable_message_and_is_dropped_from_the_url():
    at = ok(open_dashboard_page("app_pages/flaky_store.py",
                                {"db": f"postgresql://agent:{SECRET}@127.0.0.1:1/memory"}))
    assert "db" not in at.query_params
    assert "could not open 'postgresql+psycopg://agent:***@127.0.0.1:1/memory'" in db_error(at)
    assert SECRET not in all_text(at)
    assert at.session_state["data"] == "sample"


def test_a_link_to_a_database_this_server_never_opened():
    at = ok(open_dashboard_page(YOUR_DATA, {"data": "db:0123456789abcdef"}))
    assert "has not opened" in db_error(at)
    assert at.session_state["data"] == "sample"


def test_the_bundled_sample_database_is_offered_and_needs_no_server():
    at = open_your_data()
    picker = at.sidebar.selectbox[0]
    assert "sample-db" in picker.options
    next(b for b in at.button if b.label == "Open the bundled sample database (SQLite)").click()
    at = ok(at.run())
    assert at.session_state["data"] == "sample-db"
    with SQLStore(f"sqlite:///{SAMPLE_SQLITE}") as store:
        n = sum(info.messages for info in store.conversations())
        convs = len(store.conversation_ids())
    assert metrics(at)["Messages"] == f"{n:,}" and metrics(at)["Conversations"] == f"{convs:,}"


# -- the Flaky store page over the SQLite store, with arrivals -------------------------------------


def _sample_db_messages(cid):
    with SQLStore(f"sqlite:///{SAMPLE_SQLITE}") as store:
        return load_history(store.pager(cid))


@pytest.mark.parametrize("high_water", [True, False])
def test_arrivals_while_paging_are_neither_skipped_nor_repeated(high_water):
    query = {"store": SQLITE_STORE, "arr": "6", "arr_at": "2", "hwm": str(high_water).lower()}
    at = ok(open_dashboard_page("app_pages/flaky_store.py", query, data="sample-db"))
    messages = _sample_db_messages(chosen(at))
    assert len(messages) > 2 * 5  # page size 5: the writer appends after page 2, mid-load
    shown = metrics(at)
    assert shown["Arrived during the load"] == "6"
    assert shown["Lost"] == "0" and shown["Repeated"] == "0" and shown["Out of order"] == "no"
    if high_water:
        assert shown["Returned by this load"] == "0" and shown["Returned by the follow-up"] == "6"
        assert shown[f"Loaded (of {len(messages) + 6:,} messages)"] == f"{len(messages):,}"
    else:
        assert shown["Returned by this load"] == "6" and shown["Returned by the follow-up"] == "0"
        assert shown[f"Loaded (of {len(messages) + 6:,} messages)"] == f"{len(messages) + 6:,}"
    assert any(f"None lost, none repeated: all {len(messages) + 6:,} messages" in s.value for s in at.success)
    faults = next(d.value for d in at.dataframe if "effect on a load" in d.value.columns)
    row = faults[faults["fault"] == "arrivals"].iloc[0]
    assert row["ok"] == 1 and "loses nothing, repeats nothing" in row["effect on a load"]
    # The offset-store faults are not offered over keyset cursors.
    assert not [n for n in at.number_input if n.key in ("rep", "cyc", "empty", "overlap")]


def test_sqlite_store_failure_is_honest():
    at = ok(open_dashboard_page("app_pages/flaky_store.py",
                                {"store": SQLITE_STORE, "rate": "1.0"}, data="sample-db"))
    shown = metrics(at)
    assert "Lost" not in shown and shown["Loaded before the failure"] == "0"
    assert "resume from the first page" in at.error[0].value


# -- PostgreSQL ------------------------------------------------------------------------------------


@pytest.fixture
def pg_database(postgres_url, conversations):  # noqa: F811
    """A database of this test's own on the PostgreSQL server, filled with ``conversations``;
    its URL carries a password (the server trusts local users, so any password works)."""
    base = sa.engine.make_url(postgres_url)
    name = f"convmem_dbdash_{os.getpid()}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = base.set(database=name, password=SECRET)
    SQLStore.from_conversations(url, conversations).close()
    yield url.render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def test_postgresql_database_on_your_data_and_flaky_store(pg_database, conversations):
    at = submit_database(open_your_data(), pg_database)
    assert db_error(at) is None
    key = at.session_state["data"]
    assert metrics(at)["Conversations"] == f"{len(conversations):,}"
    assert SECRET not in all_text(at)
    assert dataset_named(at).replace("\\", "").endswith(sa.engine.make_url(pg_database).database)
    assert any("***" in c.value.replace("\\", "") for c in at.caption)  # the full URL, hidden password
    at = ok(open_dashboard_page("app_pages/flaky_store.py", {"data": key}))
    assert conv_ids(at) == [c.id for c in conversations]
    assert metrics(at)["Lost"] == "0"
    assert SECRET not in all_text(at)


def test_postgresql_missing_tables_is_a_readable_message(postgres_url):  # noqa: F811
    base = sa.engine.make_url(postgres_url)
    name = f"convmem_dbdash_empty_{os.getpid()}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        url = base.set(database=name, password=SECRET).render_as_string(hide_password=False)
        message = db_error(submit_database(open_your_data(), url))
        assert "is not a convmem store" in message and SECRET not in message
        engine = sa.create_engine(base.set(database=name))
        with engine.connect() as conn:  # read-only: no table was created
            assert sa.inspect(conn).get_table_names() == []
        engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_home_counts_the_same_tool_calls_for_a_conversation_from_the_database_as_from_the_file():
    """A database store keeps each message's call ids, not the calls' names and arguments; Home
    counted ``Conversation.tool_calls`` and showed 0 for the sample database (a new user)."""
    from convmem_dashboard.data import get_dataset
    from convmem_dashboard.view_home import conversation_metrics

    from_file = {c.id: c for c in get_dataset("sample").conversations}
    from_db = get_dataset("sample-db").conversations
    assert from_db
    for c in from_db:
        want = sum(len(m.tool_call_ids) for m in from_file[c.id].messages)
        shown = {m.label: m.value for m in conversation_metrics(c)}
        assert shown["Tool calls"] == f"{want:,}", c.id
    assert any(sum(len(m.tool_call_ids) for m in c.messages) for c in from_db)
