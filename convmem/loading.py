"""Part 1: load a conversation page by page from a store that fails now and then (SPEC §3).

``load_history(fetch_page)`` walks a paged store, oldest page first, and returns every message once,
in conversation order. ``fetch_page(cursor) -> (list[Message], next_cursor | None)``; the first call
passes ``None``.

The walk has one exit and always ends. After each *successful* call it stops when, in this order:

1. the page is empty (``"empty_page"``; with ``empty_page_ends=False`` an empty page that carries a
   cursor is followed instead, and an empty page whose cursor is ``None`` then ends with ``"end"``);
2. ``next_cursor`` is ``None`` (``"end"``);
3. ``next_cursor`` was already requested at any time in this run, not just the last one, so a stuck
   cursor (T -> T) and a cycle (A -> B -> A) both end here (``"repeated_cursor"``);
4. a non-empty page added no message with a new id, as when a store wraps around to its first page
   under fresh cursors (``"no_progress"``);
5. the number of successful pages reaches ``max_pages`` (``"page_cap"``).

The messages of the page that triggers the stop are kept (de-duplicated as always). Messages are
de-duplicated by id, first occurrence kept, also within one page.

Retries wrap the single call, never the walk: a failed call is retried with the same cursor by a
``tenacity.Retrying``, so a retried page is never added twice. The first attempt of each call is
made directly; tenacity is entered only when it fails with a retryable error, and is handed that
failure, so its decisions, sleeps and random draws are the same as if it had made the call. Only :class:`~convmem.TransientError`
and the types in ``retry_on`` are retried; any other exception propagates at once, unretried, and
nothing sleeps. Backoff is exponential with full jitter: the delay before the retry that follows the
``k``-th failure of a call (``k = 0, 1, ...``) is ``random() * min(max_delay, base_delay * 2**k)``,
drawn from the injected random source. When a call keeps failing (``attempts`` used up, or the next
sleep would pass the ``deadline``), :class:`~convmem.PageLoadError` is raised with the cursor, the
attempt count, the messages loaded so far, the run's :class:`LoadReport`, and the last error as
``__cause__``; a partial history is never returned silently.

Time, in seconds, is read from the injected ``clock`` and spent through the injected ``sleep``, so a
:class:`~convmem.testing.VirtualClock` runs the whole thing with no real waiting.

>>> from convmem import Message
>>> pages = {None: (["m1", "m2"], "c1"), "c1": (["m3"], "c2"), "c2": ([], None)}
>>> def fetch_page(cursor):
...     ids, nxt = pages[cursor]
...     return [Message(i, "user", 1) for i in ids], nxt
>>> [m.id for m in load_history(fetch_page)]
['m1', 'm2', 'm3']
>>> messages, report = load_history_with_report(fetch_page)
>>> report.stop_reason, report.pages, [c.cursor for c in report.calls]
('empty_page', 3, [None, 'c1', 'c2'])

Streaming: :func:`iter_pages` (and :func:`iter_messages`) run the very same walk and hand each
page's new messages over as they come, for a caller that must not hold the whole history;
``load_history`` is that iterator with the pages collected (one loop, not two). A load that failed
with :class:`~convmem.PageLoadError` resumes with ``resume=error``, ending with exactly what one
clean load returns.

Complexity: O(messages + pages) time (plus the calls the retries make) and O(messages + distinct
cursors) memory (streaming: O(page + distinct cursors + ids seen); O(page + distinct cursors) with
``unique_ids=True``); the report keeps one small record per call, at most ``attempts`` per page. Errors
describe foreign objects (a bad return value, a cursor, an error's text) in at most
:data:`DESCRIBE_LIMIT` characters, in time independent of their size.
"""

from __future__ import annotations

import math
import random as _random
import reprlib
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type
from tenacity import stop_after_attempt
from tenacity.stop import stop_base

from .errors import PageLoadError, TransientError
from .message import Message
from .outcomes import CallOutcome, LoadFailure, StopReason

__all__ = [
    "CallRecord",
    "DESCRIBE_LIMIT",
    "FAILURE_ATTEMPTS",
    "FAILURE_DEADLINE",
    "FAILURE_ERROR",
    "FAILURES",
    "LoadReport",
    "LoadedPage",
    "OUTCOMES",
    "CallOutcome",
    "LoadFailure",
    "StopReason",
    "STOP_CLOSED",
    "STOP_EMPTY_PAGE",
    "STOP_END",
    "STOP_NO_PROGRESS",
    "STOP_PAGE_CAP",
    "STOP_REASONS",
    "STOP_REPEATED_CURSOR",
    "backoff_bound",
    "iter_messages",
    "iter_pages",
    "load_history",
    "load_history_with_report",
]

# -- stop reasons, in the order they are checked ---------------------------------------------------

#: The page was empty (checked first; see ``empty_page_ends``).
STOP_EMPTY_PAGE = StopReason.EMPTY_PAGE
#: The store said there is no next page (``next_cursor is None``).
STOP_END = StopReason.END
#: ``next_cursor`` was already requested in this run (stuck cursor or cycle).
STOP_REPEATED_CURSOR = StopReason.REPEATED_CURSOR
#: A non-empty page brought no message with a new id (a store wrapping around).
STOP_NO_PROGRESS = StopReason.NO_PROGRESS
#: ``max_pages`` successful pages were loaded.
STOP_PAGE_CAP = StopReason.PAGE_CAP
#: Every stop reason, in the order the rules are checked after each page.
STOP_REASONS: tuple[StopReason, ...] = (
    STOP_EMPTY_PAGE,
    STOP_END,
    STOP_REPEATED_CURSOR,
    STOP_NO_PROGRESS,
    STOP_PAGE_CAP,
)

# -- why a run raised instead of stopping (LoadReport.failure) -------------------------------------

#: A call failed with a retryable error ``attempts`` times: PageLoadError.
FAILURE_ATTEMPTS = LoadFailure.ATTEMPTS
#: A call failed with a retryable error and the next sleep would pass the deadline: PageLoadError.
FAILURE_DEADLINE = LoadFailure.DEADLINE
#: A call raised a non-retryable error, or returned something that is not a page: it propagated.
FAILURE_ERROR = LoadFailure.ERROR
#: Every failure kind.
FAILURES: tuple[LoadFailure, ...] = (FAILURE_ATTEMPTS, FAILURE_DEADLINE, FAILURE_ERROR)

#: CallRecord.outcome values: a page came back; a retryable error; any other error.
OUTCOMES: tuple[CallOutcome, ...] = tuple(CallOutcome)


def backoff_bound(k: int, base_delay: float, max_delay: float) -> float:
    """The largest delay (seconds) full jitter may draw before the retry after the k-th failure.

    ``min(max_delay, base_delay * 2**k)`` for ``k = 0, 1, ...``; never overflows for large ``k``.

    >>> [backoff_bound(k, 0.1, 0.5) for k in range(4)]
    [0.1, 0.2, 0.4, 0.5]
    >>> backoff_bound(5000, 0.1, 10.0)
    10.0
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"backoff_bound: k must be a non-negative int, got {k!r}")
    _check_seconds("base_delay", base_delay)
    _check_seconds("max_delay", max_delay)
    if base_delay == 0:
        return 0.0
    # 2.0 ** 1023 is the largest power of two a float holds; past it the bound is max_delay anyway.
    return float(min(max_delay, base_delay * 2.0 ** min(k, 1023)))


# -- the report -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One call of ``fetch_page`` (one attempt), as the run saw it. Immutable.

    Attributes:
        index: 0-based position of this call in the run.
        cursor: the cursor passed to ``fetch_page``.
        attempt: 1-based attempt number for this cursor (retries of one call share the cursor).
        outcome: ``"ok"`` (a page came back), ``"transient"`` (a retryable error: TransientError or
            a ``retry_on`` type) or ``"error"`` (any other error, or a malformed return value).
        page_size: messages on the page (0 when the call failed).
        new_messages: messages of the page whose id was new (0 when the call failed).
        duplicates: messages of the page skipped as already loaded (0 when the call failed).
        next_cursor: the cursor the page pointed to (None when the call failed).
        error: ``"TypeName: message"`` of the error, or None.
        started_at: when the call started, in seconds since the run started, on the injected clock.
        delay_after: the backoff sleep (seconds) after this failed call before its retry, or None
            when no retry followed (success, non-retryable error, or the last attempt).
    """

    index: int
    cursor: Any
    attempt: int
    outcome: str
    page_size: int
    new_messages: int
    duplicates: int
    next_cursor: Any
    error: str | None
    started_at: float
    delay_after: float | None


class LoadReport:
    """What one ``load_history`` run did; the dashboard draws from it.

    Pass a fresh ``LoadReport()`` as ``report=`` to have it filled (it is also on
    ``PageLoadError.report``), or use :func:`load_history_with_report`. The loader fills it while it
    runs; everything it exposes is read-only (sequences come back as tuples).

    Attributes (read-only):
        calls: every call, a tuple of :class:`CallRecord` in order.
        delays: every backoff sleep, seconds, in order (one per retry).
        pages: successful calls.
        retries: calls that were retries of a failed call (``== len(delays)``).
        transient_failures: calls that failed with a retryable error.
        duplicates_skipped: messages skipped because their id was already loaded.
        messages_loaded: distinct messages loaded.
        stop_reason: one of :data:`STOP_REASONS`, or None while running or when the run raised,
            or :data:`STOP_CLOSED` when the consumer of :func:`iter_pages` stopped early.
        failure: one of :data:`FAILURES` when the run raised, else None.
        error: ``"TypeName: message"`` of what the run raised, else None.
        elapsed: seconds on the injected clock from the start to the end of the run (None while
            running).
        finished: True once the run returned or raised.

    >>> r = LoadReport()
    >>> r.calls, r.stop_reason, r.finished
    ((), None, False)
    """

    __slots__ = (
        "_calls",
        "_built",
        "_delays",
        "_pages",
        "_transient_failures",
        "_duplicates_skipped",
        "_messages_loaded",
        "_stop_reason",
        "_failure",
        "_error",
        "_elapsed",
        "_started",
    )

    def __init__(self) -> None:
        # CallRecords, or (when nobody listens to events) the same fields as a plain tuple: a
        # successful call is recorded cheaply and turned into a CallRecord when first read.
        self._calls: list[CallRecord | tuple[Any, ...]] = []
        self._built = 0
        self._delays: list[float] = []
        self._pages = 0
        self._transient_failures = 0
        self._duplicates_skipped = 0
        self._messages_loaded = 0
        self._stop_reason: str | None = None
        self._failure: str | None = None
        self._error: str | None = None
        self._elapsed: float | None = None
        self._started = False

    def _records(self) -> list[CallRecord]:
        """The calls as CallRecords; builds those recorded as tuples once, in place."""
        calls = self._calls
        for i in range(self._built, len(calls)):
            record = calls[i]
            if record.__class__ is tuple:
                calls[i] = CallRecord(*record)
        self._built = len(calls)
        return calls  # type: ignore[return-value]

    calls = property(
        lambda self: tuple(self._records()), doc="Every call, in order (CallRecord)."
    )
    delays = property(lambda self: tuple(self._delays), doc="Every backoff sleep, seconds.")
    pages = property(lambda self: self._pages, doc="Successful calls.")
    retries = property(lambda self: len(self._delays), doc="Calls that retried a failed call.")
    transient_failures = property(
        lambda self: self._transient_failures, doc="Calls that failed with a retryable error."
    )
    duplicates_skipped = property(
        lambda self: self._duplicates_skipped, doc="Messages skipped as already loaded."
    )
    messages_loaded = property(lambda self: self._messages_loaded, doc="Distinct messages loaded.")
    stop_reason = property(lambda self: self._stop_reason, doc="One of STOP_REASONS, or None.")
    failure = property(lambda self: self._failure, doc="One of FAILURES when the run raised.")
    error = property(lambda self: self._error, doc="What the run raised, as 'Type: message'.")
    elapsed = property(lambda self: self._elapsed, doc="Seconds from start to end of the run.")
    finished = property(
        lambda self: self._elapsed is not None, doc="True once the run returned or raised."
    )

    def to_rows(self) -> list[dict[str, Any]]:
        """The calls as plain dicts (one per call), ready for ``pandas.DataFrame``. O(calls)."""
        return [asdict(c) for c in self._records()]

    def summary(self) -> dict[str, Any]:
        """The counters as a plain dict (no per-call data)."""
        return {
            "calls": len(self._calls),
            "pages": self._pages,
            "retries": self.retries,
            "transient_failures": self._transient_failures,
            "total_delay": math.fsum(self._delays),
            "duplicates_skipped": self._duplicates_skipped,
            "messages_loaded": self._messages_loaded,
            "stop_reason": self._stop_reason,
            "failure": self._failure,
            "error": self._error,
            "elapsed": self._elapsed,
        }

    def __repr__(self) -> str:
        return (
            f"LoadReport(calls={len(self._calls)}, pages={self._pages}, retries={self.retries}, "
            f"duplicates_skipped={self._duplicates_skipped}, "
            f"messages_loaded={self._messages_loaded}, stop_reason={self._stop_reason!r}, "
            f"failure={self._failure!r}, elapsed={self._elapsed!r})"
        )


# -- validation -----------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_seconds(name: str, value: Any) -> None:
    if not _is_number(value):
        raise TypeError(
            f"{name} must be a number of seconds (int or float), got {_bounded_repr(value)}"
        )
    if not math.isfinite(value) or value < 0:
        raise ValueError(
            f"{name} must be a finite number of seconds >= 0, got {_bounded_repr(value)}"
        )


def _check_count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {_bounded_repr(value)}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {_bounded_repr(value)}")


def _check_callable(name: str, value: Any) -> None:
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {_bounded_repr(value)}")


def _as_random(source: Any) -> Callable[[], float]:
    """Accept ``random.random``-like callables or ``random.Random``-like objects."""
    if callable(source):
        return source
    method = getattr(source, "random", None)
    if callable(method):
        return method
    raise TypeError(
        f"random must be a callable returning a float in [0, 1) (like random.random) or an object "
        f"with a .random() method (like random.Random(seed)), got {_bounded_repr(source)}"
    )


#: The longest description of a foreign object (an error, a cursor, a bad return value) that goes
#: into an error message or a report, in characters (issue 9: bounded in size and time).
DESCRIBE_LIMIT = 300

_repr = reprlib.Repr()
_repr.maxstring = DESCRIBE_LIMIT // 2
_repr.maxother = DESCRIBE_LIMIT // 2
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 4
_repr.maxlevel = 3


def _clip(text: str) -> str:
    if len(text) <= DESCRIBE_LIMIT:
        return text
    return f"{text[: DESCRIBE_LIMIT - 40]}... ({len(text):,} characters)"


def _bounded_repr(value: Any) -> str:
    """``repr(value)`` in at most DESCRIBE_LIMIT characters, in O(limit) time for containers.

    ``reprlib`` shows the first few items of a list/tuple/dict/set (and the nesting to depth 3), so
    a 10^6-item list costs as much as a 4-item one (its length is named); a ``__repr__`` that
    raises gives a placeholder.
    """
    try:
        text = _repr.repr(value)
    except Exception:
        text = f"<{type(value).__name__} object (repr failed)>"
    if len(text) > DESCRIBE_LIMIT - 40:
        text = f"{text[: DESCRIBE_LIMIT - 80]}..."
    if isinstance(value, (list, tuple, dict, set, frozenset)) and len(value) > _repr.maxlist:
        text = f"{text} ({type(value).__name__} of {len(value):,} items)"
    return _clip(text)


def _describe(exc: BaseException) -> str:
    """``"TypeName: message"`` of an error, bounded, and safe when its ``__str__`` raises."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:
        return f"{name}: <str() of the error raised>"
    return _clip(f"{name}: {text}") if text else name


def _check_page(result: Any, cursor: Any) -> tuple[Sequence[Message], Hashable, bool]:
    """Validate what fetch_page returned; a malformed page is a store bug, never transient.

    Returns ``(page, next_cursor, items_checked)``. The common shape (a 2-tuple holding a list or
    tuple, and a str, int or None cursor) is accepted at once with ``items_checked=False``: the
    caller then checks each item's class as it reads it (and calls :func:`_check_items` on the first
    one that is not exactly a Message). Anything else is checked item by item here, and every
    problem is named (the cursor, the position, a bounded description of what came back).
    """
    if result.__class__ is tuple and len(result) == 2:
        page, next_cursor = result
        if (page.__class__ is list or page.__class__ is tuple) and (
            next_cursor is None or next_cursor.__class__ is str or next_cursor.__class__ is int
        ):
            return page, next_cursor, False
    if not isinstance(result, tuple) or len(result) != 2:
        raise TypeError(
            f"fetch_page({_bounded_repr(cursor)}) must return a 2-tuple (list of Message, next "
            f"cursor or None), got {_bounded_repr(result)}"
        )
    page, next_cursor = result
    if not isinstance(page, Sequence) or isinstance(page, (str, bytes)):
        raise TypeError(
            f"fetch_page({_bounded_repr(cursor)}) returned a page that is not a list of Message: "
            f"{_bounded_repr(page)}"
        )
    _check_items(page, cursor)
    try:
        hash(next_cursor)
    except TypeError:
        raise TypeError(
            f"fetch_page({_bounded_repr(cursor)}) returned an unhashable next cursor "
            f"{_bounded_repr(next_cursor)}; cursors must be hashable (str, int, tuple, ...)"
        ) from None
    return page, next_cursor, True


def _read_result(result: Any) -> Any:
    """Read what fetch_page returned, as part of the (retried) call (docs/decisions.md, "Reading
    a page is part of the retried call").

    The common shape (a plain 2-tuple of a list or tuple and a str, int or None cursor) comes back
    as is. Another 2-tuple is unpacked, its page copied into a list and its cursor hashed here, so
    a lazy page or cursor that fails while being read fails inside the call (a TransientError is
    then retried with the same cursor; nothing of the page was added yet). Anything else comes
    back unchanged for :func:`_check_page` to reject. O(page size); raises what reading raised.
    """
    if result.__class__ is tuple and len(result) == 2:
        page, next_cursor = result
        if (page.__class__ is list or page.__class__ is tuple) and (
            next_cursor is None or next_cursor.__class__ is str or next_cursor.__class__ is int
        ):
            return result
    if not isinstance(result, tuple) or len(result) != 2:
        return result
    page, next_cursor = result
    if isinstance(page, Sequence) and not isinstance(page, (str, bytes)):
        page = list(page)
    try:
        hash(next_cursor)
    except TypeError:
        return page, next_cursor  # unhashable: _check_page names the cursor in its TypeError
    return page, next_cursor


def _check_items(page: Sequence[Any], cursor: Any) -> None:
    """TypeError naming the first item of ``page`` that is not a Message (subclasses are fine)."""
    for position, item in enumerate(page):
        if not isinstance(item, Message):
            raise TypeError(
                f"fetch_page({_bounded_repr(cursor)}) returned a page whose item {position} is "
                f"not a Message: {_bounded_repr(item)}"
            )


# -- tenacity strategies ---------------------------------------------------------------------------


class _FullJitter:
    """tenacity wait strategy: full jitter drawn from an injected random source.

    After the n-th failed attempt of a call (tenacity's ``attempt_number == n``), the sleep is
    ``random() * backoff_bound(n - 1, base, cap)``. When no retry can follow (attempts used up) it
    returns 0 without drawing, so the random stream is consumed once per actual retry (plus once per
    deadline check that ends the call).
    """

    def __init__(self, base: float, cap: float, rand: Callable[[], float], attempts: int) -> None:
        self.base, self.cap, self.rand, self.attempts = base, cap, rand, attempts

    def __call__(self, retry_state: RetryCallState) -> float:
        n = retry_state.attempt_number
        if n >= self.attempts:
            return 0.0
        bound = backoff_bound(n - 1, self.base, self.cap)
        r = self.rand()
        if not _is_number(r) or not 0 <= r <= 1:
            raise ValueError(f"random must return a number in [0, 1], got {_bounded_repr(r)}")
        return float(r) * bound


class _StopBeforeDeadline(stop_base):
    """tenacity stop strategy: stop when the upcoming sleep would end past the deadline.

    A retry is made only if ``elapsed + delay <= deadline`` where ``elapsed`` is seconds since the
    start of ``load_history`` on the injected clock; a sleep ending exactly at the deadline is fine.
    """

    def __init__(self, deadline: float, clock: Callable[[], float], start: float) -> None:
        self.deadline, self.clock, self.start = deadline, clock, start

    def __call__(self, retry_state: RetryCallState) -> bool:
        elapsed = self.clock() - self.start
        return elapsed + retry_state.upcoming_sleep > self.deadline


class _Call:
    """Per-call state shared by the attempt function and the tenacity hooks."""

    __slots__ = ("cursor", "attempt", "started_at", "exc", "replay")

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor
        self.attempt = 0
        self.started_at = 0.0
        self.exc: BaseException | None = None
        #: The first attempt failed outside tenacity; its first "attempt" re-raises that failure.
        self.replay = False


# -- the walk (one loop; load_history, iter_pages and iter_messages all run it) --------------------


@dataclass(frozen=True, slots=True)
class LoadedPage:
    """One successful page of a streamed load (what :func:`iter_pages` yields). Immutable.

    Attributes:
        index: 0-based position of this page among the run's successful pages.
        cursor: the cursor that was passed to ``fetch_page`` for it.
        next_cursor: the cursor the page pointed to (None at the end).
        messages: the page's messages whose id was new, in page order (a tuple; de-duplicated
            against every earlier page of the run, and within the page; with ``unique_ids=True``
            every message of the page).
        size: messages on the page as the store served it.
        duplicates: messages of the page skipped as already loaded (``size - len(messages)``).
    """

    index: int
    cursor: Any
    next_cursor: Any
    messages: tuple[Message, ...]
    size: int
    duplicates: int


#: LoadReport.stop_reason of a streamed run whose consumer stopped iterating (closed the iterator)
#: before a stop rule fired. Not one of :data:`STOP_REASONS`: no rule stopped the walk.
STOP_CLOSED = StopReason.CLOSED


class _Resume:
    """What a resumed walk starts from (taken from a PageLoadError)."""

    __slots__ = ("cursor", "loaded", "seen", "requested", "pages")

    def __init__(
        self, cursor: Any, loaded: list[Message], seen: set[str] | None, requested: set[Any],
        pages: int,
    ) -> None:
        self.cursor, self.loaded, self.seen = cursor, loaded, seen
        self.requested, self.pages = requested, pages


def _resume_from(error: Any) -> _Resume:
    """The state a load resumes from: the failed cursor, the messages loaded, the ids seen, the
    cursors requested and the pages loaded before the failure (a walk attaches them to the
    PageLoadError it raises; for one made by hand they are rebuilt from ``loaded`` and ``report``).
    """
    if not isinstance(error, PageLoadError):
        raise TypeError(
            f"resume must be the PageLoadError a failed load raised, got {_bounded_repr(error)}"
        )
    loaded = error.loaded
    if not isinstance(loaded, list):
        raise TypeError(
            f"resume: PageLoadError.loaded must be a list of Message, got {_bounded_repr(loaded)}"
        )
    _check_items(loaded, error.cursor)
    state = getattr(error, "_convmem_resume", None)
    if state is not None:
        seen, requested, pages = state
        return _Resume(
            error.cursor, list(loaded), None if seen is None else set(seen), set(requested), pages
        )
    report = error.report
    requested: set[Any] = {None}
    pages = 0
    if isinstance(report, LoadReport):
        requested.update(c.cursor for c in report.calls)
        pages = report.pages
    requested.add(error.cursor)
    return _Resume(error.cursor, list(loaded), {m.id for m in loaded}, requested, pages)


def _validate(
    fetch_page: Any,
    max_pages: Any,
    empty_page_ends: Any,
    attempts: Any,
    base_delay: Any,
    max_delay: Any,
    deadline: Any,
    retry_on: Any,
    sleep: Any,
    random: Any,
    clock: Any,
    on_event: Any,
    report: Any,
    unique_ids: Any,
    resume: Any,
) -> tuple[Callable[[], float], LoadReport, _Resume | None]:
    """Check every option (each error names the option and the value)."""
    _check_callable("fetch_page", fetch_page)
    _check_count("max_pages", max_pages)
    if not isinstance(empty_page_ends, bool):
        raise TypeError(f"empty_page_ends must be a bool, got {_bounded_repr(empty_page_ends)}")
    _check_count("attempts", attempts)
    _check_seconds("base_delay", base_delay)
    _check_seconds("max_delay", max_delay)
    if deadline is not None:
        _check_seconds("deadline", deadline)
    if not isinstance(retry_on, tuple):
        raise TypeError(
            f"retry_on must be a tuple of exception types, e.g. (TimeoutError,), got "
            f"{_bounded_repr(retry_on)}"
        )
    for kind in retry_on:
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            raise TypeError(
                f"retry_on must hold exception types (subclasses of Exception), got "
                f"{_bounded_repr(kind)} "
                f"in {_bounded_repr(retry_on)}"
            )
    _check_callable("sleep", sleep)
    rand = _as_random(random)
    _check_callable("clock", clock)
    if on_event is not None:
        _check_callable("on_event", on_event)
    if not isinstance(unique_ids, bool):
        raise TypeError(f"unique_ids must be a bool, got {_bounded_repr(unique_ids)}")
    state = None if resume is None else _resume_from(resume)
    if report is None:
        report = LoadReport()
    elif not isinstance(report, LoadReport):
        raise TypeError(f"report must be a LoadReport or None, got {_bounded_repr(report)}")
    elif report._started:
        raise ValueError(f"report must be a fresh LoadReport, got one already used: {report!r}")
    return rand, report, state


def _walk(
    fetch_page: Callable[[Any], Any],
    out: list[Message],
    report: LoadReport,
    rand: Callable[[], float],
    state: _Resume | None,
    max_pages: int,
    empty_page_ends: bool,
    attempts: int,
    base_delay: float,
    max_delay: float,
    deadline: float | None,
    retry_on: tuple[type[Exception], ...],
    sleep: Callable[[float], Any],
    clock: Callable[[], float],
    on_event: Callable[[CallRecord], Any] | None,
    unique_ids: bool,
) -> Iterator[tuple[Any, ...]]:
    """The one paging loop (module doc). Appends each page's new messages to ``out`` and then
    yields the page's CallRecord fields; the consumer may empty ``out`` between pages (streaming)
    or let it grow (load_history). Options are already validated.

    Memory: ``out`` (as the consumer keeps it), the requested cursors, and the ids seen (none with
    ``unique_ids``), plus one small record per call in the report.
    """
    start = clock()
    if not _is_number(start):
        raise TypeError(f"clock must return a number of seconds, got {_bounded_repr(start)}")
    report._started = True

    def now() -> float:
        return float(clock() - start)

    def emit(record: CallRecord) -> None:
        report._calls.append(record)
        if on_event is not None:
            on_event(record)

    def failed_record(call: _Call, outcome: str, delay_after: float | None) -> CallRecord:
        assert call.exc is not None
        return CallRecord(
            index=len(report._calls),
            cursor=call.cursor,
            attempt=call.attempt,
            outcome=outcome,
            page_size=0,
            new_messages=0,
            duplicates=0,
            next_cursor=None,
            error=_describe(call.exc),
            started_at=call.started_at,
            delay_after=delay_after,
        )

    def finish(failure: str | None, error: BaseException | None, stop_reason: str | None) -> None:
        report._stop_reason = stop_reason
        report._failure = failure
        report._error = None if error is None else _describe(error)
        report._messages_loaded = count
        report._elapsed = now()

    retry_types: tuple[type[BaseException], ...] = (TransientError, *retry_on)
    stop: stop_base = stop_after_attempt(attempts)
    if deadline is not None:
        stop = stop | _StopBeforeDeadline(deadline, clock, start)
    current = _Call(None)

    def attempt(cursor: Any) -> Any:
        if current.replay:
            # The first attempt already ran (and failed) outside tenacity: hand tenacity that
            # failure, so it decides, waits and counts exactly as if it had made the call itself.
            current.replay = False
            assert current.exc is not None
            raise current.exc
        current.attempt += 1
        current.started_at = now()
        current.exc = None
        try:
            return _read_result(fetch_page(cursor))
        except BaseException as exc:
            current.exc = exc
            raise

    def before_sleep(retry_state: RetryCallState) -> None:
        delay = float(retry_state.upcoming_sleep)
        report._transient_failures += 1
        report._delays.append(delay)
        emit(failed_record(current, CallOutcome.TRANSIENT, delay))

    retrying = Retrying(
        stop=stop,
        wait=_FullJitter(float(base_delay), float(max_delay), rand, attempts),
        retry=retry_if_exception_type(retry_types),
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=False,
    )

    if state is None:
        seen_ids: set[str] | None = None if unique_ids else set()
        requested: set[Any] = set()
        cursor: Any = None
        pages_before = 0
    else:
        seen_ids = None if unique_ids else (
            state.seen if state.seen is not None else {m.id for m in state.loaded}
        )
        requested = state.requested
        cursor = state.cursor
        pages_before = state.pages
    #: messages loaded in this walk plus those it resumed from
    count = 0 if state is None else len(state.loaded)
    loaded = out
    stop_reason: str | None = None

    def retry_call(cursor: Any, started_at: float, first: BaseException) -> Any:
        """The retry path, entered after the first attempt at ``cursor`` failed retryably."""
        nonlocal current
        current = _Call(cursor)
        current.attempt, current.started_at, current.exc = 1, started_at, first
        current.replay = True
        try:
            return retrying(attempt, cursor)
        except BaseException as exc:
            if isinstance(exc, RetryError) and exc is not current.exc:
                # A retryable error on every allowed attempt, or the deadline: give up.
                last = current.exc
                assert last is not None
                report._transient_failures += 1
                emit(failed_record(current, CallOutcome.TRANSIENT, None))
                why = FAILURE_ATTEMPTS if current.attempt >= attempts else FAILURE_DEADLINE
                detail = (
                    f"{current.attempt} attempt(s)"
                    if why == FAILURE_ATTEMPTS
                    else f"{current.attempt} attempt(s); the next backoff would pass the "
                    f"{deadline} s deadline"
                )
                error = PageLoadError(
                    f"fetch_page({_bounded_repr(cursor)}) kept failing after {detail}; "
                    f"{count} message(s) loaded so far; last error: {_describe(last)}",
                    cursor=cursor,
                    attempts=current.attempt,
                    loaded=list(loaded),
                    report=report,
                )
                # What a resumed load needs beyond .cursor and .loaded (see _resume_from).
                error._convmem_resume = (  # type: ignore[attr-defined]
                    None if seen_ids is None else frozenset(seen_ids),
                    frozenset(requested),
                    pages_before + report._pages,
                )
                finish(why, error, None)
                raise error from last
            if exc is current.exc:
                # Not retryable: propagate at once, as it is.
                emit(failed_record(current, CallOutcome.ERROR, None))
            finish(FAILURE_ERROR, exc, None)
            raise

    try:
        while stop_reason is None:
            requested.add(cursor)
            # Fast path: the first attempt calls fetch_page directly. tenacity's machinery is
            # entered only after a retryable failure (it costs more than a cheap call when nothing
            # fails); the decisions, sleeps, random draws and records are the same either way.
            attempt_number = 1
            started_at = float(clock() - start)
            try:
                result = _read_result(fetch_page(cursor))
            except BaseException as exc:
                if not isinstance(exc, retry_types):
                    current = _Call(cursor)
                    current.attempt, current.started_at, current.exc = 1, started_at, exc
                    emit(failed_record(current, CallOutcome.ERROR, None))
                    finish(FAILURE_ERROR, exc, None)
                    raise
                result = retry_call(cursor, started_at, exc)
                attempt_number, started_at = current.attempt, current.started_at

            before = len(loaded)
            try:
                page, next_cursor, items_checked = _check_page(result, cursor)
                if seen_ids is None:
                    # unique_ids: the store guarantees every id once; no set of ids is kept.
                    if not items_checked:
                        for message in page:
                            if message.__class__ is not Message:
                                _check_items(page, cursor)
                                break
                    loaded.extend(page)
                else:
                    seen_add, loaded_append = seen_ids.add, loaded.append
                    whole = True
                    if not items_checked:
                        for message in page:
                            if message.__class__ is not Message:
                                whole = False
                                break
                            message_id = message.id
                            if message_id not in seen_ids:
                                seen_add(message_id)
                                loaded_append(message)
                        if not whole:
                            # An item that is not exactly a Message: undo this page, then check it
                            # whole (a subclass of Message is fine; anything else is a TypeError).
                            for message in loaded[before:]:
                                seen_ids.discard(message.id)
                            del loaded[before:]
                            _check_items(page, cursor)
                    if items_checked or not whole:
                        for message in page:
                            message_id = message.id
                            if message_id not in seen_ids:
                                seen_add(message_id)
                                loaded_append(message)
            except TypeError as exc:
                current = _Call(cursor)
                current.attempt, current.started_at, current.exc = attempt_number, started_at, exc
                emit(failed_record(current, CallOutcome.ERROR, None))
                finish(FAILURE_ERROR, exc, None)
                raise

            new = len(loaded) - before
            size = len(page)
            count += new
            report._pages += 1
            report._duplicates_skipped += size - new
            report._messages_loaded = count
            fields = (
                len(report._calls),  # index
                cursor,
                attempt_number,
                CallOutcome.OK,
                size,  # page_size
                new,  # new_messages
                size - new,  # duplicates
                next_cursor,
                None,  # error
                started_at,
                None,  # delay_after
            )
            if on_event is None:
                report._calls.append(fields)
            else:
                emit(CallRecord(*fields))

            if not page and empty_page_ends:
                stop_reason = STOP_EMPTY_PAGE
            elif next_cursor is None:
                stop_reason = STOP_END
            elif next_cursor in requested:
                stop_reason = STOP_REPEATED_CURSOR
            elif page and new == 0:
                stop_reason = STOP_NO_PROGRESS
            elif pages_before + report._pages >= max_pages:
                stop_reason = STOP_PAGE_CAP
            else:
                cursor = next_cursor
            if stop_reason is not None:
                # Closed before the last page is handed over: a consumer that stops right after
                # it still sees the stop reason.
                finish(None, None, stop_reason)
            try:
                yield fields
            except GeneratorExit:
                if not report.finished:
                    finish(None, None, STOP_CLOSED)
                raise

    except BaseException as exc:
        # Anything not handled above (an on_event callback that raised, say) closes the report.
        if not report.finished:
            finish(FAILURE_ERROR, exc, None)
        raise


# -- the public loaders ----------------------------------------------------------------------------


def iter_pages(
    fetch_page: Callable[[Any], tuple[Sequence[Message], Any]],
    *,
    max_pages: int = 100_000,
    empty_page_ends: bool = True,
    attempts: int = 5,
    base_delay: float = 0.1,
    max_delay: float = 10.0,
    deadline: float | None = None,
    retry_on: tuple[type[Exception], ...] = (),
    sleep: Callable[[float], Any] = time.sleep,
    random: Any = _random.random,
    clock: Callable[[], float] = time.monotonic,
    on_event: Callable[[CallRecord], Any] | None = None,
    report: LoadReport | None = None,
    unique_ids: bool = False,
    resume: PageLoadError | None = None,
) -> Iterator[LoadedPage]:
    """Stream a paged store page by page: one :class:`LoadedPage` per successful page, as it comes.

    The walk of :func:`load_history` (the same stop rules, retries, backoff, deadline, de-duplication
    and :class:`LoadReport`; see the module doc), for a caller that must not hold the whole history:
    each page's new messages are handed over and then forgotten. load_history is this iterator with
    the pages collected.

    Memory: the page at hand, the set of cursors requested (the repeated-cursor rule) and the set
    of message ids seen (the de-duplication and the no-progress rule): O(page + distinct cursors +
    messages ids). With ``unique_ids=True`` the store vouches that it serves each id once (a keyset
    store such as :class:`convmem.stores.SQLStore` does: ``unique (conversation_id, message_id)``
    and monotonic cursors), no id is remembered and memory is O(page + distinct cursors); nothing is
    de-duplicated then, and the no-progress rule cannot fire (repeated cursors and ``max_pages``
    still bound the walk).

    The generator is lazy: nothing is fetched before the first ``next()``. Closing it early (a
    ``break``) ends the run with ``report.stop_reason == "closed"`` (:data:`STOP_CLOSED`). A page
    that triggers a stop rule is still yielded, and the report is closed before it is.

    Args: as :func:`load_history`, plus
        unique_ids: trust the store's unique ids (see above); default False.
        resume: a :class:`~convmem.PageLoadError` from an earlier run: the walk starts at its
            cursor, with its ids and cursors already seen and its pages counted for ``max_pages``;
            only messages not yet loaded are yielded.

    Raises:
        PageLoadError: as load_history; when streaming, its ``loaded`` is empty (the messages were
            already handed over), ``cursor`` is where to resume.
        TypeError / ValueError / Exception: as load_history (options are checked at the call, not
            at the first ``next()``).

    >>> from convmem import Message
    >>> pages = {None: (["m1", "m2"], "c1"), "c1": (["m2", "m3"], None)}
    >>> def fetch_page(cursor):
    ...     ids, nxt = pages[cursor]
    ...     return [Message(i, "user", 1) for i in ids], nxt
    >>> report = LoadReport()
    >>> for page in iter_pages(fetch_page, report=report):
    ...     print(page.index, page.cursor, [m.id for m in page.messages], page.duplicates)
    0 None ['m1', 'm2'] 0
    1 c1 ['m3'] 1
    >>> report.stop_reason, report.messages_loaded
    ('end', 3)
    """
    rand, report, state = _validate(
        fetch_page, max_pages, empty_page_ends, attempts, base_delay, max_delay, deadline,
        retry_on, sleep, random, clock, on_event, report, unique_ids, resume,
    )
    buffer: list[Message] = []
    walk = _walk(
        fetch_page, buffer, report, rand, state, max_pages, empty_page_ends, attempts,
        base_delay, max_delay, deadline, retry_on, sleep, clock, on_event, unique_ids,
    )
    return _pages_of(walk, buffer, report)


def _pages_of(
    walk: Iterator[tuple[Any, ...]], buffer: list[Message], report: LoadReport
) -> Iterator[LoadedPage]:
    index = 0
    try:
        for fields in walk:
            page = LoadedPage(index, fields[1], fields[7], tuple(buffer), fields[4], fields[6])
            buffer.clear()
            index += 1
            yield page
    finally:
        walk.close()


def iter_messages(
    fetch_page: Callable[[Any], tuple[Sequence[Message], Any]], **options: Any
) -> Iterator[Message]:
    """Stream every message of a paged store once, in conversation order: :func:`iter_pages`
    flattened. Takes its keyword options; memory as it says.

    >>> from convmem import Message
    >>> fetch = lambda cursor: ([Message("a", "user", 1), Message("b", "user", 1)], None)
    >>> [m.id for m in iter_messages(fetch, unique_ids=True)]
    ['a', 'b']
    """
    pages = iter_pages(fetch_page, **options)
    try:
        for page in pages:
            yield from page.messages
    finally:
        pages.close()


def load_history(
    fetch_page: Callable[[Any], tuple[Sequence[Message], Any]],
    *,
    max_pages: int = 100_000,
    empty_page_ends: bool = True,
    attempts: int = 5,
    base_delay: float = 0.1,
    max_delay: float = 10.0,
    deadline: float | None = None,
    retry_on: tuple[type[Exception], ...] = (),
    sleep: Callable[[float], Any] = time.sleep,
    random: Any = _random.random,
    clock: Callable[[], float] = time.monotonic,
    on_event: Callable[[CallRecord], Any] | None = None,
    report: LoadReport | None = None,
    resume: PageLoadError | None = None,
) -> list[Message]:
    """Load every message of a paged store, oldest first, each id once (SPEC §3).

    The pages of :func:`iter_pages` (the one walk), collected into a list.

    Args:
        fetch_page: ``fetch_page(cursor) -> (list[Message], next_cursor | None)``; called with
            ``None`` first. Cursors must be hashable. It may raise TransientError.
        max_pages: stop after this many successful pages (``"page_cap"``); an int >= 1.
        empty_page_ends: an empty page ends the load (``"empty_page"``, default). With False an
            empty page that carries a cursor is followed (for filtered stores); one whose cursor is
            None ends with ``"end"``; the repeated-cursor rule and ``max_pages`` still bound it.
        attempts: tries per call (the first try plus retries), an int >= 1.
        base_delay: seconds; the jitter bound before the first retry of a call. Finite, >= 0.
        max_delay: seconds; the jitter bound never exceeds it. Finite, >= 0.
        deadline: seconds since the start of this run on ``clock``, or None. A failed call is
            retried only if ``elapsed + next_delay <= deadline``; otherwise PageLoadError. The
            deadline bounds waiting on failures only: pages that succeed are never cut off by it.
        retry_on: extra exception types (subclasses of Exception) to retry like TransientError.
        sleep: ``sleep(seconds)``, given to tenacity for the backoff sleeps.
        random: the jitter source: a callable returning a float in [0, 1] (``random.random``) or an
            object with a ``.random()`` method (``random.Random(seed)``).
        clock: ``clock() -> seconds`` (monotonic), read for the deadline and the report times.
        on_event: called with each :class:`CallRecord` as soon as its outcome is known (for a
            failed call that will be retried: before the backoff sleep).
        report: a fresh :class:`LoadReport` to fill, or None.
        resume: the :class:`~convmem.PageLoadError` of an earlier run over the same store: this run
            starts with its ``loaded`` messages, fetches again from its ``cursor`` (the page that
            failed) and keeps its ids, requested cursors and page count, so the stop rules and the
            de-duplication see one walk. The result is exactly what one clean run returns. This
            run's report holds this run's calls (``messages_loaded`` counts all messages);
            ``deadline`` and ``attempts`` start afresh. An error from a streaming run
            (:func:`iter_pages`) resumes with an empty ``loaded``: the caller has the rest.

    Returns:
        The distinct messages in conversation order (first occurrence of each id kept).

    Complexity: O(messages + pages) time plus the calls retries make; O(messages + distinct
    cursors) memory, one small record per call. When nothing fails, tenacity is never entered.

    Raises:
        PageLoadError: a call kept failing with a retryable error (``attempts`` used up, or the next
            sleep would pass ``deadline``). Carries ``cursor``, ``attempts``, ``loaded`` (the
            messages so far) and ``report``; the last error is its ``__cause__``. Pass it as
            ``resume=`` to carry on once the store recovers.
        TypeError / ValueError: a bad option (names the option and the value), or ``fetch_page``
            returned something that is not ``(list of Message, hashable cursor)`` (names the cursor
            and what came back).
        Exception: any non-retryable exception from ``fetch_page`` propagates at once, unretried.

    >>> from convmem import Message, TransientError
    >>> from convmem.testing import VirtualClock
    >>> failures = [TransientError("503"), TransientError("timeout")]
    >>> def fetch_page(cursor):
    ...     if failures:
    ...         raise failures.pop(0)
    ...     return [Message("m1", "user", 3)], None
    >>> clock = VirtualClock()
    >>> report = LoadReport()
    >>> [m.id for m in load_history(fetch_page, sleep=clock.sleep, clock=clock,
    ...                             random=lambda: 0.5, report=report)]
    ['m1']
    >>> report.delays, report.retries, report.stop_reason
    ((0.05, 0.1), 2, 'end')
    >>> load_history(fetch_page, attempts=0)
    Traceback (most recent call last):
    ...
    ValueError: attempts must be >= 1, got 0

    Resuming after the store went down for good and came back:

    >>> down = True
    >>> def fetch_page(cursor):
    ...     if cursor == "c1" and down:
    ...         raise TransientError("connection refused")
    ...     return ([Message("m1", "user", 1)], "c1") if cursor is None else ([Message("m2", "user", 1)], None)
    >>> try:
    ...     load_history(fetch_page, attempts=2, sleep=clock.sleep, clock=clock)
    ... except PageLoadError as error:
    ...     failed = error
    >>> failed.cursor, [m.id for m in failed.loaded]
    ('c1', ['m1'])
    >>> down = False
    >>> [m.id for m in load_history(fetch_page, resume=failed)]
    ['m1', 'm2']
    """
    rand, report, state = _validate(
        fetch_page, max_pages, empty_page_ends, attempts, base_delay, max_delay, deadline,
        retry_on, sleep, random, clock, on_event, report, False, resume,
    )
    loaded: list[Message] = [] if state is None else state.loaded
    for _ in _walk(
        fetch_page, loaded, report, rand, state, max_pages, empty_page_ends, attempts,
        base_delay, max_delay, deadline, retry_on, sleep, clock, on_event, False,
    ):
        pass
    return loaded



def load_history_with_report(
    fetch_page: Callable[[Any], tuple[Sequence[Message], Any]], **options: Any
) -> tuple[list[Message], LoadReport]:
    """``load_history`` that also returns its :class:`LoadReport`: ``(messages, report)``.

    Takes the same keyword options (``report=`` may name the report to fill). On failure the
    report is on ``PageLoadError.report``.

    >>> from convmem import Message
    >>> messages, report = load_history_with_report(lambda c: ([Message("a", "user", 1)], None))
    >>> [m.id for m in messages], report.stop_reason, report.pages
    (['a'], 'end', 1)
    """
    report = options.pop("report", None)
    if report is None:
        report = LoadReport()
    messages = load_history(fetch_page, report=report, **options)
    return messages, report
