"""The Flaky store page's data: one simulated load as plain values, and the tables built from it.

Pure (no streamlit): the page caches :func:`run_simulation` by plain values (dataset key,
conversation id, settings tuples) and draws from the :class:`FlakyRun` it returns.

A run wraps the conversation's messages in ``FlakyStore(PagedStore(messages, page_size), faults)``
on a :class:`~convmem.testing.VirtualClock` and calls :func:`convmem.load_history` with the store's own
jitter source (``store.rng_for_jitter()``), so the same settings always give the same run, and
changing only the retry settings never changes which calls fail. The store and the loader see the
same calls in the same order, so the store's per-call record (which fault was injected) is joined
to the loader's :class:`~convmem.CallRecord` by position.

>>> from convmem import Message
>>> from convmem.testing import FaultConfig
>>> msgs = [Message(f"m{i}", "user", 1) for i in range(6)]
>>> run = run_simulation(msgs, 2, FaultConfig(empty_page=1), LoadSettings())
>>> run.stop_reason, run.loaded_ids, run.lost_ids
('empty_page', ('m0', 'm1'), ('m2', 'm3', 'm4', 'm5'))
>>> [(c["cursor"], c["outcome"], c["fault"], c["next_cursor"]) for c in run.calls]
[('(first page)', 'ok', '', 'e2'), ('e2', 'ok', 'empty_page', 'p2')]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from convmem.outcomes import CallOutcome, LoadFailure, StopReason

from convmem import LoadReport, Message, PageLoadError, load_history
from convmem.testing import (
    FAULT_EFFECTS,
    FAULT_NAMES,
    FAULT_TRANSIENT,
    FaultConfig,
    FlakyStore,
    PagedStore,
    VirtualClock,
    compare_to_truth,
)

from .table_layout import column, table_view
from .wording import plural

__all__ = [
    "ARRIVALS_EFFECT",
    "END_CURSOR",
    "FAULT_ARRIVALS",
    "FIRST_PAGE",
    "FlakyRun",
    "LoadSettings",
    "OUTCOMES",
    "STOP_WORDS",
    "call_table",
    "call_table_view",
    "error_table",
    "error_table_view",
    "explain_stop",
    "fault_outcome_table",
    "fault_outcome_view",
    "failure_message",
    "run_simulation",
    "step_state",
    "truth_table",
]

#: Call outcomes, in legend order (convmem.loading.OUTCOMES).
OUTCOMES: tuple[CallOutcome, ...] = tuple(CallOutcome)

#: Each stop reason in words (what the store did and why the loader stopped there).
STOP_WORDS: dict[StopReason, str] = {
    StopReason.EMPTY_PAGE: (
        "The store returned an empty page, and an empty page ends the load (empty_page_ends is "
        "on). Any page after it was never requested."
    ),
    StopReason.END: (
        "The store said there is no next page (its next cursor was None): the walk reached the "
        "end of the conversation."
    ),
    StopReason.REPEATED_CURSOR: (
        "The store pointed to a cursor the loader had already requested (a stuck cursor T -> T or "
        "a cycle A -> B -> A). Following it would loop forever, so the loader stopped."
    ),
    StopReason.NO_PROGRESS: (
        "A non-empty page brought no message the loader did not already have: the store wrapped "
        "around to its start under fresh cursors, so the loader stopped."
    ),
    StopReason.PAGE_CAP: "The loader reached its max_pages cap.",
}


#: The fault name of messages arriving while paging (convmem_dashboard.flaky_sql).
FAULT_ARRIVALS = "arrivals"
#: What arrivals do to a load over keyset cursors.
ARRIVALS_EFFECT = (
    "loses nothing, repeats nothing: keyset cursors name a position after a sequence number, so "
    "messages appended during the load are served once, by this load or by the follow-up from its "
    "high-water mark"
)
_EFFECTS = {**FAULT_EFFECTS, FAULT_ARRIVALS: ARRIVALS_EFFECT}


@dataclass(frozen=True)
class LoadSettings:
    """load_history's retry options for a simulated run (seconds on the virtual clock)."""

    attempts: int = 5
    base_delay: float = 0.1
    max_delay: float = 2.0
    deadline: float | None = None
    empty_page_ends: bool = True


@dataclass(frozen=True)
class FlakyRun:
    """One simulated load, as plain picklable values (what the page caches and draws).

    Attributes:
        truth: the conversation's messages as ``(id, role, tokens)``, in order.
        page_size: messages per page.
        calls: one dict per call (see :func:`_call_rows` for the keys), in order.
        summary: ``LoadReport.summary()`` of the run.
        stop_reason: one of convmem's STOP_REASONS, or None when the run raised.
        failure: ``"attempts_exhausted"`` / ``"deadline"`` / ``"error"`` when the run raised.
        error: the raised error as ``{cursor, attempts, loaded, kind, message, last_error}``.
        loaded_ids: what the load returned (or, when it raised, what it had loaded).
        lost_ids, repeated_ids, extra_ids, out_of_order: the diff against the truth.
        explanation: FlakyStore.explain_loss in one sentence.
        configured: the faults the settings inject (names), fired: those that showed up.
        store_kind: ``"paged"`` (offset cursors, convmem.testing.PagedStore) or ``"sqlite"``
            (keyset cursors, SQLStore.pager; convmem_dashboard.flaky_sql).
        follow_up_ids: what the follow-up load from the high-water mark returned (sqlite).
        arrivals: the arrivals fault's facts (see flaky_sql.run_sql_simulation), or None.
    """

    truth: tuple[tuple[str, str, int], ...]
    page_size: int
    calls: tuple[dict[str, Any], ...]
    summary: dict[str, Any]
    stop_reason: str | None
    failure: str | None
    error: dict[str, Any] | None
    loaded_ids: tuple[str, ...]
    lost_ids: tuple[str, ...]
    repeated_ids: tuple[str, ...]
    extra_ids: tuple[str, ...]
    out_of_order: bool
    explanation: str
    configured: tuple[str, ...]
    fired: tuple[str, ...]
    empty_page_ends: bool
    store_kind: str = "paged"
    follow_up_ids: tuple[str, ...] = ()
    arrivals: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Nothing lost, repeated, extra or out of order, and the run did not raise."""
        return self.error is None and not (
            self.lost_ids or self.repeated_ids or self.extra_ids or self.out_of_order
        )


#: A message a failed load had not reached: a resume from its cursor loads it (never "lost").
NOT_LOADED_YET = "not loaded yet"
#: How a call's cursor None (the loader's first request) is shown.
FIRST_PAGE = "(first page)"
#: How a next cursor None (the store says there is no next page) is shown.
END_CURSOR = "(end)"


def _show_cursor(cursor: Any) -> str:
    """A request's cursor as shown: None is the first page's (the loader always starts there)."""
    return FIRST_PAGE if cursor is None else str(cursor)


def _show_next(cursor: Any) -> str:
    """A page's next cursor as shown: None means the store has no next page."""
    return END_CURSOR if cursor is None else str(cursor)


def _cursor_words(shown: str) -> str:
    """A shown cursor in a sentence: "the first page" or "cursor p4"."""
    return "the first page" if shown == FIRST_PAGE else f"cursor {shown}"


def _call_rows(report: LoadReport, store: FlakyStore) -> list[dict[str, Any]]:
    """Join the loader's calls with the store's (same calls, same order) into plain dicts.

    Keys: index, request (1-based number of the page request; retries share it), cursor, attempt,
    outcome, fault, error, started_at, delay_after, page_size, new_messages, duplicates,
    next_cursor, loaded_after (distinct messages loaded once this call was done).
    """
    store_calls = store.calls
    rows = []
    request = 0
    loaded = 0
    for i, call in enumerate(report.calls):
        if call.attempt == 1:
            request += 1
        loaded += call.new_messages
        fault = store_calls[i].fault if i < len(store_calls) else None
        rows.append(
            {
                "index": call.index,
                "request": request,
                "cursor": _show_cursor(call.cursor),
                "attempt": call.attempt,
                "outcome": call.outcome,
                "fault": fault or "",
                "error": call.error or "",
                "started_at": call.started_at,
                "delay_after": call.delay_after,
                "page_size": call.page_size,
                "new_messages": call.new_messages,
                "duplicates": call.duplicates,
                "next_cursor": _show_next(call.next_cursor) if call.outcome == CallOutcome.OK else "",
                "loaded_after": loaded,
            }
        )
    return rows


def run_simulation(
    messages: Sequence[Message], page_size: int, faults: FaultConfig, settings: LoadSettings
) -> FlakyRun:
    """Load ``messages`` through a seeded FlakyStore on a virtual clock; never raises for a
    failed load (a PageLoadError becomes ``FlakyRun.error``).

    Raises:
        TypeError / ValueError: bad settings (from PagedStore, FlakyStore or load_history), e.g.
            ``overlap >= page_size``; the message names the field and value.

    O(messages + calls).
    """
    clock = VirtualClock()
    store = FlakyStore(PagedStore(messages, page_size), faults, clock=clock)
    report = LoadReport()
    error: dict[str, Any] | None = None
    try:
        loaded = load_history(
            store,
            attempts=settings.attempts,
            base_delay=settings.base_delay,
            max_delay=settings.max_delay,
            deadline=settings.deadline,
            empty_page_ends=settings.empty_page_ends,
            sleep=clock.sleep,
            clock=clock,
            random=store.rng_for_jitter(),
            report=report,
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
    except (ValueError, TypeError) as exc:
        # A store bug surfaced by the loader (e.g. an unknown cursor); keep what the report saw.
        loaded = []
        error = {
            "kind": type(exc).__name__,
            "cursor": "",
            "attempts": 0,
            "loaded": report.messages_loaded,
            "message": str(exc),
            "last_error": "",
        }
    truth = store.truth or []
    diff = compare_to_truth(loaded, truth)
    configured = ((FAULT_TRANSIENT,) if faults.failure_rate > 0 else ()) + faults.walk_faults
    return FlakyRun(
        truth=tuple((m.id, m.role, m.tokens) for m in truth),
        page_size=page_size,
        calls=tuple(_call_rows(report, store)),
        summary=report.summary(),
        stop_reason=report.stop_reason,
        failure=report.failure,
        error=error,
        loaded_ids=tuple(m.id for m in loaded),
        lost_ids=diff.lost,
        repeated_ids=diff.repeated,
        extra_ids=diff.extra,
        out_of_order=diff.out_of_order,
        explanation=store.explain_loss(loaded, empty_page_ends=settings.empty_page_ends),
        configured=configured,
        fired=store.fired,
        empty_page_ends=settings.empty_page_ends,
    )


# -- words ------------------------------------------------------------------------------------------


def explain_stop(run: FlakyRun) -> str:
    """Why the run ended, in words, naming the call that ended it."""
    if run.error is not None:
        return failure_message(run)
    last = run.calls[-1] if run.calls else None
    words = STOP_WORDS.get(run.stop_reason or "", f"Stopped: {run.stop_reason}.")
    if last is None:
        return words
    where = f"Call #{last['index'] + 1} ({_cursor_words(last['cursor'])}"  # from 1, as "Calls shown"
    if run.stop_reason == StopReason.REPEATED_CURSOR:
        where += f", next cursor {last['next_cursor']}"
    where += ")"
    return f"{where}: {words}"


def failure_message(run: FlakyRun) -> str:
    """A PageLoadError (or another raised error) as a readable sentence, no traceback."""
    err = run.error
    if err is None:
        return ""
    if err["kind"] != "PageLoadError":
        return f"The load stopped with {err['kind']}: {err['message']}"
    why = (
        "the next backoff would pass the deadline"
        if run.failure == LoadFailure.DEADLINE
        else "every allowed attempt failed"
    )
    where = _cursor_words(err["cursor"])
    page = "The first page" if err["cursor"] == FIRST_PAGE else f"The page at {where}"
    return (
        f"{page} kept failing: {why} after "
        f"{plural(err['attempts'], 'attempt')}. {err['loaded']:,} of {len(run.truth):,} messages were loaded before it; a caller "
        f"keeps them and can resume from {where}. load_history raised PageLoadError "
        f"instead of returning a partial history. Last error: {err['last_error']}"
    )


# -- tables -----------------------------------------------------------------------------------------


def call_table(run: FlakyRun, upto: int | None = None) -> pd.DataFrame:
    """The call log as a table (first ``upto`` calls; all when None), one row per call.

    A request's cursor None shows as ``(first page)``, a next cursor None as ``(end)``. The
    ``error`` column holds the raised error's message verbatim; :func:`call_table_view` leaves it
    out of the log (too long for a column) and :func:`error_table` shows it in full.
    """
    rows = run.calls if upto is None else run.calls[:upto]
    columns = [
        "index", "request", "cursor", "attempt", "outcome", "fault", "started_at", "delay_after",
        "page_size", "new_messages", "duplicates", "next_cursor", "loaded_after", "error",
    ]
    frame = pd.DataFrame(list(rows), columns=columns)
    frame["index"] += 1  # calls are numbered from 1, as "Calls shown", requests and attempts are
    return frame.rename(
        columns={
            "index": "call #",
            "started_at": "at (s)",
            "delay_after": "backoff after (s)",
            "page_size": "page size",
            "new_messages": "new",
            "loaded_after": "loaded so far",
            "next_cursor": "next cursor",
        }
    )


def fault_outcome_table(run: FlakyRun, upto: int | None = None) -> pd.DataFrame:
    """Injected faults against call outcomes: one row per fault (configured or fired) plus
    "(no fault)", columns ok / transient / error / calls and the fault's effect on a load.

    A call showing two faults (``wrap_around+overlap``) counts in both rows.
    """
    rows = run.calls if upto is None else run.calls[:upto]
    names = [n for n in (*FAULT_NAMES, FAULT_ARRIVALS) if n in run.configured or n in run.fired]
    counts: dict[str, dict[str, int]] = {n: dict.fromkeys(OUTCOMES, 0) for n in names}
    counts["(no fault)"] = dict.fromkeys(OUTCOMES, 0)
    for row in rows:
        faults = row["fault"].split("+") if row["fault"] else ["(no fault)"]
        for name in faults:
            counts.setdefault(name, dict.fromkeys(OUTCOMES, 0))
            counts[name][row["outcome"]] = counts[name].get(row["outcome"], 0) + 1
    records = []
    for name, by_outcome in counts.items():
        effect = _EFFECTS.get(name, "")
        if name == "(no fault)":
            effect = "calls served as the store would without injection"
        records.append(
            {
                "fault": name,
                **{o: by_outcome.get(o, 0) for o in OUTCOMES},
                "calls": sum(by_outcome.values()),
                "effect on a load": effect,
            }
        )
    return pd.DataFrame(records, columns=["fault", *OUTCOMES, "calls", "effect on a load"])


def truth_table(run: FlakyRun, *, only_problems: bool = False) -> pd.DataFrame:
    """Every truth message with its fate, plus any extra id.

    Statuses: ``loaded``; ``follow-up`` (arrived during the load, returned by the follow-up from
    its high-water mark); ``repeated``; ``not loaded yet`` when the load raised (a resume from its
    cursor would load it: nothing is lost); ``lost`` when the load ended without it.
    Columns: position (1-based in the truth), id, role, tokens, status, why. Built column-wise:
    O(truth) with no per-row dict (10^5 rows in a few tens of ms).
    """
    columns = ["position", "id", "role", "tokens", "status", "why"]
    loaded = set(run.loaded_ids)
    follow_up = set(run.follow_up_ids)
    repeated = set(run.repeated_ids)
    if run.error is not None:
        missing = NOT_LOADED_YET
        missing_why = (
            f"not reached yet: the load raised at {_cursor_words(run.error['cursor'])}; a resume "
            f"from there loads it"
        )
    else:
        missing = "lost"
        missing_why = f"after the load stopped ({run.stop_reason})"
    fate = {
        "loaded": "",
        missing: missing_why,
        "repeated": "loaded more than once",
        "follow-up": "arrived during the load, after its high-water mark; the follow-up load "
        "from the mark returned it",
    }
    status = [
        "repeated" if id_ in repeated
        else "loaded" if id_ in loaded
        else "follow-up" if id_ in follow_up
        else missing
        for id_, _role, _tokens in run.truth
    ]
    keep = (
        [i for i, st_ in enumerate(status) if st_ not in ("loaded", "follow-up")]
        if only_problems else None
    )
    picked = run.truth if keep is None else [run.truth[i] for i in keep]
    status = status if keep is None else [status[i] for i in keep]
    positions = list(range(1, len(run.truth) + 1)) if keep is None else [i + 1 for i in keep]
    frame = pd.DataFrame(
        {
            "position": positions,
            "id": [t[0] for t in picked],
            "role": [t[1] for t in picked],
            "tokens": [t[2] for t in picked],
            "status": status,
            "why": [fate[x] for x in status],
        },
        columns=columns,
    )
    if run.extra_ids:
        extra = pd.DataFrame(
            {
                "position": [None] * len(run.extra_ids),
                "id": list(run.extra_ids),
                "role": [""] * len(run.extra_ids),
                "tokens": [None] * len(run.extra_ids),
                "status": ["extra"] * len(run.extra_ids),
                "why": ["not in the store's truth"] * len(run.extra_ids),
            },
            columns=columns,
        )
        frame = pd.concat([frame, extra], ignore_index=True)
    return frame


def step_state(run: FlakyRun, upto: int) -> dict[str, Any]:
    """Counters after the first ``upto`` calls (1-based; clamped), and what the loader did next.

    Keys: calls, pages, retries, transient, duplicates, loaded, at (virtual seconds when the
    last shown call started, plus its backoff), last (the last shown call's row or None),
    next (one sentence: what the loader does after that call), done (the run has no more calls).
    """
    n = len(run.calls)
    upto = max(0, min(upto, n))
    rows = run.calls[:upto]
    pages = sum(1 for r in rows if r["outcome"] == CallOutcome.OK)
    retries = sum(1 for r in rows if r["delay_after"] is not None)
    transient = sum(1 for r in rows if r["outcome"] == CallOutcome.TRANSIENT)
    duplicates = sum(r["duplicates"] for r in rows)
    loaded = rows[-1]["loaded_after"] if rows else 0
    last = rows[-1] if rows else None
    done = upto >= n
    if last is None:
        nxt = "The loader will request the first page."
        at = 0.0
    else:
        at = last["started_at"] + (last["delay_after"] or 0.0)
        if last["outcome"] == CallOutcome.TRANSIENT and last["delay_after"] is not None:
            nxt = (
                f"Call failed ({last['fault'] or 'transient'}): back off {last['delay_after']:.3f} s "
                f"on the virtual clock, then retry {_cursor_words(last['cursor'])} (attempt "
                f"{last['attempt'] + 1})."
            )
        elif last["outcome"] == CallOutcome.OK and not done:
            nxt = (
                f"Page of {plural(last['page_size'], 'message')}: {last['new_messages']:,} new, "
                f"{plural(last['duplicates'], 'duplicate')} skipped; next request: cursor "
                f"{last['next_cursor']}."
            )
        elif done and run.error is not None:
            nxt = failure_message(run)
        elif done:
            nxt = (
                f"Page of {plural(last['page_size'], 'message')}: {last['new_messages']:,} new, "
                f"{plural(last['duplicates'], 'duplicate')} skipped. {explain_stop(run)}"
            )
        else:  # pragma: no cover - an error outcome is always the last call
            nxt = f"Call ended with {last['outcome']}."
    return {
        "calls": upto,
        "pages": pages,
        "retries": retries,
        "transient": transient,
        "duplicates": duplicates,
        "loaded": loaded,
        "at": at if math.isfinite(at) else 0.0,
        "last": last,
        "next": nxt,
        "done": done,
    }


# -- how the tables are shown ----------------------------------------------------------------------

#: The call log's columns as shown (the error text has its own table: see error_table).
CALL_LOG_ORDER = (
    "call #", "request", "cursor", "attempt", "outcome", "fault", "at (s)", "backoff after (s)",
    "page size", "new", "duplicates", "next cursor", "loaded so far",
)


def call_table_view(rows: int) -> dict[str, Any]:
    """st.dataframe arguments of the call log: as tall as its rows (up to 12, then it scrolls),
    short headers so every column fits a 1280-px window, the error text left to error_table,
    "–" where a call had no backoff."""
    return table_view(
        rows,
        max_rows=12,
        order=CALL_LOG_ORDER,
        placeholder="–",  # no backoff after an ok call (or the last attempt)
        columns={
            "call #": column("call", help="Call number, from 1 (retries are calls too)."),
            "request": column("req.", help="Page request: a request and its retries share it."),
            "cursor": column(width=95, help="The cursor requested; (first page) = None, where every load starts."),
            "attempt": column("try", help="Attempt of this request (1 = first try)."),
            "at (s)": column("at (s)", help="Virtual time the call started, in seconds."),
            "backoff after (s)": column("backoff (s)", help="Backoff sleep after this failed call, in seconds."),
            "page size": column("msgs", help="Messages on the page served."),
            "new": column("new", help="Messages not loaded before."),
            "duplicates": column("dup.", help="Messages already loaded (skipped)."),
            "next cursor": column("next cursor", width=85, help="The cursor the page points to; (end) = None, no next page."),
            "loaded so far": column("loaded", help="Distinct messages loaded once this call was done."),
        },
    )


def error_table(run: FlakyRun, upto: int | None = None) -> pd.DataFrame:
    """The calls that raised (first ``upto`` calls): call #, cursor, attempt, fault, error (the
    message verbatim)."""
    rows = [r for r in (run.calls if upto is None else run.calls[:upto]) if r["error"]]
    frame = pd.DataFrame(rows, columns=["index", "cursor", "attempt", "fault", "error"])
    frame["index"] += 1  # from 1, as in the call log
    return frame.rename(columns={"index": "call #"})


def error_table_view(rows: int) -> dict[str, Any]:
    """st.dataframe arguments of :func:`error_table`: the error text in a wide column."""
    return table_view(rows, max_rows=8, columns={"error": column(width="large")})


def fault_outcome_view(rows: int) -> dict[str, Any]:
    """st.dataframe arguments of :func:`fault_outcome_table`: the effect text wraps in a wide
    column, so a whole sentence is read without scrolling."""
    return table_view(
        rows,
        wrap=True,
        max_rows=10,
        columns={
            "fault": column(width=130),
            "ok": column(width=50),
            "transient": column(width=80),
            "error": column(width=50),
            "calls": column(width=50),
            "effect on a load": column(width="large"),
        },
    )
