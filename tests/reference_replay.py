"""The per-add replay: convmem.replay as it was before the record-driven rewrite (issue 10 item 3).

It reads History after every add (the total, len(), the records and clearings that add made) and
fills every column in the same pass: slow, but each value comes straight from History. tests/
test_replay_reference.py checks that convmem.replay gives the very same Replay.
"""

from __future__ import annotations

from collections.abc import Sequence

from convmem import HistorySettings, Message
from convmem.history import TRIGGER_ARRIVAL, Clearing
from convmem.replay import CompactionLog, Replay, ReplayStats, _check_messages


def reference_replay(
    messages: Sequence[Message], settings: HistorySettings, count_tokens, tool_names=None, thinking=None
) -> Replay:
    """Replay the messages, reading History after every add."""
    if not isinstance(settings, HistorySettings):
        raise TypeError(f"replay settings must be a HistorySettings, got {settings!r}")
    raw_records: list[tuple] = []
    clearings: list[Clearing] = []
    history = settings.build(count_tokens, tool_names=tool_names, on_clearing=clearings.append, thinking=thinking)
    history._attach_sink(raw_records.append)
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        _check_messages(messages)  # the TypeError naming messages
    seen: dict[str, int] = {}
    for i, m in enumerate(messages):
        if not isinstance(m, Message):
            raise TypeError(f"replay messages[{i}] must be a Message, got {m!r}")
        if m.id in seen:
            raise ValueError(f"replay messages[{i}].id {m.id!r} repeats messages[{seen[m.id]}]")
        seen[m.id] = i
    del seen
    n = len(messages)
    totals = [0] * n
    kept = [0] * n
    prefix = [False] * n
    dropped_at: list[int | None] = [None] * n
    reason: list[str | None] = [None] * n
    summarized = [False] * n
    over = 0
    accepted = rejected = 0
    summaries: list[Message] = []
    compactions = 0
    dropped_tokens = 0
    add = history.add
    cleared_at: list[int | None] = [None] * n
    for step, m in enumerate(messages):
        before = len(raw_records)
        cleared_before = len(clearings)
        add(m)
        total = history.total()
        totals[step] = total
        kept[step] = len(history)
        if total > settings.limit:
            over += 1
        cleared_now = False
        for record in clearings[cleared_before:]:  # thinking and tool results: up to two per add
            for c in record.cleared:
                cleared_at[c.added_step] = step
                if c.added_step < step:
                    cleared_now = True  # the prompt changes at the first cleared message
        if len(raw_records) == before:
            prefix[step] = cleared_now
            continue
        # One add leaves at most one record. Its items' seq is the add step, which is the
        # message's index here, so no id lookup is needed.
        _, _, trigger, _, _, dropped, event = raw_records[-1]
        changed = False
        is_summarized = event is not None and event.accepted
        for (seq, msg), why in dropped:
            dropped_at[seq] = step
            dropped_tokens += msg.tokens  # a cleared message: its placeholder (what left the context)
            reason[seq] = why
            summarized[seq] = is_summarized
            if seq < step:
                changed = True
        if trigger != TRIGGER_ARRIVAL:
            compactions += 1
        else:
            changed = False
        if event is not None:
            if event.accepted:
                accepted += 1
                changed = True
                summaries.append(history.summary)
            elif event.id != event.removed_id:  # a new summary was refused (not just a removal)
                rejected += 1
            if event.removed_id is not None:
                changed = True
        prefix[step] = changed or cleared_now
    stats = ReplayStats(
        compactions=compactions,
        mean_context=(sum(totals) / n) if n else 0.0,
        max_context=max(totals, default=0),
        messages_dropped=sum(1 for d in dropped_at if d is not None),
        tokens_dropped=dropped_tokens,
        prefix_changes=sum(prefix),
        summaries_accepted=accepted,
        summaries_rejected=rejected,
        over_limit_steps=over,
        clearings=len(clearings),
        messages_cleared=sum(len(c.cleared) for c in clearings),
        tokens_cleared=sum(c.freed_tokens for c in clearings),
        tokens_sent=sum(totals),
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
        compactions=CompactionLog(raw_records),
        final_context=tuple(history.context()),
        stats=stats,
        summaries=tuple(summaries),
        clearings=tuple(clearings),
        cleared_at=tuple(cleared_at),
    )

