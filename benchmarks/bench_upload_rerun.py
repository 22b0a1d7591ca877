"""Your data's rerun after uploading a new 10^5-message file: wall and CPU seconds, with AppTest.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_upload_rerun.py [--root DIR] [--repeat 3]

Opens Your data on ``?data=synthetic-100000`` (as bench_pages.py, one ScriptCache as the server keeps),
then uploads --repeat new OpenAI JSONL files of 10^5 messages (different bytes each time) and
prints the medians of: the rerun's wall time, the process CPU time spent during it
(``time.process_time``: the script thread and AppTest's own work; AppTest's main thread only
waits), and ``register_upload``'s CPU time in the script thread (``time.thread_time``). On a
shared machine the wall time swings with other processes' load (2-5x here); the CPU figures
move much less, so run two checkouts alternately (``--root``) and compare those. Nothing here
asserts.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose code to measure")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = args.root.resolve()
    sys.path.insert(0, str(root))
    os.chdir(root)
    spec = importlib.util.spec_from_file_location("bench_pages", root / "benchmarks" / "bench_pages.py")
    pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pages)
    pages.server_like_script_cache()
    import convmem_dashboard.data as data

    register, inside = data.register_upload, []

    def timed_register(*a, **k):
        t0 = time.thread_time()
        try:
            return register(*a, **k)
        finally:
            inside.append(time.thread_time() - t0)

    data.register_upload = timed_register  # app_pages/your_data.py imports it at each run
    at = pages.open_page("app_pages/your_data.py", "synthetic-100000")
    pages.timed_run(at)
    pages.timed_run(at)
    walls, cpus = [], []
    for i in range(args.repeat):
        blob = pages.jsonl_upload(100_000, seed=3_000 + i)
        at.get("file_uploader")[0].set_value((f"big{i}.jsonl", blob, "application/jsonl"))
        c0 = time.process_time()
        walls.append(pages.timed_run(at))
        cpus.append(time.process_time() - c0)
        pages._check_upload(at, 100_000)
    med = statistics.median
    print(f"{root}: upload rerun wall {med(walls):.3f} s, process CPU {med(cpus):.3f} s, "
          f"register_upload CPU {med(inside):.3f} s (medians of {args.repeat}); "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
