"""History: what goes to the model, kept under a token limit (SPEC §4).

The base rule is the seed's: ``add`` appends a message, then drops from the oldest end until
``total() <= limit`` and returns the dropped ids, oldest first.

>>> h = History(100)
>>> h.add(Message("s", "system", 20)), h.add(Message("u1", "user", 30))
([], [])
>>> h.add(Message("a1", "assistant", 40)), h.total()
([], 90)
>>> h.add(Message("u2", "user", 25))
['s']
>>> h.messages()
['u1', 'a1', 'u2']
>>> h.add(Message("t1", "tool", 120))
['u1', 'a1', 'u2', 't1']
>>> h.messages(), h.total()
([], 0)

Policies are keyword arguments, all off by default (see :class:`History`). With them on:

>>> h = History(6, pin_system=True)
>>> [h.add(Message(i, r, 2)) for i, r in [("s", "system"), ("u1", "user"), ("a1", "assistant")]]
[[], [], []]
>>> h.add(Message("u2", "user", 2)), h.add(Message("a2", "assistant", 2)), h.messages()
(['u1'], ['a1'], ['s', 'u2', 'a2'])

How it stays amortized O(1): kept messages are a *head* of pinned messages that compaction has
passed over (all older than anything still in the run), a *run* deque holding the newest contiguous
suffix in conversation order, and a running total. Compaction pops from the run's left: a pinned
message moves to the head (once), an unpinned one is dropped (once). Tool results dropped together
with their call are marked dead in place and skipped when they reach the left end (lazy deletion).
Every message is therefore pushed once, moved at most once and popped at most once, and the total is
never re-summed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .message import Message

__all__ = [
    "History",
    "Compaction",
    "DroppedMessage",
    "SummaryEvent",
    "Summarizer",
    "DROP_REASONS",
    "OVER_LIMIT",
    "TOOL_GROUP",
    "START_ON_USER",
    "TOO_BIG",
    "PIN_MOVED",
    "TRIGGER_LIMIT",
    "TRIGGER_PIN_MOVED",
    "TRIGGER_ARRIVAL",
]

#: Dropped from the oldest end by a compaction (the total passed the limit; cut to the target).
OVER_LIMIT = "over_limit"
#: Dropped together with its tool call (``keep_tool_groups``): a result whose call went, or a result
#: that arrived after its call had gone / answering no call at all.
TOOL_GROUP = "tool_group"
#: Dropped so the first non-system message is a user message (``start_on_user``).
START_ON_USER = "start_on_user"
#: Its own tokens exceed what a compaction cuts to (the limit, or target - summary_budget).
TOO_BIG = "too_big"
#: A user message that was kept only by ``pin_latest_user``; a newer user message took the pin and
#: the messages between it and the run had already gone, so it is no longer part of the suffix.
PIN_MOVED = "pin_moved"
DROP_REASONS: tuple[str, ...] = (OVER_LIMIT, TOOL_GROUP, START_ON_USER, TOO_BIG, PIN_MOVED)

#: A compaction started because the total passed the limit.
TRIGGER_LIMIT = "limit"
#: A compaction started because a pinned user message fell out of the suffix (``PIN_MOVED``).
TRIGGER_PIN_MOVED = "pin_moved"
#: No compaction: only the new message was refused on arrival (a tool result without its call).
TRIGGER_ARRIVAL = "arrival"

#: ``summarizer(previous_summary, dropped) -> Message``: the summary in place (or None) and the
#: messages this compaction dropped, oldest first (never empty).
Summarizer = Callable[[Message | None, list[Message]], Message]


@dataclass(frozen=True, slots=True)
class DroppedMessage:
    """One message a compaction dropped.

    Attributes:
        id, role, tokens: of the message.
        reason: one of :data:`DROP_REASONS`.
        added_step: the 0-based add that brought the message in.
        summarized: True when an accepted summary took it in.
    """

    id: str
    role: str
    tokens: int
    reason: str
    added_step: int
    summarized: bool = False


@dataclass(frozen=True, slots=True)
class SummaryEvent:
    """What happened to the summary in one compaction.

    Attributes:
        accepted: the new summary replaced the previous one. A summary over ``budget`` is rejected:
            the previous summary (or none) stays and ``reason`` says why.
        id, tokens: of the summary the summarizer returned.
        budget: the summary_budget in tokens.
        replaced_id: the id of the summary it replaced (None when there was none or it was rejected).
        reason: why it was rejected, else None.
    """

    accepted: bool
    id: str
    tokens: int
    budget: int
    replaced_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Compaction:
    """The record of one add that dropped something.

    Attributes:
        step: the 0-based index of the add (the n-th message added).
        message_id: the id of the message that add brought.
        trigger: :data:`TRIGGER_LIMIT`, :data:`TRIGGER_PIN_MOVED` or :data:`TRIGGER_ARRIVAL`.
        total_before: tokens right after the new message was appended, before any drop.
        total_after: tokens after the compaction (and the summary, if any).
        dropped: every dropped message, oldest first.
        summary: the summary outcome, or None when no summarizer ran.
    """

    step: int
    message_id: str
    trigger: str
    total_before: int
    total_after: int
    dropped: tuple[DroppedMessage, ...]
    summary: SummaryEvent | None = None

    @property
    def dropped_ids(self) -> list[str]:
        """The dropped ids, oldest first (what ``add`` returned)."""
        return [d.id for d in self.dropped]

    @property
    def dropped_tokens(self) -> int:
        """Tokens of the dropped messages."""
        return sum(d.tokens for d in self.dropped)


class _Entry:
    """A message inside History (mutable bookkeeping; never exposed)."""

    __slots__ = ("seq", "msg", "pinned", "alive", "group", "in_head")

    def __init__(self, seq: int, msg: Message) -> None:
        self.seq = seq
        self.msg = msg
        self.pinned = False
        self.alive = True
        self.group: _Group | None = None
        self.in_head = False


class _Group:
    """An assistant message with tool calls plus the tool results that answer it."""

    __slots__ = ("call", "results", "dead")

    def __init__(self, call: _Entry) -> None:
        self.call = call
        self.results: list[_Entry] = []
        self.dead = False


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"History {name} must be an int (not bool), got {value!r}")
    if value < 0:
        raise ValueError(f"History {name} must be a non-negative int, got {value!r}")
    return value


class History:
    """The messages that would go to the model now, kept under ``limit`` tokens.

    Args:
        limit: the most tokens the model may receive (int >= 0). A total equal to the limit fits.
            With ``target`` it is the trigger: compaction runs only when the total passes it.
        pin_system: system messages are never dropped.
        pin_latest_user: the newest user message is never dropped; the pin moves when a newer user
            message arrives. If the old one was kept only by its pin (messages after it had gone),
            it is dropped then (reason ``pin_moved``), so what is kept stays a suffix plus pins.
        keep_tool_groups: an assistant message that calls tools and the tool results answering it
            are one unit, dropped together (reason ``tool_group`` for the results). Results join
            their call by ``tool_call_id`` where it names a known call, otherwise by position (the
            most recent assistant message). A result whose call is gone, or that answers nothing
            seen, is dropped on arrival: a tool result is never left without its call.
        start_on_user: after a compaction, leading non-system messages are dropped until the first
            non-system message is a user message (a summary does not count as a message here).
        target: compaction cuts the total to at most ``target`` tokens (0 <= target <= limit).
            Default: the limit itself (the base rule).
        summarizer: ``f(previous_summary, dropped) -> Message``; called once per compaction that
            dropped something, never with nothing. The summary is placed after the pinned messages
            older than the run and replaces the previous summary. Plug any callable in, an LLM call
            included (see :mod:`convmem.summarizers`).
        summary_budget: tokens reserved for the summary (required with ``summarizer``): compaction
            cuts live messages to ``target - summary_budget``; a summary with more tokens than the
            budget is rejected (the previous one stays) and reported.
        on_compaction: optional callback receiving each :class:`Compaction` as it happens.

    Kept is always the newest contiguous run of messages (a suffix, less the tool results dropped
    with their call) plus pinned messages, in conversation order. Pinned messages are kept even when
    they alone exceed the limit; then ``over_limit`` is True and every later unpinned message is
    dropped on arrival.

    Complexity: ``add`` is amortized O(1) plus the messages it drops (O(d log d) worst case to order
    d dropped ids when tool groups interleave; O(d) otherwise), with every policy on; ``total()`` and
    ``over_limit`` are O(1); ``messages()`` and ``context()`` are O(kept). Memory is O(kept) plus
    one entry per tool call id seen when ``keep_tool_groups`` is on.

    Raises:
        TypeError: limit, target or summary_budget not an int, summarizer not callable.
        ValueError: negative values, target above limit, summary_budget above target, a budget
            without a summarizer or a summarizer without a budget (naming the values).

    Rule sources: SPEC §4 and the seed's Part 2 and follow-ups; the exact choices where the SPEC is
    silent are in docs/decisions.md.
    """

    __slots__ = (
        "_limit",
        "_target",
        "_budget",
        "_goal",
        "_pin_system",
        "_pin_latest_user",
        "_keep_tool_groups",
        "_start_on_user",
        "_summarizer",
        "_on_compaction",
        "_head",
        "_head_user",
        "_run",
        "_total",
        "_summary",
        "_latest_user",
        "_groups",
        "_last_assistant",
        "_frontier",
        "_step",
        "_compactions",
        "_kept_count",
    )

    def __init__(
        self,
        limit: int,
        *,
        pin_system: bool = False,
        pin_latest_user: bool = False,
        keep_tool_groups: bool = False,
        start_on_user: bool = False,
        target: int | None = None,
        summarizer: Summarizer | None = None,
        summary_budget: int | None = None,
        on_compaction: Callable[[Compaction], object] | None = None,
    ) -> None:
        self._limit = _check_int("limit", limit)
        if target is not None:
            _check_int("target", target)
            if target > limit:
                raise ValueError(f"History target must be <= limit, got target={target} > limit={limit}")
        self._target = limit if target is None else target
        if summarizer is not None and not callable(summarizer):
            raise TypeError(f"History summarizer must be callable, got {summarizer!r}")
        if summary_budget is not None:
            _check_int("summary_budget", summary_budget)
            if summarizer is None:
                raise ValueError(
                    f"History summary_budget={summary_budget} needs a summarizer, got summarizer=None"
                )
            if summary_budget > self._target:
                raise ValueError(
                    "History summary_budget must be <= target (the limit when no target), got "
                    f"summary_budget={summary_budget} > target={self._target}"
                )
        elif summarizer is not None:
            raise ValueError("History summarizer needs a summary_budget (tokens), got summary_budget=None")
        for name, flag in (
            ("pin_system", pin_system),
            ("pin_latest_user", pin_latest_user),
            ("keep_tool_groups", keep_tool_groups),
            ("start_on_user", start_on_user),
        ):
            if not isinstance(flag, bool):
                raise TypeError(f"History {name} must be a bool, got {flag!r}")
        if on_compaction is not None and not callable(on_compaction):
            raise TypeError(f"History on_compaction must be callable, got {on_compaction!r}")
        self._budget = summary_budget or 0
        self._goal = self._target - self._budget
        self._pin_system = pin_system
        self._pin_latest_user = pin_latest_user
        self._keep_tool_groups = keep_tool_groups
        self._start_on_user = start_on_user
        self._summarizer = summarizer
        self._on_compaction = on_compaction
        self._head: list[_Entry] = []  # pinned system messages passed over by compaction, in order
        self._head_user: _Entry | None = None  # the pinned latest user message, when passed over
        self._run: deque[_Entry] = deque()  # the newest contiguous run (may hold dead entries)
        self._total = 0
        self._summary: Message | None = None
        self._latest_user: _Entry | None = None
        self._groups: dict[str, _Group] = {}
        self._last_assistant: _Group | None = None
        self._frontier = -1  # seq of the newest message dropped from the oldest end
        self._step = 0
        self._compactions: list[Compaction] = []
        self._kept_count = 0

    # ------------------------------------------------------------------ reading

    @property
    def limit(self) -> int:
        """The token limit (the trigger when a target is set)."""
        return self._limit

    @property
    def target(self) -> int:
        """What compaction cuts the total to, in tokens (the limit when none was given)."""
        return self._target

    @property
    def summary_budget(self) -> int:
        """Tokens reserved for the summary (0 without a summarizer)."""
        return self._budget

    def total(self) -> int:
        """Tokens of what would be sent now, the summary included. O(1)."""
        return self._total

    @property
    def over_limit(self) -> bool:
        """True when pinned messages alone keep the total above the limit. O(1)."""
        return self._total > self._limit

    @property
    def summary(self) -> Message | None:
        """The summary in place, or None."""
        return self._summary

    @property
    def steps(self) -> int:
        """How many messages have been added."""
        return self._step

    @property
    def compactions(self) -> list[Compaction]:
        """Every compaction so far, in order (a copy). O(compactions)."""
        return list(self._compactions)

    def __len__(self) -> int:
        """How many messages would be sent now, the summary included. O(1)."""
        return self._kept_count + (self._summary is not None)

    def context(self) -> list[Message]:
        """The messages that would be sent now, in order, the summary included. O(kept)."""
        head = self._head
        user = self._head_user
        if user is not None:
            head = sorted([*head, user], key=lambda e: e.seq)
        before = [e.msg for e in head if e.seq < self._frontier]
        after = [e.msg for e in head if e.seq > self._frontier]
        if self._summary is not None:
            before.append(self._summary)
        before.extend(after)
        before.extend(e.msg for e in self._run if e.alive)
        return before

    def messages(self) -> list[str]:
        """The ids of :meth:`context`, in order. O(kept)."""
        return [m.id for m in self.context()]

    def __repr__(self) -> str:
        return f"History(limit={self._limit}, target={self._target}, total={self._total}, kept={len(self)})"

    # ------------------------------------------------------------------ adding

    def add(self, message: Message) -> list[str]:
        """Append ``message``, compact if needed, and return the dropped ids, oldest first.

        Amortized O(1) plus the messages dropped. Raises TypeError when ``message`` is not a
        :class:`Message`; a summarizer's own errors propagate (the history is then unchanged by
        the summary but the drops stand, and the compaction is not recorded).
        """
        if not isinstance(message, Message):
            raise TypeError(f"History.add message must be a Message, got {message!r}")
        step = self._step
        self._step += 1
        entry = _Entry(step, message)
        dropped: list[tuple[_Entry, str]] = []
        trigger: str | None = None
        role = message.role

        if self._pin_latest_user and role == "user":
            entry.pinned = True
            old = self._latest_user
            self._latest_user = entry
            if old is not None:
                old.pinned = False
                if old.seq < self._frontier:  # it is in the head, cut off from the run
                    self._head_user = None
                    self._kill(old, PIN_MOVED, dropped)
                    trigger = TRIGGER_PIN_MOVED
                elif old.in_head:  # nothing after it went: it rejoins the run at its left
                    self._head_user = None
                    old.in_head = False
                    self._run.appendleft(old)
        elif self._pin_system and role == "system":
            entry.pinned = True

        if self._keep_tool_groups:
            if role == "assistant":
                group = _Group(entry)
                entry.group = group
                self._last_assistant = group
                for call_id in message.tool_call_ids:
                    self._groups[call_id] = group
            elif role == "tool":
                group = None
                if message.tool_call_id is not None:
                    group = self._groups.get(message.tool_call_id)
                if group is None:
                    group = self._last_assistant
                if group is None or group.dead:
                    # Never admitted: a tool result is never left without its call.
                    entry.alive = False
                    dropped.append((entry, TOOL_GROUP))
                    if trigger is None:
                        trigger = TRIGGER_ARRIVAL
                    return self._finish(entry, step, self._total, dropped, trigger)
                group.results.append(entry)
                entry.group = group

        self._run.append(entry)
        self._total += message.tokens
        self._kept_count += 1
        total_before = self._total
        if self._total > self._limit:
            trigger = TRIGGER_LIMIT
        if trigger in (TRIGGER_LIMIT, TRIGGER_PIN_MOVED):
            self._cut(dropped)
            if self._start_on_user:
                self._align_to_user(dropped)
        return self._finish(entry, step, total_before, dropped, trigger)

    def _cut(self, dropped: list[tuple[_Entry, str]]) -> None:
        """Drop from the oldest end until live tokens (all but the summary) fit the goal."""
        goal = self._goal
        run = self._run
        summary_tokens = self._summary.tokens if self._summary is not None else 0
        while self._total - summary_tokens > goal and run:
            e = run.popleft()
            if not e.alive:
                continue
            if e.pinned:
                self._park(e)
                continue
            self._drop_unit(e, TOO_BIG if e.msg.tokens > goal else OVER_LIMIT, dropped)

    def _align_to_user(self, dropped: list[tuple[_Entry, str]]) -> None:
        """start_on_user: drop leading non-system messages until a user message leads.

        Unpinned system messages passed over stay only if nothing after them is dropped (the kept
        set stays a suffix plus pins); their count is the only rescan cost.
        """
        if self._head_user is not None:
            return  # the pinned user message in the head is the first non-system message
        run = self._run
        i = 0
        while i < len(run):
            e = run[i]
            if not e.alive:
                if i == 0:
                    run.popleft()
                else:
                    i += 1
                continue
            role = e.msg.role
            if role == "user":
                return
            if role == "system":
                if e.pinned and i == 0:
                    run.popleft()
                    self._park(e)
                else:
                    i += 1
                continue
            # A leading non-system, non-user message: it goes, with any system messages before it
            # that are not pinned (pinned ones are parked in the head).
            for _ in range(i):
                x = run.popleft()
                if not x.alive:
                    continue
                if x.pinned:
                    self._park(x)
                else:
                    self._drop_unit(x, START_ON_USER, dropped)
            run.popleft()
            self._drop_unit(e, START_ON_USER, dropped)
            i = 0

    def _park(self, e: _Entry) -> None:
        """Move a pinned message from the run's left end into the head. O(1)."""
        e.in_head = True
        if e.msg.role == "user":
            self._head_user = e  # only pin_latest_user pins a user message: at most one
        else:
            self._head.append(e)

    def _drop_unit(self, e: _Entry, reason: str, dropped: list[tuple[_Entry, str]]) -> None:
        """Drop ``e`` from the oldest end, with its tool results when it heads a tool group."""
        self._frontier = e.seq
        self._kill(e, reason, dropped)
        group = e.group
        if group is not None and group.call is e:
            group.dead = True
            for r in group.results:
                if r.alive:
                    self._kill(r, TOOL_GROUP, dropped)

    def _kill(self, e: _Entry, reason: str, dropped: list[tuple[_Entry, str]]) -> None:
        e.alive = False
        e.in_head = False
        self._total -= e.msg.tokens
        self._kept_count -= 1
        dropped.append((e, reason))

    def _finish(
        self,
        entry: _Entry,
        step: int,
        total_before: int,
        dropped: list[tuple[_Entry, str]],
        trigger: str | None,
    ) -> list[str]:
        if not dropped:
            return []
        if any(dropped[i][0].seq > dropped[i + 1][0].seq for i in range(len(dropped) - 1)):
            dropped.sort(key=lambda pair: pair[0].seq)
        event: SummaryEvent | None = None
        summarized = False
        if self._summarizer is not None and trigger != TRIGGER_ARRIVAL:
            event = self._summarize([e.msg for e, _ in dropped])
            summarized = event.accepted
        record = Compaction(
            step=step,
            message_id=entry.msg.id,
            trigger=trigger or TRIGGER_LIMIT,
            total_before=total_before,
            total_after=self._total,
            dropped=tuple(
                DroppedMessage(e.msg.id, e.msg.role, e.msg.tokens, reason, e.seq, summarized)
                for e, reason in dropped
            ),
            summary=event,
        )
        self._compactions.append(record)
        if self._on_compaction is not None:
            self._on_compaction(record)
        return [e.msg.id for e, _ in dropped]

    def _summarize(self, dropped: list[Message]) -> SummaryEvent:
        assert self._summarizer is not None
        previous = self._summary
        new = self._summarizer(previous, dropped)
        if not isinstance(new, Message):
            raise TypeError(f"History summarizer must return a Message, got {new!r}")
        if new.tokens > self._budget:
            return SummaryEvent(
                accepted=False,
                id=new.id,
                tokens=new.tokens,
                budget=self._budget,
                reason=f"summary has {new.tokens} tokens, over the summary_budget of {self._budget}",
            )
        self._total += new.tokens - (previous.tokens if previous is not None else 0)
        self._summary = new
        return SummaryEvent(
            accepted=True,
            id=new.id,
            tokens=new.tokens,
            budget=self._budget,
            replaced_id=previous.id if previous is not None else None,
        )
