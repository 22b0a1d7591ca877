"""Reference for convmem.safe_limit: its first, step-by-step version (a Python loop per message
and per window), kept verbatim as an oracle when convmem.safe_limit moved its windows to C-level
map / accumulate (issue 10 item 3). tests/test_safe_limit.py checks both give the same SafeLimit
(limit, deciding step, message, need, exactness, reason) on generated and real conversations.
Not imported by convmem. The original module docstring follows.

The smallest token limit at which a protected message is never dropped (issue 10, item 1).

"What is the smallest limit at which this conversation never loses its newest user turn?" is
answered here in one pass over the conversation, not by replaying it at every limit.

The rule it rests on (SPEC §4, History's cut): kept is the newest contiguous run plus pinned
messages, and a compaction drops the oldest unpinned units first. So a compaction at add step ``j``
drops a protected message ``p`` exactly when, with everything older than ``p`` gone (pinned messages
excepted), the tokens still kept exceed what the compaction cuts to. That amount, the *need* of
``p`` at step ``j``, is read off the token counts alone::

    need(p, j) = pinned tokens older than p            (system messages with pin_system; the
                                                         newest user turn with pin_latest_user)
               + tokens of messages p..j                (tool results whose call is older than p,
                                                         or that answer no call, excluded with
                                                         keep_tool_groups: they go before p does)

and the answer is the largest need over the steps where ``p`` is protected. Protected classes:

* ``"latest_user"``: at each step, the newest user turn so far (the user message from its arrival
  until the next user message arrives: the turn's windows are disjoint, so O(n) in all);
* ``"system"``: every system message, from its arrival to the end (the oldest unpinned one needs
  the most: its need includes every later one's);
* a message id: that message from its arrival to the end. A tool result is dropped with its call
  (and refused on arrival when its call is gone) under ``keep_tool_groups``, so its call is what
  must stay; a result that answers no call is refused at every limit (ValueError).

How the policies change the answer:

* pins: a pinned class is trivially safe: the answer is 0 (History keeps pinned messages even
  above the limit). With ``pin_latest_user`` a user message protected by id is pinned only while it
  is the newest; from the next user turn on it is unpinned (a cut that passed over it meanwhile
  drops it then, reason ``pin_moved``, with a need no larger than the one at that step).
* ``keep_tool_groups``: results dropped with an older call free their tokens first (see above).
* ``start_on_user``: never drops a user message (the scan stops at the first one). A non-user
  message with no kept user turn before it is dropped by the scan at any compaction, so for it the
  answer also keeps the user turn before it (or, with none, keeps any compaction from running).
* ``target`` (the trigger/target pair): when the limit varies, the target keeps its ratio to the
  reference ``limit`` (``target(L) = min(L, round(target * L / limit))``), as
  :func:`convmem.replay.sweep_limits` and the dashboard's "% of limit" mode do.
* ``summary_budget``: reserved beside the kept messages: compactions cut to
  ``target(L) - summary_budget`` (the budget clipped to the target, as in the sweep).

Exactness: with no target below the limit and no summary budget, the answer is exact: the
protected class is dropped at every smaller limit and kept at this one and every larger one
(tests/test_safe_limit.py checks it against a replay at every limit, on the real retail
conversations and on generated ones). With a target or a summary budget, *when* compactions fire
depends on the limit in a non-monotone way (a smaller limit may cut at a luckier step), and the
answer is the smallest limit from which the class is kept whatever the compaction timing: kept at
it and at every larger limit, with ``SafeLimit.exact`` False. The same holds for the non-user
messages ``start_on_user`` can drop. docs/decisions.md has the reasoning.

>>> from convmem import Message
>>> msgs = [Message("s", "system", 50), Message("u1", "user", 10), Message("a1", "assistant", 30),
...         Message("u2", "user", 5), Message("a2", "assistant", 20)]
>>> smallest_safe_limit(msgs)  # turn u1 needs 10 + 30 tokens kept
40
>>> smallest_safe_limit(msgs, protect="system")  # the whole conversation
115
>>> smallest_safe_limit(msgs, pin_system=True)  # the pinned system prompt stays beside the turn
90
>>> explain_safe_limit(msgs, pin_system=True)
SafeLimit(limit=90, protect='latest_user', step=2, message_id='u1', need=90, exact=True, reason='cut')
>>> smallest_safe_limit(msgs, protect="latest_user", pin_latest_user=True)
0
>>> smallest_safe_limit(msgs, target=50, limit=100)  # cuts to half the limit: round(79 / 2) = 40
79
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from convmem.message import Message

__all__ = ["SafeLimit", "smallest_safe_limit", "explain_safe_limit", "PROTECT_CLASSES"]

#: The named protected classes; any other string is a message id.
PROTECT_CLASSES = ("latest_user", "system")

_POLICY_KEYS = (
    "pin_system",
    "pin_latest_user",
    "keep_tool_groups",
    "start_on_user",
    "target",
    "limit",
    "summarizer",
    "summary_budget",
)


@dataclass(frozen=True, slots=True)
class SafeLimit:
    """The answer of :func:`explain_safe_limit`.

    Attributes:
        limit: the smallest safe token limit (int >= 0).
        protect: the protected class (``"latest_user"``, ``"system"`` or a message id).
        step: the 0-based add step that decides it (where the protected message needs the most
            room), None when nothing needs room (pinned, absent, or it always fits).
        message_id: the protected message that needs it (at ``limit - 1`` it is dropped at
            ``step`` when ``exact``); None with ``step``.
        need: tokens that must survive a compaction at ``step`` (the cut goes to at least this).
        exact: True when ``limit`` is the smallest limit that keeps the class (every smaller one
            drops it); False when it is the smallest limit from which the class is kept whatever
            the compaction timing (a target or summary budget; see the module docstring).
        reason: ``"cut"`` (a compaction would cut it), ``"no_compaction"`` (start_on_user drops it at
            any compaction: the limit keeps every compaction from running), ``"pinned"``,
            ``"absent"`` (no message of the class) or ``"fits"`` (its need is 0 tokens).
    """

    limit: int
    protect: str
    step: int | None
    message_id: str | None
    need: int
    exact: bool
    reason: str


def _flag(policies: dict, name: str) -> bool:
    value = policies.get(name, False)
    if not isinstance(value, bool):
        raise TypeError(f"smallest_safe_limit {name} must be a bool, got {value!r}")
    return value


def _int_or_none(policies: dict, name: str) -> int | None:
    value = policies.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"smallest_safe_limit {name} must be an int (not bool) or None, got {value!r}")
    if value < 0:
        raise ValueError(f"smallest_safe_limit {name} must be a non-negative int, got {value!r}")
    return value


def _groups(messages: Sequence[Message]) -> list[int]:
    """Per message: the index of the call a tool result joins (History's rule), -1 for none, and
    the message's own index for non-tool messages. O(n)."""
    out = list(range(len(messages)))
    declared: dict[str, int] = {}
    last_assistant = -1
    for i, m in enumerate(messages):
        if m.role == "assistant":
            last_assistant = i
            for call_id in m.tool_call_ids:
                declared[call_id] = i
        elif m.role == "tool":
            if m.tool_call_id is not None:
                out[i] = declared.get(m.tool_call_id, -1)
            else:
                out[i] = last_assistant
    return out


class _Need:
    """The running maximum of needs: (need, step, message id), first step first on ties."""

    __slots__ = ("need", "step", "message_id")

    def __init__(self) -> None:
        self.need = -1
        self.step: int | None = None
        self.message_id: str | None = None

    def offer(self, need: int, step: int, message_id: str) -> None:
        if need > self.need:
            self.need, self.step, self.message_id = need, step, message_id


def explain_safe_limit(messages: Sequence[Message], protect: str = "latest_user", **policies) -> SafeLimit:
    """The smallest safe limit with the step and message that decide it (see the module docstring).

    Args:
        messages: the conversation, in order (Messages with unique ids).
        protect: ``"latest_user"``, ``"system"`` or a message id.
        **policies: History's keywords: pin_system, pin_latest_user, keep_tool_groups,
            start_on_user (bools); target with its reference limit (ints: the target keeps the
            ratio target/limit at every limit); summary_budget (int tokens) and summarizer (not
            called: only its budget matters). on_compaction and records are accepted and ignored.

    Returns:
        A :class:`SafeLimit`.

    Complexity: O(n) time and memory (n messages): one pass per protected window, and the windows
    of the newest user turns are disjoint; a "system" answer needs only the oldest unpinned one.

    Raises:
        TypeError: a message that is not a Message, a policy of the wrong type, protect not a str.
        ValueError: a repeated id, an unknown policy, target without limit (or above it), a
            summarizer without a budget, protect naming no message, a tool result that answers no
            call under keep_tool_groups (no limit keeps it), or a target of 0 with a need.
    """
    from convmem.replay import _check_messages  # one validation for replay, sweep and this

    _check_messages(messages)
    if not isinstance(protect, str):
        raise TypeError(f"smallest_safe_limit protect must be a str, got {protect!r}")
    unknown = sorted(set(policies) - set(_POLICY_KEYS) - {"on_compaction", "records"})
    if unknown:
        raise ValueError(f"smallest_safe_limit got unknown policies {unknown}; known: {list(_POLICY_KEYS)}")
    pin_system = _flag(policies, "pin_system")
    pin_latest_user = _flag(policies, "pin_latest_user")
    groups = _flag(policies, "keep_tool_groups")
    on_user = _flag(policies, "start_on_user")
    target = _int_or_none(policies, "target")
    ref_limit = _int_or_none(policies, "limit")
    budget = _int_or_none(policies, "summary_budget")
    summarizer = policies.get("summarizer")
    if summarizer is not None and not callable(summarizer):
        raise TypeError(f"smallest_safe_limit summarizer must be callable, got {summarizer!r}")
    if (summarizer is None) != (budget is None):
        raise ValueError(
            f"smallest_safe_limit summarizer and summary_budget go together, got "
            f"summarizer={summarizer!r}, summary_budget={budget!r}"
        )
    if target is not None:
        if ref_limit is None:
            raise ValueError(
                f"smallest_safe_limit target={target} needs the limit it belongs to (limit=...): "
                "the target keeps its ratio to the limit as the limit varies"
            )
        if target > ref_limit:
            raise ValueError(f"smallest_safe_limit target must be <= limit, got target={target} > limit={ref_limit}")
    budget = budget or 0

    n = len(messages)
    group = _groups(messages) if groups else None
    own = _Need()  # the protected messages' own needs (on the cut): exact without target/budget
    scan = _Need()  # start_on_user: the user turn before a non-user message (on the cut)
    raw = _Need()  # start_on_user with no user turn before: on the limit itself
    reason = None

    # Prefix sums of the pinned system tokens (pin_system) and the newest user before each index.
    sys_before = [0] * (n + 1)
    user_before = [-1] * (n + 1)  # user_before[i]: the newest user index < i, -1 for none
    for i, m in enumerate(messages):
        sys_before[i + 1] = sys_before[i] + (m.tokens if pin_system and m.role == "system" else 0)
        user_before[i + 1] = i if m.role == "user" else user_before[i]
    next_user = [n] * (n + 1)  # next_user[i]: the oldest user index >= i, n for none
    for i in range(n - 1, -1, -1):
        next_user[i] = i if messages[i].role == "user" else next_user[i + 1]

    def kept_with(a: int, i: int) -> bool:
        """Whether message i (>= a) stays while a does (not a result of an older call or of none)."""
        if group is None or messages[i].role != "tool":
            return True
        return group[i] >= a

    def offer_window(into: _Need, a: int, last: int, owner: str, pinned_until: int = -1) -> None:
        """Needs of message a at steps a..last, but not while a is pinned (steps < pinned_until).
        O(last - a)."""
        newest_older_user = user_before[a]
        base = sys_before[a]
        run = 0
        for j in range(a, last + 1):
            keep = kept_with(a, j)
            if keep:
                run += messages[j].tokens
            pin = 0
            if pin_latest_user and newest_older_user >= 0 and next_user[a] > j:
                pin = messages[newest_older_user].tokens  # the pinned newest user, older than a
            if j < pinned_until:
                # Pinned: never cut. A cut that passed over it drops it (pin_moved) when the next
                # turn arrives, with need(p, k - 1) <= need(p, k), which the unpinned steps offer.
                continue
            into.offer(base + pin + run, j, owner)

    def scan_reaches(a: int) -> bool:
        """start_on_user can drop messages[a]: it is not a user message and, for a system message,
        the first non-system message after it is not a user message."""
        if messages[a].role == "user":
            return False
        if messages[a].role != "system":
            return True
        for i in range(a + 1, n):
            if messages[i].role != "system":
                return messages[i].role != "user"
        return False

    def anchor(p: int) -> int:
        """What must stay for messages[p] to stay: itself, or the call of a grouped tool result."""
        if group is not None and messages[p].role == "tool":
            if group[p] < 0:
                raise ValueError(
                    f"smallest_safe_limit: tool result {messages[p].id!r} (messages[{p}]) answers no "
                    "call, so keep_tool_groups refuses it on arrival at every limit"
                )
            return group[p]
        return p

    def protect_cut(p: int, last: int) -> None:
        a = anchor(p)
        role = messages[a].role
        if role == "system" and pin_system:
            return
        pinned_until = -1
        if role == "user" and pin_latest_user:
            pinned_until = next_user[a + 1]  # the pin moves when the next user turn arrives
            if pinned_until > last:
                return
        offer_window(own, a, last, messages[p].id, pinned_until)

    def protect_scan(p: int, last: int) -> None:
        a = anchor(p)
        if not on_user or (messages[a].role == "system" and pin_system) or not scan_reaches(a):
            return
        u = user_before[a]
        if u >= 0:
            offer_window(scan, u, last, messages[p].id)
            return
        # No user turn before it: any compaction drops it; the limit keeps every one from running.
        total = 0
        for i in range(last + 1):
            if group is None or messages[i].role != "tool" or group[i] >= 0:
                total += messages[i].tokens
        raw.offer(total, last, messages[p].id)

    if protect == "latest_user":
        users = [i for i, m in enumerate(messages) if m.role == "user"]
        if not users:
            reason = "absent"
        elif pin_latest_user:
            reason = "pinned"
        else:
            for k, p in enumerate(users):
                protect_cut(p, users[k + 1] - 1 if k + 1 < len(users) else n - 1)
    elif protect == "system":
        systems = [i for i, m in enumerate(messages) if m.role == "system"]
        if not systems:
            reason = "absent"
        elif pin_system:
            reason = "pinned"
        else:
            protect_cut(systems[0], n - 1)  # the oldest one's need includes every later one's
            # The first one the scan reaches has the oldest user turn before it (or none): its
            # need includes every later one's.
            first = next((s for s in systems if on_user and scan_reaches(s)), None)
            if first is not None:
                protect_scan(first, n - 1)
    else:
        index = next((i for i, m in enumerate(messages) if m.id == protect), None)
        if index is None:
            raise ValueError(f"smallest_safe_limit protect={protect!r} is no message id of this conversation")
        protect_cut(index, n - 1)
        protect_scan(index, n - 1)
        if own.need < 0 and scan.need < 0 and raw.need < 0:
            reason = "pinned"

    cut_exact = (target is None or target == ref_limit) and budget == 0
    candidates = []  # (limit, order, tracker, kind): the largest limit decides; exact ones first
    if own.need > 0:
        candidates.append((_smallest_limit_for_cut(own.need, target, ref_limit, budget), 0, own, "cut"))
    if scan.need > 0:
        candidates.append((_smallest_limit_for_cut(scan.need, target, ref_limit, budget), 1, scan, "cut"))
    if raw.need > 0:
        candidates.append((raw.need, 2, raw, "no_compaction"))
    if not candidates:
        return SafeLimit(0, protect, None, None, 0, True, reason or "fits")
    limit, order, tracker, kind = max(candidates, key=lambda c: (c[0], -c[1]))
    return SafeLimit(limit, protect, tracker.step, tracker.message_id, tracker.need, cut_exact and order == 0, kind)


def _cut_to(limit: int, target: int | None, ref_limit: int | None, budget: int) -> int:
    """What a compaction cuts the kept messages to at ``limit``: the target (keeping its ratio to
    the reference limit, as sweep_limits does) less the summary budget (clipped to the target)."""
    cap = limit
    if target is not None and ref_limit:
        cap = min(limit, round(target * limit / ref_limit))
    return cap - min(budget, cap)


def _smallest_limit_for_cut(need: int, target: int | None, ref_limit: int | None, budget: int) -> int:
    """The smallest limit whose cut keeps ``need`` tokens. O(1): the cut is nondecreasing in the
    limit, so start just below the real-valued solution and step up (a few steps at most)."""
    if target is None or target == ref_limit:
        return need + budget
    if target == 0 or not ref_limit:
        raise ValueError(
            f"smallest_safe_limit: a target of 0 cuts every compaction to nothing; no limit keeps "
            f"{need} tokens (target={target}, limit={ref_limit})"
        )
    c = need + budget
    guess = max(c, int((c - 1) * ref_limit / target) - 2)
    while guess > c and _cut_to(guess - 1, target, ref_limit, budget) >= need:
        guess -= 1
    while _cut_to(guess, target, ref_limit, budget) < need:
        guess += 1
    return guess


def smallest_safe_limit(messages: Sequence[Message], protect: str = "latest_user", **policies) -> int:
    """The smallest token limit at which ``protect`` is never dropped by History with ``policies``.

    ``protect`` is ``"latest_user"`` (at every step, the newest user turn so far), ``"system"``
    (every system message) or a message id. ``policies`` are History's keywords (a target comes
    with the reference ``limit`` it belongs to). O(n). The rule, the role of each policy and when
    the answer is exact are in the module docstring; :func:`explain_safe_limit` also gives the
    deciding step. Raises as :func:`explain_safe_limit`.

    >>> from convmem import Message
    >>> smallest_safe_limit([Message("u", "user", 7), Message("a", "assistant", 5)])
    12
    """
    return explain_safe_limit(messages, protect, **policies).limit
