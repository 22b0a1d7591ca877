"""The names convmem gives to outcomes, as string enums shared by the library and the dashboard.

Each member is a :class:`enum.StrEnum`: it *is* its string value, so ``reason == "over_limit"``,
``json.dumps``, CSV cells, dict keys and URL values keep working unchanged, while code that names
them (``DropReason.OVER_LIMIT``) is checked by the interpreter instead of re-typing a literal.
The old module constants (``convmem.history.OVER_LIMIT``, ``convmem.loading.STOP_END``,
``DROP_REASONS``, ``STOP_REASONS``, ``OUTCOMES``, ``FAILURES``) are these members and tuples of them.

>>> DropReason.OVER_LIMIT == "over_limit", str(StopReason.END), f"{CallOutcome.OK}"
(True, 'end', 'ok')
>>> import json; json.dumps({"reason": DropReason.TOO_BIG})
'{"reason": "too_big"}'
>>> list(DropReason)  # repr is the string's: reprs of records and doctests read as before
['over_limit', 'tool_group', 'start_on_user', 'too_big', 'pin_moved']
>>> DropReason("too_big") is DropReason.TOO_BIG
True
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DropReason", "StopReason", "CallOutcome", "LoadFailure"]


class _Name(StrEnum):
    """A StrEnum whose repr is its string's (``'over_limit'``), so a record's repr, a doctest and
    a logged tuple read exactly as when these were plain strings."""

    def __repr__(self) -> str:
        return repr(self._value_)


class DropReason(_Name):
    """Why History dropped a message (``DroppedMessage.reason``, ``Replay.drop_reason``)."""

    #: Dropped from the oldest end by a compaction (the total passed the limit; cut to the target).
    OVER_LIMIT = "over_limit"
    #: Dropped together with its tool call (``keep_tool_groups``), or refused on arrival without it.
    TOOL_GROUP = "tool_group"
    #: Dropped so the first non-system message is a user message (``start_on_user``).
    START_ON_USER = "start_on_user"
    #: Its own tokens exceed what a compaction cuts to (the limit, or target - summary_budget).
    TOO_BIG = "too_big"
    #: A user message kept only by ``pin_latest_user`` when a newer user message took the pin.
    PIN_MOVED = "pin_moved"


class StopReason(_Name):
    """Why a paged load stopped (``LoadReport.stop_reason``), in the order the rules are checked."""

    #: A page with no messages.
    EMPTY_PAGE = "empty_page"
    #: The store returned no next cursor.
    END = "end"
    #: ``next_cursor`` was already requested in this run (stuck cursor or cycle).
    REPEATED_CURSOR = "repeated_cursor"
    #: A non-empty page brought no message with a new id (a store wrapping around).
    NO_PROGRESS = "no_progress"
    #: ``max_pages`` successful pages were loaded.
    PAGE_CAP = "page_cap"
    #: The consumer of ``iter_pages`` stopped early (not one of ``STOP_REASONS``: no rule fired).
    CLOSED = "closed"


class CallOutcome(_Name):
    """What one store call returned (``CallRecord.outcome``)."""

    #: A page came back.
    OK = "ok"
    #: A retryable error (TransientError or a ``retry_on`` type).
    TRANSIENT = "transient"
    #: Any other error, or a return value that is not a page.
    ERROR = "error"


class LoadFailure(_Name):
    """Why a load raised instead of stopping (``LoadReport.failure``)."""

    #: A call failed with a retryable error ``attempts`` times: PageLoadError.
    ATTEMPTS = "attempts_exhausted"
    #: A retryable failure whose next sleep would pass the deadline: PageLoadError.
    DEADLINE = "deadline"
    #: A non-retryable error, or a return that is not a page: it propagated.
    ERROR = "error"
