"""Cached computations of the Agent session page, keyed by (dataset key, conversation id).

The usage frame and figure (O(messages + calls)) and the calibration (a content-only recount of
every message: ~1 s on a 10^4-record session) are computed once per conversation and shared
(``st.cache_resource``: callers only read them).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from convmem import Calibration, calibrate

from .agent_view import usage_figure, usage_frame
from .cache_budget import conversation

__all__ = ["get_calibration", "get_usage"]


@st.cache_resource(show_spinner=False, max_entries=16)
def get_usage(dataset_key: str, conv_id: str) -> tuple[pd.DataFrame, go.Figure]:
    """(usage frame, usage figure) of a session conversation."""
    frame = usage_frame(conversation(dataset_key, conv_id))
    return frame, usage_figure(frame)


@st.cache_resource(show_spinner=False, max_entries=16)
def get_calibration(dataset_key: str, conv_id: str) -> Calibration | str:
    """The calibration, or why there is none (a readable sentence)."""
    try:
        return calibrate(conversation(dataset_key, conv_id))
    except ValueError as exc:
        return f"Cannot calibrate on this session: {exc}."
