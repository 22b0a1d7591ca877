"""SQLStore under hostile setups (session 24 breaker): a server that never answers, passwords in
the URL's query, URLs that do not parse, SQLite files that cannot be opened, corrupt JSON columns,
ids that sort oddly, rows deleted mid-walk. Each of the first five failed before its fix."""

from __future__ import annotations

import socket
import threading
import traceback

import pytest
import sqlalchemy as sa

from convmem import Message, TransientError, load_history
from convmem import stores as stores_module
from convmem.stores import SQLStore
from store_support import clean_postgres, make_store, postgres_url, store  # noqa: F401

#: Seconds a test waits for SQLStore to give up before it calls the wait a hang.
HANG_GUARD_S = 60
SECRET = "s3cretPW"


def outcome_within(seconds, call):
    """``call()``'s exception (or its return value), or fail if it is still running after
    ``seconds``: the guard that turns a hang into a failing test."""
    result = {}

    def run():
        try:
            result["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            result["value"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still waiting after {seconds} s: a hang"
    return result["value"]


@pytest.fixture
def silent_server():
    """The port of a localhost server that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []

    def accept():
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for conn in accepted:
        conn.close()


def test_a_server_that_never_answers_fails_after_the_default_connect_timeout(
    silent_server, monkeypatch
):
    monkeypatch.setattr(stores_module, "CONNECT_TIMEOUT_S", 1)
    url = f"postgresql://agent:{SECRET}@127.0.0.1:{silent_server}/memory"
    error = outcome_within(HANG_GUARD_S, lambda: SQLStore(url))
    assert isinstance(error, TransientError), error
    assert "could not create the tables" in str(error) and SECRET not in str(error)


@pytest.mark.parametrize(
    "query,engine_options",
    [
        ("?connect_timeout=1", None),
        ("", {"connect_args": {"connect_timeout": 1, "application_name": "agent"}}),
    ],
)
def test_the_callers_connect_timeout_wins_over_the_default(
    silent_server, monkeypatch, query, engine_options
):
    monkeypatch.setattr(stores_module, "CONNECT_TIMEOUT_S", 3600)
    url = f"postgresql://agent@127.0.0.1:{silent_server}/memory{query}"
    error = outcome_within(HANG_GUARD_S, lambda: SQLStore(url, engine_options=engine_options))
    assert isinstance(error, TransientError), error


def test_a_password_in_the_urls_query_is_never_shown():
    url = f"postgresql://agent@127.0.0.1:1/memory?password={SECRET}&sslpassword={SECRET}"
    error = outcome_within(
        HANG_GUARD_S,
        lambda: SQLStore(url, engine_options={"connect_args": {"connect_timeout": 2}}),
    )
    assert isinstance(error, TransientError), error
    assert "password=***&sslpassword=***" in str(error)
    assert SECRET not in "".join(traceback.format_exception(error))


def test_repr_hides_a_password_in_the_query(clean_postgres):  # trust auth: the password is unused
    with SQLStore(f"{clean_postgres}?password={SECRET}") as store:
        assert repr(store) == f"SQLStore('{clean_postgres}?password=***', page_size=100)"


@pytest.mark.parametrize(
    "url,reason",
    [
        (f"postgresql://agent:{SECRET}@db.internal:notaport/memory", "'notaport'"),
        (f"post gres://agent:{SECRET}@db.internal/memory", "Could not parse"),
        (f"postgresql://agent:{SECRET[:3]}@{SECRET[3:]}@db.internal:1x/memory", "'1x'"),
    ],
)
def test_a_url_that_does_not_parse_is_named_without_its_password(url, reason):
    with pytest.raises(ValueError, match="SQLStore: cannot parse the url") as caught:
        SQLStore(url)
    assert reason in str(caught.value)
    assert "agent:***@db.internal" in str(caught.value) and SECRET not in str(caught.value)


def test_a_sqlite_file_that_cannot_be_opened_is_named(tmp_path):
    not_a_database = tmp_path / "notes.sqlite"
    not_a_database.write_bytes(b"not a database at all " * 100)
    for path, reason in [
        (tmp_path / "missing" / "a.sqlite", "unable to open database file"),
        (tmp_path, "unable to open database file"),
        (not_a_database, "file is not a database"),
    ]:
        with pytest.raises(ValueError) as caught:
            SQLStore(f"sqlite:///{path}")
        assert str(caught.value) == (
            f"SQLStore: cannot open the SQLite file {str(path)!r} "
            f"({'DatabaseError' if path == not_a_database else 'OperationalError'}: {reason})"
        )
        assert isinstance(caught.value.__cause__, sa.exc.DBAPIError)


def test_corrupt_json_columns_are_named(tmp_path):
    store = SQLStore(tmp_path / "a.sqlite")
    store.append("c1", [Message("a1", "assistant", 1, tool_call_ids=("x",))], user_id="u")
    with store._engine.begin() as conn:
        conn.execute(sa.text("UPDATE convmem_messages SET tool_call_ids = :v"), {"v": '{"x": 1}'})
        conn.execute(sa.text("UPDATE convmem_conversations SET listing_ids = :v"), {"v": "[1,"})
    with pytest.raises(ValueError) as caught:
        load_history(store.pager("c1"))
    assert str(caught.value) == (
        "SQLStore: row seq=1 of conversation 'c1' is not a valid message: tool_call_ids must be "
        """a JSON list of strings, got '{"x": 1}'"""
    )
    with pytest.raises(ValueError) as caught:
        store.conversations()
    assert str(caught.value) == (
        "SQLStore: listing_ids of conversation 'c1' must be a JSON list of strings, got '[1,'"
    )
    store.close()


ODD_IDS = ["é", "10", "9", "1" * 1000, "x\u200b", "😀", "ＡＢ", "a b", "Z", "z", "0x1F", "-1"]


def test_ids_that_sort_oddly_keep_their_order_and_their_bytes(make_store):
    store = make_store(page_size=2)
    messages = [Message(f"m{i}:{x}", "user", i, content=x) for i, x in enumerate(ODD_IDS)]
    for cid in ODD_IDS:
        store.append(cid, messages)
    assert store.conversation_ids() == ODD_IDS
    for cid in ODD_IDS:
        assert load_history(store.pager(cid)) == messages
        assert load_history(store.pager(cid, newest_first=True)) == messages[::-1]


@pytest.mark.parametrize("newest_first", [False, True])
def test_rows_deleted_mid_walk_are_skipped_and_nothing_repeats(make_store, newest_first):
    if make_store.url is None:
        pytest.skip("MemoryStore has no rows to delete behind its back")
    store = make_store(page_size=2)
    messages = [Message(f"m{i}", "user", 1) for i in range(8)]
    store.append("c1", messages)
    pager = store.pager("c1", newest_first=newest_first)
    page, cursor = pager(None)
    with store._engine.begin() as conn:  # another process deletes served and unserved rows
        conn.execute(sa.text("DELETE FROM convmem_messages WHERE seq IN (1, 4, 5, 8)"))
    served = list(page)
    while cursor is not None:
        page, cursor = pager(cursor)
        served += page
    # seq = index + 1; deleted: seq 1 and 8 (one of them already served), 4 and 5 (never served)
    expected = ["m7", "m6", "m5", "m2", "m1"] if newest_first else ["m0", "m1", "m2", "m5", "m6"]
    assert [m.id for m in served] == expected


def test_a_conversation_id_with_a_lone_surrogate_is_named_on_every_backend(make_store):
    store = make_store()
    with pytest.raises(ValueError) as caught:
        store.append("c\ud800", [Message("m", "user", 1)])
    assert "conversation_id holds a lone UTF-16 surrogate U+D800 at index 1" in str(caught.value)
    assert store.conversation_ids() == []


def long_id(n, seed=1):
    """n letters that do not compress (PostgreSQL indexes a compressed value when it can)."""
    import random
    import string

    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_letters) for _ in range(n))


@pytest.mark.parametrize(
    "cid,message,user_id,named",
    [
        ("c\x00", Message("m", "user", 1), None,
         "conversation_id holds a NUL character (U+0000) at index 1"),
        ("c", Message("m", "user", 1, content="ab\x00"), None,
         "messages[0].content holds a NUL character (U+0000) at index 2"),
        ("c", Message("m", "assistant", 1, tool_call_ids=("x\x00",)), None,
         "messages[0].tool_call_ids[0] holds a NUL character"),
        ("c", Message("m", "user", 1), "u\x00", "user_id holds a NUL character"),
        (long_id(3000), Message("m", "user", 1), None,
         "conversation_id is 3,000 bytes in UTF-8; PostgreSQL indexes ids of at most 1,024 bytes"),
        ("c", Message(long_id(1025), "user", 1), None, "messages[0].id is 1,025 bytes in UTF-8"),
    ],
)
def test_what_postgresql_cannot_store_is_named_and_nothing_is_written(
    clean_postgres, cid, message, user_id, named
):
    with SQLStore(clean_postgres) as store:
        with pytest.raises(ValueError, match=r"^SQLStore\.append: ") as caught:
            store.append(cid, [message], user_id=user_id)
        assert named in str(caught.value)
        assert store.conversation_ids() == []
        longest = Message(long_id(1024, seed=2), "user", 1)  # at the limit: stored
        store.append(long_id(1024, seed=3), [longest])
        assert load_history(store.pager(long_id(1024, seed=3))) == [longest]


def test_from_conversations_checks_what_postgresql_cannot_store(clean_postgres):
    from convmem import parse_conversations

    (conv,) = parse_conversations(
        '[{"role": "user", "content": "nul \\u0000 here"}]', format="openai-chat"
    ).conversations
    with pytest.raises(ValueError, match=r"messages\[0\]\.content holds a NUL character"):
        SQLStore.from_conversations(clean_postgres, [conv])


def test_reading_an_id_postgresql_cannot_hold_is_named(clean_postgres):
    with SQLStore(clean_postgres) as store:
        for call, owner, field in [
            (lambda: store.pager("c\x00"), "pager", "conversation_id"),
            (lambda: store.high_water_mark("c\x00"), "high_water_mark", "conversation_id"),
            (lambda: store.cursor_after("c", "m\x00"), "cursor_after", "message_id"),
        ]:
            with pytest.raises(ValueError) as caught:
                call()
            assert str(caught.value) == (
                f"SQLStore.{owner}: {field} holds a NUL character (U+0000) at index 1, which "
                f"PostgreSQL text cannot store"
            )


def test_sqlite_still_stores_and_reads_nul(tmp_path):
    with SQLStore(tmp_path / "a.sqlite") as store:
        message = Message("m\x00", "user", 1, content="a\x00b")
        store.append("c\x00", [message])
        assert load_history(store.pager("c\x00")) == [message]
        assert store.cursor_after("c\x00", "m\x00") == store.high_water_mark("c\x00")


@pytest.mark.parametrize("digits", ["1" * 5000, "0" * 5000, "9" * 19])
def test_a_cursor_with_a_huge_sequence_number_is_named(digits):
    import base64

    from convmem.keyset import _conversation_tag

    raw = f"a{digits}.{_conversation_tag('c')}".encode()
    cursor = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    with SQLStore("sqlite://") as store:
        with pytest.raises(ValueError) as caught:
            store.pager("c")(cursor)
    shown = repr(cursor) if len(cursor) <= 100 else f"{cursor[:100]!r}... ({len(cursor):,} chars)"
    reason = "is out of range" if len(digits) == 19 else "is not a cursor this store issued"
    assert str(caught.value) == f"KeysetPager: cursor {shown} {reason}"


@pytest.mark.parametrize(
    "conversation,message",
    [
        (("c1", None, (Message("x", "user", 1), Message("x", "user", 2))),
         "conversations[1]: messages[1] repeats the id 'x'"),
        (("c\ud800", None, (Message("x", "user", 1),)),
         "conversations[1]: id holds a lone UTF-16 surrogate U+D800 at index 1"),
        (("c1", "u\ud800", (Message("x", "user", 1),)),
         "conversations[1]: user_id holds a lone UTF-16 surrogate U+D800 at index 1"),
    ],
)
def test_from_conversations_checks_ids_as_append_does(tmp_path, conversation, message):
    from convmem import Conversation

    path = tmp_path / "a.sqlite"
    good = Conversation("c0", None, (Message("m", "user", 1),))
    with pytest.raises(ValueError) as caught:
        SQLStore.from_conversations(path, [good, Conversation(*conversation)])
    assert str(caught.value).startswith(f"SQLStore.from_conversations: {message}")
    assert not path.exists()  # checked before the database is opened: nothing written
