"""Support code of the convmem Streamlit dashboard (app_pages/ stay thin: widgets in, one call into
convmem, a figure from a pure builder out).

* ``data``: datasets, uploads and the sidebar picker (imports streamlit).
* ``colors``: the one palette for roles and outcomes.
* ``figures_*``: pure plotly figure builders, one module per page, tested with plain pytest.
* ``tables_*``: pure pandas table builders, one module per page.
* ``url_params``: the one table of URL-bound widget keys and the sanitizer dashboard.py runs first.
* ``export_safety``: the one escaping of every cell a download button lets out (CSV injection).
* ``uploads``: what the server keeps of uploads (byte budget, message cap, checks).
* ``selection`` (streamlit) and ``choices`` (pure): the one conversation selection of every page.
* ``view_*``: a page's view model (pure; settings derivation, defaults, the words it shows).
* ``listing_definitions``: what counts as a listing; ``questions``: each page's one question.
"""
