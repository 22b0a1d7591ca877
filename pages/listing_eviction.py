"""Listing eviction: cap the distinct listings a shopper's past conversations bring into context.

Widgets in (bound to the URL), convmem's eviction functions (cached by dataset key and shopper),
figures and tables from pure builders out. Conversation titles and ids are user text: they go to
st.dataframe / st.code only.
"""

from __future__ import annotations

import streamlit as st

from convmem.conversations import group_by_user
from convmem_dashboard.data import current_dataset, get_dataset
from convmem_dashboard.figures_eviction import conversation_timeline, eviction_curve_figure
from convmem_dashboard.tables_eviction import (
    NO_SHOPPER,
    Eviction,
    ShopperView,
    default_shopper,
    dropped_table,
    dropped_table_view,
    evict,
    remaining_table,
    shopper_options,
    shopper_view,
)
from convmem_dashboard.entry import require_entry
from convmem_dashboard.export_safety import download_csv
from convmem_dashboard.url_params import PARAMS

require_entry()

URL = {"bind": "query-params"}


@st.cache_data(show_spinner=False, max_entries=16)
def shoppers(dataset_key: str) -> tuple[list[str], str | None, int]:
    """Picker options (shoppers in first-appearance order), the default shopper, and the largest
    distinct-id count of any shopper (the slider's range, fixed per dataset)."""
    groups = group_by_user(get_dataset(dataset_key).conversations)
    top = max((len({x for c in convs for x in c.listing_ids}) for convs in groups.values()), default=0)
    return shopper_options(groups), default_shopper(groups), top


@st.cache_data(show_spinner=False, max_entries=64)
def view_of(dataset_key: str, shopper: str) -> ShopperView:
    """One shopper's conversations as plain values (cached by plain values)."""
    user = None if shopper == NO_SHOPPER else shopper
    convs = [c for c in get_dataset(dataset_key).conversations if c.user_id == user]
    return shopper_view(convs)


@st.cache_data(show_spinner=False, max_entries=256)
def eviction_for(dataset_key: str, shopper: str, cap: int) -> Eviction:
    return evict(view_of(dataset_key, shopper), cap)


st.title("Listing eviction")
st.caption(
    "A shopping agent carries a shopper's past conversations, oldest first. While they mention "
    "more than max_listings distinct listing ids, convmem.evict_conversations forgets the oldest "
    "whole conversation. An id stops counting only when its last mention goes."
)

dataset = current_dataset()
options, default, top = shoppers(dataset.key)
if not options:
    st.info("The dataset in use has no conversation. Pick another one in the sidebar.")
    st.stop()



def _reset_cap() -> None:
    """A new shopper starts at its own default cap (the slider keeps one identity per dataset, so
    this programmatic value always wins, and the URL follows it)."""
    chosen = st.session_state.get("shopper")
    if chosen in options:
        st.session_state["cap"] = view_of(dataset.key, chosen).default_cap


shopper = st.selectbox(
    "Shopper",
    options,
    index=options.index(default) if default in options else 0,
    key="shopper",
    on_change=_reset_cap,
    help="group_by_user of the dataset in use; the conversations are in file order (oldest first).",
    **URL,
)
view = view_of(dataset.key, shopper)

if view.max_cap == 0:
    st.info(
        f"This shopper's {view.n} conversation(s) mention no listing id: nothing to evict. "
        "Pick another shopper."
    )
    st.stop()

# One range for the whole dataset (not per shopper): a slider whose bounds change gets a new
# identity, and Streamlit would then re-seed it from the URL the page was opened with.
cap = st.slider(
    "max_listings (distinct listing ids the kept conversations may mention)",
    0,
    max(top, 1),
    view.default_cap,
    key="cap",
    help=f"For this shopper {view.max_cap} or more keeps every conversation; 0 keeps only "
    "conversations that mention no listing. Picking a shopper resets it to that shopper's default.",
    **URL,
)
ev = eviction_for(dataset.key, shopper, int(cap))

m = st.columns(4)
m[0].metric("Conversations kept", f"{view.n - ev.k} / {view.n}")
m[1].metric("Conversations dropped", ev.k)
m[2].metric("Distinct ids remaining", len(ev.remaining))
m[3].metric("Distinct ids before eviction", view.max_cap)

st.subheader("Conversations, oldest first")
st.plotly_chart(
    conversation_timeline(view.ids, ev.released, ev.shared, ev.k, titles=view.titles),
    key="timeline",
)
st.caption(
    "One bar per conversation, oldest at the top; its length is the distinct listing ids it "
    "mentions. Solid: ids whose last mention is here (dropping it releases them); hatched: ids "
    "newer conversations mention again (dropping it does not lower the count). Hover for the ids."
)

st.subheader("Eviction curve")
st.plotly_chart(eviction_curve_figure(view.curve, int(cap), ev.k), key="curve")
st.caption(
    "Distinct listing ids left after dropping the k oldest conversations (convmem.eviction_curve). "
    "The dashed line is the cap; the star is the first k whose count fits under it, the "
    "conversations evict_conversations drops. Flat steps are drops that released nothing."
)

st.subheader("Why each drop did or did not help")
table = dropped_table(view, ev)
dropped_only = st.checkbox("Only dropped conversations", PARAMS["only"].default, key="only", **URL)
shown = table[table["fate"] == "dropped"] if dropped_only else table
st.dataframe(shown, hide_index=True, **dropped_table_view(len(shown)))
download_csv(
    "Download this table (CSV)",
    lambda: shown,
    file_name="listing-eviction.csv",
    key="dl_evict",
    help="The rows shown above. Text that a spreadsheet would run as a formula starts with '.",
)
if ev.k == 0:
    st.caption(f"Nothing is dropped: all {view.max_cap} distinct ids fit under the cap.")
else:
    wasted = sum(1 for i in range(ev.k) if not ev.released[i] and ev.shared[i])
    empty = sum(1 for i in range(ev.k) if not ev.released[i] and not ev.shared[i])
    st.caption(
        f"{ev.k} conversation(s) dropped; {wasted} of them lowered nothing because every id they "
        "mention is mentioned again by a newer conversation"
        + (f", and {empty} mention no listing at all" if empty else "")
        + ". Released: ids whose last mention went with the conversation."
    )

st.subheader(f"Ids that remain ({len(ev.remaining)})")
ids_table, ids_text = st.columns([3, 2])
ids_table.dataframe(remaining_table(view, ev), hide_index=True)
ids_text.code(", ".join(ev.remaining) or "(none)", language=None, wrap_lines=True)
