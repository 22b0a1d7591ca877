"""The Token budget page's limit sweep on a 10^5-message conversation, with Streamlit's AppTest.

    python benchmarks/bench_sweep.py [--data synthetic-100000]

Times, in one process (one Streamlit cache, as one server):

* open: the sweep expander opened for the first time (the page itself already rendered);
* reopen: closed, then opened again (another session opening the same sweep);
* pick: a click on a sweep point (the limit set to one of the swept limits);
* price: the cache-read price changed (the sweep's cost rows repriced);
* policy: "Pin system" turned on (every limit's replay is new: no reuse is possible).

Each figure is one run (the cold ones cannot be repeated in one process) and is also printed as a
ratio to a bare AppTest rerun measured in the same process (as benchmarks/bench_pages.py), so the
machine's speed and AppTest's own overhead cancel out.
"""

from __future__ import annotations

import argparse

from bench_pages import DASHBOARD, TIMEOUT, AppTest, baseline, quiet, server_like_script_cache, timed_run

PAGE = "pages/token_budget.py"


def sweep_times(data: str) -> dict[str, float]:
    """Seconds per step (see the module docstring), in the order listed there."""
    at = AppTest.from_file(DASHBOARD, default_timeout=TIMEOUT)
    at.query_params.update({"data": data, "cmp": "false"})  # no "sweep": the link would win over the state
    at.switch_page(PAGE)
    timed_run(at)
    if any(e.proto.expanded for e in at.expander):
        raise RuntimeError("the sweep started open (it starts closed unless the link opens it)")
    times = {}
    at.session_state["sweep"] = True
    times["open"] = timed_run(at)
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
    return times


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
        print(f"  {name:7s} {t:7.2f} s  {t / base:8.0f}x baseline")


if __name__ == "__main__":
    main()
