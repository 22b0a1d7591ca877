"""Prompt-cache accounting against the replay it reads, at 10^5 messages (ratios, same process).

    python benchmarks/bench_prompt_cache.py [n]

Prints the seconds of replay(), unchanged_prefix_tokens() and cache_accounting() for a few policy
combinations on a synthetic conversation, and the prefix pass as a ratio of the replay (the
accounting is O(n): the ratio stays flat as n grows).
"""

from __future__ import annotations

import sys
import time

from convmem import ANTHROPIC_SONNET, HistorySettings, cache_accounting, replay, unchanged_prefix_tokens
from convmem.synthetic import generate_conversation


def main(n: int = 100_000) -> None:
    msgs = list(generate_conversation(n, seed=1).messages)
    for s in (
        HistorySettings(8_000),
        HistorySettings(8_000, 4_000),
        HistorySettings.all_policies(8_000, target=4_000),
        HistorySettings.all_policies(8_000, target=4_000, summary_budget=400),
    ):
        t0 = time.perf_counter()
        r = replay(msgs, s)
        t1 = time.perf_counter()
        prefix = unchanged_prefix_tokens(r)
        t2 = time.perf_counter()
        cache_accounting(r.totals, prefix, ANTHROPIC_SONNET)
        t3 = time.perf_counter()
        print(
            f"{s!r:110.110} replay {t1 - t0:6.3f} s  prefix {t2 - t1:6.3f} s ({(t2 - t1) / (t1 - t0):4.2f}x)  "
            f"accounting {t3 - t2:6.3f} s"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
