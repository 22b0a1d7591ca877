"""Replay at 10^5 messages for every policy combination, as ratios against the base rule.

    TIKTOKEN_CACHE_DIR=... .venv/bin/python benchmarks/bench_history_policies.py [--n 100000]
        [--repeat 5] [--limit 31000] [--target 24000] [--walk]

The workload is the dashboard's: ``convmem.replay(messages, HistorySettings(...))`` over the
``synthetic-100000`` dataset (convmem_dashboard.data; the first ``--n`` messages), summaries off.
Rows: each of pin_system, pin_latest_user, keep_tool_groups, start_on_user alone and all four,
without and with ``--target``; each is the median of ``--repeat`` runs, alternated with the base
rule (no policy, same limit and target) in the same process, and printed as seconds and as a ratio
against that base rule. ``History.add`` alone (no replay bookkeeping) is printed beside it.
The dashboard's budget: one replay per widget change, under 1 s of server time in all
(issue 10, item 3); docs/performance.md has the figures. Nothing here asserts.

``--walk`` prints instead, for all 15 non-empty combinations of the four policies without and with
``--target``, the CPU time (``time.process_time``: this process only, steadier on a shared machine)
of ``replay`` on ``generate_conversation(--n, seed=7)`` through its policy walk and through
History.add (the walk switched off), alternated in the same process, and the ratio History / walk.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import itertools
import logging
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault(
    "TIKTOKEN_CACHE_DIR", str(Path(__file__).resolve().parent.parent.parent / "shared/real_data/tokenizers/tiktoken_cache")
)
logging.disable(logging.WARNING)  # Streamlit's "missing ScriptRunContext" outside a page

from convmem import HistorySettings, replay  # noqa: E402

POLICIES = ("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user")


def combinations() -> list[tuple[str, dict]]:
    rows = [(name, {name: True}) for name in POLICIES]
    rows.append(("all four", dict.fromkeys(POLICIES, True)))
    return rows


def time_once(fn) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def add_only(messages, settings: HistorySettings) -> int:
    h = settings.build()
    h._records = type(h._records)()  # unbounded, as replay keeps them
    add = h.add
    gc.disable()  # as replay does
    try:
        for m in messages:
            add(m)
    finally:
        gc.enable()
    return h.total()


def cpu_once(fn) -> float:
    gc.collect()
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def walk_vs_history(messages, limit: int, target: int, repeat: int, summary_budget: int | None = None) -> None:
    """Replay CPU time through the policy walk and through History.add, per combination (with
    summaries of ``summary_budget`` tokens when given; the summary lines are counted once first,
    so both sides find them in the process-wide line cache)."""
    replay_module = importlib.import_module("convmem.replay")  # (convmem.replay is the function)
    applies = replay_module._policy_walk_applies

    def through_history(s: HistorySettings) -> None:
        replay_module._policy_walk_applies = lambda *args: False
        try:
            replay(messages, s)
        finally:
            replay_module._policy_walk_applies = applies

    if summary_budget is not None:
        replay(messages, HistorySettings(limit, summary_budget=summary_budget))  # count the lines once
    print(f"replay CPU time of {len(messages):,} messages (generate_conversation, seed 7), limit {limit:,}, "
          f"summary budget {summary_budget}, median of {repeat}, walk vs History.add; "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'policies':<52} {'target':>7} {'walk s':>7} {'History s':>9} {'ratio':>6}")
    for t in (None, target):
        for bits in itertools.product([False, True], repeat=4):
            if not any(bits):
                continue
            s = HistorySettings(limit, target=t, summary_budget=summary_budget, **dict(zip(POLICIES, bits)))
            walk, hist = [], []
            for _ in range(repeat):
                walk.append(cpu_once(lambda: replay(messages, s)))
                hist.append(cpu_once(lambda: through_history(s)))
            mw, mh = statistics.median(walk), statistics.median(hist)
            name = "+".join(p for p, on in zip(POLICIES, bits) if on)
            print(f"{name:<52} {str(t or '-'):>7} {mw:7.3f} {mh:9.3f} {mh / mw:6.2f}", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--limit", type=int, default=31_000)
    parser.add_argument("--target", type=int, default=24_000)
    parser.add_argument("--walk", action="store_true", help="replay's policy walk vs History.add")
    parser.add_argument("--summary-budget", type=int, default=None,
                        help="with --walk: summaries of this many tokens (the page's default is limit / 10)")
    args = parser.parse_args()
    if args.walk:
        from convmem.synthetic import generate_conversation

        messages = generate_conversation(args.n, seed=7).messages
        walk_vs_history(messages, args.limit, args.target, args.repeat, args.summary_budget)
        return

    from convmem_dashboard.data import get_dataset

    messages = get_dataset("synthetic-100000").conversations[0].messages[: args.n]
    print(f"replay of {len(messages):,} messages (synthetic-100000), limit {args.limit:,} tokens, "
          f"median of {args.repeat}; load {os.getloadavg()[0]:.2f}")
    print(f"{'policies':<22} {'target':>7} {'base s':>8} {'replay s':>9} {'ratio':>6} "
          f"{'add s':>7} {'base add s':>10} {'ratio':>6}")
    for target in (None, args.target):
        base = HistorySettings(args.limit, target=target)
        for name, flags in combinations():
            s = HistorySettings(args.limit, target=target, **flags)
            tb, ts, ab, as_ = [], [], [], []
            for _ in range(args.repeat):
                tb.append(time_once(lambda: replay(messages, base)))
                ts.append(time_once(lambda: replay(messages, s)))
                ab.append(time_once(lambda: add_only(messages, base)))
                as_.append(time_once(lambda: add_only(messages, s)))
            mb, ms, mab, mas = (statistics.median(x) for x in (tb, ts, ab, as_))
            print(f"{name:<22} {str(target or '-'):>7} {mb:8.3f} {ms:9.3f} {ms / mb:6.2f} "
                  f"{mas:7.3f} {mab:10.3f} {mas / mab:6.2f}", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
