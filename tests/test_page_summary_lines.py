"""Summary lines counted in slices before the first replay with summaries (issue 10 item 3;
convmem_dashboard.panel_summary_lines, idle_lines.lines_missing / count_lines,
ExtractiveSummarizer.lines_missing).

The pure parts against ExtractiveSummarizer.warm (what is missing is what warm would count), then
AppTest on the 10^4-message synthetic conversation with the fill's thresholds lowered: the toggle's
run draws a bar, counts one slice and reruns the script (``st.rerun()``; AppTest runs those reruns
inside one ``at.run()``, each counted here as a script run), until few enough lines are missing
for the run to replay, and the page that follows equals convmem.replay. Every line cache is
emptied first: the lines must really be missing.
"""

from __future__ import annotations

import pytest

from convmem import ExtractiveSummarizer, HistorySettings, replay, summarizers
from convmem.synthetic import generate_conversation
from convmem_dashboard import cache_budget as cb
from convmem_dashboard import idle_lines, panel_summary_lines
from apptest_support import dashboard_app, metrics, ok
from streamlit.runtime.scriptrunner import script_runner

PAGE = "app_pages/token_budget.py"
DATA = "synthetic-10000"
N = 10_000


@pytest.fixture
def no_lines(monkeypatch):
    """Every summary line uncounted (a new server process), and no idle worker to count them."""
    summarizers._LINE_CACHE.clear()
    summarizers._LINE_KEPT.clear()
    monkeypatch.setattr(idle_lines, "MIN_MESSAGES", 10**9)


def test_lines_missing_is_what_warm_counts(no_lines):
    msgs = list(generate_conversation(700, seed=5).messages)
    s = ExtractiveSummarizer(max_tokens=0)
    assert s.lines_missing(msgs) == idle_lines.lines_missing(msgs) == 700
    assert s.warm(msgs[100:350]) == 250
    assert s.lines_missing(msgs) == 450
    assert ExtractiveSummarizer(max_tokens=0, line_chars=40).lines_missing(msgs) == 700  # another cache
    assert ExtractiveSummarizer(max_tokens=0, count_tokens=len).lines_missing(msgs) == 0  # nothing shared


def test_count_lines_counts_whole_batches_oldest_first_until_enough(no_lines, monkeypatch):
    monkeypatch.setattr(idle_lines, "BATCH", 64)
    msgs = list(generate_conversation(1_000, seed=6).messages)
    assert idle_lines.count_lines(msgs, 100) == 128  # two batches: the first made 64 < 100
    assert idle_lines.lines_missing(msgs) == 872
    assert idle_lines.lines_missing(msgs[:128]) == 0
    assert idle_lines.count_lines(msgs, 10**6) == 872
    assert idle_lines.count_lines(msgs, 10) == 0  # nothing left
    assert idle_lines.lines_missing(msgs) == 0


def bars(at) -> list[str]:
    return [p.proto.text for p in at.get("progress") if p.proto.text.startswith(panel_summary_lines.BAR_LABEL)]


@pytest.fixture
def small_fill(monkeypatch, no_lines):
    monkeypatch.setattr(panel_summary_lines, "FULL_RUN_LINES", 1_000)
    monkeypatch.setattr(panel_summary_lines, "SLICE_LINES", 3_000)
    monkeypatch.setattr(idle_lines, "BATCH", 1_000)


@pytest.fixture
def slices(monkeypatch):
    """Each fill slice as (lines missing before it, lines it counted); and the script runs."""
    seen: dict[str, list] = {"slices": [], "runs": []}
    real_count = idle_lines.count_lines
    real_exec = script_runner.exec_func_with_error_handling

    def count_lines(messages, most, **kwargs):
        before = idle_lines.lines_missing(messages)
        counted = real_count(messages, most, **kwargs)
        seen["slices"].append((before, counted))
        return counted

    def counted_run(func, ctx):
        seen["runs"].append(1)
        return real_exec(func, ctx)

    monkeypatch.setattr(idle_lines, "count_lines", count_lines)
    monkeypatch.setattr(script_runner, "exec_func_with_error_handling", counted_run)
    return seen


def open_page(query: dict | None = None):
    at = dashboard_app()
    at.query_params.update({"data": DATA, **(query or {})})
    at.run()
    at.switch_page(PAGE)
    return ok(at.run())


def comparison_shown(at) -> bool:
    return any(c.value.startswith("Blue = A") for c in at.caption)


def shown_equals_replay(at, messages) -> None:
    settings = HistorySettings(limit=at.slider(key="limit").value, summary_budget=at.number_input(key="sb").value)
    want = replay(messages, settings).stats
    shown = metrics(at)
    assert shown["Compactions"] == f"{want.compactions:,}"
    assert shown["Messages dropped"] == f"{want.messages_dropped:,}"


def test_the_first_summaries_toggle_counts_lines_in_slices_then_shows_the_replay(small_fill, slices):
    at = open_page()
    at.number_input(key="ctx_step").set_value(17)  # a setting below the bar: kept through the fill
    ok(at.run())
    conv = cb.conversation(DATA, at.selectbox(key="conv").value)
    assert idle_lines.lines_missing(conv.messages) == N
    slices["slices"].clear()
    slices["runs"].clear()
    at.toggle(key="sum").set_value(True)
    ok(at.run())
    # one slice of 3 batches of 1,000 per run, each run ending in a rerun; the run that finds at
    # most 1,000 missing replays (and counts those itself)
    assert slices["slices"] == [(N, 3_000), (7_000, 3_000), (4_000, 3_000)]
    assert len(slices["runs"]) == 4
    assert idle_lines.lines_missing(conv.messages) == 0
    assert not bars(at)
    shown_equals_replay(at, conv.messages)
    assert at.number_input(key="ctx_step").value == 17
    slices["slices"].clear()
    slices["runs"].clear()
    ok(at.run())
    assert slices["slices"] == [] and len(slices["runs"]) == 1  # a rerun replays from the cache


def test_few_missing_lines_are_counted_by_the_run_itself(small_fill, slices):
    at = open_page()
    conv = cb.conversation(DATA, at.selectbox(key="conv").value)
    idle_lines.count_lines(conv.messages[:9_000], 10**6)  # the idle worker's part: 1,000 left
    slices["slices"].clear()
    slices["runs"].clear()
    at.toggle(key="sum").set_value(True)
    ok(at.run())
    assert slices["slices"] == [] and len(slices["runs"]) == 1
    assert metrics(at)["Compactions"] != "0"


def test_a_link_with_b_summaries_fills_inside_the_comparison(small_fill, slices):
    at = open_page({"cmp": "true", "b_sum": "true"})
    assert [before for before, _ in slices["slices"]] == [N, 7_000, 4_000]
    assert metrics(at)  # A (summaries off) drew its metrics above
    assert comparison_shown(at)


def test_a_database_read_again_mid_view_does_not_fill_forever(small_fill, slices, tmp_path):
    # "Read the database again" (or its 10-min ttl) gives the page new Conversation objects while
    # cache_budget.conversation, which the replay and the fill read, keeps the ones it read first:
    # the fill must look at the lines the replay will use, or it never ends.
    from convmem.stores import SQLStore
    from convmem_dashboard import data

    path = tmp_path / "big.sqlite"
    SQLStore.from_conversations(f"sqlite:///{path}", [generate_conversation(3_000, seed=11)]).close()
    at = dashboard_app()
    at.query_params.update({"db": f"sqlite:///{path}", "sum": "true"})
    at.run()
    at.switch_page(PAGE)
    ok(at.run())
    assert [before for before, _ in slices["slices"]] == [3_000]  # then 0 missing: the replay
    key, conv_id = at.session_state["data"], at.selectbox(key="conv").value
    data.reread_database(key)
    slices["slices"].clear()
    at.slider(key="limit").set_value(at.slider(key="limit").value + 100)
    ok(at.run())
    assert slices["slices"] == []  # the replay's lines are all counted: no bar
    shown_equals_replay(at, cb.conversation(key, conv_id).messages)


def test_a_slice_that_raises_stops_the_fill_and_leaves_the_lines_to_the_replay(small_fill, slices, monkeypatch):
    # else every run would try the failing slice again and rerun, forever
    calls = []

    def fails(messages, most, **kwargs):
        calls.append(most)
        raise RuntimeError("the counter broke")

    monkeypatch.setattr(idle_lines, "count_lines", fails)
    at = open_page({"sum": "true"})
    assert calls == [panel_summary_lines.SLICE_LINES]  # one slice tried, then the replay
    assert not bars(at)
    conv = cb.conversation(DATA, at.selectbox(key="conv").value)
    shown_equals_replay(at, conv.messages)


def test_a_fill_whose_lines_another_fill_evicts_gives_way_to_the_replay(small_fill, slices, monkeypatch):
    # Two sessions fill two conversations of the cache's half each: every slice of one takes the
    # line cache to its cap, which empties it under the other; neither fill would ever end.
    monkeypatch.setattr(summarizers, "LINE_CACHE_SIZE", 2 * N)
    monkeypatch.setattr(panel_summary_lines, "MAX_MESSAGES", N)
    monkeypatch.setattr(panel_summary_lines, "FULL_RUN_LINES", 500)  # each fill's last slice takes it to the cap
    other = list(generate_conversation(N, seed=9).messages)  # the other session's conversation
    real = idle_lines.count_lines

    def with_the_other_session(messages, most, **kwargs):
        counted = real(messages, most, **kwargs)
        if idle_lines.lines_missing(other) > panel_summary_lines.FULL_RUN_LINES:
            real(other, panel_summary_lines.SLICE_LINES)  # the other session's slice, between two runs
        return counted

    monkeypatch.setattr(idle_lines, "count_lines", with_the_other_session)
    at = open_page({"sum": "true"})
    assert not bars(at) and len(slices["runs"]) < 40  # it ended
    conv = cb.conversation(DATA, at.selectbox(key="conv").value)
    shown_equals_replay(at, conv.messages)


def test_a_conversation_over_the_cache_s_room_is_left_to_its_replay(small_fill, monkeypatch):
    monkeypatch.setattr(panel_summary_lines, "MAX_MESSAGES", N - 1)
    at = open_page({"sum": "true"})
    assert not bars(at) and metrics(at)


def test_queueing_a_conversation_builds_the_default_counter_in_that_run(monkeypatch):
    import queue
    from collections import OrderedDict

    built = []
    monkeypatch.setattr(idle_lines, "_QUEUE", queue.SimpleQueue())
    monkeypatch.setattr(idle_lines, "_QUEUED", OrderedDict())
    monkeypatch.setattr(idle_lines, "_WORKER", [])
    monkeypatch.setattr(idle_lines, "MIN_MESSAGES", 10)
    monkeypatch.setattr(idle_lines, "_work", lambda: None)  # no worker: only the caller's part
    monkeypatch.setattr(idle_lines, "default_counter", lambda: built.append(1))
    msgs = list(generate_conversation(20, seed=8).messages)
    assert idle_lines.warm_later("d/c", msgs) is True
    assert built == [1]
    assert idle_lines.warm_later("d/c", msgs) is False  # queued before: nothing built again
    assert built == [1]
