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

import threading
import traceback
from array import array
from collections import deque
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import accumulate, chain, islice, repeat
from operator import attrgetter, itemgetter, methodcaller, sub
from types import TracebackType
from typing import TypeVar, overload

from ._gc import gc_paused
from .history import (
    OVER_LIMIT,
    PIN_MOVED,
    START_ON_USER,
    TOO_BIG,
    TOOL_GROUP,
    TRIGGER_ARRIVAL,
    TRIGGER_LIMIT,
    TRIGGER_PIN_MOVED,
    Clearing,
    ClearThinking,
    ClearToolUses,
    Compaction,
    History,
    SummaryEvent,
    compaction_from_raw,
)
from .message import Message
from .summarizers import ExtractiveSummarizer, _own_counter_memo, _span_text

__all__ = [
    "HistorySettings",
    "CompactionLog",
    "SummaryLog",
    "Replay",
    "ReplayStats",
    "SweepRow",
    "replay",
    "SlicedReplay",
    "PAUSE_EVERY",
    "sweep_limits",
    "context_at",
    "tool_names_of",
    "thinking_tokens_of",
]


@dataclass(frozen=True, slots=True)
class HistorySettings:
    """History's keywords as a plain, hashable value (for UIs, URLs and caches).

    ``summary_budget`` set (an int) means "summarize with :class:`ExtractiveSummarizer` of that many
    tokens"; None means no summarizer. ``target`` None means the limit. Validation happens in
    :meth:`build` (History's own checks: ValueError/TypeError naming the values).

    ``clear_trigger`` set (an int, tokens) turns clearing on: a :class:`~convmem.ClearToolUses`
    with that trigger, ``clear_keep``, ``clear_at_least``, ``exclude_tools`` and
    ``placeholder_tokens`` (Anthropic's / LangChain's defaults: keep 3, clear_at_least 0). Clearing
    runs first; drops and the summary only when the total is still over the limit.
    ``clear_thinking_keep`` set (an int) clears the thinking of all but that many newest thinking
    turns (:class:`~convmem.ClearThinking`; the thinking tokens come from the ``thinking`` mapping
    given to :meth:`build` / :func:`replay`, e.g. :func:`thinking_tokens_of`).
    """

    limit: int
    target: int | None = None
    pin_system: bool = False
    pin_latest_user: bool = False
    keep_tool_groups: bool = False
    start_on_user: bool = False
    summary_budget: int | None = None
    clear_trigger: int | None = None
    clear_keep: int = 3
    clear_at_least: int = 0
    exclude_tools: tuple[str, ...] = ()
    placeholder_tokens: int = 4
    clear_thinking_keep: int | None = None

    @property
    def clear(self) -> ClearToolUses | None:
        """The clearing settings as a :class:`~convmem.ClearToolUses`, or None when off."""
        if self.clear_trigger is None:
            return None
        return ClearToolUses(
            trigger=self.clear_trigger,
            keep=self.clear_keep,
            clear_at_least=self.clear_at_least,
            exclude_tools=tuple(self.exclude_tools),
            placeholder_tokens=self.placeholder_tokens,
        )

    def build(
        self, count_tokens=None, on_compaction=None, *, tool_names=None, on_clearing=None, thinking=None
    ) -> History:
        """A fresh History with these settings.

        ``count_tokens`` (text -> tokens) is the summarizer's counter; ``on_compaction`` and
        ``on_clearing`` are passed on; ``tool_names`` (call id -> tool name) names the tools for
        ``exclude_tools`` (e.g. :func:`tool_names_of` of a conversation).
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
            clear=self.clear,
            tool_names=tool_names,
            on_clearing=on_clearing,
            clear_thinking=None if self.clear_thinking_keep is None else ClearThinking(self.clear_thinking_keep),
            thinking=thinking,
        )

    def at_limit(self, limit: int) -> HistorySettings:
        """These settings at another ``limit`` (tokens), as a limit sweep tries them: a target and a
        clearing trigger each keep their ratio to the limit (rounded, at most the new limit), a
        summary budget is clipped to the new cut (the target, else the limit); every other field
        (pins, groups, clearing's keep and minimum, thinking) is kept.

        Why the trigger scales: a trigger at the limit (the dashboard's default) stays at the limit
        at every swept limit; a fixed one above a smaller swept limit would never fire there, and
        the sweep would show that limit without clearing (session 20, docs/decisions.md).

        O(1); no validation (:meth:`build` validates). ``at_limit(self.limit)`` equals ``self`` (a copy) for
        settings whose target, trigger and budget already fit their limit.

        >>> s = HistorySettings(1000, 500, pin_system=True, summary_budget=300, clear_trigger=1000).at_limit(400)
        >>> s.limit, s.target, s.summary_budget, s.pin_system, s.clear_trigger
        (400, 200, 200, True, 400)
        """
        target = self.target
        if target is not None and self.limit:
            target = min(limit, round(target * limit / self.limit))
        trigger = self.clear_trigger
        if trigger is not None and self.limit:
            trigger = min(limit, round(trigger * limit / self.limit))
        budget = self.summary_budget
        if budget is not None:
            budget = min(budget, limit if target is None else target)
        return replace(self, limit=limit, target=target, summary_budget=budget, clear_trigger=trigger)

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
        clearings, messages_cleared, tokens_cleared: clearing passes, tool results they replaced by
            the placeholder, and the tokens they freed (0 with clearing off). A clearing also counts
            in ``prefix_changes``: the prompt changes at the first cleared message.
        tokens_sent: the sum of the totals after each add (what a model call per add is sent).
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
    clearings: int = 0
    messages_cleared: int = 0
    tokens_cleared: int = 0
    tokens_sent: int = 0


class CompactionLog(Sequence[Compaction]):
    """Every compaction record of a replay, built into :class:`Compaction` objects only on access.

    A replay of 10^5 messages can hold tens of thousands of records; building them all up front
    cost more than the replay. ``steps``, ``totals_after``, ``dropped_counts`` and ``triggers``
    are plain tuples (one entry per record) for charts, ``summary_events`` the summarizer outcomes;
    indexing builds (and keeps) one Compaction. O(1) per access (plus the record's drops).

    Storage is columnar: one tuple per field and three flat lists for every dropped message (its
    add step, the message, the reason), sliced per record by offsets. A cached replay then holds a
    few dozen container objects for its records instead of four per dropped message, so Python's
    cyclic GC, which walks every container object at each full collection, does not slow every
    later rerun of a dashboard that keeps a dozen replays (issue 10 item 3; docs/performance.md).

    The policy walk's log (:meth:`_of_columns`) does not even hold a message or reason per drop:
    its drops' messages and reasons are looked up by step in the replay's own ``messages`` and
    ``drop_reason`` columns (a message is dropped at most once, and never replaced by a
    placeholder there).

    Args:
        raw: History's raw records (see ``History._attach_sink``): the full shape, or the base
            rule's flat records ``(step, message_id, total_before, total_after, goal, first_step,
            *dropped messages)``. One History makes one shape.
        messages: given only with the summary walk's range records ``(step, message_id,
            total_before, total_after, goal, first, stop, SummaryEvent | None)`` (see
            :func:`_walk_summaries`): the replayed messages, record ``i`` dropping
            ``messages[first:stop]``.
    """

    __slots__ = (
        "_built", "steps", "message_ids", "triggers", "totals_before", "totals_after", "dropped_counts",
        "_events", "_starts", "_seqs", "_messages", "_reasons", "_by_step",
    )

    def __init__(self, raw: Sequence[tuple], messages: Sequence[Message] | None = None) -> None:
        self._built: dict[int, Compaction] = {}
        if messages is not None:
            # Range records: the runs first:stop follow each other from message 0 (a record
            # that only removed the summary has an empty run), so the drops are messages[:stop]
            # of the last record; each reason follows from the message's tokens and the goal.
            steps, ids, before, after, goals, firsts, stops, events = zip(*raw) if raw else ((),) * 8
            counts = list(map(int.__sub__, stops, firsts))
            end = stops[-1] if raw else 0
            goal = goals[0] if raw else 0
            seqs = range(end)
            messages = list(messages[:end])
            reasons = [OVER_LIMIT if m.tokens <= goal else TOO_BIG for m in messages]
            self.triggers = (TRIGGER_LIMIT,) * len(raw)
            self.steps, self.message_ids, self.totals_before, self.totals_after = steps, ids, before, after
            self._events = events
        elif raw and raw[0][2].__class__ is not str:
            # Flat records: the drops are the add steps first, first + 1, ...; each reason follows
            # from the message's tokens and the one goal (as history._expand unfolds them).
            goal = raw[0][4]
            counts = [len(r) - 6 for r in raw]
            seqs = list(chain.from_iterable(range(r[5], r[5] + k) for r, k in zip(raw, counts)))
            messages = list(chain.from_iterable(r[6:] for r in raw))
            reasons = [OVER_LIMIT if m.tokens <= goal else TOO_BIG for m in messages]
            self.triggers: tuple[str, ...] = (TRIGGER_LIMIT,) * len(raw)
            self.totals_before: tuple[int, ...] = tuple(r[2] for r in raw)
            self.totals_after: tuple[int, ...] = tuple(r[3] for r in raw)
            self._events: tuple[SummaryEvent | None, ...] = (None,) * len(raw)
            self.steps: tuple[int, ...] = tuple(r[0] for r in raw)
            self.message_ids: tuple[str, ...] = tuple(r[1] for r in raw)
        else:
            # C-level unzipping: the records' seven fields, then ((seq, message), reason) pairs ->
            # three flat columns.
            steps, ids, triggers, before, after, dropped, events = zip(*raw) if raw else ((),) * 7
            counts = list(map(len, dropped))
            pairs = list(chain.from_iterable(dropped))
            items = list(map(_FIRST, pairs))
            seqs = list(map(_FIRST, items))
            messages = list(map(_SECOND, items))
            reasons = list(map(_SECOND, pairs))
            self.steps, self.message_ids, self.triggers = steps, ids, triggers
            self.totals_before, self.totals_after, self._events = before, after, events
        starts = [0, *accumulate(counts)]
        self.dropped_counts: tuple[int, ...] = tuple(counts)
        self._starts = array("q", starts)  # not containers: nothing for the GC to walk
        self._seqs = array("q", seqs)
        self._messages: Sequence[Message] = messages
        self._reasons: Sequence[str | None] = reasons
        self._by_step = False  # _messages and _reasons: one per drop

    @classmethod
    def _of_columns(
        cls, records: list[tuple], seqs: list[int], messages: tuple[Message, ...], drop_reason: tuple[str | None, ...]
    ) -> CompactionLog:
        """The log of :func:`_walk_policies`' columns (see :class:`_PolicyWalk`): ``records`` as
        ``(step, message_id, trigger, total_before, total_after, end, SummaryEvent | None)``, their drops the steps
        ``seqs[previous end:end]``, each drop's message and reason ``messages[seq]`` and
        ``drop_reason[seq]`` (the replay's own tuples, shared, not copied). C-level unzipping,
        O(records + drops)."""
        log = cls.__new__(cls)
        log._built = {}
        steps, ids, triggers, before, after, ends, events = zip(*records) if records else ((),) * 7
        log.steps, log.message_ids, log.triggers = steps, ids, triggers
        log.totals_before, log.totals_after = before, after
        log._events = events
        log._starts = starts = array("q", (0, *ends))
        log.dropped_counts = tuple(map(sub, ends, starts))
        log._seqs = array("q", seqs)
        log._messages = messages
        log._reasons = drop_reason
        log._by_step = True
        return log

    @property
    def summary_events(self) -> tuple[tuple[int, SummaryEvent], ...]:
        """``(step, SummaryEvent)`` for every record where the summarizer ran, in order. O(records)
        (at C level when it never ran: summaries off)."""
        events = self._events
        if events.count(None) == len(events):
            return ()
        return tuple((s, e) for s, e in zip(self.steps, events) if e is not None)

    def _record(self, i: int) -> tuple:
        """Record ``i`` in History's full raw shape (see :attr:`_raw`)."""
        lo, hi = self._starts[i], self._starts[i + 1]
        seqs = self._seqs[lo:hi]
        if self._by_step:
            messages = list(map(self._messages.__getitem__, seqs))
            reasons = list(map(self._reasons.__getitem__, seqs))
        else:
            messages, reasons = self._messages[lo:hi], self._reasons[lo:hi]
        dropped = list(zip(zip(seqs, messages), reasons))
        return (
            self.steps[i], self.message_ids[i], self.triggers[i], self.totals_before[i], self.totals_after[i],
            dropped, self._events[i],
        )

    @property
    def _raw(self) -> list[tuple]:
        """Every record in History's full shape ``(step, message_id, trigger, total_before,
        total_after, [((seq, message), reason), ...], SummaryEvent | None)``; built afresh on each
        read (O(records + drops); convmem.prompt_cache reads it once per call)."""
        return [self._record(i) for i in range(len(self.steps))]

    def __len__(self) -> int:
        return len(self.steps)

    @overload
    def __getitem__(self, i: int) -> Compaction: ...
    @overload
    def __getitem__(self, i: slice) -> list[Compaction]: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self.steps)))]
        if i < 0:
            i += len(self.steps)
        if not 0 <= i < len(self.steps):
            raise IndexError(f"CompactionLog index {i} out of range (len {len(self.steps)})")
        built = self._built.get(i)
        if built is None:
            built = self._built[i] = compaction_from_raw(self._record(i))
        return built

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CompactionLog):
            return list(self) == list(other)
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CompactionLog({len(self.steps)} records)"


class SummaryLog(Sequence["Message | None"]):
    """The accepted summaries of a replay, in order, each built into a Message only on access.

    Entry ``i`` is the summary accepted by the ``i``-th record whose summarizer outcome was
    accepted, as it stood after that add: a :class:`~convmem.Message` (id, role, tokens and
    content equal to what :class:`~convmem.ExtractiveSummarizer` makes eagerly), or None when the
    same add removed it again (pinned messages left it no room). ``ids`` and ``tokens`` are plain
    columns (None / 0 for those entries); :meth:`get` finds a summary by id.

    Why lazy: a replay of 10^5 messages makes ~20,000 summaries of ~12 KB each (0.2-0.3 GB of
    text, and most of the replay's time spent joining it). The replay's summarizer keeps every
    line it made once (O(dropped messages)) and each summary as a span of that log; a summary's
    text is joined from its span when read: O(its lines) per access, nothing kept after it.

    Args:
        summaries: the summary messages History held, ``content=None`` when made deferred (their
            text comes from ``summarizer``), else kept as they are; None entries stay None.
        summarizer: the replay's deferred ExtractiveSummarizer, or None.
    """

    __slots__ = ("ids", "tokens", "_role", "_calls", "_full", "_spans", "_index")

    def __init__(self, summaries: Sequence[Message | None] = (), summarizer: ExtractiveSummarizer | None = None) -> None:
        self.ids: tuple[str | None, ...] = tuple(None if m is None else m.id for m in summaries)
        self.tokens: tuple[int, ...] = tuple(0 if m is None else m.tokens for m in summaries)
        made = summarizer._made if summarizer is not None else {}
        calls = [-1 if m is None or m.content is not None else made.get(m.id, -1) for m in summaries]
        self._calls = array("q", calls)
        # Summaries not made by the deferred summarizer (eager ones) are kept whole.
        self._full = {i: m for i, (m, c) in enumerate(zip(summaries, calls)) if m is not None and c < 0}
        self._role = summarizer.role if summarizer is not None else "system"
        # The summarizer's log and spans (not the summarizer: nothing of its counter is kept).
        self._spans = None if summarizer is None else summarizer._spans()
        self._index: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def _build(self, i: int) -> Message | None:
        sid = self.ids[i]
        if sid is None:
            return None
        call = self._calls[i]
        if call < 0:
            return self._full[i]
        assert self._spans is not None
        return Message(sid, self._role, self.tokens[i], content=_span_text(self._spans, call))

    @overload
    def __getitem__(self, i: int) -> Message | None: ...
    @overload
    def __getitem__(self, i: slice) -> list[Message | None]: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._build(j) for j in range(*i.indices(len(self.ids)))]
        if i < 0:
            i += len(self.ids)
        if not 0 <= i < len(self.ids):
            raise IndexError(f"SummaryLog index {i} out of range (len {len(self.ids)})")
        return self._build(i)

    def _stubs(self):
        """Each entry without building its text: deferred summaries as ``Message(id, role,
        tokens)`` (no content), others as they are. O(1) per entry (convmem.prompt_cache)."""
        role, full = self._role, self._full
        for i, (sid, tokens, call) in enumerate(zip(self.ids, self.tokens, self._calls)):
            if sid is None:
                yield None
            elif call < 0:
                yield full[i]
            else:
                yield Message(sid, role, tokens)

    def get(self, summary_id: str) -> Message | None:
        """The summary with id ``summary_id`` (a Message with its content), or None when no
        accepted summary has it. O(1) after a first O(len) call builds the index."""
        if self._index is None:
            self._index = {sid: i for i, sid in enumerate(self.ids) if sid is not None}
        i = self._index.get(summary_id)
        return None if i is None else self._build(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (SummaryLog, list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SummaryLog({len(self.ids)} summaries)"


@dataclass(frozen=True, slots=True)
class Replay:
    """The trace of one conversation through one History.

    Per add (index = step): ``totals``, ``kept_counts``, ``prefix_changed``. Per message (index =
    position in ``messages``, which is also its add step): ``dropped_at`` (the step that dropped it,
    None while kept), ``drop_reason``, ``summarized``. ``compactions`` are History's records, as a
    lazily built :class:`CompactionLog`.
    ``summaries`` are the accepted summary messages, in order (their ids are the accepted
    :class:`~convmem.history.SummaryEvent` ids), as a :class:`SummaryLog` that builds each one's
    text on access (``summaries.get(id)`` finds one by id), so a UI can show a summary's text.
    """

    messages: tuple[Message, ...]
    settings: HistorySettings
    totals: tuple[int, ...]
    kept_counts: tuple[int, ...]
    prefix_changed: tuple[bool, ...]
    dropped_at: tuple[int | None, ...]
    drop_reason: tuple[str | None, ...]
    summarized: tuple[bool, ...]
    compactions: CompactionLog
    final_context: tuple[Message, ...]
    stats: ReplayStats = field(repr=False)
    summaries: SummaryLog = field(default_factory=SummaryLog, repr=False)
    clearings: tuple[Clearing, ...] = field(default=(), repr=False)
    cleared_at: tuple[int | None, ...] = field(default=(), repr=False)


def tool_names_of(conversation) -> dict[str, str]:
    """Call id -> tool name for a :class:`~convmem.Conversation`'s tool calls (for
    ``exclude_tools``). O(calls).

    >>> from convmem import Conversation, ToolCall
    >>> tool_names_of(Conversation("c", None, (Message("a", "assistant", 1, tool_call_ids=("k",)),),
    ...                            tool_calls=(ToolCall("k", "get_order", "{}", "a"),)))
    {'k': 'get_order'}
    """
    return {tc.id: tc.name for tc in conversation.tool_calls}


def thinking_tokens_of(conversation) -> dict[str, int]:
    """Message id -> thinking tokens for a :class:`~convmem.Conversation` (for ``thinking``).

    An OpenAI Responses ``reasoning`` item is one assistant message that is all thinking (its
    tokens). Anthropic ``thinking`` blocks are not counted in a message's tokens by the loader
    (convmem.formats.anthropic: the API strips earlier turns' thinking), so they add nothing here.
    O(messages).

    Raises:
        ValueError: a conversation read from a Responses format (``openai-responses``,
            ``codex-cli``) without its records (``provider_records=False``): which messages are
            reasoning items is known only from them, and an empty mapping would silently clear no
            thinking.
    """
    if (conversation.source_format in ("openai-responses", "codex-cli") and conversation.messages
            and not conversation.records):
        raise ValueError(
            f"thinking_tokens_of needs the provider records of conversation {conversation.id!r} "
            f"({conversation.source_format}): load it with provider_records=True")
    out = {}
    for m, rec in zip(conversation.messages, conversation.records):
        if m.role == "assistant" and isinstance(rec, dict) and rec.get("type") == "reasoning" and m.tokens:
            out[m.id] = m.tokens
    return out


def replay(
    messages: Sequence[Message], settings: HistorySettings, *, count_tokens=None, tool_names=None, thinking=None
) -> Replay:
    """Add every message to a fresh History built from ``settings``; record what happened.

    O(n) plus History's own cost (amortized O(1) per add plus drops). Message ids must be unique
    within ``messages`` (ValueError naming the duplicate otherwise). ``tool_names`` (call id ->
    tool name) serves ``settings.exclude_tools``; ``cleared_at`` gives, per message, the step whose
    clearing replaced it by the placeholder (None when never cleared).
    """
    # Bulk allocation of acyclic records: the cyclic GC's scans only cost time here. What the
    # replay made then skips the young collections: it is alive (the Replay) and makes no cycle
    # (tests/test_replay_gc.py). A replay that raises is not promoted (a History left mid-add
    # may hold a cycle: the young collections find it).
    with gc_paused():
        return _to_end(_replay(messages, settings, count_tokens, tool_names, thinking))


#: Adds between two points where a replay may pause (:class:`SlicedReplay`). The walks and
#: History's add loops compare one int per add for it, which :func:`replay` does not notice.
PAUSE_EVERY = 2048

_T = TypeVar("_T")


def _to_end(steps: Generator[int, None, _T]) -> _T:
    """Run a replay's generator (it yields the adds done at each pause point) to its end; its
    return value. O(pauses) on top of the work."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


class SlicedReplay:
    """:func:`replay` done a slice at a time: the same :class:`Replay`, its work spread over
    :meth:`advance` calls (a dashboard's script runs, each held to a time goal, drawing progress
    in between).

    The walks and History's add loops may pause every :data:`PAUSE_EVERY` adds; the base rule
    with no policy and no summary (a two-pointer walk, about 0.05 s per 10^5 messages) does not,
    and is done by the first call. ``messages`` is taken as it is at construction (a tuple of it:
    a list changed between slices does not change the replay), and so are ``tool_names`` and
    ``thinking`` (a dict of each mapping). Errors are :func:`replay`'s: a
    TypeError for settings or messages that are not a HistorySettings or a sequence at
    construction, any other by the :meth:`advance` call that meets it and again by every later
    call (the replay is not resumed). An interruption in a slice (KeyboardInterrupt, SystemExit:
    not an Exception) propagates and sets the job back to its start. Thread-safe: concurrent
    calls take turns (one lock); a call from inside a slice (the token counter or summarizer
    calling :meth:`advance` again) is a RuntimeError, not a wait for ever. The cyclic GC is paused during each slice, as in
    :func:`replay`. Memory: the partial replay (the columns of the adds done so far, its History
    or walk state), released when it ends (a kept error keeps its traceback's lines, not the
    replay's locals); then the Replay.

    >>> from convmem import Message
    >>> msgs = [Message(f"m{i}", "user", 10) for i in range(5000)]
    >>> settings = HistorySettings(limit=100, pin_latest_user=True)
    >>> job = SlicedReplay(msgs, settings)
    >>> job.advance(2000), job.added, job.total
    (False, 2048, 5000)
    >>> job.advance(10_000), job.added
    (True, 5000)
    >>> job.result().stats == replay(msgs, settings).stats
    True
    """

    __slots__ = ("total", "added", "_start", "_steps", "_result", "_error", "_error_tb", "_lock", "_slicing")

    def __init__(
        self, messages: Sequence[Message], settings: HistorySettings, *, count_tokens=None, tool_names=None,
        thinking=None,
    ) -> None:
        if not isinstance(settings, HistorySettings):
            raise TypeError(f"replay settings must be a HistorySettings, got {settings!r}")
        _check_sequence(messages)
        messages = tuple(messages)  # as they are now: a list may change between slices
        tool_names, thinking = _mapping_now(tool_names), _mapping_now(thinking)  # so may a dict
        #: Messages to add (len(messages)).
        self.total = len(messages)
        #: Messages added so far (the total when done).
        self.added = 0
        self._start: Callable[[], Generator[int, None, Replay]] | None = partial(
            _replay, messages, settings, count_tokens, tool_names, thinking
        )
        self._steps: Generator[int, None, Replay] | None = self._start()
        self._result: Replay | None = None
        self._error: Exception | None = None
        self._error_tb: TracebackType | None = None
        self._lock = threading.Lock()
        #: The thread running a slice (threading.get_ident), else None.
        self._slicing: int | None = None

    @property
    def done(self) -> bool:
        """True when the replay ended (its Replay made, or it raised an Exception)."""
        return self._steps is None

    def advance(self, max_messages: int) -> bool:
        """Add at least ``max_messages`` more messages (up to the next pause point: at most
        PAUSE_EVERY - 1 more), or all that are left; True when the replay is done. O(the adds
        made) plus, on the last call, the Replay's assembly.

        Raises:
            ValueError: ``max_messages`` is not an int of at least 1.
            RuntimeError: called from inside this job's own slice (its token counter or
                summarizer): the replay meets it as that callable's error.
            Exception: what :func:`replay` raises for these messages and settings (every call
                from the one that met it).
            BaseException: an interruption met in the slice (KeyboardInterrupt, SystemExit): the
                replay is not ended by it, the next call starts it over.
        """
        if max_messages.__class__ is not int or max_messages < 1:
            raise ValueError(f"max_messages must be an int of at least 1, got {max_messages!r}")
        me = threading.get_ident()
        if self._slicing == me:  # only this thread sets it to its own id: no race
            raise RuntimeError("advance() was called from inside its own slice (by the token counter or summarizer)")
        with self._lock:
            self._raise_error()
            steps = self._steps
            if steps is None:
                return True
            stop = self.added + max_messages
            self._slicing = me
            try:
                with gc_paused():  # as replay(): what the slice made is alive and acyclic
                    try:
                        added = self.added
                        while added < stop:
                            added = next(steps)
                        self.added = added
                    except StopIteration as end:
                        self._result, self._steps, self._start, self.added = end.value, None, None, self.total
            except BaseException as exc:
                self._stop(exc)
                raise
            finally:
                self._slicing = None
            return self._steps is None

    def _stop(self, exc: BaseException) -> None:
        """After ``exc`` ended the generator: an Exception is the replay's error, kept with the
        replay's frames cleared (the partial History and columns are released; the lines stay); an
        interruption (any other BaseException) sets the job back to its start, unless the Replay
        was made before it (it came as the GC pause ended)."""
        if isinstance(exc, Exception):
            tb = exc.__traceback__.tb_next  # from the replay's generator down (not this call's frame)
            traceback.clear_frames(tb)
            self._error, self._error_tb, self._steps, self._start = exc, tb, None, None
        elif self._steps is not None:
            self._steps, self.added = self._start(), 0

    def _raise_error(self) -> None:
        """Raise the replay's error again, if it raised, with its first traceback (so a traceback
        does not grow, nor hold the frames of every caller, with each call that raises it)."""
        if self._error is not None:
            raise self._error.with_traceback(self._error_tb)

    def result(self) -> Replay:
        """The Replay (equal to ``replay(messages, settings, ...)``).

        Raises:
            RuntimeError: the replay is not done (call :meth:`advance` or :meth:`finish`).
            Exception: what the replay raised.
        """
        self._raise_error()
        if self._result is None:
            raise RuntimeError(f"the replay is not done: {self.added:,} of {self.total:,} messages added")
        return self._result

    def finish(self) -> Replay:
        """Advance to the end; the Replay. Raises as :meth:`advance`."""
        while not self.advance(max(1, self.total)):
            continue
        return self.result()


def _mapping_now(mapping):
    """A dict of ``mapping`` as it is now (a :class:`SlicedReplay` reads it over many slices);
    anything else as it is (None, or a value History refuses with its own error). O(len)."""
    return dict(mapping) if isinstance(mapping, Mapping) else mapping


def _replay(
    messages: Sequence[Message], settings: HistorySettings, count_tokens, tool_names=None, thinking=None
) -> Generator[int, None, Replay]:
    """The work of :func:`replay` (the GC is paused around it), as a generator: it yields the
    number of messages added at each pause point (every :data:`PAUSE_EVERY` adds of the walks and
    History's add loops, never in the base rule) and returns the Replay (:func:`_to_end`,
    :class:`SlicedReplay`). So do the walks it takes (``yield from``).

    The add loop only adds and reads the total and the kept count (two slot reads); History keeps
    every record (its record deque made unbounded: this History is private to the replay) and
    the per-message columns are filled from the records afterwards, so an add that drops nothing
    costs nothing more. The base rule's records stay flat and the summary walk's are ranges of
    ``messages`` (see :class:`CompactionLog`); the policy walk fills the columns itself
    (:func:`_replay_policies`).
    """
    if not isinstance(settings, HistorySettings):
        raise TypeError(f"replay settings must be a HistorySettings, got {settings!r}")
    clearings: list[Clearing] = []
    history = settings.build(count_tokens, tool_names=tool_names, on_clearing=clearings.append, thinking=thinking)
    _check_messages(messages)
    h = history
    if _policy_walk_applies(h, messages, count_tokens):
        return (yield from _replay_policies(messages, settings, h))
    if _clearing_walk_applies(messages, h, count_tokens):
        return (yield from _replay_clearing(messages, settings, h, clearings))
    records: deque[tuple] = deque()
    history._records = records  # every record, in order (History appends each one here)
    summaries: list[Message | None] = []
    n = len(messages)
    add = history.add
    final_context: tuple[Message, ...] | None = None
    summary_walk = False
    if h._plain:
        totals, kept, final_context = _walk_base_rule(messages, h._limit, h._goal, records)
    elif h._summarizer is None:
        totals = [0] * n
        kept = [0] * n
        step = 0
        pause = PAUSE_EVERY
        for m in messages:
            if step == pause:
                yield step
                pause += PAUSE_EVERY
            add(m)
            totals[step] = h._total
            kept[step] = h._kept_count
            step += 1
    elif summary_walk := _summary_walk_applies(messages, settings, h, count_tokens):
        h._summarizer._defer()
        totals, kept, final_summary, lo = yield from _walk_summaries(messages, h, records, summaries)
        final_context = tuple(messages[lo:])
        if final_summary is not None:
            final_context = (_full_summary(h._summarizer, final_summary), *final_context)
    else:
        summarizer = h._summarizer
        if isinstance(summarizer, ExtractiveSummarizer):
            summarizer._defer()  # summaries as spans of one line log; text built on access

        def on_record(raw: tuple) -> None:
            # The summary accepted by this record, as it stands after the add (None when the
            # same add removed it again: pinned messages left it no room).
            event = raw[6]
            if event is not None and event.accepted:
                summaries.append(h._summary)

        history._attach_sink(on_record)
        totals = [0] * n
        kept = [0] * n
        step = 0
        pause = PAUSE_EVERY
        try:
            for m in messages:
                if step == pause:
                    yield step
                    pause += PAUSE_EVERY
                add(m)
                totals[step] = h._total
                kept[step] = h._kept_count + (h._summary is not None)
                step += 1
        finally:
            # The sink closes over the History: no cycle outlives the replay, nor a sliced replay
            # dropped part-way (its generator closed at a pause) or one that raised.
            history._sink = None

    prefix = [False] * n
    dropped_at: list[int | None] = [None] * n
    reason: list[str | None] = [None] * n
    summarized = [False] * n
    cleared_at: list[int | None] = [None] * n
    accepted = rejected = 0
    compactions = 0
    messages_dropped = dropped_tokens = 0
    for c in clearings:  # thinking and tool results: up to two per add, in step order
        step = c.step
        for x in c.cleared:
            cleared_at[x.added_step] = step
            if x.added_step < step:
                prefix[step] = True  # the prompt changes at the first cleared message
    if summary_walk:
        compactions, messages_dropped, dropped_tokens, accepted, rejected = _fill_from_ranges(
            records, messages, dropped_at, reason, summarized, prefix
        )
    elif records and records[0][2].__class__ is not str:
        # The base rule's flat records: each drops the steps first, first + 1, ... (the oldest
        # kept), its tokens are total_before - total_after, and every reason follows from the
        # message's tokens and the one goal (see history._expand).
        goal = records[0][4]
        for rec in records:
            step = rec[0]
            first = rec[5]
            k = len(rec) - 6
            dropped_at[first : first + k] = repeat(step, k)
            messages_dropped += k
            dropped_tokens += rec[2] - rec[3]
            if first < step:
                prefix[step] = True
        reason[:messages_dropped] = [
            OVER_LIMIT if m.tokens <= goal else TOO_BIG for m in islice(messages, messages_dropped)
        ]
        compactions = len(records)
    else:
        for step, _mid, trigger, _before, _after, dropped, event in records:
            # Each item's seq is its add step, which is the message's index here (no id lookup).
            changed = False
            is_summarized = event is not None and event.accepted
            for (seq, msg), why in dropped:
                dropped_at[seq] = step
                reason[seq] = why
                summarized[seq] = is_summarized
                # What left the context: a cleared message's record holds its placeholder
                # (docs/decisions.md, clearing), as History's records and sweep_limits count it.
                dropped_tokens += msg.tokens
                if seq < step:
                    changed = True
            messages_dropped += len(dropped)
            if trigger != TRIGGER_ARRIVAL:
                compactions += 1
            else:
                changed = False
            if event is not None:
                a, r, c = _event_outcome(event)
                accepted += a
                rejected += r
                changed = changed or c
            if changed:
                prefix[step] = True
    summary_log = _summary_log(history, summaries)
    if final_context is None:
        final_context = tuple(history.context())
        if history._summary is not None and history._summary.content is None:
            # The deferred summary in place: the context shows it with its text.
            full = summary_log.get(history._summary.id)
            final_context = tuple(full if m is history._summary else m for m in final_context)
    limit = settings.limit
    tokens_sent = sum(totals)
    stats = ReplayStats(
        compactions=compactions,
        mean_context=(tokens_sent / n) if n else 0.0,
        max_context=max(totals, default=0),
        messages_dropped=messages_dropped,
        tokens_dropped=dropped_tokens,
        prefix_changes=sum(prefix),
        summaries_accepted=accepted,
        summaries_rejected=rejected,
        over_limit_steps=sum(1 for t in totals if t > limit),
        clearings=len(clearings),
        messages_cleared=sum(len(c.cleared) for c in clearings),
        tokens_cleared=sum(c.freed_tokens for c in clearings),
        tokens_sent=tokens_sent,
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
        compactions=CompactionLog(list(records), messages if summary_walk else None),
        final_context=final_context,
        stats=stats,
        summaries=summary_log,
        clearings=tuple(clearings),
        cleared_at=tuple(cleared_at),
    )


def _summary_walk_applies(messages, settings: HistorySettings, h: History, count_tokens) -> bool:
    """Whether :func:`_walk_summaries` may stand in for History: summaries on with no pin, group,
    start_on_user or clearing policy, the replay's own ExtractiveSummarizer under convmem's own
    counters (which never raise on a str), and no message id that a summary id could repeat
    (History refuses such an add; the walk leaves those to History)."""
    if (
        settings.pin_system or settings.pin_latest_user or settings.keep_tool_groups or settings.start_on_user
        or settings.clear_trigger is not None or settings.clear_thinking_keep is not None
    ):
        return False
    return _summarizer_walkable(messages, h, count_tokens)


def _walk_summaries(
    messages: Sequence[Message], h: History, records: deque[tuple], summaries: list[Message | None]
) -> Generator[int, None, tuple[list[int], list[int], Message | None, int]]:
    """History's base rule with a summarizer (no other policy) without History.add: the totals
    and kept counts after each add (summary included), the summary in place at the end, and the
    first kept step; one range record per History record appended to ``records`` and the accepted
    summaries (as they stand after their add) to ``summaries``.

    A range record is ``(step, message_id, total_before, total_after, goal, first, stop,
    SummaryEvent | None)``: the add dropped ``messages[first:stop]`` (empty when it only removed
    the summary), each for the reason History gives (:data:`TOO_BIG` when over ``goal`` alone,
    else :data:`OVER_LIMIT`), trigger :data:`TRIGGER_LIMIT`. No per-message list is built here:
    :func:`_fill_from_ranges` fills replay's columns from the runs and :class:`CompactionLog`
    expands a record into History's shape when it is read.

    As in History: kept is always ``messages[lo:step + 1]`` plus the summary; an add over the
    limit drops from ``lo`` while the total is over the goal (target - summary budget) plus the
    summary's tokens, hands the dropped messages to the summarizer and accepts its summary unless
    it is over the budget or would bring the total over the limit (History._summarize,
    _remove_summary; the same reasons, word for word). O(n) plus the summarizer, which takes each
    run of dropped messages as a slice of ``messages`` (ExtractiveSummarizer._preload /
    _call_range: their lines appended ahead in blocks); no per-add method call.
    tests/test_replay_reference.py, tests/test_summary_log.py and tests/test_summary_preload.py
    check it against History (the per-add reference replay).
    """
    n = len(messages)
    totals = [0] * n
    kept = [0] * n
    limit, goal, budget = h._limit, h._goal, h._budget
    h._summarizer._preload(messages)
    summarize = h._summarizer._call_range  # each run of dropped messages as a slice of `messages`
    summary: Message | None = None
    s_tokens = 0
    total = 0
    lo = 0
    append = records.append
    step = 0
    pause = PAUSE_EVERY
    for m in messages:
        if step == pause:  # a sliced replay may pause here (SlicedReplay)
            yield step
            pause += PAUSE_EVERY
        total += m.tokens
        if total > limit:
            peak = total
            first = lo
            stop_at = goal + s_tokens
            while total > stop_at and lo <= step:
                total -= messages[lo].tokens
                lo += 1
            event = None
            if lo > first:
                new = summarize(summary, first, lo)
                if new.tokens > budget:
                    event = SummaryEvent(False, new.id, new.tokens, budget, reason=(
                        f"summary has {new.tokens} tokens, over the summary_budget of {budget}"))
                elif total - s_tokens + new.tokens > limit:
                    event = SummaryEvent(False, new.id, new.tokens, budget, reason=(
                        f"summary has {new.tokens} tokens; with the pinned messages the total would be "
                        f"{total - s_tokens + new.tokens}, over the limit of {limit}"))
                else:
                    total += new.tokens - s_tokens
                    event = SummaryEvent(True, new.id, new.tokens, budget,
                                         replaced_id=summary.id if summary is not None else None)
                    summary, s_tokens = new, new.tokens
            if summary is not None and total > limit:
                why = (
                    f"summary {summary.id!r} removed: the pinned messages leave no room for its "
                    f"{summary.tokens} tokens under the limit of {limit}"
                )
                if event is None:
                    event = SummaryEvent(False, summary.id, summary.tokens, budget, reason=why, removed_id=summary.id)
                else:
                    event = SummaryEvent(event.accepted, event.id, event.tokens, event.budget,
                                         replaced_id=event.replaced_id,
                                         reason=f"{event.reason}; {why}" if event.reason else why,
                                         removed_id=summary.id)
                total -= s_tokens
                summary, s_tokens = None, 0
            if lo > first or event is not None:
                append((step, m.id, peak, total, goal, first, lo, event))
                if event is not None and event.accepted:
                    summaries.append(summary)
        totals[step] = total
        kept[step] = step + 1 - lo + (summary is not None)
        step += 1
    return totals, kept, summary, lo


def _fill_from_ranges(
    records: Sequence[tuple],
    messages: Sequence[Message],
    dropped_at: list,
    reason: list,
    summarized: list,
    prefix: list,
) -> tuple[int, int, int, int, int]:
    """Fill replay's per-message columns (``dropped_at``, ``reason``, ``summarized``) and per-add
    ``prefix`` flags from :func:`_walk_summaries`' range records, each run by slice assignment;
    return ``(compactions, messages dropped, tokens dropped, summaries accepted, summaries
    rejected)``, read as :func:`replay` reads History's full records. O(records + dropped).

    The runs follow each other from message 0, so the dropped messages are ``messages[:stop]`` of
    the last record: their reasons and tokens are one pass over that prefix.
    """
    accepted = rejected = 0
    for step, _mid, _before, _after, _goal, first, stop, event in records:
        changed = first < step and first < stop  # an older message left the context
        if stop > first:
            dropped_at[first:stop] = repeat(step, stop - first)
        if event is not None:
            a, r, c = _event_outcome(event)
            if a:
                summarized[first:stop] = repeat(True, stop - first)
            accepted += a
            rejected += r
            changed = changed or c
        if changed:
            prefix[step] = True
    end = records[-1][6] if records else 0
    goal = records[0][4] if records else 0
    gone = messages[:end]
    reason[:end] = [OVER_LIMIT if m.tokens <= goal else TOO_BIG for m in gone]
    return len(records), end, sum(map(_TOKENS, gone)), accepted, rejected


def _event_outcome(event: SummaryEvent) -> tuple[int, int, bool]:
    """What one summarizer outcome adds to a replay's counts: ``(accepted, rejected, prompt
    changed)``. An accepted summary or a removed one changes the prompt; a refused new summary
    counts as rejected, a mere removal (``id == removed_id``) does not. O(1).

    The one reading of a :class:`SummaryEvent` shared by :func:`replay`, the summary walk's range
    records and :func:`sweep_limits`' stats pass.
    """
    if event.accepted:
        return 1, 0, True
    return 0, int(event.id != event.removed_id), event.removed_id is not None


def _full_summary(summarizer: ExtractiveSummarizer, summary: Message) -> Message:
    """The deferred summary ``summary`` with its text (an eager one as it is)."""
    if summary.content is not None:
        return summary
    return Message(summary.id, summary.role, summary.tokens,
                   content=_span_text(summarizer._spans(), summarizer._made[summary.id]))


def _summary_log(history: History, summaries: list[Message | None]) -> SummaryLog:
    """The replay's accepted summaries as a :class:`SummaryLog` (its deferred summarizer's spans)."""
    summarizer = history._summarizer
    if isinstance(summarizer, ExtractiveSummarizer) and summarizer._deferred:
        return SummaryLog(summaries, summarizer)
    return SummaryLog(summaries)


def _walk_base_rule(
    messages: Sequence[Message], limit: int, goal: int, records: deque[tuple]
) -> tuple[list[int], list[int], tuple[Message, ...]]:
    """History's base rule (no pin, group, summary or clearing policy) without a History: the
    totals and kept counts after each add, the final context, and History's own flat records
    appended to ``records`` (the same tuples ``History.add`` makes on its base path).

    What the base rule keeps is always the contiguous run ``messages[lo:step + 1]``: an add over
    the limit drops from ``lo`` while the total is over ``goal`` (the target), so a two-pointer
    walk is the whole rule. O(n), no per-add method call (3-4x faster than driving History);
    tests/test_replay_reference.py checks it against a History read after every add.
    """
    n = len(messages)
    totals = [0] * n
    kept = [0] * n
    total = 0
    lo = 0
    append = records.append
    step = 0
    for m in messages:
        total += m.tokens
        if total > limit:
            peak = total
            first = lo
            while total > goal and lo <= step:
                total -= messages[lo].tokens
                lo += 1
            append((step, m.id, peak, total, goal, first, *messages[first:lo]))
        totals[step] = total
        kept[step] = step + 1 - lo
        step += 1
    return totals, kept, tuple(messages[lo:])


def _policy_walk_applies(h: History, messages: Sequence[Message] = (), count_tokens=None) -> bool:
    """Whether :func:`_walk_policies` may stand in for History.add: at least one of pin_system,
    pin_latest_user, keep_tool_groups and start_on_user on (a target or not) and no clearing; with
    a summarizer, only under the conditions of the summary walk (:func:`_summarizer_walkable`).
    (Clearing is left to History; summaries with no other policy take :func:`_walk_summaries`.)"""
    if h._editing or not (h._pin_system or h._pin_latest_user or h._keep_tool_groups or h._start_on_user):
        return False
    return h._summarizer is None or _summarizer_walkable(messages, h, count_tokens)


def _summarizer_walkable(messages: Sequence[Message], h: History, count_tokens) -> bool:
    """Whether a walk may run ``h``'s summarizer itself instead of History: the replay's own
    ExtractiveSummarizer, not called yet, under convmem's own counters (which never raise on a
    str), and no message id that a summary id could repeat (History refuses such an add, and
    refuses a summary whose id is kept; the walks leave those cases to History). O(n)."""
    summarizer = h._summarizer
    if type(summarizer) is not ExtractiveSummarizer or summarizer.calls:
        return False
    if count_tokens is not None and _own_counter_memo(count_tokens) is None:
        return False
    prefix = summarizer.id_prefix + "-"
    return not any(map(methodcaller("startswith", prefix), map(_ID, messages)))


@dataclass(slots=True)
class _PolicyWalk:
    """What :func:`_walk_policies` found, as columns: no tuple per drop, one per record.

    ``totals`` and ``kept_counts`` per add (the summary included); ``dropped_at``, ``drop_reason``
    and ``prefix_changed`` are Replay's own columns (per message / per add), filled by the walk as
    it drops. ``records`` holds History's records as ``(step, message_id, trigger, total_before,
    total_after, end, SummaryEvent | None)``: the record's drops are the steps ``seqs[previous
    end:end]``, in step order (each a message's index; its reason is ``drop_reason[seq]``).
    ``arrivals`` counts the records that only refused a tool result on arrival (not compactions).

    With a summarizer: ``summarized`` (per message, else None), the accepted summaries as they
    stand after their add (``summaries``), the outcome counts, and ``summary_delta``, the net
    tokens the summaries added to the running total over the whole walk.
    """

    totals: list[int]
    kept_counts: list[int]
    final_context: tuple[Message, ...]
    records: list[tuple]
    seqs: list[int]
    dropped_at: list[int | None]
    drop_reason: list[str | None]
    prefix_changed: list[bool]
    arrivals: int
    summarized: list[bool] | None = None
    summaries: list[Message | None] = field(default_factory=list)
    accepted: int = 0
    rejected: int = 0
    summary_delta: int = 0

    def stats(self, limit: int) -> ReplayStats:
        """The replay's :class:`ReplayStats` under ``limit``, from the columns (C-level sums, O(n)).

        The tokens dropped are the records' total_before minus total_after plus what the summaries
        added: every drop (a pin let go included) leaves the running total by its own tokens, and
        only a summary taken in or out changes it otherwise (no clearing here)."""
        totals = self.totals
        records = self.records
        n = len(totals)
        tokens_sent = sum(totals)
        return ReplayStats(
            compactions=len(records) - self.arrivals,
            mean_context=(tokens_sent / n) if n else 0.0,
            max_context=max(totals, default=0),
            messages_dropped=len(self.seqs),
            tokens_dropped=sum(map(_TOTAL_BEFORE, records)) - sum(map(_TOTAL_AFTER, records)) + self.summary_delta,
            prefix_changes=sum(self.prefix_changed),
            summaries_accepted=self.accepted,
            summaries_rejected=self.rejected,
            over_limit_steps=sum(map(limit.__lt__, totals)),
            tokens_sent=tokens_sent,
        )


def _replay_policies(
    messages: Sequence[Message], settings: HistorySettings, h: History
) -> Generator[int, None, Replay]:
    """:func:`replay` through :func:`_walk_policies`: the walk's columns become the Replay as they
    are (no pass over the records), its records a columnar :class:`CompactionLog`, its summaries a
    :class:`SummaryLog` of the deferred summarizer's spans. O(n + drops)."""
    walk = yield from _walk_policies(messages, h)
    messages = tuple(messages)
    n = len(messages)
    drop_reason = tuple(walk.drop_reason)
    return Replay(
        messages=messages,
        settings=settings,
        totals=tuple(walk.totals),
        kept_counts=tuple(walk.kept_counts),
        prefix_changed=tuple(walk.prefix_changed),
        dropped_at=tuple(walk.dropped_at),
        drop_reason=drop_reason,
        summarized=(False,) * n if walk.summarized is None else tuple(walk.summarized),
        compactions=CompactionLog._of_columns(walk.records, walk.seqs, messages, drop_reason),
        final_context=walk.final_context,
        stats=walk.stats(settings.limit),
        summaries=_summary_log(h, walk.summaries),
        cleared_at=(None,) * n,
    )


def _walk_policies(messages: Sequence[Message], h: History) -> Generator[int, None, _PolicyWalk]:
    """History's pin, tool-group and start_on_user rules (any combination, a target or not, with
    or without a summarizer; no clearing) without History.add, as a :class:`_PolicyWalk`: the
    totals and kept counts after each add, the final context, History's records (the fields of
    the tuples ``History._finish`` makes, their drops as columns) and Replay's per-message drop
    columns.

    With ``h``'s summarizer (an ExtractiveSummarizer the caller checked with
    :func:`_summarizer_walkable`; put in deferred mode here), each compaction hands its drops, in
    step order, to the summarizer and takes its summary in or refuses it, then takes the summary
    out when the pins leave no room for it, as ``History._finish``, ``_summarize`` and
    ``_remove_summary`` do (the same reasons, word for word); compaction stops at the goal plus
    the summary's tokens, as in ``History._compact``.

    One loop with History's state in locals: the same head of passed-over pins, run deque, lazy
    deletion of tool results dropped with their call, groups by call id and by position, the moving
    latest-user pin, and the same order of checks as ``History.add``, ``_compact``,
    ``_drop_unit`` and ``_finish`` (History is the reference; read them side by side). Ids are
    unique here (replay checks them first), so History's kept-id set is not needed. Each drop
    writes its step and reason into the columns where it happens (a message is dropped at most
    once). O(n) plus the drops (O(d log d) to order d drops when tool groups interleave), no
    per-add method call. tests/test_replay_policy_walk.py checks it against History for all 15
    combinations.
    """
    pin_system = h._pin_system
    pin_latest_user = h._pin_latest_user
    keep_tool_groups = h._keep_tool_groups
    start_on_user = h._start_on_user
    limit = h._limit
    goal = h._goal
    n = len(messages)
    sums = None
    if h._summarizer is not None:
        sums = _WalkSummaries(h, n)
        # A run of consecutive drops (the usual compaction) has its lines appended ahead.
        h._summarizer._preload(messages)
        sums.summarize = h._summarizer._call_steps
    totals = [0] * n
    kept_counts = [0] * n
    dropped_at: list[int | None] = [None] * n
    drop_reason: list[str | None] = [None] * n
    prefix = [False] * n
    seqs: list[int] = []  # the dropped steps, record after record
    drop = seqs.append
    records: list[tuple] = []
    append_record = records.append
    arrivals = 0
    head: list[tuple] = []  # pinned system messages passed over by compaction, in order
    head_user = None  # the pinned latest user message, when passed over
    run: deque[tuple] = deque()  # the newest contiguous run (may hold dead items)
    popleft = run.popleft
    dead: set[int] = set()  # steps of run items dropped with their call, not yet popped
    # A tool group is the list of its results. A dropped call's group leaves both maps at once, so
    # every group reachable from them is live (History's _Group.dead is never true here).
    groups: dict[str, list] = {}  # tool call id -> group
    group_of: dict[int, list] = {}  # step of a kept assistant message -> its group
    latest_user = None
    last_assistant = -1
    frontier = -1  # step of the newest message dropped from the oldest end
    total = 0
    kept = 0
    moved = None  # the old latest user message a new one's pin let go (History's pin_moved drop)
    step = 0
    pause = PAUSE_EVERY
    for m in messages:
        if step == pause:  # a sliced replay may pause here (SlicedReplay)
            yield step
            pause += PAUSE_EVERY
        item = (step, m)
        role = m.role
        if role == "user":
            if pin_latest_user:
                old = latest_user
                latest_user = item
                if old is not None:
                    if old[0] < frontier:
                        # Kept only by its pin, cut off from the run: the suffix rule drops it now.
                        head_user = None
                        total -= old[1].tokens
                        kept -= 1
                        moved = old
                    elif head_user is old:
                        head_user = None
                        run.appendleft(old)
        elif keep_tool_groups:
            if role == "assistant":
                last_assistant = step
                if m.tool_call_ids:
                    group = group_of[step] = []
                    for call_id in m.tool_call_ids:
                        groups[call_id] = group
            elif role == "tool":
                group = None
                if m.tool_call_id is not None:
                    group = groups.get(m.tool_call_id)
                elif last_assistant > frontier:
                    group = group_of.get(last_assistant)
                    if group is None:
                        group = group_of[last_assistant] = []
                if group is None:
                    # Refused on arrival: a tool result is never left without its call.
                    dropped_at[step] = step
                    drop_reason[step] = TOOL_GROUP
                    drop(step)
                    arrivals += 1
                    append_record((step, m.id, TRIGGER_ARRIVAL, total + m.tokens, total, len(seqs), None))
                    totals[step] = total
                    kept_counts[step] = kept
                    step += 1
                    continue
                group.append(item)
        run.append(item)
        total += m.tokens
        kept += 1
        if total <= limit and moved is None:
            totals[step] = total
            kept_counts[step] = kept
            step += 1
            continue
        # A compaction: peak is History's total_before (before the pin_moved drop, if any).
        first = len(seqs)
        peak = total
        trigger = TRIGGER_LIMIT
        if moved is not None:
            peak += moved[1].tokens
            if total <= limit:
                trigger = TRIGGER_PIN_MOVED
            seq = moved[0]
            dropped_at[seq] = step
            drop_reason[seq] = PIN_MOVED
            drop(seq)
            moved = None
        unordered = False
        # History._compact: drop from the oldest end until the total fits the goal (plus the
        # summary's tokens: the summary is never dropped here).
        stop_at = goal + sums.tokens if sums is not None else goal
        while total > stop_at and run:
            x = popleft()
            seq = x[0]
            if dead and seq in dead:
                dead.discard(seq)
                continue
            if x is latest_user:
                head_user = x
                continue
            d = x[1]
            if pin_system and d.role == "system":
                head.append(x)
                continue
            t = d.tokens
            frontier = seq
            total -= t
            kept -= 1
            dropped_at[seq] = step
            drop_reason[seq] = TOO_BIG if t > goal else OVER_LIMIT
            drop(seq)
            if group_of and seq in group_of:
                group = group_of.pop(seq)
                total -= _drop_group(d, group, groups, dead, step, seqs, dropped_at, drop_reason)
                kept -= len(group)
                unordered = True
        if start_on_user and head_user is None:
            # Then leading non-system messages go until a user message leads.
            i = 0
            while i < len(run):
                x = run[i]
                seq = x[0]
                if dead and seq in dead:
                    if i == 0:
                        popleft()
                        dead.discard(seq)
                    else:
                        i += 1
                    continue
                role = x[1].role
                if role == "user":
                    break
                if role == "system":
                    if i == 0 and pin_system:
                        popleft()
                        head.append(x)
                    else:
                        i += 1
                    continue
                # A leading non-system, non-user message: it goes, with the unpinned system
                # messages before it. (This pass stops at the first user message, so it never
                # meets the latest user's pin; with pin_system on, i is always 0 here.)
                for _ in range(i + 1):
                    x = popleft()
                    seq = x[0]
                    d = x[1]
                    if dead and seq in dead:
                        dead.discard(seq)
                    else:
                        frontier = seq
                        total -= d.tokens
                        kept -= 1
                        dropped_at[seq] = step
                        drop_reason[seq] = START_ON_USER
                        drop(seq)
                        if group_of and seq in group_of:
                            group = group_of.pop(seq)
                            total -= _drop_group(d, group, groups, dead, step, seqs, dropped_at, drop_reason)
                            kept -= len(group)
                            unordered = True
                i = 0
        if len(seqs) > first and unordered:
            seqs[first:] = sorted(seqs[first:])
        event = None
        if sums is not None:
            # History._finish: the drops, oldest first, to the summarizer (the steps here).
            total, kept, event = sums.settle(total, kept, seqs[first:] if len(seqs) > first else None)
        if len(seqs) > first or event is not None:
            append_record((step, m.id, trigger, peak, total, len(seqs), event))
            # The prefix changed when an older message left, or a summary came in or went.
            changed = len(seqs) > first and seqs[first] < step
            if event is not None and sums.count(event, seqs, first):
                changed = True
            if changed:
                prefix[step] = True
        totals[step] = total
        kept_counts[step] = kept
        step += 1
    walk = _PolicyWalk(totals, kept_counts, (), records, seqs, dropped_at, drop_reason, prefix, arrivals)
    if sums is None:
        walk.final_context = _policy_context(head, head_user, run, dead)
        return walk
    return sums.finish(walk, head, head_user, run, dead, frontier)


class _WalkSummaries:
    """A walk's summaries (:func:`_walk_policies`, :func:`_walk_clearing`): the summary in place and
    History's summary rules after a compaction (``History._finish``, ``_summarize``,
    ``_remove_summary``: the same checks in the same order, the same reasons word for word).

    ``summarize(previous, dropped)`` is the summarizer call the walk feeds (the summarizer's
    ``_call_steps`` with the dropped steps, or the summarizer itself with the dropped messages as
    sent). O(1) per compaction plus the summarizer.
    """

    __slots__ = ("summarize", "summarizer", "budget", "limit", "summary", "tokens", "delta", "accepted",
                 "rejected", "summaries", "summarized")

    def __init__(self, h: History, n: int) -> None:
        self.summarizer = h._summarizer
        self.summarizer._defer()  # summaries as spans of its line log; texts built on access
        self.summarize = self.summarizer
        self.budget = h._budget
        self.limit = h._limit
        self.summary: Message | None = None  # the summary in place
        self.tokens = 0  # its tokens (part of the walk's total)
        self.delta = 0  # the net tokens the summaries added to the total
        self.accepted = self.rejected = 0
        self.summaries: list[Message | None] = []  # the accepted ones, as they stand after their add
        self.summarized = [False] * n

    def settle(self, total: int, kept: int, dropped) -> tuple[int, int, SummaryEvent | None]:
        """After a compaction that dropped ``dropped`` (None: nothing): summarize and take the
        new summary in or refuse it, then take the summary out when the pins leave it no room
        under the limit. Returns the new ``(total, kept, SummaryEvent | None)``."""
        summary, tokens, budget, limit = self.summary, self.tokens, self.budget, self.limit
        event = None
        if dropped is not None:
            new = self.summarize(summary, dropped)
            t = new.tokens
            if t > budget:
                event = SummaryEvent(False, new.id, t, budget, reason=(
                    f"summary has {t} tokens, over the summary_budget of {budget}"))
            elif total - tokens + t > limit:
                event = SummaryEvent(False, new.id, t, budget, reason=(
                    f"summary has {t} tokens; with the pinned messages the total would be "
                    f"{total - tokens + t}, over the limit of {limit}"))
            else:
                total += t - tokens
                self.delta += t - tokens
                kept += summary is None
                event = _accepted_event(new.id, t, budget, summary.id if summary is not None else None)
                summary, tokens = new, t
        if summary is not None and total > limit:
            why = (
                f"summary {summary.id!r} removed: the pinned messages leave no room for its "
                f"{summary.tokens} tokens under the limit of {limit}"
            )
            if event is None:
                event = SummaryEvent(False, summary.id, summary.tokens, budget, reason=why, removed_id=summary.id)
            else:
                event = SummaryEvent(event.accepted, event.id, event.tokens, event.budget,
                                     replaced_id=event.replaced_id,
                                     reason=f"{event.reason}; {why}" if event.reason else why,
                                     removed_id=summary.id)
            total -= tokens
            self.delta -= tokens
            kept -= 1
            summary, tokens = None, 0
        self.summary, self.tokens = summary, tokens
        return total, kept, event

    def count(self, event: SummaryEvent, seqs: list[int], first: int) -> bool:
        """Count ``event`` (the outcome of the record whose drops are ``seqs[first:]``), mark those
        drops summarized when it was accepted; True when it changed the prompt. An accepted
        summary fits the limit, so it is never removed by its own add: the summary in place is
        the accepted one."""
        a, r, changed = _event_outcome(event)
        self.accepted += a
        self.rejected += r
        if a:
            self.summaries.append(self.summary)
            summarized = self.summarized
            for seq in seqs[first:]:
                summarized[seq] = True
        return changed

    def finish(
        self, walk: _PolicyWalk, head: list, head_user, run: deque, dead: set[int], frontier: int
    ) -> _PolicyWalk:
        """``walk`` with the final context (the summary in place, with its text, included) and the
        summaries' columns and counts."""
        summary = self.summary
        walk.final_context = _policy_context(
            head, head_user, run, dead, frontier, None if summary is None else _full_summary(self.summarizer, summary)
        )
        walk.summarized, walk.summaries = self.summarized, self.summaries
        walk.accepted, walk.rejected, walk.summary_delta = self.accepted, self.rejected, self.delta
        return walk


_EVENT_SLOTS = tuple(
    SummaryEvent.__dict__[n].__set__
    for n in ("accepted", "id", "tokens", "budget", "replaced_id", "reason", "removed_id")
)


def _accepted_event(summary_id: str, tokens: int, budget: int, replaced_id: str | None) -> SummaryEvent:
    """``SummaryEvent(True, summary_id, tokens, budget, replaced_id=replaced_id)`` without the
    frozen dataclass ``__init__`` (one ``object.__setattr__`` per field; SummaryEvent has no
    checks, so the object is equal to the constructed one): about 2x cheaper, one per accepted
    summary of a walk (thousands per replay at 10^5 messages)."""
    event = _new_object(SummaryEvent)
    s_accepted, s_id, s_tokens, s_budget, s_replaced, s_reason, s_removed = _EVENT_SLOTS
    s_accepted(event, True)
    s_id(event, summary_id)
    s_tokens(event, tokens)
    s_budget(event, budget)
    s_replaced(event, replaced_id)
    s_reason(event, None)
    s_removed(event, None)
    return event


def _drop_group(
    call: Message,
    group: list,
    groups: dict[str, list],
    dead: set[int],
    step: int,
    seqs: list[int],
    dropped_at: list[int | None],
    drop_reason: list[str | None],
) -> int:
    """The rest of ``History._drop_unit`` for a dropped assistant message heading ``group`` (its
    tool results), dropped at add ``step``: its call ids are forgotten (unless a newer kept message
    declared the same id) and its results are marked dead and dropped (reason ``tool_group``,
    written into the walk's columns; all are still kept: a result only ever leaves with its
    call). Returns the tokens the results freed. O(results)."""
    for call_id in call.tool_call_ids:
        if groups.get(call_id) is group:
            del groups[call_id]
    freed = 0
    for seq, r in group:
        dead.add(seq)
        freed += r.tokens
        dropped_at[seq] = step
        drop_reason[seq] = TOOL_GROUP
        seqs.append(seq)
    return freed


def _policy_context(
    head: list[tuple], head_user: tuple | None, run: deque[tuple], dead: set[int], frontier: int = -1,
    summary: Message | None = None,
) -> tuple[Message, ...]:
    """The final context of :func:`_walk_policies`, as ``History.context`` builds it: the
    passed-over pins and the live run, in step order, and ``summary`` (or None) before the first
    message newer than ``frontier`` (the newest message dropped from the oldest end). O(kept log
    kept) at worst."""
    if head_user is not None:
        head = sorted([*head, head_user], key=_FIRST)
    items = [x for x in run if x[0] not in dead] if dead else list(run)
    if head and items and items[0][0] < head[-1][0]:  # a pin that rejoined the run
        items = sorted([*head, *items], key=_FIRST)
    else:
        items = [*head, *items]
    out = list(map(_SECOND, items))
    if summary is not None:
        out.insert(next((i for i, x in enumerate(items) if x[0] > frontier), len(items)), summary)
    return tuple(out)


def _clearing_walk_applies(messages: Sequence[Message], h: History, count_tokens=None) -> bool:
    """Whether :func:`_walk_clearing` may stand in for History.add: clearing (tool results or
    thinking) on; a summarizer only under the conditions of the other walks
    (:func:`_summarizer_walkable`); and (with clear_thinking) every assistant message's thinking
    entry a valid count (History.add raises on a bad one: those replays stay with History, which
    names it). O(n) with a summarizer or clear_thinking, O(1) otherwise."""
    if not h._editing:
        return False
    if h._summarizer is not None and not _summarizer_walkable(messages, h, count_tokens):
        return False
    if h._clear_thinking is None or not h._thinking:
        return True
    get = h._thinking.get
    for m in messages:
        if m.role == "assistant":
            think = get(m.id, 0)
            if think.__class__ is not int or think < 0:
                return False
    return True


def _replay_clearing(
    messages: Sequence[Message], settings: HistorySettings, h: History, clearings: list[Clearing]
) -> Generator[int, None, Replay]:
    """:func:`replay` through :func:`_walk_clearing` (``clearings`` is the list History's
    on_clearing fills): the walk's columns become the Replay, the clearings fill ``cleared_at``
    and their prefix changes. O(n + drops + cleared messages)."""
    walk, current = yield from _walk_clearing(messages, h)
    messages = tuple(messages)
    n = len(messages)
    prefix = walk.prefix_changed
    cleared_at: list[int | None] = [None] * n
    messages_cleared = tokens_cleared = 0
    for c in clearings:  # thinking and tool results: up to two per add, in step order
        step = c.step
        cleared = c.cleared  # oldest first
        messages_cleared += len(cleared)
        tokens_cleared += c.total_before - c.total_after
        if cleared and cleared[0].added_step < step:
            prefix[step] = True  # the prompt changes at the first cleared message
        for added in map(_ADDED_STEP, cleared):
            cleared_at[added] = step
    drop_reason = tuple(walk.drop_reason)
    stats = replace(
        walk.stats(settings.limit),
        prefix_changes=sum(prefix),
        clearings=len(clearings),
        messages_cleared=messages_cleared,
        tokens_cleared=tokens_cleared,
    )
    return Replay(
        messages=messages,
        settings=settings,
        totals=tuple(walk.totals),
        kept_counts=tuple(walk.kept_counts),
        prefix_changed=tuple(prefix),
        dropped_at=tuple(walk.dropped_at),
        drop_reason=drop_reason,
        summarized=(False,) * n if walk.summarized is None else tuple(walk.summarized),
        # A dropped message is recorded as it was sent until then: a cleared one as its placeholder.
        compactions=CompactionLog._of_columns(walk.records, walk.seqs, tuple(current), drop_reason),
        final_context=walk.final_context,
        stats=stats,
        summaries=_summary_log(h, walk.summaries),
        clearings=tuple(clearings),
        cleared_at=tuple(cleared_at),
    )


def _walk_clearing(
    messages: Sequence[Message], h: History
) -> Generator[int, None, tuple[_PolicyWalk, list[Message]]]:
    """History's add with clearing on (tool results and/or thinking; any pin, tool-group and
    start_on_user combination, a target or not; no summary) without History.add: the
    :class:`_PolicyWalk` columns (as :func:`_walk_policies` fills them) and each message as it
    stands at the end (a cleared one is its placeholder / its thinking-free message, as History's
    records and context hold it).

    The drops are :func:`_walk_policies`' loop with History's state in locals; the clearing itself
    is History's own code on ``h`` (``_register_tool``, ``_forget_tool``, ``_clear_pass``,
    ``_think_pass``: the same queues, gain and records, ``h._total`` synced around each call), so
    the clearing rules have one source. Items are lists ``[step, message]``, as History's with
    clearing on: a clearing swaps the message in place. Same order of checks as ``History.add``,
    ``_compact``, ``_drop_unit`` and ``_finish`` (read them side by side). O(n) plus the drops and
    the cleared messages; tests/test_replay_clearing_walk.py checks it against History.
    """
    pin_system = h._pin_system
    pin_latest_user = h._pin_latest_user
    keep_tool_groups = h._keep_tool_groups
    start_on_user = h._start_on_user
    limit = h._limit
    goal = h._goal
    clear = h._clear
    clear_trigger = clear.trigger if clear is not None else 0
    # The least gain at which _clear_pass clears anything (more than 0 and at least
    # clear_at_least): below it the call returns 0 and changes nothing, so it is not made.
    clear_gain = max(clear.clear_at_least, 1) if clear is not None else 1
    register_tool = h._register_tool
    forget_tool = h._forget_tool
    clear_pass = h._clear_pass
    clear_thinking = h._clear_thinking is not None
    think_of = h._thinking.get
    think_pass = h._think_pass
    think_live = h._think_live
    think_queue = h._think_queue
    n = len(messages)
    # Summaries (when on) take the dropped messages as they were sent (a cleared one as its
    # placeholder), so no lines are appended ahead here.
    sums = _WalkSummaries(h, n) if h._summarizer is not None else None
    totals = [0] * n
    kept_counts = [0] * n
    dropped_at: list[int | None] = [None] * n
    drop_reason: list[str | None] = [None] * n
    prefix = [False] * n
    seqs: list[int] = []  # the dropped steps, record after record
    drop = seqs.append
    records: list[tuple] = []
    append_record = records.append
    arrivals = 0
    head: list[list] = []  # pinned system messages passed over by compaction, in order
    head_user = None  # the pinned latest user message, when passed over
    run: deque[list] = deque()  # the newest contiguous run (may hold dead items)
    popleft = run.popleft
    dead: set[int] = set()  # steps of run items dropped with their call, not yet popped
    groups: dict[str, list] = {}  # tool call id -> group (the list of its result items)
    group_of: dict[int, list] = {}  # step of a kept assistant message -> its group
    latest_user = None
    last_assistant = -1
    frontier = -1  # step of the newest message dropped from the oldest end
    total = 0
    kept = 0
    moved = None  # the old latest user message a new one's pin let go (History's pin_moved drop)
    items: list[list] = []  # every item, so each message's final state is read at the end
    keep_item = items.append
    step = 0
    pause = PAUSE_EVERY
    for m in messages:
        if step == pause:  # a sliced replay may pause here (SlicedReplay)
            yield step
            pause += PAUSE_EVERY
        item = [step, m]
        keep_item(item)
        role = m.role
        tokens = m.tokens
        if role == "user":
            if pin_latest_user:
                old = latest_user
                latest_user = item
                if old is not None:
                    if old[0] < frontier:
                        # Kept only by its pin, cut off from the run: the suffix rule drops it now.
                        head_user = None
                        total -= old[1].tokens
                        kept -= 1
                        moved = old
                    elif head_user is old:
                        head_user = None
                        run.appendleft(old)
        elif keep_tool_groups:
            if role == "assistant":
                last_assistant = step
                if m.tool_call_ids:
                    group = group_of[step] = []
                    for call_id in m.tool_call_ids:
                        groups[call_id] = group
            elif role == "tool":
                group = None
                if m.tool_call_id is not None:
                    group = groups.get(m.tool_call_id)
                elif last_assistant > frontier:
                    group = group_of.get(last_assistant)
                    if group is None:
                        group = group_of[last_assistant] = []
                if group is None:
                    # Refused on arrival (before any clearing): a result never outlives its call.
                    dropped_at[step] = step
                    drop_reason[step] = TOOL_GROUP
                    drop(step)
                    arrivals += 1
                    append_record((step, m.id, TRIGGER_ARRIVAL, total + tokens, total, len(seqs), None))
                    totals[step] = total
                    kept_counts[step] = kept
                    step += 1
                    continue
                group.append(item)
        run.append(item)
        total += tokens
        kept += 1
        if clear_thinking and role == "assistant":
            think = min(think_of(m.id, 0), tokens)
            if think > 0:
                h._total = total
                think_pass(item, think, step)
                total = h._total
        if clear is not None:
            if role == "tool":
                register_tool(item)
            if total > clear_trigger and h._gain >= clear_gain:
                h._total = total
                clear_pass(step, m.id)
                total = h._total
        if total <= limit and moved is None:
            totals[step] = total
            kept_counts[step] = kept
            step += 1
            continue
        # A compaction. peak: History's total_before (clearing's gains taken, the pin_moved drop
        # not yet: the total went down by its tokens when the new user message let it go).
        peak = total
        first = len(seqs)
        trigger = TRIGGER_LIMIT
        if moved is not None:
            peak += moved[1].tokens
            if total <= limit:
                trigger = TRIGGER_PIN_MOVED
            seq = moved[0]
            dropped_at[seq] = step
            drop_reason[seq] = PIN_MOVED
            drop(seq)
            moved = None
        unordered = False
        # History._compact: drop from the oldest end until the total fits the goal.
        stop_at = goal + sums.tokens if sums is not None else goal
        while total > stop_at and run:
            x = popleft()
            seq = x[0]
            if dead and seq in dead:
                dead.discard(seq)
                continue
            if x is latest_user:
                head_user = x
                continue
            d = x[1]
            if pin_system and d.role == "system":
                head.append(x)
                continue
            t = d.tokens
            frontier = seq
            total -= t
            kept -= 1
            dropped_at[seq] = step
            drop_reason[seq] = TOO_BIG if t > goal else OVER_LIMIT
            drop(seq)
            role = d.role
            if role == "tool":
                if clear is not None:
                    forget_tool(x)
            elif role == "assistant" and (clear_thinking or seq in group_of):
                total, kept, unordered = _forget_assistant(
                    x, total, kept, unordered, clear, forget_tool, clear_thinking, think_live, think_queue,
                    group_of, groups, dead, step, seqs, dropped_at, drop_reason,
                )
        if start_on_user and head_user is None:
            # Then leading non-system messages go until a user message leads.
            i = 0
            while i < len(run):
                x = run[i]
                seq = x[0]
                if dead and seq in dead:
                    if i == 0:
                        popleft()
                        dead.discard(seq)
                    else:
                        i += 1
                    continue
                role = x[1].role
                if role == "user":
                    break
                if role == "system":
                    if i == 0 and pin_system:
                        popleft()
                        head.append(x)
                    else:
                        i += 1
                    continue
                # A leading non-system, non-user message: it goes, with the unpinned system
                # messages before it (as in _walk_policies).
                for _ in range(i + 1):
                    x = popleft()
                    seq = x[0]
                    if dead and seq in dead:
                        dead.discard(seq)
                    else:
                        frontier = seq
                        total -= x[1].tokens
                        kept -= 1
                        dropped_at[seq] = step
                        drop_reason[seq] = START_ON_USER
                        drop(seq)
                        role = x[1].role
                        if role == "tool":
                            if clear is not None:
                                forget_tool(x)
                        elif role == "assistant" and (clear_thinking or seq in group_of):
                            total, kept, unordered = _forget_assistant(
                                x, total, kept, unordered, clear, forget_tool, clear_thinking, think_live,
                                think_queue, group_of, groups, dead, step, seqs, dropped_at, drop_reason,
                            )
                i = 0
        if len(seqs) > first and unordered:
            seqs[first:] = sorted(seqs[first:])
        event = None
        if sums is not None:
            # History._finish: the drops, oldest first and as sent, to the summarizer.
            total, kept, event = sums.settle(
                total, kept, list(map(_SECOND, map(items.__getitem__, seqs[first:]))) if len(seqs) > first else None
            )
        if len(seqs) > first or event is not None:
            append_record((step, m.id, trigger, peak, total, len(seqs), event))
            changed = len(seqs) > first and seqs[first] < step  # an older message left
            if event is not None and sums.count(event, seqs, first):
                changed = True  # a summary came in or went
            if changed:
                prefix[step] = True
        totals[step] = total
        kept_counts[step] = kept
        step += 1
    walk = _PolicyWalk(totals, kept_counts, (), records, seqs, dropped_at, drop_reason, prefix, arrivals)
    if sums is None:
        walk.final_context = _policy_context(head, head_user, run, dead)
    else:
        sums.finish(walk, head, head_user, run, dead, frontier)
    return walk, list(map(_SECOND, items))


def _forget_assistant(
    x: list,
    total: int,
    kept: int,
    unordered: bool,
    clear,
    forget_tool,
    clear_thinking: bool,
    think_live: dict[int, int],
    think_queue: deque,
    group_of: dict[int, list],
    groups: dict[str, list],
    dead: set[int],
    step: int,
    seqs: list[int],
    dropped_at: list[int | None],
    drop_reason: list[str | None],
) -> tuple[int, int, bool]:
    """The rest of ``History._drop_unit`` with clearing on, for the assistant message ``x`` that
    :func:`_walk_clearing` just dropped at add ``step`` (a dropped tool result only leaves the
    clearing queues: the walk calls History's ``_forget_tool`` itself; a user or system message is
    in no queue and heads no group): its thinking entry leaves the thinking queue, and when it
    heads a tool group its results go too (:func:`_drop_group`, each leaving the clearing queues).
    Returns the new ``(total, kept, unordered)``. O(1) amortized plus the group's results."""
    seq = x[0]
    if clear_thinking:
        think_live.pop(seq, None)
        while think_queue and think_queue[0][0] not in think_live:
            think_queue.popleft()
    group = group_of.pop(seq, None)
    if group is not None:
        total -= _drop_group(x[1], group, groups, dead, step, seqs, dropped_at, drop_reason)
        kept -= len(group)
        if clear is not None:
            for r in group:
                forget_tool(r)
        unordered = True
    return total, kept, unordered


def context_at(
    messages: Sequence[Message],
    settings: HistorySettings,
    step: int,
    *,
    count_tokens=None,
    tool_names=None,
    thinking=None,
) -> list[Message]:
    """The exact context (summary included) right after add number ``step`` (0-based).

    Replays the first ``step + 1`` messages: O(step). Raises ValueError when step is out of range.
    """
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"context_at step must be an int, got {step!r}")
    if not 0 <= step < len(messages):
        raise ValueError(f"context_at step must be in [0, {len(messages) - 1}], got {step}")
    history = settings.build(count_tokens, tool_names=tool_names, thinking=thinking)
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
    tool_names=None,
    thinking=None,
) -> list[SweepRow]:
    """Replay under each limit, with ``settings.at_limit(limit)`` (other settings kept; a target
    and a clearing trigger keep their ratio to the limit).

    Each row's stats equal ``replay(messages, settings_for_that_limit).stats`` exactly, but no
    per-step arrays or records are built: the messages are validated once, then each limit runs
    a stats-only pass. With no pin, group or summary policy on (the base rule, with or without a
    target) that pass is a two-pointer walk over the token counts (no History at all); with pins,
    tool groups or start_on_user and no clearing (summaries or not) it is replay's policy walk;
    with summaries alone, replay's summary walk; with clearing, replay's clearing walk; otherwise
    (a custom counter, a message id a summary id could repeat, a bad thinking count) it drives a
    History. Each folds every
    compaction into running sums (the policy walk's stats are sums over its columns).

    Complexity: O(len(limits) * n) plus History's own cost per add when a policy is on; O(n)
    memory (the token counts). A summary budget larger than a swept target is clipped to it.
    """
    _check_messages(messages)
    rows = []
    plain = not (
        settings.pin_system
        or settings.pin_latest_user
        or settings.keep_tool_groups
        or settings.start_on_user
        or settings.summary_budget is not None
        or settings.clear_trigger is not None
        or settings.clear_thinking_keep is not None
    )
    tokens = [m.tokens for m in messages] if plain else None
    with gc_paused(promote=False):  # as in replay: bulk allocation of acyclic records
        for limit in limits:
            s = settings.at_limit(limit)
            if plain:
                assert tokens is not None
                stats = _plain_stats(tokens, s)
            else:
                stats = _history_stats(messages, s, count_tokens, tool_names, thinking)
            rows.append(SweepRow(limit, stats))
    return rows


def _check_messages(messages: Sequence[Message]) -> None:
    """What replay checks: a sequence of Messages with unique ids (TypeError / ValueError naming
    the index). An iterator is refused up front (it would be used up by this check).

    Two C-level passes (the item types, then a set of the ids) decide the usual valid case, about
    10 ms per 10^5 messages; only a failing sequence is walked in Python to name the first bad
    index.
    """
    _check_sequence(messages)
    kinds = set(map(type, messages))
    if all(issubclass(k, Message) for k in kinds) and len(set(map(_ID, messages))) == len(messages):
        return
    seen: dict[str, int] = {}
    for i, m in enumerate(messages):
        if not isinstance(m, Message):
            raise TypeError(f"replay messages[{i}] must be a Message, got {m!r:.200}")
        if m.id in seen:
            raise ValueError(f"replay messages[{i}].id {m.id!r} repeats messages[{seen[m.id]}]")
        seen[m.id] = i


def _check_sequence(messages: Sequence[Message]) -> None:
    """The TypeError of :func:`_check_messages` for what is not a sequence (an iterator, a str). O(1)."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError(
            f"messages must be a sequence (list or tuple) of Message, got {type(messages).__name__}"
            f" {messages!r:.120}"
        )


_ID = attrgetter("id")
_TOKENS = attrgetter("tokens")
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_new_object = object.__new__
_ADDED_STEP = attrgetter("added_step")
_TOTAL_BEFORE = itemgetter(3)
_TOTAL_AFTER = itemgetter(4)


def _plain_stats(tokens: list[int], settings: HistorySettings) -> ReplayStats:
    """ReplayStats of the base rule (with a target) without History: a two-pointer walk.

    Kept is always the window ``tokens[lo:step + 1]``: an add over the limit drops from ``lo`` until
    the total is at most the goal (the target, else the limit). An add that dropped only itself
    (a message too big alone) is a compaction that leaves the prefix unchanged, as in replay.
    """
    history = settings.build()  # validates the settings exactly as replay would
    limit, goal = history.limit, history.target
    lo = 0
    total = 0
    total_sum = 0
    max_total = 0
    compactions = dropped = dropped_tokens = prefix_changes = 0
    for step, t in enumerate(tokens):
        total += t
        if total > limit:
            first = lo
            while total > goal and lo <= step:
                total -= tokens[lo]
                dropped_tokens += tokens[lo]
                lo += 1
            compactions += 1
            dropped += lo - first
            if first < step:
                prefix_changes += 1
        total_sum += total
        if total > max_total:
            max_total = total
    n = len(tokens)
    return ReplayStats(
        compactions=compactions,
        mean_context=(total_sum / n) if n else 0.0,
        max_context=max_total,
        messages_dropped=dropped,
        tokens_dropped=dropped_tokens,
        prefix_changes=prefix_changes,
        summaries_accepted=0,
        summaries_rejected=0,
        over_limit_steps=0,
        tokens_sent=total_sum,
    )


def _history_stats(
    messages: Sequence[Message], settings: HistorySettings, count_tokens, tool_names=None, thinking=None
) -> ReplayStats:
    """ReplayStats of a replay through History, folding each compaction into running sums.

    The same reading of each raw record as :func:`replay` (prefix changes, summary outcomes), with
    no per-step arrays and no records kept. Through replay's policy walk the stats are read off
    its columns instead (:meth:`_PolicyWalk.stats`).
    """
    clear_acc = [0, 0, 0, -1]  # clearings, messages cleared, tokens freed, step of the last prefix change
    current = [0]  # the step being added

    def on_clearing(c: Clearing) -> None:
        clear_acc[0] += 1
        clear_acc[1] += len(c.cleared)
        clear_acc[2] += c.freed_tokens
        if any(x.added_step < current[0] for x in c.cleared):
            clear_acc[3] = current[0]

    history = settings.build(count_tokens, tool_names=tool_names, on_clearing=on_clearing, thinking=thinking)
    limit = settings.limit
    if _policy_walk_applies(history, messages, count_tokens):
        # Pins, tool groups and start_on_user (summaries or not) without clearing: replay's walk.
        return _to_end(_walk_policies(messages, history)).stats(limit)
    if _clearing_walk_applies(messages, history, count_tokens):
        # Clearing (any policy, summaries or not): replay's clearing walk, its Replay's stats.
        cleared: list[Clearing] = []
        walker = settings.build(count_tokens, tool_names=tool_names, on_clearing=cleared.append, thinking=thinking)
        return _to_end(_replay_clearing(messages, settings, walker, cleared)).stats
    acc = [0, 0, 0, 0, 0, 0]  # compactions, dropped, dropped tokens, prefix, accepted, rejected

    def sink(raw: tuple) -> None:
        step = current[0]
        _, _, trigger, _, _, dropped, event = raw
        changed = False
        acc[1] += len(dropped)
        for (seq, m), _why in dropped:
            acc[2] += m.tokens
            if seq < step:
                changed = True
        if trigger != TRIGGER_ARRIVAL:
            acc[0] += 1
        else:
            changed = False
        if event is not None:
            a, r, c = _event_outcome(event)
            acc[4] += a
            acc[5] += r
            changed = changed or c
        if changed or clear_acc[3] == step:
            acc[3] += 1
            clear_acc[3] = -2 - step  # counted: a clearing and a drop of one add are one change

    total_sum = 0
    max_total = 0
    over = 0
    if _summary_walk_applies(messages, settings, history, count_tokens):
        # Summaries with no other policy: replay's walk, its records folded afterwards.
        history._summarizer._defer()
        records: deque[tuple] = deque()
        totals, _kept, _summary, _lo = _to_end(_walk_summaries(messages, history, records, []))
        n = len(messages)
        prefix = [False] * n
        acc[0], acc[1], acc[2], acc[4], acc[5] = _fill_from_ranges(
            records, messages, [None] * n, [None] * n, [False] * n, prefix
        )
        acc[3] = sum(prefix)
        total_sum = sum(totals)
        max_total = max(totals, default=0)
        over = sum(1 for t in totals if t > limit)
    else:
        if isinstance(history._summarizer, ExtractiveSummarizer):
            history._summarizer._defer()  # no text is read: summaries as spans only
        history._attach_sink(sink)
        history._records = deque(maxlen=0)  # the sink sees every record; none is kept
        add = history.add
        for step, m in enumerate(messages):
            current[0] = step
            add(m)
            if clear_acc[3] == step:  # a clearing changed the prefix and no record followed
                acc[3] += 1
            total = history._total
            total_sum += total
            if total > max_total:
                max_total = total
            if total > limit:
                over += 1
    n = len(messages)
    return ReplayStats(
        compactions=acc[0],
        mean_context=(total_sum / n) if n else 0.0,
        max_context=max_total,
        messages_dropped=acc[1],
        tokens_dropped=acc[2],
        prefix_changes=acc[3],
        summaries_accepted=acc[4],
        summaries_rejected=acc[5],
        over_limit_steps=over,
        clearings=clear_acc[0],
        messages_cleared=clear_acc[1],
        tokens_cleared=clear_acc[2],
        tokens_sent=total_sum,
    )
