"""Pure table builders and plain-value helpers of the Token budget page (no streamlit).

* :func:`messages_table`: every message with when and why it left the context (the page's table
  and its CSV download).
* :func:`drop_event_table`: what one drop event took and why.
* :func:`comparison_table`: two settings side by side.
* :func:`context_at_step` / :func:`context_records` / :func:`context_json`: the exact context after
  any add, rebuilt from the replay in O(n) without replaying (checked against
  :func:`convmem.context_at` in the tests), as OpenAI-like JSON.
* :func:`limit_bounds`, :func:`sweep_grid`, :func:`default_conversation`: widget ranges and defaults
  derived from the conversation's size.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from convmem import DROP_REASONS, Compaction, Conversation, Message, Replay, ReplayStats, SweepRow
from convmem.history import OVER_LIMIT, START_ON_USER, TOO_BIG

from .figures_budget import COMPARISON_METRICS, ReplayArrays, replay_arrays

__all__ = [
    "MESSAGE_COLUMNS",
    "PREVIEW_CHARS",
    "LimitBounds",
    "messages_table",
    "base_table",
    "drop_event_table",
    "comparison_table",
    "sweep_table",
    "context_at_step",
    "context_records",
    "context_table",
    "context_json",
    "limit_bounds",
    "nice_step",
    "sweep_grid",
    "default_conversation",
]

PREVIEW_CHARS = 80
MESSAGE_COLUMNS = (
    "step",
    "id",
    "role",
    "tokens",
    "dropped at",
    "status",
    "reason",
    "summarized",
    "in context (adds)",
    "preview",
)
#: Reasons whose drop moves History's frontier (the oldest-end cut; see docs/decisions.md).
_FRONTIER_REASONS = frozenset({OVER_LIMIT, TOO_BIG, START_ON_USER})


def _preview(m: Message) -> str:
    if m.content:
        text = " ".join(m.content.split())
    elif m.tool_call_ids:
        text = "calls " + ", ".join(m.tool_call_ids)
    else:
        return ""
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def base_table(messages: Sequence[Message]) -> pd.DataFrame:
    """The columns of :func:`messages_table` that do not depend on the settings: step, id, role,
    tokens, preview. O(n); the page caches it per conversation."""
    n = len(messages)
    return pd.DataFrame(
        {
            "step": np.arange(n, dtype=np.int64),
            "id": [m.id for m in messages],
            "role": [m.role for m in messages],
            "tokens": np.fromiter((m.tokens for m in messages), dtype=np.int64, count=n),
            "preview": [_preview(m) for m in messages],
        }
    )


def messages_table(r: Replay, base: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per message, in conversation order.

    Columns (:data:`MESSAGE_COLUMNS`): ``step`` (the add that brought it: its 0-based position),
    ``id``, ``role``, ``tokens``, ``dropped at`` (the add that dropped it; empty while kept),
    ``status`` ("kept" or "dropped"), ``reason`` (a convmem.DROP_REASONS value, empty while kept),
    ``summarized`` (an accepted summary took it in), ``in context (adds)`` (how many adds it was in
    the context for; 0 when refused on arrival), ``preview`` (its text, whitespace collapsed, cut
    to 80 characters; plain text, never rendered as markup). ``base`` is
    :func:`base_table` of ``r.messages`` when already at hand. O(n).
    """
    n = len(r.messages)
    if base is None:
        base = base_table(r.messages)
    dropped = np.fromiter((-1 if d is None else d for d in r.dropped_at), dtype=np.int64, count=n)
    kept = dropped < 0
    steps = np.arange(n, dtype=np.int64)
    out = base.copy(deep=False)
    out["dropped at"] = pd.array(np.where(kept, 0, dropped), dtype="Int64")
    out.loc[kept, "dropped at"] = pd.NA
    out["status"] = np.where(kept, "kept", "dropped")
    out["reason"] = [x or "" for x in r.drop_reason]
    out["summarized"] = np.fromiter(r.summarized, dtype=bool, count=n)
    out["in context (adds)"] = np.where(kept, n, dropped) - steps
    return out[list(MESSAGE_COLUMNS)]


def drop_event_table(event: Compaction, messages: Sequence[Message]) -> pd.DataFrame:
    """What one drop event took, oldest first: id, role, tokens, reason, added at, summarized,
    in context (adds), preview. ``messages`` is the replayed conversation (for the previews)."""
    rows = []
    for d in event.dropped:
        m = messages[d.added_step] if 0 <= d.added_step < len(messages) else None
        rows.append(
            {
                "id": d.id,
                "role": d.role,
                "tokens": d.tokens,
                "reason": d.reason,
                "added at": d.added_step,
                "summarized": d.summarized,
                "in context (adds)": event.step - d.added_step,
                "preview": _preview(m) if m is not None and m.id == d.id else "",
            }
        )
    return pd.DataFrame(
        rows,
        columns=["id", "role", "tokens", "reason", "added at", "summarized", "in context (adds)", "preview"],
    )


_EXTRA_METRICS = (
    ("summaries_accepted", "summaries accepted", "summaries"),
    ("summaries_rejected", "summaries rejected", "summaries"),
    ("over_limit_steps", "adds over the limit (pinned overflow)", "adds"),
)


def comparison_table(a: ReplayStats, b: ReplayStats) -> pd.DataFrame:
    """Metric rows (with their unit) and columns A, B and "B − A"; mean context rounded to 0.1."""
    rows = []
    for attr, label, unit in (*COMPARISON_METRICS, *_EXTRA_METRICS):
        va, vb = getattr(a, attr), getattr(b, attr)
        if isinstance(va, float) or isinstance(vb, float):
            va, vb = round(float(va), 1), round(float(vb), 1)
            diff = round(vb - va, 1)
        else:
            diff = vb - va
        rows.append({"metric": label, "unit": unit, "A": va, "B": vb, "B − A": diff})
    return pd.DataFrame(rows, columns=["metric", "unit", "A", "B", "B − A"])


def sweep_table(rows: Sequence[SweepRow]) -> pd.DataFrame:
    """One row per swept limit: limit, compactions, prefix changes, mean and max context, messages
    and tokens dropped."""
    return pd.DataFrame(
        [
            {
                "limit (tokens)": r.limit,
                "compactions": r.stats.compactions,
                "prefix changes": r.stats.prefix_changes,
                "mean context (tokens)": round(r.stats.mean_context, 1),
                "max context (tokens)": r.stats.max_context,
                "messages dropped": r.stats.messages_dropped,
                "tokens dropped": r.stats.tokens_dropped,
            }
            for r in rows
        ]
    )


def context_at_step(r: Replay, step: int, arrays: ReplayArrays | None = None) -> list[Message]:
    """The exact context right after add ``step`` (0-based), summary included, without replaying.

    Kept at ``step`` = messages added at or before it and not dropped by it. The summary in place
    is the last one accepted at or before ``step``; it sits right before the first kept message
    newer than the *frontier* (the newest message a cut dropped from the oldest end: reasons
    over_limit, too_big, start_on_user), as History.context() places it (docs/decisions.md rule 7).
    O(n) with numpy. Raises ValueError when ``step`` is out of range.
    """
    n = len(r.messages)
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
        raise TypeError(f"context_at_step step must be an int, got {step!r}")
    if not 0 <= step < n:
        raise ValueError(f"context_at_step step must be in [0, {n - 1}], got {step}")
    a = arrays if arrays is not None else replay_arrays(r)
    idx = np.arange(step + 1)
    dropped = a.dropped_at[: step + 1]
    gone = (dropped >= 0) & (dropped <= step)
    kept = idx[~gone]
    frontier_codes = [k for k, reason in enumerate(DROP_REASONS) if reason in _FRONTIER_REASONS]
    cut = gone & np.isin(a.reason_code[: step + 1], frontier_codes)
    frontier = int(idx[cut].max()) if cut.any() else -1
    summary = None
    for msg, (_sid, _tok, start, _stop) in zip(r.summaries, a.summary_spans):
        if start <= step:
            summary = msg
        else:
            break
    out = [r.messages[i] for i in kept if i < frontier]
    if summary is not None:
        out.append(summary)
    out.extend(r.messages[i] for i in kept if i > frontier)
    return out


def context_records(messages: Sequence[Message]) -> list[dict]:
    """OpenAI-like records ``{"id", "role", "tokens", "content"}`` (plus ``tool_call_ids`` on a
    message that calls tools and ``tool_call_id`` on a tool result, when present)."""
    out = []
    for m in messages:
        rec: dict = {"id": m.id, "role": m.role, "tokens": m.tokens, "content": m.content}
        if m.tool_call_ids:
            rec["tool_call_ids"] = list(m.tool_call_ids)
        if m.tool_call_id is not None:
            rec["tool_call_id"] = m.tool_call_id
        out.append(rec)
    return out


def context_table(messages: Sequence[Message]) -> pd.DataFrame:
    """The context as rows: position, id, role, tokens, preview (plain text)."""
    return pd.DataFrame(
        [
            {"#": k, "id": m.id, "role": m.role, "tokens": m.tokens, "preview": _preview(m)}
            for k, m in enumerate(messages)
        ],
        columns=["#", "id", "role", "tokens", "preview"],
    )


def context_json(messages: Sequence[Message]) -> str:
    """:func:`context_records` as indented JSON text (UTF-8, non-ASCII kept)."""
    return json.dumps(context_records(messages), ensure_ascii=False, indent=2)


def nice_step(raw: float) -> int:
    """The smallest of 1, 2, 5 × 10^k (an int >= 1) that is >= ``raw``."""
    if raw <= 1:
        return 1
    exp = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if mult * exp >= raw:
            return int(mult * exp)
    return int(10 * exp)  # pragma: no cover


class LimitBounds(tuple):
    """(lo, hi, step, default) of the limit slider, in tokens."""

    __slots__ = ()

    def __new__(cls, lo: int, hi: int, step: int, default: int) -> LimitBounds:
        return super().__new__(cls, (lo, hi, step, default))

    lo = property(lambda self: self[0])
    hi = property(lambda self: self[1])
    step = property(lambda self: self[2])
    default = property(lambda self: self[3])


#: The slider never goes past this many tokens (the largest context windows in use); a bigger
#: conversation is tuned within it.
MAX_SLIDER_TOKENS = 200_000
#: The default limit never exceeds this (a common small context window), so a huge conversation
#: opens with compactions to look at.
MAX_DEFAULT_LIMIT = 32_000


def limit_bounds(total_tokens: int, first_tokens: int = 0) -> LimitBounds:
    """The limit slider's range and default for a conversation of ``total_tokens``.

    ``hi`` covers the whole conversation (no compaction at the top) up to 200k tokens; ``step`` is
    a 1-2-5 number near hi/200; ``lo`` is one step. The default is a third of the conversation
    (so compaction happens several times), at least twice the first message (usually the system
    prompt, so it fits), at most 32k tokens, rounded to the step.

    >>> limit_bounds(1269, 215)
    (10, 1270, 10, 430)
    >>> limit_bounds(15_788_279, 1033)
    (1000, 200000, 1000, 32000)
    """
    cap = max(min(int(total_tokens), MAX_SLIDER_TOKENS), 100)
    step = nice_step(cap / 200)
    hi = math.ceil(cap / step) * step
    lo = step
    raw = max(total_tokens / 3, 2 * first_tokens)
    raw = min(raw, MAX_DEFAULT_LIMIT, hi)
    default = min(max(lo, round(raw / step) * step), hi)
    return LimitBounds(lo, hi, step, default)


def sweep_grid(lo: int, hi: int, count: int, step: int = 1) -> tuple[int, ...]:
    """``count`` limits spread evenly over [lo, hi], each a multiple of ``step``, unique, sorted.

    >>> sweep_grid(10, 1270, 5, 10)
    (10, 320, 640, 960, 1270)
    """
    count = max(2, int(count))
    values = {min(hi, max(lo, round((lo + (hi - lo) * k / (count - 1)) / step) * step)) for k in range(count)}
    return tuple(sorted(values))


def default_conversation(conversations: Sequence[Conversation], first: int = 10) -> str | None:
    """The id of the conversation with the most tokens among the first ``first`` (None if empty)."""
    head = list(conversations[:first])
    if not head:
        return None
    return max(head, key=lambda c: c.total_tokens).id  # the first of equals
