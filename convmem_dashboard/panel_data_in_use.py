"""The "Data in use" section of Home and Your data: the dataset's name, its conversations,
messages, shoppers and tokens (streamlit; the numbers come from
:func:`convmem_dashboard.view_home.dataset_metrics`, O(messages))."""

from __future__ import annotations

import streamlit as st

from .data import Dataset, current_dataset
from .view_home import dataset_metrics

__all__ = ["data_in_use"]


def data_in_use(where_to_pick: str = "in the sidebar") -> Dataset:
    """Draw the section (a subheader, five metrics, the source's caption ending "Pick another
    dataset ``where_to_pick``.") and return the dataset in use (the sidebar's choice,
    :func:`convmem_dashboard.data.current_dataset`)."""
    st.subheader("Data in use")
    dataset = current_dataset()
    st.metric("Dataset", dataset.label)
    for col, metric in zip(st.columns(4), dataset_metrics(dataset.conversations)):
        col.metric(metric.label, metric.value, help=metric.help)
    st.caption(f"Source: {dataset.note}. Pick another dataset {where_to_pick}.")
    return dataset
