"""Parse speed per format, as ratios against json.loads per line run in the same process.

    .venv/bin/python benchmarks/bench_parse.py [--messages 100000] [--repeat 5] [--formats a,b]

Builds a file of about --messages messages per format (the real tau-bench retail conversations
cycled when ../shared/real_data is present, else seeded synthetic ones, converted with
``dump_conversations``), then prints, per format (best of --repeat runs):

- MB/s of the baseline: ``json.loads`` of each line (JSONL formats), of the whole document
  (tau-bench), or ``csv.reader`` over the rows (CSV), after decoding the bytes: no convmem;
  then the same baseline with the cyclic garbage collector paused, as convmem's loader pauses it
  (column "base-gc"), so both ratios are shown;
- MB/s of ``parse_conversations`` without token counting (a counter that returns 0: what a file
  costs to read, links, ids and listings included), and the ratio to the baseline (goal: <= 2);
- MB/s with token counting (the default counter: tiktoken cl100k_base when its file is found),
  and its ratio.

Then a generated coding-agent session (``--session-records``, default 10^4 records:
:func:`convmem.testing.sessions.claude_code_session`, with compactions) read as ``claude-code``,
and the same conversation dumped as a ``codex-cli`` rollout: MB/s of json.loads per line, of
``parse_conversations`` (no token counting), and their ratio.

Ratios, not absolute times, are the measure: the machine's speed cancels out. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import csv
import gc
import io
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from convmem import dump_conversations, load_conversations, parse_conversations  # noqa: E402
from convmem.conversations import Conversation  # noqa: E402
from convmem.formats import FORMATS  # noqa: E402
from convmem.synthetic import generate_shoppers  # noqa: E402
from convmem.tokens import default_counter  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "real_data"
TIKTOKEN_CACHE = SHARED / "tokenizers" / "tiktoken_cache"
if TIKTOKEN_CACHE.is_dir():  # an offline tokenizer for the token-counting column
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))

RETAIL = (Path(__file__).resolve().parent.parent.parent / "shared/real_data/tau-bench/retail/"
          "trajectories/tool-calling-grok-3-0.0_range_0--1_user-grok-3-llm_0921131646.json")


BIG = 10**10


class Zero:
    """A counter that counts nothing: parse cost without tokenizing."""

    name = "zero"

    def count_text(self, text: str) -> int:
        return 0

    def count_message(self, role, content, tool_calls=(), name=None, images=()) -> int:
        return 0


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def source_conversations(n_messages: int) -> tuple[list[Conversation], str]:
    if RETAIL.is_file():
        base = list(load_conversations(RETAIL, counter=Zero()))
        origin = "tau-bench retail (cycled)"
    else:
        base = generate_shoppers(seed=3, n_shoppers=20, conversations_per_shopper=(3, 6),
                                 counter=Zero())
        origin = "synthetic shoppers (cycled; no ../shared)"
    out: list[Conversation] = []
    total = 0
    k = 0
    while total < n_messages:
        for c in base:
            out.append(Conversation(f"{c.id}~{k}", c.user_id, c.messages, c.listing_ids,
                                    c.tool_calls))
            total += len(c.messages)
            if total >= n_messages:
                break
        k += 1
    return out, origin


def baseline(fmt: str, data: bytes):
    """Decoding only, as a user would read the file: bytes -> text -> values."""
    if fmt == "tau-bench":
        return lambda: json.loads(data.decode())
    if fmt == "csv":
        return lambda: list(csv.reader(io.StringIO(data.decode(), newline="")))
    loads = json.loads
    return lambda: [loads(ln) for ln in data.decode().split("\n") if ln]


def no_gc(fn):
    def run():
        gc.disable()
        try:
            return fn()
        finally:
            gc.enable()

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--no-tokens", action="store_true", help="skip the token-counting column")
    ap.add_argument("--session-records", type=int, default=10_000,
                    help="records of the generated coding-agent session (0: skip)")
    args = ap.parse_args()
    convs, origin = source_conversations(args.messages)
    n_msgs = sum(len(c.messages) for c in convs)
    counter = default_counter()
    print(f"Python {sys.version.split()[0]}; {n_msgs:,} messages in {len(convs):,} conversations "
          f"from {origin}; best of {args.repeat}; counter with tokens: {counter.name}")
    print(f"{'format':<18}{'MB':>6}{'base MB/s':>11}{'base-gc':>9}{'parse MB/s':>12}"
          f"{'ratio':>7}{'vs -gc':>8}{'+tokens MB/s':>14}{'ratio':>7}")
    for fmt in args.formats.split(","):
        text = dump_conversations(convs, fmt)
        if fmt == "tau-bench":  # distinct ids: trial = the cycle index is already in task_id
            rows = json.loads(text)
            for k, row in enumerate(rows):
                row["trial"] = k
            text = json.dumps(rows, ensure_ascii=False)
        data = text.encode()
        mb = len(data) / 1e6
        check = parse_conversations(data, counter=Zero(), max_bytes=BIG)
        assert not check.skipped and sum(len(c.messages) for c in check) >= n_msgs * 0.99, fmt
        t_base = best(baseline(fmt, data), args.repeat)
        t_nogc = best(no_gc(baseline(fmt, data)), args.repeat)
        t_parse = best(lambda d=data: parse_conversations(d, counter=Zero(), max_bytes=BIG),
                       args.repeat)
        line = (f"{fmt:<18}{mb:>6.1f}{mb / t_base:>11.1f}{mb / t_nogc:>9.1f}{mb / t_parse:>12.1f}"
                f"{t_parse / t_base:>7.2f}{t_parse / t_nogc:>8.2f}")
        if not args.no_tokens:
            t_tok = best(lambda d=data: parse_conversations(d, counter=counter, max_bytes=BIG),
                         max(1, args.repeat // 2))
            line += f"{mb / t_tok:>14.1f}{t_tok / t_base:>7.2f}"
        print(line, flush=True)
    if args.session_records:
        session_bench(args.session_records, args.repeat)


def session_bench(records: int, repeat: int) -> None:
    """A generated Claude Code session, and the same conversation as a Codex rollout."""
    from convmem.testing.sessions import claude_code_session

    text = claude_code_session(records, seed=11, ratio=1.2, overhead=5, base=9000,
                               compact_every=200)
    conv = parse_conversations(text, counter=Zero(), max_bytes=BIG)[0]
    rollout = dump_conversations([conv], "codex-cli")
    print(f"\ncoding-agent session: {records:,} generated records, {len(conv.messages):,} "
          f"messages, {len(conv.envelope.compactions)} compactions; best of {repeat}")
    print(f"{'format':<18}{'MB':>6}{'base MB/s':>11}{'parse MB/s':>12}{'ratio':>7}")
    for fmt, body in (("claude-code", text), ("codex-cli", rollout)):
        data = body.encode()
        mb = len(data) / 1e6
        got = parse_conversations(data, counter=Zero(), max_bytes=BIG)
        assert got.format == fmt and len(got[0].messages) == len(conv.messages), fmt
        t_base = best(baseline(fmt, data), repeat)
        t_parse = best(lambda d=data: parse_conversations(d, counter=Zero(), max_bytes=BIG),
                       repeat)
        print(f"{fmt:<18}{mb:>6.1f}{mb / t_base:>11.1f}{mb / t_parse:>12.1f}"
              f"{t_parse / t_base:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
