"""convmem's error hierarchy.

Every error convmem raises for a store, a load or a file is a :class:`ConvmemError`, and each one
also subclasses the builtin it resembles, so ``except ValueError`` keeps working for callers who do
not know convmem (the attrs convention)::

    ConvmemError (Exception)
    ├── TransientError (ConnectionError)   a store call failed but may work if retried
    ├── PageLoadError (RuntimeError)       a page kept failing; carries what was loaded so far
    ├── SummarizerError (RuntimeError)     History's summarizer raised; carries the compaction
    └── FormatError (ValueError)           a conversation file is malformed; names line and field

Bad arguments to a public function are plain ``ValueError`` (a bad value) or ``TypeError`` (a wrong
type) naming the field and the value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .message import Message

__all__ = ["ConvmemError", "TransientError", "PageLoadError", "SummarizerError", "FormatError"]


class ConvmemError(Exception):
    """Base of every error convmem raises for stores, loads and files."""


class TransientError(ConvmemError, ConnectionError):
    """A store call failed in a way that may succeed when retried (timeout, 503, dropped link).

    ``load_history`` retries exactly this type (plus any types the caller adds) with backoff.
    """


class PageLoadError(ConvmemError, RuntimeError):
    """A single page call kept failing after every retry, or the deadline passed.

    Attributes:
        cursor: the cursor whose call failed (``None`` for the first page).
        attempts: how many times that call was tried.
        loaded: the messages loaded before the failure, de-duplicated, in conversation order
            (empty when the load streamed them with ``iter_pages``: the caller has them).
            ``load_history(fetch_page, resume=error)`` carries on from ``cursor`` with them and
            ends with exactly what a clean load returns.
        report: the :class:`~convmem.loading.LoadReport` of the run up to the failure, or None.

    The last error is chained as ``__cause__``.
    """

    def __init__(
        self,
        message: str,
        *,
        cursor: Any,
        attempts: int,
        loaded: list[Message],
        report: Any = None,
    ) -> None:
        super().__init__(message)
        self.cursor = cursor
        self.attempts = attempts
        self.loaded = loaded
        self.report = report


class SummarizerError(ConvmemError, RuntimeError):
    """History's summarizer raised (or returned something that is not a Message).

    The compaction it belonged to still happened and was recorded: ``compaction`` (a
    :class:`~convmem.history.Compaction`) lists every dropped message, with a rejected summary
    outcome whose reason names the failure, so nothing is lost silently. The previous summary stays.
    The summarizer's own exception is chained as ``__cause__``.
    """

    def __init__(self, message: str, *, compaction: Any) -> None:
        super().__init__(message)
        self.compaction = compaction


class FormatError(ConvmemError, ValueError):
    """A conversation file could not be read; says where and what.

    Attributes:
        source: the file name (or ``"<upload>"``).
        line: 1-based line number for JSONL/CSV, or the 1-based index of the conversation/message
            in a JSON document; None when the whole file is at fault.
        field: the field at fault (``"role"``, ``"tool_calls[0].id"``, ...), or None.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str = "<input>",
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        where = source
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")
        self.source = source
        self.line = line
        self.field = field
        self.reason = message
