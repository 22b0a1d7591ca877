"""What Home's upload of a new 10^5-message file costs in ``register_upload``, phase by phase.

    .venv/bin/python benchmarks/bench_upload.py [--messages 100000] [--repeat 3] [--root DIR]

For --repeat different OpenAI JSONL files of one --messages conversation (the file bench_pages.py
uploads, 11.9 MB at 10^5), the CPU seconds (``time.process_time``, median) of the three steps of
``convmem_dashboard.data.register_upload`` after hashing: ``parse_conversations``, the registry's
``check_upload`` and its memory estimate ``estimated_bytes``; and, as the baseline in the same
process, ``json.loads`` of the same bytes with the cyclic collector paused (as the loader pauses
it). Ratios to that baseline are the measure: the machine's speed and load cancel out. ``--root``
imports convmem from another checkout (the code before a change), so two runs one after the other
compare them. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu(step):
    """(result, CPU seconds) of ``step()``."""
    t0 = time.process_time()
    result = step()
    return result, time.process_time() - t0


def json_baseline(blob: bytes) -> float:
    gc.disable()
    try:
        return cpu(lambda: json.loads(blob))[1]
    finally:
        gc.enable()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose code to measure")
    args = ap.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    from convmem import UPLOAD_MAX_BYTES, parse_conversations
    from convmem.synthetic import generate_conversation, to_openai_jsonl
    from convmem_dashboard.uploads import check_upload, estimated_bytes

    times: dict[str, list[float]] = {"parse": [], "check": [], "estimate": [], "json.loads": []}
    for k in range(args.repeat):
        blob = to_openai_jsonl([generate_conversation(args.messages, seed=1_000 + k)]).encode()
        result, t = cpu(lambda: parse_conversations(blob, source_name="x",
                                                    max_bytes=UPLOAD_MAX_BYTES))
        times["parse"].append(t)
        times["check"].append(cpu(lambda: check_upload(result.conversations, "x"))[1])
        nbytes, t = cpu(lambda: estimated_bytes(result.conversations))
        times["estimate"].append(t)
        times["json.loads"].append(json_baseline(blob))
        del result
    med = {name: statistics.median(v) for name, v in times.items()}
    register = med["parse"] + med["check"] + med["estimate"]
    base = med["json.loads"]
    print(f"{args.root}: {args.messages:,} messages, {len(blob) / 1e6:.1f} MB, "
          f"estimate {nbytes:,} bytes; CPU s (median of {args.repeat}) and x json.loads")
    for name in ("parse", "check", "estimate"):
        print(f"  {name:<10} {med[name]:7.3f} s {med[name] / base:6.1f}x")
    print(f"  {'register':<10} {register:7.3f} s {register / base:6.1f}x   (json.loads {base:.3f} s)")


if __name__ == "__main__":
    main()
