"""The one way the pages draw a table: ``st.dataframe`` with thousands separators.

:func:`show_table` passes its keyword arguments to ``st.dataframe`` after
:func:`convmem_dashboard.table_layout.grouped_numbers`, so every integer (and short-float) column
reads "1,234,567" as the metrics beside it do (issue 10 item 4). tests/test_show_table.py checks
that no page or panel calls ``st.dataframe`` itself.

:func:`show_small_table` draws a table of a few rows in a page's first view as Markdown, numbers
grouped the same way: a browser opening the page then has no table code to fetch and compile
before the page is drawn (session 23, docs/decisions.md "Home's first view draws no dataframe").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from .table_layout import grouped_numbers

__all__ = ["markdown_table", "show_small_table", "show_table"]


def show_table(frame: Any, *, container: Any = None, **kwargs: Any) -> Any:
    """``(container or st).dataframe(frame, **kwargs)``, numbers grouped (see the module).
    ``frame``: a DataFrame, or what ``pd.DataFrame`` takes (a list of row dicts)."""
    if not isinstance(frame, pd.DataFrame):
        frame = pd.DataFrame(frame)
    return (container or st).dataframe(frame, **grouped_numbers(frame, kwargs))


def _cell(value: Any) -> tuple[str, bool]:
    """A cell's Markdown text and whether it is a number (right-aligned): integers grouped
    ("1,234,567"), anything else as escaped text on one line, each run of whitespace (a line
    break too) one space (an upload's role is user text)."""
    from .data import md_escape  # convmem: loaded with the page that calls this

    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}", True
    return md_escape(" ".join(str(value).split())), False


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """``rows`` (dicts with the same keys, in the same order) as a GitHub-flavoured Markdown table:
    the keys as header, integers grouped with thousands separators in right-aligned columns
    (a column is right-aligned when every one of its cells is an integer), every other cell
    backslash-escaped text on one line (shown literally, never as Markdown). O(cells). Raises ValueError
    when ``rows`` is empty or a row's keys differ from the first row's.

    >>> print(markdown_table([{"role": "user", "tokens": 1234567}, {"role": "tool|x", "tokens": 5}]))
    | role | tokens |
    | :-- | --: |
    | user | 1,234,567 |
    | tool\\|x | 5 |
    """
    if not rows:
        raise ValueError("a table needs at least one row")
    keys = list(rows[0])
    if any(list(row) != keys for row in rows):
        raise ValueError(f"every row must have the keys {keys}, in that order")
    cells = [[_cell(row[k]) for k in keys] for row in rows]
    numeric = [all(line[i][1] for line in cells) for i in range(len(keys))]
    header = "| " + " | ".join(_cell(k)[0] for k in keys) + " |"
    rule = "| " + " | ".join("--:" if n else ":--" for n in numeric) + " |"
    body = ["| " + " | ".join(text for text, _ in line) + " |" for line in cells]
    return "\n".join([header, rule, *body])


def show_small_table(rows: Sequence[Mapping[str, Any]], *, container: Any = None) -> Any:
    """``(container or st).markdown(markdown_table(rows))``: a table of a few rows (no sorting, no
    scrolling) that a page's first view draws without ``st.dataframe``'s code (see the module).
    Raises what :func:`markdown_table` raises."""
    return (container or st).markdown(markdown_table(rows))
