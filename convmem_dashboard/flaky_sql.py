"""The Flaky store page over a SQLite store: faults wrap ``SQLStore.pager``, and messages arrive
while it pages (pure, no streamlit).

:func:`run_sql_simulation` puts one conversation in a private in-memory SQLite
:class:`convmem.stores.SQLStore` (the page never writes to a database it was pointed at), wraps
the store's keyset pager in a writer that appends ``count`` messages right after page
``after_page`` was served (as if the agent wrote them while the load paged), and wraps that in a
:class:`convmem.testing.FlakyStore` for transient failures on the virtual clock. The walk faults
(stuck cursors, cycles, wrap-around, empty pages, overlap) belong to offset stores
(:class:`convmem.testing.PagedStore`) and are not injected here.

What the run shows (the contract of convmem.stores: stable, monotonic cursors):

* without a high-water mark the load goes on past the arrivals and returns them too, once each;
* with ``high_water=True`` the load stops at the mark it saw at its start, and a follow-up load
  ``pager(after=pager.position)`` returns exactly the arrivals;
* either way the load plus the follow-up equals the store's final contents: nothing skipped,
  nothing repeated, in order.

>>> from convmem import Message
>>> from convmem.testing import FaultConfig
>>> from convmem_dashboard.tables_store import LoadSettings
>>> msgs = [Message(f"m{i}", "user", 1) for i in range(6)]
>>> run = run_sql_simulation("c", msgs, 2, FaultConfig(), LoadSettings(), Arrivals(3, 1, True))
>>> run.loaded_ids, run.arrivals["follow_up_ids"]
(('m0', 'm1', 'm2', 'm3', 'm4', 'm5'), ('arrived-1', 'arrived-2', 'arrived-3'))
>>> run.ok, run.lost_ids, run.repeated_ids
(True, (), ())
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from convmem import LoadReport, Message, PageLoadError, load_history
from convmem.testing import FAULT_TRANSIENT, FaultConfig, FlakyStore, VirtualClock, compare_to_truth

from .tables_store import (
    ARRIVALS_EFFECT,
    FAULT_ARRIVALS,
    FlakyRun,
    LoadSettings,
    _call_rows,
    _show_cursor,
)

__all__ = ["ARRIVALS_EFFECT", "FAULT_ARRIVALS", "MAX_ARRIVALS", "Arrivals", "run_sql_simulation"]

#: Most messages the writer appends in one run.
MAX_ARRIVALS = 10_000


@dataclass(frozen=True, slots=True)
class Arrivals:
    """Messages a writer appends while the load pages.

    Attributes:
        count: messages appended (0: none), at most :data:`MAX_ARRIVALS`.
        after_page: they are appended right after this page (1-based) was served.
        high_water: the load is bounded by the high-water mark read before its first page.
    """

    count: int = 0
    after_page: int = 1
    high_water: bool = False

    def __post_init__(self) -> None:
        for name, low, high in (("count", 0, MAX_ARRIVALS), ("after_page", 1, 2**31 - 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"Arrivals.{name} must be an int, got {value!r}")
            if not low <= value <= high:
                raise ValueError(f"Arrivals.{name} must be in {low}..{high}, got {value!r}")
        if not isinstance(self.high_water, bool):
            raise TypeError(f"Arrivals.high_water must be a bool, got {self.high_water!r}")


def _new_messages(taken: set[str], count: int) -> list[Message]:
    """``count`` messages with ids not in ``taken``: user/assistant turns of 12 tokens."""
    out, i = [], 0
    while len(out) < count:
        i += 1
        mid = f"arrived-{i}"
        if mid in taken:
            continue
        role = "user" if len(out) % 2 == 0 else "assistant"
        out.append(Message(mid, role, 12, content=f"({role} message written while the load paged)"))
    return out


def run_sql_simulation(
    conversation_id: str,
    messages: Sequence[Message],
    page_size: int,
    faults: FaultConfig,
    settings: LoadSettings,
    arrivals: Arrivals,
) -> FlakyRun:
    """One seeded load of ``messages`` through ``SQLStore("sqlite://").pager`` with transient
    faults and arrivals; never raises for a failed load (a PageLoadError becomes
    ``FlakyRun.error``; the follow-up is then not run).

    ``FlakyRun.truth`` is the store's final contents (the conversation plus the arrivals);
    ``loaded_ids`` what the load returned; ``arrivals`` a dict: count, after_page, high_water,
    arrived_ids, arrived_at_call (the call after which they were appended, or None when the load
    ended first), in_load (how many the load itself returned), follow_up_ids, start_mark,
    end_position. The diff compares load + follow-up to the final contents.

    Raises:
        TypeError / ValueError: bad settings (names the field). O(messages + arrivals + calls).
    """
    faults = FaultConfig(failure_rate=faults.failure_rate, burst_length=faults.burst_length,
                         seed=faults.seed)  # walk faults need an offset store: not injected here
    from convmem.stores import SQLStore  # SQLAlchemy: imported only when this store kind runs

    store = SQLStore("sqlite://", page_size=page_size)
    try:
        start_mark = store.append(conversation_id, list(messages))
        pager = store.pager(conversation_id, high_water=start_mark if arrivals.high_water else None)
        new = _new_messages({m.id for m in messages}, arrivals.count)
        served = {"pages": 0, "at_call": None}
        flaky: FlakyStore

        def fetch(cursor: Any) -> tuple[list[Message], Any]:
            page, next_cursor = pager(cursor)
            served["pages"] += 1
            if new and served["pages"] == arrivals.after_page:
                store.append(conversation_id, new)  # committed before the next page is asked for
                served["at_call"] = len(flaky.calls)  # this call's index (recorded right after)
            return page, next_cursor

        clock = VirtualClock()
        flaky = FlakyStore(fetch, faults, clock=clock)
        report = LoadReport()
        error: dict[str, Any] | None = None
        try:
            loaded = load_history(
                flaky, attempts=settings.attempts, base_delay=settings.base_delay,
                max_delay=settings.max_delay, deadline=settings.deadline,
                empty_page_ends=settings.empty_page_ends, sleep=clock.sleep, clock=clock,
                random=flaky.rng_for_jitter(), report=report,
            )
        except PageLoadError as exc:
            loaded = list(exc.loaded)
            cause = exc.__cause__
            error = {
                "kind": "PageLoadError",
                "cursor": _show_cursor(exc.cursor),
                "attempts": exc.attempts,
                "loaded": len(exc.loaded),
                "message": str(exc),
                "last_error": f"{type(cause).__name__}: {cause}" if cause is not None else "",
            }
        follow_up: list[Message] = []
        if error is None and pager.position is not None:
            follow_up = load_history(store.pager(conversation_id, after=pager.position))
        # The store's final contents in one keyset page (one query): the check reads what the
        # store holds, not what the page put in it, and costs one query instead of one per page.
        truth = load_history(store.pager(conversation_id, page_size=len(messages) + len(new) + 1))
    finally:
        store.close()
    arrived_ids = tuple(m.id for m in new) if served["at_call"] is not None else ()
    arrived = set(arrived_ids)
    diff = compare_to_truth([*loaded, *follow_up], truth)
    rows = _call_rows(report, flaky)
    at_call = served["at_call"]
    if at_call is not None and at_call < len(rows):
        fault = rows[at_call]["fault"]
        rows[at_call] = {**rows[at_call], "fault": f"{fault}+{FAULT_ARRIVALS}" if fault else FAULT_ARRIVALS}
    configured = ((FAULT_TRANSIENT,) if faults.failure_rate > 0 else ()) + (
        (FAULT_ARRIVALS,) if arrivals.count else ()
    )
    fired = tuple(dict.fromkeys(
        [*flaky.fired, *((FAULT_ARRIVALS,) if arrived_ids else ())]
    ))
    words = []
    if diff.ok:
        words.append(f"nothing skipped, nothing repeated: {len(truth):,} of {len(truth):,} loaded")
    else:
        if diff.lost:
            words.append(f"{len(diff.lost):,} of {len(truth):,} messages not loaded")
        if diff.repeated:
            words.append(f"{len(diff.repeated):,} repeated")
        if diff.out_of_order:
            words.append("out of order")
    return replace(
        FlakyRun(
            truth=tuple((m.id, m.role, m.tokens) for m in truth),
            page_size=page_size,
            calls=tuple(rows),
            summary=report.summary(),
            stop_reason=report.stop_reason,
            failure=report.failure,
            error=error,
            loaded_ids=tuple(m.id for m in loaded),
            lost_ids=diff.lost,
            repeated_ids=diff.repeated,
            extra_ids=diff.extra,
            out_of_order=diff.out_of_order,
            explanation="; ".join(words),
            configured=configured,
            fired=fired,
            empty_page_ends=settings.empty_page_ends,
        ),
        store_kind="sqlite",
        follow_up_ids=tuple(m.id for m in follow_up),
        arrivals={
            "count": arrivals.count,
            "after_page": arrivals.after_page,
            "high_water": arrivals.high_water,
            "arrived_ids": arrived_ids,
            "arrived_at_call": at_call,
            "in_load": sum(1 for m in loaded if m.id in arrived),
            "follow_up_ids": tuple(m.id for m in follow_up),
            "start_mark": start_mark,
            "end_position": pager.position,
        },
    )
