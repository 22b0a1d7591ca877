"""The cyclic garbage collector around bulk work done with it paused (loads, replays)."""

from __future__ import annotations

import gc

__all__ = ["promote_young"]


def promote_young() -> None:
    """Move every object the cyclic collector tracks into its oldest generation, unexamined.

    Called at the end of work done with the collector paused (a load: decoded records, messages,
    tool calls; a replay: its columns, records and summary lines): what it made is all in the
    youngest generation, and the first collection after the pause would traverse every one of
    them (~0.1 s of CPU in Home's upload rerun at 10^5 messages, and in a Token budget rerun
    with a new setting; docs/performance.md) only to find them all alive, and the next middle
    one again. In the oldest generation they are examined by full collections only, as any
    long-lived data is. A cycle that was young then (made by any thread) is collected at the
    next full collection instead of sooner. ``gc.freeze()`` then ``gc.unfreeze()`` does the move
    (two list splices, O(1)); skipped when something in the process keeps objects frozen (a
    pre-fork server), which unfreeze would release. O(1).
    """
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
