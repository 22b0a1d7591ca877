"""Token budget replays a long conversation in slices, one per script run (issue 10 item 3;
convmem_dashboard.panel_replay over convmem.SlicedReplay).

AppTest on the 10^4-message synthetic conversation with the slice lowered (RUN_MESSAGES 3,000,
pause points every 2,048 adds): a new heavy setting takes several script runs (AppTest runs the
reruns ``st.rerun()`` asks for inside one ``at.run()``; each is counted here), each advancing the
replay by one slice, and the page that follows equals convmem.replay. Light settings, a cached
setting and a replay that raises take one run.
"""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

import pytest

from convmem import HistorySettings, Message, SlicedReplay, replay
from convmem_dashboard import cache_budget as cb
from convmem_dashboard import idle_lines
from convmem_dashboard import panel_replay
from apptest_support import metrics, ok, open_dashboard_page

PAGE = "app_pages/token_budget.py"
DATA = "synthetic-10000"


@pytest.fixture(autouse=True)
def no_idle_worker(monkeypatch):
    """No conversation queued for idle_lines' background worker: it would count summary lines
    after these tests end, into the cache that test_page_summary_lines empties and counts."""
    monkeypatch.setattr(idle_lines, "MIN_MESSAGES", 10**9)




@pytest.fixture
def slices(monkeypatch):
    """Small slices, and every advance() that added messages recorded as (added before, after)."""
    monkeypatch.setattr(panel_replay, "RUN_MESSAGES", 3_000)
    calls: list[tuple[int, int]] = []
    real = SlicedReplay.advance

    def advance(self, max_messages):
        before = self.added
        try:
            return real(self, max_messages)
        finally:
            if self.added != before:  # get_replay's finish() on a done replay adds nothing
                calls.append((before, self.added))

    monkeypatch.setattr(SlicedReplay, "advance", advance)
    return calls


def open_page(query: dict | None = None):
    return ok(open_dashboard_page(PAGE, {"data": DATA, **(query or {})}))


def shown_matches(at, settings: HistorySettings) -> None:
    conv = cb.conversation(DATA, at.selectbox(key="conv").value)
    want = replay(conv.messages, settings).stats
    shown = metrics(at)
    assert shown["Compactions"] == f"{want.compactions:,}"
    assert shown["Messages dropped"] == f"{want.messages_dropped:,}"
    assert shown["Prefix changes"] == f"{want.prefix_changes:,}"


def test_a_heavy_setting_replays_in_slices_over_several_runs(slices, script_runs):
    at = open_page({"limit": "3333"})
    at.toggle(key="clr").set_value(True)
    slices.clear()
    script_runs.clear()
    ok(at.run())
    # 10,000 messages, at least 3,000 per run, stopping at a pause point (every 2,048 adds)
    assert slices == [(0, 4096), (4096, 8192), (8192, 10_000)]
    assert len(script_runs) == 3  # two runs ended in st.rerun() under the bar, then the page
    assert not [p for p in at.get("progress") if p.proto.text.startswith(panel_replay.BAR_LABEL)]
    limit = at.slider(key="limit").value
    shown_matches(at, HistorySettings(limit, clear_trigger=limit, clear_keep=3, clear_at_least=0))
    slices.clear()
    script_runs.clear()
    ok(at.run())  # nothing changed: the replay is done, one run, no slice
    assert (slices, len(script_runs)) == ([], 1)


def test_a_light_setting_and_a_short_conversation_take_one_run(slices, script_runs, monkeypatch):
    monkeypatch.setattr(panel_replay, "LIGHT_RUN_MESSAGES", 12_000)
    at = open_page({"limit": "3331"})
    at.toggle(key="pin_user").set_value(True)
    slices.clear()
    script_runs.clear()
    ok(at.run())
    assert slices == [(0, 10_000)] and len(script_runs) == 1
    limit = at.slider(key="limit").value
    shown_matches(at, HistorySettings(limit, pin_latest_user=True))


def test_run_messages_by_setting():
    light = HistorySettings(1000, pin_system=True, keep_tool_groups=True, start_on_user=True)
    assert panel_replay.run_messages(light) == panel_replay.LIGHT_RUN_MESSAGES
    for heavy in (HistorySettings(1000, summary_budget=100), HistorySettings(1000, clear_trigger=500),
                  HistorySettings(1000, clear_thinking_keep=1)):
        assert panel_replay.run_messages(heavy) == panel_replay.RUN_MESSAGES


def test_a_replay_that_raises_shows_its_error_once_and_does_not_rerun(monkeypatch, script_runs):
    """A job whose replay raises: the page shows the error in one run (no rerun loop)."""

    def failing(dataset_key, conv_id, settings):
        return SlicedReplay([Message("x", "user", 1), Message("x", "user", 1)], settings)  # a duplicate id

    at = open_page({"limit": "3337"})
    monkeypatch.setattr(cb, "replay_job", failing)
    script_runs.clear()
    at.toggle(key="clr").set_value(True)
    at.run()
    assert len(script_runs) == 1
    assert at.exception  # Streamlit's error box (details redacted by .streamlit/config.toml)


def test_bar_text():
    assert panel_replay.bar_text(4_096, 10_000) == "Replaying 10,000 messages: 4,096 added"


def test_a_job_evicted_between_runs_ends_in_the_next_run(slices, script_runs, monkeypatch):
    """The cached job evicted between two runs (other sessions filling replay_job's 12 entries:
    13 of them on distinct settings evict each other's job in turn): the rerun found a new job at
    0 added, replayed one slice and reran again, for ever. The run that finds the job set back
    finishes it; the page then equals convmem.replay."""
    made: list[SlicedReplay] = []

    def evicted_each_time(dataset_key, conv_id, settings):
        if len(made) > 30:
            raise RuntimeError("a rerun loop: 30 jobs made")
        made.append(SlicedReplay(cb.conversation(dataset_key, conv_id).messages, settings))
        return made[-1]

    at = open_page({"limit": "3339"})
    monkeypatch.setattr(cb, "replay_job", evicted_each_time)
    at.toggle(key="clr").set_value(True)
    slices.clear()
    script_runs.clear()
    ok(at.run())
    assert len(script_runs) == 2  # a slice and its rerun, then the run that finds the job new
    assert slices[:2] == [(0, 4096), (0, 10_000)]
    limit = at.slider(key="limit").value
    shown_matches(at, HistorySettings(limit, clear_trigger=limit, clear_keep=3, clear_at_least=0))


def test_a_job_advanced_by_another_session_meanwhile_goes_on_in_slices(slices, script_runs, monkeypatch):
    """A job moved on by another session between two runs (not set back) is not taken for an
    evicted one: the page goes on in slices from where the job is."""
    monkeypatch.setattr(panel_replay, "RUN_MESSAGES", 1_000)  # a slice per pause point
    at = open_page({"limit": "3341"})
    at.toggle(key="clr").set_value(True)
    real_ready = panel_replay.replay_ready
    calls = []

    def other_session_too(dataset_key, conv_id, s, what=""):
        calls.append(1)
        if len(calls) == 2:  # between the first and the second run
            cb.replay_job(dataset_key, conv_id, s).advance(1)
        return real_ready(dataset_key, conv_id, s, what)

    monkeypatch.setattr(panel_replay, "replay_ready", other_session_too)
    slices.clear()
    script_runs.clear()
    ok(at.run())
    assert slices == [(0, 2048), (2048, 4096), (4096, 6144), (6144, 8192), (8192, 10_000)]
    assert len(script_runs) == 4  # the other session's slice (2048 -> 4096) saved this one a run
    limit = at.slider(key="limit").value
    shown_matches(at, HistorySettings(limit, clear_trigger=limit, clear_keep=3, clear_at_least=0))


def test_setting_b_replays_in_slices_under_its_own_bar(slices, script_runs):
    """The comparison open with B heavy (clearing) and A light: A's replay takes no slice of its
    own, B's goes in slices (each run ends under B's bar), and the table's B column equals
    convmem.replay under B."""
    at = open_page({"limit": "3347", "cmp": "true"})
    bar_texts = []
    real_bar_text = panel_replay.bar_text

    def recorded(added, total, what=""):
        bar_texts.append(real_bar_text(added, total, what))
        return bar_texts[-1]

    with mock.patch.object(panel_replay, "bar_text", recorded):
        at.toggle(key="b_clr").set_value(True)
        slices.clear()
        script_runs.clear()
        ok(at.run())
    assert slices == [(0, 4096), (4096, 8192), (8192, 10_000)]
    assert len(script_runs) == 4  # three slices under B's bar, then the comparison in a run of its own
    assert bar_texts[-1] == "Replaying 10,000 messages (setting B): 8,192 added"
    limit = at.slider(key="limit").value
    conv = cb.conversation(DATA, at.selectbox(key="conv").value)
    b = HistorySettings.all_policies(limit, target=round(limit * 0.5))  # B's default policies and target
    want = replay(conv.messages, replace(b, clear_trigger=limit, clear_keep=3, clear_at_least=0)).stats
    cmp = next(d.value for d in at.dataframe if list(d.value.columns) == ["metric", "unit", "A", "B", "B − A"])
    rows = cmp.set_index("metric")
    assert (rows.loc["compactions", "B"], rows.loc["tokens dropped", "B"]) == (want.compactions, want.tokens_dropped)
    assert rows.loc["compactions", "A"] == replay(conv.messages, HistorySettings(limit)).stats.compactions


def test_opening_the_comparison_replays_b_in_a_run_of_its_own(slices, script_runs):
    """B light (its default policies: one slice for 10^4 messages): the run that replays B reruns,
    and the comparison (its cost panel: 0.5 s at 10^5) is drawn in the next run; a rerun after
    that replays nothing and takes one run."""
    at = open_page({"limit": "3349"})
    slices.clear()
    script_runs.clear()
    at.session_state["cmp"] = True
    ok(at.run())
    assert slices == [(0, 10_000)] and len(script_runs) == 2
    assert any(c.value.startswith("Blue = A") for c in at.caption)
    slices.clear()
    script_runs.clear()
    ok(at.run())
    assert slices == [] and len(script_runs) == 1
