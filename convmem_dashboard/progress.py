"""A progress bar for work done in steps, shown only when the work is slow (issue 10 item 3).

Cached work returns in milliseconds and must not flash a bar; long work (a limit sweep at 10^5
messages: one replay per limit) shows ``st.progress`` with how many steps are done, and removes
it when done. The clock and the placeholder are injectable, so plain pytest checks the behaviour
without Streamlit running and without sleeping (tests/test_progress.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st

__all__ = ["SHOW_AFTER", "StepProgress"]

#: Seconds of work before the bar appears (a cached rerun finishes well under it).
SHOW_AFTER = 0.3


class StepProgress:
    """Progress over ``total`` steps, drawn in ``placeholder`` (default: a new ``st.empty()``)
    once ``show_after`` seconds of ``clock`` have passed since it was made.

    Call :meth:`done` after each step (``count`` steps done so far, ``note`` said after the
    count), :meth:`close` at the end (or use it as a context manager): the bar, if drawn, is
    removed. Before the threshold nothing is drawn, so fast (cached) work leaves no trace. The bar
    can first appear only at a :meth:`done` call: a single step longer than ``show_after`` shows it
    after that step. O(1) per call; raises ValueError when ``total`` < 0.
    """

    def __init__(
        self,
        total: int,
        label: str,
        *,
        placeholder=None,
        clock: Callable[[], float] = time.monotonic,
        show_after: float = SHOW_AFTER,
    ) -> None:
        if total < 0:
            raise ValueError(f"StepProgress total must be >= 0 steps, got {total!r}")
        self.total = total
        self.label = label
        self._clock = clock
        self._deadline = clock() + show_after
        self._placeholder = st.empty() if placeholder is None else placeholder
        self._bar = None

    @property
    def shown(self) -> bool:
        """Whether the bar is on screen."""
        return self._bar is not None

    def text(self, count: int, note: str = "") -> str:
        """The bar's text: the label, ``count`` of the total, and the note if any."""
        return f"{self.label}: {count:,} of {self.total:,}" + (f" ({note})" if note else "")

    def done(self, count: int, note: str = "") -> None:
        """``count`` steps are done: draw or move the bar when the threshold has passed."""
        if self._bar is None and self._clock() < self._deadline:
            return
        value = min(1.0, count / self.total) if self.total else 1.0
        if self._bar is None:
            self._bar = self._placeholder.progress(value, text=self.text(count, note))
        else:
            self._bar.progress(value, text=self.text(count, note))

    def close(self) -> None:
        """Remove the bar (nothing to do when it never appeared)."""
        if self._bar is not None:
            self._placeholder.empty()
            self._bar = None

    def __enter__(self) -> StepProgress:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
