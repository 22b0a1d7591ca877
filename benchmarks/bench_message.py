"""Message construction cost, as ratios against a bare frozen slotted dataclass in the same process.

    .venv/bin/python benchmarks/bench_message.py [--n 50000] [--repeat 7] [--before PATH]

Issue 9 added checks to ``Message.__post_init__`` (tokens <= MAX_TOKENS, no lone surrogate in any
str field). Message is built once per message of every upload, replay and store, so its cost is
measured here: for each field mix, ns per construction of

- a bare ``@dataclass(frozen=True, slots=True)`` with the same fields and no checks (baseline);
- ``convmem.Message`` (this checkout);
- with ``--before PATH``: the Message of another checkout's ``convmem/message.py`` (e.g.
  /work/main/convmem/message.py, before the change), loaded in this same process.

Ratios, not absolute times, are the measure: the machine's speed cancels out. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from convmem import Message  # noqa: E402


@dataclass(frozen=True, slots=True)
class Bare:
    id: str
    role: str
    tokens: int
    content: str | None = None
    tool_call_ids: tuple[str, ...] = ()
    tool_call_id: str | None = None


CASES = {
    "ascii content": (("a1", "user", 12), {"content": "hello world " * 20}),
    "non-ASCII content": (("a1", "user", 12), {"content": "héllo wörld ✓ " * 20}),
    "tool calls": (("a1", "assistant", 12), {"content": "ok", "tool_call_ids": ("c1", "c2")}),
    "no content": (("a1", "user", 12), {}),
}


def best_ns(cls, args, kwargs, n: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            cls(*args, **kwargs)
        times.append(time.perf_counter() - t0)
    return min(times) / n * 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--before", type=Path, help="another checkout's convmem/message.py")
    a = ap.parse_args()
    before = None
    if a.before:
        spec = importlib.util.spec_from_file_location("message_before", a.before)
        module = importlib.util.module_from_spec(spec)
        sys.modules["message_before"] = module  # dataclasses looks its module up
        spec.loader.exec_module(module)
        before = module.Message
    for name, (args, kwargs) in CASES.items():
        bare = best_ns(Bare, args, kwargs, a.n, a.repeat)
        now = best_ns(Message, args, kwargs, a.n, a.repeat)
        line = f"{name:18s} bare {bare:6.0f} ns  Message {now:6.0f} ns ({now / bare:4.2f}x bare)"
        if before is not None:
            old = best_ns(before, args, kwargs, a.n, a.repeat)
            line += f"  before {old:6.0f} ns ({old / bare:4.2f}x bare; now/before {now / old:4.2f})"
        print(line)


if __name__ == "__main__":
    main()
