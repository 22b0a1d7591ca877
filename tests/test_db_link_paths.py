"""A ``?db=`` link or typed path the file system refuses (a name over the OS limit, a ``~user``
that does not exist) is a readable DatabaseSourceError, never a traceback (break25)."""

from __future__ import annotations

import pytest

from apptest_support import YOUR_DATA, open_dashboard_page
from convmem_dashboard.data import DB_LINK_ERROR
from convmem_dashboard.db_source import DatabaseSourceError, parse_database_url

TOO_LONG_NAME = "sqlite:///" + "a" * 900  # under MAX_URL_CHARS, over the OS's 255-byte name limit
NO_SUCH_USER = "~no_such_user_break25/agent.sqlite"


@pytest.mark.parametrize(
    ("text", "shown"),
    [(TOO_LONG_NAME, "File name too long"), (NO_SUCH_USER, "~no_such_user_break25")],
)
def test_a_path_the_os_refuses_is_a_database_source_error(text, shown):
    with pytest.raises(DatabaseSourceError, match="cannot use the SQLite path") as info:
        parse_database_url(text)
    assert shown in str(info.value)


@pytest.mark.parametrize("page", ["app_pages/home.py", YOUR_DATA])
def test_a_db_link_with_a_path_the_os_refuses_shows_the_error_and_the_sample(page):
    at = open_dashboard_page(page, {"db": TOO_LONG_NAME})
    assert not at.exception, [e.value for e in at.exception]
    assert [e.value for e in at.error] == [DB_LINK_ERROR]
    assert "cannot use the SQLite path" in at.code[0].value
    assert at.query_params.get("conv") == "fatima_kim_4514-1"
    assert "db" not in at.query_params
