"""The server's cyclic-GC thresholds (issue 10 item 3: every rerun under 1 s at 10^5 messages).

A dashboard process keeps ~10^5 long-lived container objects per cached conversation (its
Messages) and each new replay allocates tuples and lists of 10^5 entries. With CPython's default
generation-0 threshold (700 net container allocations) one Token budget rerun ran 5-6 young
collections and one generation-1 collection, each traversing those big young containers:
0.05-0.2 s of a new setting's rerun (measured with gc.callbacks; benchmarks/bench_pages.py).
A threshold of :data:`GEN0_THRESHOLD` runs a collection about every 100,000 net allocations:
none during a typical rerun, and a cycle of garbage waits at most that long (a few MB).
Reference counting, which frees everything that is not in a cycle, is unaffected.

>>> import gc
>>> saved = gc.get_threshold()
>>> tune_gc() >= GEN0_THRESHOLD
True
>>> gc.set_threshold(*saved)
"""

from __future__ import annotations

import gc

__all__ = ["GEN0_THRESHOLD", "tune_gc"]

#: Net container allocations between young collections in the server process.
GEN0_THRESHOLD = 100_000


def tune_gc() -> int:
    """Raise the generation-0 threshold to :data:`GEN0_THRESHOLD` (never lowers a larger one set
    by the operator, keeps the older generations' thresholds); returns the threshold in force.
    Idempotent: the entry script calls it on every run. O(1)."""
    gen0, gen1, gen2 = gc.get_threshold()
    if gen0 < GEN0_THRESHOLD:
        gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)
    return gc.get_threshold()[0]
