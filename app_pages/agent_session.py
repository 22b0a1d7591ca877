"""Agent session: a Claude Code / Codex CLI session's reported usage beside convmem's count, the
calibration of the approximate counter, the reported cost, redacted downloads, live tailing.

Thin page: widgets → convmem (calibrate, usage_comparison) → pure builders in
convmem_dashboard.agent_view / live_tail. User text is shown only through st.dataframe, st.text
and st.code.
"""

from __future__ import annotations

import re

import streamlit as st

from convmem import calibrate
from convmem_dashboard.agent_view import (
    Prices,
    calibration_lines,
    compaction_table,
    has_session,
    reported_cost,
    session_caption,
    session_export,
    skipped_lines,
    usage_figure,
    usage_frame,
)
from convmem_dashboard import cache_agent as ca
from convmem_dashboard.data import current_dataset
from convmem_dashboard.export_safety import download_csv, download_json
from convmem_dashboard.live_tail import SessionTail, allowed_roots, check_path
from convmem_dashboard.questions import QUESTIONS
from convmem_dashboard.show_table import show_table
from convmem_dashboard.wording import plural


#: Seconds between two polls of a followed session file.
POLL_SECONDS = 2.0

st.title("Agent session")
st.markdown(f"**{QUESTIONS['agent_session']}**")
st.caption(
    "A coding agent's own session (Claude Code or Codex CLI; upload it on Your data, or follow a local "
    "file below): the usage the provider reported per call beside convmem's count of the same "
    "prompt, the approximate counter calibrated on it, and what the calls cost. The agent's own "
    "compactions are also drawn on the Token budget page, beside convmem's."
)


def show(conv, key: str, dataset_key: str | None = None) -> None:
    """Every view of one session conversation (``key`` keeps widget keys apart); with a
    ``dataset_key`` the usage and the calibration come from the cache (cache_agent)."""
    st.caption(session_caption(conv))
    if dataset_key is not None:
        frame, figure = ca.get_usage(dataset_key, conv.id)
        cal = ca.get_calibration(dataset_key, conv.id)
    else:  # a followed file: it changes, nothing to reuse
        frame = usage_frame(conv)
        figure = usage_figure(frame)
        try:
            cal = calibrate(conv)
        except ValueError as exc:
            cal = f"Cannot calibrate on this session: {exc}."
    st.plotly_chart(figure, key=f"{key}_usage_fig")
    show_table(frame, hide_index=True, key=f"{key}_usage_table")
    st.subheader("Calibration of the approximate counter")
    if isinstance(cal, str):
        st.info(cal)
    else:
        st.text("\n".join(calibration_lines(cal)))
    st.subheader("Cost of the reported calls")
    pc = st.columns(4)
    prices = Prices(
        pc[0].number_input("Input ($/MTok)", min_value=0.0, value=3.0, key=f"{key}_p_in"),
        pc[1].number_input("Cache write ($/MTok)", min_value=0.0, value=3.75, key=f"{key}_p_cw"),
        pc[2].number_input("Cache read ($/MTok)", min_value=0.0, value=0.30, key=f"{key}_p_cr"),
        pc[3].number_input("Output ($/MTok)", min_value=0.0, value=15.0, key=f"{key}_p_out"),
    )
    cost = reported_cost(conv, prices)
    mc = st.columns(3)
    mc[0].metric("Cost as reported ($)", f"{cost['total']:,.4f}",
                 help="Input, cache writes, cache reads and output at the prices above.")
    mc[1].metric("Without the prompt cache ($)", f"{cost['uncached total']:,.4f}",
                 help="Every prompt token at the input price.")
    mc[2].metric("Cache reads ($)", f"{cost['cache reads']:,.4f}")
    st.subheader("The agent's own compactions")
    table = compaction_table(conv)
    if table.empty:
        st.info("The agent did not compact in this session.")
    else:
        show_table(table.drop(columns=[c for c in table.columns if c.startswith("convmem")]),
                     hide_index=True, key=f"{key}_cmp")
    lines = skipped_lines(conv)
    if lines:
        with st.expander(f"{len(lines):,} records left out of the messages"):
            st.code("\n".join(lines), language=None, wrap_lines=True)
    st.subheader("Download")
    redact = st.toggle("Redact content (token counts only)", True, key=f"{key}_redact",
                       help="Replaces every text, tool argument and summary by its token count: "
                       "transcripts hold file paths, code and secrets.")
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", conv.id)[:80]
    download_json("Download the session (JSON)", lambda: session_export(conv, redact),
                  file_name=f"session-{stem}{'-redacted' if redact else ''}.json",
                  key=f"{key}_dl_json")
    download_csv("Download the usage (CSV)", lambda: frame, file_name=f"usage-{stem}.csv",
                 key=f"{key}_dl_csv", help="Numbers only: no content.")


dataset = current_dataset()
convs = {c.id: c for c in dataset.conversations if has_session(c)}
tab_data, tab_live = st.tabs(["From the data in use", "Follow a local session file"])
with tab_data:
    if not convs:
        st.info("The data in use holds no coding-agent session. Upload a Claude Code session "
                "(`~/.claude/projects/*/*.jsonl`) or a Codex CLI rollout "
                "(`~/.codex/sessions/**/rollout-*.jsonl`) on Your data.")
    else:
        ids = list(convs)
        if st.session_state.get("agent_conv") not in ids:
            st.session_state.pop("agent_conv", None)
        # In the URL (?agent_conv=), so a link opens the same session conversation; a value that
        # is not one of this dataset's sessions is passed over by Streamlit (the first is shown).
        conv_id = st.selectbox("Session conversation", ids, key="agent_conv", bind="query-params",
                               help="Sub-agent sidechains are conversations of their own. Kept in the URL.")
        show(convs[conv_id], "data", dataset.key)

with tab_live:
    roots = allowed_roots()
    st.caption("Follows a session file while the agent writes it: re-read every "
               f"{POLL_SECONDS:g} s when it changed, up to the upload cap. Only files under "
               + ", ".join(str(r) for r in roots) + " (CONVMEM_SESSION_ROOTS) can be followed.")
    path_text = st.text_input("Session file path", key="tail_path",
                              placeholder="~/.claude/projects/<project>/<session>.jsonl")
    follow = st.toggle("Follow", False, key="tail_on")
    if follow:
        try:
            path = check_path(path_text, roots)
        except ValueError as exc:
            st.error(str(exc), icon=":material/error:")
        else:
            tail = st.session_state.get("tail_obj")
            if not isinstance(tail, SessionTail) or tail.path != path:
                tail = st.session_state["tail_obj"] = SessionTail(path)

            @st.fragment(run_every=POLL_SECONDS)
            def live() -> None:
                tail.poll()
                state = tail.state
                if state.message:
                    (st.warning if state.stopped else st.info)(state.message)
                if state.result is None:
                    return
                live_convs = [c for c in state.result if has_session(c)]
                st.caption(f"{state.size:,} bytes read; {state.reads:,} re-reads; "
                           f"{plural(len(live_convs), 'conversation')}.")
                if live_convs:
                    show(live_convs[0], "live")

            live()
