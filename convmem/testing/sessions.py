"""Generated coding-agent sessions: Claude Code JSONL with usage following a known model.

:func:`claude_code_session` writes a session of ``records`` records (user prompts, assistant
tool calls, tool results, answers, and every ``compact_every`` records a compaction boundary and
its summary). Each assistant response reports a prompt of exactly
``round(ratio * content + overhead * messages + base)`` tokens, where ``content`` is the
content-only approximate count (``ApproxCounter(per_message_overhead=0)``) of the ``messages``
messages in context since the last compaction: what :func:`convmem.calibration.calibrate` must
recover. Seeded and deterministic. O(records).

>>> from convmem import parse_conversations
>>> text = claude_code_session(40, seed=1, compact_every=20)
>>> conv = parse_conversations(text, counter=None)[0]
>>> conv.source_format, len(conv.envelope.compactions) >= 1
('claude-code', True)
"""

from __future__ import annotations

import json
import random

from ..formats._base import compact_json
from ..tokens import ApproxCounter

__all__ = ["claude_code_session"]

_WORDS = ("the", "test", "file", "fails", "because", "fixture", "sleep", "import", "def", "class",
          "return", "assert", "value", "path", "config", "retry", "token", "budget", "cache",
          "summary", "src/app/main.py", "tests/test_app.py", "==", "(", ")", "{", "}", "42")


def claude_code_session(records: int, *, seed: int = 0, ratio: float = 1.0, overhead: float = 0.0,
                        base: float = 0.0, compact_every: int = 0,
                        truncate_last: bool = False) -> str:
    """The text of a generated Claude Code session (module docstring)."""
    rng = random.Random(seed)
    count = ApproxCounter(per_message_overhead=0)
    out: list[str] = []
    context: list[int] = []  # content-only counts of the messages in context
    parent: str | None = None
    k = 0
    dump = json.JSONEncoder(separators=(",", ":")).encode

    def text(lo: int, hi: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))

    def emit(rec: dict) -> None:
        nonlocal parent, k
        k += 1
        uuid = f"g{k}"
        rec = {"parentUuid": parent, "isSidechain": False, "userType": "external",
               "cwd": "/home/dev/app", "sessionId": "gen", "version": "1.0.80", **rec,
               "uuid": uuid}
        out.append(dump(rec))
        parent = uuid

    step = 0
    while k < records:
        step += 1
        if compact_every and len(out) and step % compact_every == 0:
            summary = "This session is being continued from a previous conversation. " + text(
                20, 60)
            pre = round(ratio * sum(context) + overhead * len(context) + base)
            out.append(dump({"parentUuid": None, "logicalParentUuid": parent,
                             "isSidechain": False, "sessionId": "gen", "type": "system",
                             "subtype": "compact_boundary", "uuid": f"b{step}",
                             "compactMetadata": {"trigger": "auto", "preTokens": pre}}))
            k += 1
            parent = f"b{step}"
            emit({"type": "user", "isCompactSummary": True,
                  "message": {"role": "user", "content": summary}})
            context = [count.count_message("user", summary)]
            continue
        phase = step % 3
        if phase == 1:
            prompt = text(3, 30)
            emit({"type": "user", "message": {"role": "user", "content": prompt}})
            context.append(count.count_message("user", prompt))
            continue
        prompt_tokens = round(ratio * sum(context) + overhead * len(context) + base)
        read = rng.randint(0, prompt_tokens)
        write = rng.randint(0, prompt_tokens - read)
        usage = {"input_tokens": prompt_tokens - read - write,
                 "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                 "output_tokens": rng.randint(1, 400)}
        if phase == 2:  # a tool call and its result
            call_id = f"toolu_{step}"
            args = {"command": text(1, 8)}
            emit({"type": "assistant", "message": {
                "id": f"msg_{step}", "role": "assistant", "model": "claude-sonnet-4",
                "content": [{"type": "tool_use", "id": call_id, "name": "Bash", "input": args}],
                "usage": usage}})
            context.append(count.count_message("assistant", None, [("Bash", compact_json(args))]))
            result = text(5, 200)
            emit({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": result}]}})
            context.append(count.count_message("user", result))
        else:
            answer = text(5, 80)
            emit({"type": "assistant", "message": {
                "id": f"msg_{step}", "role": "assistant", "model": "claude-sonnet-4",
                "content": [{"type": "text", "text": answer}], "usage": usage}})
            context.append(count.count_message("assistant", answer))
    body = "\n".join(out) + "\n"
    if truncate_last:
        body = body[: len(body) - 1 - len(out[-1]) // 2]
    return body
