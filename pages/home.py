"""Home: what convmem does, the data in use, upload of a conversation file, links to the pages."""

import streamlit as st

from convmem import FormatError
from convmem_dashboard.data import (
    MAX_UPLOAD_BYTES,
    current_dataset,
    register_upload,
    upload_skipped,
)
from convmem_dashboard.entry import require_entry

require_entry()

st.title("convmem: an agent's conversation memory")
st.markdown(
    "convmem is the memory layer of a conversational agent. It **loads** a conversation's past "
    "messages page by page from a store that fails now and then, **keeps** what goes to the model "
    "under its token limit, and **forgets** whole past conversations of a shopper when they mention "
    "too many product listings."
)

cols = st.columns(3)
with cols[0]:
    st.page_link("pages/flaky_store.py", label="Flaky store", icon=":material/cloud_sync:")
    st.caption("Load a conversation through injected failures; check nothing was lost or repeated.")
with cols[1]:
    st.page_link("pages/token_budget.py", label="Token budget", icon=":material/data_usage:")
    st.caption("Add messages one by one under a token limit; see what compaction drops and why.")
with cols[2]:
    st.page_link("pages/listing_eviction.py", label="Listing eviction", icon=":material/shopping_cart:")
    st.caption("Cap the distinct listings a shopper's past conversations bring into context.")

st.subheader("Data in use")
dataset = current_dataset()
st.metric("Dataset", dataset.label)
c1, c2, c3 = st.columns(3)
c1.metric("Conversations", f"{len(dataset.conversations):,}")
c2.metric("Messages", f"{dataset.message_count:,}")
c3.metric("Shoppers", f"{len({c.user_id for c in dataset.conversations if c.user_id}):,}")
st.caption(f"Source: {dataset.note}. Pick another dataset in the sidebar.")


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
        "coding agent's session: Claude Code (~/.claude/projects/*/*.jsonl) or Codex CLI "
        "(~/.codex/sessions/**/rollout-*.jsonl)."
    ),
)
if error := st.session_state.get("upload_error"):
    st.error("Could not read the upload; nothing was loaded. What is wrong and where:", icon=":material/error:")
    st.code(error, language=None, wrap_lines=True)  # user text: shown verbatim, never as markdown/HTML
elif st.session_state.get("upload_key") == dataset.key:
    n = len(dataset.conversations)
    st.success(f"Using the uploaded file: {n} conversation{'s' if n != 1 else ''}.")
    total, skipped = upload_skipped(dataset.key)
    if skipped:
        st.warning(f"Loaded {n:,} of {total:,} conversations; {len(skipped):,} skipped.",
                   icon=":material/warning:")
        with st.expander(f"Why {len(skipped):,} conversation{'s were' if len(skipped) != 1 else ' was'} skipped"):
            # user text: shown verbatim, never as markdown/HTML
            st.code("\n".join(str(s) for s in skipped), language=None, wrap_lines=True)
