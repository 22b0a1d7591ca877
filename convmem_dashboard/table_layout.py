"""How the pages' tables are laid out in ``st.dataframe``: heights and column settings, as plain values.

Pure (no streamlit): every builder returns the keyword arguments of one ``st.dataframe`` call
(``height``, ``row_height``, ``column_config`` as plain dicts, ``column_order``), so a page stays
one line and the layout is tested with plain pytest.

Two rules keep the key text of a table readable in a 1280-px-wide window (a sidebar and a main
area of about 820 px):

* a table is exactly as tall as its rows (up to a cap), never padded with empty rows;
* long text sits in a column that wraps: Streamlit's data grid wraps a text cell only when rows are
  taller than 4rem (64 px), so such a table uses :data:`WRAP_ROW_PX`, and the long column is
  placed where it is seen, after the short key columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ROW_PX", "WRAP_ROW_PX", "column", "fit_height", "grouped_numbers", "number_text", "table_view"]

#: Streamlit's default row (and header) height in st.dataframe, in pixels.
ROW_PX = 35
#: A row tall enough (over 64 px) for the grid to wrap text: three lines of text.
WRAP_ROW_PX = 68
#: The grid's border and scroll gutter below the last row, in pixels.
_FRAME_PX = 3


def fit_height(rows: int, *, row_height: int = ROW_PX, max_rows: int = 10) -> int:
    """Pixels that show the header and ``rows`` rows (at least one, at most ``max_rows``; beyond,
    the table scrolls): no empty rows below the last one.

    >>> fit_height(5), fit_height(0), fit_height(500, max_rows=12)
    (213, 73, 458)
    >>> fit_height(2, row_height=WRAP_ROW_PX)
    174
    """
    shown = max(1, min(int(rows), int(max_rows)))
    return ROW_PX + shown * int(row_height) + _FRAME_PX


def column(label: str | None = None, *, width: str | int | None = None, help: str | None = None) -> dict:
    """One column's settings as a plain dict (what ``st.column_config.Column`` builds): a display
    label (the DataFrame keeps its own column name), a width ("small" 75 px, "medium" 200 px,
    "large" 400 px, or pixels; None sizes it to its content) and a tooltip on the header.

    >>> column("why", width="large")
    {'label': 'why', 'width': 'large'}
    """
    out: dict[str, Any] = {}
    if label is not None:
        out["label"] = label
    if width is not None:
        out["width"] = width
    if help is not None:
        out["help"] = help
    return out


def table_view(
    rows: int,
    *,
    columns: dict[str, dict] | None = None,
    order: list[str] | tuple[str, ...] | None = None,
    wrap: bool = False,
    max_rows: int = 10,
    placeholder: str | None = None,
) -> dict[str, Any]:
    """Keyword arguments for ``st.dataframe``: a height fitted to ``rows`` (rows of
    :data:`WRAP_ROW_PX` when ``wrap``), the column settings, the column order when given, and
    the text of a missing value when given (Streamlit shows Python's "None" otherwise).

    >>> v = table_view(3, columns={"why": column(width="large")}, wrap=True)
    >>> v["height"], v["row_height"], v["column_config"]["why"]["width"]
    (242, 68, 'large')
    """
    row_height = WRAP_ROW_PX if wrap else ROW_PX
    view: dict[str, Any] = {
        "height": fit_height(rows, row_height=row_height, max_rows=max_rows),
        "row_height": row_height,
        "column_config": dict(columns or {}),
    }
    if order is not None:
        view["column_order"] = list(order)
    if placeholder is not None:
        view["placeholder"] = placeholder
    return view


#: Streamlit's number format that groups digits in the reader's locale ("1,234,567" in en-US).
_GROUPED = {"type": "number", "format": "localized"}
#: Fraction digits the browser's locale format keeps at most (Intl.NumberFormat's default).
_LOCALE_DECIMALS = 3


def grouped_numbers(frame: pd.DataFrame, view: dict[str, Any] | None = None) -> dict[str, Any]:
    """``view`` (st.dataframe keyword arguments, e.g. from :func:`table_view`) with every number
    column of ``frame`` drawn with thousands separators (issue 10 item 4): integer columns, and
    float columns whose values have at most 3 decimals (what the locale format keeps; a cost
    rounded to 4 decimals stays as it is). A column's label, width and tooltip are kept. O(cells
    of the float columns).

    >>> df = pd.DataFrame({"tokens": [1234567], "cost (USD)": [0.1234], "mean": [1234.5], "id": ["a"]})
    >>> cfg = grouped_numbers(df, {"column_config": {"tokens": column("tok.")}})["column_config"]
    >>> cfg["tokens"], sorted(cfg)
    ({'label': 'tok.', 'type_config': {'type': 'number', 'format': 'localized'}}, ['mean', 'tokens'])
    """
    out = dict(view or {})
    config = dict(out.get("column_config") or {})
    for name in frame.columns:
        values = frame[name]
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            continue
        if pd.api.types.is_float_dtype(values):
            finite = values.to_numpy(dtype=float)
            finite = finite[np.isfinite(finite)]
            if not np.array_equal(np.round(finite, _LOCALE_DECIMALS), finite):
                continue
        config[name] = {**config.get(name, {}), "type_config": dict(_GROUPED)}
    out["column_config"] = config
    return out


def number_text(frame: pd.DataFrame, columns: list[str] | tuple[str, ...]) -> pd.DataFrame:
    """A copy of ``frame`` whose ``columns`` hold each number as text with thousands separators,
    every decimal it has kept ("562,549,561", "2,932.5345", "-1,467", "45.3"), for a column
    that mixes counts and prices (one number format per column cannot show both). Other values
    are kept as they are. O(cells of those columns).

    >>> number_text(pd.DataFrame({"A": [562549561, 2932.5345, 45.3, -1467.0]}), ["A"])["A"].tolist()
    ['562,549,561', '2,932.5345', '45.3', '-1,467']
    """
    out = frame.copy()
    for name in columns:
        out[name] = [_number_text(v) for v in frame[name]]
    return out


def _number_text(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return value
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    value = float(value)
    if not np.isfinite(value):
        return str(value)
    if value.is_integer():
        return f"{int(value):,}"
    decimals = len(repr(value).split(".")[1]) if "e" not in repr(value) else 6
    return f"{value:,.{min(decimals, 6)}f}"
