"""Test doubles shipped with convmem, apart from the product (the way httpx ships MockTransport).

They make ``load_history`` runs exact and instant, in tests and in the dashboard's Flaky store page.
Split by concern:

* :mod:`convmem.testing.clock` - :class:`VirtualClock`: inject as ``sleep=`` and ``clock=``; no real
  time passes.
* :mod:`convmem.testing.stores` - :class:`PagedStore` (an in-memory store over a list of messages,
  ``page_size`` per page, offset cursors), :class:`ScriptedStore` (a store from a script
  ``cursor -> responses``, the CASES.md notation) and :class:`MemoryStore` (in memory, with
  :class:`convmem.stores.SQLStore`'s API: appends, keyset cursors, high-water marks).
* :mod:`convmem.testing.faults` - :class:`FaultConfig` + :class:`FlakyStore`: seeded, deterministic
  fault injection over a store: transient failures (with bursts), repeated cursors, cursor cycles,
  wrap-around, empty pages, overlapping pages. Every call is recorded.
* :mod:`convmem.testing.truth` - :func:`compare_to_truth`: what a load lost, repeated or reordered
  against the store's truth (a :class:`TruthDiff`).

The real stores live in :mod:`convmem.stores`. Nothing here is exported from ``convmem`` itself.

>>> from convmem import Message, load_history
>>> truth = [Message(f"m{i}", "user", 1) for i in range(1, 8)]
>>> clock = VirtualClock()
>>> store = FlakyStore(PagedStore(truth, 3), FaultConfig(failure_rate=0.3, seed=7), clock=clock)
>>> loaded = load_history(store, sleep=clock.sleep, clock=clock, random=store.rng_for_jitter())
>>> compare_to_truth(loaded, store.truth).ok
True
>>> [(c.cursor, c.outcome, round(c.at, 3)) for c in store.calls]  # doctest: +NORMALIZE_WHITESPACE
[(None, 'ok', 0.0), ('p3', 'transient', 0.0), ('p3', 'ok', 0.091),
 ('p6', 'transient', 0.091), ('p6', 'ok', 0.105)]
"""

from .clock import VirtualClock
from .faults import (
    FAULT_CURSOR_CYCLE,
    FAULT_EFFECTS,
    FAULT_EMPTY_PAGE,
    FAULT_NAMES,
    FAULT_OVERLAP,
    FAULT_REPEATED_CURSOR,
    FAULT_TRANSIENT,
    FAULT_WRAP_AROUND,
    FaultConfig,
    FlakyCall,
    FlakyStore,
)
from .stores import MemoryStore, PagedStore, ScriptedStore
from .truth import TruthDiff, compare_to_truth

__all__ = [
    "FAULT_CURSOR_CYCLE",
    "FAULT_EFFECTS",
    "FAULT_EMPTY_PAGE",
    "FAULT_NAMES",
    "FAULT_OVERLAP",
    "FAULT_REPEATED_CURSOR",
    "FAULT_TRANSIENT",
    "FAULT_WRAP_AROUND",
    "FaultConfig",
    "FlakyCall",
    "FlakyStore",
    "MemoryStore",
    "PagedStore",
    "ScriptedStore",
    "TruthDiff",
    "VirtualClock",
    "compare_to_truth",
]
