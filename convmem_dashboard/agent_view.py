"""Coding-agent sessions in the dashboard (issue 13): pure builders, plain-pytest testable.

* :func:`agent_context` / :func:`add_agent_compactions`: the agent's own context (convmem's count
  of the messages since its last compaction) and its compactions, drawn on the token budget
  timeline beside the compactions convmem's policy makes on the same messages; the provider's
  reported prompt per call as dots.
* :func:`compaction_table`: per agent compaction, what the agent kept (its summary) beside what
  convmem's replay held at that moment.
* :func:`usage_frame` / :func:`usage_figure`: the reported usage per call (input, cache writes,
  cache reads, output) beside convmem's count of the same prompt.
* :func:`reported_cost`: what the calls cost at given prices, from the reported cache reads and
  writes.
* :func:`calibration_lines`: the calibration, in words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from convmem import Calibration, Conversation, Replay, session_of, usage_comparison

from .axes import integer_ticks
from .figures_budget import _esc, minmax_indices

__all__ = [
    "Prices",
    "add_agent_compactions",
    "agent_context",
    "calibration_lines",
    "compaction_table",
    "has_session",
    "reported_cache_line",
    "reported_cost",
    "session_caption",
    "session_export",
    "skipped_lines",
    "usage_figure",
    "usage_frame",
]

AGENT_COLOR = "#009E73"  # Okabe-Ito bluish green: the agent's own context and compactions
REPORTED_COLOR = "#E69F00"  # orange: the provider's reported prompt
USAGE_COLORS = {"input": "#0072B2", "cache writes": "#D55E00", "cache reads": "#56B4E9",
                "output": "#999999"}


def has_session(conv: Conversation) -> bool:
    """Whether ``conv`` was read from a coding-agent session file."""
    return session_of(conv) is not None


def agent_context(conv: Conversation) -> np.ndarray:
    """Per add step ``i``, the tokens (convmem's count) in the agent's own context after message
    ``i``: the messages since the agent's last compaction at or before ``i``. O(n)."""
    tokens = np.fromiter((m.tokens for m in conv.messages), dtype=np.int64,
                         count=len(conv.messages))
    out = np.cumsum(tokens)
    session = session_of(conv)
    for c in session.compactions if session else ():
        if 0 <= c.index < len(out):
            before = out[c.index - 1] if c.index > 0 else 0
            out[c.index:] -= before
    return out


def _hover_compaction(k: int, c, summary_tokens: int) -> str:
    pre = f"{c.pre_tokens:,} tokens (reported)" if c.pre_tokens is not None else "not recorded"
    return (f"agent compaction {k + 1} at add step {c.index}<br>trigger: {_esc(c.trigger or 'not recorded')}"
            f"<br>before: {pre}<br>kept: its summary, {summary_tokens:,} tokens")


def add_agent_compactions(fig: go.Figure, conv: Conversation, *, start: int = 0,
                          stop: int | None = None, max_points: int = 4000) -> go.Figure:
    """``fig`` (the token budget totals figure) with the agent's context line, its compactions
    (stars) and the provider's reported prompt per call (dots) over steps ``start..stop``.
    A conversation without a session is returned unchanged. Returns ``fig``."""
    session = session_of(conv)
    n = len(conv.messages)
    if session is None or n == 0:
        return fig
    lo = max(0, min(start, n - 1))
    hi = n - 1 if stop is None else max(lo, min(stop, n - 1))
    ctx = agent_context(conv)
    steps = np.arange(lo, hi + 1)
    window = ctx[lo: hi + 1]
    keep = minmax_indices(window, max_points)
    fig.add_trace(go.Scatter(
        x=steps[keep], y=window[keep], name="agent's context (convmem count)", mode="lines",
        line={"color": AGENT_COLOR, "width": 1.2, "dash": "dot"},
        hovertemplate="add step %{x}<br>agent's context %{y:,} tokens<extra></extra>"))
    marks = [(k, c) for k, c in enumerate(session.compactions) if lo <= c.index <= hi]
    if marks:
        xs, ys, hover = [], [], []
        for k, c in marks:
            before = int(ctx[c.index - 1]) if c.index > 0 else 0
            summary_tokens = conv.messages[c.index].tokens if c.index < n else 0
            xs.append(c.index)
            ys.append(before)
            hover.append(_hover_compaction(k, c, summary_tokens))
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="markers", name="agent compactions",
            marker={"symbol": "star", "size": 13, "color": AGENT_COLOR,
                    "line": {"width": 0.5, "color": "white"}},
            hovertext=hover, hovertemplate="%{hovertext}<extra></extra>"))
    calls = [u for u in session.usage if lo <= u.index <= hi]
    if calls:
        fig.add_trace(go.Scatter(
            x=np.fromiter((u.index for u in calls), np.int64, len(calls)),
            y=np.fromiter((u.prompt_tokens for u in calls), np.int64, len(calls)),
            mode="markers",
            name="reported prompt (provider)",
            marker={"symbol": "circle", "size": 5, "color": REPORTED_COLOR},
            hovertemplate="call at add step %{x}<br>reported prompt %{y:,} tokens<extra></extra>"))
    top = max([int(window.max())] + [u.prompt_tokens for u in calls])  # O(calls)
    current = fig.layout.yaxis.range
    if current is not None and top * 1.08 + 1 > current[1]:
        fig.update_layout(yaxis={"range": [0, top * 1.08 + 1]})
    return fig


def compaction_table(conv: Conversation, r: Replay | None = None) -> pd.DataFrame:
    """One row per agent compaction: where, trigger, tokens before (reported and convmem's
    count), what the agent kept (its summary) and, when a replay ``r`` of the same messages is
    given, what convmem's policy held just before that step (messages, tokens) and how many
    compactions it had made by then."""
    session = session_of(conv)
    cols = ["#", "add step", "trigger", "before (reported)", "before (convmem count)",
            "agent kept (tokens)", "convmem kept (messages)", "convmem kept (tokens)",
            "convmem compactions so far"]
    if session is None:
        return pd.DataFrame(columns=cols)
    ctx = agent_context(conv)
    n = len(conv.messages)
    ev_steps = np.asarray(r.compactions.steps, dtype=np.int64) if r is not None else None
    rows = []
    for k, c in enumerate(session.compactions):
        at = min(c.index, n) - 1
        row = {
            "#": k + 1,
            "add step": c.index,
            "trigger": c.trigger or "",
            "before (reported)": c.pre_tokens,
            "before (convmem count)": int(ctx[at]) if at >= 0 else 0,
            "agent kept (tokens)": conv.messages[c.index].tokens if c.index < n else 0,
            "convmem kept (messages)": None,
            "convmem kept (tokens)": None,
            "convmem compactions so far": None,
        }
        if r is not None and at >= 0:
            row["convmem kept (messages)"] = int(r.kept_counts[at])
            row["convmem kept (tokens)"] = int(r.totals[at])
            row["convmem compactions so far"] = int(np.searchsorted(ev_steps, at, side="right"))
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)


def usage_frame(conv: Conversation) -> pd.DataFrame:
    """One row per reported call: turn, add step, input, cache writes, cache reads, output,
    reported prompt, convmem's count of that prompt, their difference and relative error."""
    rows = [{
        "turn": x.turn, "add step": x.index, "messages in prompt": x.messages,
        "input": x.usage.input_tokens, "cache writes": x.usage.cache_write_tokens,
        "cache reads": x.usage.cache_read_tokens, "output": x.usage.output_tokens,
        "reported prompt": x.reported, "convmem count": x.counted,
        "difference": x.difference,
        "relative error": None if x.relative_error is None else round(x.relative_error, 4),
    } for x in usage_comparison(conv)]
    return pd.DataFrame(rows, columns=["turn", "add step", "messages in prompt", "input",
                                       "cache writes", "cache reads", "output",
                                       "reported prompt", "convmem count", "difference",
                                       "relative error"])


def usage_figure(frame: pd.DataFrame) -> go.Figure:
    """Stacked bars of the reported prompt per call (input, cache writes, cache reads) and the
    output, with convmem's count of the same prompt as a line."""
    fig = go.Figure()
    if frame.empty:
        fig.update_layout(title="This session reports no usage")
        return fig
    x = frame["turn"].to_numpy()
    for name in ("cache reads", "cache writes", "input"):
        fig.add_trace(go.Bar(x=x, y=frame[name].to_numpy(), name=f"{name} (reported)",
                             marker_color=USAGE_COLORS[name],
                             hovertemplate=f"turn %{{x}}<br>{name} %{{y:,}} tokens<extra></extra>"))
    fig.add_trace(go.Scatter(x=x, y=frame["convmem count"].to_numpy(),
                             name="convmem count of the prompt",
                             mode="lines+markers", line={"color": "#333333", "width": 1.5},
                             marker={"size": 4},
                             hovertemplate="turn %{x}<br>convmem %{y:,} tokens<extra></extra>"))
    fig.add_trace(go.Scatter(x=x, y=frame["output"].to_numpy(), name="output (reported)",
                             mode="lines",
                             line={"color": USAGE_COLORS["output"], "dash": "dot"},
                             hovertemplate="turn %{x}<br>output %{y:,} tokens<extra></extra>"))
    fig.update_layout(barmode="stack", title="Reported usage per call beside convmem's count",
                      xaxis_title="call (turn)", yaxis_title="tokens",
                      xaxis=integer_ticks(int(x.min()), int(x.max())),  # no half calls
                      legend={"orientation": "h", "y": -0.2}, margin={"t": 50, "b": 10})
    return fig


@dataclass(frozen=True, slots=True)
class Prices:
    """Prices in dollars per million tokens."""

    input: float
    cache_write: float
    cache_read: float
    output: float


def reported_cost(conv: Conversation, prices: Prices) -> dict[str, float]:
    """Dollars the reported calls cost, by part, and what the same prompts would cost with no
    cache (every prompt token at the input price). Keys: input, cache writes, cache reads,
    output, total, uncached total."""
    session = session_of(conv)
    usage = session.usage if session else ()
    per = 1e-6
    parts = {
        "input": sum(u.input_tokens for u in usage) * prices.input * per,
        "cache writes": sum(u.cache_write_tokens for u in usage) * prices.cache_write * per,
        "cache reads": sum(u.cache_read_tokens for u in usage) * prices.cache_read * per,
        "output": sum(u.output_tokens for u in usage) * prices.output * per,
    }
    parts["total"] = sum(parts.values())
    parts["uncached total"] = (sum(u.prompt_tokens for u in usage) * prices.input
                               + sum(u.output_tokens for u in usage) * prices.output) * per
    return parts


def calibration_lines(cal: Calibration) -> list[str]:
    """The calibration in plain sentences (shown with st.text)."""
    lines = [
        f"Fitted on {cal.calls:,} reported calls: provider tokens = {cal.ratio:.3f} x "
        f"approximate content tokens + {cal.per_message_overhead:.1f} per message + "
        f"{cal.base_tokens:,.0f} per prompt (system prompt and tools, not in the file).",
    ]
    if cal.error_before is not None:
        lines.append(f"convmem's count as loaded is off by {cal.error_before:.1%} on average "
                     f"(worst call {cal.max_error_before:.1%}).")
    lines.append(f"The calibrated model is off by {cal.error_after:.2%} on average (worst call "
                 f"{cal.max_error_after:.2%}).")
    kw = cal.make_counter_kwargs()
    lines.append(f"Nearest make_counter call: make_counter(approximate=True, "
                 f"per_message_overhead={kw['per_message_overhead']}); the ratio needs "
                 "Calibration.counter().")
    return lines


def session_caption(conv: Conversation) -> str:
    """One line about the session: agent, version, model, calls, compactions, skipped records."""
    s = session_of(conv)
    if s is None:
        return ""
    bits = [s.agent]
    if s.version:
        bits.append(f"version {s.version}")
    if s.model:
        bits.append(f"model {s.model}")
    bits.append(f"{len(s.usage):,} reported calls")
    bits.append(f"{len(s.compactions):,} agent compactions")
    if s.skipped:
        bits.append(f"{len(s.skipped):,} records skipped")
    if s.truncated:
        bits.append("last line still being written")
    if s.parent_id:
        bits.append(f"sub-agent of {s.parent_id}")
    return " · ".join(bits)


def skipped_lines(conv: Conversation) -> Sequence[str]:
    """Each skipped record of the session as one line (shown with st.code)."""
    s = session_of(conv)
    return [str(x) for x in s.skipped] if s else []


def session_export(conv: Conversation, redact: bool = True) -> dict:
    """The session as a JSON value for download: messages (id, role, tokens, content, calls,
    answered call), reported usage, agent compactions. ``redact`` (default) replaces every text
    by its token count (:func:`convmem.redact_conversation`): nothing of what was said leaves."""
    from dataclasses import asdict

    from convmem import redact_conversation

    c = redact_conversation(conv) if redact else conv
    s = session_of(c)
    calls: dict[str, list[dict]] = {}
    for tc in c.tool_calls:
        calls.setdefault(tc.message_id, []).append(
            {"id": tc.id, "name": tc.name, "arguments": tc.arguments})
    return {
        "id": c.id,
        "redacted": redact,
        "agent": s.agent if s else None,
        "messages": [{"id": m.id, "role": m.role, "tokens": m.tokens, "content": m.content,
                      "tool_calls": calls.get(m.id, []), "tool_call_id": m.tool_call_id}
                     for m in c.messages],
        "usage": [asdict(u) for u in s.usage] if s else [],
        "compactions": [asdict(x) for x in s.compactions] if s else [],
    }


def reported_cache_line(conv: Conversation, pricing) -> str | None:
    """For the prompt-cache cost panel: what the session's own calls cost on the input side as
    the provider *reported* them (input, cache writes, cache reads at ``pricing``'s
    ``input_per_mtok`` / ``write_per_mtok`` / ``cached_per_mtok``), against the same prompts
    uncached; None for a conversation without reported usage."""
    session = session_of(conv)
    if session is None or not session.usage:
        return None
    inp = sum(u.input_tokens for u in session.usage)
    write = sum(u.cache_write_tokens for u in session.usage)
    read = sum(u.cache_read_tokens for u in session.usage)
    prompt = inp + write + read
    cost = (inp * pricing.input_per_mtok + write * pricing.write_per_mtok
            + read * pricing.cached_per_mtok) / 1e6
    uncached = prompt * pricing.input_per_mtok / 1e6
    share = f"{read / prompt:.1%}" if prompt else "n/a"
    return (f"The agent's own {len(session.usage):,} calls, as the provider reported them: "
            f"{inp:,} input + {write:,} cache-write + {read:,} cache-read tokens (reads: {share} of "
            f"the prompt tokens) cost ${cost:,.4f} at these prices; uncached ${uncached:,.4f}.")
