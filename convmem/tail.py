"""Newest-first tail loading: fetch only the newest messages History would keep (issue 12, item 4).

A full load reads a conversation oldest first and History then drops all but the newest messages
that fit the token limit. :func:`load_tail` reads it **newest first** instead (a store that pages
newest first: ``SQLStore.pager(cid, newest_first=True)``, ``MemoryStore.pager(...)`` likewise) and
stops fetching as soon as it is *proven* that no older message could still be kept; it then returns
exactly what ``History(limit, **policies)`` fed with the whole conversation would keep at the end,
in conversation order, with a :class:`TailLoad` saying how many pages that took.

When it may stop (the proof, docs/decisions.md "Loading"). With ``target`` equal to the limit (the
default) and ``start_on_user`` off, History's kept run after message ``t`` starts at
``r_t = max(r_(t-1), c(t))``, where ``c(t)`` is the oldest start ``j`` whose kept tokens - the
messages ``j..t`` (less tool results whose call is older than ``j``, with ``keep_tool_groups``) plus
the pinned messages older than ``j`` - fit the limit. Those kept tokens only grow as ``j`` moves
older or ``t`` newer, so the final run starts at ``max_t c(t)``, and once the newest-first scan
reaches a message ``m`` (with ``pin_latest_user``: a *user* message, so the pinned user message of
every later step is known) whose kept tokens up to the newest message pass the limit, every
unpinned message older than ``m`` is dropped in the full run, and the final run is decided by
what was fetched. Pinned messages older than ``m`` still count:

* ``pin_system``: every system message is kept, wherever it is. The tail cannot see the ones older
  than what it fetched, so the caller passes ``system_messages`` (every system message of the
  conversation, in order: the agent's system prompt, or a query by role); without it the tail
  loads the whole conversation (correct, no saving) and says why.
* ``pin_latest_user``: handled by stopping only at a user message (above).

Where no such proof exists the whole conversation is fetched (still exact), ``stopped_early`` is
False and ``why_full`` says why: ``target`` below the limit (compaction cuts to the target only when
the limit is passed, so what is kept depends on when earlier compactions ran: on the whole
conversation) and ``start_on_user`` (it drops at compaction times, the same dependence). History
has no summarizer here: a summary depends on every dropped message.

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
>>> tail = load_tail(store.pager("c1", newest_first=True), 30, start_on_user=True)
>>> [m.id for m in tail.messages], tail.pages, tail.stopped_early
(['m8', 'm9'], 5, False)
>>> tail.why_full
'start_on_user drops messages when a compaction runs, so what is kept depends on the whole conversation'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .history import History
from .loading import STOP_EMPTY_PAGE, STOP_END, LoadReport, iter_pages
from .message import Message

__all__ = ["TAIL_PROVEN", "TailLoad", "load_tail"]

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
        why_full: why no early stop could be proven for these options (None when one can be).
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


def _why_full(target: Any, limit: Any, start_on_user: bool, pin_system: bool,
              system_messages: Any) -> str | None:
    if target is not None and target != limit:
        return (
            f"target={target} is below limit={limit}: compaction cuts to the target only when the "
            f"limit is passed, so what is kept depends on the whole conversation"
        )
    if start_on_user:
        return (
            "start_on_user drops messages when a compaction runs, so what is kept depends on the "
            "whole conversation"
        )
    if pin_system and system_messages is None:
        return (
            "pin_system keeps every system message, and the ones older than the tail cannot be "
            "seen from it: pass system_messages= (every system message of the conversation)"
        )
    return None


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
            (a tail restarts from the newest page), or as iter_pages.
        PageLoadError: a page kept failing (as load_history); nothing partial is returned.
    """
    # History checks limit, target and the flags (errors name them and their values).
    History(
        limit, pin_system=pin_system, pin_latest_user=pin_latest_user,
        keep_tool_groups=keep_tool_groups, start_on_user=start_on_user, target=target,
    )
    if "resume" in load_options:
        raise TypeError("load_tail: resume is not supported (a tail restarts from the newest page)")
    systems = None if system_messages is None else _check_system_messages(system_messages)
    if total_messages is not None and (
        isinstance(total_messages, bool) or not isinstance(total_messages, int)
        or total_messages < 0
    ):
        raise ValueError(f"load_tail: total_messages must be an int >= 0, got {total_messages!r}")
    why_full = _why_full(target, limit, start_on_user, pin_system, systems)
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
                if why_full is not None or proven:
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
