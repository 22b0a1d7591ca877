"""Flaky store: load a real conversation page by page through injected faults, on a virtual clock.

Widgets in (every setting bound to the URL), one cached simulation (keyed by plain values), figures
and tables from pure builders out. A PageLoadError is shown as a readable message, never a
traceback; user text is shown with st.dataframe / st.code only.
"""

from __future__ import annotations

import streamlit as st

from convmem_dashboard.data import (
    ROOT, SAMPLE_FILE, SAMPLE_SQLITE, SPLIT_LOAD_MESSAGES, current_dataset, get_dataset,
)
from convmem_dashboard.figures_store import call_timeline, timeline_extent
from convmem_dashboard.tables_store import (
    FlakyRun,
    call_table,
    call_table_view,
    error_table,
    error_table_view,
    fault_outcome_table,
    fault_outcome_view,
    step_state,
    truth_table,
)
from convmem_dashboard.export_safety import download_csv
from convmem_dashboard.questions import QUESTIONS
from convmem_dashboard.selection import conversation_picker
from convmem_dashboard.url_params import PARAMS, link_range_note, rerun_keeping_link_fixes
from convmem_dashboard.view_flaky_store import (
    STORE_KINDS,
    FlakySettings,
    arrival_metrics,
    default_conversation,
    failure_note,
    messages_source,
    outcome,
    reproduce_code,
    run_metrics,
    sql_cap_note,
    truth_metrics,
)
from convmem_dashboard import view_flaky_store as view
from convmem_dashboard.show_table import show_table
from convmem_dashboard.wording import plural


URL = {"bind": "query-params"}
#: Ranges, defaults and steps of the URL-bound widgets (shared with the URL sanitizer).
P = PARAMS


# cache_resource, not cache_data: a run over 10^5 messages is megabytes, and cache_data would
# unpickle a fresh copy on every rerun. The FlakyRun is never mutated, so sharing it is safe.
@st.cache_resource(show_spinner="Simulating the load…", max_entries=16)
def simulate(dataset_key: str, conversation_id: str, settings_key: tuple) -> FlakyRun:
    """One seeded run, cached by plain values (never by the messages themselves)."""
    messages = get_dataset(dataset_key).conversation(conversation_id).messages
    return view.run(FlakySettings.from_key(settings_key), conversation_id, messages)


@st.cache_resource(show_spinner="Checking every message against the store…", max_entries=32)
def truth_frame(run_key: tuple, only_problems: bool, _run: FlakyRun):
    """The truth table of a cached run, built once per run (``run_key`` = simulate's arguments)."""
    return truth_table(_run, only_problems=only_problems)


@st.cache_data(show_spinner=False, max_entries=16)
def conversation_choices(dataset_key: str) -> tuple[tuple[str, ...], dict[str, int], int]:
    """Conversation ids, their message counts, and the default (the longest, first on a tie)."""
    convs = get_dataset(dataset_key).conversations
    ids = tuple(c.id for c in convs)
    sizes = {c.id: len(c.messages) for c in convs}
    return ids, sizes, default_conversation(ids, sizes)


def show_metrics(cells, per_row: int = 3) -> None:
    """Metrics in rows of ``per_row`` (values are short: none is cut off at 1,400 px)."""
    for start in range(0, len(cells), per_row):
        cols = st.columns(per_row)
        for col, cell in zip(cols, cells[start : start + per_row]):
            col.metric(cell.label, cell.value, help=cell.help, border=True)


st.title("Flaky store")
st.markdown(f"**{QUESTIONS['flaky_store']}**")
st.caption(
    "A store serves one conversation page by page and misbehaves on purpose. "
    "convmem.load_history retries failed calls with backoff on a virtual clock (no real waiting) "
    "and must return every message once, in order — or say exactly why it could not."
)

dataset = current_dataset()
ids, sizes, default_index = conversation_choices(dataset.key)
if not ids:
    st.info("The dataset in use has no conversation. Pick another one in the sidebar.")
    st.stop()

conv_id = conversation_picker(dataset)
store_kind = st.radio(
    "Store", STORE_KINDS, horizontal=True, key="store",
    help="Offset pages: an in-memory list with 'p<offset>' cursors, where the cursor and page "
    "faults live. SQLite: the conversation in a private in-memory convmem SQLStore, paged by its "
    "keyset cursors (SQLStore.pager); there, messages can arrive while it pages. Your database is "
    "never written to.",
    **URL,
)
sql = store_kind == STORE_KINDS[1]

with st.container(border=True):
    left, middle, right = st.columns(3)
    with left:
        st.markdown("**Transient failures**")
        rate = st.slider(
            "Failure rate", *P["rate"].slider, key="rate",
            help="Chance that a call (not already in a burst) raises TransientError.", **URL,
        )
        burst = st.slider(
            "Burst length (calls)", *P["burst"].slider, key="burst",
            help="A failure also fails the next calls with the same cursor, this many in all.", **URL,
        )
        seed = st.number_input(
            "Seed", *P["seed"].slider, key="seed",
            help="Same seed and settings, same run. The jitter has its own stream from the same seed.",
            **URL,
        )
    with middle:
        if sql:
            st.markdown("**Messages arriving while paging**")
            arrivals = st.number_input(
                "Messages appended during the load", *P["arr"].slider, key="arr",
                help="A writer appends this many messages to the conversation while the load "
                "pages (0 = none).", **URL,
            )
            arrive_after = st.number_input(
                "…right after page k is served", *P["arr_at"].slider, key="arr_at", **URL,
            )
            high_water = st.checkbox(
                "Stop at the start's high-water mark", P["hwm"].default, key="hwm",
                help="pager(id, high_water=store.high_water_mark(id)): the load ends at the "
                "messages there were when it started; a follow-up pager(id, after=pager.position) "
                "returns exactly what arrived since.", **URL,
            )
            repeated = cycle = empty = None
            wrap = False
        else:
            st.markdown("**Cursor and page faults**")
            repeated = st.number_input(
                "Repeated cursor after page k", *P["rep"].slider, key="rep", placeholder="off",
                help="Page k+1 hands back the cursor it was fetched with (a stuck cursor). Empty = off.",
                **URL,
            )
            cycle = st.number_input(
                "Cursor cycle back to page j", *P["cyc"].slider, key="cyc", placeholder="off",
                help="The last page points back to page j's cursor instead of None. Empty = off.", **URL,
            )
            wrap = st.checkbox(
                "Wrap-around", P["wrap"].default, key="wrap",
                help="After the last page the store starts over under fresh cursors, forever.", **URL,
            )
            empty = st.number_input(
                "Empty page after page k", *P["empty"].slider, key="empty", placeholder="off",
                help="Page k points to an empty page that carries a cursor to page k+1. Empty = off.",
                **URL,
            )
            arrivals, arrive_after, high_water = 0, 1, False
    with right:
        st.markdown("**Paging and retries**")
        page_size = st.slider("Page size (messages)", *P["psize"].slider, key="psize", **URL)
        if sql:
            overlap = 0
        else:
            if note := link_range_note("overlap", 0, max(0, page_size - 1), "messages",
                                       "the range this page size allows"):
                st.warning(note, icon=":material/link:")
            overlap = st.number_input(
                "Overlapping messages per page", 0, max(0, page_size - 1), min(1, page_size - 1), 1,
                key="overlap",
                help="Each page after the first starts this many messages before the previous one ended.",
                **URL,
            )
        attempts = st.slider("Attempts per call", *P["tries"].slider, key="tries", **URL)
        d1, d2, d3 = st.columns(3)
        base_delay = d1.number_input(
            "Base delay (s)", *P["base"].slider, format="%.2f", key="base", **URL
        )
        max_delay = d2.number_input(
            "Max delay (s)", *P["maxd"].slider, format="%.2f", key="maxd", **URL
        )
        deadline = d3.number_input(
            "Deadline (s)", *P["dl"].slider, format="%.2f", key="dl", placeholder="none",
            help="Give up when the next backoff would end past this many seconds. Empty = none.",
            **URL,
        )
        empty_page_ends = st.checkbox(
            "An empty page ends the load", P["epe"].default, key="epe",
            help="load_history(empty_page_ends=...). Off: follow an empty page that carries a cursor.",
            **URL,
        )

settings = FlakySettings.from_widgets(
    rate=rate, burst=burst, seed=seed, rep=repeated, cyc=cycle, wrap=wrap, empty=empty,
    overlap=overlap, psize=page_size, tries=attempts, base=base_delay, maxd=max_delay,
    dl=deadline, epe=empty_page_ends, store=store_kind, arr=arrivals, arr_at=arrive_after,
    hwm=high_water,
)
try:
    fault_config = settings.faults()  # names the field at fault, e.g. cycle and wrap-around
except (ValueError, TypeError) as exc:
    st.error("These settings cannot run together; change one of them:", icon=":material/tune:")
    st.code(str(exc), language=None, wrap_lines=True)
    st.stop()
try:
    run_key = (dataset.key, conv_id, settings.key())
    run = simulate(*run_key)
except Exception as exc:  # noqa: BLE001 - shown as a message, never as a traceback
    st.error("The simulated load could not run:", icon=":material/error:")
    st.code(f"{type(exc).__name__}: {exc}", language=None, wrap_lines=True)
    st.stop()
if view.simulation_is_new(st.session_state, run_key, sizes[conv_id], SPLIT_LOAD_MESSAGES):
    # a big conversation's new run was simulated in this script run: the page (the truth check,
    # the tables and the timeline) in a run of its own, each under 1 s at 10^5 messages (issue 10
    # item 3); the previous view stays on screen meanwhile
    rerun_keeping_link_fixes()

if note := sql_cap_note(settings, sizes[conv_id]):
    st.info(note, icon=":material/database:")

ALL, STEP = P["mode"].options
mode = st.radio("Run", [ALL, STEP], horizontal=True, key="mode", **URL)

n_calls = len(run.calls)
upto = n_calls
if mode == STEP and n_calls > 1:

    def _move(delta: int) -> None:
        current = st.session_state.get("step", 1)
        st.session_state["step"] = max(1, min(n_calls, current + delta))

    b1, b2, b3 = st.columns([3, 3, 10], vertical_alignment="bottom")  # the labels whole at 1,280 px
    b1.button("◀ Previous call", on_click=_move, args=(-1,), width="stretch")
    b2.button("Next call ▶", on_click=_move, args=(1,), type="primary", width="stretch")
    # No value= here: the buttons set st.session_state["step"]; the default is min_value (1).
    if note := link_range_note("step", 1, n_calls, "calls", "this run's range"):
        st.warning(note, icon=":material/link:")
    upto = b3.slider("Calls shown", 1, n_calls, format="%,d", key="step", **URL)  # thousands separators

state = step_state(run, upto)
shown = run.calls[:upto]

# -- outcome and metrics ---------------------------------------------------------------------------
box = outcome(run, state, stepping=mode == STEP)
if box.kind == "info":
    st.info(box.headline, icon=":material/footprint:")
elif box.kind == "error":
    st.error(box.headline, icon=":material/error:")
else:
    st.success(box.headline, icon=":material/flag:")
if box.detail:
    st.code(box.detail, language=None, wrap_lines=True)
show_metrics(run_metrics(run, state))

# -- timeline --------------------------------------------------------------------------------------
st.subheader("Call timeline")
extent = timeline_extent(run.calls) if mode == STEP else None  # steps fill in a fixed frame
st.plotly_chart(call_timeline(shown, extent=extent), key="timeline")
st.caption(
    "Each marker is one call at the virtual time it started (calls take no time; only backoff "
    "sleeps, the blue segments, move a request to the right). Retries stay on their request's "
    "row; hover a marker for its cursor, attempt and injected fault."
)

st.subheader("Loaded vs truth")
if mode == STEP and not state["done"]:
    st.info(
        f"{state['loaded']:,} of {len(run.truth):,} messages loaded so far; the check against the "
        "truth runs when the load ends (step to the last call, or run all at once)."
    )
else:
    show_metrics(truth_metrics(run) + arrival_metrics(run))
    if run.error is not None:
        st.warning(failure_note(run), icon=":material/difference:")
    elif run.ok:
        st.success(
            f"None lost, none repeated: all {len(run.truth):,} messages loaded once, in order."
        )
    else:
        st.warning("The load differs from the truth:", icon=":material/difference:")
        st.code(run.explanation, language=None, wrap_lines=True)
    problems = truth_frame(run_key, True, run)
    if len(problems):
        show_table(problems, hide_index=True)
    # A toggle, not an expander: an expander's table is sent to the browser even when closed.
    if st.toggle("Show every message of the truth with its fate", key="truth_all", **URL):
        show_table(truth_frame(run_key, False, run), hide_index=True)
    download_csv(
        "Download every message with its fate (CSV)",
        lambda: truth_frame(run_key, False, run),
        file_name="flaky-store-truth.csv",
        key="dl_truth",
        help="Text that a spreadsheet would run as a formula starts with '.",
    )

st.subheader("Injected faults against outcomes")
faults_table = fault_outcome_table(run, upto)
show_table(faults_table, hide_index=True, **fault_outcome_view(len(faults_table)))
st.caption(
    "Rows: the injected faults (a call can show two); columns: how the calls that showed them "
    "ended. The last column says whether that fault can lose data."
)

st.subheader("Call log")
log = call_table(run, upto)
show_table(log, hide_index=True, **call_table_view(len(log)))
download_csv(
    "Download the call log (CSV)",
    lambda: call_table(run, upto),
    file_name="flaky-store-calls.csv",
    key="dl_calls",
    help="Text that a spreadsheet would run as a formula starts with '.",
)
errors = error_table(run, upto)
if len(errors):
    st.caption(f"Errors raised by the store ({plural(len(errors), 'call')}), message verbatim:")
    show_table(errors, hide_index=True, **error_table_view(len(errors)))

with st.expander("Reproduce this run in Python"):
    source = messages_source(
        dataset.key, conv_id, SAMPLE_FILE.relative_to(ROOT).as_posix(), SAMPLE_SQLITE.relative_to(ROOT).as_posix()
    )
    st.code(reproduce_code(settings, conv_id, source), language="python", wrap_lines=True)
    st.caption("Run it from the project root: it makes the same calls and loads the same messages.")
