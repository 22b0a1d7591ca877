"""Every widget of every page, changed once, at 10^5 messages (Streamlit's AppTest).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_widgets.py [--data synthetic-100000]
                                                               [--scenarios token_budget,flaky_sqlite]
                                                               [--post-script-gc]

bench_pages.py times each page's main widget (and Token budget's policy matrix); this script
walks every other one. For each scenario (a page, and the settings it starts from: e.g. Token
budget with summaries on, Flaky store over the SQLite store), the page is opened with
``?data=<key>``, run twice, set to the scenario's settings, and then every slider, toggle,
checkbox, number input, select box and radio it shows (found with AppTest's element lists, by
key) is set to a value not shown before, run, and set back. Expanders bound to a key (the
comparison, the limit sweep) are opened and closed the same way.

For each change: the run's wall time and the process's CPU time (``time.process_time``; the
script runs in one thread of this process, so under a loaded machine the CPU figure is the
closer one to the server's time on an idle one), and the wall time as a multiple of a bare
AppTest rerun (``st.write("hello")``) measured in the same process. The goal (issue 10 item 3)
is under 1 s per change. Nothing here asserts; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_pages  # noqa: E402
from bench_pages import (  # noqa: E402
    baseline, finish_line_fill, new_values, open_page, quiet, server_like_script_cache, timed_run,
)

KINDS = ("slider", "toggle", "checkbox", "number_input", "selectbox", "radio")
#: Widgets left alone: the dataset picker (another dataset is another page view) and the
#: conversation pickers (bench_pages' "new session" covers a first view of a conversation).
SKIP_KEYS = frozenset({"data", "conv", "agent_conv"})


@dataclass(frozen=True)
class Scenario:
    name: str
    path: str
    preset: dict = field(default_factory=dict)  # session-state values set before the survey
    expanders: tuple[str, ...] = ()


SCENARIOS = (
    Scenario("token_budget", "app_pages/token_budget.py", expanders=("cmp", "sweep")),
    Scenario("token_budget_summaries", "app_pages/token_budget.py", {"sum": True}),
    Scenario("token_budget_clearing_summaries", "app_pages/token_budget.py", {"sum": True, "clr": True}),
    Scenario("flaky_store", "app_pages/flaky_store.py"),
    Scenario("flaky_sqlite", "app_pages/flaky_store.py", {"store": "SQLite store (keyset cursors)"}),
    Scenario("listing_eviction", "app_pages/listing_eviction.py"),
    Scenario("agent_session", "app_pages/agent_session.py"),
    Scenario("home", "app_pages/home.py"),
    Scenario("your_data", "app_pages/your_data.py"),
)


def run(at) -> tuple[float, float]:
    """(wall s, CPU s of this process) of one AppTest run."""
    cpu = time.process_time()
    wall = timed_run(at)
    return wall, time.process_time() - cpu


def change_rows(name: str, what: str, value: str, at) -> list[tuple]:
    """Rows of one widget change: one row, or, when the page reran itself (``st.rerun()``: Token
    budget's replay in slices, convmem_dashboard.panel_replay), one row per script run, each a
    server run of its own held to the goal alone."""
    wall, cpu = run(at)
    runs = list(bench_pages.SCRIPT_RUNS)
    if len(runs) <= 1:
        return [(name, what, value, wall, cpu)]
    return [(name, f"{what} (run {i}/{len(runs)})", value, w, c) for i, (w, c) in enumerate(runs, 1)]


def new_value(kind: str, widget):
    """A value of ``widget`` other than its current one, or None when it has no other."""
    old = widget.value
    if kind == "slider":
        if isinstance(old, tuple):
            return None
        return new_values(widget, 1)[0]
    if kind in ("toggle", "checkbox"):
        return not old
    if kind == "number_input":
        step = widget.step or 1
        up = (old or 0) + step
        if widget.max is None or up <= widget.max:
            return type(old)(up) if old is not None else up
        down = (old or 0) - step
        return down if widget.min is None or down >= widget.min else None
    options = list(widget.options)
    if len(options) < 2:
        return None
    current = options.index(str(old)) if str(old) in options else 0
    return options[(current + 1) % len(options)]


def set_value(kind: str, widget, value) -> None:
    if kind == "selectbox":
        widget.select(value)
    else:
        widget.set_value(value)


def line_fill_rows(scenario: Scenario, at) -> list[tuple]:
    """Rows of the follow-up runs that count summary lines before a first replay with summaries
    (convmem_dashboard.panel_summary_lines): each is a script run of its own, held to the goal."""
    fill = finish_line_fill(at)
    return [
        (scenario.name, f"  (lines, then the replay: run {i})", "", wall, cpu)
        for i, (wall, cpu) in enumerate(fill, 1)
    ]


def survey(scenario: Scenario, data: str, base: float) -> list[tuple]:
    """Rows ``(scenario, widget, value, wall s, CPU s)`` for every widget change of the scenario."""
    at = open_page(scenario.path, data)
    rows = change_rows(scenario.name, "(first view)", "", at)  # a big dataset: its load, then the page
    run(at)
    if scenario.preset:
        for key, value in scenario.preset.items():
            at.session_state[key] = value
        rows += change_rows(scenario.name, "(preset)", ", ".join(f"{k}={v}" for k, v in scenario.preset.items()), at)
        rows += line_fill_rows(scenario, at)
        run(at)
    found = [(kind, w.key) for kind in KINDS for w in getattr(at, kind) if w.key and w.key not in SKIP_KEYS]
    for kind, key in dict.fromkeys(found):
        try:
            widget = getattr(at, kind)(key=key)
        except KeyError:  # gone after an earlier change (a conditional widget)
            continue
        old, value = widget.value, new_value(kind, widget)
        if value is None or widget.disabled:
            continue
        set_value(kind, widget, value)
        rows += change_rows(scenario.name, f"{kind} {key}", str(value)[:28], at)
        rows += line_fill_rows(scenario, at)
        try:
            set_value(kind, getattr(at, kind)(key=key), old)
        except KeyError:
            continue
        run(at)
    for key in scenario.expanders:
        at.session_state[key] = True
        rows += change_rows(scenario.name, f"expander {key}", "open", at)
        at.session_state[key] = False
        run(at)
    for row in rows:
        name, what, value, wall, cpu = row
        flag = "  OVER" if min(wall, cpu) >= 1.0 else ""
        print(f"  {name:32} {what:26} {value:28} {wall:7.2f} s {cpu:7.2f} s {wall / base:8.0f}x{flag}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="synthetic-100000", help="dataset key (?data=)")
    parser.add_argument("--scenarios", default=",".join(s.name for s in SCENARIOS), help="comma-separated")
    parser.add_argument("--post-script-gc", action="store_true",
                        help="turn Streamlit's full collection after every run back on (its default; "
                             ".streamlit/config.toml turns it off), to measure what it cost")
    args = parser.parse_args()
    if args.post_script_gc:
        from streamlit import config

        config.set_option("runner.postScriptGC", True)
    server_like_script_cache()
    quiet()
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    _, base = baseline(5)
    print(f"baseline (bare AppTest rerun): {base:.4f} s; data={args.data}")
    print(f"  {'scenario':32} {'widget':26} {'new value':28} {'wall':>9} {'CPU':>9} {'x base':>9}")
    wanted = set(args.scenarios.split(","))
    rows = [r for s in SCENARIOS if s.name in wanted for r in survey(s, args.data, base)]
    changes = [r for r in rows if not r[1].startswith("(")]
    over = [r for r in changes if min(r[3], r[4]) >= 1.0]
    slowest = max(changes, key=lambda r: min(r[3], r[4]))
    print(f"{len(changes)} widget changes; slowest {slowest[0]} {slowest[1]}: {slowest[3]:.2f} s wall, "
          f"{slowest[4]:.2f} s CPU; {len(over)} at or over 1 s (wall and CPU)")
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
