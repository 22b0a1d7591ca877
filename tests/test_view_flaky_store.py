"""Plain pytest for the Flaky store page's view model (convmem_dashboard.view_flaky_store) and
its SQLite-store run (convmem_dashboard.flaky_sql): arrivals while paging, honest figures.

Expected values come from convmem directly (SQLStore, load_history) or by hand.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from convmem import Message, load_history
from convmem.stores import SQLStore
from convmem.testing import FaultConfig
from convmem_dashboard.flaky_sql import Arrivals, run_sql_simulation
from convmem_dashboard.tables_store import LoadSettings, truth_table
from convmem_dashboard.url_params import PARAMS
from convmem_dashboard.view_flaky_store import (
    MAX_METRIC_CHARS,
    STORE_PAGED,
    STORE_SQLITE,
    FlakySettings,
    arrival_metrics,
    count,
    outcome,
    run,
    run_metrics,
    seconds,
    truth_metrics,
)
from convmem_dashboard.tables_store import step_state

MESSAGES = [Message(f"m{i}", "user" if i % 2 == 0 else "assistant", 3) for i in range(40)]


def test_defaults_come_from_the_url_table_once():
    s = FlakySettings()
    assert (s.rate, s.burst, s.seed, s.page_size) == (
        PARAMS["rate"].default, PARAMS["burst"].default, PARAMS["seed"].default, PARAMS["psize"].default)
    assert (s.attempts, s.base_delay, s.max_delay) == (
        PARAMS["tries"].default, PARAMS["base"].default, PARAMS["maxd"].default)
    assert s.store == STORE_PAGED and not s.sql


def test_from_widgets_normalizes_and_round_trips_through_the_cache_key():
    s = FlakySettings.from_widgets(
        rate=0.45, burst=2.0, seed=42.0, rep=3.0, cyc=None, wrap=False, empty=None, overlap=2.0,
        psize=6, tries=7, base=0.25, maxd=1.5, dl=30, epe=False, store=STORE_SQLITE, arr=4.0,
        arr_at=2.0, hwm=True,
    )
    assert (s.burst, s.seed, s.repeated, s.overlap, s.arrivals, s.arrive_after) == (2, 42, 3, 2, 4, 2)
    assert isinstance(s.seed, int) and s.deadline == 30.0 and s.high_water is True
    assert FlakySettings.from_key(s.key()) == s
    hash(s.key())  # a plain, hashable cache key
    # SQLite store: only transient faults; the offset-store faults set in the URL are named.
    assert s.faults() == FaultConfig(0.45, 2, seed=42)
    assert s.ignored() == ("repeated", "overlap")
    assert s.arrival() == Arrivals(4, 2, True)
    assert FlakySettings(arrivals=5).arrival().count == 0  # arrivals only on the SQLite store


def test_clashing_settings_raise_naming_the_fields():
    with pytest.raises(ValueError, match="cursor_cycle=3 and wrap_around=True"):
        FlakySettings(cycle=3, wrap=True).faults()


def _final_contents(messages, arrived):
    return [m.id for m in messages] + list(arrived)


@pytest.mark.parametrize("high_water", [False, True])
@pytest.mark.parametrize("after_page", [1, 3, 8])
def test_arrivals_are_neither_skipped_nor_repeated(high_water, after_page):
    r = run_sql_simulation("c", MESSAGES, 5, FaultConfig(failure_rate=0.3, seed=3),
                           LoadSettings(attempts=9), Arrivals(7, after_page, high_water))
    a = r.arrivals
    assert a["arrived_ids"] == tuple(f"arrived-{i}" for i in range(1, 8))
    assert [t[0] for t in r.truth] == _final_contents(MESSAGES, a["arrived_ids"])
    combined = list(r.loaded_ids) + list(a["follow_up_ids"])
    assert combined == [t[0] for t in r.truth]  # no gap, no duplicate, in order
    assert r.ok and not r.lost_ids and not r.repeated_ids
    if high_water:  # the load stops at the mark it saw at its start; the follow-up has the rest
        assert r.loaded_ids == tuple(m.id for m in MESSAGES)
        assert a["follow_up_ids"] == a["arrived_ids"] and a["in_load"] == 0
    elif after_page < 8:  # keyset cursors: the load itself goes on past the arrivals
        assert a["in_load"] == 7 and a["follow_up_ids"] == ()
    else:  # appended after the last page was served: only the follow-up sees them
        assert a["in_load"] == 0 and a["follow_up_ids"] == a["arrived_ids"]
    marked = [c for c in r.calls if "arrivals" in c["fault"]]
    assert len(marked) == 1 and marked[0]["outcome"] == "ok"
    assert sum(1 for c in r.calls[: marked[0]["index"] + 1] if c["outcome"] == "ok") == after_page


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(0, 30), size=st.integers(1, 7), count_=st.integers(0, 12),
    after=st.integers(1, 8), hw=st.booleans(), seed=st.integers(0, 50),
)
def test_load_plus_follow_up_equals_the_final_store(n, size, count_, after, hw, seed):
    msgs = MESSAGES[:n]
    r = run_sql_simulation("c", msgs, size, FaultConfig(failure_rate=0.2, seed=seed),
                           LoadSettings(attempts=10), Arrivals(count_, after, hw))
    # Reference: a fresh store with the same final contents, loaded by convmem directly.
    with SQLStore("sqlite://") as ref:
        ref.append("c", [*msgs, *(Message(i, "user", 1) for i in r.arrivals["arrived_ids"])])
        expected = [m.id for m in load_history(ref.pager("c"))]
    assert [t[0] for t in r.truth] == expected
    assert list(r.loaded_ids) + list(r.arrivals["follow_up_ids"]) == expected


def test_truth_table_marks_follow_up_arrivals():
    r = run_sql_simulation("c", MESSAGES[:6], 2, FaultConfig(), LoadSettings(), Arrivals(2, 1, True))
    table = truth_table(r)
    assert list(table["status"]) == ["loaded"] * 6 + ["follow-up"] * 2
    assert len(truth_table(r, only_problems=True)) == 0


def test_failed_load_metrics_say_loaded_and_not_loaded_yet_never_lost():
    s = FlakySettings(rate=0.0, burst=1)
    r = run(FlakySettings(rate=1.0, attempts=2), "c", MESSAGES)
    assert r.error is not None and r.error["loaded"] == 0
    shown = {m.label: m.value for m in truth_metrics(r)}
    assert shown == {"Loaded before the failure": "0", "Not loaded yet": "40", "Repeated": "0"}
    box = outcome(r, step_state(r, len(r.calls)), stepping=False)
    assert box.kind == "error" and "lost" not in box.headline.replace("Nothing is lost", "")
    assert "0 of 40 messages were loaded before the failure" in box.headline
    assert "resume from the first page" in box.headline
    ok = run(s, "c", MESSAGES)
    assert {m.label: m.value for m in truth_metrics(ok)} == {"Lost": "0", "Repeated": "0", "Out of order": "no"}


def test_every_metric_value_is_short_with_separators_and_units():
    big = [Message(f"m{i}", "user", 1) for i in range(12_345)]
    r = run(FlakySettings(rate=0.5, seed=1, page_size=200, overlap=0, attempts=10,
                          base_delay=60.0, max_delay=600.0), "c", big)
    cells = run_metrics(r, step_state(r, len(r.calls))) + truth_metrics(r)
    assert all(len(c.value) <= MAX_METRIC_CHARS for c in cells), [c.value for c in cells]
    shown = {c.label: c.value for c in cells}
    loaded = step_state(r, len(r.calls))["loaded"]
    assert loaded >= 1_000 and shown["Loaded (of 12,345 messages)"] == f"{loaded:,}"
    assert "," in shown["Loaded (of 12,345 messages)"]
    assert shown["Virtual time"].endswith(" s")
    assert count(99_679) == "99,679" and seconds(0.0002) == "0.000 s"
    assert all(len(seconds(x)) <= MAX_METRIC_CHARS for x in (0.0, 9.999, 10.0, 999.99, 1e6, 99_999_999.0, 9.9e9, 1e300))


def test_arrival_metrics():
    r = run(FlakySettings(store=STORE_SQLITE, rate=0.0, arrivals=3, arrive_after=2, high_water=True,
                          page_size=5), "c", MESSAGES)
    assert {m.label: m.value for m in arrival_metrics(r)} == {
        "Arrived during the load": "3", "Returned by this load": "0", "Returned by the follow-up": "3"}
    box = outcome(r, step_state(r, len(r.calls)), stepping=False)
    assert "follow-up load from that mark returned the 3 arrivals" in box.detail
    assert arrival_metrics(run(FlakySettings(store=STORE_SQLITE), "c", MESSAGES)) == []


def test_sqlite_store_mode_is_capped_and_says_so():
    from convmem_dashboard.view_flaky_store import MAX_SQL_MESSAGES, sql_cap_note

    many = [Message(f"m{i}", "user", 1) for i in range(MAX_SQL_MESSAGES + 7)]
    r = run(FlakySettings(store=STORE_SQLITE, rate=0.0, page_size=200, overlap=0), "c", many)
    assert [t[0] for t in r.truth] == [m.id for m in many[:MAX_SQL_MESSAGES]] and r.ok
    assert "first 10,000 of this conversation's 10,007 messages: 50 pages of 200" in sql_cap_note(
        FlakySettings(store=STORE_SQLITE, page_size=200), len(many))
    assert sql_cap_note(FlakySettings(store=STORE_SQLITE, page_size=200), MAX_SQL_MESSAGES) is None


def test_sqlite_store_mode_runs_a_bounded_number_of_queries(monkeypatch):
    """One query per page of the load, capped at MAX_SQL_PAGES pages whatever the page size, and
    one query for the store's final contents (it read them page by page: twice the queries)."""
    from convmem.stores import SQLStore
    from convmem_dashboard.view_flaky_store import MAX_SQL_PAGES, sql_cap_note, sql_message_cap

    queries = []
    real_page = SQLStore._page

    def page(self, *args, **kwargs):
        queries.append(args)
        return real_page(self, *args, **kwargs)

    monkeypatch.setattr(SQLStore, "_page", page)
    many = [Message(f"m{i}", "user", 1) for i in range(12_000)]
    for size in (1, 5):
        queries.clear()
        r = run(FlakySettings(store=STORE_SQLITE, rate=0.0, page_size=size, overlap=0), "c", many)
        cap = sql_message_cap(size)
        assert cap == MAX_SQL_PAGES * size
        assert [t[0] for t in r.truth] == [m.id for m in many[:cap]] and r.ok
        assert len(r.calls) == MAX_SQL_PAGES
        assert len(queries) == MAX_SQL_PAGES + 2  # the load's pages, the follow-up, the final contents
    assert "first 5,000 of this conversation's 12,000 messages: 1,000 pages of 5" in sql_cap_note(
        FlakySettings(store=STORE_SQLITE, page_size=5), len(many))
