"""Listing eviction: cap the distinct listings a shopper's past conversations bring into context.

Widgets in (bound to the URL), convmem's eviction functions (cached by dataset key and shopper),
figures and tables from pure builders out. Conversation titles and ids are user text: they go to
st.dataframe / st.code only.
"""

from __future__ import annotations

import streamlit as st

from convmem_dashboard.data import RETAIL_FILE, current_dataset, get_dataset
from convmem_dashboard.figures_eviction import conversation_timeline, eviction_curve_figure
from convmem_dashboard.listing_definitions import (
    DEFINITION_CAPTIONS,
    Catalog,
    extractor,
    listings_of,
    load_catalog,
)
from convmem_dashboard.selection import shopper_picker
from convmem_dashboard.tables_eviction import (
    Eviction,
    ShopperView,
    dropped_table,
    dropped_table_view,
    evict,
    remaining_table,
    shopper_view,
)
from convmem_dashboard.view_listing_eviction import (
    QUESTION,
    cap_bounds,
    definitions_offered,
    drop_caption,
    eviction_metrics,
    no_cut_notice,
    resolve_cap,
    what_counts,
)
from convmem_dashboard.choices import shopper_conversations
from convmem_dashboard.wording import plural
from convmem_dashboard.export_safety import download_csv
from convmem_dashboard.url_params import PARAMS, kept_note, out_of_range_note
from convmem_dashboard.show_table import show_table


URL = {"bind": "query-params"}
#: The retail run's catalogue (tau-bench db/products.json), beside its trajectories.
CATALOG_FILE = RETAIL_FILE.parents[1] / "db" / "products.json"


@st.cache_resource(show_spinner=False)
def catalog_for(dataset_key: str) -> Catalog | None:
    """The dataset's catalogue: the retail run's products.json when present, else None."""
    return load_catalog(CATALOG_FILE) if dataset_key == "retail" else None


@st.cache_data(show_spinner=False, max_entries=64)
def view_of(dataset_key: str, shopper: str, definition: str) -> ShopperView:
    """One shopper's conversations as plain values under one listing definition (cached by
    plain values)."""
    convs = shopper_conversations(get_dataset(dataset_key).conversations, shopper)
    extract = extractor(definition, catalog_for(dataset_key))
    return shopper_view(convs, listings_of(convs, extract))


@st.cache_data(show_spinner=False, max_entries=256)
def eviction_for(dataset_key: str, shopper: str, definition: str, cap: int) -> Eviction:
    return evict(view_of(dataset_key, shopper, definition), cap)


st.title("Listing eviction")
st.markdown(f"**{QUESTION}**")
st.caption(
    "A shopping agent carries a shopper's past conversations, oldest first. While they mention "
    "more than max_listings distinct listing ids, convmem.evict_conversations forgets the oldest "
    "whole conversation. An id stops counting only when its last mention goes."
)

dataset = current_dataset()
top = st.columns([3, 2])
shopper = shopper_picker(dataset, top[0])
if shopper is None:
    st.info("The dataset in use has no conversation. Pick another one in the sidebar.")
    st.stop()
catalog = catalog_for(dataset.key)
offered = definitions_offered(catalog is not None)
definition = top[1].radio(
    "What counts as a listing",
    offered,
    captions=[DEFINITION_CAPTIONS[d] for d in offered],
    key="listing",
    horizontal=False,
    help="Every 10-digit id also counts other 10-digit ids (retail product ids); the catalogue "
    "is offered when the dataset has one (tau-bench retail db/products.json). Kept in the URL.",
    **URL,
)
view = view_of(dataset.key, shopper, definition)

if view.max_cap == 0:
    st.info(
        f"This shopper's {plural(view.n, 'conversation')} mention no listing id under this definition: "
        "nothing to evict. Pick another shopper or another definition."
    )
    st.stop()

# The slider's range is this shopper's (0 to its distinct ids). Not bound with bind=: a slider
# whose range changes is a new widget that Streamlit would re-seed from the URL the page was
# opened with; the URL is read and written here instead (view_listing_eviction.resolve_cap).
scope = (dataset.key, shopper, definition)
same_scope = st.session_state.get("_ev_scope") == scope
st.session_state["_ev_scope"] = scope
lo, hi = cap_bounds(view)
url_cap, cap_url_seen = st.query_params.get("cap"), st.session_state.get("_cap_url_seen")
link_cap = url_cap if url_cap != cap_url_seen else None  # a link's ?cap= (not one this page wrote)
if note := kept_note("cap", out_of_range_note("cap", link_cap, lo, hi, "distinct listing ids", "this shopper's range")):
    st.warning(note, icon=":material/link:")  # resolve_cap shows the default (a new user saw no word)
st.session_state["cap"] = resolve_cap(
    url=url_cap, url_seen=cap_url_seen, session=st.session_state.get("cap"), same_scope=same_scope, view=view,
)
cap = int(st.slider(
    "max_listings (distinct listing ids the kept conversations may mention)",
    lo,
    hi,
    key="cap",
    help=f"For this shopper {view.max_cap:,} or more keeps every conversation; 0 keeps only "
    "conversations that mention no listing. Picking a shopper resets it to that shopper's "
    "default. Kept in the URL (?cap=).",
))
st.session_state["_cap_url_seen"] = str(cap)
if cap == view.default_cap:  # as a bound widget does: the default is left out of the URL
    st.query_params.pop("cap", None)
elif st.query_params.get("cap") != str(cap):
    st.query_params["cap"] = str(cap)
ev = eviction_for(dataset.key, shopper, definition, cap)

if notice := no_cut_notice(view, cap):
    st.warning(notice, icon=":material/block:")
m = st.columns(4)
for col, metric in zip(m, eviction_metrics(view, ev)):
    col.metric(metric.label, metric.value, help=metric.help)
if counts := what_counts(definition, view.listings[-1], catalog):
    st.caption(counts)

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
st.plotly_chart(eviction_curve_figure(view.curve, cap, ev.k), key="curve")
st.caption(
    "Distinct listing ids left after dropping the k oldest conversations (convmem.eviction_curve). "
    "The dashed line is the cap; the star is the first k whose count fits under it, the "
    "conversations evict_conversations drops. Flat steps are drops that released nothing."
)

st.subheader("Why each drop did or did not help")
table = dropped_table(view, ev)
dropped_only = st.checkbox("Only dropped conversations", PARAMS["only"].default, key="only", **URL)
shown = table[table["fate"] == "dropped"] if dropped_only else table
show_table(shown, hide_index=True, **dropped_table_view(len(shown)))
download_csv(
    "Download this table (CSV)",
    lambda: shown,
    file_name="listing-eviction.csv",
    key="dl_evict",
    help="The rows shown above. Text that a spreadsheet would run as a formula starts with '.",
)
st.caption(drop_caption(view, ev))

st.subheader(f"Ids that remain ({len(ev.remaining)})")
ids_table, ids_text = st.columns([3, 2])
show_table(remaining_table(view, ev), hide_index=True, container=ids_table)
ids_text.code(", ".join(ev.remaining) or "(none)", language=None, wrap_lines=True)
