"""What the coding-agent session importers share: reading a session JSONL file record by record.

A session file is one conversation spread over many lines (unlike the other JSONL formats, one
conversation a line), so the importers are whole-file (text) formats. Reading never fails a
session on one line: a line that is not a JSON object is kept as a :class:`~convmem.Skipped` with
its line and reason, and a last line cut off mid-record (no final newline: the agent is still
writing the session) is skipped with the reason ``"truncated last line"``.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ..conversations import Skipped
from ..limits import MAX_TOKENS
from ._base import json_fault, short

__all__ = ["SessionLines", "as_int", "first_line_prefix", "read_lines", "usage_faults"]

#: How much of the first line detection looks at (the record's leading keys).
DETECT_CHARS = 4096


def first_line_prefix(line: Any) -> str | None:
    """The first :data:`DETECT_CHARS` characters of a first line, or None for a non-str."""
    return line[:DETECT_CHARS] if isinstance(line, str) else None


class SessionLines:
    """The decoded records of a session file and what reading skipped."""

    __slots__ = ("records", "skipped", "truncated", "ignored")

    def __init__(self) -> None:
        self.records: list[tuple[int, dict[str, Any]]] = []  # (1-based line, record)
        self.skipped: list[Skipped] = []
        self.truncated = False
        self.ignored: Counter[str] = Counter()

    def skip(self, line: int, field: str | None, value: Any, reason: str,
             conversation_id: str | None = None) -> None:
        self.skipped.append(Skipped(conversation_id, line, field,
                                    None if value is None else short(value), reason))


def read_lines(text: str) -> SessionLines:
    """Decode every non-blank line of ``text`` (one JSON object each). O(len(text)). A line may
    open with one UTF-8 byte order mark (session files saved with one, then joined): dropped."""
    out = SessionLines()
    lines = text.split("\n")
    last = len(lines)
    while last > 0 and (not lines[last - 1] or lines[last - 1].isspace()):
        last -= 1
    complete = text.endswith("\n") or text.endswith("\r\n")
    loads = json.loads
    for lineno in range(1, last + 1):
        line = lines[lineno - 1]
        if line.startswith("\ufeff"):
            line = line[1:]
        if not line or line.isspace():
            continue
        try:
            value = loads(line)
        except (ValueError, RecursionError) as exc:
            if lineno == last and not complete:
                out.truncated = True
                out.skip(lineno, None, None, "truncated last line (the session is still being "
                         "written): left out")
            else:
                if isinstance(exc, json.JSONDecodeError):
                    out.skip(lineno, None, None, json_fault(exc, f"column {exc.colno}"))
                else:
                    out.skip(lineno, None, None, f"invalid JSON: {exc}")
            continue
        if not isinstance(value, dict):
            out.skip(lineno, None, value, f"a session record must be a JSON object, got "
                     f"{type(value).__name__}")
            continue
        out.records.append((lineno, value))
    return out


def as_int(value: Any) -> int:
    """A usage field as an int in [0, MAX_TOKENS] (missing, null or malformed: 0; see
    :func:`usage_faults` to say which were malformed)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        return 0
    return value


def usage_faults(usage: dict[str, Any], keys: Any) -> list[tuple[str, Any]]:
    """``(key, value)`` of each usage field present (not null) that :func:`as_int` reads as 0
    because it is malformed: not an int, a bool, negative, or above MAX_TOKENS. The importers
    note them in ``AgentSession.skipped``, so a usage row read as 0 is never silent."""
    faults = []
    for key in keys:
        value = usage.get(key)
        if value is not None and (isinstance(value, bool) or as_int(value) != value):
            faults.append((key, value))
    return faults
