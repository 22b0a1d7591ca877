"""Seeded, deterministic fault injection over a store: :class:`FaultConfig` + :class:`FlakyStore`."""

from __future__ import annotations

import random as _random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import TransientError
from ..message import Message
from ._checks import _is_int, _is_number
from .stores import PagedStore
from .truth import compare_to_truth

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
]

#: A call raised an injected TransientError.
FAULT_TRANSIENT = "transient"
#: A page handed back the cursor it was fetched with (a stuck cursor).
FAULT_REPEATED_CURSOR = "repeated_cursor"
#: The last page pointed back to an earlier page's cursor instead of None.
FAULT_CURSOR_CYCLE = "cursor_cycle"
#: A page of a later round: the store started over after its last page, under fresh cursors.
FAULT_WRAP_AROUND = "wrap_around"
#: An empty page that carries a cursor, served in the middle of the walk.
FAULT_EMPTY_PAGE = "empty_page"
#: A page starting with messages the previous page already served.
FAULT_OVERLAP = "overlap"
#: Every fault name, as recorded in ``FlakyCall.faults``.
FAULT_NAMES: tuple[str, ...] = (
    FAULT_TRANSIENT,
    FAULT_REPEATED_CURSOR,
    FAULT_CURSOR_CYCLE,
    FAULT_WRAP_AROUND,
    FAULT_EMPTY_PAGE,
    FAULT_OVERLAP,
)

#: What each fault does to a ``load_history`` run, and whether it can really lose data.
FAULT_EFFECTS: Mapping[str, str] = {
    FAULT_TRANSIENT: (
        "loses nothing: the call is retried with the same cursor; if it keeps failing past the "
        "attempts or the deadline, load_history raises PageLoadError (never a silent partial load)"
    ),
    FAULT_REPEATED_CURSOR: (
        "loses every page after the stuck one: the store never hands out a cursor past it, so the "
        "load ends with repeated_cursor"
    ),
    FAULT_CURSOR_CYCLE: (
        "loses nothing: the loop closes only after the last page, and the load ends with "
        "repeated_cursor instead of end"
    ),
    FAULT_WRAP_AROUND: (
        "loses nothing: the first page served again adds no new id, so the load ends with "
        "no_progress"
    ),
    FAULT_EMPTY_PAGE: (
        "loses every page after the empty one with empty_page_ends=True (the default ends the load "
        "there with empty_page); loses nothing with empty_page_ends=False"
    ),
    FAULT_OVERLAP: "loses nothing: messages served twice are de-duplicated by id",
}


@dataclass(frozen=True, slots=True)
class FaultConfig:
    """Which faults a :class:`FlakyStore` injects; all off by default. Frozen, validated.

    Pages are numbered from 1; page 1 is the one fetched with ``None``.

    Attributes:
        failure_rate: probability in [0, 1] that a call (not already in a burst) raises
            TransientError, drawn from ``random.Random(seed)``, one draw per such call.
        burst_length: a failure starts a burst: that call and the next ``burst_length - 1`` calls
            with the same cursor fail (int >= 1). Retries need ``attempts > burst_length``.
        repeated_cursor: k (int >= 1) or None. Page k+1 hands back, as its next cursor, the cursor
            it was fetched with (after page k the store hands out page k's cursor again: T -> T).
            Fires only if page k+1 exists. Loses every page after page k+1.
        cursor_cycle: j (int >= 2) or None. The last page points back to page j's cursor instead
            of None (A -> B -> A); j past the last page means the last page points to itself. No
            effect on a one-page store. Loses nothing.
        wrap_around: after the last page the store serves page 1 again under a fresh cursor, and
            on, round after round, forever. Loses nothing (the load ends with no_progress).
            Exclusive with cursor_cycle. Over an empty store with ``empty_page_ends=False`` every
            page is empty, so only ``max_pages`` ends that walk.
        empty_page: k (int >= 1) or None. Page k points to an empty page carrying a cursor, which
            points to page k+1. Fires only if page k+1 exists ("in the middle"). By default the
            load ends on it and loses pages k+1..; with ``empty_page_ends=False`` nothing is lost.
        overlap: N (int >= 0). Each page after the first starts N messages before the previous
            page ended (an offset store after an insert); needs N < page_size. Loses nothing.
        seed: seeds ``random.Random`` for the failures: same seed, same calls -> same faults.

    Raises:
        TypeError / ValueError: a field of the wrong type or value (names the field and value).

    >>> FaultConfig(failure_rate=0.2, burst_length=3).burst_length
    3
    >>> FaultConfig(failure_rate=1.5)
    Traceback (most recent call last):
    ...
    ValueError: FaultConfig.failure_rate must be in [0, 1], got 1.5
    """

    failure_rate: float = 0.0
    burst_length: int = 1
    repeated_cursor: int | None = None
    cursor_cycle: int | None = None
    wrap_around: bool = False
    empty_page: int | None = None
    overlap: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        rate = self.failure_rate
        if not _is_number(rate):
            raise TypeError(f"FaultConfig.failure_rate must be a number, got {rate!r}")
        if not 0 <= rate <= 1:  # also rejects NaN
            raise ValueError(f"FaultConfig.failure_rate must be in [0, 1], got {rate!r}")
        self._check_int("burst_length", self.burst_length, 1)
        for name, low in (("repeated_cursor", 1), ("cursor_cycle", 2), ("empty_page", 1)):
            value = getattr(self, name)
            if value is not None:
                self._check_int(name, value, low, or_none=True)
        if not isinstance(self.wrap_around, bool):
            raise TypeError(f"FaultConfig.wrap_around must be a bool, got {self.wrap_around!r}")
        if self.wrap_around and self.cursor_cycle is not None:
            raise ValueError(
                f"FaultConfig.cursor_cycle={self.cursor_cycle!r} and wrap_around=True both decide "
                f"where the last page points; choose one"
            )
        self._check_int("overlap", self.overlap, 0)
        if not _is_int(self.seed):
            raise TypeError(f"FaultConfig.seed must be an int, got {self.seed!r}")

    @staticmethod
    def _check_int(name: str, value: Any, low: int, or_none: bool = False) -> None:
        what = "an int or None" if or_none else "an int"
        if not _is_int(value):
            raise TypeError(f"FaultConfig.{name} must be {what}, got {value!r}")
        if value < low:
            raise ValueError(f"FaultConfig.{name} must be >= {low}, got {value!r}")

    @property
    def walk_faults(self) -> tuple[str, ...]:
        """The faults set here that change the cursor walk (they need a PagedStore to wrap)."""
        names = []
        if self.repeated_cursor is not None:
            names.append(FAULT_REPEATED_CURSOR)
        if self.cursor_cycle is not None:
            names.append(FAULT_CURSOR_CYCLE)
        if self.wrap_around:
            names.append(FAULT_WRAP_AROUND)
        if self.empty_page is not None:
            names.append(FAULT_EMPTY_PAGE)
        if self.overlap:
            names.append(FAULT_OVERLAP)
        return tuple(names)


@dataclass(frozen=True, slots=True)
class FlakyCall:
    """One call a :class:`FlakyStore` received.

    Attributes:
        index: 0-based position of the call.
        cursor: the cursor passed.
        outcome: ``"ok"``, ``"transient"`` (a TransientError, injected or from the wrapped store) or
            ``"error"`` (any other exception, e.g. an unknown cursor).
        faults: names of the injected faults this call shows (see :data:`FAULT_NAMES`), or ().
        at: the virtual clock's time when the call came in, or None without a clock.
        page_size: messages returned (0 when the call raised).
        next_cursor: the cursor returned (None when the call raised).
    """

    index: int
    cursor: Any
    outcome: str
    faults: tuple[str, ...]
    at: float | None
    page_size: int = 0
    next_cursor: Any = None

    @property
    def fault(self) -> str | None:
        """The injected faults joined by ``"+"``, or None when there were none."""
        return "+".join(self.faults) or None


class FlakyStore:
    """Seeded fault injection around a store; records every call.

    ``FlakyStore(fetch_page_or_store, faults, clock=None)`` is itself a ``fetch_page``: pass it to
    ``load_history``. Design:

    * Transient failures (``failure_rate``, ``burst_length``) work over any ``fetch_page``: before a
      call reaches the wrapped store, a burst in progress on that cursor fails it; otherwise one
      draw from ``random.Random(seed)`` decides whether it fails and starts a new burst. The
      wrapped store is not called for a failed call.
    * Faults that change the cursor walk (``repeated_cursor``, ``cursor_cycle``, ``wrap_around``,
      ``empty_page``, ``overlap``) need a :class:`PagedStore`: FlakyStore then serves its own paged
      view over the PagedStore's messages and page size (the PagedStore itself is not called),
      with opaque cursors ``"p<offset>"``, ``"e<offset>"`` for an injected empty page before the
      page at ``offset``, and ``"w<round>:..."`` for the rounds of a wrap-around. A cursor it never
      issued raises ValueError. With no walk fault the view pages exactly like the PagedStore.
      Each fault's exact rule and data loss are on :class:`FaultConfig` and in
      :data:`FAULT_EFFECTS`.
    * Same seed and same calls give the same faults: a run is reproducible from its settings.

    Attributes:
        calls: every call, a list of :class:`FlakyCall`.
        truth: the wrapped PagedStore's messages (what a correct load returns), or None when the
            wrapped thing is a plain ``fetch_page``.
        fired: the names of the faults that showed up so far, in order of first appearance.

    Raises:
        TypeError: ``faults`` not a FaultConfig, the wrapped thing not callable, a bad clock.
        ValueError: a walk fault over a plain ``fetch_page``; ``overlap >= page_size``.

    O(1) per call plus the page served; memory O(calls + cursors issued).

    >>> from convmem import Message, load_history
    >>> truth = [Message(f"m{i}", "user", 1) for i in range(6)]
    >>> store = FlakyStore(PagedStore(truth, 2), FaultConfig(empty_page=1))
    >>> [m.id for m in load_history(store)]
    ['m0', 'm1']
    >>> [(c.cursor, c.page_size, c.next_cursor, c.fault) for c in store.calls]
    [(None, 2, 'e2', None), ('e2', 0, 'p2', 'empty_page')]
    >>> store = FlakyStore(PagedStore(truth, 2), FaultConfig(empty_page=1))
    >>> print(store.explain_loss(load_history(store)))  # doctest: +ELLIPSIS
    lost 4 of 6 messages because empty_page loses every page after the empty one ...
    """

    def __init__(
        self,
        fetch_page_or_store: Any,
        faults: FaultConfig | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if faults is None:
            faults = FaultConfig()
        if not isinstance(faults, FaultConfig):
            raise TypeError(f"FlakyStore: faults must be a FaultConfig, got {faults!r}")
        if clock is not None and not callable(clock):
            raise TypeError(f"FlakyStore: clock must be a VirtualClock or callable, got {clock!r}")
        self.faults = faults
        self.clock = clock
        self.calls: list[FlakyCall] = []
        self._rng = _random.Random(faults.seed)
        self._burst: dict[Any, int] = {}
        self._fired: dict[str, None] = {}
        self._paged: PagedStore | None = None
        self._fetch: Callable[[Any], Any] | None = None
        if isinstance(fetch_page_or_store, PagedStore):
            store = fetch_page_or_store
            if faults.overlap >= store.page_size:
                raise ValueError(
                    f"FlakyStore: FaultConfig.overlap={faults.overlap!r} must be below the "
                    f"PagedStore's page_size={store.page_size!r}, or pages never advance"
                )
            self._paged = store
            self._messages = store.messages
            self._size = store.page_size
            self._stride = store.page_size - faults.overlap
            n = len(self._messages)
            self._pages = 1 if n <= self._size else 1 + -(-(n - self._size) // self._stride)
            self._cursors: dict[Any, tuple[int, str, int]] = {}
        elif callable(fetch_page_or_store):
            if faults.walk_faults:
                name = faults.walk_faults[0]
                raise ValueError(
                    f"FlakyStore: FaultConfig.{name}={getattr(faults, name)!r} changes the cursor "
                    f"walk, which needs a PagedStore to wrap; got {fetch_page_or_store!r}"
                )
            self._fetch = fetch_page_or_store
        else:
            raise TypeError(
                "FlakyStore: wrap a PagedStore or a fetch_page callable, got "
                f"{fetch_page_or_store!r}"
            )

    # -- public views ----------------------------------------------------------------------------

    @property
    def truth(self) -> list[Message] | None:
        """The wrapped PagedStore's messages, or None over a plain fetch_page."""
        return None if self._paged is None else list(self._messages)

    @property
    def fired(self) -> tuple[str, ...]:
        """Fault names seen in the calls so far, in order of first appearance."""
        return tuple(self._fired)

    @property
    def page_count(self) -> int | None:
        """Pages in one round of the paged view (None over a plain fetch_page)."""
        return None if self._paged is None else self._pages

    def rng_for_jitter(self) -> _random.Random:
        """A ``random.Random`` for load_history's jitter, seeded from this store's seed.

        Separate from the fault stream, so changing retry settings never changes which calls fail.
        """
        return _random.Random(f"jitter:{self.faults.seed}")

    def explain_loss(self, loaded: Sequence[Message | str], *, empty_page_ends: bool = True) -> str:
        """One sentence for the dashboard: what ``loaded`` lost or repeated against the truth, and
        which fired fault explains it. Needs a wrapped PagedStore. O(loaded + truth)."""
        if self._paged is None:
            raise ValueError("FlakyStore.explain_loss needs a wrapped PagedStore (no truth)")
        diff = compare_to_truth(loaded, self._messages)
        if diff.ok:
            n = diff.truth_count
            return f"nothing lost, nothing repeated: {n} of {n} loaded"
        parts = []
        if diff.lost:
            lossy = [FAULT_REPEATED_CURSOR] + ([FAULT_EMPTY_PAGE] if empty_page_ends else [])
            causes = [f"{name} {FAULT_EFFECTS[name]}" for name in self._fired if name in lossy]
            because = "; ".join(causes) if causes else "the load ended early (see its stop reason)"
            parts.append(f"lost {len(diff.lost)} of {diff.truth_count} messages because {because}")
        if diff.repeated:
            parts.append(f"repeated {len(diff.repeated)} message(s)")
        if diff.extra:
            parts.append(f"{len(diff.extra)} message(s) not in the truth")
        if diff.out_of_order:
            parts.append("messages out of order")
        return "; ".join(parts)

    # -- the store -------------------------------------------------------------------------------

    def _record(self, cursor: Any, outcome: str, faults: tuple[str, ...], at: float | None,
                page_size: int = 0, next_cursor: Any = None) -> None:
        for name in faults:
            self._fired.setdefault(name, None)
        self.calls.append(
            FlakyCall(len(self.calls), cursor, outcome, faults, at, page_size, next_cursor)
        )

    def fetch_page(self, cursor: Any) -> tuple[list[Message], Any]:
        """Serve ``cursor``, or raise an injected TransientError; records the call."""
        at = None if self.clock is None else float(self.clock())
        place = None
        if self._paged is not None:
            place = self._resolve(cursor)
            if place is None:
                self._record(cursor, "error", (), at)
                raise ValueError(f"FlakyStore: unknown cursor {cursor!r} (never issued)")
        remaining = self._burst.get(cursor, 0)
        if remaining > 0:
            fail = True
            self._burst[cursor] = remaining - 1
        else:
            fail = self._rng.random() < self.faults.failure_rate
            if fail:
                self._burst[cursor] = self.faults.burst_length - 1
        if fail:
            self._record(cursor, "transient", (FAULT_TRANSIENT,), at)
            where = "the first page (cursor None)" if cursor is None else f"cursor {cursor!r}"
            raise TransientError(f"injected transient failure at {where} (call #{len(self.calls)}, counted from 1)")
        if place is not None:
            page, next_cursor, faults = self._serve(cursor, *place)
            self._record(cursor, "ok", faults, at, len(page), next_cursor)
            return page, next_cursor
        assert self._fetch is not None
        try:
            result = self._fetch(cursor)
        except TransientError:
            self._record(cursor, "transient", (), at)
            raise
        except Exception:
            self._record(cursor, "error", (), at)
            raise
        size, next_cursor = 0, None
        if isinstance(result, tuple) and len(result) == 2:
            next_cursor = result[1]
            try:
                size = len(result[0])
            except TypeError:
                size = 0
        self._record(cursor, "ok", (), at, size, next_cursor)
        return result

    __call__ = fetch_page

    # -- the paged view --------------------------------------------------------------------------

    def _cursor(self, round_: int, kind: str, index: int) -> str | None:
        """The cursor of page ``index`` (kind "p") or of the empty page before it (kind "e")."""
        if round_ == 0 and kind == "p" and index == 0:
            return None
        text = f"{kind}{index * self._stride}"
        if round_:
            text = f"w{round_}:{text}"
        self._cursors[text] = (round_, kind, index)
        return text

    def _resolve(self, cursor: Any) -> tuple[int, str, int] | None:
        if cursor is None:
            return (0, "p", 0)
        try:
            return self._cursors.get(cursor)
        except TypeError:  # unhashable
            return None

    def _serve(
        self, cursor: Any, round_: int, kind: str, index: int
    ) -> tuple[list[Message], Any, tuple[str, ...]]:
        cfg = self.faults
        faults: list[str] = []
        if round_ > 0:
            faults.append(FAULT_WRAP_AROUND)
        if kind == "e":
            faults.append(FAULT_EMPTY_PAGE)
            return [], self._cursor(round_, "p", index), tuple(faults)
        start = index * self._stride
        page = list(self._messages[start : start + self._size])
        if index > 0 and cfg.overlap:
            faults.append(FAULT_OVERLAP)
        last = index == self._pages - 1
        if cfg.repeated_cursor is not None and index == cfg.repeated_cursor:
            # page k+1 (0-based index k) hands back the cursor it was fetched with.
            faults.append(FAULT_REPEATED_CURSOR)
            next_cursor = cursor
        elif last:
            if cfg.cursor_cycle is not None and self._pages >= 2:
                faults.append(FAULT_CURSOR_CYCLE)
                next_cursor = self._cursor(round_, "p", min(cfg.cursor_cycle, self._pages) - 1)
            elif cfg.wrap_around:
                next_cursor = self._cursor(round_ + 1, "p", 0)
            else:
                next_cursor = None
        elif cfg.empty_page is not None and index == cfg.empty_page - 1:
            next_cursor = self._cursor(round_, "e", index + 1)
        else:
            next_cursor = self._cursor(round_, "p", index + 1)
        return page, next_cursor, tuple(faults)

    def __repr__(self) -> str:
        inner = self._paged if self._paged is not None else self._fetch
        return f"FlakyStore({inner!r}, {self.faults!r}, calls={len(self.calls)})"

