"""Fixtures for the store suite: every store backend, and the PostgreSQL server to test against.

PostgreSQL: the tests use ``$CONVMEM_TEST_POSTGRES_URL`` (``source scripts/start_test_postgres.sh``
starts a throwaway server and sets it). Without it, or with no server answering there, the
PostgreSQL tests skip with the reason; with ``CONVMEM_REQUIRE_POSTGRES=1`` (set by .ci/run) they
FAIL instead, so CI can never skip them silently.
"""

from __future__ import annotations

import os

import pytest

POSTGRES_ENV = "CONVMEM_TEST_POSTGRES_URL"
REQUIRE_ENV = "CONVMEM_REQUIRE_POSTGRES"
TABLES = ("convmem_messages", "convmem_conversations")

#: Every backend of the suite; "postgresql" needs the server above.
BACKENDS = ("memory", "sqlite-memory", "sqlite-file", "postgresql")


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The URL of a reachable PostgreSQL server (its convmem tables dropped), or skip / fail."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        _unavailable(
            f"no PostgreSQL server: set {POSTGRES_ENV} "
            "(e.g. `source scripts/start_test_postgres.sh`)"
        )
    import sqlalchemy as sa

    engine = sa.create_engine(url, connect_args={"connect_timeout": 5})
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.SQLAlchemyError as error:
        _unavailable(f"no PostgreSQL server reachable at {POSTGRES_ENV}={url!r}: {error.orig!r}")
    finally:
        engine.dispose()
    return url


def drop_tables(url: str) -> None:
    """Drop the store's tables at ``url`` (a fresh, empty store for the next test)."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {', '.join(TABLES)}"))
    finally:
        engine.dispose()


@pytest.fixture
def clean_postgres(postgres_url):
    """``postgres_url`` with no convmem tables in it: each test starts from an empty store."""
    drop_tables(postgres_url)
    return postgres_url


@pytest.fixture(params=BACKENDS)
def make_store(request, tmp_path):
    """A factory ``make_store(page_size=...)`` of fresh, empty stores of one backend; the stores
    are closed after the test. ``make_store.backend`` names the backend, ``make_store.url`` its URL
    (None for the in-memory MemoryStore)."""
    from convmem.stores import SQLStore
    from convmem.testing import MemoryStore

    backend = request.param
    if backend == "memory":
        url = None
    elif backend == "sqlite-memory":
        url = "sqlite://"
    elif backend == "sqlite-file":
        url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    else:
        url = request.getfixturevalue("clean_postgres")
    made = []

    def make(page_size=100, **options):
        store = MemoryStore(page_size=page_size) if url is None else SQLStore(
            url, page_size=page_size, **options
        )
        made.append(store)
        return store

    make.backend = backend
    make.url = url
    yield make
    for store in made:
        store.close()


@pytest.fixture
def store(make_store):
    """A fresh, empty store of each backend, page size 3."""
    return make_store(page_size=3)
