"""Real message stores: :class:`SQLStore`, conversations in SQLite or PostgreSQL (SQLAlchemy Core).

The test doubles (PagedStore, ScriptedStore, FlakyStore, VirtualClock, ...) live in
:mod:`convmem.testing`.

A store keeps many conversations; ``store.pager(conversation_id)`` is the ``fetch_page(cursor)``
callable :func:`convmem.load_history` takes::

    store = SQLStore("sqlite:///agent.sqlite")          # or "postgresql+psycopg://user@host/db"
    store.append("c1", [Message("u1", "user", 12, content="Where is my order?")])
    history = load_history(store.pager("c1"), attempts=5)

The contract a store keeps so that appends during a load are neither skipped nor repeated
(docs/decisions.md, "Real stores"):

* **Stable, monotonic cursors.** Every message of a conversation gets a sequence number when it is
  appended: 1, 2, 3, ... with no gaps, in commit order (appends to one conversation are serialized
  on its row in the conversations table, so a reader that sees sequence ``s`` sees every sequence
  below ``s`` too). A cursor names a position *between* two sequence numbers ("after 200"), never
  an offset, so it means the same thing however many messages arrive later; the next cursor is
  always past the previous one, so a walk never loops.
* **Bounded loads.** ``high_water_mark(cid)`` is the position after the newest message now;
  ``pager(cid, high_water=mark)`` serves exactly the messages up to it, whatever arrives during the
  load, and ``pager(cid, after=mark)`` serves exactly what arrived since. Together they partition
  the conversation: nothing twice, nothing missed.
* **Offset cursors** (``LIMIT/OFFSET``, or ``"p<offset>"`` as in
  :class:`convmem.testing.PagedStore`) do not keep this contract once messages arrive or go in the middle or, when paging newest first,
  at the end: a page can start with messages already served (load_history removes them by id) or
  skip messages that moved past the offset, and a skipped message cannot be seen from the client.

>>> from convmem import Message, load_history
>>> store = SQLStore("sqlite://", page_size=2)
>>> mark = store.append("c1", [Message(f"m{i}", "user", 1) for i in range(5)])
>>> pager = store.pager("c1", high_water=mark)
>>> page, cursor = pager(None); [m.id for m in page]
['m0', 'm1']
>>> _ = store.append("c1", [Message("late", "user", 1)])      # arrives during the load
>>> [m.id for m in load_history(pager)]                       # stops at the mark it was given
['m0', 'm1', 'm2', 'm3', 'm4']
>>> [m.id for m in load_history(store.pager("c1", after=mark))]   # the follow-up
['late']
>>> [m.id for m in load_history(store.pager("c1", newest_first=True))]
['late', 'm4', 'm3', 'm2', 'm1', 'm0']
>>> store.close()
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

try:
    import sqlalchemy as sa
except ModuleNotFoundError as exc:  # the optional extra is not installed
    if exc.name != "sqlalchemy":
        raise
    raise ModuleNotFoundError(
        "convmem.stores needs SQLAlchemy, which is not installed: pip install 'convmem[sql]' "
        "(from a clone: pip install '.[sql]'; PostgreSQL also needs psycopg, in the same extra)",
        name="sqlalchemy",
    ) from exc
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql as sa_postgresql
from sqlalchemy.dialects import sqlite as sa_sqlite
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.pool import StaticPool

from .errors import TransientError
from .keyset import (
    ConversationInfo,
    KeysetPager,
    _check_id,
    _encode,
    _message_rows,
    new_pager,
)
from .message import Message

__all__ = [
    "ConversationInfo",
    "KeysetPager",
    "CONNECT_TIMEOUT_S",
    "POSTGRES_MAX_ID_BYTES",
    "SQLStore",
    "TRANSIENT_SQLSTATES",
    "is_transient_db_error",
]

#: PostgreSQL SQLSTATEs a retry can cure: serialization failure, deadlock, lock timeout
#: (lock_not_available), statement timeout (query_canceled), the server shutting down or
#: terminating the connection (admin_shutdown is what pg_terminate_backend sends), not accepting
#: connections yet, too many connections. Class 08 (connection exception) is transient too.
TRANSIENT_SQLSTATES: frozenset[str] = frozenset(
    {"40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03", "53300"}
)

#: SQLite result codes a retry can cure: SQLITE_BUSY (5) and SQLITE_LOCKED (6), with any extended
#: code (the low byte is the primary code).
_SQLITE_TRANSIENT = frozenset({5, 6})

#: Seconds a PostgreSQL connection attempt may take before it fails (psycopg's ``connect_timeout``),
#: unless the URL's query or ``engine_options["connect_args"]`` names its own. Without it a host that
#: accepts the TCP connection and never answers (a firewall, a wedged server) hangs the caller.
CONNECT_TIMEOUT_S = 10

#: libpq connection keywords that hold a secret when given in the URL's query string
#: (``postgresql://u@h/db?password=...``): shown as ``***`` like the URL's password.
_SECRET_QUERY_KEYS = ("password", "sslpassword")
#: The password of ``scheme://user:password@host`` in a URL that could not be parsed.
_RAW_PASSWORD = re.compile(r"(://[^/@:]*:)[^/]*@")  # up to the last @ of the authority

#: PostgreSQL: the longest conversation or message id, in UTF-8 bytes. The unique index on
#: ``(conversation_id, message_id)`` keeps both in one btree entry of at most 2704 bytes; a longer
#: (incompressible) id failed there with a bare ProgramLimitExceeded.
POSTGRES_MAX_ID_BYTES = 1024

_MESSAGES = "convmem_messages"
_CONVERSATIONS = "convmem_conversations"
_DUPLICATE_CHECK_CHUNK = 500


def is_transient_db_error(error: BaseException) -> bool:
    """Whether a database error is one a retry can cure.

    True for: a connection SQLAlchemy saw drop (``connection_invalidated``), a pool checkout
    timeout, SQLite ``SQLITE_BUSY``/``SQLITE_LOCKED`` ("database is locked"), PostgreSQL SQLSTATEs
    in :data:`TRANSIENT_SQLSTATES` or class 08, and a psycopg OperationalError with no SQLSTATE
    (the connection failed or was lost before the server could answer). False for everything else:
    a missing table, a constraint violation, bad SQL, a wrong password (28P01) - retrying those
    would fail the same way.

    >>> import sqlite3
    >>> err = sqlite3.OperationalError("database is locked"); err.sqlite_errorcode = 5
    >>> is_transient_db_error(sa_exc.OperationalError("SELECT 1", {}, err))
    True
    >>> err = sqlite3.OperationalError("no such table: x"); err.sqlite_errorcode = 1
    >>> is_transient_db_error(sa_exc.OperationalError("SELECT 1", {}, err))
    False
    """
    if isinstance(error, sa_exc.TimeoutError):  # QueuePool checkout timed out
        return True
    if not isinstance(error, sa_exc.DBAPIError):
        return False
    if error.connection_invalidated:
        return True
    orig = error.orig
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _SQLITE_TRANSIENT
    sqlstate = getattr(orig, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate:
        return sqlstate in TRANSIENT_SQLSTATES or sqlstate.startswith("08")
    module = type(orig).__module__ or ""
    return module.startswith("psycopg") and isinstance(error, sa_exc.OperationalError)


def _check_no_nul(owner: str, field: str, text: Any) -> None:
    """ValueError naming ``field`` when ``text`` (a str; anything else passes) holds U+0000."""
    if isinstance(text, str) and "\x00" in text:
        raise ValueError(
            f"{owner}: {field} holds a NUL character (U+0000) at index {text.index(chr(0)):,}, "
            f"which PostgreSQL text cannot store"
        )


def _check_postgres_text(
    owner: str, cid: str, user_id: str | None, batch: Sequence[Message],
    listing_ids: Sequence[str] | None,
) -> None:
    """What PostgreSQL refuses, named before it is sent: a NUL character (``text`` cannot hold
    U+0000; SQLite can) in any field, an id over :data:`POSTGRES_MAX_ID_BYTES`. O(total text),
    C-level scans.

    Raises:
        ValueError: names the field (``messages[i].content`` ...) and where.
    """
    fields: list[tuple[str, str | None]] = [("conversation_id", cid), ("user_id", user_id)]
    fields += [(f"listing_ids[{k}]", x) for k, x in enumerate(listing_ids or ())]
    for i, m in enumerate(batch):
        fields += [(f"messages[{i}].id", m.id), (f"messages[{i}].content", m.content),
                   (f"messages[{i}].tool_call_id", m.tool_call_id)]
        fields += [(f"messages[{i}].tool_call_ids[{k}]", x) for k, x in enumerate(m.tool_call_ids)]
    for field, text in fields:
        _check_no_nul(owner, field, text)
    for field, text in fields[:1] + [(f, t) for f, t in fields if f.endswith("].id")]:
        size = len(text.encode()) if text and len(text) > POSTGRES_MAX_ID_BYTES // 4 else 0
        if size > POSTGRES_MAX_ID_BYTES:
            raise ValueError(
                f"{owner}: {field} is {size:,} bytes in UTF-8; PostgreSQL indexes ids of at most "
                f"{POSTGRES_MAX_ID_BYTES:,} bytes (POSTGRES_MAX_ID_BYTES), got {text[:40]!r}..."
            )


def _json_ids(text: str | None, field: str) -> tuple[str, ...]:
    """A JSON list of ids as stored in a text column (NULL or empty: no ids).

    Raises:
        ValueError: not a JSON list of strings (names the field and the stored text).
    """
    if not text:
        return ()
    try:
        ids = json.loads(text)
    except ValueError:
        ids = None
    if not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
        raise ValueError(f"{field} must be a JSON list of strings, got {text[:200]!r}")
    return tuple(ids)


# -- the store -------------------------------------------------------------------------------------


class SQLStore:
    """Conversations in a SQL database: SQLite embedded by default, PostgreSQL (psycopg 3) at scale.

    ``SQLStore(url, *, page_size=100)`` opens (and creates, if absent) two tables through
    SQLAlchemy Core: ``convmem_messages`` (one row per message: conversation id, sequence number,
    message id, role, tokens, content, tool-call ids as JSON text, tool-call id; primary key
    ``(conversation_id, seq)``, unique ``(conversation_id, message_id)``) and
    ``convmem_conversations`` (id, user id, listing ids, last sequence number; appends lock its row,
    which is what keeps sequence numbers in commit order).

    The URL picks the database:

    * ``"sqlite://"`` - in memory, private to this store (one connection shared by all threads, and
      every call serialized on a lock, so a thread never sees another's uncommitted append);
    * ``"sqlite:///path/file.sqlite"`` (or a :class:`pathlib.Path`) - a file; one connection per
      thread from a pool; a writer waits up to 5 s for SQLite's lock, then TransientError;
    * ``"postgresql+psycopg://user:pw@host:port/db"`` (``postgresql://`` means psycopg 3 too).

    Paging is keyset on ``(conversation_id, seq)`` with opaque cursors (see
    :class:`~convmem.keyset.KeysetPager`). The contract it keeps, and that any store must keep for
    load_history to stay exact while messages arrive: **stable, monotonic cursors** - a cursor
    names a position between two sequence numbers, never an offset; sequence numbers are gapless
    and in commit order; the next cursor is always past the previous one. So appends during a load
    are neither skipped nor repeated, ``pager(cid, high_water=high_water_mark(cid))`` stops at the
    mark it was given and ``pager(cid, after=mark)`` returns exactly what arrived since. A store
    with offset cursors breaks this when the list moves: repeated messages (removed by id by
    load_history) or skipped ones (a gap no client can see); see the module doc and
    docs/decisions.md. An unknown conversation is an empty one (its pager serves one empty page).

    Database errors a retry can cure (see :func:`is_transient_db_error`: connection lost, lock or
    statement timeout, serialization failure, deadlock, SQLite busy) surface as
    :class:`convmem.TransientError` with the SQLAlchemy error as ``__cause__``; every other database
    error propagates as SQLAlchemy raised it. Thread-safe. Use as a context manager, or call
    :meth:`close`; a closed store raises ValueError.

    Args:
        url: a database URL (str or :class:`sqlalchemy.engine.URL`) or a Path to a SQLite file.
        page_size: messages per page of the pagers it makes (int >= 1).
        engine_options: extra keyword arguments for :func:`sqlalchemy.create_engine` (e.g.
            ``{"connect_args": {"application_name": "agent"}}``, ``{"pool_size": 10}``).

    A PostgreSQL connection attempt fails after :data:`CONNECT_TIMEOUT_S` seconds (TransientError)
    unless the URL (``?connect_timeout=``) or ``engine_options["connect_args"]`` sets its own.
    Errors and ``repr`` show the URL with its password (and ``?password=`` / ``?sslpassword=``)
    as ``***``.

    Raises:
        TypeError / ValueError: a bad url (names it; only sqlite and postgresql+psycopg), a
            SQLite file that cannot be opened (a missing folder, a folder, not a database: names
            the file), a bad page_size.
        TransientError: the database could not be reached to create the tables.
        On every constructor failure after the engine was created, the engine is disposed (its
        pool holds no connection).
    """

    def __init__(
        self,
        url: str | URL | Path,
        *,
        page_size: int = 100,
        engine_options: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(page_size, bool) or not isinstance(page_size, int):
            raise TypeError(f"SQLStore: page_size must be an int, got {page_size!r}")
        if page_size < 1:
            raise ValueError(f"SQLStore: page_size must be >= 1, got {page_size!r}")
        if engine_options is not None and not isinstance(engine_options, Mapping):
            raise TypeError(
                f"SQLStore: engine_options must be a dict of create_engine arguments, got "
                f"{engine_options!r}"
            )
        self.page_size = page_size
        parsed = self._parse_url(url)
        self.url: URL = parsed
        options: dict[str, Any] = {}
        backend = parsed.get_backend_name()
        self.dialect = backend
        self._memory = backend == "sqlite" and self._is_memory(parsed)
        if self._memory:
            options["poolclass"] = StaticPool
            options["connect_args"] = {"check_same_thread": False}
        options.update(engine_options or {})
        if backend == "postgresql":
            options["connect_args"] = self._with_connect_timeout(parsed, options)
        try:
            self._engine: Engine = sa.create_engine(parsed, **options)
        except (sa_exc.ArgumentError, TypeError) as error:
            where = self._safe_url(parsed)
            raise ValueError(f"SQLStore: cannot open {where!r}: {error}") from error
        try:
            self._open(parsed, backend)
        except BaseException:
            # Every failure after the engine exists (TransientError, ValueError, anything else)
            # releases its pool: a failed constructor leaves no connection behind.
            self._engine.dispose()
            raise

    # -- construction helpers ----------------------------------------------------------------

    def _open(self, parsed: URL, backend: str) -> None:
        """Define the tables and create those missing (the constructor disposes the engine on any
        error this raises). TransientError when the database cannot be reached; ValueError for a
        SQLite file that cannot be opened; other database errors as SQLAlchemy raised them."""
        if backend == "postgresql":
            self._reader = self._engine.execution_options(isolation_level="AUTOCOMMIT")
        else:
            self._reader = self._engine
        self._lock: Any = threading.RLock() if self._memory else nullcontext()
        self._closed = False
        self._define_tables()
        try:
            with self._errors("create the tables"), self._lock:
                self._metadata.create_all(self._engine, checkfirst=True)
        except sa_exc.DBAPIError as error:
            if backend != "sqlite":
                raise
            raise ValueError(  # sqlite3 names no file: "unable to open database file"
                f"SQLStore: cannot open the SQLite file {parsed.database!r} "
                f"({type(error.orig).__name__}: {error.orig})"
            ) from error

    @staticmethod
    def _parse_url(url: Any) -> URL:
        if isinstance(url, Path):
            return URL.create("sqlite", database=str(url))
        if isinstance(url, URL):
            parsed = url
        elif isinstance(url, str):
            if "://" not in url:
                raise ValueError(
                    f"SQLStore: url must be a database URL such as 'sqlite:///file.sqlite', "
                    f"'sqlite://' or 'postgresql+psycopg://user@host/db' (or a Path to a SQLite "
                    f"file), got {url!r}"
                )
            try:
                parsed = make_url(url)
            except (sa_exc.ArgumentError, ValueError) as error:  # ValueError: a port not a number
                shown = _RAW_PASSWORD.sub(r"\1***@", url)
                raise ValueError(f"SQLStore: cannot parse the url {shown!r}: {error}") from None
        else:
            raise TypeError(f"SQLStore: url must be a str, URL or Path, got {url!r}")
        backend, driver = parsed.get_backend_name(), parsed.get_driver_name()
        if backend == "sqlite":
            if driver != "pysqlite":
                raise ValueError(
                    f"SQLStore: SQLite is opened with the standard sqlite3 module ('sqlite://'), "
                    f"got driver {driver!r} in {SQLStore._safe_url(parsed)!r}"
                )
            return parsed
        if backend == "postgresql":
            if "+" not in parsed.drivername:
                return parsed.set(drivername="postgresql+psycopg")
            if driver != "psycopg":
                raise ValueError(
                    f"SQLStore: PostgreSQL is reached through psycopg 3 ('postgresql+psycopg://' "
                    f"or 'postgresql://'), got driver {driver!r} in {SQLStore._safe_url(parsed)!r}"
                )
            return parsed
        raise ValueError(
            "SQLStore: only SQLite and PostgreSQL are supported, got "
            f"{SQLStore._safe_url(parsed)!r}"
        )

    @staticmethod
    def _is_memory(url: URL) -> bool:
        return url.database in (None, "", ":memory:") or url.query.get("mode") == "memory"

    @staticmethod
    def _safe_url(url: URL) -> str:
        """The URL as errors and repr show it: its password and secret query values as ``***``."""
        secrets = {key: "***" for key in _SECRET_QUERY_KEYS if key in url.query}
        if secrets:
            url = url.update_query_dict(secrets)
        return url.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")

    @staticmethod
    def _with_connect_timeout(url: URL, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options["connect_args"]`` plus ``connect_timeout`` = :data:`CONNECT_TIMEOUT_S`,
        unless the URL's query or the caller's connect_args already set one."""
        connect_args = dict(options.get("connect_args") or {})
        if "connect_timeout" not in url.query:
            connect_args.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
        return connect_args

    def _define_tables(self) -> None:
        md = sa.MetaData()
        self._metadata = md
        self._conversations = sa.Table(
            _CONVERSATIONS,
            md,
            sa.Column("ordinal", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("conversation_id", sa.Text, nullable=False, unique=True),
            sa.Column("user_id", sa.Text, nullable=True),
            sa.Column("listing_ids", sa.Text, nullable=True),
            sa.Column("last_seq", sa.BigInteger, nullable=False),
        )
        self._messages = sa.Table(
            _MESSAGES,
            md,
            sa.Column("conversation_id", sa.Text, primary_key=True),
            sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
            sa.Column("message_id", sa.Text, nullable=False),
            sa.Column("role", sa.String(16), nullable=False),
            sa.Column("tokens", sa.Integer, nullable=False),
            sa.Column("content", sa.Text, nullable=True),
            sa.Column("tool_call_ids", sa.Text, nullable=True),
            sa.Column("tool_call_id", sa.Text, nullable=True),
            sa.UniqueConstraint("conversation_id", "message_id", name="uq_convmem_message_id"),
        )
        m, c = self._messages, self._conversations
        columns = (m.c.seq, m.c.message_id, m.c.role, m.c.tokens, m.c.content,
                   m.c.tool_call_ids, m.c.tool_call_id)
        where = (
            (m.c.conversation_id == sa.bindparam("cid"))
            & (m.c.seq > sa.bindparam("lo"))
            & (m.c.seq <= sa.bindparam("hi"))
        )
        self._page_up = (
            sa.select(*columns).where(where).order_by(m.c.seq).limit(sa.bindparam("n"))
        )
        self._page_down = (
            sa.select(*columns).where(where).order_by(m.c.seq.desc()).limit(sa.bindparam("n"))
        )
        self._last_seq = sa.select(c.c.last_seq).where(c.c.conversation_id == sa.bindparam("cid"))
        insert = sa_postgresql.insert if self.dialect == "postgresql" else sa_sqlite.insert
        self._new_conversation = insert(c).on_conflict_do_nothing(
            index_elements=["conversation_id"]
        )
        self._bump = (
            sa.update(c)
            .where(c.c.conversation_id == sa.bindparam("cid"))
            .values(last_seq=c.c.last_seq + sa.bindparam("n", type_=sa.BigInteger))
            .returning(c.c.last_seq, c.c.user_id)
        )

    # -- errors and state --------------------------------------------------------------------

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except sa_exc.SQLAlchemyError as error:
            if is_transient_db_error(error):
                reason = getattr(error, "orig", None) or error
                raise TransientError(
                    f"SQLStore: could not {what} on {self._safe_url(self.url)!r} "
                    f"({type(reason).__name__}: {str(reason).strip().splitlines()[0]}); "
                    f"a retry may succeed"
                ) from error
            raise

    def _check_key(self, owner: str, name: str, value: Any) -> None:
        """PostgreSQL: a ValueError for an id holding NUL (no row can hold one; the driver raised
        a bare DataError). Other databases store NUL: nothing to check."""
        if self.dialect == "postgresql":
            _check_no_nul(owner, name, value)

    def _check_open(self, owner: str) -> None:
        if self._closed:
            raise ValueError(f"{owner}: the store is closed")

    # -- reading -----------------------------------------------------------------------------

    def _page(self, cid: str, lo: int, hi: int, n: int, *, descending: bool) -> list[Any]:
        self._check_open("SQLStore.pager")
        statement = self._page_down if descending else self._page_up
        with self._errors(f"read a page of conversation {cid!r}"), self._lock:
            with self._reader.connect() as conn:
                return list(conn.execute(statement, {"cid": cid, "lo": lo, "hi": hi, "n": n}))

    @staticmethod
    def _message(cid: str, row: Any) -> Message:
        seq, message_id, role, tokens, content, tool_call_ids, tool_call_id = row
        try:
            return Message(
                message_id,
                role,
                tokens,
                content,
                _json_ids(tool_call_ids, "tool_call_ids"),
                tool_call_id,
            )
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"SQLStore: row seq={seq} of conversation {cid!r} is not a valid message: {error}"
            ) from error

    def pager(
        self,
        conversation_id: str,
        *,
        newest_first: bool = False,
        after: str | None = None,
        high_water: str | None = None,
        page_size: int | None = None,
    ) -> KeysetPager:
        """The ``fetch_page(cursor)`` callable for ``conversation_id``, to pass to load_history.

        Args:
            conversation_id: the conversation (unknown: an empty conversation).
            newest_first: page from the newest message to the oldest (each page newest first too).
                The walk is bounded above by the newest message when its first page is served, so
                arrivals during it are never served; ``pager.position`` is the mark of that top.
            after: a mark (from :meth:`high_water_mark`, :meth:`append`, :meth:`cursor_after` or
                ``KeysetPager.position``): serve only messages after it.
            high_water: a mark: serve only messages up to it, whatever arrives during the walk.
            page_size: messages per page; default the store's ``page_size``.

        Creating a pager reads nothing (O(1)); each call is one query (see
        :class:`~convmem.keyset.KeysetPager`).

        Raises:
            TypeError / ValueError: a bad id, a mark that is not one (or is another
                conversation's), a bad page_size, a closed store.
        """
        self._check_open("SQLStore.pager")
        self._check_key("SQLStore.pager", "conversation_id", conversation_id)
        return new_pager(
            self, "SQLStore.pager", conversation_id, newest_first, after, high_water,
            self.page_size if page_size is None else page_size,
        )

    def high_water_mark(self, conversation_id: str) -> str:
        """The mark after the newest message of ``conversation_id`` now (an opaque str).

        ``pager(cid, high_water=mark)`` serves exactly the messages up to it; ``pager(cid,
        after=mark)`` exactly those appended later. One primary-key lookup.

        Raises:
            TransientError: as for every call; ValueError on a closed store.
        """
        self._check_open("SQLStore.high_water_mark")
        cid = _check_id("SQLStore.high_water_mark", "conversation_id", conversation_id)
        self._check_key("SQLStore.high_water_mark", "conversation_id", cid)
        with self._errors(f"read the high-water mark of {cid!r}"), self._lock:
            with self._reader.connect() as conn:
                last = conn.execute(self._last_seq, {"cid": cid}).scalar()
        return _encode("m", last or 0, cid)

    def cursor_after(self, conversation_id: str, message_id: str) -> str:
        """The mark after the message ``message_id``: resume an oldest-first load after it.

        Raises:
            ValueError: no such message in the conversation (names both), a closed store.
        """
        self._check_open("SQLStore.cursor_after")
        cid = _check_id("SQLStore.cursor_after", "conversation_id", conversation_id)
        mid = _check_id("SQLStore.cursor_after", "message_id", message_id)
        self._check_key("SQLStore.cursor_after", "conversation_id", cid)
        self._check_key("SQLStore.cursor_after", "message_id", mid)
        m = self._messages
        query = sa.select(m.c.seq).where((m.c.conversation_id == cid) & (m.c.message_id == mid))
        with self._errors(f"find message {mid!r} of {cid!r}"), self._lock:
            with self._reader.connect() as conn:
                seq = conn.execute(query).scalar()
        if seq is None:
            raise ValueError(
                f"SQLStore.cursor_after: conversation {cid!r} has no message {mid!r}"
            )
        return _encode("m", seq, cid)

    def conversation_ids(self) -> list[str]:
        """Every conversation id, in the order the conversations were first appended to."""
        self._check_open("SQLStore.conversation_ids")
        c = self._conversations
        query = sa.select(c.c.conversation_id).order_by(c.c.ordinal)
        with self._errors("list the conversations"), self._lock:
            with self._reader.connect() as conn:
                return list(conn.execute(query).scalars())

    def conversations(self) -> list[ConversationInfo]:
        """Every conversation's :class:`ConversationInfo`, in :meth:`conversation_ids` order.

        One query (a grouped count of the messages); O(conversations).
        """
        self._check_open("SQLStore.conversations")
        c, m = self._conversations, self._messages
        counts = (
            sa.select(m.c.conversation_id, sa.func.count().label("n"))
            .group_by(m.c.conversation_id)
            .subquery()
        )
        query = (
            sa.select(c.c.conversation_id, c.c.user_id, c.c.listing_ids, c.c.last_seq, counts.c.n)
            .select_from(c.outerjoin(counts, counts.c.conversation_id == c.c.conversation_id))
            .order_by(c.c.ordinal)
        )
        with self._errors("list the conversations"), self._lock:
            with self._reader.connect() as conn:
                rows = list(conn.execute(query))
        return [
            ConversationInfo(
                cid,
                user_id,
                _json_ids(listing_ids, f"SQLStore: listing_ids of conversation {cid!r}"),
                n or 0,
                _encode("m", last_seq, cid),
            )
            for cid, user_id, listing_ids, last_seq, n in rows
        ]

    # -- writing -----------------------------------------------------------------------------

    def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        user_id: str | None = None,
    ) -> str:
        """Append ``messages`` (in order) to a conversation, in one transaction; returns the mark.

        The messages get the next sequence numbers; the conversation is created on its first
        append (with ``user_id``). All or nothing: a message id the conversation already holds
        (or one repeated in ``messages``) is a ValueError and nothing is written. Appends to one
        conversation are serialized (its conversations row is locked until commit), so sequence
        numbers are gapless and in commit order. O(len(messages)) rows written.

        If the connection drops while the COMMIT is in flight, the TransientError cannot say
        whether the append landed; retrying it is safe: if it did, the retry raises ValueError
        naming a message id already stored (message ids keep an append from landing twice).

        Returns:
            the high-water mark just after the last appended message.

        Raises:
            TypeError / ValueError: a bad id, not a list of Message, a repeated or existing message
                id (names it), a user_id other than the conversation's, a closed store.
            TransientError: the database failed in a way a retry can cure (nothing was written).
        """
        self._check_open("SQLStore.append")
        cid = _check_id("SQLStore.append", "conversation_id", conversation_id)
        if user_id is not None:
            _check_id("SQLStore.append", "user_id", user_id)
        batch = _message_rows("SQLStore.append", messages)
        with self._errors(f"append to conversation {cid!r}"), self._lock:
            with self._engine.begin() as conn:
                last = self._append(conn, "SQLStore.append", cid, batch, user_id, None)
        return _encode("m", last, cid)

    def _append(
        self,
        conn: Any,
        owner: str,
        cid: str,
        batch: list[Message],
        user_id: str | None,
        listing_ids: Sequence[str] | None,
    ) -> int:
        if self.dialect == "postgresql":
            _check_postgres_text(owner, cid, user_id, batch, listing_ids)
        conn.execute(
            self._new_conversation,
            {
                "conversation_id": cid,
                "user_id": user_id,
                "listing_ids": json.dumps(list(listing_ids)) if listing_ids else None,
                "last_seq": 0,
            },
        )
        last, stored_user = conn.execute(self._bump, {"cid": cid, "n": len(batch)}).one()
        if user_id is not None and stored_user != user_id:
            raise ValueError(
                f"{owner}: conversation {cid!r} belongs to user_id {stored_user!r}, not {user_id!r}"
            )
        if not batch:
            return int(last)
        m = self._messages
        ids = [message.id for message in batch]
        for start in range(0, len(ids), _DUPLICATE_CHECK_CHUNK):
            chunk = ids[start : start + _DUPLICATE_CHECK_CHUNK]
            taken = conn.execute(
                sa.select(m.c.message_id)
                .where((m.c.conversation_id == cid) & m.c.message_id.in_(chunk))
                .limit(1)
            ).scalar()
            if taken is not None:
                raise ValueError(f"{owner}: conversation {cid!r} already holds message {taken!r}")
        first = int(last) - len(batch) + 1
        conn.execute(
            m.insert(),
            [
                {
                    "conversation_id": cid,
                    "seq": first + i,
                    "message_id": message.id,
                    "role": message.role,
                    "tokens": message.tokens,
                    "content": message.content,
                    "tool_call_ids": json.dumps(message.tool_call_ids)
                    if message.tool_call_ids
                    else None,
                    "tool_call_id": message.tool_call_id,
                }
                for i, message in enumerate(batch)
            ],
        )
        return int(last)

    @classmethod
    def from_conversations(
        cls,
        url: str | URL | Path,
        conversations: Iterable[Any],
        *,
        page_size: int = 100,
        engine_options: Mapping[str, Any] | None = None,
    ) -> SQLStore:
        """A store at ``url`` filled with ``conversations`` (what :func:`convmem.load_conversations`
        returns), in one transaction: each conversation's messages in order, its user id and
        listing ids. Returns the open store.

        Raises:
            TypeError: an item is not a :class:`convmem.Conversation`.
            ValueError: a conversation id already in the database, or repeated; a message id
                repeated within a conversation; an id holding a lone surrogate; on PostgreSQL,
                what :meth:`append` refuses there (nothing written).
            TransientError: as for :meth:`append`.
        """
        from .conversations import Conversation

        items = list(conversations) if isinstance(conversations, Iterable) else None
        if items is None or isinstance(conversations, (str, bytes, Mapping)):
            raise TypeError(
                f"SQLStore.from_conversations: conversations must be a list of Conversation, got "
                f"{conversations!r}"
            )
        seen: set[str] = set()
        for position, conv in enumerate(items):
            if not isinstance(conv, Conversation):
                raise TypeError(
                    f"SQLStore.from_conversations: conversations[{position}] must be a "
                    f"Conversation, got {conv!r}"
                )
            if conv.id in seen:
                raise ValueError(
                    f"SQLStore.from_conversations: conversations[{position}] repeats the id "
                    f"{conv.id!r}"
                )
            seen.add(conv.id)
            # what append checks: ids an encoder can write, message ids unique in a conversation
            owner = f"SQLStore.from_conversations: conversations[{position}]"
            _check_id(owner, "id", conv.id)
            if conv.user_id is not None:
                _check_id(owner, "user_id", conv.user_id)
            _message_rows(owner, conv.messages)
        store = cls(url, page_size=page_size, engine_options=engine_options)
        try:
            existing = set(store.conversation_ids()) & seen
            if existing:
                raise ValueError(
                    f"SQLStore.from_conversations: {store._safe_url(store.url)!r} already holds "
                    f"conversation(s) {sorted(existing)!r}"
                )
            with store._errors("fill the store"), store._lock:
                with store._engine.begin() as conn:
                    for conv in items:
                        store._append(
                            conn,
                            "SQLStore.from_conversations",
                            conv.id,
                            list(conv.messages),
                            conv.user_id,
                            conv.listing_ids,
                        )
        except BaseException:
            store.close()
            raise
        return store

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close every pooled connection (an in-memory database is gone after this). Idempotent."""
        if not self._closed:
            self._closed = True
            self._engine.dispose()

    def __enter__(self) -> SQLStore:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = ", closed" if self._closed else ""
        return f"SQLStore({self._safe_url(self.url)!r}, page_size={self.page_size}{state})"


def __getattr__(name: str) -> Any:
    # The test doubles moved to convmem.testing (issue 12); the old names still resolve, with a
    # DeprecationWarning, until every caller imports them from there.
    from .testing import _moved

    return _moved.resolve(__name__, name)
