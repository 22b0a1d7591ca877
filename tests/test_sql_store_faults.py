"""SQLStore beyond the shared suite: real database faults (a locked SQLite file, a PostgreSQL
connection terminated mid-load, a lock timeout), the TransientError mapping, concurrent writers,
URLs, and filling a store from a conversations file."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import psycopg
import psycopg.errors as pg_errors
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from convmem import (
    Message,
    PageLoadError,
    TransientError,
    load_conversations,
    load_history,
    load_history_with_report,
)
from convmem.stores import TRANSIENT_SQLSTATES, SQLStore, is_transient_db_error
from store_support import clean_postgres, make_store, postgres_url, store  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"


def msgs(n, prefix="m"):
    return [Message(f"{prefix}{i}", "user", i % 7, content=f"{prefix} {i}") for i in range(n)]


def no_sleep(seconds):
    return None


# -- which errors are transient --------------------------------------------------------------------


def _sqlite_error(code, text):
    error = sqlite3.OperationalError(text)
    error.sqlite_errorcode = code
    return sa_exc.OperationalError("SELECT 1", {}, error)


@pytest.mark.parametrize(
    "code,transient",
    [(5, True), (6, True), (5 | (1 << 8), True), (6 | (1 << 8), True), (1, False), (11, False),
     (14, False)],
    ids=["BUSY", "LOCKED", "BUSY_RECOVERY", "LOCKED_SHAREDCACHE", "ERROR", "CORRUPT", "CANTOPEN"],
)
def test_sqlite_errors_are_transient_only_when_busy_or_locked(code, transient):
    assert is_transient_db_error(_sqlite_error(code, "x")) is transient


@pytest.mark.parametrize(
    "error,transient",
    [
        (pg_errors.SerializationFailure("x"), True),
        (pg_errors.DeadlockDetected("x"), True),
        (pg_errors.LockNotAvailable("x"), True),
        (pg_errors.QueryCanceled("x"), True),
        (pg_errors.AdminShutdown("x"), True),
        (pg_errors.CannotConnectNow("x"), True),
        (pg_errors.TooManyConnections("x"), True),
        (pg_errors.ConnectionFailure("x"), True),
        (psycopg.OperationalError("server closed the connection unexpectedly"), True),
        (pg_errors.UniqueViolation("x"), False),
        (pg_errors.UndefinedTable("x"), False),
        (pg_errors.InvalidPassword("x"), False),
        (psycopg.ProgrammingError("x"), False),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_postgresql_errors_are_transient_by_sqlstate(error, transient):
    operational = isinstance(error, psycopg.OperationalError)
    wrapped_type = sa_exc.OperationalError if operational else sa_exc.DBAPIError
    assert is_transient_db_error(wrapped_type("SELECT 1", {}, error)) is transient


def test_dropped_connections_and_pool_timeouts_are_transient_other_errors_are_not():
    dropped = sa_exc.DBAPIError("SELECT 1", {}, Exception("gone"), connection_invalidated=True)
    assert is_transient_db_error(dropped)
    assert is_transient_db_error(sa_exc.TimeoutError("QueuePool limit reached"))
    assert not is_transient_db_error(ValueError("x"))
    assert not is_transient_db_error(sa_exc.ArgumentError("bad"))
    assert {"40001", "40P01", "55P03", "57P01"} <= TRANSIENT_SQLSTATES


# -- a locked SQLite file --------------------------------------------------------------------------


@pytest.fixture
def locked_file(tmp_path):
    """A SQLite store file with 7 messages, and a function that locks it exclusively from another
    connection (returns the release function)."""
    path = tmp_path / "locked.sqlite"
    with SQLStore(path) as filler:
        filler.append("c1", msgs(7))
    holders = []

    def lock():
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        holders.append(other)

        def release():
            other.execute("COMMIT")
            other.close()

        return release

    yield path, lock
    for other in holders:
        other.close()


def test_a_locked_sqlite_file_is_a_transient_error_and_a_retry_succeeds(locked_file):
    path, lock = locked_file
    store = SQLStore(path, page_size=3, engine_options={"connect_args": {"timeout": 0.05}})
    release = lock()
    with pytest.raises(TransientError, match="could not append to conversation 'c1'.*locked") as e:
        store.append("c1", [Message("new", "user", 1)])
    assert isinstance(e.value.__cause__, sa_exc.OperationalError)
    with pytest.raises(TransientError, match="could not read a page of conversation 'c1'"):
        store.pager("c1")(None)

    def sleep(seconds):  # the lock goes away while load_history backs off
        nonlocal release
        if release is not None:
            release()
            release = None

    loaded, report = load_history_with_report(store.pager("c1"), sleep=sleep)
    assert release is None
    assert [m.id for m in loaded] == [f"m{i}" for i in range(7)]  # "new" was never written
    assert [c.outcome for c in report.calls] == ["transient", "ok", "ok", "ok"]
    store.close()


def test_a_missing_table_is_not_transient_and_is_not_retried(tmp_path):
    store = SQLStore(tmp_path / "x.sqlite")
    store.append("c1", msgs(3))
    with sa.create_engine(f"sqlite:///{tmp_path / 'x.sqlite'}").begin() as conn:
        conn.execute(sa.text("DROP TABLE convmem_messages"))
    with pytest.raises(sa_exc.OperationalError, match="no such table") as caught:
        load_history(store.pager("c1"), sleep=no_sleep)
    assert not isinstance(caught.value, TransientError)
    store.close()


# -- concurrent writers ----------------------------------------------------------------------------


def test_concurrent_appends_to_one_conversation_get_contiguous_gapless_sequences(make_store):
    store = make_store(page_size=7)
    errors = []

    def writer(w):
        try:
            for b in range(6):
                store.append("c1", [Message(f"w{w}b{b}m{i}", "user", 1) for i in range(3)])
        except Exception as error:  # pragma: no cover - asserted below
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    loaded = load_history(store.pager("c1"))
    assert len(loaded) == 4 * 6 * 3 == len({m.id for m in loaded})
    # each append is one transaction: its three messages are adjacent, in order
    for k in range(0, len(loaded), 3):
        group = [m.id for m in loaded[k : k + 3]]
        assert group == [group[0][:-1] + str(i) for i in range(3)], group
    # and every writer's batches keep their order
    for w in range(4):
        batches = [m.id.split("m")[0] for m in loaded if m.id.startswith(f"w{w}b")]
        assert batches == sorted(batches, key=lambda s: int(s.split("b")[1]))


# -- PostgreSQL: real faults -----------------------------------------------------------------------


def _terminate(admin_url, application_name):
    engine = sa.create_engine(admin_url)
    try:
        with engine.begin() as conn:
            return conn.execute(
                sa.text(
                    "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = :name AND pid <> pg_backend_pid()) AS t"
                ),
                {"name": application_name},
            ).scalar()
    finally:
        engine.dispose()


def test_a_postgresql_connection_terminated_mid_load_loses_and_repeats_nothing(clean_postgres):
    name = "convmem-loader-under-test"
    store = SQLStore(clean_postgres, page_size=10,
                     engine_options={"connect_args": {"application_name": name}})
    truth = msgs(95)
    store.append("c1", truth)
    pager = store.pager("c1")
    pages = []
    terminated = []

    def fetch(cursor):
        if len(pages) in (3, 6) and len(terminated) < len(pages) // 3:
            terminated.append(_terminate(clean_postgres, name))  # kill the pooled connection
        page = pager(cursor)
        pages.append(cursor)
        return page

    loaded, report = load_history_with_report(fetch, attempts=3, sleep=no_sleep)
    assert loaded == truth
    assert terminated == [1, 1]  # the loader's one connection, killed twice
    outcomes = [c.outcome for c in report.calls]
    assert outcomes.count("transient") == 2 and outcomes.count("ok") == 10
    failed = [c for c in report.calls if c.outcome == "transient"]
    prefix = "TransientError: SQLStore: could not read a page"
    assert all(c.error.startswith(prefix) for c in failed)
    assert sum(c.duplicates for c in report.calls) == 0
    store.close()


def test_a_terminated_connection_during_append_writes_nothing_and_a_retry_appends(clean_postgres):
    name = "convmem-writer-under-test"
    store = SQLStore(clean_postgres, engine_options={"connect_args": {"application_name": name}})
    store.append("c1", msgs(3))
    mark = store.high_water_mark("c1")
    assert _terminate(clean_postgres, name) == 1
    with pytest.raises(TransientError, match="could not append to conversation 'c1'") as caught:
        store.append("c1", msgs(2, "x"))
    assert caught.value.__cause__ is not None
    assert store.high_water_mark("c1") == mark  # nothing was written
    store.append("c1", msgs(2, "x"))
    assert load_history(store.pager("c1")) == msgs(3) + msgs(2, "x")
    store.close()


def test_a_postgresql_lock_timeout_is_transient(clean_postgres):
    store = SQLStore(clean_postgres,
                     engine_options={"connect_args": {"options": "-c lock_timeout=100"}})
    store.append("c1", msgs(2))
    holder = sa.create_engine(clean_postgres)
    conn = holder.connect()
    trans = conn.begin()
    conn.execute(sa.text(
        "SELECT last_seq FROM convmem_conversations WHERE conversation_id = 'c1' FOR UPDATE"
    ))
    try:
        with pytest.raises(TransientError, match="LockNotAvailable") as caught:
            store.append("c1", msgs(1, "x"))
        assert caught.value.__cause__.orig.sqlstate == "55P03"
        assert [m.id for m in load_history(store.pager("c1"))] == ["m0", "m1"]  # reads go on
    finally:
        trans.rollback()
        conn.close()
        holder.dispose()
    store.append("c1", msgs(1, "x"))
    assert [m.id for m in load_history(store.pager("c1"))] == ["m0", "m1", "x0"]
    store.close()


def test_an_unreachable_postgresql_server_is_transient():
    with pytest.raises(TransientError, match="could not create the tables") as caught:
        SQLStore("postgresql://convmem@127.0.0.1:1/none",
                 engine_options={"connect_args": {"connect_timeout": 2}})
    assert isinstance(caught.value.__cause__, sa_exc.OperationalError)


def test_load_history_gives_up_on_a_server_that_stays_down(tmp_path):
    store = SQLStore(tmp_path / "x.sqlite", engine_options={"connect_args": {"timeout": 0.01}})
    store.append("c1", msgs(3))
    other = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(PageLoadError) as caught:
            load_history(store.pager("c1"), attempts=3, sleep=no_sleep)
        assert caught.value.attempts == 3 and caught.value.cursor is None
        assert isinstance(caught.value.__cause__, TransientError)
    finally:
        other.execute("ROLLBACK")
        other.close()
        store.close()


# -- URLs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url,error,message",
    [
        ("mysql+pymysql://u@h/db", ValueError, "only SQLite and PostgreSQL are supported"),
        ("postgresql+psycopg2://u@h/db", ValueError, "through psycopg 3"),
        ("sqlite+pysqlcipher://", ValueError, "standard sqlite3 module"),
        ("shoppers.sqlite", ValueError, "must be a database URL .* got 'shoppers.sqlite'"),
        ("::not a url://", ValueError, "cannot parse the url"),
        (42, TypeError, "url must be a str, URL or Path, got 42"),
    ],
)
def test_bad_urls_are_named(url, error, message):
    with pytest.raises(error, match=message):
        SQLStore(url)


def test_bad_page_sizes_are_named():
    with pytest.raises(ValueError, match="page_size must be >= 1, got 0"):
        SQLStore("sqlite://", page_size=0)
    with pytest.raises(TypeError, match="page_size must be an int, got True"):
        SQLStore("sqlite://", page_size=True)


def test_a_sqlite_file_keeps_its_conversations_across_stores(tmp_path):
    path = tmp_path / "agent.sqlite"
    with SQLStore(path) as first:
        first.append("c1", msgs(4), user_id="u1")
        assert repr(first) == f"SQLStore('sqlite:///{path}', page_size=100)"
    assert "closed" in repr(first)
    with SQLStore(f"sqlite:///{path}", page_size=2) as second:
        assert second.conversation_ids() == ["c1"]
        assert load_history(second.pager("c1")) == msgs(4)
        assert second.conversations()[0].user_id == "u1"


def test_plain_postgresql_urls_use_psycopg_and_hide_the_password(postgres_url):
    url = sa.make_url(postgres_url).set(drivername="postgresql", password="s3cret")
    with SQLStore(url.render_as_string(hide_password=False)) as store:
        assert store.url.drivername == "postgresql+psycopg"
        assert "s3cret" not in repr(store) and "***" in repr(store)


# -- filling a store from a conversations file -----------------------------------------------------


@pytest.fixture(scope="module")
def sample():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated yet (scripts/make_sample_data.py)")
    return load_conversations(SAMPLE)


@pytest.mark.parametrize("backend", ["sqlite-file", "postgresql"])
def test_from_conversations_stores_every_conversation_as_loaded(request, tmp_path, sample, backend):
    url = (f"sqlite:///{tmp_path / 's.sqlite'}" if backend == "sqlite-file"
           else request.getfixturevalue("clean_postgres"))
    with SQLStore.from_conversations(url, sample, page_size=7) as store:
        assert store.conversation_ids() == [c.id for c in sample]
        infos = store.conversations()
        for conv, info in zip(sample, infos):
            assert load_history(store.pager(conv.id)) == list(conv.messages)
            assert (info.user_id, info.listing_ids, info.messages) == (
                conv.user_id, conv.listing_ids, len(conv.messages))
        mark = store.high_water_mark(sample[0].id)
    with pytest.raises(ValueError, match=rf"already holds conversation\(s\) \['{sample[0].id}'"):
        SQLStore.from_conversations(url, sample[:1])
    with SQLStore(url) as again:  # nothing was added by the refused call
        assert again.high_water_mark(sample[0].id) == mark


def test_from_conversations_refuses_bad_input(sample):
    with pytest.raises(TypeError, match=r"conversations\[1\] must be a Conversation, got 'x'"):
        SQLStore.from_conversations("sqlite://", [sample[0], "x"])
    with pytest.raises(ValueError, match=r"conversations\[1\] repeats the id"):
        SQLStore.from_conversations("sqlite://", [sample[0], sample[0]])
    with pytest.raises(TypeError, match="must be a list of Conversation"):
        SQLStore.from_conversations("sqlite://", "conversations.jsonl")


# -- the bundled sample store ----------------------------------------------------------------------


def _sample_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_sample_data", ROOT / "scripts" / "make_sample_data.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_sample_store_holds_the_sample_conversations(sample):
    path = ROOT / "sample_data" / "shoppers.sqlite"
    assert path.is_file() and path.stat().st_size < 400_000
    before = path.read_bytes()
    with SQLStore(path, page_size=10) as store:
        assert store.conversation_ids() == [c.id for c in sample]
        for conv in sample:
            assert load_history(store.pager(conv.id)) == list(conv.messages)
        assert sum(i.messages for i in store.conversations()) == 435
    assert path.read_bytes() == before  # reading never writes to the file
    script = _sample_script()
    assert script.sqlite_is_current(path, SAMPLE.read_text(encoding="utf-8"))


def test_the_sample_check_sees_a_stale_store(tmp_path, sample):
    script = _sample_script()
    jsonl = SAMPLE.read_text(encoding="utf-8")
    path = tmp_path / "shoppers.sqlite"
    script.write_sqlite(path, jsonl)
    assert script.sqlite_is_current(path, jsonl)
    with SQLStore(path) as store:
        store.append(sample[0].id, [Message("extra", "user", 1)])
    assert not script.sqlite_is_current(path, jsonl)
    script.write_sqlite(path, jsonl)  # replaces the file
    assert script.sqlite_is_current(path, jsonl)
