"""Test doubles shipped with convmem: a virtual clock and fake paged stores (like httpx's
MockTransport).

They make ``load_history`` runs exact and instant, in tests and in the dashboard's Flaky store page:

* :class:`VirtualClock` - inject as ``sleep=`` and ``clock=``; no real time passes.
* :class:`PagedStore` - an in-memory store over a list of messages, ``page_size`` per page.
* :class:`ScriptedStore` - a store from a script ``cursor -> responses`` (the CASES.md notation).
* :class:`FaultConfig` + :class:`FlakyStore` - seeded, deterministic fault injection over a store:
  transient failures (with bursts), repeated cursors, cursor cycles, wrap-around, empty pages,
  overlapping pages. Every call is recorded.
* :func:`compare_to_truth` - what a load lost, repeated or reordered against the store's truth.

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

from __future__ import annotations

import math
import random as _random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import TransientError
from .message import Message

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
    "PagedStore",
    "ScriptedStore",
    "TruthDiff",
    "VirtualClock",
    "compare_to_truth",
]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# -- the clock -------------------------------------------------------------------------------------


class VirtualClock:
    """A clock that only moves when something sleeps on it.

    ``clock.now`` is the time in seconds; ``clock.sleep(s)`` advances it by ``s`` and records ``s``
    in ``clock.sleeps``; ``clock()`` and ``clock.monotonic()`` return ``now``. Pass
    ``sleep=clock.sleep, clock=clock`` to ``load_history``.

    >>> clock = VirtualClock()
    >>> clock.sleep(0.25); clock.sleep(1)
    >>> clock(), clock.sleeps, clock.slept
    (1.25, [0.25, 1.0], 1.25)
    >>> clock.sleep(-1)
    Traceback (most recent call last):
    ...
    ValueError: VirtualClock.sleep: seconds must be a finite number >= 0, got -1
    """

    __slots__ = ("now", "sleeps")

    def __init__(self, start: float = 0.0) -> None:
        if not _is_number(start):
            raise TypeError(f"VirtualClock: start must be a number of seconds, got {start!r}")
        if not math.isfinite(start):
            raise ValueError(f"VirtualClock: start must be finite, got {start!r}")
        self.now: float = float(start)
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        """Advance ``now`` by ``seconds`` (a finite number >= 0) and record it."""
        if not _is_number(seconds):
            raise TypeError(f"VirtualClock.sleep: seconds must be a number, got {seconds!r}")
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(
                f"VirtualClock.sleep: seconds must be a finite number >= 0, got {seconds!r}"
            )
        seconds = float(seconds)
        self.sleeps.append(seconds)
        self.now += seconds

    def monotonic(self) -> float:
        """The current time, seconds."""
        return self.now

    __call__ = monotonic

    @property
    def slept(self) -> float:
        """Total seconds slept (``math.fsum`` of ``sleeps``)."""
        return math.fsum(self.sleeps)

    def __repr__(self) -> str:
        return f"VirtualClock(now={self.now!r}, sleeps={len(self.sleeps)})"


# -- validation of message lists -------------------------------------------------------------------


def _message_tuple(owner: str, messages: Any) -> tuple[Message, ...]:
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise TypeError(f"{owner}: messages must be a list of Message, got {messages!r}")
    seen: set[str] = set()
    for position, message in enumerate(messages):
        if not isinstance(message, Message):
            raise TypeError(
                f"{owner}: messages[{position}] must be a Message, got {message!r}"
            )
        if message.id in seen:
            raise ValueError(f"{owner}: messages[{position}] repeats the id {message.id!r}")
        seen.add(message.id)
    return tuple(messages)


# -- PagedStore ------------------------------------------------------------------------------------


class PagedStore:
    """An in-memory paged store over ``messages`` (oldest first), ``page_size`` messages per page.

    ``fetch_page(cursor)`` (also ``store(cursor)``) returns ``(page, next_cursor)``: the first page
    for ``None``, then opaque string cursors ``"p<offset>"`` (``"p3"`` is the page starting at
    message 3); the last page's next cursor is ``None``. An empty store serves one empty page.
    Every cursor passed is appended to ``calls``. O(page_size) per call.

    Raises:
        TypeError: ``messages`` is not a list of Message, ``page_size`` not an int.
        ValueError: ``page_size < 1``, a repeated message id; ``fetch_page`` with a cursor this
            store never issues (names the cursor).

    >>> from convmem import Message
    >>> store = PagedStore([Message(f"m{i}", "user", 1) for i in range(5)], 2)
    >>> page, nxt = store.fetch_page(None); [m.id for m in page], nxt
    (['m0', 'm1'], 'p2')
    >>> page, nxt = store("p4"); [m.id for m in page], nxt
    (['m4'], None)
    >>> store.calls, store.page_count
    ([None, 'p4'], 3)
    >>> store("p3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: PagedStore: unknown cursor 'p3' (expected None or 'p<offset>' with offset a ...)
    """

    def __init__(self, messages: Sequence[Message], page_size: int) -> None:
        self.messages: tuple[Message, ...] = _message_tuple("PagedStore", messages)
        if not _is_int(page_size):
            raise TypeError(f"PagedStore: page_size must be an int, got {page_size!r}")
        if page_size < 1:
            raise ValueError(f"PagedStore: page_size must be >= 1, got {page_size!r}")
        self.page_size = page_size
        self.calls: list[Any] = []

    @property
    def truth(self) -> list[Message]:
        """Every message, in order: what a correct load returns."""
        return list(self.messages)

    @property
    def page_count(self) -> int:
        """Pages a full walk serves (1 for an empty store)."""
        return max(1, -(-len(self.messages) // self.page_size))

    def _offset(self, cursor: Any) -> int:
        if cursor is None:
            return 0
        n = len(self.messages)
        if isinstance(cursor, str) and cursor[:1] == "p" and cursor[1:].isdigit():
            offset = int(cursor[1:])
            if f"p{offset}" == cursor and 0 < offset < n and offset % self.page_size == 0:
                return offset
        raise ValueError(
            f"PagedStore: unknown cursor {cursor!r} (expected None or 'p<offset>' with offset a "
            f"positive multiple of {self.page_size} below {n})"
        )

    def fetch_page(self, cursor: str | None) -> tuple[list[Message], str | None]:
        """The page at ``cursor`` and the next cursor (None after the last page)."""
        self.calls.append(cursor)
        offset = self._offset(cursor)
        end = offset + self.page_size
        page = list(self.messages[offset:end])
        return page, (f"p{end}" if end < len(self.messages) else None)

    __call__ = fetch_page

    def __repr__(self) -> str:
        return f"PagedStore({len(self.messages)} messages, page_size={self.page_size})"


# -- ScriptedStore ---------------------------------------------------------------------------------


def _is_exception(value: Any) -> bool:
    return isinstance(value, BaseException) or (
        isinstance(value, type) and issubclass(value, BaseException)
    )


class ScriptedStore:
    """A fake store that follows a script: ``cursor -> response`` or ``cursor -> [responses]``.

    A response is ``(page, next_cursor)`` or an exception (instance or class) to raise. A page is a
    list of Message, or of str ids as shorthand for ``Message(id, "user", 1)``. The n-th call with a
    cursor gets its n-th response; the last response repeats forever (the CASES.md notation).
    Every cursor passed is appended to ``calls``; ``count(cursor)`` says how often one was passed.
    An exception class is raised as ``cls("scripted <Name> at cursor <cursor>")``.

    Raises:
        TypeError / ValueError: a malformed script (names the cursor and the response);
            ``fetch_page`` with a cursor the script does not have raises ValueError naming it.

    >>> from convmem import TransientError, load_history
    >>> store = ScriptedStore({None: (["m0", "m1"], "p2"),
    ...                        "p2": [TransientError, (["m2", "m3"], "p3")],
    ...                        "p3": (["m4", "m5"], None)})
    >>> [m.id for m in load_history(store, sleep=lambda s: None)]
    ['m0', 'm1', 'm2', 'm3', 'm4', 'm5']
    >>> store.calls, store.count("p2")
    ([None, 'p2', 'p2', 'p3'], 2)
    """

    def __init__(self, script: Mapping[Any, Any]) -> None:
        if not isinstance(script, Mapping):
            raise TypeError(
                f"ScriptedStore: script must be a dict cursor -> responses, got {script!r}"
            )
        self._script: dict[Any, list[Any]] = {}
        for cursor, value in script.items():
            responses = value if isinstance(value, list) else [value]
            if not responses:
                raise ValueError(f"ScriptedStore: cursor {cursor!r} has no responses")
            self._script[cursor] = [self._response(cursor, r) for r in responses]
        self._served: dict[Any, int] = dict.fromkeys(self._script, 0)
        self.calls: list[Any] = []

    @staticmethod
    def _response(cursor: Any, response: Any) -> Any:
        if _is_exception(response):
            return response
        if not isinstance(response, tuple) or len(response) != 2:
            raise TypeError(
                f"ScriptedStore: a response for cursor {cursor!r} must be (page, next_cursor) or "
                f"an exception, got {response!r}"
            )
        page, next_cursor = response
        if not isinstance(page, (list, tuple)):
            raise TypeError(
                f"ScriptedStore: the page for cursor {cursor!r} must be a list, got {page!r}"
            )
        messages = []
        for item in page:
            if isinstance(item, str):
                item = Message(item, "user", 1)
            elif not isinstance(item, Message):
                raise TypeError(
                    f"ScriptedStore: a page for cursor {cursor!r} holds {item!r}, not a Message or "
                    f"an id"
                )
            messages.append(item)
        try:
            hash(next_cursor)
        except TypeError:
            raise TypeError(
                f"ScriptedStore: next cursor {next_cursor!r} for cursor {cursor!r} is unhashable"
            ) from None
        return tuple(messages), next_cursor

    def fetch_page(self, cursor: Any) -> tuple[list[Message], Any]:
        """The next scripted response for ``cursor``: a page, or a raised exception."""
        self.calls.append(cursor)
        responses = self._script.get(cursor)
        if responses is None:
            raise ValueError(
                f"ScriptedStore: no script for cursor {cursor!r}; scripted cursors: "
                f"{list(self._script)!r}"
            )
        served = self._served[cursor]
        self._served[cursor] = served + 1
        response = responses[min(served, len(responses) - 1)]
        if isinstance(response, BaseException):
            raise response.with_traceback(None)
        if isinstance(response, type):
            raise response(f"scripted {response.__name__} at cursor {cursor!r}")
        page, next_cursor = response
        return list(page), next_cursor

    __call__ = fetch_page

    def count(self, cursor: Any) -> int:
        """How many times ``cursor`` was passed to ``fetch_page``. O(calls)."""
        return sum(1 for c in self.calls if c == cursor and type(c) is type(cursor))

    def __repr__(self) -> str:
        return f"ScriptedStore({len(self._script)} cursors, {len(self.calls)} calls)"


# -- faults ----------------------------------------------------------------------------------------

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
            raise TransientError(f"injected transient failure at {where} (call {len(self.calls) - 1})")
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


# -- compare to truth ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TruthDiff:
    """How a loaded history differs from the store's truth (by message id).

    Attributes:
        lost: ids of the truth missing from the load, in truth order.
        repeated: ids the load holds more than once, each once, in the order the repeat appeared.
        extra: ids the load holds that the truth does not, in load order.
        out_of_order: the loaded ids that are in the truth are not in truth order.
        loaded_count: messages in the load (with repeats).
        truth_count: messages in the truth.
        ok: nothing lost, repeated, extra or out of order.
    """

    lost: tuple[str, ...]
    repeated: tuple[str, ...]
    extra: tuple[str, ...]
    out_of_order: bool
    loaded_count: int
    truth_count: int
    ok: bool = field(init=False)

    def __post_init__(self) -> None:
        ok = not (self.lost or self.repeated or self.extra or self.out_of_order)
        object.__setattr__(self, "ok", ok)


def _ids(name: str, items: Any) -> list[str]:
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise TypeError(
            f"compare_to_truth: {name} must be a list of Message or str ids, got {items!r}"
        )
    ids = []
    for position, item in enumerate(items):
        if isinstance(item, Message):
            ids.append(item.id)
        elif isinstance(item, str):
            ids.append(item)
        else:
            raise TypeError(
                f"compare_to_truth: {name}[{position}] must be a Message or a str id, got {item!r}"
            )
    return ids


def compare_to_truth(loaded: Sequence[Message | str], truth: Sequence[Message | str]) -> TruthDiff:
    """Compare a loaded history with the truth, by id. O(len(loaded) + len(truth)).

    Both are lists of Message (or of str ids). The truth must not repeat an id (ValueError).

    >>> diff = compare_to_truth(["m1", "m3", "m3"], ["m1", "m2", "m3"])
    >>> diff.lost, diff.repeated, diff.extra, diff.out_of_order, diff.ok
    (('m2',), ('m3',), (), False, False)
    >>> compare_to_truth(["b", "a"], ["a", "b"]).out_of_order
    True
    """
    loaded_ids = _ids("loaded", loaded)
    truth_ids = _ids("truth", truth)
    position: dict[str, int] = {}
    for i, id_ in enumerate(truth_ids):
        if id_ in position:
            raise ValueError(f"compare_to_truth: truth repeats the id {id_!r}")
        position[id_] = i
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    extra: list[str] = []
    out_of_order = False
    last = -1
    for id_ in loaded_ids:
        if id_ in seen:
            repeated.setdefault(id_, None)
            continue
        seen.add(id_)
        where = position.get(id_)
        if where is None:
            extra.append(id_)
        else:
            if where < last:
                out_of_order = True
            last = where
    lost = tuple(id_ for id_ in truth_ids if id_ not in seen)
    return TruthDiff(
        lost=lost,
        repeated=tuple(repeated),
        extra=tuple(extra),
        out_of_order=out_of_order,
        loaded_count=len(loaded_ids),
        truth_count=len(truth_ids),
    )
