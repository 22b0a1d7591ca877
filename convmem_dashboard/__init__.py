"""Support code of the convmem Streamlit dashboard (pages/ stay thin: widgets in, one call into
convmem, a figure from a pure builder out).

* ``data``: datasets, uploads and the sidebar picker (imports streamlit).
* ``colors``: the one palette for roles and outcomes.
* ``figures_*``: pure plotly figure builders, one module per page, tested with plain pytest.
* ``tables_*``: pure pandas table builders, one module per page.
"""
