"""View model of the Token budget page: widget values in, HistorySettings and view choices out.

Pure functions over plain values (no Streamlit), so plain pytest checks them
(tests/test_view_token_budget.py). The page (app_pages/token_budget.py) reads widgets, calls these,
makes one cached call into convmem per computation and draws.

>>> b = LimitBounds(1000, 200000, 1000, 32000)
>>> summary_budget_default(b), target_tokens_default(b)
(3000, 16000)
>>> a = settings_a(AControls(limit=32000, summaries=True, summary_budget=5000), b)
>>> a.settings.summary_budget, a.settings.target, a.budget_note
(5000, None, None)
>>> event_for_message([3, 9, 20], dropped_at=9)
1
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from convmem import HistorySettings

from .tables_budget import LimitBounds
from .url_params import POLICIES

__all__ = [
    "AControls",
    "BControls",
    "Derived",
    "summary_budget_default",
    "target_tokens_default",
    "settings_a",
    "settings_b",
    "ChartPick",
    "chart_pick",
    "sweep_pick",
    "event_for_message",
    "event_nav",
    "EventNav",
]

def summary_budget_default(bounds: LimitBounds) -> int:
    """Default summary budget: a tenth of the default limit, on the slider's step (tokens)."""
    return max(bounds.step, round(bounds.default / 10 / bounds.step) * bounds.step)


def target_tokens_default(bounds: LimitBounds) -> int:
    """Default target in tokens (target mode "tokens"): half the default limit, at least one step."""
    return max(bounds.lo, bounds.default // 2)


@dataclass(frozen=True, slots=True)
class AControls:
    """The values of setting A's widgets, by name (tokens; ``target_pct`` in % of the limit).

    ``target_mode`` is one of url_params.TARGET_MODES ("off", "percent", "tokens");
    ``summary_budget`` is the raw number input (None: its default).
    """

    limit: int
    target_mode: str = "off"
    target_pct: int = 50
    target_tokens: int | None = None
    pin_system: bool = False
    pin_latest_user: bool = False
    keep_tool_groups: bool = False
    start_on_user: bool = False
    summaries: bool = False
    summary_budget: int | None = None


@dataclass(frozen=True, slots=True)
class BControls:
    """Setting B's widgets: ``limit`` None means A's; ``target_pct`` 100 means no target."""

    limit: int | None = None
    target_pct: int = 100
    summaries: bool = False
    policies: tuple[str, ...] = tuple(POLICIES)


@dataclass(frozen=True, slots=True)
class Derived:
    """HistorySettings from controls, plus what to say under the target and the summary budget
    inputs when their value was clipped (None: nothing)."""

    settings: HistorySettings
    target_note: str | None = None
    budget_note: str | None = None


def settings_a(c: AControls, bounds: LimitBounds) -> Derived:
    """Setting A as History takes it. A target at or above the limit is no target; a target in
    tokens and a summary budget are clipped (to the limit, to the target) with a note saying so.

    >>> settings_a(AControls(limit=100, target_mode="tokens", target_tokens=300), LimitBounds(10, 200, 10, 100)).target_note
    'Clipped to the limit, 100 tokens.'
    """
    target_note = budget_note = None
    limit = int(c.limit)
    target: int | None = None
    if c.target_mode == "percent":
        target = round(limit * c.target_pct / 100)
    elif c.target_mode == "tokens":
        raw = target_tokens_default(bounds) if c.target_tokens is None else int(c.target_tokens)
        target = min(raw, limit)
        if raw > limit:
            target_note = f"Clipped to the limit, {limit:,} tokens."
    if target is not None and target >= limit:
        target = None
    budget = None
    if c.summaries:
        cap = limit if target is None else target
        raw_budget = summary_budget_default(bounds) if c.summary_budget is None else int(c.summary_budget)
        budget = min(raw_budget, cap)
        if raw_budget > cap:
            budget_note = f"Clipped to the {'target' if target is not None else 'limit'}, {cap:,} tokens."
    return Derived(
        HistorySettings(
            limit,
            target,
            pin_system=c.pin_system,
            pin_latest_user=c.pin_latest_user,
            keep_tool_groups=c.keep_tool_groups,
            start_on_user=c.start_on_user,
            summary_budget=budget,
        ),
        target_note,
        budget_note,
    )


def settings_b(c: BControls, a: HistorySettings, bounds: LimitBounds) -> HistorySettings:
    """Setting B: its own limit (else A's), target in % of it (100 = none), the policies named in
    ``c.policies`` (History's keyword names), summaries with A's budget (else the default),
    clipped to B's target."""
    limit = a.limit if c.limit is None else int(c.limit)
    target = round(limit * c.target_pct / 100) if c.target_pct < 100 else None
    cap = limit if target is None else target
    budget = None
    if c.summaries:
        base = a.summary_budget if a.summary_budget is not None else summary_budget_default(bounds)
        budget = min(base, cap)
    on = {p: p in c.policies for p in POLICIES}
    return HistorySettings(limit, target, summary_budget=budget, **on)


@dataclass(frozen=True, slots=True)
class ChartPick:
    """A click on the totals chart: a drop event (0-based ``event``) or an add ``step``."""

    event: int | None = None
    step: int | None = None


def chart_pick(points: Iterable[Mapping]) -> ChartPick | None:
    """Read plotly selection points: a marker's ``customdata`` is its event index (first wins);
    otherwise the first point's ``x`` is an add step. None when nothing usable was clicked.

    >>> chart_pick([{"x": 5, "customdata": [2]}]), chart_pick([{"x": 7.0}]), chart_pick([])
    (ChartPick(event=2, step=None), ChartPick(event=None, step=7), None)
    """
    for p in points:
        cd = p.get("customdata")
        if isinstance(cd, (list, tuple)):
            cd = cd[0] if cd else None
        if cd is not None:
            return ChartPick(event=int(cd))
        if p.get("x") is not None:
            return ChartPick(step=int(p["x"]))
    return None


def sweep_pick(points: Iterable[Mapping]) -> int | None:
    """The limit of the first clicked sweep point (its ``x``), or None."""
    for p in points:
        if p.get("x") is not None:
            return int(p["x"])
    return None


def event_for_message(event_steps: Sequence[int], dropped_at: int | None) -> int | None:
    """The 0-based drop event that dropped a message, from the add step that dropped it
    (``Replay.dropped_at`` of that message); None when it was never dropped. ``event_steps`` is
    sorted (one compaction record per add at most). O(log events)."""
    if dropped_at is None:
        return None
    k = bisect.bisect_left(event_steps, dropped_at)
    return k if k < len(event_steps) and event_steps[k] == dropped_at else None


@dataclass(frozen=True, slots=True)
class EventNav:
    """Which drop event is shown (0-based ``index``), and whether previous / next exist."""

    index: int
    count: int

    @property
    def has_previous(self) -> bool:
        return self.index > 0

    @property
    def has_next(self) -> bool:
        return self.index < self.count - 1

    @property
    def label(self) -> str:
        return f"Drop event {self.index + 1:,} of {self.count:,}"


def event_nav(chosen: int | None, count: int) -> EventNav | None:
    """The event to show from the 1-based number input (None or out of range: the first).

    >>> event_nav(None, 3), event_nav(9, 3), event_nav(2, 0)
    (EventNav(index=0, count=3), EventNav(index=0, count=3), None)
    """
    if count <= 0:
        return None
    if chosen is None or not 1 <= int(chosen) <= count:
        return EventNav(0, count)
    return EventNav(int(chosen) - 1, count)
