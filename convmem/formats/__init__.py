"""Conversation file formats: one module per provider format, registered in :data:`FORMATS`.

Each module defines ``FORMAT``, a :class:`Format` (name, description, detect, parse, dump); the
shared :class:`~convmem.formats._base.Builder` does message ids, role mapping, tool-call linking
(reused and missing ids, legacy functions), token counting and listing ids. Adding a format is one
new module plus one line in ``_MODULES`` below.

========================= ========================================================================
``openai-chat``           OpenAI Chat Completions messages (JSON list, ``{messages}``, JSONL)
``openai-responses``      OpenAI Responses API items (``message``, ``function_call``, ...)
``anthropic``             Anthropic Messages (``{system?, messages}``, content blocks)
``langchain``             LangChain ``messages_to_dict`` output (``{"type", "data"}``)
``gemini``                Gemini ``contents`` (``functionCall`` / ``functionResponse`` parts)
``tau-bench``             tau-bench run files (rows with ``traj``)
``csv``                   CSV rows ``id,role,tokens[,...]``
``claude-code``           Claude Code session JSONL (one session a file, ``parentUuid`` threads)
``codex-cli``             Codex CLI rollout JSONL (``session_meta``, ``response_item``, ...)
========================= ========================================================================

Aliases kept from earlier versions: ``"auto"`` (detect), ``"openai"`` (openai-chat), ``"jsonl"``
(detect, one conversation per line).
"""

from __future__ import annotations

from ._base import Format
from . import (  # noqa: E402
    anthropic,
    claude_code,
    codex_cli,
    csv_rows,
    gemini,
    langchain,
    openai_chat,
    openai_responses,
    tau_bench,
)

__all__ = ["ALIASES", "DETECT_ORDER", "FORMATS", "Format", "RECORD_KEYS"]

_MODULES = (openai_chat, openai_responses, anthropic, langchain, gemini, tau_bench, csv_rows,
            claude_code, codex_cli)

#: name -> Format, every supported format.
FORMATS: dict[str, Format] = {m.FORMAT.name: m.FORMAT for m in _MODULES}
#: Other accepted ``format`` values: alias -> (format name or None for detection, JSONL only).
ALIASES: dict[str, tuple[str | None, bool]] = {
    "auto": (None, False),
    "openai": ("openai-chat", False),
    "jsonl": (None, True),
}
#: Detection order for JSON records: the most specific first (openai-chat accepts the most).
DETECT_ORDER: tuple[Format, ...] = tuple(
    FORMATS[n] for n in ("tau-bench", "openai-responses", "langchain", "gemini", "anthropic",
                         "openai-chat")
)
#: Keys that mark an object as a conversation record (so a JSON list of them is many records).
RECORD_KEYS = ("messages", "traj", "contents", "input")
