"""Home: what convmem does, the links to the pages, and the data in use (a summary; the data is
chosen and brought on Your data, app_pages/your_data.py).

Home is the first view of a fresh server, so it draws only text, page links and metrics, and its
sidebar names the data in use instead of drawing the data picker: its cold view settles in about
the time Streamlit's frontend takes to draw a one-line app (issue 10 item 3; docs/decisions.md
"Home draws no widget below its links", "Home's sidebar names the data in use"). The database
form, the upload, the data picker and the conversation picker are on Your data.
"""

import streamlit as st

from convmem_dashboard.panel_data_in_use import data_in_use
from convmem_dashboard.selection import conversation_in_use
from convmem_dashboard.view_home import (
    PAGE_LINKS,
    QUESTION,
    YOUR_DATA_LINK,
    conversation_caption,
)


st.title("convmem: an agent's conversation memory")
st.markdown(f"**{QUESTION}**")
st.markdown(
    "convmem is the memory layer of a conversational agent. It **loads** a conversation's past "
    "messages page by page from a store that fails now and then, **keeps** what goes to the model "
    "under its token limit, and **forgets** whole past conversations of a shopper when they mention "
    "too many product listings."
)

cols = st.columns(len(PAGE_LINKS))
for col, link in zip(cols, PAGE_LINKS):
    col.page_link(link.path, label=link.label, icon=link.icon)
    col.caption(link.question)

dataset = data_in_use("on Your data or in the sidebar of any other page")  # Home's sidebar names the data; the picker is on every other page
if (conv_id := conversation_in_use(dataset)) is not None:
    st.markdown(f"Conversation in use: {conversation_caption(dataset.conversation(conv_id))}")
st.page_link(YOUR_DATA_LINK.path, label=YOUR_DATA_LINK.label, icon=YOUR_DATA_LINK.icon)
st.caption(YOUR_DATA_LINK.question)
