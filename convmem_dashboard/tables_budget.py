"""Pure table builders and plain-value helpers of the Token budget page (no streamlit).

* :func:`messages_table`: every message with when and why it left the context (the page's table
  and its CSV download).
* :func:`drop_event_table`: what one drop event took and why.
* :func:`comparison_table`: two settings side by side.
* :func:`context_at_step` / :func:`context_records` / :func:`context_json`: the exact context after
  any add, rebuilt from the replay in O(n) without replaying (checked against
  :func:`convmem.context_at` in the tests), as OpenAI-like JSON.
* :func:`limit_bounds`, :func:`sweep_grid`: widget ranges and defaults
  derived from the conversation's size.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence

import numpy as np
import pandas as pd

from convmem import DROP_REASONS, Compaction, Conversation, Message, Replay, ReplayStats, SweepRow, as_cleared
from convmem.history import OVER_LIMIT, START_ON_USER, TOO_BIG

from .export_safety import safe_json

from .figures_budget import COMPARISON_METRICS, ReplayArrays, replay_arrays
from .table_layout import column, table_view

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
    "context_caption",
    "step_placeholder",
    "summary_outcome_text",
    "totals_caption",
    "drop_event_view",
    "context_view",
    "messages_view",
    "sweep_view",
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


def base_table(messages: Sequence[Message], start: int = 0, stop: int | None = None) -> pd.DataFrame:
    """The columns of :func:`messages_table` that do not depend on the settings: step, id, role,
    tokens, preview; rows ``start..stop - 1`` (positions clipped to the conversation; all by
    default). O(stop - start); the CSV download caches the whole table per conversation, the
    page builds only the rows it shows."""
    start, stop, _ = slice(start, stop).indices(len(messages))
    stop = max(start, stop)
    rows = messages[start:stop]
    return pd.DataFrame(
        {
            "step": np.arange(start, stop, dtype=np.int64),
            "id": pd.Series([m.id for m in rows], dtype="str"),
            "role": pd.Series([m.role for m in rows], dtype="str"),
            "tokens": np.fromiter((m.tokens for m in rows), dtype=np.int64, count=stop - start),
            "preview": pd.Series([_preview(m) for m in rows], dtype="str"),
        }
    )


def messages_table(r: Replay, base: pd.DataFrame | None = None, start: int = 0, stop: int | None = None) -> pd.DataFrame:
    """One row per message, in conversation order: messages ``start..stop - 1`` (all by default;
    positions clipped to the conversation; the index counts from 0 either way).

    Columns (:data:`MESSAGE_COLUMNS`): ``step`` (the add that brought it: its 0-based position),
    ``id``, ``role``, ``tokens``, ``dropped at`` (the add that dropped it; empty while kept),
    ``status`` ("kept" or "dropped"), ``reason`` (a convmem.DROP_REASONS value, empty while kept),
    ``summarized`` (an accepted summary took it in), ``in context (adds)`` (how many adds it was in
    the context for; 0 when refused on arrival), ``preview`` (its text, whitespace collapsed, cut
    to 80 characters; plain text, never rendered as markup). ``base`` is
    :func:`base_table` of the same rows when already at hand. O(stop - start): the page builds
    only the 1,000 rows it shows (rows ``[start, stop)`` equal the same rows of the whole table).
    """
    n = len(r.messages)
    start, stop, _ = slice(start, stop).indices(n)
    stop = max(start, stop)
    k = stop - start
    if base is None:
        base = base_table(r.messages, start, stop)
    if len(base) != k:
        raise ValueError(f"messages_table base has {len(base)} rows, expected {k} (messages {start}..{stop - 1})")
    dropped = np.fromiter((-1 if d is None else d for d in r.dropped_at[start:stop]), dtype=np.int64, count=k)
    kept = dropped < 0
    steps = np.arange(start, stop, dtype=np.int64)
    # One DataFrame from whole columns, in order (no .loc writes, no reindex: ~3x faster).
    columns = {name: base[name] for name in ("step", "id", "role", "tokens")}
    columns["dropped at"] = pd.arrays.IntegerArray(np.where(kept, 0, dropped), kept)  # masked: <NA> while kept
    columns["status"] = pd.Series(np.where(kept, "kept", "dropped"), dtype="str", index=base.index)
    columns["reason"] = pd.Series([x or "" for x in r.drop_reason[start:stop]], dtype="str", index=base.index)
    columns["summarized"] = np.fromiter(r.summarized[start:stop], dtype=bool, count=k)
    columns["in context (adds)"] = np.where(kept, n, dropped) - steps
    columns["preview"] = base["preview"]
    return pd.DataFrame(columns, index=base.index)


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
    is the last one accepted at or before ``step`` (unless removed by then: pinned messages left
    it no room); it sits right before the first kept message newer than the *frontier* (the
    newest message a cut dropped from the oldest end: reasons over_limit, too_big,
    start_on_user), as History.context() places it (docs/decisions.md rule 7). A message cleared
    at or before ``step`` (``r.cleared_at``) is shown as its clearing left it: a tool result as
    the placeholder, a thinking turn without its thinking tokens (:func:`convmem.as_cleared`).
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
    chosen = None
    for i, (_sid, _tok, start, stop) in enumerate(a.summary_spans[: len(r.summaries)]):
        if start > step:
            break
        chosen = i if step < stop else None  # replaced or removed by ``stop``
    summary = None if chosen is None else r.summaries[chosen]  # only this one's text is built
    out = _as_sent(r, [i for i in kept if i < frontier], step)
    if summary is not None:
        out.append(summary)
    out.extend(_as_sent(r, [i for i in kept if i > frontier], step))
    return out


def _as_sent(r: Replay, indices: list[int], step: int) -> list[Message]:
    """``r.messages[i]`` for each of ``indices``, a message cleared at or before ``step`` (tool
    result or thinking: ``r.cleared_at``) as its clearing left it (:func:`convmem.as_cleared`).
    O(len(indices)) plus, for each cleared one, a bisect over the clearings and a scan of its
    clearing's records."""
    messages, cleared_at, clearings = r.messages, r.cleared_at, r.clearings
    if not clearings or not cleared_at:
        return [messages[i] for i in indices]
    steps = None
    out = []
    for i in indices:
        at = cleared_at[i]
        if at is None or at > step:
            out.append(messages[i])
            continue
        if steps is None:
            steps = [c.step for c in clearings]  # in step order
        k = bisect_left(steps, at)
        while True:  # the clearings of step ``at`` (tool results, thinking): one holds message i
            record = next((x for x in clearings[k].cleared if x.added_step == i), None)
            if record is not None:
                out.append(as_cleared(messages[i], record, clearings[k].reason))
                break
            k += 1
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
    """:func:`context_records` as indented JSON text (UTF-8, non-ASCII kept), every text value
    escaped for spreadsheets (:func:`convmem_dashboard.export_safety.safe_json`)."""
    return safe_json(context_records(messages))


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


def sweep_grid(lo: int, hi: int, count: int, step: int = 1, through: int | None = None) -> tuple[int, ...]:
    """``count`` limits in [lo, hi], evenly spaced, one of them ``through`` (the current limit;
    ``lo`` when None), sorted; fewer only when [lo, hi] holds fewer multiples of ``step`` about
    ``through``.

    The spacing is the largest multiple of ``step`` that fits ``count`` limits through
    ``through`` in [lo, hi]; each limit is ``through`` plus a multiple of it (a multiple of
    ``step`` when ``through`` is). When more than ``count`` fit, the ``count`` in a row that hold
    ``through`` and leave the most even margins at the two ends are kept. O(count + log(hi - lo))
    (a binary search over spacings).

    >>> sweep_grid(10, 1270, 5, 10)
    (10, 320, 630, 940, 1250)
    >>> sweep_grid(10, 1270, 5, 10, through=430)
    (150, 430, 710, 990, 1270)
    >>> len(sweep_grid(10, 1270, 20, 10, through=430)), sweep_grid(10, 40, 20, 10)
    (20, (10, 20, 30, 40))
    """
    count = max(2, int(count))
    step = max(1, int(step))
    lo, hi = int(lo), max(int(lo), int(hi))
    anchor = lo if through is None else min(max(int(through), lo), hi)
    below, above = anchor - lo, hi - anchor

    def fits(spacing: int) -> int:  # limits through the anchor, in [lo, hi], at this spacing
        return below // spacing + above // spacing + 1

    # the largest multiple of step that fits count limits (fits() falls as the spacing grows)
    small, large = 1, max(1, math.ceil((hi - lo) / (count - 1) / step))
    if fits(large * step) < count:
        while large - small > 1:
            mid = (small + large) // 2
            if fits(mid * step) >= count:
                small = mid
            else:
                large = mid
        spacing = small * step
    else:
        spacing = large * step
    first = anchor - (below // spacing) * spacing
    grid = range(first, hi + 1, spacing)
    if len(grid) <= count:
        return tuple(grid)
    at = (anchor - first) // spacing
    starts = range(max(0, at - count + 1), min(at, len(grid) - count) + 1)
    best = min(starts, key=lambda k: abs((grid[k] - lo) - (hi - grid[k + count - 1])))
    return tuple(grid[best:best + count])


# -------------------------------------------------------------------------------------- words


def totals_caption(n_events: int, has_target: bool = False, has_summary_budget: bool = False) -> str:
    """The one line under the totals chart: how to read it, naming only what it draws.

    >>> totals_caption(0)
    'Each point is the total after one add; the dashed line is the limit. Nothing was dropped at this limit (lower it to see drop events); click the line to pick a step below.'
    """
    lines = "the dashed line is the limit"
    if has_target:
        lines += ", dotted = target"
    if has_summary_budget:
        lines += ", dash-dot = what a cut cuts to (target − summary budget)"
    head = f"Each point is the total after one add; {lines}."
    if n_events == 0:
        return (
            f"{head} Nothing was dropped at this limit (lower it to see drop events); click the "
            "line to pick a step below."
        )
    return (
        f"{head} Triangles mark the {n_events:,} drop event{'s' if n_events != 1 else ''} (colour = "
        "main reason; hover for what went); click one to inspect it below, or the line to pick a step."
    )


def context_caption(any_dropped: bool, any_summary: bool) -> str:
    """The one line under the context-window chart, naming only the marks it draws.

    >>> context_caption(False, False)
    'One bar per message, from the add that brought it to the end (colour = role); nothing was dropped. A vertical slice is the context at that step.'
    """
    head = "One bar per message, from the add that brought it to the add that dropped it"
    if not any_dropped:
        head = "One bar per message, from the add that brought it to the end"
    marks = ["colour = role"]
    if any_dropped:
        marks.append("× = dropped, colour = reason")
    if any_summary:
        marks.append("purple row = summary")
    tail = "" if any_dropped else "; nothing was dropped"
    return f"{head} ({'; '.join(marks)}){tail}. A vertical slice is the context at that step."


def summary_outcome_text(outcome) -> str:
    """What a drop event did to the summary (a convmem SummaryEvent, or None), in one line.

    A summary is accepted (replacing the previous one or not), rejected (the previous one stays),
    or the summary in place is removed because the pinned messages leave it no room.

    >>> summary_outcome_text(None)
    'Summary: none (summaries are off, or the message was refused on arrival).'
    """
    if outcome is None:
        return "Summary: none (summaries are off, or the message was refused on arrival)."
    removed = getattr(outcome, "removed_id", None)
    if outcome.accepted and outcome.id != removed:
        replaced = f", replacing {outcome.replaced_id}" if outcome.replaced_id else ""
        return f"Summary {outcome.id} accepted: {outcome.tokens:,} of {outcome.budget:,} budget tokens{replaced}."
    if removed is not None and (outcome.id == removed or outcome.id is None):
        return f"Summary {removed} removed, no summary in context now: {outcome.reason}."
    if removed is not None:
        return f"Summary {outcome.id} rejected and {removed} removed, no summary in context now: {outcome.reason}."
    return f"Summary {outcome.id or ''} rejected, the previous one stays: {outcome.reason}.".replace("Summary  ", "Summary ")


def step_placeholder(default_step: int, has_event: bool) -> str:
    """The placeholder of the empty "Add step" box: which step is shown until one is typed.

    >>> step_placeholder(24, False)
    '24 (the last add; click the total line to pick a step)'
    """
    if has_event:
        return f"{default_step} (the selected drop event; click the total line to pick a step)"
    return f"{default_step} (the last add; click the total line to pick a step)"


# ---------------------------------------------------------------------------- table layouts

#: Widths of the short columns the token-budget tables share (pixels), so the preview text has
#: room in a 1280-px-wide window.
_SHORT = {
    "#": column(width=40),
    "step": column(width=55),
    "role": column(width=75),
    "tokens": column(width=60),
    "status": column(width=70),
    "reason": column(width=105),
    "added at": column(width=70),
    "summarized": column(width=90),
    "dropped at": column(width=85),
    "in context (adds)": column("in ctx (adds)", width=100, help="How many adds it stayed in the context."),
}


def _preview_column() -> dict:
    return column(
        width="large",
        help=f"Its text, whitespace collapsed, cut to {PREVIEW_CHARS} characters (the JSON and CSV downloads have it whole).",
    )


def drop_event_view(rows: int) -> dict:
    """st.dataframe arguments of :func:`drop_event_table`: the preview right after what was
    dropped and why, wrapping in a wide column (the five fit in 800 px); as tall as its rows
    (up to 6)."""
    order = ["id", "role", "tokens", "reason", "preview", "added at", "summarized", "in context (adds)"]
    return table_view(
        rows, wrap=True, max_rows=6, order=order,
        columns={**{k: v for k, v in _SHORT.items() if k in order}, "id": column(width=160), "preview": _preview_column()},
    )


def context_view(rows: int) -> dict:
    """st.dataframe arguments of :func:`context_table`: the preview wraps in a wide column (the
    five columns fit in 800 px); at most 8 rows tall."""
    order = ["#", "id", "role", "tokens", "preview"]
    return table_view(
        rows, wrap=True, max_rows=8, order=order,
        columns={**{k: v for k, v in _SHORT.items() if k in order}, "id": column(width=160), "preview": _preview_column()},
    )


def messages_view(rows: int) -> dict:
    """st.dataframe arguments of the every-message table: what happened to a message first, then
    its preview wrapping in a 290-px column (80 characters in two or three lines; these seven
    fit in 800 px), then the details; at most 10 rows tall; a missing value (the "dropped at" of
    a kept message) reads "–", not "None"."""
    order = [
        "step", "id", "role", "tokens", "status", "reason", "preview", "dropped at", "summarized",
        "in context (adds)",
    ]
    return table_view(
        rows, wrap=True, max_rows=10, order=order, placeholder="–",  # "dropped at" of a kept message
        columns={
            **{k: v for k, v in _SHORT.items() if k in order},
            "id": column(width=150),
            "preview": {**_preview_column(), "width": 290},
        },
    )


def sweep_view(rows: int) -> dict:
    """st.dataframe arguments of :func:`sweep_table`: short headers (units in the tooltips) so the
    seven columns fit inside the sweep's expander in a 1280-px window; at most 10 rows tall."""
    tokens = "In tokens."
    return table_view(
        rows, max_rows=10,
        columns={
            "limit (tokens)": column("limit (tokens)", help=tokens),
            "compactions": column("compactions", help="Adds that dropped something."),
            "prefix changes": column("prefix chg.", help="Adds after which the context starts differently (uncached re-sends)."),
            "mean context (tokens)": column("mean ctx (tokens)", help="Tokens in context after an add, on average."),
            "max context (tokens)": column("max ctx (tokens)", help=tokens),
            "messages dropped": column("msgs dropped", help="Messages dropped over the whole conversation."),
            "tokens dropped": column("tokens dropped", help="Tokens of the dropped messages (summaries not counted)."),
        },
    )
