"""convmem dashboard: `streamlit run dashboard.py`.

Entry point only: page config, the data picker shared by every page, navigation.
"""

import streamlit as st

from convmem_dashboard.entry import mark_entry
from convmem_dashboard.gc_tuning import tune_gc
from convmem_dashboard.questions import QUESTIONS
from convmem_dashboard.warmup import warm_up

# An emoji favicon: Streamlit draws it as an inline data: SVG. A ":material/...:" page icon makes
# the browser fetch an SVG from fonts.gstatic.com (issue 10 item 6: no request leaves localhost;
# the Material Symbols font of the icons in pages and messages is served by Streamlit itself).
st.set_page_config(page_title="convmem", page_icon="🧠", layout="wide")
tune_gc()  # fewer young GC passes over the cached 10^5-message replays (convmem_dashboard.gc_tuning)

# The page list first: on a fresh server the sidebar shows it at once, before convmem is imported
# below (issue 10 item 3). Neither reads nor echoes the URL's query parameters.
pages = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/flaky_store.py", title="Flaky store", icon=":material/cloud_sync:"),
    st.Page("pages/token_budget.py", title="Token budget", icon=":material/data_usage:"),
    st.Page("pages/listing_eviction.py", title="Listing eviction", icon=":material/shopping_cart:"),
    st.Page("pages/agent_session.py", title="Agent session", icon=":material/smart_toy:"),
]
pg = st.navigation(pages)

from convmem_dashboard.data import dataset_picker, read_database_param  # noqa: E402 (imports convmem)
from convmem_dashboard.url_params import sanitize_query_params  # noqa: E402

# ?db=<database URL> opens a live database; read and removed from the URL first (it may hold a
# password), before anything could echo it (convmem_dashboard.data).
read_database_param()
# Before any widget is seeded from the URL: Streamlit's own parsing of a bound value such as
# ?seed=inf raises before a page could catch it (convmem_dashboard.url_params, issue 9).
sanitize_query_params()
dataset_picker()
mark_entry()
# The first view after the server started imports pandas & co. under the page's question and a
# spinner, not inside the page with nothing on screen (convmem_dashboard.warmup, issue 10 item 3).
warm_up(pg.title, QUESTIONS.get(pg.url_path or "home"))
pg.run()
