"""The cyclic garbage collector around bulk work done with it paused (loads, replays)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused", "promote_young"]

_pause_lock = threading.Lock()
_pauses = 0  # gc_paused blocks running, in every thread
_resume = False  # whether the first of them found the collector on


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


@contextmanager
def gc_paused(promote: bool = True) -> Iterator[None]:
    """Pause the cyclic collector for the block (bulk allocation of acyclic objects: a load, a
    replay or a slice of one).

    Blocks that overlap, in any threads, share one pause: the first turns the collector off when
    it was on, the last to end turns it back on (after :func:`promote_young` when ``promote`` and
    that block ended without an exception: what it made is alive). Each block reading the state
    and restoring it itself left the collector off for good when another thread's block ended
    between its read and its ``gc.disable()``. A collector the caller turned off stays off. O(1).
    """
    global _pauses, _resume
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    ended = False
    try:
        yield
        ended = True
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                try:
                    if promote and ended:
                        promote_young()
                finally:
                    gc.enable()  # even when an interruption came during the promotion
