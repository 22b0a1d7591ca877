"""Following a session file that is still being written (issue 13, item 5): polling, bounded.

:class:`SessionTail` re-reads a local Claude Code / Codex CLI session file when its size or
modification time changed since the last poll, and parses it (a truncated last line is the
record still being written: left out until it is complete). Bounded:

* only files under the allowed roots (:func:`allowed_roots`: ``~/.claude/projects`` and
  ``~/.codex/sessions``, or the ``os.pathsep``-separated ``CONVMEM_SESSION_ROOTS``) are read,
  so a path typed into the page cannot read anything else on the server;
* a file over ``max_bytes`` (the upload cap) stops being followed, with the reason;
* a poll that finds nothing changed costs one ``stat``; a change costs one read and one parse of
  the file (O(size), at most ``max_bytes``).

Tailing is never bound to the URL: a shared link cannot point the server at a file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convmem import FormatError, LoadResult, parse_conversations
from convmem.limits import UPLOAD_MAX_BYTES

__all__ = ["SessionTail", "TailState", "allowed_roots", "check_path"]


def allowed_roots(env: dict[str, str] | None = None) -> list[Path]:
    """The folders a session file may be followed from (resolved)."""
    env = dict(os.environ) if env is None else env
    raw = env.get("CONVMEM_SESSION_ROOTS")
    if raw:
        roots = [Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip()]
    else:
        home = Path(env.get("HOME") or Path.home())
        roots = [home / ".claude" / "projects", home / ".codex" / "sessions"]
    return [r.resolve() for r in roots]


def check_path(text: str, roots: Sequence[Path]) -> Path:
    """The resolved path of a ``.jsonl`` file under one of ``roots``.

    Raises:
        ValueError: a readable message (empty, not .jsonl, outside the roots, not a file).
    """
    text = (text or "").strip()
    if not text:
        raise ValueError("enter the path of a session file (.jsonl)")
    path = Path(text).expanduser().resolve()
    if path.suffix != ".jsonl":
        raise ValueError(f"{text}: a session file ends in .jsonl")
    if not any(path == r or r in path.parents for r in roots):
        shown = ", ".join(str(r) for r in roots)
        raise ValueError(f"{text}: only files under {shown} can be followed (set "
                         "CONVMEM_SESSION_ROOTS to allow another folder)")
    if not path.is_file():
        raise ValueError(f"{text}: no such file")
    return path


@dataclass(frozen=True, slots=True)
class TailState:
    """What the last poll found: the parse (None before the first successful one), the bytes
    read, how many polls re-read the file, whether following stopped, and why."""

    result: LoadResult | None
    size: int
    reads: int
    stopped: bool = False
    message: str = ""


class SessionTail:
    """Polls one session file (module docstring). Not thread-safe: one per browser session."""

    def __init__(self, path: Path, *, max_bytes: int = UPLOAD_MAX_BYTES,
                 counter: Any = None) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.counter = counter
        self._stamp: tuple[int, int] | None = None
        self.state = TailState(None, 0, 0)

    def poll(self) -> bool:
        """Re-read the file if it changed; True when :attr:`state` changed."""
        if self.state.stopped:
            return False
        try:
            st = self.path.stat()
        except OSError as exc:
            self.state = TailState(self.state.result, self.state.size, self.state.reads, True,
                                   f"cannot read {self.path.name}: {exc.strerror or exc}")
            return True
        stamp = (st.st_size, st.st_mtime_ns)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        if st.st_size > self.max_bytes:
            self.state = TailState(self.state.result, st.st_size, self.state.reads, True,
                                   f"{self.path.name} has grown to {st.st_size:,} bytes, over the "
                                   f"{self.max_bytes:,}-byte cap: no longer followed")
            return True
        with self.path.open("rb") as f:
            data = f.read(self.max_bytes + 1)
        try:
            result = parse_conversations(data, source_name=self.path.name,
                                         max_bytes=self.max_bytes, counter=self.counter,
                                         provider_records=False)
            message = ""
        except FormatError as exc:  # e.g. only a first line so far: keep the last good parse
            result, message = self.state.result, str(exc)
        self.state = TailState(result, len(data), self.state.reads + 1, False, message)
        return True
