"""SQLStore disposes its engine on every constructor failure path (break25): a database that cannot
be reached (TransientError), a connect that raises something else, and a failure while defining the
tables. Scripted with a ``creator`` that fails: no network needed."""

from __future__ import annotations

import psycopg
import pytest
import sqlalchemy as sa

from convmem import TransientError
from convmem import stores as stores_module
from convmem.stores import SQLStore


@pytest.fixture
def engines(monkeypatch):
    """Every engine SQLStore creates, and the ids of those disposed."""
    created, disposed = [], []
    real_create, real_dispose = sa.create_engine, sa.engine.Engine.dispose

    def create_engine(*args, **kwargs):
        engine = real_create(*args, **kwargs)
        created.append(engine)
        return engine

    def dispose(self, *args, **kwargs):
        disposed.append(id(self))
        return real_dispose(self, *args, **kwargs)

    monkeypatch.setattr(stores_module.sa, "create_engine", create_engine)
    monkeypatch.setattr(sa.engine.Engine, "dispose", dispose)
    return created, disposed


def refused():
    raise psycopg.OperationalError("connection refused")


def broken():
    raise RuntimeError("driver bug")


@pytest.mark.parametrize(
    ("url", "creator", "raised"),
    [
        ("postgresql+psycopg://u@unreachable.invalid/db", refused, TransientError),
        ("postgresql+psycopg://u@unreachable.invalid/db", broken, RuntimeError),
        ("sqlite:///never-opened.db", broken, RuntimeError),
    ],
)
def test_failed_constructor_disposes_its_engine(engines, url, creator, raised):
    created, disposed = engines
    with pytest.raises(raised):
        SQLStore(url, engine_options={"creator": creator})
    assert len(created) == 1
    assert disposed == [id(created[0])]


def test_failed_table_definition_disposes_its_engine(engines, monkeypatch):
    created, disposed = engines

    def define_tables(self):
        raise MemoryError("scripted")

    monkeypatch.setattr(SQLStore, "_define_tables", define_tables)
    with pytest.raises(MemoryError):
        SQLStore("sqlite://")
    assert len(created) == 1
    assert disposed == [id(created[0])]


def test_constructed_store_keeps_its_engine_until_closed(engines):
    created, disposed = engines
    store = SQLStore("sqlite://")
    assert disposed == []
    store.close()
    assert disposed == [id(created[0])]
