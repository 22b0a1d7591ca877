"""convmem dashboard: `streamlit run dashboard.py`.

Entry point only: page config, the data picker shared by every page, navigation.
"""

from pathlib import Path

import streamlit as st

from convmem_dashboard.gc_tuning import tune_gc
from convmem_dashboard.questions import QUESTIONS
from convmem_dashboard.warmup import HEAVY_MODULES, page_modules, warm_up

# An emoji favicon: Streamlit draws it as an inline data: SVG. A ":material/...:" page icon makes
# the browser fetch an SVG from fonts.gstatic.com (issue 10 item 6: no request leaves localhost;
# the Material Symbols font of the icons in pages and messages is served by Streamlit itself).
st.set_page_config(page_title="convmem", page_icon="🧠", layout="wide")
tune_gc()  # fewer young GC passes over the cached 10^5-message replays (convmem_dashboard.gc_tuning)

# The page list first: on a fresh server the sidebar shows it at once, before convmem is imported
# below (issue 10 item 3). Neither reads nor echoes the URL's query parameters.
PAGES = (  # (file, title, icon); the first is the default page
    ("app_pages/home.py", "Home", ":material/home:"),
    ("app_pages/your_data.py", "Your data", ":material/upload_file:"),
    ("app_pages/flaky_store.py", "Flaky store", ":material/cloud_sync:"),
    ("app_pages/token_budget.py", "Token budget", ":material/data_usage:"),
    ("app_pages/listing_eviction.py", "Listing eviction", ":material/shopping_cart:"),
    ("app_pages/agent_session.py", "Agent session", ":material/smart_toy:"),
)
pg = st.navigation([st.Page(f, title=t, icon=i, default=f == PAGES[0][0]) for f, t, i in PAGES])
page_file = next(f for f, t, _ in PAGES if t == pg.title)

# The first view after the server started imports convmem, pandas & co. and the page's own modules
# under the page's question and a spinner, before anything else draws (convmem_dashboard.warmup,
# issue 10 item 3). The question stays until the page draws its own (below).
question_slot = warm_up(
    pg.title, QUESTIONS.get(pg.url_path or "home"), (*HEAVY_MODULES, *page_modules(Path(__file__).parent / page_file))
)

from convmem_dashboard.data import dataset_picker, read_database_param  # noqa: E402 (convmem: imported above)
from convmem_dashboard.url_params import sanitize_query_params  # noqa: E402

# ?db=<database URL> opens a live database; read and removed from the URL first (it may hold a
# password), before anything could echo it (convmem_dashboard.data; the question drawn above is
# constant text).
read_database_param()
# Before any widget is seeded from the URL: Streamlit's own parsing of a bound value such as
# ?seed=inf raises before a page could catch it (convmem_dashboard.url_params, issue 9).
sanitize_query_params()
dataset_picker(picker=page_file != PAGES[0][0])  # Home names the data in use (no selectbox: item 3)
if question_slot is not None:
    question_slot.empty()
pg.run()
