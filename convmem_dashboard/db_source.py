"""A live database as a dashboard dataset: validate its URL, read its conversations (pure, no streamlit).

An engineer points the dashboard at the database their agent writes to (a
:class:`convmem.stores.SQLStore`: SQLite file or PostgreSQL); every page then shows its
conversations, each read through :func:`convmem.load_history` over ``SQLStore.pager``.

* :func:`parse_database_url` validates what was typed (a SQLite file path or ``sqlite:///`` URL,
  or a ``postgresql://`` / ``postgresql+psycopg://`` URL) and returns a :class:`DatabaseSource`
  whose :attr:`~DatabaseSource.key` (``"db:<16 hex>"``) names it in links. The key hashes the URL
  *without* its password, and the password is never in :attr:`~DatabaseSource.shown` nor in any
  error message: the URL with its password stays on the server.
* :func:`read_database` opens it **read-only** (SQLite ``mode=ro``; PostgreSQL
  ``default_transaction_read_only``), checks that the convmem tables are there, lists the
  conversations and loads each one (bounded: :data:`MAX_DB_CONVERSATIONS` conversations and
  :data:`MAX_DB_MESSAGES` messages; what was left out is counted in :class:`DatabaseRead`).
* Every failure - a bad URL, a missing file, a server that does not answer, a wrong password,
  missing tables - is a :class:`DatabaseSourceError` with one readable sentence.

>>> parse_database_url("mysql://u:secret@h/db")
Traceback (most recent call last):
...
convmem_dashboard.db_source.DatabaseSourceError: only SQLite and PostgreSQL databases can be opened, got 'mysql://u:***@h/db'
>>> src = parse_database_url("postgresql://agent:secret@db.internal:5432/memory")
>>> src.shown, src.key == parse_database_url("postgresql://agent:other@db.internal:5432/memory").key
('postgresql+psycopg://agent:***@db.internal:5432/memory', True)
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

# SQLAlchemy (~0.5 s to import) is imported by the functions that open a database, not here:
# every page imports this module through data.py, and most views never open one (issue 10 item 3,
# a cold first view under 2 s).
if TYPE_CHECKING:
    from sqlalchemy.engine import URL

from convmem import Conversation, PageLoadError, TransientError, load_history

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DatabaseRead",
    "DatabaseSource",
    "DatabaseSourceError",
    "MAX_DB_CONVERSATIONS",
    "MAX_DB_MESSAGES",
    "MAX_URL_CHARS",
    "TABLES",
    "conversation_listing",
    "parse_database_url",
    "read_database",
]

#: Conversations read from one database (the first ones, in the order they were first appended).
MAX_DB_CONVERSATIONS = 500
#: Messages read from one database in all; a conversation that would pass it is left out whole.
MAX_DB_MESSAGES = 200_000
#: Seconds to wait for a PostgreSQL server to accept the connection.
CONNECT_TIMEOUT_S = 5
#: Longest URL or path accepted (characters).
MAX_URL_CHARS = 1000
#: The tables a convmem SQLStore keeps (convmem.stores).
TABLES = ("convmem_conversations", "convmem_messages")
_PAGE_SIZE = 500
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class DatabaseSourceError(ValueError):
    """A database the dashboard cannot open or read; ``str()`` is one readable sentence with no
    password in it."""



def __getattr__(name: str) -> Any:
    """``db_source.sa`` / ``db_source.sa_exc``: SQLAlchemy and its exceptions, imported on first use."""
    if name == "sa":
        import sqlalchemy

        return sqlalchemy
    if name == "sa_exc":
        from sqlalchemy import exc

        return exc
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

@dataclass(frozen=True, slots=True)
class DatabaseSource:
    """A validated database URL.

    Attributes:
        url: the SQLAlchemy URL to connect with (with its password: keep it on the server).
        shown: the URL as shown to people, password replaced by ``***``.
        key: the dataset key, ``"db:"`` + 16 hex digits of SHA-256 of ``shown``.
        dialect: ``"sqlite"`` or ``"postgresql"``.
    """

    url: URL
    shown: str
    key: str
    dialect: str

    @property
    def short(self) -> str:
        """A short name for labels: the SQLite file's name, or PostgreSQL's ``host/database``.

        >>> parse_database_url("postgresql://a:pw@db.internal:5432/memory").short
        'db.internal/memory'
        """
        if self.dialect == "sqlite":
            return Path(self.shown.removeprefix("sqlite:///")).name
        return f"{self.url.host or 'localhost'}/{self.url.database}"

    def __repr__(self) -> str:  # never the password, even in a traceback or a log
        return f"DatabaseSource({self.shown!r}, key={self.key!r})"


@dataclass(frozen=True, slots=True)
class DatabaseRead:
    """What :func:`read_database` read.

    Attributes:
        conversations: the conversations loaded, in store order (at most the caps).
        total_conversations, total_messages: what the database holds.
        skipped_over_cap: conversations left out by the caps.
    """

    conversations: tuple[Conversation, ...]
    total_conversations: int
    total_messages: int
    skipped_over_cap: int


#: libpq connection keywords that hold a secret when given in the URL's query string
#: (``postgresql://u@h/db?password=...``): shown as ``***`` and scrubbed like the password.
_SECRET_QUERY_KEYS = ("password", "sslpassword")


def _hidden(url: URL) -> str:
    secrets = {k: "***" for k in _SECRET_QUERY_KEYS if k in url.query}
    if secrets:
        url = url.update_query_dict(secrets)
    return url.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")


def _scrub(text: str, url: URL | None) -> str:
    """``text`` with the URL's password and secret query values (if any) replaced by ``***``,
    as typed and percent-encoded, wherever one stands alone: not inside a longer run of letters
    and digits. Replacing every occurrence garbled the message of a short password (password
    "p": "***ort 1 failed"; a new user), and a secret that only appears inside another word is
    not that secret."""
    if url is None:
        return text
    secrets = [url.password] if url.password else []
    for key in _SECRET_QUERY_KEYS:
        value = url.query.get(key)
        secrets += [value] if isinstance(value, str) else list(value or ())
    forms = {form for x in secrets if x for form in (str(x), quote(str(x), safe=""))}
    for secret in sorted(forms, key=len, reverse=True):
        text = re.sub(rf"(?<![^\W_]){re.escape(secret)}(?![^\W_])", "***", text)
    return text


def _sqlite_source(path_text: str, shown_as: str) -> DatabaseSource:
    try:
        path = Path(path_text).expanduser()
        is_file = path.is_file()
        resolved = path.resolve() if is_file else path
    except (OSError, RuntimeError) as error:
        # a name over the OS limit (OSError), a ``~user`` with no home (RuntimeError), ...
        raise DatabaseSourceError(f"cannot use the SQLite path {shown_as!r}: {error}") from None
    if not is_file:
        raise DatabaseSourceError(
            f"no SQLite file at {shown_as!r} (the dashboard opens an existing file read-only and "
            f"never creates one)"
        )
    # Read-only: the dashboard never writes to an agent's database (and never creates tables).
    from sqlalchemy.engine import URL

    url = URL.create("sqlite", database=f"file:{resolved}", query={"mode": "ro", "uri": "true"})
    shown = f"sqlite:///{resolved}"
    key = "db:" + hashlib.sha256(shown.encode()).hexdigest()[:16]
    return DatabaseSource(url, shown, key, "sqlite")


def parse_database_url(text: Any) -> DatabaseSource:
    """Validate a database URL or SQLite file path; O(len(text)), touches only the file system.

    Accepts ``sqlite:///path/file.sqlite`` (an existing file), a bare path to an existing file,
    ``postgresql://user[:password]@host[:port]/db`` (psycopg 3, as ``postgresql+psycopg://``).

    Raises:
        DatabaseSourceError: empty, too long, control characters, another database or driver, an
            in-memory SQLite (nothing to show), a SQLite file that does not exist or a path the OS
            refuses (a name too long, an unknown ``~user``), a PostgreSQL URL
            with no database name. The message never holds the password.
    """
    if not isinstance(text, str) or not text.strip():
        raise DatabaseSourceError("enter a database URL or the path of a SQLite file")
    text = text.strip()
    if len(text) > MAX_URL_CHARS:
        raise DatabaseSourceError(
            f"the database URL has {len(text):,} characters, over the {MAX_URL_CHARS:,}-character cap"
        )
    if _CONTROL.search(text):
        raise DatabaseSourceError("the database URL holds a control character (a line break?)")
    if "://" not in text:
        return _sqlite_source(text, text)
    from sqlalchemy import exc as sa_exc
    from sqlalchemy.engine import make_url

    try:
        url = make_url(text)
    except (sa_exc.ArgumentError, ValueError):
        raise DatabaseSourceError(
            "not a database URL: expected sqlite:///path/file.sqlite or "
            "postgresql://user@host:port/database"
        ) from None
    shown = _hidden(url)
    # From the name alone: get_driver_name() would import the dialect (any name, any module).
    backend, _plus, driver = url.drivername.partition("+")
    if backend == "sqlite":
        if driver not in ("", "pysqlite"):
            raise DatabaseSourceError(f"SQLite is opened with Python's sqlite3 (sqlite:///), got {shown!r}")
        database = url.database or ""
        if database in ("", ":memory:") or url.query.get("mode") == "memory":
            raise DatabaseSourceError(
                f"{shown!r} is an in-memory database, empty when opened here; give a file path"
            )
        if database.startswith("file:"):
            database = database.removeprefix("file:")
        return _sqlite_source(database, shown)
    if backend == "postgresql":
        if driver not in ("", "psycopg"):
            raise DatabaseSourceError(
                f"PostgreSQL is reached through psycopg 3 (postgresql:// or postgresql+psycopg://), "
                f"got {shown!r}"
            )
        url = url.set(drivername="postgresql+psycopg")
        if not url.database:
            raise DatabaseSourceError(f"{_hidden(url)!r} names no database (…/database at the end)")
        shown = _hidden(url)
        key = "db:" + hashlib.sha256(shown.encode()).hexdigest()[:16]
        return DatabaseSource(url, shown, key, "postgresql")
    raise DatabaseSourceError(f"only SQLite and PostgreSQL databases can be opened, got {shown!r}")


def engine_options(source: DatabaseSource) -> dict[str, Any]:
    """create_engine arguments that keep the dashboard read-only and bounded in waiting."""
    if source.dialect == "postgresql":
        given = source.url.query.get("options")  # e.g. -csearch_path=agent: kept
        given = " ".join(given) if isinstance(given, tuple) else (given or "")
        return {
            "connect_args": {
                "connect_timeout": CONNECT_TIMEOUT_S,
                "options": f"{given} -c default_transaction_read_only=on".strip(),
                "application_name": "convmem-dashboard",
            },
            "pool_pre_ping": True,
        }
    return {}


def _reason(error: BaseException, source: DatabaseSource) -> str:
    """The first line of a database error, password scrubbed."""
    orig = getattr(error, "orig", None) or error
    lines = str(orig).strip().splitlines() or [type(orig).__name__]
    return _scrub(lines[0].strip(), source.url)


def check_tables(source: DatabaseSource) -> None:
    """Connect once and check the convmem tables are there.

    Raises:
        DatabaseSourceError: the server does not answer, refuses the login, the file is not a
            SQLite database, or the tables are missing (names them).
    """
    import sqlalchemy as sa
    from sqlalchemy import exc as sa_exc

    engine = sa.create_engine(source.url, **engine_options(source))
    try:
        with engine.connect() as conn:
            names = set(sa.inspect(conn).get_table_names())
    except sa_exc.SQLAlchemyError as error:
        raise DatabaseSourceError(
            f"could not open {source.shown!r}: {_reason(error, source)}"
        ) from None
    finally:
        engine.dispose()
    missing = [t for t in TABLES if t not in names]
    if missing:
        raise DatabaseSourceError(
            f"{source.shown!r} is not a convmem store: it has no table {', '.join(missing)} "
            f"(fill one with convmem.stores.SQLStore.from_conversations)"
        )


def read_database(
    source: DatabaseSource,
    *,
    max_conversations: int = MAX_DB_CONVERSATIONS,
    max_messages: int = MAX_DB_MESSAGES,
) -> DatabaseRead:
    """The conversations of a convmem store, each loaded with ``load_history(store.pager(id,
    high_water=mark))`` (oldest first, up to the mark listed, so messages arriving meanwhile are
    left for the next read). O(messages read); memory O(messages read).

    Conversations are taken in store order while both caps hold; one that would pass
    ``max_messages`` is left out whole (never cut) and counted in ``skipped_over_cap``.

    Raises:
        DatabaseSourceError: as :func:`check_tables`, or a load that failed (names the
            conversation, the resume cursor and how many messages had arrived).
    """
    from sqlalchemy import exc as sa_exc

    from convmem.stores import SQLStore

    check_tables(source)
    try:
        store = SQLStore(source.url, page_size=_PAGE_SIZE, engine_options=engine_options(source))
    except (sa_exc.SQLAlchemyError, TransientError, ValueError) as error:
        raise DatabaseSourceError(f"could not open {source.shown!r}: {_reason(error, source)}") from None
    conversations: list[Conversation] = []
    read_messages = 0
    try:
        infos = store.conversations()
        total_messages = sum(info.messages for info in infos)
        for info in infos:
            if len(conversations) >= max_conversations or read_messages + info.messages > max_messages:
                continue
            try:
                messages = load_history(store.pager(info.id, high_water=info.mark), attempts=3,
                                        base_delay=0.2, max_delay=1.0)
            except PageLoadError as error:
                raise DatabaseSourceError(
                    f"reading conversation {info.id!r} of {source.shown!r} failed after "
                    f"{len(error.loaded):,} of {info.messages:,} messages (resume cursor "
                    f"{error.cursor!r}): {_reason(error.__cause__ or error, source)}"
                ) from None
            if not messages:
                continue
            read_messages += len(messages)
            conversations.append(
                Conversation(info.id, info.user_id, tuple(messages), info.listing_ids,
                             source=source.shown, source_format="convmem-sql")
            )
    except (sa_exc.SQLAlchemyError, TransientError) as error:
        raise DatabaseSourceError(f"could not read {source.shown!r}: {_reason(error, source)}") from None
    except ValueError as error:  # a row that is not a valid message (names it)
        raise DatabaseSourceError(_scrub(str(error), source.url)) from None
    finally:
        store.close()
    return DatabaseRead(
        tuple(conversations),
        len(infos),
        total_messages,
        len(infos) - len(conversations) - sum(1 for i in infos if i.messages == 0),
    )


def conversation_listing(conversations: Any) -> Any:
    """The conversations read, one row each: conversation id, shopper, messages, tokens, title
    (its first user words). A pandas DataFrame for st.dataframe (user text stays plain text).

    >>> from convmem import Message
    >>> c = Conversation("c1", "u1", (Message("m1", "user", 7, content="Where is my order?"),))
    >>> conversation_listing([c]).to_dict("records")
    [{'conversation': 'c1', 'shopper': 'u1', 'messages': 1, 'tokens': 7, 'title': 'Where is my order?'}]
    """
    import pandas as pd

    return pd.DataFrame(
        [
            {"conversation": c.id, "shopper": c.user_id or "", "messages": len(c.messages),
             "tokens": c.total_tokens, "title": c.title}
            for c in conversations
        ],
        columns=["conversation", "shopper", "messages", "tokens", "title"],
    )
