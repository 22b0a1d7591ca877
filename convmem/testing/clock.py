"""A virtual clock: inject it as ``sleep=`` and ``clock=`` and no real time passes."""

from __future__ import annotations

import math

from ._checks import _is_number

__all__ = ["VirtualClock"]


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

