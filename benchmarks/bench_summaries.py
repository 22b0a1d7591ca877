"""Replay with summaries: ExtractiveSummarizer now against the one on main before issue 10 (the
whole summary text counted at every compaction, every line of the previous summary re-read).

    .venv/bin/python benchmarks/bench_summaries.py [--n 20000] [--old path/to/old_summarizers.py]

Both run in this process, interleaved, on the same synthetic conversation (convmem.synthetic,
seed 7) and settings (limit 32,000 tokens, summary budget 3,000 tokens: the Token budget page's
defaults at 10^5 messages), so the machine's load cancels out of the ratio. The old module is read
from ``git show main~:convmem/summarizers.py`` saved to a file (--old). Prints seconds per replay
(median) and the ratio. Nothing asserts; both must give equal summaries (checked).
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
sys.path.insert(0, str(ROOT))
TIKTOKEN_CACHE = ROOT.parent / "shared" / "real_data" / "tokenizers" / "tiktoken_cache"
if TIKTOKEN_CACHE.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))

from convmem import History, replay  # noqa: E402
from convmem.replay import HistorySettings  # noqa: E402
from convmem.summarizers import ExtractiveSummarizer, _LINE_MEMOS  # noqa: E402
from convmem.synthetic import generate_conversation  # noqa: E402
from convmem.tokens import default_counter  # noqa: E402


def load_old(path: str):
    spec = importlib.util.spec_from_file_location("convmem._old_summarizers", path)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "convmem"
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod.ExtractiveSummarizer


def run(messages, cls, limit: int, budget: int, policies: dict) -> tuple[float, list]:
    h = History(limit, summarizer=cls(max_tokens=budget), summary_budget=budget, **policies)
    made = []
    t0 = time.perf_counter()
    for m in messages:
        h.add(m)
        if h.summary is not None and (not made or made[-1] is not h.summary):
            made.append(h.summary)
    return time.perf_counter() - t0, made


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20_000, help="messages")
    p.add_argument("--old", default="/tmp/old_summarizers.py", help="the old summarizers.py")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    old = load_old(args.old)
    default_counter().count_text("warm up")
    msgs = generate_conversation(args.n, seed=7).messages
    combos = {"none": {}, "start_on_user": {"start_on_user": True},
              "all four": {"pin_system": True, "pin_latest_user": True, "keep_tool_groups": True, "start_on_user": True}}
    print(f"History with ExtractiveSummarizer, {args.n:,} synthetic messages, limit 32,000, budget 3,000 tokens")
    for name, pol in combos.items():
        t_old, t_cold, t_new = [], [], []
        for _ in range(args.repeat):
            a, made_old = run(msgs, old, 32_000, 3_000, pol)
            _LINE_MEMOS.clear()
            b, made_new = run(msgs, ExtractiveSummarizer, 32_000, 3_000, pol)  # line memo empty
            c, _ = run(msgs, ExtractiveSummarizer, 32_000, 3_000, pol)  # line memo warm (another setting)
            t_old.append(a), t_cold.append(b), t_new.append(c)
        same = [(m.content, m.tokens) for m in made_old] == [(m.content, m.tokens) for m in made_new]
        o, b, c = (statistics.median(x) for x in (t_old, t_cold, t_new))
        print(f"  {name:<14} old {o:7.3f} s   new {b:7.3f} s ({o / b:5.1f}x)   new, lines memoized {c:7.3f} s "
              f"({o / c:5.1f}x)   {len(made_new):,} summaries, equal: {same}")
    # the replay the page makes, for scale
    t0 = time.perf_counter()
    replay(msgs, HistorySettings(32_000))
    print(f"  (replay without summaries, same messages: {time.perf_counter() - t0:.3f} s)")


if __name__ == "__main__":
    main()
