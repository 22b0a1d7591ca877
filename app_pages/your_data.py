"""Your data: which conversations every page reads (the bundled sample, your agent's database, or a
file you upload) and which one of them they show.

The database form, the upload and the shared conversation picker live here, not on Home: Home is a
fresh server's first view and draws no widget below its links (issue 10 item 3; docs/decisions.md
"Home draws no widget below its links").
"""

import streamlit as st

from convmem import FormatError
from convmem_dashboard.data import (
    MAX_UPLOAD_BYTES,
    md_escape,
    register_upload,
    upload_skipped,
)
from convmem_dashboard.db_panel import database_panel
from convmem_dashboard.panel_data_in_use import data_in_use
from convmem_dashboard.questions import QUESTIONS
from convmem_dashboard.selection import conversation_picker
from convmem_dashboard.show_table import show_small_table
from convmem_dashboard.view_home import (
    conversation_caption,
    conversation_metrics,
    roles_table,
    upload_outcome,
)

st.title("Your data")
st.markdown(f"**{QUESTIONS['your_data']}**")

dataset = data_in_use()
database_panel(dataset.key, dataset.conversations)

st.subheader("Conversation in use")
conv_id = conversation_picker(dataset)
if conv_id is not None:
    conv = dataset.conversation(conv_id)
    st.markdown(conversation_caption(conv))
    for col, metric in zip(st.columns(4), conversation_metrics(conv)):
        col.metric(metric.label, metric.value, help=metric.help)
    # Markdown, not st.dataframe: the first view then loads no table code (show_small_table)
    show_small_table(roles_table(conv))
    st.caption(
        "Every page shows this conversation until you pick another one (Listing eviction shows "
        "its shopper); the link keeps it too. The first one shown is the longest conversation "
        "(most tokens) of the shopper with the most conversations."
    )


def _on_upload() -> None:
    upload = st.session_state.get("upload_file")
    st.session_state.pop("upload_error", None)
    if upload is None:
        return
    data = upload.getvalue()
    if len(data) > MAX_UPLOAD_BYTES:
        st.session_state["upload_error"] = (
            f"{upload.name}: the file has {len(data):,} bytes, over the {MAX_UPLOAD_BYTES:,}-byte cap."
        )
        return
    try:
        # a 10^5-message file takes seconds to read: say so while it runs (the name is user text)
        with st.spinner(f"Reading {md_escape(upload.name)} ({len(data):,} bytes)…", show_time=True):
            key = register_upload(upload.name, data, st.session_state.get("messages_path") or None)
    except (FormatError, ValueError) as exc:
        st.session_state["upload_error"] = str(exc)
        return
    st.session_state["upload_key"] = key
    st.session_state["data"] = key


st.subheader("Use your own conversations")
st.text_input(
    "Messages path (only for wrapped logs)",
    key="messages_path",
    on_change=_on_upload,  # a new path re-reads the file already uploaded
    placeholder="answer_generation.train_messages[-1]",
    help="A JMESPath expression pointing at the message list inside each record, when the file "
    "keeps its messages inside a wrapper. Leave empty to detect the format.",
)
st.file_uploader(
    "Upload a conversation file",
    type=["json", "jsonl", "csv"],
    key="upload_file",
    on_change=_on_upload,
    help=(
        "OpenAI Chat Completions or Responses items (JSON, or JSONL with one conversation per "
        "line), Anthropic Messages, LangChain messages_to_dict output, Gemini contents, a "
        "tau-bench run file (rows with `traj`), CSV with columns id, role, tokens[, content], or a "
        "coding agent's session: Claude Code (`~/.claude/projects/*/*.jsonl`) or Codex CLI "
        "(`~/.codex/sessions/**/rollout-*.jsonl`)."
    ),
)
if error := st.session_state.get("upload_error"):
    st.error("Could not read the upload; nothing was loaded. What is wrong and where:", icon=":material/error:")
    st.code(error, language=None, wrap_lines=True)  # user text: shown verbatim, never as markdown/HTML
    # the uploader still shows the bad file's name: say which data the pages use meanwhile
    st.caption(f"The pages still use {dataset.label}; upload another file, or pick a dataset in the sidebar.")
elif st.session_state.get("upload_key") == dataset.key:
    total, skipped = upload_skipped(dataset.key)
    outcome = upload_outcome(len(dataset.conversations), total, len(skipped))
    st.success(outcome.success)
    if outcome.warning:
        st.warning(outcome.warning, icon=":material/warning:")
        with st.expander(outcome.skipped_title):
            # user text: shown verbatim, never as markdown/HTML
            st.code("\n".join(str(s) for s in skipped), language=None, wrap_lines=True)
