"""AppTest for the Flaky store page: widgets in, the numbers shown equal convmem's own run.

Expected values are computed by calling convmem directly (FlakyStore over PagedStore on a
VirtualClock, load_history with the store's jitter source), never by the page's helpers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from convmem import LoadReport, PageLoadError, load_conversations, load_history
from convmem.testing import FaultConfig, FlakyStore, PagedStore, VirtualClock, compare_to_truth
from apptest_support import metrics, open_dashboard_page
from convmem_dashboard.choices import default_conversation_id

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
PAGE = "app_pages/flaky_store.py"
# The page's defaults (app_pages/flaky_store.py): what a first load shows.
DEFAULT_FAULTS = {"failure_rate": 0.3, "burst_length": 1, "overlap": 1, "seed": 7}
DEFAULT_LOAD = {"attempts": 5, "base_delay": 0.1, "max_delay": 2.0, "deadline": None}


@pytest.fixture(scope="module")
def sample():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated yet (scripts/make_sample_data.py)")
    return {c.id: c for c in load_conversations(SAMPLE)}


@pytest.fixture(scope="module")
def default_conv(sample):
    """The page's default conversation: the app-wide one (convmem_dashboard.choices)."""
    return sample[default_conversation_id(list(sample.values()))]


def direct(conv, page_size=5, empty_page_ends=True, load=None, **faults):
    """One run straight from convmem: (report, loaded, PageLoadError or None, truth diff)."""
    cfg = FaultConfig(**{**DEFAULT_FAULTS, **faults})
    opts = {**DEFAULT_LOAD, **(load or {})}
    clock = VirtualClock()
    store = FlakyStore(PagedStore(conv.messages, page_size), cfg, clock=clock)
    report = LoadReport()
    error = None
    try:
        loaded = load_history(
            store, empty_page_ends=empty_page_ends, sleep=clock.sleep, clock=clock,
            random=store.rng_for_jitter(), report=report, **opts,
        )
    except PageLoadError as exc:
        loaded, error = exc.loaded, exc
    return report, loaded, error, compare_to_truth(loaded, conv.messages)


def open_page(query: dict[str, str] | None = None, data: str | None = None) -> AppTest:
    return open_dashboard_page(PAGE, query, data)


def widgets(at: AppTest) -> dict[str, object]:
    kinds = (at.slider, at.number_input, at.selectbox, at.checkbox, at.radio)
    return {w.key: w.value for kind in kinds for w in kind}


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def assert_numbers(at: AppTest, report, conv) -> None:
    shown = metrics(at)
    assert shown["Calls"] == f"{len(report.calls):,}"
    assert shown["Retries"] == f"{report.retries:,}"
    assert shown["Pages"] == f"{report.pages:,}"
    assert shown["Duplicates skipped"] == f"{report.duplicates_skipped:,}"
    assert shown[loaded_label(conv)] == f"{report.messages_loaded:,}"


def loaded_label(conv) -> str:
    """The Loaded metric's label: it names the truth's size (units in the label, value short)."""
    return f"Loaded (of {len(conv.messages):,} messages)"


def test_first_load_shows_a_clean_run_with_retries_and_duplicates(default_conv):
    at = open_page()
    assert_clean(at)
    assert not at.error
    assert widgets(at)["conv"] == default_conv.id
    report, _loaded, error, diff = direct(default_conv)
    assert error is None and diff.ok
    assert_numbers(at, report, default_conv)
    assert report.retries > 0 and report.duplicates_skipped > 0  # something to see on first load
    assert metrics(at)["Lost"] == "0" and metrics(at)["Repeated"] == "0"
    assert any(f"Stop reason: {report.stop_reason}" in s.value for s in at.success)
    assert any("None lost, none repeated" in s.value for s in at.success)
    assert len(at.get("plotly_chart")) == 1


def test_failure_rate_up_changes_retries_to_the_reports(default_conv):
    at = open_page()
    before = metrics(at)["Retries"]
    at.slider(key="rate").set_value(0.4).run()
    assert_clean(at)
    report, _loaded, error, _diff = direct(default_conv, failure_rate=0.4)
    assert error is None
    assert metrics(at)["Retries"] == str(report.retries) != before
    assert_numbers(at, report, default_conv)


def test_page_size_and_seed_change_the_run(default_conv):
    at = open_page()
    at.slider(key="psize").set_value(3).run()
    at.number_input(key="seed").set_value(11).run()
    assert_clean(at)
    report, *_ = direct(default_conv, page_size=3, seed=11)
    assert_numbers(at, report, default_conv)


def test_empty_page_loses_data_and_says_why_then_following_it_loses_nothing(default_conv):
    at = open_page()
    at.number_input(key="empty").set_value(2).run()
    assert_clean(at)
    report, loaded, error, diff = direct(default_conv, empty_page=2)
    assert report.stop_reason == "empty_page" and diff.lost
    assert metrics(at)["Lost"] == str(len(diff.lost))
    assert_numbers(at, report, default_conv)
    assert any("Stop reason: empty_page" in s.value for s in at.success)
    texts = [c.value for c in at.code]
    assert any(f"lost {len(diff.lost)} of {len(default_conv.messages)}" in t for t in texts)
    lost_rows = at.dataframe[0].value
    assert list(lost_rows["id"]) == list(diff.lost)

    at.checkbox(key="epe").uncheck().run()
    assert_clean(at)
    report2, _l, _e, diff2 = direct(default_conv, empty_page=2, empty_page_ends=False)
    assert diff2.ok and metrics(at)["Lost"] == "0"
    assert_numbers(at, report2, default_conv)


@pytest.mark.parametrize(
    "key,value,faults,reason",
    [
        ("rep", 2, {"repeated_cursor": 2}, "repeated_cursor"),
        ("cyc", 2, {"cursor_cycle": 2}, "repeated_cursor"),
    ],
)
def test_cursor_faults_stop_with_their_reason(default_conv, key, value, faults, reason):
    at = open_page()
    at.number_input(key=key).set_value(value).run()
    assert_clean(at)
    report, _l, _e, diff = direct(default_conv, **faults)
    assert report.stop_reason == reason
    assert_numbers(at, report, default_conv)
    assert metrics(at)["Lost"] == str(len(diff.lost))


def test_wrap_around_stops_on_no_progress(default_conv):
    at = open_page()
    at.checkbox(key="wrap").check().run()
    assert_clean(at)
    report, *_ = direct(default_conv, wrap_around=True)
    assert report.stop_reason == "no_progress"
    assert any("Stop reason: no_progress" in s.value for s in at.success)


def test_page_load_error_is_a_readable_message_not_a_traceback(default_conv):
    at = open_page()
    at.slider(key="rate").set_value(1.0).run()
    assert_clean(at)
    report, loaded, error, _diff = direct(default_conv, failure_rate=1.0)
    assert error is not None
    assert len(at.error) == 1
    text = at.error[0].value
    # The first page's cursor is None in convmem: shown as "(first page)", never as Python's None.
    assert error.cursor is None
    assert f"PageLoadError at cursor (first page) after {error.attempts} attempt{'' if error.attempts == 1 else 's'}" in text
    assert "None" not in text
    assert f"{len(error.loaded)} of {len(default_conv.messages)} messages" in text
    assert any("kept failing" in c.value and "resume" in c.value for c in at.code)
    assert_numbers(at, report, default_conv)
    log, errors = (d for d in at.dataframe if "attempt" in d.value.columns and "cursor" in d.value.columns)
    assert set(log.value["cursor"]) == {"(first page)"}
    # The error text is not squeezed into the log's last column (its height: tables_store tests).
    assert log.proto.column_order and "error" not in log.proto.column_order
    # The error text has its own table, with a wide column.
    assert list(errors.value["error"]) == [c.error for c in report.calls]


def test_page_load_error_never_says_lost(default_conv):
    """Issue 10.4: a load that raised lost nothing: the page says what it loaded before the
    failure and the cursor to resume from, and no metric or status says "lost"."""
    at = open_page({"burst": "5", "seed": "0"})
    assert_clean(at)
    _report, _loaded, error, _diff = direct(default_conv, burst_length=5, seed=0)
    shown = metrics(at)
    assert "Lost" not in shown
    assert shown["Loaded before the failure"] == f"{len(error.loaded):,}"
    assert shown["Not loaded yet"] == f"{len(default_conv.messages) - len(error.loaded):,}"
    assert f"resume from cursor {error.cursor}" in at.error[0].value
    assert "Nothing is lost" in at.error[0].value
    not_yet = next(d.value for d in at.dataframe if "status" in d.value.columns)
    assert set(not_yet["status"]) == {"not loaded yet"}
    assert len(not_yet) == len(default_conv.messages) - len(error.loaded)
    assert not any("lost" in w.value.lower().replace("nothing is lost", "") for w in at.warning)


def test_page_load_error_mid_load_reports_what_was_loaded(default_conv):
    # A burst as long as the attempts exhausts the first call it hits; with seed 0 that is mid-load.
    at = open_page({"burst": "5", "seed": "0"})
    assert_clean(at)
    report, loaded, error, _diff = direct(default_conv, burst_length=5, seed=0)
    assert error is not None and 0 < len(error.loaded) < len(default_conv.messages)
    assert f"PageLoadError at cursor {error.cursor} after 5 attempts" in at.error[0].value
    assert f"{len(error.loaded)} of {len(default_conv.messages)} messages" in at.error[0].value
    assert metrics(at)[loaded_label(default_conv)] == f"{len(error.loaded):,}"
    assert metrics(at)["Not loaded yet"] == f"{len(default_conv.messages) - len(error.loaded):,}"


def test_deadline_failure(default_conv):
    at = open_page({"rate": "1.0", "dl": "0.05", "tries": "10"})
    assert_clean(at)
    report, _l, error, _d = direct(
        default_conv, failure_rate=1.0, load={"attempts": 10, "deadline": 0.05}
    )
    assert report.failure == "deadline"
    assert any("deadline" in c.value for c in at.code)
    assert_numbers(at, report, default_conv)


def test_incompatible_settings_show_a_readable_error(default_conv):
    at = open_page({"cyc": "3", "wrap": "true"})
    assert_clean(at)
    assert any("cannot run together" in e.value for e in at.error)
    assert any("choose one" in c.value for c in at.code)


def test_step_mode_walks_the_call_log(default_conv):
    report, *_ = direct(default_conv)
    calls = report.calls
    at = open_page()
    at.radio(key="mode").set_value("Step by step").run()
    assert_clean(at)
    assert metrics(at)["Calls"] == "1"
    for expected in (2, 3, 4):
        button(at, "Next call ▶").click().run()
        assert_clean(at)
        shown = metrics(at)
        assert shown["Calls"] == str(expected)
        prefix = calls[:expected]
        assert shown["Retries"] == str(sum(c.delay_after is not None for c in prefix))
        assert shown["Pages"] == str(sum(c.outcome == "ok" for c in prefix))
        assert shown[loaded_label(default_conv)] == f"{sum(c.new_messages for c in prefix):,}"
    button(at, "◀ Previous call").click().run()
    assert metrics(at)["Calls"] == "3"
    # The last call: the stop reason and the truth check appear.
    at.slider(key="step").set_value(len(calls)).run()
    assert_clean(at)
    assert_numbers(at, report, default_conv)
    assert any(f"Stop reason: {report.stop_reason}" in s.value for s in at.success)


def test_url_state_round_trips_into_the_widgets(sample):
    conv_id = sorted(sample)[3]
    query = {
        "conv": conv_id, "rate": "0.45", "burst": "2", "seed": "42", "rep": "3", "empty": "4",
        "psize": "6", "overlap": "2", "tries": "7", "base": "0.25", "maxd": "1.5", "dl": "30.0",
        "epe": "false", "mode": "Step by step", "step": "3",
    }
    at = open_page(query)
    assert_clean(at)
    got = widgets(at)
    assert got["conv"] == conv_id
    assert got["rate"] == pytest.approx(0.45)
    assert (got["burst"], got["seed"], got["rep"], got["empty"]) == (2, 42, 3, 4)
    assert (got["psize"], got["overlap"], got["tries"]) == (6, 2, 7)
    assert (got["base"], got["maxd"], got["dl"]) == (pytest.approx(0.25), 1.5, 30.0)
    assert got["epe"] is False and got["cyc"] is None and got["wrap"] is False
    assert got["mode"] == "Step by step" and got["step"] == 3
    assert metrics(at)["Calls"] == "3"
    report, *_ = direct(
        sample[conv_id], page_size=6, empty_page_ends=False,
        load={"attempts": 7, "base_delay": 0.25, "max_delay": 1.5, "deadline": 30.0},
        failure_rate=0.45, burst_length=2, seed=42, repeated_cursor=3, empty_page=4, overlap=2,
    )
    prefix = report.calls[:3]
    assert metrics(at)["Retries"] == str(sum(c.delay_after is not None for c in prefix))


def test_invalid_url_values_fall_back_to_defaults(default_conv):
    at = open_page({"rate": "7", "conv": "no-such-conversation", "mode": "sideways"})
    assert_clean(at)
    got = widgets(at)
    assert got["rate"] == 0.3 and got["conv"] == default_conv.id and got["mode"] == "All at once"


@pytest.mark.realdata
def test_runs_on_the_real_retail_file(tau_retail_file):
    at = open_page(data="retail")
    assert_clean(at)
    assert not at.error
    convs = load_conversations(tau_retail_file)
    longest = next(c for c in convs if c.id == default_conversation_id(convs))
    assert widgets(at)["conv"] == longest.id
    report, _l, error, diff = direct(longest)
    assert error is None and diff.ok
    assert_numbers(at, report, longest)
    assert metrics(at)["Lost"] == "0"
