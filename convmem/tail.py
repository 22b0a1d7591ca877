"""Newest-first tail loading: fetch only the newest messages History would keep (issue 12, item 4).

A full load reads a conversation oldest first and History then drops all but the newest messages
that fit the token limit. :func:`load_tail` reads it **newest first** instead (a store that pages
newest first: ``SQLStore.pager(cid, newest_first=True)``, ``MemoryStore.pager(...)`` likewise) and
stops fetching as soon as it is *proven* that no older message could still be kept; it then returns
exactly what ``History(limit, **policies)`` fed with the whole conversation would keep at the end,
in conversation order, with a :class:`TailLoad` saying how many pages that took.

When it may stop (the proofs, docs/decisions.md "Loading"). With ``target`` equal to the limit (the
default) and ``start_on_user`` off, History's kept run after message ``t`` starts at
``r_t = max(r_(t-1), c(t))``, where ``c(t)`` is the oldest start ``j`` whose kept tokens - the
messages ``j..t`` (less tool results whose call is older than ``j``, with ``keep_tool_groups``) plus
the pinned messages older than ``j`` - fit the limit. Those kept tokens only grow as ``j`` moves
older or ``t`` newer, so the final run starts at ``max_t c(t)``, and once the newest-first scan
reaches a message ``m`` (with ``pin_latest_user``: a *user* message, so the pinned user message of
every later step is known) whose kept tokens up to the newest message pass the limit, every
unpinned message older than ``m`` is dropped in the full run, and the final run is decided by
what was fetched (one pass, O(messages fetched)).

With ``target`` below the limit or ``start_on_user`` what is kept depends on when compactions ran,
so the tail proves a **synchronization** instead: a message ``s`` of the fetched suffix at which
*every* possible history (whatever came before the suffix) compacts, and cuts to the same message
inside the suffix (a compaction cuts to the oldest start whose kept tokens fit the target; an
upper bound on every possible run start before ``s`` shows the limit is passed whatever it was).
From that message on all histories are in one state, so History fed with the fetched suffix ends
where the full run ends. Such a message exists only where the conversation forces it (one message
that passes ``limit - target`` on its own - a large tool result, say); with turns of equal size
the kept messages really do depend on the phase of every earlier compaction, and the tail reads to
the end. This proof costs O(k^2) for k fetched messages; it is tried as the suffix
doubles, up to :data:`PROOF_MESSAGES` messages; past that the tail reads on to the end.

Pinned messages older than what was fetched still count:

* ``pin_system``: every system message is kept, wherever it is. The tail cannot see the ones older
  than what it fetched, so the caller passes ``system_messages`` (every system message of the
  conversation, in order: the agent's system prompt, or a query by role); without it the tail
  loads the whole conversation (correct, no saving) and ``why_full`` says why.
* ``pin_latest_user``: handled by proving only from a user message on (above).

Where no proof is found the whole conversation is fetched (still exact) and ``stopped_early`` is
False. History has no summarizer here: a summary depends on every dropped message.

Paging, retries and de-duplication are :func:`convmem.iter_pages`' (the same options). A store for
this keeps the keyset contract (:mod:`convmem.stores`): stable cursors and each id once; ids are
de-duplicated as the pages come (newest occurrence kept).

>>> from convmem import Message
>>> from convmem.testing import MemoryStore
>>> store = MemoryStore(page_size=2)
>>> _ = store.append("c1", [Message(f"m{i}", "user" if i % 2 == 0 else "assistant", 10)
...                         for i in range(10)])
>>> tail = load_tail(store.pager("c1", newest_first=True), 30)
>>> [m.id for m in tail.messages], tail.tokens, tail.pages, tail.stopped_early
(['m7', 'm8', 'm9'], 30, 2, True)
>>> tail = load_tail(store.pager("c1", newest_first=True), 30, target=20, start_on_user=True)
>>> [m.id for m in tail.messages], tail.pages, tail.stopped_early  # equal turns: the phase rules
(['m8', 'm9'], 5, False)
>>> _ = store.append("c1", [Message("u", "user", 15), Message("a", "assistant", 4)])
>>> tail = load_tail(store.pager("c1", newest_first=True), 30, target=20, start_on_user=True)
>>> [m.id for m in tail.messages], tail.pages, tail.stopped_early  # u forces a compaction
(['u', 'a'], 2, True)
>>> tail = load_tail(store.pager("c1", newest_first=True), 30, pin_system=True)
>>> tail.pages, tail.stopped_early, tail.why_full[:37]
(6, False, 'pin_system keeps every system message')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .history import History
from .loading import STOP_EMPTY_PAGE, STOP_END, LoadReport, iter_pages
from .message import Message

__all__ = ["PROOF_MESSAGES", "TAIL_PROVEN", "TailLoad", "load_tail"]

#: TailLoad.stop_reason when the fetch stopped early because no older message could be kept.
TAIL_PROVEN = "budget"


@dataclass(frozen=True, slots=True)
class TailLoad:
    """What :func:`load_tail` kept and what it fetched. Immutable (``report`` is the run's
    LoadReport, left out of ``==``).

    Attributes:
        messages: what History keeps at the end of the conversation, in conversation order
            (exactly ``History(limit, **policies)`` fed with a full load, then ``context()``).
        tokens: their tokens (``History.total()``).
        pages: pages fetched (successful calls).
        messages_fetched: distinct messages fetched (the whole page the stop fell in included).
        stopped_early: True when the fetch stopped before the end because no older message could
            still be kept (``stop_reason == "budget"``); False when the walk reached the end (also
            when the proof came on the last page: it saved nothing).
        stop_reason: :data:`TAIL_PROVEN` (``"budget"``), or the walk's own stop reason
            (``"end"``, ``"empty_page"``, ``"page_cap"``, ...) when it ran to its end.
        full_load_pages: pages a full load of the conversation needs: ``pages`` when the walk ran
            to the end; from ``total_messages`` and the pager's ``page_size`` when given; else None.
        why_full: why no early stop can be proven for these options at all (pin_system without
            system_messages), else None.
        report: the :class:`~convmem.loading.LoadReport` of the walk.
    """

    messages: tuple[Message, ...]
    tokens: int
    pages: int
    messages_fetched: int
    stopped_early: bool
    stop_reason: str
    full_load_pages: int | None
    why_full: str | None
    report: LoadReport = field(compare=False, repr=False)

    @property
    def page_ratio(self) -> float | None:
        """``pages / full_load_pages`` (None when the full count is unknown)."""
        if not self.full_load_pages:
            return None
        return self.pages / self.full_load_pages


def _why_full(pin_system: bool, system_messages: Any) -> str | None:
    if pin_system and system_messages is None:
        return (
            "pin_system keeps every system message, and the ones older than the tail cannot be "
            "seen from it: pass system_messages= (every system message of the conversation)"
        )
    return None


#: The most fetched messages the synchronization proof (target below the limit, or start_on_user)
#: is attempted over; it costs O(k^2) for k messages. Past it the tail reads on to the end.
PROOF_MESSAGES = 2048


def _synchronized(
    known: list[Message],
    pins_before: int,
    limit: int,
    target: int,
    pin_system: bool,
    pin_latest_user: bool,
    keep_tool_groups: bool,
    start_on_user: bool,
) -> bool:
    """Whether every conversation ending with ``known`` (whatever came before it, with
    ``pins_before`` tokens of pinned system messages before it) has History in one and the same
    state after some message of ``known``: then they all end alike (docs/decisions.md, Loading).

    The argument: let ``tot(j, s)`` be the kept tokens just after message ``s`` if the run starts
    at ``j`` (messages ``j..s``, less tool results whose call is older than ``j``, plus the pins
    older than ``j``), and ``c(s)`` the oldest ``j`` with ``tot(j, s) <= target``. A compaction at
    ``s`` cuts exactly to ``c(s)`` (its run started before the limit-fit point, so before
    ``c(s)``), then start_on_user aligns from there: the state after it depends on ``known`` alone
    when ``c(s)`` lies inside it. ``R`` bounds the run start of every possible history from above
    (each compaction lands at most at ``c(s)``, aligned at most to the next user message, and a
    pin_latest_user move may compact from ``R`` itself); a compaction at ``s`` is certain when even
    a run starting at ``R`` passes the limit. O(len(known)^2).
    """
    n = len(known)
    sys_before = [pins_before] * (n + 1)
    if pin_system:
        for i, m in enumerate(known):
            sys_before[i + 1] = sys_before[i] + (m.tokens if m.role == "system" else 0)
    latest_user = [-1] * n
    last = -1
    for i, m in enumerate(known):
        if m.role == "user":
            last = i
        latest_user[i] = last
    next_user = [n] * (n + 1)
    for i in range(n - 1, -1, -1):
        next_user[i] = i if known[i].role == "user" else next_user[i + 1]

    def scan(s: int, bound: int) -> tuple[int, int | None]:
        """``(tot(bound, s), fit)`` where fit is the oldest start j with ``tot(j, s) <= target``:
        None when even an empty run passes it, 0 when it may lie before ``known``. tot only grows
        as j moves older, so the scan stops at the first j <= bound that passes the target: the
        cost is the messages back to the older of the bound and the target's reach."""
        u = latest_user[s]
        pinned_user = known[u].tokens if (pin_latest_user and u >= 0) else 0
        empty = sys_before[s + 1] + pinned_user
        if empty > target:
            at_bound = empty if bound == s + 1 else None
            fit: int | None = None
        else:
            at_bound, fit = (empty if bound == s + 1 else None), s + 1
        run = 0
        by_id: dict[str, int] = {}
        by_position = 0
        for j in range(s, -1, -1):
            m = known[j]
            if keep_tool_groups and m.role == "tool":
                if m.tool_call_id is not None:
                    by_id[m.tool_call_id] = by_id.get(m.tool_call_id, 0) + m.tokens
                else:
                    by_position += m.tokens
            else:
                run += m.tokens
                if keep_tool_groups and m.role == "assistant":
                    run += by_position
                    by_position = 0
                    for call_id in m.tool_call_ids:
                        run += by_id.pop(call_id, 0)
            tot = run + sys_before[j] + (pinned_user if (pin_latest_user and u < j) else 0)
            if j == bound:
                at_bound = tot
            if tot <= target:
                fit = j
            elif j <= bound:
                break
        assert at_bound is not None
        return at_bound, fit

    def align(j: int, s: int) -> int:
        if not start_on_user:
            return j
        return next_user[j] if next_user[j] <= s else s + 1

    bound = 0  # R: every possible run start is at most this (0: possibly older than known)
    for s in range(n):
        at_bound, fit = scan(s, bound)
        refused_possible = keep_tool_groups and known[s].role == "tool"
        if (
            not refused_possible
            and at_bound > limit  # every possible history compacts at s ...
            and fit is not None
            and fit >= 1  # ... and cuts to the same message, inside known
        ):
            return True
        cut = s + 1 if fit is None else fit
        new_bound = max(bound, align(cut, s))
        if pin_latest_user and known[s].role == "user":
            new_bound = max(new_bound, align(max(bound, cut), s))
        bound = new_bound
    return False


def _check_system_messages(system_messages: Any) -> list[Message]:
    if isinstance(system_messages, (str, bytes)) or not isinstance(system_messages, Sequence):
        raise TypeError(
            f"load_tail: system_messages must be a list of system Message, got {system_messages!r}"
        )
    seen: set[str] = set()
    for position, message in enumerate(system_messages):
        if not isinstance(message, Message):
            raise TypeError(
                f"load_tail: system_messages[{position}] must be a Message, got {message!r}"
            )
        if message.role != "system":
            raise ValueError(
                f"load_tail: system_messages[{position}] has role {message.role!r}, not 'system' "
                f"(id {message.id!r})"
            )
        if message.id in seen:
            raise ValueError(
                f"load_tail: system_messages[{position}] repeats the id {message.id!r}"
            )
        seen.add(message.id)
    return list(system_messages)


def _prove_synchronized(
    newest_first: list[Message],
    systems: list[Message] | None,
    limit: int,
    target: int,
    pin_system: bool,
    pin_latest_user: bool,
    keep_tool_groups: bool,
    start_on_user: bool,
) -> bool:
    """_synchronized over the fetched suffix: from its oldest user message with pin_latest_user
    (so every later step's pinned user message is known), else from its oldest message."""
    conversation = newest_first[::-1]
    start = 0
    if pin_latest_user:
        start = next((i for i, m in enumerate(conversation) if m.role == "user"), None)
        if start is None:
            return False
    pins_before = 0
    if pin_system:
        fetched = {m.id for m in conversation}
        pins_before = sum(m.tokens for m in systems or () if m.id not in fetched)
        pins_before += sum(m.tokens for m in conversation[:start] if m.role == "system")
    return _synchronized(
        conversation[start:], pins_before, limit, target, pin_system, pin_latest_user,
        keep_tool_groups, start_on_user,
    )


def load_tail(
    fetch_page: Callable[[Any], tuple[Sequence[Message], Any]],
    limit: int,
    *,
    pin_system: bool = False,
    pin_latest_user: bool = False,
    keep_tool_groups: bool = False,
    start_on_user: bool = False,
    target: int | None = None,
    system_messages: Sequence[Message] | None = None,
    total_messages: int | None = None,
    **load_options: Any,
) -> TailLoad:
    """The newest messages History would keep, fetched newest first, stopping as soon as no older
    message could still be kept (module doc: when that is proven, and when it is not).

    Args:
        fetch_page: a ``fetch_page(cursor)`` that pages **newest first** (each page and the walk
            from the newest message to the oldest), e.g. ``store.pager(cid, newest_first=True)``.
        limit, pin_system, pin_latest_user, keep_tool_groups, start_on_user, target: as
            :class:`convmem.History` takes them (tokens; no summarizer).
        system_messages: with ``pin_system``: every system message of the conversation, oldest
            first (those the tail does not fetch are kept ahead of it, as History keeps them).
            Without it ``pin_system`` means a full fetch.
        total_messages: the conversation's message count, if known: fills ``full_load_pages``
            from the pager's ``page_size`` when the tail stopped early.
        **load_options: passed to :func:`convmem.iter_pages` (``attempts``, ``max_pages``,
            ``sleep``, ``clock``, ``random``, ``deadline``, ``retry_on``, ``report``, ...).

    Returns:
        A :class:`TailLoad`.

    Complexity: O(messages fetched) time and memory beyond the fetches, plus History's adds. The
    messages fetched are those newer than the first message whose kept tokens pass the limit, plus
    the rest of its page (with ``pin_latest_user``: back to the next older user message).

    Raises:
        TypeError / ValueError: bad History options (as History raises them), bad
            ``system_messages`` (not system messages, repeated ids), ``resume`` in load_options
            (a tail restarts from the newest page), a pager whose ``newest_first`` is False
            (ValueError: it pages oldest first), or as iter_pages.
        PageLoadError: a page kept failing (as load_history); nothing partial is returned.
    """
    # History checks limit, target and the flags (errors name them and their values).
    History(
        limit, pin_system=pin_system, pin_latest_user=pin_latest_user,
        keep_tool_groups=keep_tool_groups, start_on_user=start_on_user, target=target,
    )
    if "resume" in load_options:
        raise TypeError("load_tail: resume is not supported (a tail restarts from the newest page)")
    if getattr(fetch_page, "newest_first", None) is False:
        # A keyset pager that says it pages oldest first: the tail would keep the oldest
        # messages as if they were the newest (a silent wrong answer), so refuse it.
        raise ValueError(
            f"load_tail: fetch_page must page newest first, got a pager with newest_first=False "
            f"({type(fetch_page).__name__}); use store.pager(conversation_id, newest_first=True)"
        )
    systems = None if system_messages is None else _check_system_messages(system_messages)
    if total_messages is not None and (
        isinstance(total_messages, bool) or not isinstance(total_messages, int)
        or total_messages < 0
    ):
        raise ValueError(f"load_tail: total_messages must be an int >= 0, got {total_messages!r}")
    why_full = _why_full(pin_system, systems)
    # target == limit without start_on_user: the one-pass witness below; else the
    # synchronization proof (_synchronized), tried as the fetched suffix doubles.
    quick = (target is None or target == limit) and not start_on_user
    goal = limit if target is None else target
    next_proof = 1
    report = load_options.pop("report", None)
    if report is None:
        report = LoadReport()

    newest_first: list[Message] = []  # every message fetched, newest first
    # The kept tokens of a run starting at the oldest message scanned so far (module doc): tool
    # results wait (pending) until the scan reaches the call they would join.
    run_tokens = 0
    pending_by_id: dict[str, int] = {}
    pending_by_position = 0
    old_system_ids = {m.id for m in systems} if (pin_system and systems) else set()
    old_system_tokens = sum(m.tokens for m in systems) if (pin_system and systems) else 0
    proven = False

    pages = iter_pages(fetch_page, report=report, **load_options)
    try:
        for page in pages:
            for m in page.messages:
                newest_first.append(m)
                if why_full is not None or proven or not quick:
                    continue
                role = m.role
                if keep_tool_groups and role == "tool":
                    if m.tool_call_id is not None:
                        pending_by_id[m.tool_call_id] = (
                            pending_by_id.get(m.tool_call_id, 0) + m.tokens
                        )
                    else:
                        pending_by_position += m.tokens
                    continue
                run_tokens += m.tokens
                if keep_tool_groups and role == "assistant":
                    # Every result scanned since (newer) without an assistant in between joins it
                    # by position; results naming a call id join the newest declaration of it.
                    run_tokens += pending_by_position
                    pending_by_position = 0
                    for call_id in m.tool_call_ids:
                        run_tokens += pending_by_id.pop(call_id, 0)
                if role == "system" and m.id in old_system_ids:
                    old_system_ids.discard(m.id)
                    old_system_tokens -= m.tokens
                if pin_latest_user and role != "user":
                    continue
                if run_tokens + old_system_tokens > limit:
                    proven = True  # the rest of this page is kept, unscanned (not needed)
            if (
                why_full is None and not quick and not proven
                and next_proof <= len(newest_first) <= PROOF_MESSAGES
            ):
                next_proof = 2 * len(newest_first)
                proven = _prove_synchronized(
                    newest_first, systems, limit, goal, pin_system, pin_latest_user,
                    keep_tool_groups, start_on_user,
                )
            if proven:
                break
    finally:
        pages.close()

    conversation = newest_first[::-1]
    # A proof on the last page saves nothing: the walk ended by itself (stopped_early stays False).
    reached_end = report.stop_reason in (STOP_END, STOP_EMPTY_PAGE)
    stopped_early = proven and not reached_end
    history = History(
        limit, pin_system=pin_system, pin_latest_user=pin_latest_user,
        keep_tool_groups=keep_tool_groups, start_on_user=start_on_user, target=target,
    )
    if pin_system and systems and not reached_end:
        fetched = {m.id for m in conversation}
        for m in systems:
            if m.id not in fetched:
                history.add(m)  # older than everything fetched, as the full run has them
    for m in conversation:
        history.add(m)

    if reached_end:
        full_pages: int | None = report.pages
    else:
        page_size = getattr(fetch_page, "page_size", None)
        if total_messages is not None and isinstance(page_size, int) and page_size > 0:
            full_pages = max(1, math.ceil(total_messages / page_size))
        else:
            full_pages = None
    return TailLoad(
        messages=tuple(history.context()),
        tokens=history.total(),
        pages=report.pages,
        messages_fetched=len(conversation),
        stopped_early=stopped_early,
        stop_reason=TAIL_PROVEN if stopped_early else str(report.stop_reason),
        full_load_pages=full_pages,
        why_full=why_full,
        report=report,
    )
