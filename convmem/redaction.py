"""Redaction: content replaced by its token count, for downloads and shared links (issue 13,
item 4).

Coding-agent transcripts hold file paths, code and secrets. A redacted conversation keeps its
shape (ids, roles, token counts, tool-call links and names, the agent's compactions and reported
usage) and nothing of what was said: every message's text becomes ``"[redacted: N tokens]"``
(N its own token count), each tool call's arguments become ``{"redacted_tokens": N}``, each
compaction summary ``"[redacted: N tokens]"``; the provider records (which hold the raw text)
and the values quoted in skip reasons (and the subtypes of ignored records) are dropped. Token totals are unchanged, so every budget
figure computed from the redacted conversation is the same.

>>> from convmem import Conversation, Message
>>> c = Conversation("c", None, (Message("m", "user", 7, content="my key is sk-123"),))
>>> redact_conversation(c).messages[0].content
'[redacted: 7 tokens]'
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from typing import Any

from .agent_sessions import AgentSession
from .conversations import Conversation, ToolCall
from .tokens import ApproxCounter

__all__ = ["redact_conversation", "redact_conversations", "redact_text"]


def redact_text(text: str | None, tokens: int) -> str | None:
    """``"[redacted: N tokens]"`` for a non-empty text; None and "" unchanged.

    >>> redact_text("rm -rf /home/dev", 6), redact_text("", 0), redact_text(None, 0)
    ('[redacted: 6 tokens]', '', None)
    """
    if not text:
        return text
    return f"[redacted: {tokens:,} tokens]"


#: A quoted value in a skip reason (``'...'`` or ``"..."``, backslash escapes inside): what the
#: file said (a block or record type, a text), replaced by ``'[redacted]'``.
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'" + r'|"(?:[^"\\]|\\.)*"')
_MARK = "'[redacted]'"


def _reason(reason: str) -> str:
    """A skip reason with every value it quotes from the file replaced; anything after a quote
    left unclosed (a value cut short) is cut off.

    >>> _reason("unknown content block 'my secret': kept in the record, not counted")
    "unknown content block '[redacted]': kept in the record, not counted"
    >>> _reason("bad value 'cut sho")
    'bad value [redacted]'
    """
    text = _QUOTED.sub(_MARK, reason)
    i = 0
    while True:
        found = [k for k in (text.find("'", i), text.find('"', i)) if k >= 0]
        if not found:
            return text
        j = min(found)
        if text.startswith(_MARK, j):
            i = j + len(_MARK)
            continue
        return text[:j] + "[redacted]"


def _ignored_key(key: str) -> str:
    """A ``record type[:subtype]`` key of ``AgentSession.ignored``: the subtype is the file's own
    word (any text), so it is redacted; the record type is one convmem knows (it was ignored on
    purpose)."""
    head, sep, _ = key.partition(":")
    return f"{head}:[redacted]" if sep else head


def _session(s: AgentSession, counter: Any) -> AgentSession:
    ignored: dict[str, int] = {}
    for key, count in s.ignored:
        k = _ignored_key(key)
        ignored[k] = ignored.get(k, 0) + count
    return dataclasses.replace(
        s,
        compactions=tuple(dataclasses.replace(c, summary=redact_text(
            c.summary, counter.count_text(c.summary)) or "") for c in s.compactions),
        skipped=tuple(dataclasses.replace(x, value=None, reason=_reason(x.reason))
                      for x in s.skipped),
        ignored=tuple(ignored.items()),
    )


def redact_conversation(conv: Conversation, counter: Any = None) -> Conversation:
    """``conv`` with its content replaced by token counts (module docstring). O(text size).

    Args:
        conv: any conversation.
        counter: counts tool-call arguments and summaries (which carry no count of their own);
            default the approximate counter (no tokenizer file needed).

    Raises:
        TypeError: ``conv`` is not a Conversation.
    """
    if not isinstance(conv, Conversation):
        raise TypeError(f"redact_conversation expects a Conversation, got {conv!r}")
    counter = ApproxCounter(per_message_overhead=0) if counter is None else counter
    messages = tuple(
        dataclasses.replace(m, content=redact_text(m.content, m.tokens)) if m.content else m
        for m in conv.messages
    )
    calls = tuple(
        ToolCall(tc.id, tc.name, json.dumps({"redacted_tokens": counter.count_text(tc.arguments)},
                                            separators=(",", ":")), tc.message_id)
        for tc in conv.tool_calls
    )
    env = conv.envelope
    envelope = _session(env, counter) if isinstance(env, AgentSession) else None
    return Conversation(conv.id, conv.user_id, messages, (), calls, source=conv.source,
                        source_format=conv.source_format, records=(), parts=(),
                        provider_roles=conv.provider_roles, envelope=envelope)


def redact_conversations(conversations: Iterable[Conversation],
                         counter: Any = None) -> list[Conversation]:
    """:func:`redact_conversation` of each, in order."""
    counter = ApproxCounter(per_message_overhead=0) if counter is None else counter
    return [redact_conversation(c, counter) for c in conversations]
