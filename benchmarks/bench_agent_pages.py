"""Rerun time of the pages on a generated 10^4-record coding-agent session, with AppTest.

    .venv/bin/python benchmarks/bench_agent_pages.py [--records 10000] [--repeat 5]

Uploads a generated Claude Code session (:func:`convmem.testing.sessions.claude_code_session`,
with compactions and usage on every call) on Your data, then, for the Token budget page (on the
session's conversation: the agent's compactions drawn beside convmem's) and the Agent session
page: the first run, a rerun with nothing changed, and a rerun after a widget change (token
budget: the limit; agent session: the input price). Each figure is the median of --repeat runs;
the baseline is a bare AppTest of a one-line script rerun in the same process, so every figure is
also a ratio. Goal (issue 13): a rerun under 1 s. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from convmem.testing.sessions import claude_code_session  # noqa: E402


def timed(at: AppTest) -> float:
    t0 = time.perf_counter()
    at.run()
    dt = time.perf_counter() - t0
    assert not at.exception, [e.value for e in at.exception]
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    data = claude_code_session(args.records, seed=7, ratio=1.2, overhead=5, base=9000,
                               compact_every=200).encode()
    bare = AppTest.from_string("import streamlit as st\nst.write('hello')")
    bare.run()
    base = statistics.median(timed(bare) for _ in range(args.repeat))
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=600)
    at.switch_page("app_pages/your_data.py")  # the upload's page
    at.run()
    at.get("file_uploader")[0].set_value(("session.jsonl", data, "application/jsonl"))
    t_upload = timed(at)
    print(f"{args.records:,} records, {len(data) / 1e6:.1f} MB; upload on Your data {t_upload:.2f} s; "
          f"baseline rerun {base * 1000:.1f} ms; median of {args.repeat}")
    print(f"{'page':<16}{'first s':>9}{'rerun s':>9}{'ratio':>8}{'change s':>10}{'ratio':>8}")
    for name, page, change in (("token_budget", "app_pages/token_budget.py", "limit"),
                               ("agent_session", "app_pages/agent_session.py", "data_p_in")):
        at.switch_page(page)
        if name == "token_budget":
            at.session_state["conv"] = "gen"
        first = timed(at)
        rerun = statistics.median(timed(at) for _ in range(args.repeat))
        times = []
        for k in range(args.repeat):
            if change == "limit":
                slider = at.slider(key="limit")
                lo, hi = slider.min, slider.max
                slider.set_value(lo + (hi - lo) * (k + 1) // (args.repeat + 2))
            else:
                at.number_input(key=change).set_value(3.0 + k + 1)
            times.append(timed(at))
        moved = statistics.median(times)
        print(f"{name:<16}{first:>9.2f}{rerun:>9.2f}{rerun / base:>8.0f}{moved:>10.2f}"
              f"{moved / base:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
