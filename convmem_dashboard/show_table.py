"""The one way the pages draw a table: ``st.dataframe`` with thousands separators.

:func:`show_table` passes its keyword arguments to ``st.dataframe`` after
:func:`convmem_dashboard.table_layout.grouped_numbers`, so every integer (and short-float) column
reads "1,234,567" as the metrics beside it do (issue 10 item 4). tests/test_show_table.py checks
that no page or panel calls ``st.dataframe`` itself.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from .table_layout import grouped_numbers

__all__ = ["show_table"]


def show_table(frame: Any, *, container: Any = None, **kwargs: Any) -> Any:
    """``(container or st).dataframe(frame, **kwargs)``, numbers grouped (see the module).
    ``frame``: a DataFrame, or what ``pd.DataFrame`` takes (a list of row dicts)."""
    if not isinstance(frame, pd.DataFrame):
        frame = pd.DataFrame(frame)
    return (container or st).dataframe(frame, **grouped_numbers(frame, kwargs))
