"""Coding-agent sessions (Claude Code, Codex CLI): the agent's own compactions and the usage the
provider reported, as values beside the conversation convmem read (issue 13).

The importers (:mod:`convmem.formats.claude_code`, :mod:`convmem.formats.codex_cli`) put an
:class:`AgentSession` in each conversation's ``envelope``; :func:`session_of` returns it.

* :class:`AgentCompaction`: where the agent compacted (the index and id of the message holding the
  summary that replaced the history), the tokens before (Claude Code's ``preTokens``; for Codex,
  which does not record it, the prompt tokens of the last reported turn before), the trigger
  (``"auto"`` / ``"manual"`` / None when not recorded) and the summary text.
* :class:`ReportedUsage`: one row per model call, as the provider reported it: uncached input,
  cache writes, cache reads, output (tokens). ``prompt_tokens`` is what the call's prompt cost.
* :func:`usage_comparison`: per reported turn, convmem's own count of the same prompt (the
  messages in context: since the last compaction, up to the call) beside the provider's.

Calibration is :mod:`convmem.calibration`; redaction :mod:`convmem.redaction`.

>>> u = ReportedUsage(3, "m3", input_tokens=10, cache_write_tokens=200, cache_read_tokens=5000,
...                   output_tokens=40)
>>> u.prompt_tokens
5210
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .conversations import Conversation, Skipped

__all__ = [
    "AgentCompaction",
    "AgentSession",
    "ReportedUsage",
    "UsageComparison",
    "context_start",
    "session_of",
    "usage_comparison",
]


@dataclass(frozen=True, slots=True)
class AgentCompaction:
    """One compaction the coding agent itself made.

    Attributes:
        index: 0-based index (in ``Conversation.messages``) of the message holding the summary
            that replaced the history: the context after the compaction starts there.
        message_id: that message's id (None when the session ends at the boundary).
        pre_tokens: tokens in context just before (Claude Code ``compactMetadata.preTokens``;
            Codex: the last reported prompt tokens before it), or None when unknown.
        trigger: ``"auto"``, ``"manual"``, or None when the file does not say.
        summary: the summary text that replaced the history ("" when not recorded).
        line: the 1-based line of the boundary record in the file.
    """

    index: int
    message_id: str | None
    pre_tokens: int | None
    trigger: str | None
    summary: str
    line: int


@dataclass(frozen=True, slots=True)
class ReportedUsage:
    """The usage the provider reported for one model call (tokens).

    Attributes:
        index: 0-based index of the call's first output message; the prompt is the messages in
            context before it (:func:`context_start` .. ``index``).
        message_id: that message's id.
        input_tokens: uncached input (Anthropic ``input_tokens``; OpenAI ``input_tokens -
            cached_input_tokens``).
        cache_write_tokens: Anthropic ``cache_creation_input_tokens`` (OpenAI reports none: 0).
        cache_read_tokens: Anthropic ``cache_read_input_tokens``; OpenAI ``cached_input_tokens``.
        output_tokens: output, reasoning included (OpenAI counts reasoning inside output).
        reasoning_tokens: OpenAI ``reasoning_output_tokens`` (0 when not reported).
        line: the 1-based line of the record the usage came from.
    """

    index: int
    message_id: str
    input_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0
    line: int = 0

    @property
    def prompt_tokens(self) -> int:
        """What the prompt of this call cost in tokens: input + cache writes + cache reads."""
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens


@dataclass(frozen=True, slots=True)
class AgentSession:
    """What a coding-agent session file says beyond its messages (``Conversation.envelope``).

    Attributes:
        agent: ``"claude-code"`` or ``"codex-cli"``.
        session_id: the agent's session id (None when the file does not say).
        parent_id: for a sub-agent sidechain, the id of the conversation it belongs to.
        parent_message_id: for a sidechain, the id of the parent's message whose tool call
            started it (matched by the task prompt), when found.
        version: the agent's version string, when recorded.
        model: the model of the last turn, when recorded.
        compactions: the agent's own compactions, in order.
        usage: the provider-reported usage, one row per model call, in order.
        skipped: records kept out of the messages, each with its line and reason (unknown record
            types, a truncated last line, invalid JSON, unknown content blocks).
        ignored: ``(record type, count)`` of known records that are not messages (file-history
            snapshots, ``event_msg`` duplicates of items...).
        truncated: the last line was cut off (a session still being written).
        branches_dropped: records on side branches (edits, retries) not on the thread followed.
    """

    agent: str
    session_id: str | None = None
    parent_id: str | None = None
    parent_message_id: str | None = None
    version: str | None = None
    model: str | None = None
    compactions: tuple[AgentCompaction, ...] = ()
    usage: tuple[ReportedUsage, ...] = ()
    skipped: tuple[Skipped, ...] = field(default=(), repr=False)
    ignored: tuple[tuple[str, int], ...] = field(default=(), repr=False)
    truncated: bool = False
    branches_dropped: int = 0


def session_of(conv: Conversation) -> AgentSession | None:
    """The :class:`AgentSession` of a conversation read from a coding-agent file, else None."""
    env = conv.envelope
    return env if isinstance(env, AgentSession) else None


def context_start(session: AgentSession | None, index: int) -> int:
    """Index of the first message in the agent's context when message ``index`` was sent: the
    summary of the last compaction at or before ``index`` (0 when none). O(compactions)."""
    start = 0
    if session is not None:
        for c in session.compactions:
            if c.index <= index:
                start = c.index
    return start


@dataclass(frozen=True, slots=True)
class UsageComparison:
    """One reported turn: the provider's prompt tokens beside convmem's count of that prompt.

    Attributes:
        turn: 0-based turn number (row of ``AgentSession.usage``).
        index: the call's first output message (its prompt is ``messages[start:index]``).
        start: the first message in context (after the last compaction).
        messages: how many messages the prompt holds (``index - start``).
        reported: the provider's prompt tokens (input + cache writes + cache reads).
        counted: the sum of convmem's message tokens over the prompt.
        usage: the reported row.
    """

    turn: int
    index: int
    start: int
    messages: int
    reported: int
    counted: int
    usage: ReportedUsage

    @property
    def difference(self) -> int:
        """``counted - reported`` (tokens): negative when convmem counts fewer."""
        return self.counted - self.reported

    @property
    def relative_error(self) -> float | None:
        """``difference / reported``, or None when nothing was reported."""
        return self.difference / self.reported if self.reported else None


def usage_comparison(conv: Conversation, tokens: Any = None) -> tuple[UsageComparison, ...]:
    """Per reported turn of ``conv``, the provider's prompt tokens beside convmem's count.

    Args:
        conv: a conversation read by a coding-agent importer (else the result is empty).
        tokens: per-message token counts to use instead of ``m.tokens`` (a sequence aligned with
            ``conv.messages``), e.g. a calibrated recount.

    Returns:
        one :class:`UsageComparison` per ``AgentSession.usage`` row. O(messages + turns) (prefix
        sums). The prompt's system prompt and tool definitions are not in the transcript, so
        ``counted`` is below ``reported`` by about their size (:mod:`convmem.calibration`).
    """
    session = session_of(conv)
    if session is None:
        return ()
    counts = [m.tokens for m in conv.messages] if tokens is None else list(tokens)
    if len(counts) != len(conv.messages):
        raise ValueError(f"tokens must hold one count per message ({len(conv.messages)}), got "
                         f"{len(counts)}")
    prefix = [0]
    for n in counts:
        prefix.append(prefix[-1] + n)
    rows = []
    marks = [c.index for c in session.compactions]
    k, start = 0, 0
    for t, u in enumerate(session.usage):
        while k < len(marks) and marks[k] <= u.index:
            start = marks[k]
            k += 1
        end = min(u.index, len(counts))
        s = min(start, end)
        rows.append(UsageComparison(t, u.index, s, end - s, u.prompt_tokens,
                                    prefix[end] - prefix[s], u))
    return tuple(rows)
