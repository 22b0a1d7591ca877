"""Token budget: a conversation added message by message under a token limit (SPEC §4, §6.2).

Thin page: widgets (every one bound to the URL, so a link reproduces the view) → HistorySettings →
cached calls into convmem (convmem_dashboard.cache_budget) → pure figure and table builders.
User text is shown only through st.dataframe, st.text, st.code and escaped plotly hover text.
"""

from __future__ import annotations

import re

import streamlit as st

from convmem_dashboard import cache_budget as cb
from convmem_dashboard import clearing_view as cv
from convmem_dashboard import idle_lines
from convmem_dashboard import panel_cost
from convmem_dashboard import panel_replay
from convmem_dashboard import panel_summary_lines
from convmem_dashboard import panel_sweep
from convmem_dashboard import view_token_budget as vm
from convmem_dashboard.agent_view import add_agent_compactions, compaction_table, has_session, session_caption
from convmem_dashboard.data import current_dataset
from convmem_dashboard.export_safety import download_csv, download_json
from convmem_dashboard.questions import QUESTIONS
from convmem_dashboard.selection import conversation_picker
from convmem_dashboard.url_params import PARAMS, POLICIES, TARGET_MODES, forget_widget_values, link_range_note
from convmem_dashboard.panel_safe_limit import exact_limit_input, render_safe_limit
from convmem_dashboard.tables_budget import (
    comparison_table,
    context_at_step,
    context_caption,
    context_table,
    context_view,
    drop_event_table,
    drop_event_view,
    limit_bounds,
    messages_view,
    step_placeholder,
    summary_outcome_text,
    sweep_grid,
    totals_caption,
)
from convmem_dashboard.show_table import show_table
from convmem_dashboard.wording import plural


URL = "query-params"
#: Ranges, defaults and steps of the URL-bound widgets (shared with the URL sanitizer), and the
#: option lists POLICIES (History's keyword names) and TARGET_MODES from the same table.
P = PARAMS
#: Rows of the message table sent to the browser at once (the CSV download has them all).
TABLE_PAGE_ROWS = 1000


def _link_range_note(key: str, lo: int, hi: int, unit: str) -> None:
    """Warn that the link's ``?key=`` is outside this view's range (url_params.link_range_note)."""
    if note := link_range_note(key, lo, hi, unit):
        st.warning(note, icon=":material/link:")


def _drop_if(key: str, bad) -> None:
    """Forget a widget value that no longer fits (another dataset or conversation)."""
    if key in st.session_state and bad(st.session_state[key]):
        del st.session_state[key]


def _on_chart_pick() -> None:
    """A click on a drop marker selects that event; a click on the line picks the context step."""
    state = st.session_state.get("tot_pick")
    pick = vm.chart_pick(state.selection.points if state is not None else [])
    if pick is not None and pick.event is not None:
        st.session_state["ev"] = pick.event + 1
    elif pick is not None:
        st.session_state["ctx_step"] = pick.step


def _step_event(delta: int, count: int) -> None:
    """Previous / next drop event (the number input keeps the 1-based number)."""
    current = vm.event_nav(st.session_state.get("ev"), count)
    if current is not None:
        st.session_state["ev"] = min(count, max(1, current.index + 1 + delta))


def _jump_to_message(index: dict, dropped_at, event_steps) -> None:
    """Select the drop event that dropped the message whose id was typed."""
    wanted = (st.session_state.get("ev_msg") or "").strip()
    st.session_state["_ev_msg_note"] = None
    if not wanted:
        return
    i = index.get(wanted)
    if i is None:
        st.session_state["_ev_msg_note"] = f"No message has the id {wanted!r} in this conversation."
        return
    k = vm.event_for_message(event_steps, dropped_at[i])
    if k is None:
        st.session_state["_ev_msg_note"] = f"Message {wanted!r} (add step {i:,}) is never dropped under these settings."
        return
    st.session_state["ev"] = k + 1
    st.session_state["_ev_msg_note"] = f"Message {wanted!r} (add step {i:,}) was dropped by drop event {k + 1:,}."


st.title("Token budget")
st.markdown(f"**{QUESTIONS['token_budget']}**")
st.caption(
    "Messages are added one by one to a History under a token limit; when the total passes the "
    "limit, compaction drops the oldest messages (with the policies below). Every setting is in "
    "the URL: copy it to share this exact view."
)

dataset = current_dataset()
convs = {c.id: c for c in dataset.conversations}
if not convs:
    st.info("This dataset holds no conversation. Pick another one in the sidebar.")
    st.stop()

# ---------------------------------------------------------------------------------- settings (A)
top = st.columns([3, 4])
conv_id = conversation_picker(dataset, top[0])
conv = convs[conv_id]
n = len(conv.messages)
top[0].caption(f"{n:,} messages · {conv.total_tokens:,} tokens")
if n == 0:
    st.info("This conversation has no message.")
    st.stop()
previous_scope = st.session_state.get("_tb_scope")
if previous_scope is not None and previous_scope != (dataset.key, conv_id):
    # Views of the old conversation, and its limit: each goes back to its default for the new one
    # (the comparison and the sweep collapsed on a big conversation: each costs extra replays).
    # Out of the URL too: a bound slider forgotten only in the session came back from the URL,
    # outside its new range (a traceback), and the browser showed another value than the server
    # used (docs/decisions.md "A new conversation starts from its own default limit").
    forget_widget_values("limit", "limit_n", "win", "ev", "ctx_step", "pg", "cmp", "sweep")
st.session_state["_tb_scope"] = (dataset.key, conv_id)

bounds = limit_bounds(conv.total_tokens, conv.messages[0].tokens)
panel_sweep.apply_pick("limit")  # a click on the sweep chart (its callback may run in a fragment run)
_drop_if("limit", lambda v: not (isinstance(v, int) and bounds.lo <= v <= bounds.hi))
_link_range_note("limit", bounds.lo, bounds.hi, "tokens")  # Streamlit drops it silently (a new user)
lim_cols = top[1].columns([4, 1.4], vertical_alignment="bottom")
exact_limit_input(lim_cols[1], "limit", bounds.lo, bounds.hi, bounds.default, "Exact limit")
limit = lim_cols[0].slider(
    "Limit (tokens)",
    bounds.lo,
    bounds.hi,
    bounds.default,
    step=bounds.step,
    format="%,d",  # thousands separators (issue 10 item 4); the exact input beside it stays plain for typing
    key="limit",
    bind=URL,
    help="Compaction runs when the total passes the limit. A total equal to the limit fits.",
)

cols = st.columns([2, 2.5, 3, 2.5])  # room for "Keep tool groups" and its help icon
pin_system = cols[0].toggle("Pin system", False, key="pin_sys", bind=URL, help="System messages are never dropped.")
pin_latest_user = cols[0].toggle(
    "Pin latest user", False, key="pin_user", bind=URL, help="The newest user message is never dropped."
)
keep_tool_groups = cols[1].toggle(
    "Keep tool groups", False, key="tools", bind=URL,
    help="A tool call and its results are dropped together; a result never outlives its call.",
)
start_on_user = cols[1].toggle(
    "Start on user", False, key="on_user", bind=URL,
    help="After a compaction, drop leading messages until the first non-system one is a user turn.",
)
pct = raw_target = raw_budget = None
with cols[2]:
    tmode = st.radio(
        "Target",
        TARGET_MODES,
        key="tmode",
        bind=URL,
        horizontal=True,
        help="Compaction triggers at the limit and cuts down to the target: fewer, bigger cuts.",
    )
    if tmode == "percent":
        pct = st.slider("Target (% of limit)", *P["tgt"].slider, key="tgt", bind=URL)
    elif tmode == "tokens":
        raw_target = st.number_input(
            "Target (tokens)", min_value=0, value=vm.target_tokens_default(bounds), step=bounds.step,
            key="tgt_tok", bind=URL,
        )
    target_note = st.empty()
with cols[3]:
    summaries = st.toggle(
        "Summaries", False, key="sum", bind=URL,
        help="Each compaction folds what it dropped into one extractive summary (convmem.ExtractiveSummarizer).",
    )
    if summaries:
        raw_budget = st.number_input(
            "Summary budget (tokens)", min_value=0, value=vm.summary_budget_default(bounds), step=bounds.step,
            key="sb", bind=URL,
            help="Tokens reserved for the summary: cuts go to target − budget; a longer summary is rejected.",
        )
    budget_note = st.empty()

derived = vm.settings_a(
    vm.AControls(
        limit=limit,
        target_mode=tmode,
        target_pct=pct if pct is not None else P["tgt"].default,
        target_tokens=None if raw_target is None else int(raw_target),
        pin_system=pin_system,
        pin_latest_user=pin_latest_user,
        keep_tool_groups=keep_tool_groups,
        start_on_user=start_on_user,
        summaries=summaries,
        summary_budget=None if raw_budget is None else int(raw_budget),
    ),
    bounds,
)
settings = derived.settings
target, budget = settings.target, settings.summary_budget
if not summaries:  # the first "Summaries" toggle finds the lines counted (convmem_dashboard.idle_lines)
    idle_lines.warm_later(f"{dataset.key}/{conv_id}", conv.messages)
if derived.target_note:
    target_note.caption(derived.target_note)
if derived.budget_note:
    budget_note.caption(derived.budget_note)
# Clearing (context editing): old tool results replaced in place, before any drop.
ccols = st.columns([2, 2.5, 3, 2.5], vertical_alignment="bottom")
clearing = ccols[0].toggle(
    "Clear tool results", False, key="clr", bind=URL,
    help="Past the trigger, tool results older than the newest `keep` are replaced by a 4-token "
    "placeholder (Anthropic clear_tool_uses / LangChain ClearToolUsesEdit); drops only if still over the limit.",
)
if clearing:
    clr_trig = ccols[1].number_input(
        "Clearing trigger (tokens)", min_value=0, value=None, step=bounds.step, key="clr_trig", bind=URL,
        placeholder=f"the limit ({limit:,})",
    )
    clr_keep = ccols[2].number_input("Keep newest tool results", *P["clr_keep"].slider, key="clr_keep", bind=URL)
    clr_min = ccols[3].number_input(
        "Clear at least (tokens)", min_value=0, value=0, step=bounds.step, key="clr_min", bind=URL,
        help="A clearing that would free fewer tokens does not run: fewer cache breaks, more tokens kept.",
    )
    settings = cv.with_clearing(settings, True, clr_trig, clr_keep, clr_min)
key = dataset.key
file_stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", conv_id)[:80]
if summaries:  # the summary lines first, in slices under a bar (convmem_dashboard.panel_summary_lines)
    panel_summary_lines.lines_ready(key, conv_id)
# A long replay goes in slices, one per script run, under a bar (convmem_dashboard.panel_replay):
# the previous setting's charts stay on screen, faded, until the new ones are drawn.
panel_replay.replay_ready(key, conv_id, settings)
r = cb.get_replay(key, conv_id, settings)
arrays = cb.get_arrays(key, conv_id, settings)
stats = r.stats

# ---------------------------------------------------------------------------------------- metrics
# Two rows of three (tokens, then drops): labels with their unit and a help icon stay whole
# in a 1280-px window.
m = [*st.columns(3), *st.columns(3)]
m[0].metric("Final total (tokens)", f"{r.totals[-1]:,}", help=f"Tokens in context after the last add (limit {limit:,} tokens).")
m[3].metric("Compactions", f"{stats.compactions:,}", help="Adds that dropped something from the context.")
m[4].metric("Messages dropped", f"{stats.messages_dropped:,}", help=f"{stats.tokens_dropped:,} tokens in all (summaries not counted).")
m[5].metric(
    "Prefix changes", f"{stats.prefix_changes:,}",
    help="Adds after which the context starts differently: each re-sends the whole prompt uncached.",
)
m[1].metric("Mean context (tokens)", f"{stats.mean_context:,.0f}", help=f"Tokens in context after an add, on average; max {stats.max_context:,} tokens.")
m[2].metric(
    "Adds over limit", f"{stats.over_limit_steps:,}",
    help="Adds after which pinned messages alone kept the total above the limit (History.over_limit).",
)

safe = render_safe_limit(key, conv_id, settings, r, lo=bounds.lo, hi=bounds.hi, arrays=arrays)

# ------------------------------------------------------------------------------ totals and events
events = r.compactions
n_events = len(events)
if n > 1:
    _link_range_note("win", 0, n - 1, "add steps")
    _drop_if("win", lambda v: not (isinstance(v, (tuple, list)) and len(v) == 2 and 0 <= v[0] <= v[1] <= n - 1))
    win = st.slider(
        "Steps shown (add steps)", 0, n - 1, (0, n - 1), format="%,d", key="win", bind=URL,
        help="Zoom both charts on a range of adds; large ranges are downsampled (envelope of the totals, "
        "the biggest drop per bucket).",
    )
else:
    win = (0, 0)
nav = None
if n_events > 0:
    _link_range_note("ev", 1, n_events, "drop events")
    _drop_if("ev", lambda v: not (isinstance(v, int) and 1 <= v <= n_events))
    nav = vm.event_nav(st.session_state.get("ev"), n_events)
    ev_cols = st.columns([1.3, 1.3, 2.2, 3.2], vertical_alignment="bottom")
    ev_cols[0].button(
        "◀ Previous", key="ev_prev", on_click=_step_event, args=(-1, n_events), disabled=not nav.has_previous,
        width="stretch",
    )
    ev_cols[1].button(
        "Next ▶", key="ev_next", on_click=_step_event, args=(1, n_events), disabled=not nav.has_next, width="stretch",
    )
    chosen_event = ev_cols[2].number_input(
        f"Drop event # (1–{n_events:,})", min_value=1, max_value=n_events, value=1, step=1, key="ev", bind=URL,
        help="Which drop event to inspect below; or click a triangle in the chart.",
    )
    nav = vm.event_nav(int(chosen_event), n_events)
    ev_cols[3].text_input(
        "Jump to the event that dropped message id", key="ev_msg",
        placeholder=f"a message id, e.g. {(events[0].dropped_ids or [''])[0][:40]}",
        on_change=_jump_to_message, args=(cb.message_index(key, conv_id), r.dropped_at, events.steps),
    )
    note = st.session_state.get("_ev_msg_note")
    if note:
        st.caption(note)
selected = nav.index if nav is not None else None

st.plotly_chart(
    add_agent_compactions(  # a coding-agent session: its own compactions beside convmem's
        cv.mark_clearings(cb.get_totals_figure(key, conv_id, settings, win[0], win[1], selected), r, win[0], win[1]),
        conv, start=win[0], stop=win[1]),
    key="tot_pick",
    on_select=_on_chart_pick,
    selection_mode="points",
)
st.caption(totals_caption(n_events, arrays.has_target, arrays.summary_budget is not None))
if clearing_text := cv.clearing_caption(stats, settings):
    st.caption(clearing_text)
if has_session(conv):  # issue 13: what the agent kept at each of its compactions, beside convmem
    st.caption(f"{session_caption(conv)}. Green stars: the agent's own compactions; orange dots: the prompt the provider reported per call.")
    show_table(compaction_table(conv, r), hide_index=True, key="agent_cmp_table")

st.subheader("Drop events")
if selected is None:
    st.info("Nothing was ever dropped: the whole conversation fits under this limit. Lower the limit.")
else:
    event = events[selected]
    dropped_tokens = sum(d.tokens for d in event.dropped)
    st.text(
        f"{nav.label}: add step {event.step:,} brought message "
        f"{event.message_id}; trigger: {event.trigger}; total {event.total_before:,} → "
        f"{event.total_after:,} tokens; dropped {plural(len(event.dropped), 'message')}, {dropped_tokens:,} tokens."
    )
    show_table(
        drop_event_table(event, r.messages), hide_index=True, key="ev_table", **drop_event_view(len(event.dropped))
    )
    outcome = event.summary
    st.text(summary_outcome_text(outcome))
    if outcome is not None and outcome.accepted and outcome.id != getattr(outcome, "removed_id", None):
        text = getattr(r.summaries.get(outcome.id), "content", None)
        if text:
            st.code(text, language=None, wrap_lines=True)

st.plotly_chart(
    cb.get_context_figure(key, conv_id, settings, win[0], win[1], events.steps[selected] if selected is not None else None),
    key="ctx_chart",
)
st.caption(context_caption(bool((arrays.dropped_at >= 0).any()), bool(arrays.summary_spans)))

# ------------------------------------------------------------------------------ context at a step
st.subheader("Context at a step")
default_step = events[selected].step if selected is not None else n - 1
_link_range_note("ctx_step", 0, n - 1, "add steps")
_drop_if("ctx_step", lambda v: v is not None and not (isinstance(v, int) and 0 <= v <= n - 1))
chosen = st.number_input(
    "Add step (message #)", min_value=0, max_value=n - 1, value=None, step=1, key="ctx_step", bind=URL,
    placeholder=step_placeholder(default_step, selected is not None),
)
step = default_step if chosen is None else int(chosen)
context = context_at_step(r, step, arrays)
st.text(f"After add step {step:,}: {plural(len(context), 'message')}, {sum(x.tokens for x in context):,} tokens.")
show_table(context_table(context), hide_index=True, key="ctx_table", **context_view(len(context)))
download_json(
    "Download this context (JSON)",
    lambda: cb.get_context_records(key, conv_id, settings, step),
    file_name=f"context-{file_stem}-step{step}.json",
    key="dl_ctx",
    help='OpenAI-like [{"id", "role", "tokens", "content"}], the summary included, in order. '
    "Text that a spreadsheet would run as a formula starts with ' (export_safety).",
)

# ------------------------------------------------------------------------------------ A against B
# The comparison and the sweep start closed, at every size: below the first screen, they cost a
# cold first view of the bundled sample ~2.5 s of server work and 2-4 s of the browser drawing
# four more charts (docs/performance.md, cold20); opening one computes it once (cached), and
# the link keeps it open (?cmp=true, ?sweep=true).
with st.expander("Compare with a second setting (B)", expanded=False, key="cmp", bind=URL) as cmp:
    if cmp.open:
        # Two rows: the four policies need the whole width to show every chip, and the toggle's
        # label its own column.
        bc = st.columns([3, 4, 2], vertical_alignment="bottom")
        b_limit = bc[0].number_input(
            "B limit (tokens)", min_value=bounds.lo, value=None, step=1, key="b_limit", bind=URL,
            placeholder=f"same as A ({limit:,})",
        )
        b_limit = None if b_limit is None else int(b_limit)
        b_pct = bc[1].slider("B target (% of its limit; 100 = off)", *P["b_tgt"].slider, key="b_tgt", bind=URL)
        b_sum = bc[2].toggle("B summaries", False, key="b_sum", bind=URL, help="Same budget as A's summary budget.")
        b_clr = bc[2].toggle(
            "B clears tool results", False, key="b_clr", bind=URL,
            help="Clearing with A's trigger, keep and clear-at-least (A's trigger default: B's limit).",
        )
        b_pol = st.multiselect(
            "B policies", POLICIES, default=P["b_pol"].default, key="b_pol", bind=URL,
            help="History's keyword options B turns on (A's are the toggles at the top).",
        )
        settings_b = vm.settings_b(
            vm.BControls(limit=b_limit, target_pct=b_pct, summaries=b_sum, policies=tuple(b_pol)), settings, bounds
        )
        settings_b = cv.with_clearing(
            settings_b, b_clr, settings.clear_trigger, settings.clear_keep, settings.clear_at_least
        )
        if b_sum:  # as for A's summaries: the lines first, under a bar
            panel_summary_lines.lines_ready(key, conv_id)
        # B's replay in runs of its own: the comparison and its cost panel are drawn in the next
        panel_replay.replay_ready(key, conv_id, settings_b, "setting B", own_run=True)
        stats_b = cb.get_stats(key, conv_id, settings_b)
        show_table(comparison_table(stats, stats_b), hide_index=True, key="cmp_table")
        if settings.clear_trigger is not None or b_clr:
            show_table(cv.clearing_comparison_table(stats, stats_b), hide_index=True, key="cmp_clear_table")
        st.plotly_chart(cb.get_comparison_figure(key, conv_id, settings, settings_b), key="cmp_chart")
        st.caption(
            "Blue = A (the settings above), orange = B; each panel is one metric on its own scale. "
            "Fewer prefix changes means more adds reuse the provider's prompt cache."
        )
        panel_cost.render(key, conv_id, settings, settings_b)

# ---------------------------------------------------------------------------------------- sweep
with st.expander("Limit sweep: pick a limit by eye", expanded=False, key="sweep", bind=URL) as sweep:
    if sweep.open:
        count = st.slider("Limits to try", *P["sw_n"].slider, key="sw_n", bind=URL,
                          help=f"This many limits (fewer only when the slider's range has fewer steps), evenly "
                          f"spaced over that range and through the current limit; one replay each "
                          f"({n:,} messages).")
        limits = sweep_grid(bounds.lo, bounds.hi, count, bounds.step, through=limit)
        panel_sweep.render(key, conv_id, settings, limits, n, safe)  # in slices: see panel_sweep

# ---------------------------------------------------------------------------------- every message
st.subheader("Every message")
pages = max(1, -(-n // TABLE_PAGE_ROWS))
if pages > 1:
    _link_range_note("pg", 1, pages, "table pages")
    _drop_if("pg", lambda v: not (isinstance(v, int) and 1 <= v <= pages))
    page = st.pagination(pages, key="pg", bind=URL)
else:
    page = 1
first = (page - 1) * TABLE_PAGE_ROWS
page_rows = cb.get_table_rows(key, conv_id, settings, first, first + TABLE_PAGE_ROWS)  # only the rows shown
show_table(page_rows, hide_index=True, key="msg_table", **messages_view(len(page_rows)))
st.caption(
    f"Rows {first:,}–{min(n, first + TABLE_PAGE_ROWS) - 1:,} of {n:,} (one row per message; "
    "'dropped at' is the add step that dropped it, – while kept). The CSV has every row."
)
download_csv(
    "Download the table (CSV)",
    lambda: cb.get_table(key, conv_id, settings),
    file_name=f"token-budget-{file_stem}.csv",
    key="dl_csv",
    help="Every message, one row each. Text that a spreadsheet would run as a formula starts with '.",
)
