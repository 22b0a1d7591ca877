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
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .errors import SummarizerError
from .message import Message, check_text
from .outcomes import DropReason

__all__ = [
    "History",
    "Compaction",
    "DroppedMessage",
    "SummaryEvent",
    "Summarizer",
    "DROP_REASONS",
    "DropReason",
    "OVER_LIMIT",
    "TOOL_GROUP",
    "START_ON_USER",
    "TOO_BIG",
    "PIN_MOVED",
    "TRIGGER_LIMIT",
    "TRIGGER_PIN_MOVED",
    "TRIGGER_ARRIVAL",
    "ClearToolUses",
    "Clearing",
    "ClearedMessage",
    "CLEAR_TOOL_RESULTS",
    "CLEAR_THINKING",
    "ClearThinking",
    "DEFAULT_PLACEHOLDER",
    "as_cleared",
]

# The drop reasons are convmem.outcomes.DropReason members (str enums: each equals its string).
OVER_LIMIT = DropReason.OVER_LIMIT
TOOL_GROUP = DropReason.TOOL_GROUP
START_ON_USER = DropReason.START_ON_USER
TOO_BIG = DropReason.TOO_BIG
PIN_MOVED = DropReason.PIN_MOVED
DROP_REASONS: tuple[DropReason, ...] = tuple(DropReason)

#: A compaction started because the total passed the limit.
TRIGGER_LIMIT = "limit"
#: A compaction started because a pinned user message fell out of the suffix (``PIN_MOVED``).
TRIGGER_PIN_MOVED = "pin_moved"
#: No compaction: only the new message was refused on arrival (a tool result without its call).
TRIGGER_ARRIVAL = "arrival"

#: Why a clearing ran: the total passed :attr:`ClearToolUses.trigger` (tool results cleared).
CLEAR_TOOL_RESULTS = "tool_results"
#: Why a clearing ran: more than :attr:`ClearThinking.keep` messages carry thinking (cleared).
CLEAR_THINKING = "thinking"
#: LangChain's ``ClearToolUsesEdit`` placeholder (``DEFAULT_TOOL_PLACEHOLDER = "[cleared]"``).
DEFAULT_PLACEHOLDER = "[cleared]"

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
        accepted: the new summary replaced the previous one. A summary over ``budget``, or one that
            would put the total over the limit beside pinned messages, is rejected: the previous
            summary (or none) stays and ``reason`` says why.
        id, tokens: of the summary the summarizer returned (None and 0 when it raised).
        budget: the summary_budget in tokens.
        replaced_id: the id of the summary it replaced (None when there was none or it was rejected).
        reason: why it was rejected or removed, else None.
        removed_id: the summary in place that was taken out because the pinned messages leave no
            room for it under the limit (the total would pass the limit only because of it).
    """

    accepted: bool
    id: str | None
    tokens: int
    budget: int
    replaced_id: str | None = None
    reason: str | None = None
    removed_id: str | None = None


@dataclass(frozen=True, slots=True)
class Compaction:
    """The record of one add that dropped something.

    Attributes:
        step: the 0-based index of the add (the n-th message added).
        message_id: the id of the message that add brought.
        trigger: :data:`TRIGGER_LIMIT`, :data:`TRIGGER_PIN_MOVED` or :data:`TRIGGER_ARRIVAL`.
        total_before: the total before this add plus the new message's tokens (the peak, before
            any drop; for a refused tool result, what the total would have been).
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


@dataclass(frozen=True, slots=True)
class ClearToolUses:
    """Context editing: clear old tool results in place instead of dropping messages.

    Past ``trigger`` tokens, every tool result older than the newest ``keep`` is replaced by a
    placeholder message (same id, role ``"tool"`` and ``tool_call_id``; content ``placeholder``,
    ``placeholder_tokens`` tokens), except results of the tools named in ``exclude_tools``. The
    assistant message that made the call stays, so tool groups stay whole and no provider rejects
    the history. A clearing happens only when it frees at least ``clear_at_least`` tokens (and more
    than 0); otherwise nothing is cleared (the prompt cache is not broken for a small gain).

    Rule sources: Anthropic's ``clear_tool_uses_20250919`` context edit (``trigger`` on input
    tokens, default 100,000; ``keep`` tool uses, default 3; ``clear_at_least``: "if the API can't
    clear at least the specified amount, the strategy will not be applied"; ``exclude_tools``;
    docs.claude.com/en/docs/build-with-claude/context-editing) and LangChain's ``ClearToolUsesEdit``
    (trigger 100000, keep 3, placeholder ``"[cleared]"``, ``clear_at_least`` 0;
    reference.langchain.com, langchain.agents.middleware.context_editing). ``clear_tool_inputs`` is
    not offered: a :class:`~convmem.Message` does not carry its calls' argument tokens.

    Attributes:
        trigger: clearing runs after an add that leaves the total above this many tokens (int >= 0).
        keep: the newest ``keep`` tool results not yet cleared are never cleared (int >= 0;
            results of excluded tools count among them, as in LangChain).
        clear_at_least: the fewest tokens a clearing must free, else it clears nothing (int >= 0).
        exclude_tools: tool names whose results are never cleared (a tuple of str; the name of a
            result is looked up by its ``tool_call_id`` in History's ``tool_names``).
        placeholder: the text a cleared result carries.
        placeholder_tokens: the placeholder's token count (int >= 0; 4 for ``"[cleared]"`` in
            o200k_base and cl100k_base, measured with tiktoken).

    Raises:
        TypeError / ValueError: a field of the wrong type or a negative count (naming the field).

    >>> ClearToolUses(trigger=50, keep=1)
    ClearToolUses(trigger=50, keep=1, clear_at_least=0, exclude_tools=(), placeholder='[cleared]', placeholder_tokens=4)
    >>> ClearToolUses(keep=-1)
    Traceback (most recent call last):
    ...
    ValueError: ClearToolUses keep must be a non-negative int, got -1
    """

    trigger: int = 100_000
    keep: int = 3
    clear_at_least: int = 0
    exclude_tools: tuple[str, ...] = ()
    placeholder: str = DEFAULT_PLACEHOLDER
    placeholder_tokens: int = 4

    def __post_init__(self) -> None:
        for name in ("trigger", "keep", "clear_at_least", "placeholder_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"ClearToolUses {name} must be an int (not bool), got {value!r}")
            if value < 0:
                raise ValueError(f"ClearToolUses {name} must be a non-negative int, got {value!r}")
        tools = self.exclude_tools
        if isinstance(tools, (list, frozenset, set)):
            tools = tuple(sorted(tools)) if not isinstance(tools, list) else tuple(tools)
            object.__setattr__(self, "exclude_tools", tools)
        if not isinstance(tools, tuple) or not all(isinstance(t, str) for t in tools):
            raise TypeError(f"ClearToolUses exclude_tools must be a tuple of str, got {tools!r}")
        if not isinstance(self.placeholder, str):
            raise TypeError(f"ClearToolUses placeholder must be a str, got {self.placeholder!r}")
        # The placeholder becomes a Message's content: a lone surrogate would fail in the middle
        # of History.add, naming Message.content; name the field here instead.
        check_text("ClearToolUses placeholder", self.placeholder)


@dataclass(frozen=True, slots=True)
class ClearThinking:
    """Context editing: clear the thinking of all but the newest ``keep`` thinking turns.

    A thinking turn is a kept assistant message with thinking tokens (History's ``thinking``
    mapping: message id -> how many of its tokens are thinking / reasoning: an Anthropic turn's
    ``thinking`` blocks, or the whole of an OpenAI Responses ``reasoning`` item, see
    :func:`convmem.replay.thinking_tokens_of`). Clearing replaces the message by one with those
    tokens removed (content ``""`` when it was all thinking); it runs on every add, with no trigger
    and no minimum, as Anthropic's ``clear_thinking_20251015`` (``keep`` thinking turns, default
    1: what the API keeps when the edit is not configured; docs.claude.com, context editing).

    Attributes:
        keep: the newest ``keep`` thinking turns keep their thinking (int >= 0).

    >>> ClearThinking()
    ClearThinking(keep=1)
    """

    keep: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.keep, bool) or not isinstance(self.keep, int):
            raise TypeError(f"ClearThinking keep must be an int (not bool), got {self.keep!r}")
        if self.keep < 0:
            raise ValueError(f"ClearThinking keep must be a non-negative int, got {self.keep!r}")


@dataclass(frozen=True, slots=True)
class ClearedMessage:
    """One message a clearing replaced by its placeholder.

    Attributes:
        id, role: of the message.
        tokens_before: its tokens as it was sent until then; tokens_after: the placeholder's.
        added_step: the 0-based add that brought the message in.
    """

    id: str
    role: str
    tokens_before: int
    tokens_after: int
    added_step: int


@dataclass(frozen=True, slots=True)
class Clearing:
    """The record of one clearing (context editing), a sibling of :class:`Compaction`.

    Attributes:
        step: the 0-based index of the add after which it ran; message_id: that add's message.
        reason: :data:`CLEAR_TOOL_RESULTS` or :data:`CLEAR_THINKING`.
        trigger: the :attr:`ClearToolUses.trigger` the total passed (tokens); 0 for thinking.
        total_before: the total right after the add, before clearing (tokens).
        total_after: the total after clearing (before any drop of the same add).
        cleared: the cleared messages, oldest first.
    """

    step: int
    message_id: str
    reason: str
    trigger: int
    total_before: int
    total_after: int
    cleared: tuple[ClearedMessage, ...]

    @property
    def cleared_ids(self) -> list[str]:
        """The cleared ids, oldest first."""
        return [c.id for c in self.cleared]

    @property
    def freed_tokens(self) -> int:
        """Tokens this clearing freed: ``total_before - total_after``."""
        return self.total_before - self.total_after


_new = object.__new__
_SLOTS = [Message.__dict__[n].__set__ for n in ("id", "role", "tokens", "content", "tool_call_ids", "tool_call_id")]


def _edited(m: Message, tokens: int, content: str | None) -> Message:
    """``m`` with new ``tokens`` and ``content`` (a cleared message), built without re-running
    Message's checks: every other field is ``m``'s own, tokens is in ``[0, m.tokens]`` or the
    placeholder's checked count, and the content is checked text (about 4x cheaper than
    ``Message(...)``, on the path of every clearing)."""
    obj = _new(Message)
    s_id, s_role, s_tokens, s_content, s_calls, s_call = _SLOTS
    s_id(obj, m.id)
    s_role(obj, m.role)
    s_tokens(obj, tokens)
    s_content(obj, content)
    s_calls(obj, m.tool_call_ids)
    s_call(obj, m.tool_call_id)
    return obj


def as_cleared(m: Message, cleared: ClearedMessage, reason: str, placeholder: str = DEFAULT_PLACEHOLDER) -> Message:
    """``m`` as the clearing that recorded ``cleared`` (of reason ``reason``) left it in the
    context, by History's own rule (:meth:`History._clear_pass`, :meth:`History._think_pass`): a
    tool result becomes ``placeholder`` with the placeholder's tokens; a thinking turn keeps its
    text with its thinking tokens taken off, or becomes "" when it was all thinking. For a view
    of a past step of a :class:`~convmem.Replay` (``Replay.clearings``, ``Replay.cleared_at``)
    without replaying. O(1).

    >>> m = Message("t1", "tool", 300, content="a long result", tool_call_id="c1")
    >>> as_cleared(m, ClearedMessage("t1", "tool", 300, 4, 7), CLEAR_TOOL_RESULTS)
    Message(id='t1', role='tool', tokens=4, content='[cleared]', tool_call_ids=(), tool_call_id='c1')

    Raises:
        ValueError: ``cleared`` is another message's record, or ``reason`` is not
            :data:`CLEAR_TOOL_RESULTS` or :data:`CLEAR_THINKING`.
    """
    if cleared.id != m.id or cleared.tokens_before != m.tokens:
        raise ValueError(f"as_cleared: record {cleared!r} is not of message {m.id!r} ({m.tokens} tokens)")
    if reason == CLEAR_TOOL_RESULTS:
        return _edited(m, cleared.tokens_after, placeholder)
    if reason == CLEAR_THINKING:
        return _edited(m, cleared.tokens_after, "" if cleared.tokens_after == 0 else m.content)
    raise ValueError(f"as_cleared: reason must be {CLEAR_TOOL_RESULTS!r} or {CLEAR_THINKING!r}, got {reason!r}")


_CLEARED_SLOTS = tuple(
    ClearedMessage.__dict__[n].__set__ for n in ("id", "role", "tokens_before", "tokens_after", "added_step")
)
_CLEARING_SLOTS = tuple(
    Clearing.__dict__[n].__set__
    for n in ("step", "message_id", "reason", "trigger", "total_before", "total_after", "cleared")
)


def _cleared_message(mid: str, role: str, tokens_before: int, tokens_after: int, added_step: int) -> ClearedMessage:
    """``ClearedMessage(mid, role, tokens_before, tokens_after, added_step)`` without the frozen
    dataclass ``__init__`` (one ``object.__setattr__`` call per field): ClearedMessage has no
    checks, so the object is equal to the constructed one; about 2x cheaper, one per cleared
    message (a replay of 10^5 messages with clearing on clears tens of thousands)."""
    obj = _new(ClearedMessage)
    s_id, s_role, s_before, s_after, s_step = _CLEARED_SLOTS
    s_id(obj, mid)
    s_role(obj, role)
    s_before(obj, tokens_before)
    s_after(obj, tokens_after)
    s_step(obj, added_step)
    return obj


def _clearing_record(
    step: int, message_id: str, reason: str, trigger: int, total_before: int, total_after: int,
    cleared: tuple[ClearedMessage, ...],
) -> Clearing:
    """``Clearing(...)`` of these fields without the frozen dataclass ``__init__`` (see
    :func:`_cleared_message`; Clearing has no checks either). One per clearing."""
    obj = _new(Clearing)
    s_step, s_mid, s_reason, s_trigger, s_before, s_after, s_cleared = _CLEARING_SLOTS
    s_step(obj, step)
    s_mid(obj, message_id)
    s_reason(obj, reason)
    s_trigger(obj, trigger)
    s_before(obj, total_before)
    s_after(obj, total_after)
    s_cleared(obj, cleared)
    return obj


# A kept message is the tuple ``(seq, message)``: cheap to make, compared by identity where needed.
_Item = tuple  # (int, Message)


class _Group:
    """An assistant message with tool calls plus the tool results that answer it."""

    __slots__ = ("results", "dead")

    def __init__(self) -> None:
        self.results: list[_Item] = []
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
            are one unit, dropped together (reason ``tool_group`` for the results). A result with a
            ``tool_call_id`` joins the kept message that declared that call; a result without one
            joins by position (the most recent assistant message, if kept). A result whose call is
            gone, or that answers no kept call, is dropped on arrival: a tool result is never left
            without its call.
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
            budget is rejected (the previous one stays) and reported, and so is a summary whose
            content is blank (empty or whitespace only) or whose id is the id of a kept message.
            A summarizer that raises: the compaction is recorded first, then ``add`` raises
            SummarizerError (see :meth:`add`).
        on_compaction: optional callback receiving each :class:`Compaction` as it happens.
        records: how many of the latest compaction records ``compactions`` keeps (default 1024;
            None keeps all). A long-running agent's memory stays bounded; ``on_compaction`` sees
            every record regardless.
        clear: a :class:`ClearToolUses`: context editing before any drop. Past its trigger, old
            tool results are replaced in place by a placeholder (see there; records in
            ``clearings``, ``on_clearing``; :meth:`original` gives back a cleared message).
        tool_names: call id -> tool name, for ``clear.exclude_tools`` (the caller's mapping).
        on_clearing: optional callback receiving each :class:`Clearing` as it happens.
        clear_thinking: a :class:`ClearThinking`: the thinking of all but the newest ``keep``
            thinking turns is cleared.
        thinking: message id -> how many of its tokens are thinking (for ``clear_thinking``).

    Kept is always the newest contiguous run of messages (a suffix, less the tool results dropped
    with their call) plus pinned messages, in conversation order. Pinned messages are kept even when
    they alone exceed the limit; then ``over_limit`` is True and every later unpinned message is
    dropped on arrival.

    Complexity: ``add`` is amortized O(1) plus the messages it drops (O(d log d) worst case to order
    d dropped ids when tool groups interleave; O(d) otherwise), with every policy on; ``total()`` and
    ``over_limit`` are O(1); ``messages()`` and ``context()`` are O(kept); ``compactions`` is
    O(records kept). Memory is O(kept + records): the kept ids, the call ids of kept assistant
    messages and their groups only (a group and its call ids go when its call is dropped), never
    anything per message ever added. With no policy on, a kept message costs one deque slot and one
    set entry beside the Message itself (docs/performance.md has the measured bytes).

    Ids: the ids of kept messages (and of the summary in place) are unique (SPEC §2); ``add``
    raises ValueError for a message whose id is kept. An id whose message was dropped may come back.
    A tool result that names a ``tool_call_id`` joins the kept assistant message that declared it;
    when no kept message declared it (its call is gone, or never came) it is dropped on arrival.

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
        "_records",
        "_kept_count",
        "_dead",
        "_group_of",
        "_sink",
        "_ids",
        "_plain",
        "_clear",
        "_tool_names",
        "_on_clearing",
        "_tail",
        "_tail_live",
        "_clearable",
        "_gain",
        "_tstate",
        "_originals",
        "_clearings",
        "_exclude",
        "_clear_thinking",
        "_thinking",
        "_think_queue",
        "_think_live",
        "_editing",
        "_unordered",
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
        records: int | None = 1024,
        clear: ClearToolUses | None = None,
        tool_names: Mapping[str, str] | None = None,
        on_clearing: Callable[[Clearing], object] | None = None,
        clear_thinking: ClearThinking | None = None,
        thinking: Mapping[str, int] | None = None,
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
        if records is not None:
            _check_int("records", records)
        if clear is not None and not isinstance(clear, ClearToolUses):
            raise TypeError(f"History clear must be a ClearToolUses or None, got {clear!r}")
        if tool_names is not None and not isinstance(tool_names, Mapping):
            raise TypeError(f"History tool_names must be a mapping of call id -> tool name, got {tool_names!r}")
        if on_clearing is not None and not callable(on_clearing):
            raise TypeError(f"History on_clearing must be callable, got {on_clearing!r}")
        self._clear = clear
        if clear_thinking is not None and not isinstance(clear_thinking, ClearThinking):
            raise TypeError(f"History clear_thinking must be a ClearThinking or None, got {clear_thinking!r}")
        if thinking is not None and not isinstance(thinking, Mapping):
            raise TypeError(f"History thinking must be a mapping of message id -> thinking tokens, got {thinking!r}")
        self._clear_thinking = clear_thinking
        self._thinking = thinking if thinking is not None else {}
        self._think_queue: deque[list] = deque()  # kept thinking turns not yet cleared, oldest first
        self._think_live: dict[int, int] = {}  # seq -> thinking tokens of the live entries
        self._exclude = frozenset(clear.exclude_tools) if clear is not None else frozenset()
        self._tool_names = tool_names
        self._on_clearing = on_clearing
        # Clearing state (see _register_tool / _clear_pass): kept tool results not yet cleared,
        # oldest first, split into the protected newest ``keep`` (``_tail``) and the older ones
        # (``_clearable``, with ``_gain`` the tokens clearing its live non-excluded ones frees).
        # ``_tstate`` maps the seq of each such live result to 0 (tail) or 1 (clearable); deque
        # entries whose seq it no longer holds were dropped (lazy deletion).
        self._tail: deque[list] = deque()
        self._tail_live = 0
        self._clearable: deque[list] = deque()
        self._gain = 0
        self._tstate: dict[int, int] = {}
        self._originals: dict[str, Message] = {}  # id -> original content of a kept cleared message
        self._clearings: deque[Clearing] = deque(maxlen=records)
        self._budget = summary_budget or 0
        self._goal = self._target - self._budget
        self._pin_system = pin_system
        self._pin_latest_user = pin_latest_user
        self._keep_tool_groups = keep_tool_groups
        self._start_on_user = start_on_user
        self._summarizer = summarizer
        self._on_compaction = on_compaction
        self._head: list[_Item] = []  # pinned system messages passed over by compaction, in order
        self._head_user: _Item | None = None  # the pinned latest user message, when passed over
        self._run: deque[_Item] = deque()  # the newest contiguous run, in order (may hold dead items)
        self._dead: set[int] = set()  # seqs of run items dropped with their tool call, not yet popped
        self._total = 0
        self._summary: Message | None = None
        self._latest_user: _Item | None = None
        self._groups: dict[str, _Group] = {}  # tool call id -> group
        self._group_of: dict[int, _Group] = {}  # seq of a kept assistant message -> its group
        self._last_assistant = -1  # seq of the most recent assistant message (positional groups)
        self._frontier = -1  # seq of the newest message dropped from the oldest end
        self._step = 0
        self._records: deque[tuple] = deque(maxlen=records)
        self._kept_count = 0
        self._sink: Callable[[tuple], object] | None = None  # see _attach_sink
        self._ids: set[str] = set()  # ids of the kept messages (not the summary): unique (SPEC §2)
        self._editing = clear is not None or clear_thinking is not None  # messages change in place
        self._unordered = False  # see _finish: the drops of this add may be out of seq order
        # No policy on: add takes the base path (the seed's rule, inlined).
        self._plain = not (
            pin_system or pin_latest_user or keep_tool_groups or start_on_user or summarizer or clear
            or clear_thinking
        )

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
        """The latest compactions (up to ``records``), oldest first. O(records kept)."""
        return [_record(*_expand(raw)) for raw in self._records]

    @property
    def clear(self) -> ClearToolUses | None:
        """The clearing settings, or None (no clearing)."""
        return self._clear

    @property
    def clearings(self) -> list[Clearing]:
        """The latest clearing records (up to ``records``), oldest first. O(records kept)."""
        return list(self._clearings)

    def original(self, message_id: str) -> Message:
        """The message with id ``message_id`` as it was added: for a cleared message, its content
        before clearing (what :meth:`context` no longer sends); else the kept message itself.
        O(1) for a cleared message, O(kept) otherwise.

        Raises:
            KeyError: no kept message has that id (names it).
        """
        found = self._originals.get(message_id)
        if found is not None:
            return found
        for m in self.context():
            if m.id == message_id and m is not self._summary:
                return m
        raise KeyError(f"History.original: no kept message has id {message_id!r}")

    def is_cleared(self, message_id: str) -> bool:
        """True when the kept message ``message_id`` is sent as a placeholder. O(1)."""
        return message_id in self._originals

    def __len__(self) -> int:
        """How many messages would be sent now, the summary included. O(1)."""
        return self._kept_count + (self._summary is not None)

    def context(self) -> list[Message]:
        """The messages that would be sent now, in order, the summary included. O(kept).

        A cleared tool result is its placeholder message (same id, role and ``tool_call_id``,
        content :attr:`ClearToolUses.placeholder`); :meth:`original` gives back its content.
        """
        if self._plain:
            return list(self._run)  # the base rule keeps bare messages, no head, no summary
        head = self._head
        if self._head_user is not None:
            head = sorted([*head, self._head_user], key=_seq)
        dead = self._dead
        run = [item for item in self._run if item[0] not in dead] if dead else list(self._run)
        if head and run and run[0][0] < head[-1][0]:  # a pin that rejoined the run (see add)
            items = sorted([*head, *run], key=_seq)
        else:
            items = [*head, *run]
        out = [item[1] for item in items]
        if self._summary is not None:
            frontier = self._frontier
            at = next((i for i, item in enumerate(items) if item[0] > frontier), len(items))
            out.insert(at, self._summary)
        return out

    def messages(self) -> list[str]:
        """The ids of :meth:`context`, in order. O(kept)."""
        return [m.id for m in self.context()]

    def __repr__(self) -> str:
        return f"History(limit={self._limit}, target={self._target}, total={self._total}, kept={len(self)})"

    # ------------------------------------------------------------------ adding

    def add(self, message: Message) -> list[str]:
        """Append ``message``, compact if needed, and return the dropped ids, oldest first.

        Amortized O(1) plus the messages dropped (O(d log d) to order d drops when tool groups
        interleave).

        Raises:
            TypeError: ``message`` is not a :class:`Message`.
            ValueError: ``message.id`` is the id of a kept message or of the summary in place (ids
                are unique, SPEC §2). Only *kept* ids are checked: an id whose message was dropped
                may come back (memory stays bounded by what is kept). Nothing changes on a raise.
            SummarizerError: the summarizer raised or returned something that is not a Message.
                The drops of that add stand (the messages are gone from the context) and the
                compaction is recorded first (in ``compactions`` and sent to ``on_compaction``)
                with a rejected summary outcome naming the failure; the error then carries that
                record as ``.compaction`` and the original error as ``__cause__``
                (docs/decisions.md, History rule 7).
        """
        if message.__class__ is not Message and not isinstance(message, Message):
            raise TypeError(f"History.add message must be a Message, got {message!r}")
        message_id = message.id
        ids = self._ids
        if message_id in ids or (self._summary is not None and self._summary.id == message_id):
            raise ValueError(
                f"History.add message id {message_id!r} is already "
                f"{'kept' if message_id in ids else 'the id of the summary in place'}; ids must be "
                f"unique among the messages kept (SPEC §2)"
            )
        think = 0
        if self._clear_thinking is not None and message.role == "assistant":
            # Checked before anything changes (nothing changes on a raise).
            think = self._thinking.get(message_id, 0)
            if isinstance(think, bool) or not isinstance(think, int):
                raise TypeError(
                    f"History thinking[{message_id!r}] must be an int of thinking tokens (not bool), "
                    f"got {think!r:.200}"
                )
            if think < 0:
                raise ValueError(
                    f"History thinking[{message_id!r}] must be >= 0 thinking tokens, got {think!r}"
                )
        step = self._step
        self._step = step + 1
        if self._plain:
            # The base rule, inlined: append, then drop from the oldest end while over the limit.
            # The run holds bare messages here: what is kept is always the contiguous steps
            # ``step - len(run) + 1 .. step``, so a message's step is known from its position.
            run = self._run
            run.append(message)
            ids.add(message_id)
            peak = total = self._total + message.tokens
            if total <= self._limit:
                self._total = total
                self._kept_count += 1
                return []
            goal = self._goal
            first = step + 1 - len(run)  # the step of the oldest kept message
            gone = []
            out = []
            popleft = run.popleft
            while total > goal and run:
                m = popleft()
                total -= m.tokens
                ids.discard(m.id)
                out.append(m.id)
                gone.append(m)
            self._frontier = first + len(gone) - 1
            self._total = total
            self._kept_count += 1 - len(gone)
            # A flat record (one tuple, no per-message pairs): steps are first, first + 1, ...
            # and each reason follows from the message's tokens and the goal (see _expand).
            raw = (step, message_id, peak, total, goal, first, *gone)
            self._records.append(raw)
            if self._sink is not None:
                self._sink(_expand(raw))
            if self._on_compaction is not None:
                self._on_compaction(_record(*_expand(raw)))
            return out
        # With clearing on, an item is a list so a clearing can swap its message in place (the run,
        # a tool group and the clearing queues share the one item).
        editing = self._editing
        item = [step, message] if editing else (step, message)
        role = message.role
        tokens = message.tokens
        peak = self._total + tokens  # the total with it appended, before any drop
        dropped: list[tuple[_Item, str]] | None = None
        trigger: str | None = None

        if role == "user":
            if self._pin_latest_user:
                old = self._latest_user
                self._latest_user = item
                if old is not None:
                    if old[0] < self._frontier:
                        # Kept only by its pin, cut off from the run: the suffix rule drops it now.
                        self._head_user = None
                        self._total -= old[1].tokens
                        self._kept_count -= 1
                        ids.discard(old[1].id)
                        dropped = [(old, PIN_MOVED)]
                        trigger = TRIGGER_PIN_MOVED
                    elif self._head_user is old:
                        # Parked by a cut that dropped nothing after it: it rejoins the run's left end.
                        self._head_user = None
                        self._run.appendleft(old)
        elif self._keep_tool_groups:
            if role == "assistant":
                self._last_assistant = step
                if message.tool_call_ids:  # a group object only for messages that call tools
                    group = _Group()
                    self._group_of[step] = group
                    groups = self._groups
                    for call_id in message.tool_call_ids:
                        groups[call_id] = group
            elif role == "tool":
                group = None
                if message.tool_call_id is not None:
                    # By id: the kept message that declared it (the latest declaration); an id
                    # that no kept message declared (its call is gone, or it never came) has no
                    # group, so the result is refused below.
                    group = self._groups.get(message.tool_call_id)
                else:
                    # By position: the most recent assistant message, if it is still kept (an
                    # assistant message is only ever dropped from the oldest end).
                    last = self._last_assistant
                    if last > self._frontier:
                        group = self._group_of.get(last)
                        if group is None:
                            group = self._group_of[last] = _Group()
                if group is None or group.dead:
                    # Refused on arrival: a tool result is never left without its call.
                    return self._finish(step, message, peak, [(item, TOOL_GROUP)], TRIGGER_ARRIVAL)
                group.results.append(item)

        self._run.append(item)
        ids.add(message_id)
        total = self._total = self._total + tokens
        self._kept_count += 1
        if editing:
            if self._clear_thinking is not None and role == "assistant":
                think = min(think, tokens)
                if think > 0:
                    freed = self._think_pass(item, think, step)
                    peak -= freed
                    total = self._total
            clear = self._clear
            if clear is not None:
                # Context editing first (docs/decisions.md, "Clearing"): clear old tool results in
                # place; drop or summarize below only if the total is still over the limit.
                if role == "tool":
                    self._register_tool(item)
                if total > clear.trigger and self._gain > 0:
                    freed = self._clear_pass(step, message_id)
                    peak -= freed
                    total = self._total
        if total > self._limit:
            trigger = TRIGGER_LIMIT
        elif trigger is None:
            return []
        if dropped is None:
            dropped = []
        self._compact(dropped)
        return self._finish(step, message, peak, dropped, trigger)

    # ------------------------------------------------------------------ clearing

    def _excluded(self, m: Message) -> bool:
        """True when ``m`` answers a call of a tool named in ``exclude_tools``. O(1)."""
        names = self._tool_names
        return bool(self._exclude) and names is not None and m.tool_call_id is not None and (
            names.get(m.tool_call_id) in self._exclude
        )

    def _gain_of(self, m: Message) -> int:
        """Tokens clearing ``m`` frees (0 for an excluded tool's result; < 0 for a result smaller
        than the placeholder)."""
        if self._exclude and self._excluded(m):
            return 0
        assert self._clear is not None
        return m.tokens - self._clear.placeholder_tokens

    def _register_tool(self, item: list) -> None:
        """A kept tool result joins the protected tail; the oldest of the tail beyond ``keep``
        moves to the clearable queue. Amortized O(1) (each entry moves at most once per way)."""
        clear = self._clear
        assert clear is not None
        tstate = self._tstate
        tstate[item[0]] = 0
        tail = self._tail
        tail.append(item)
        live = self._tail_live + 1
        keep = clear.keep
        if live > keep:
            gain_of = self._gain_of
            while live > keep:
                x = tail.popleft()
                if x[0] not in tstate:
                    continue  # dropped while in the tail
                tstate[x[0]] = 1
                live -= 1
                self._clearable.append(x)
                self._gain += gain_of(x[1])
        self._tail_live = live

    def _forget_tool(self, item: _Item) -> None:
        """A tool result left the context: forget its clearing state. O(1) amortized.

        A protected result that goes is replaced in the tail by the newest live clearable one,
        so the tail stays the newest ``keep`` results not yet cleared.
        """
        m = item[1]
        st = self._tstate.pop(item[0], None)
        if st is None:
            self._originals.pop(m.id, None)  # cleared (or an excluded result already passed over)
            return
        tstate = self._tstate
        cl = self._clearable
        if st == 1:
            self._gain -= self._gain_of(m)
            while cl and cl[0][0] not in tstate:
                cl.popleft()  # drops come from the oldest end: trim there, memory stays bounded
            return
        self._tail_live -= 1
        tail = self._tail
        while tail and tail[0][0] not in tstate:
            tail.popleft()
        while tail and tail[-1][0] not in tstate:
            tail.pop()
        while cl:
            x = cl.pop()
            if x[0] in tstate:
                tstate[x[0]] = 0
                self._tail.appendleft(x)
                self._tail_live += 1
                self._gain -= self._gain_of(x[1])
                break

    def _clear_pass(self, step: int, message_id: str) -> int:
        """Clear every live clearable tool result when that frees at least ``clear_at_least``
        tokens (and more than 0); return the tokens freed. O(entries passed), each entry passed
        once in its life, so amortized O(1) per add."""
        clear = self._clear
        assert clear is not None
        if self._gain < clear.clear_at_least:
            return 0
        cl = self._clearable
        pop_state = self._tstate.pop
        originals = self._originals
        ph, ph_tokens = clear.placeholder, clear.placeholder_tokens
        excluding = bool(self._exclude)
        before = total = self._total
        cleared = []
        while cl:
            x = cl.popleft()
            if pop_state(x[0], None) is None:
                continue  # dropped while waiting
            m = x[1]
            if excluding and self._excluded(m):
                continue  # never cleared; older than every result still queued (leaves for good)
            x[1] = _edited(m, ph_tokens, ph)
            originals[m.id] = m
            total += ph_tokens - m.tokens
            cleared.append(_cleared_message(m.id, m.role, m.tokens, ph_tokens, x[0]))
        self._total = total
        self._gain = 0
        record = _clearing_record(step, message_id, CLEAR_TOOL_RESULTS, clear.trigger, before, total, tuple(cleared))
        self._clearings.append(record)
        if self._on_clearing is not None:
            self._on_clearing(record)
        return before - self._total

    def _think_pass(self, item: list, think: int, step: int) -> int:
        """A new thinking turn: clear the thinking of the oldest beyond ``keep``. Amortized O(1)."""
        assert self._clear_thinking is not None
        live = self._think_live
        live[item[0]] = think
        queue = self._think_queue
        queue.append(item)
        before = self._total
        cleared = []
        while len(live) > self._clear_thinking.keep:
            x = queue.popleft()
            t = live.pop(x[0], None)
            if t is None:
                continue  # dropped while waiting
            m = x[1]
            x[1] = _edited(m, m.tokens - t, "" if t == m.tokens else m.content)
            self._originals[m.id] = m
            self._total -= t
            cleared.append(_cleared_message(m.id, m.role, m.tokens, m.tokens - t, x[0]))
        if not cleared:
            return 0
        record = _clearing_record(step, item[1].id, CLEAR_THINKING, 0, before, self._total, tuple(cleared))
        self._clearings.append(record)
        if self._on_clearing is not None:
            self._on_clearing(record)
        return before - self._total

    def _attach_sink(self, sink: Callable[[tuple], object]) -> None:
        """Package-internal: receive each raw record ``(step, message_id, trigger, total_before,
        total_after, [((seq, message), reason), ...], SummaryEvent | None)`` without building
        :class:`Compaction` objects (what :func:`convmem.replay.replay` uses at 10^5 adds).
        ``compaction_from_raw`` turns one into a Compaction."""
        self._sink = sink

    def _compact(self, dropped: list[tuple[_Item, str]]) -> None:
        """Drop from the oldest end until live tokens (all but the summary) fit the goal; then,
        with start_on_user, drop leading non-system messages until a user message leads.

        One method for both passes, with the total, the kept count and the frontier held in
        locals: a plain message (not pinned, not heading a tool group, no clearing on) is dropped
        inline; anything else goes through :meth:`_drop_unit` with the state written back first.
        Sets ``_unordered`` when tool results went with their call (``dropped`` may then be out of
        seq order; see :meth:`_finish`).

        Unpinned system messages passed over by start_on_user stay only if nothing after them is
        dropped (the kept set stays a suffix plus pins); their count is the only rescan cost.
        """
        goal = self._goal
        stop_at = goal + (self._summary.tokens if self._summary is not None else 0)
        run = self._run
        popleft = run.popleft
        dead = self._dead
        pin_system = self._pin_system
        latest_user = self._latest_user
        group_of = self._group_of
        discard = self._ids.discard
        append = dropped.append
        editing = self._editing
        total = self._total
        kept = self._kept_count
        frontier = self._frontier
        while total > stop_at and run:
            item = popleft()
            seq = item[0]
            if dead and seq in dead:
                dead.discard(seq)
                continue
            m = item[1]
            if item is latest_user:
                self._head_user = item  # only pin_latest_user pins a user message: at most one
                continue
            if pin_system and m.role == "system":
                self._head.append(item)
                continue
            tokens = m.tokens
            if editing or (group_of and seq in group_of):
                self._total, self._kept_count = total, kept
                self._drop_unit(item, TOO_BIG if tokens > goal else OVER_LIMIT, dropped)
                total, kept, frontier = self._total, self._kept_count, seq
                continue
            frontier = seq
            total -= tokens
            kept -= 1
            discard(m.id)
            append((item, TOO_BIG if tokens > goal else OVER_LIMIT))
        if self._start_on_user and self._head_user is None:
            # (A pinned user message in the head is the first non-system message: nothing to do.)
            i = 0
            while i < len(run):
                item = run[i]
                seq = item[0]
                if dead and seq in dead:
                    if i == 0:
                        popleft()
                        dead.discard(seq)
                    else:
                        i += 1
                    continue
                role = item[1].role
                if role == "user":
                    break
                if role == "system":
                    if i == 0 and (item is latest_user or pin_system):
                        popleft()
                        self._head.append(item)
                    else:
                        i += 1
                    continue
                # A leading non-system, non-user message: it goes, with any system messages before
                # it that are not pinned (pinned ones are parked in the head).
                for _ in range(i + 1):
                    x = popleft()
                    seq = x[0]
                    m = x[1]
                    if dead and seq in dead:
                        dead.discard(seq)
                    elif x is latest_user:
                        self._head_user = x
                    elif pin_system and m.role == "system":
                        self._head.append(x)
                    elif editing or (group_of and seq in group_of):
                        self._total, self._kept_count = total, kept
                        self._drop_unit(x, START_ON_USER, dropped)
                        total, kept, frontier = self._total, self._kept_count, seq
                    else:
                        frontier = seq
                        total -= m.tokens
                        kept -= 1
                        discard(m.id)
                        append((x, START_ON_USER))
                i = 0
        self._total, self._kept_count, self._frontier = total, kept, frontier

    def _drop_unit(self, item: _Item, reason: str, dropped: list[tuple[_Item, str]]) -> None:
        """Drop ``item`` from the oldest end, with its tool results when it heads a tool group."""
        seq = item[0]
        m = item[1]
        self._frontier = seq
        self._total -= m.tokens
        self._kept_count -= 1
        self._ids.discard(m.id)
        dropped.append((item, reason))
        if self._editing:  # clearing on: forget the item in the clearing queues
            if self._clear is not None and m.role == "tool":
                self._forget_tool(item)
            elif self._clear_thinking is not None and m.role == "assistant":
                if self._think_live.pop(seq, None) is None:
                    self._originals.pop(m.id, None)
                queue = self._think_queue
                while queue and queue[0][0] not in self._think_live:
                    queue.popleft()
        group_of = self._group_of
        if group_of:
            group = group_of.pop(seq, None)
            if group is not None:
                # The group leaves with its call: forget its call ids (unless a newer kept message
                # declared the same id) and its results, so nothing outlives what is kept.
                groups = self._groups
                for call_id in m.tool_call_ids:
                    if groups.get(call_id) is group:
                        del groups[call_id]
                group.dead = True
                results = group.results
                if results:
                    dead = self._dead
                    discard = self._ids.discard
                    clear = self._clear
                    total = self._total
                    kept = self._kept_count
                    for r in results:
                        if r[0] not in dead:
                            dead.add(r[0])
                            total -= r[1].tokens
                            kept -= 1
                            discard(r[1].id)
                            dropped.append((r, TOOL_GROUP))
                            if clear is not None:
                                self._forget_tool(r)
                    self._total = total
                    self._kept_count = kept
                    self._unordered = True  # later drops may be older than these results
                    group.results = []

    def _finish(
        self,
        step: int,
        message: Message,
        total_before: int,
        dropped: list[tuple[_Item, str]],
        trigger: str,
    ) -> list[str]:
        event: SummaryEvent | None = None
        failure: BaseException | None = None
        if self._summarizer is not None and trigger != TRIGGER_ARRIVAL:
            if dropped:
                if self._unordered:
                    self._unordered = False
                    dropped.sort(key=_first_seq)
                try:
                    event = self._summarize([pair[0][1] for pair in dropped])
                except Exception as exc:  # recorded below, then raised as SummarizerError
                    failure = exc
                    event = SummaryEvent(
                        accepted=False,
                        id=None,
                        tokens=0,
                        budget=self._budget,
                        reason=f"the summarizer raised {type(exc).__name__}: {exc}",
                    )
            if self._summary is not None and self._total > self._limit:
                event = self._remove_summary(event)
        if not dropped and event is None:
            return []
        if self._unordered:
            # Tool results dropped with their call may sit after later messages: order by seq
            # (O(d) on an already-ordered list). Without such results every drop came from the
            # run's left end (or is the one pin_moved message, older than the run) in seq order.
            self._unordered = False
            dropped.sort(key=_first_seq)
        raw = (step, message.id, trigger, total_before, self._total, dropped, event)
        self._records.append(raw)
        if self._sink is not None:
            self._sink(raw)
        if self._on_compaction is not None or failure is not None:
            record = _record(*raw)
            if self._on_compaction is not None:
                self._on_compaction(record)
            if failure is not None:
                raise SummarizerError(
                    f"the summarizer failed at step {step}; the compaction still dropped "
                    f"{record.dropped_ids} (see .compaction): {type(failure).__name__}: {failure}",
                    compaction=record,
                ) from failure
        return [pair[0][1].id for pair in dropped]

    def _summarize(self, dropped: list[Message]) -> SummaryEvent:
        assert self._summarizer is not None
        previous = self._summary
        new = self._summarizer(previous, dropped)
        if not isinstance(new, Message):
            raise TypeError(f"History summarizer must return a Message, got {new!r}")
        previous_tokens = previous.tokens if previous is not None else 0
        reason = None
        if new.content is not None and not new.content.strip():
            # A summary that says nothing would replace real context and report success.
            reason = f"summary {new.id!r} is blank (its content is empty or whitespace only)"
        elif new.id in self._ids:
            reason = f"summary id {new.id!r} is the id of a kept message; ids must be unique (SPEC §2)"
        elif new.tokens > self._budget:
            reason = f"summary has {new.tokens} tokens, over the summary_budget of {self._budget}"
        elif self._total - previous_tokens + new.tokens > self._limit:
            reason = (
                f"summary has {new.tokens} tokens; with the pinned messages the total would be "
                f"{self._total - previous_tokens + new.tokens}, over the limit of {self._limit}"
            )
        if reason is not None:
            return SummaryEvent(False, new.id, new.tokens, self._budget, reason=reason)
        self._total += new.tokens - previous_tokens
        self._summary = new
        return SummaryEvent(
            accepted=True,
            id=new.id,
            tokens=new.tokens,
            budget=self._budget,
            replaced_id=previous.id if previous is not None else None,
        )

    def _remove_summary(self, event: SummaryEvent | None) -> SummaryEvent:
        """Take the summary out: pinned messages leave no room for it under the limit."""
        summary = self._summary
        assert summary is not None
        self._summary = None
        self._total -= summary.tokens
        why = (
            f"summary {summary.id!r} removed: the pinned messages leave no room for its "
            f"{summary.tokens} tokens under the limit of {self._limit}"
        )
        if event is None:
            return SummaryEvent(False, summary.id, summary.tokens, self._budget, reason=why, removed_id=summary.id)
        return SummaryEvent(
            event.accepted,
            event.id,
            event.tokens,
            event.budget,
            replaced_id=event.replaced_id,
            reason=f"{event.reason}; {why}" if event.reason else why,
            removed_id=summary.id,
        )


def _expand(raw: tuple) -> tuple:
    """A record in the shape ``_finish`` makes; the base path's flat records are unfolded.

    A flat record is ``(step, message_id, total_before, total_after, goal, first_step, *dropped
    messages)`` (its third field is an int, where the full shape has the trigger, a str).
    """
    if raw[2].__class__ is str:
        return raw
    step, message_id, peak, total, goal, first = raw[:6]
    dropped = [
        ((first + k, m), TOO_BIG if m.tokens > goal else OVER_LIMIT) for k, m in enumerate(raw[6:])
    ]
    return (step, message_id, TRIGGER_LIMIT, peak, total, dropped, None)


def _seq(item: _Item) -> int:
    return item[0]


def _first_seq(pair: tuple[_Item, str]) -> int:
    return pair[0][0]


def compaction_from_raw(raw: tuple) -> Compaction:
    """The :class:`Compaction` of a raw record (see ``History._attach_sink``)."""
    return _record(*raw)


def _record(
    step: int,
    message_id: str,
    trigger: str,
    total_before: int,
    total_after: int,
    dropped: list[tuple[_Item, str]],
    event: SummaryEvent | None,
) -> Compaction:
    summarized = event is not None and event.accepted
    return Compaction(
        step=step,
        message_id=message_id,
        trigger=trigger,
        total_before=total_before,
        total_after=total_after,
        dropped=tuple(
            DroppedMessage(m.id, m.role, m.tokens, reason, seq, summarized) for (seq, m), reason in dropped
        ),
        summary=event,
    )
