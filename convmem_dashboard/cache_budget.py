"""Cached computations of the Token budget page, keyed by plain values only.

Every function takes the dataset key, the conversation id and a :class:`convmem.HistorySettings`
(a frozen dataclass of ints and bools): hashing those costs microseconds, so a rerun never hashes
the conversation's messages. Each computation makes one call into convmem.

* ``st.cache_resource`` holds the big immutable results (the Replay, its numpy arrays, the message
  table): sharing one object beats ``st.cache_data``'s pickled copy per rerun. Callers must not
  mutate them (the page only reads).
* ``st.cache_data`` holds small values (sweep rows, JSON text).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from convmem import Conversation, HistorySettings, Replay, ReplayStats, SweepRow, replay, sweep_limits

from .data import get_dataset
from .figures_budget import ReplayArrays, replay_arrays
from .tables_budget import base_table, context_at_step, context_records, messages_table

__all__ = [
    "conversation",
    "get_replay",
    "get_arrays",
    "get_base_table",
    "get_table",
    "get_stats",
    "get_sweep",
    "get_context_records",
    "message_index",
]


@st.cache_resource(show_spinner=False, max_entries=64)
def conversation(dataset_key: str, conv_id: str) -> Conversation:
    """The conversation ``conv_id`` of dataset ``dataset_key`` (KeyError when absent)."""
    return get_dataset(dataset_key).conversation(conv_id)


@st.cache_resource(show_spinner=False, max_entries=16)
def message_index(dataset_key: str, conv_id: str) -> dict[str, int]:
    """Message id -> its position (= its add step) in the conversation (read-only)."""
    return {m.id: i for i, m in enumerate(conversation(dataset_key, conv_id).messages)}


@st.cache_resource(show_spinner=False, max_entries=12)
def get_replay(dataset_key: str, conv_id: str, settings: HistorySettings) -> Replay:
    """convmem.replay of the conversation under ``settings`` (O(n); ~1 s per 10^5 messages)."""
    return replay(conversation(dataset_key, conv_id).messages, settings)


@st.cache_resource(show_spinner=False, max_entries=12)
def get_arrays(dataset_key: str, conv_id: str, settings: HistorySettings) -> ReplayArrays:
    """The replay as the numpy arrays the figures read (built once per replay)."""
    return replay_arrays(get_replay(dataset_key, conv_id, settings))


@st.cache_resource(show_spinner=False, max_entries=16)
def get_base_table(dataset_key: str, conv_id: str) -> pd.DataFrame:
    """The settings-free columns of the message table (ids, roles, tokens, previews)."""
    return base_table(conversation(dataset_key, conv_id).messages)


@st.cache_resource(show_spinner=False, max_entries=12)
def get_table(dataset_key: str, conv_id: str, settings: HistorySettings) -> pd.DataFrame:
    """The table of every message (read-only: shared between sessions)."""
    return messages_table(get_replay(dataset_key, conv_id, settings), get_base_table(dataset_key, conv_id))


def get_stats(dataset_key: str, conv_id: str, settings: HistorySettings) -> ReplayStats:
    """The replay's summary figures (from the cached replay)."""
    return get_replay(dataset_key, conv_id, settings).stats


@st.cache_data(show_spinner="Sweeping limits (one replay per limit)…", max_entries=32)
def get_sweep(dataset_key: str, conv_id: str, settings: HistorySettings, limits: tuple[int, ...]) -> list[SweepRow]:
    """convmem.sweep_limits over ``limits`` (len(limits) replays)."""
    return sweep_limits(conversation(dataset_key, conv_id).messages, settings, list(limits))


@st.cache_data(show_spinner=False, max_entries=64)
def get_context_records(dataset_key: str, conv_id: str, settings: HistorySettings, step: int) -> list[dict]:
    """The context right after add ``step`` as OpenAI-like records (rebuilt from the cached
    replay); the page's download escapes them (convmem_dashboard.export_safety)."""
    r = get_replay(dataset_key, conv_id, settings)
    return context_records(context_at_step(r, step, get_arrays(dataset_key, conv_id, settings)))
