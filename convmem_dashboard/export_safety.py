"""One escaping of every cell that leaves the dashboard (CSV and JSON downloads).

A downloaded file is opened in a spreadsheet. A cell whose text begins with ``=``, ``+``, ``-``
or ``@`` is run there as a formula (CSV injection, "formula injection"): message content, ids and
conversation ids are user text, so an upload could make a download execute something on the
machine of whoever opens it. The OWASP guidance (https://owasp.org/www-community/attacks/CSV_Injection)
says: a cell that begins with ``=``, ``+``, ``-``, ``@``, a tab (0x09) or a carriage return
(0x0D) is prefixed with a single quote ``'`` so the spreadsheet shows it as text. We follow it:

* a **text** cell is prefixed with ``'`` when it starts with a tab or a CR, or when, after any
  leading whitespace (spaces, tabs, CR, LF, any Unicode space), it starts with ``=``, ``+``,
  ``-``, ``@`` or their full-width forms ``＝ ＋ － ＠`` (some spreadsheets read those too);
* a text cell that is exactly a plain decimal number (``-5``, ``+1.5e3``) stays as it is: a
  spreadsheet reads it as that number, nothing runs, and ids such as ``-1`` survive a round trip;
* **numbers stay numbers**: int, float, bool, NaN and None cells (numeric columns) are never
  touched, so a negative number is written as ``-3``, not as text.

Every download button of the pages goes through :func:`download_csv` / :func:`download_json`
(tests/test_hostile_downloads.py checks no page calls ``st.download_button`` itself). The escape
is visible in the file (``'=1+1``): a reader sees the cell was neutralized; nothing is dropped.

>>> safe_cell("=HYPERLINK(1)"), safe_cell("  @SUM(A1)"), safe_cell("\\t1"), safe_cell("-2"), safe_cell(-2)
("'=HYPERLINK(1)", "'  @SUM(A1)", "'\\t1", '-2', -2)
>>> safe_cell("a=b"), safe_cell(""), safe_cell(None), safe_cell("-1+1")
('a=b', '', None, "'-1+1")
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

__all__ = [
    "download_csv",
    "download_json",
    "is_formula",
    "safe_cell",
    "safe_csv",
    "safe_frame",
    "safe_json",
    "safe_records",
]

#: Characters that start a formula once leading whitespace is skipped (ASCII and full-width).
FORMULA_CHARS = "=+-@\uff1d\uff0b\uff0d\uff20"
_FORMULA = re.compile(rf"\s*[{re.escape(FORMULA_CHARS)}]")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def is_formula(text: str) -> bool:
    """Whether a spreadsheet could run ``text`` as a formula (see the module docstring).

    >>> [is_formula(t) for t in ["=1", " +1", "\\r1", "x", "-7", "-7-1", "＝1"]]
    [True, True, True, False, False, True, True]
    """
    if not text:
        return False
    if text[0] in "\t\r":
        return True
    return _FORMULA.match(text) is not None and _PLAIN_NUMBER.fullmatch(text) is None


def safe_cell(value: Any) -> Any:
    """``value`` fit for a spreadsheet: a str that :func:`is_formula` gets a leading ``'``;
    anything else (numbers, bools, None, NaN, timestamps) is returned unchanged. O(len) per str."""
    if isinstance(value, str) and is_formula(value):
        return "'" + value
    return value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with every text cell (object/string columns) and every column name
    passed through :func:`safe_cell`; numeric, bool and datetime columns are left as they are.
    O(cells of text columns)."""
    out = frame.copy()
    for name in out.columns:
        col = out[name]
        if pd.api.types.is_object_dtype(col.dtype) or pd.api.types.is_string_dtype(col.dtype):
            out[name] = col.map(safe_cell).astype(object)
    out.columns = [safe_cell(c) for c in out.columns]
    return out


def safe_csv(frame: pd.DataFrame) -> str:
    r"""``frame`` as CSV text (no index) after :func:`safe_frame`, with CRLF line ends (RFC 4180).

    CRLF matters: with pandas' default ``"\n"`` a cell holding a bare CR is written unquoted,
    and a spreadsheet that splits rows on CR would start a new row (and a formula) after it.
    With CRLF every cell holding CR or LF is quoted.

    >>> safe_csv(pd.DataFrame({"id": ["a\r-1+1"], "tokens": [-1]}))
    'id,tokens\r\n"a\r-1+1",-1\r\n'
    """
    return safe_frame(frame).to_csv(index=False, lineterminator="\r\n")


def safe_records(value: Any) -> Any:
    """``value`` (JSON-able: dicts, lists, tuples, scalars) with every str *value* passed
    through :func:`safe_cell`; dict keys are the file's schema and stay. O(size)."""
    if isinstance(value, str):
        return safe_cell(value)
    if isinstance(value, Mapping):
        return {k: safe_records(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [safe_records(v) for v in value]
    return value


def safe_json(value: Any) -> str:
    """``value`` as indented JSON text (UTF-8, non-ASCII kept) after :func:`safe_records`."""
    return json.dumps(safe_records(value), ensure_ascii=False, indent=2)


def download_csv(label: str, make_frame: Callable[[], pd.DataFrame], *, file_name: str, key: str,
                 help: str | None = None, container=None) -> None:
    """A download button whose CSV is made on click from ``make_frame()`` through :func:`safe_csv`."""
    import streamlit as st

    (container or st).download_button(
        label, lambda: safe_csv(make_frame()), file_name=file_name, mime="text/csv", key=key,
        on_click="ignore", help=help,
    )


def download_json(label: str, make_value: Callable[[], Any], *, file_name: str, key: str,
                  help: str | None = None, container=None) -> None:
    """A download button whose JSON is made on click from ``make_value()`` through :func:`safe_json`."""
    import streamlit as st

    (container or st).download_button(
        label, lambda: safe_json(make_value()), file_name=file_name, mime="application/json",
        key=key, on_click="ignore", help=help,
    )
