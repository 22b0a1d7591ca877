"""Token budget: the smallest limit that keeps a protected message, and exact limit inputs.

Answers "what is the smallest limit at which this conversation never loses its newest user turn?"
with one call into convmem (:func:`convmem.explain_safe_limit`, one pass over the messages), shown
as a number with the add step that decides it, marked on the limit sweep, and checked against the
current replay ("kept" / "dropped at step k"). :func:`exact_limit_input` puts a number input
(step 1) beside a limit slider, both on one session-state value (the slider's, which is bound to
the URL), so an exact limit is one keystroke away.

The pure parts (:func:`safe_policies`, :func:`protected_status`, :func:`safe_limit_caption`,
:func:`mark_safe_limit`) are plain functions that pytest checks without Streamlit.

>>> from convmem import HistorySettings, Message
>>> s = HistorySettings(100, target=50, pin_system=True)
>>> sorted(safe_policies(s).items())
[('keep_tool_groups', False), ('limit', 100), ('pin_latest_user', False), ('pin_system', True), ('start_on_user', False), ('target', 50)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from convmem_dashboard.data import md_escape

from convmem import ROLES, ExtractiveSummarizer, HistorySettings, Message, Replay, SafeLimit, explain_safe_limit

from .figures_budget import ReplayArrays, replay_arrays

__all__ = [
    "PROTECT_LABELS",
    "ProtectedStatus",
    "exact_limit_help",
    "exact_limit_input",
    "mark_safe_limit",
    "protected_status",
    "render_safe_limit",
    "safe_limit_caption",
    "safe_policies",
]

#: The protect choices (URL values of ``?sl_p=``) and their labels.
PROTECT_LABELS: dict[str, str] = {
    "latest_user": "Newest user turn",
    "system": "System prompt",
    "message": "A message (by id)",
}
SAFE_COLOR = "#009E73"
_USER = ROLES.index("user")
_SYSTEM = ROLES.index("system")


def safe_policies(settings: HistorySettings) -> dict:
    """explain_safe_limit's keywords for the page's settings: the policies, the target with the
    limit it belongs to (it keeps that ratio as the limit varies, as the sweep does) and the
    summary budget with the page's summarizer. O(1)."""
    out = {
        "pin_system": settings.pin_system,
        "pin_latest_user": settings.pin_latest_user,
        "keep_tool_groups": settings.keep_tool_groups,
        "start_on_user": settings.start_on_user,
    }
    if settings.target is not None:
        out.update(target=settings.target, limit=settings.limit)
    if settings.summary_budget is not None:
        out.update(summary_budget=settings.summary_budget, summarizer=ExtractiveSummarizer)
    return out


@dataclass(frozen=True, slots=True)
class ProtectedStatus:
    """Whether the current replay keeps the protected class: ``kept``, else the first drop's add
    ``step`` and the dropped message's ``message_id``."""

    kept: bool
    step: int | None = None
    message_id: str | None = None

    @property
    def text(self) -> str:
        if self.kept:
            return "kept at this limit"
        return f"dropped at this limit (add step {self.step:,}, message {self.message_id})"


def protected_status(r: Replay, protect: str, arrays: ReplayArrays | None = None) -> ProtectedStatus:
    """Read off a replay whether the protected class was ever dropped while protected: the
    earliest such drop (the oldest message on a tie). O(n) in numpy over ``arrays``
    (:func:`~convmem_dashboard.figures_budget.replay_arrays` of ``r``, built when not given):
    ~1 ms at 10^5 messages.

    >>> from convmem import HistorySettings, Message, replay
    >>> msgs = [Message("u1", "user", 10), Message("a1", "assistant", 30), Message("u2", "user", 5)]
    >>> protected_status(replay(msgs, HistorySettings(40)), "latest_user").kept
    True
    >>> protected_status(replay(msgs, HistorySettings(39)), "latest_user")
    ProtectedStatus(kept=False, step=1, message_id='u1')
    """
    a = arrays if arrays is not None else replay_arrays(r)
    dropped = a.dropped_at
    if protect == "latest_user":
        users = np.flatnonzero(a.role_code == _USER)
        # A user turn is protected from its arrival until the next one arrives.
        ends = np.append(users[1:], a.n)
        steps = dropped[users]
        candidates = users[(steps >= 0) & (steps < ends)]
    elif protect == "system":
        candidates = np.flatnonzero((a.role_code == _SYSTEM) & (dropped >= 0))
    else:
        try:
            i = a.ids.index(protect)
        except ValueError:
            candidates = np.zeros(0, dtype=np.int64)
        else:
            candidates = np.array([i] if dropped[i] >= 0 else [], dtype=np.int64)
    if not len(candidates):
        return ProtectedStatus(True)
    first = int(candidates[np.argmin(dropped[candidates])])  # argmin: the oldest on a tie
    return ProtectedStatus(False, int(dropped[first]), a.ids[first])


def safe_limit_caption(got: SafeLimit) -> str:
    """One sentence on what decides the answer."""
    if got.step is None:
        why = {
            "pinned": "it is pinned: History keeps it at any limit",
            "absent": "this conversation has no such message",
            "fits": "it needs no room (0 tokens)",
        }.get(got.reason, got.reason)
        return f"Any limit keeps it: {why}."
    if got.reason == "no_compaction":
        head = (f"Decided at add step {got.step:,} by message {got.message_id}: with no user turn "
                f"before it, start-on-user drops it at any compaction, so the limit must hold "
                f"{got.need:,} tokens without one.")
    else:
        head = (f"Decided at add step {got.step:,} by message {got.message_id}: {got.need:,} tokens "
                "must survive the cut there.")
        if got.limit > got.need:  # a new user missed why the headline is above that number
            head += (f" The limit is {got.limit - got.need:,} tokens more: a cut goes below the "
                     "limit by the target's gap and the summary budget.")
    if got.exact:
        return head + " Exact: every smaller limit drops it."
    return (head + " With a target or summary budget this is the smallest limit from which it is "
            "kept whatever the compaction timing (a smaller one may be kept by luck).")


def mark_safe_limit(fig: go.Figure, got: SafeLimit | None) -> go.Figure:
    """The limit sweep figure with the safe limit as a green dashed line (in place; returned)."""
    if got is not None and got.limit > 0:
        fig.add_vline(
            x=got.limit,
            line={"color": SAFE_COLOR, "dash": "dash", "width": 2},
            annotation_text=f"safe {got.limit:,}",
            annotation_position="top left",
        )
    return fig


def _copy(src: str, dst: str) -> None:
    st.session_state[dst] = st.session_state[src]


def exact_limit_input(container, key: str, lo: int, hi: int, default: int, label: str, *, num_key: str | None = None) -> None:
    """A number input (step 1) for the limit slider ``key``, drawn in ``container`` before it.

    Both widgets share the slider's value (bound to the URL): the input's callback writes it,
    and the input starts from it on every run. Call it before the slider is created.
    """
    num_key = num_key or f"{key}_n"
    current = st.session_state.get(key)
    if current is None:
        # First run: the slider seeds itself from the URL when it is created (after this input);
        # read the same (already sanitized) URL value so both start equal.
        raw = st.query_params.get(key)
        current = int(raw) if isinstance(raw, str) and raw.isdigit() else default
    if not isinstance(current, int) or not lo <= current <= hi:
        current = default
    st.session_state[num_key] = current
    container.number_input(
        label, min_value=lo, max_value=hi, step=1, key=num_key, on_change=_copy, args=(num_key, key),
        help=exact_limit_help(lo, hi),
    )


def exact_limit_help(lo: int, hi: int) -> str:
    """The exact limit input's help: the range it takes, so a number outside it (which the input
    refuses, keeping the limit as it was) is explained where the user types.

    >>> exact_limit_help(100, 31_000)
    'Type an exact limit from 100 to 31,000 tokens (step 1); the slider follows. A number outside that range is refused and the limit stays as it was.'
    """
    return (f"Type an exact limit from {lo:,} to {hi:,} tokens (step 1); the slider follows. "
            "A number outside that range is refused and the limit stays as it was.")


def _limit_free(settings: HistorySettings) -> HistorySettings:
    """``settings`` as far as the answer depends on them: with no target the answer does not
    depend on the limit (the summary budget, already clipped to the limit, adds to the need as
    it is; clearing is not modelled by explain_safe_limit), so a limit step hits the cache
    instead of another O(n) pass (0.1-0.4 s at 10^5 messages), summaries on or off. A target
    keeps its ratio to the limit, which rounding changes from one limit to the next: kept.

    >>> _limit_free(HistorySettings(500, pin_system=True)) == _limit_free(HistorySettings(900, pin_system=True))
    True
    >>> _limit_free(HistorySettings(500, summary_budget=50)) == _limit_free(HistorySettings(900, summary_budget=50))
    True
    >>> _limit_free(HistorySettings(500, summary_budget=50)) == _limit_free(HistorySettings(900, summary_budget=60))
    False
    """
    if settings.target is None:
        return HistorySettings(
            0, pin_system=settings.pin_system, pin_latest_user=settings.pin_latest_user,
            keep_tool_groups=settings.keep_tool_groups, start_on_user=settings.start_on_user,
            summary_budget=settings.summary_budget,
        )
    return settings


def _answer_key(settings: HistorySettings, protect: str) -> HistorySettings:
    """:func:`_limit_free` without the policies the answer for ``protect`` does not read, so
    toggling them hits the cache: for the newest user turn, start_on_user (explain_safe_limit
    scans only for a system message or a message id) and, when the turn is pinned, everything
    (the answer is 0, "pinned").

    >>> _answer_key(HistorySettings(500, start_on_user=True), "latest_user") == _answer_key(HistorySettings(500), "latest_user")
    True
    >>> _answer_key(HistorySettings(500, start_on_user=True), "system") == _answer_key(HistorySettings(500), "system")
    False
    """
    key = _limit_free(settings)
    if protect == "latest_user":
        if key.pin_latest_user:
            return HistorySettings(0, pin_latest_user=True)
        key = replace(key, start_on_user=False)
    return key


@st.cache_data(show_spinner=False, max_entries=64)
def _explain(dataset_key: str, conv_id: str, settings: HistorySettings, protect: str) -> SafeLimit | str:
    from .cache_budget import conversation

    try:
        return explain_safe_limit(conversation(dataset_key, conv_id).messages, protect, **safe_policies(settings))
    except ValueError as exc:
        return str(exc)


def _use(limit: int, key: str) -> None:
    st.session_state[key] = limit


def render_safe_limit(
    dataset_key: str, conv_id: str, settings: HistorySettings, r: Replay, *, limit_key: str = "limit", lo: int = 0,
    hi: int | None = None, arrays: ReplayArrays | None = None,
) -> SafeLimit | None:
    """The protected-limit panel: protect picker, the answer and its step, the current status.

    ``arrays`` is :func:`~convmem_dashboard.figures_budget.replay_arrays` of ``r`` when at hand.
    Returns the answer (for :func:`mark_safe_limit`), or None when there is none (a message id not
    in the conversation, a tool result no limit keeps: said in words on the page).
    """
    st.subheader("Smallest safe limit")
    cols = st.columns([3, 3, 4], vertical_alignment="bottom")
    choice = cols[0].radio(
        "Protect", list(PROTECT_LABELS), captions=list(PROTECT_LABELS.values()), key="sl_p",
        bind="query-params", horizontal=True, help="The message class that must never be dropped "
        "(no format_func: the URL value is the option itself, ?sl_p=system).",
    )
    protect = choice
    if choice == "message":
        picked = cols[1].text_input(
            "Message id", key="sl_id", bind="query-params", max_chars=1000,
            placeholder="an id from the table below",
        )
        if not picked:
            st.info("Type a message id (the 'id' column of the table below) to protect it.")
            return None
        protect = picked
    got = _explain(dataset_key, conv_id, _answer_key(settings, protect), protect)
    if isinstance(got, str):
        # The message names the id the user typed: shown as plain text, never Markdown.
        st.warning("No safe limit for this choice:")
        st.text(got)
        return None
    cols[1 if choice != "message" else 2].metric(
        "Smallest safe limit (tokens)", f"{got.limit:,}",
        help="The smallest token limit at which the protected message is never dropped, with the "
        "policies above (convmem.smallest_safe_limit, one pass).",
    )
    status = protected_status(r, protect, arrays)
    # message ids are user text: escaped so Markdown shows them literally (never renders them)
    st.caption(md_escape(safe_limit_caption(got) + f" Current limit {settings.limit:,} tokens: {status.text}."))
    if got.limit != settings.limit and lo <= got.limit and (hi is None or got.limit <= hi):
        cols[2].button("Use this limit", key="sl_use", on_click=_use, args=(got.limit, limit_key))
    return got
