"""Replaying a conversation through History: what the dashboard's token-budget page draws.

:func:`replay` adds every message of a conversation to a :class:`~convmem.history.History` built
from plain :class:`HistorySettings` (hashable, so a UI can cache on them) and records, per add, the
total, the kept count and whether the start of the context changed; per message, when and why it was
dropped. :func:`sweep_limits` does it for a range of limits, :func:`context_at` rebuilds the context
at any step.

>>> from convmem import Message
>>> msgs = [Message(f"m{i}", "user", 4) for i in range(5)]
>>> r = replay(msgs, HistorySettings(limit=10))
>>> r.totals, r.dropped_at
((4, 8, 8, 8, 8), (2, 3, 4, None, None))
>>> r.stats.compactions, r.stats.prefix_changes, r.stats.max_context
(3, 3, 8)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .history import TRIGGER_ARRIVAL, Compaction, History
from .message import Message
from .summarizers import ExtractiveSummarizer

__all__ = [
    "HistorySettings",
    "Replay",
    "ReplayStats",
    "SweepRow",
    "replay",
    "sweep_limits",
    "context_at",
]


@dataclass(frozen=True, slots=True)
class HistorySettings:
    """History's keywords as a plain, hashable value (for UIs, URLs and caches).

    ``summary_budget`` set (an int) means "summarize with :class:`ExtractiveSummarizer` of that many
    tokens"; None means no summarizer. ``target`` None means the limit. Validation happens in
    :meth:`build` (History's own checks: ValueError/TypeError naming the values).
    """

    limit: int
    target: int | None = None
    pin_system: bool = False
    pin_latest_user: bool = False
    keep_tool_groups: bool = False
    start_on_user: bool = False
    summary_budget: int | None = None

    def build(self, count_tokens=None, on_compaction=None) -> History:
        """A fresh History with these settings.

        ``count_tokens`` (text -> tokens) is the summarizer's counter; ``on_compaction`` is passed on.
        """
        summarizer = None
        if self.summary_budget is not None:
            summarizer = ExtractiveSummarizer(max_tokens=self.summary_budget, count_tokens=count_tokens)
        return History(
            self.limit,
            target=self.target,
            pin_system=self.pin_system,
            pin_latest_user=self.pin_latest_user,
            keep_tool_groups=self.keep_tool_groups,
            start_on_user=self.start_on_user,
            summarizer=summarizer,
            summary_budget=self.summary_budget,
            on_compaction=on_compaction,
        )

    @classmethod
    def all_policies(cls, limit: int, target: int | None = None, summary_budget: int | None = None) -> HistorySettings:
        """Every pin and group policy on (what most agents want)."""
        return cls(limit, target, True, True, True, True, summary_budget)


@dataclass(frozen=True, slots=True)
class ReplayStats:
    """Summary figures of one replay (tokens are tokens; counts are adds or messages).

    Attributes:
        compactions: adds that dropped something from the context (arrival-only refusals excluded).
        mean_context, max_context: the total after each add, averaged / at its largest.
        messages_dropped, tokens_dropped: over the whole replay (summaries not counted).
        prefix_changes: adds after which the context no longer starts with what it started with
            before (a dropped message or a new summary): each re-sends the whole prompt uncached.
        summaries_accepted, summaries_rejected: summary outcomes.
        over_limit_steps: adds after which pinned messages alone kept the total above the limit.
    """

    compactions: int
    mean_context: float
    max_context: int
    messages_dropped: int
    tokens_dropped: int
    prefix_changes: int
    summaries_accepted: int
    summaries_rejected: int
    over_limit_steps: int


@dataclass(frozen=True, slots=True)
class Replay:
    """The trace of one conversation through one History.

    Per add (index = step): ``totals``, ``kept_counts``, ``prefix_changed``. Per message (index =
    position in ``messages``, which is also its add step): ``dropped_at`` (the step that dropped it,
    None while kept), ``drop_reason``, ``summarized``. ``compactions`` are History's records.
    """

    messages: tuple[Message, ...]
    settings: HistorySettings
    totals: tuple[int, ...]
    kept_counts: tuple[int, ...]
    prefix_changed: tuple[bool, ...]
    dropped_at: tuple[int | None, ...]
    drop_reason: tuple[str | None, ...]
    summarized: tuple[bool, ...]
    compactions: tuple[Compaction, ...]
    final_context: tuple[Message, ...]
    stats: ReplayStats = field(repr=False)


def replay(messages: Sequence[Message], settings: HistorySettings, *, count_tokens=None) -> Replay:
    """Add every message to a fresh History built from ``settings``; record what happened.

    O(n) plus History's own cost (amortized O(1) per add plus drops). Message ids must be unique
    within ``messages`` (ValueError naming the duplicate otherwise).
    """
    if not isinstance(settings, HistorySettings):
        raise TypeError(f"replay settings must be a HistorySettings, got {settings!r}")
    records: list[Compaction] = []
    history = settings.build(count_tokens, on_compaction=records.append)
    index: dict[str, int] = {}
    for i, m in enumerate(messages):
        if not isinstance(m, Message):
            raise TypeError(f"replay messages[{i}] must be a Message, got {m!r}")
        if m.id in index:
            raise ValueError(f"replay messages[{i}].id {m.id!r} repeats messages[{index[m.id]}]")
        index[m.id] = i
    n = len(messages)
    totals = [0] * n
    kept = [0] * n
    prefix = [False] * n
    dropped_at: list[int | None] = [None] * n
    reason: list[str | None] = [None] * n
    summarized = [False] * n
    over = 0
    accepted = rejected = 0
    last_record = 0
    for step, m in enumerate(messages):
        history.add(m)
        totals[step] = history.total()
        kept[step] = len(history)
        over += history.over_limit
        while last_record < len(records):
            rec = records[last_record]
            last_record += 1
            changed = rec.trigger != TRIGGER_ARRIVAL and any(d.added_step < step for d in rec.dropped)
            for d in rec.dropped:
                i = index[d.id]
                dropped_at[i] = rec.step
                reason[i] = d.reason
                summarized[i] = d.summarized
            if rec.summary is not None:
                if rec.summary.accepted:
                    accepted += 1
                    changed = True
                else:
                    rejected += 1
            prefix[step] = prefix[step] or changed
    compactions = tuple(records)
    dropped_tokens = sum(messages[i].tokens for i in range(n) if dropped_at[i] is not None)
    stats = ReplayStats(
        compactions=sum(1 for c in compactions if c.trigger != TRIGGER_ARRIVAL),
        mean_context=(sum(totals) / n) if n else 0.0,
        max_context=max(totals, default=0),
        messages_dropped=sum(1 for d in dropped_at if d is not None),
        tokens_dropped=dropped_tokens,
        prefix_changes=sum(prefix),
        summaries_accepted=accepted,
        summaries_rejected=rejected,
        over_limit_steps=over,
    )
    return Replay(
        messages=tuple(messages),
        settings=settings,
        totals=tuple(totals),
        kept_counts=tuple(kept),
        prefix_changed=tuple(prefix),
        dropped_at=tuple(dropped_at),
        drop_reason=tuple(reason),
        summarized=tuple(summarized),
        compactions=compactions,
        final_context=tuple(history.context()),
        stats=stats,
    )


def context_at(messages: Sequence[Message], settings: HistorySettings, step: int, *, count_tokens=None) -> list[Message]:
    """The exact context (summary included) right after add number ``step`` (0-based).

    Replays the first ``step + 1`` messages: O(step). Raises ValueError when step is out of range.
    """
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"context_at step must be an int, got {step!r}")
    if not 0 <= step < len(messages):
        raise ValueError(f"context_at step must be in [0, {len(messages) - 1}], got {step}")
    history = settings.build(count_tokens)
    for m in messages[: step + 1]:
        history.add(m)
    return history.context()


@dataclass(frozen=True, slots=True)
class SweepRow:
    """One limit of a sweep: ``limit`` and the replay's :class:`ReplayStats` under it."""

    limit: int
    stats: ReplayStats


def sweep_limits(
    messages: Sequence[Message],
    settings: HistorySettings,
    limits: Sequence[int],
    *,
    count_tokens=None,
) -> list[SweepRow]:
    """Replay under each limit (other settings kept; a target keeps its ratio to the limit).

    O(len(limits) * replay). A summary budget larger than a swept target is clipped to it.
    """
    rows = []
    for limit in limits:
        target = settings.target
        if target is not None and settings.limit:
            target = min(limit, round(target * limit / settings.limit))
        budget = settings.summary_budget
        cap = limit if target is None else target
        if budget is not None:
            budget = min(budget, cap)
        s = replace(settings, limit=limit, target=target, summary_budget=budget)
        rows.append(SweepRow(limit, replay(messages, s, count_tokens=count_tokens).stats))
    return rows
