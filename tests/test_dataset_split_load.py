"""A big dataset shown for the first time in a session is loaded in a script run of its own
(issue 10 item 3; convmem_dashboard.data.SPLIT_LOAD_MESSAGES): the run that loads it reruns the
script, so generating or reading 10^5 messages and the page's first run are two runs, each held
to the 1 s goal. AppTest runs the rerun inside one ``at.run()``; each script run is counted.
"""

from __future__ import annotations

from convmem_dashboard import data
from apptest_support import metrics, ok, open_dashboard_page


def test_a_big_dataset_loads_in_a_run_of_its_own_once_per_session(script_runs, monkeypatch):
    monkeypatch.setattr(data, "SPLIT_LOAD_MESSAGES", 500)  # synthetic-1000 counts as big here
    at = ok(open_dashboard_page("app_pages/token_budget.py", {"data": "synthetic-1000"}))
    assert len(script_runs) == 2  # the load and its rerun, then the page
    assert metrics(at)["Compactions"]  # the page was drawn by the second run
    assert at.sidebar.caption[0].value.startswith("Synthetic, 1,000 messages")
    script_runs.clear()
    ok(at.run())
    assert len(script_runs) == 1  # shown before in this session: no second run
    at.sidebar.selectbox(key="data").select("sample")
    script_runs.clear()
    ok(at.run())
    assert len(script_runs) == 1  # the sample (435 messages) is small
    at.sidebar.selectbox(key="data").select("synthetic-1000")
    script_runs.clear()
    ok(at.run())
    assert len(script_runs) == 1  # back to a dataset this session has shown
    script_runs.clear()
    other = ok(open_dashboard_page("app_pages/home.py", {"data": "synthetic-1000"}))
    assert other.session_state["data"] == "synthetic-1000"
    assert len(script_runs) == 2  # a new session: its first view of it is split too


def test_the_default_split_is_over_the_sample_and_under_the_big_synthetic_sets():
    assert 435 < data.SPLIT_LOAD_MESSAGES < 100_000


def test_a_big_conversation_s_new_simulation_gets_a_run_of_its_own(script_runs, monkeypatch):
    """Flaky store at 10^5 messages: the simulation (0.4-0.5 s) and the page that shows it
    (0.6 s) were one run of 1.1 s on a dataset's first view (bench_widgets, session 24); a
    new run of a big conversation now reruns once it is simulated, so each is a run of its own.
    A run seen before in the session, and any run of a small conversation, is one run."""
    monkeypatch.setattr(data, "SPLIT_LOAD_MESSAGES", 500)  # synthetic-1000 counts as big here
    at = ok(open_dashboard_page("app_pages/flaky_store.py", {"data": "synthetic-1000"}))
    # the dataset's load, then the simulation, then the page
    assert len(script_runs) == 3
    assert metrics(at)["Loaded (of 1,000 messages)"] == "973"  # the page was drawn by the last run
    script_runs.clear()
    at.slider(key="psize").set_value(at.slider(key="psize").value + 1)
    ok(at.run())
    assert len(script_runs) == 2  # a new setting: the simulation, then the page
    script_runs.clear()
    at.slider(key="psize").set_value(at.slider(key="psize").value - 1)
    ok(at.run())
    assert len(script_runs) == 1  # a run this session has shown
    at.sidebar.selectbox(key="data").select("sample")
    script_runs.clear()
    ok(at.run())
    assert len(script_runs) == 1  # small conversations: never split
