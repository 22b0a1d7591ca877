"""The Token budget page's limit sweep on a 10^5-message conversation, with Streamlit's AppTest.

    python benchmarks/bench_sweep.py [--data synthetic-100000]

Times, in one process (one Streamlit cache, as one server):

* open: the full run that opens the sweep expander for the first time (the page already rendered);
  at 10^5 messages it computes no limit and draws the bar "Sweeping limits: 0 of 20";
* fill: the follow-up runs that fill the sweep (the fragment reruns the frontend's ``run_every``
  timer asks for; AppTest has no timer, so they are asked of its script runner as the timer
  does): the longest one, how many until the sweep is complete, and the total (open included);
  the last one is shown apart: it includes the whole-page rerun that draws the complete sweep;
* reopen: closed, then opened again (another session opening the same sweep);
* pick: a click on a sweep point (the limit set to one of the swept limits);
* price: the cache-read price changed (the sweep's cost rows repriced);
* policy: "Pin system" turned on with the sweep open (every limit's replay is new), then its fill.

Each figure is one run (the cold ones cannot be repeated in one process) and is also printed as a
ratio to a bare AppTest rerun measured in the same process (as benchmarks/bench_pages.py), so the
machine's speed and AppTest's own overhead cancel out.
"""

from __future__ import annotations

import argparse

from bench_pages import (
    DASHBOARD, TIMEOUT, AppTest, baseline, fragment_reruns, quiet, server_like_script_cache, timed_run,
)

PAGE = "app_pages/token_budget.py"
#: Follow-up runs tried at most before giving up (20 limits at >= 1 limit per run, plus slack).
MAX_FOLLOW_UPS = 100


def filling(at: AppTest) -> bool:
    """Whether the sweep is drawn partial (its bar is on screen)."""
    return any(p.proto.text.startswith("Sweeping limits") for p in at.get("progress"))


def fill(at: AppTest) -> list[float]:
    """Seconds of each follow-up run until the sweep is complete (none when it already is)."""
    times = []
    while filling(at):
        if len(times) == MAX_FOLLOW_UPS:
            raise RuntimeError(f"the sweep is still partial after {MAX_FOLLOW_UPS} follow-up runs")
        with fragment_reruns(at):
            times.append(timed_run(at))
    return times


def sweep_times(data: str) -> dict[str, float]:
    """Seconds per step (see the module docstring), in the order listed there; a fill gives the
    figures of :func:`fill_times`."""
    at = AppTest.from_file(DASHBOARD, default_timeout=TIMEOUT)
    at.query_params.update({"data": data, "cmp": "false"})  # no "sweep": the link would win over the state
    at.switch_page(PAGE)
    timed_run(at)
    if any(e.proto.expanded for e in at.expander):
        raise RuntimeError("the sweep started open (it starts closed unless the link opens it)")
    times = {}
    at.session_state["sweep"] = True
    times["open"] = timed_run(at)
    times.update(fill_times("fill", times["open"], fill(at)))
    at.session_state["sweep"] = False
    timed_run(at)
    at.session_state["sweep"] = True
    times["reopen"] = timed_run(at)
    if not at.expander[-1].proto.expanded:
        raise RuntimeError("the sweep did not open")
    table = next(d.value for d in at.dataframe if "limit (tokens)" in d.value.columns and "compactions" in d.value.columns)
    limits = list(table["limit (tokens)"])
    current = at.slider(key="limit").value
    at.session_state["limit"] = limits[limits.index(current) - 1]
    times["pick"] = timed_run(at)
    at.session_state["cp_read"] = 0.5
    times["price"] = timed_run(at)
    at.session_state["pin_sys"] = True
    times["policy"] = timed_run(at)
    times.update(fill_times("policy fill", times["policy"], fill(at)))
    return times


def fill_times(name: str, opening: float, runs: list[float]) -> dict[str, float]:
    """A fill's figures: the longest follow-up run but the last (``max``), the last one (its
    fragment run and the whole-page rerun it ends with: two script runs, one AppTest run), how
    many runs, and the total with the opening run."""
    return {
        f"{name} max": max(runs[:-1], default=0.0),
        f"{name} last": runs[-1] if runs else 0.0,
        f"{name} runs": len(runs),
        f"{name} total": opening + sum(runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="synthetic-100000", help="dataset key (?data=)")
    args = parser.parse_args()
    server_like_script_cache()
    quiet()
    _, base = baseline(5)
    times = sweep_times(args.data)
    print(f"Limit sweep, data={args.data}; baseline (bare AppTest rerun) {base:.4f} s")
    for name, t in times.items():
        if name.endswith("runs"):
            print(f"  {name:17s} {t:7d}")
        else:
            print(f"  {name:17s} {t:7.2f} s  {t / base:8.0f}x baseline")


if __name__ == "__main__":
    main()
