"""The "Data in use" section of Home and Your data: the dataset's name, its conversations,
messages, shoppers and tokens (streamlit; the numbers come from
:func:`convmem_dashboard.view_home.dataset_metrics`, O(messages))."""

from __future__ import annotations

import streamlit as st

from .data import Dataset, current_dataset
from .view_home import dataset_metrics

__all__ = ["data_in_use"]


def data_in_use(where_to_pick: str = "in the sidebar") -> Dataset:
    """Draw the section (a subheader, the dataset's name on a line of its own, four metrics, the
    source's caption ending "Pick another dataset ``where_to_pick``.") and return the dataset in
    use (the sidebar's choice, :func:`convmem_dashboard.data.current_dataset`).

    The name is a line of Markdown, not a metric: a metric's value does not wrap, and an upload's
    file name (``tool-calling-grok-3-0.0_range_0--1_user-grok-3-llm_0921131646.json``) was cut
    at 1,280-1,400 px (issue 10 item 4: no metric cut off); the line wraps at any width."""
    st.subheader("Data in use")
    dataset = current_dataset()
    st.markdown(f"**Dataset:** {dataset.label}")  # label: Markdown-escaped user text (data.Dataset)
    for col, metric in zip(st.columns(4), dataset_metrics(dataset.conversations)):
        col.metric(metric.label, metric.value, help=metric.help)
    st.caption(f"Source: {dataset.note}. Pick another dataset {where_to_pick}.")
    return dataset
