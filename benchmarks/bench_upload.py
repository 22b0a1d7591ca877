"""What Your data's upload of a new 10^5-message file costs in ``register_upload``, phase by phase.

    .venv/bin/python benchmarks/bench_upload.py [--messages 100000] [--repeat 3] [--root DIR]
                                                [--against DIR]

For --repeat different OpenAI JSONL files of one --messages conversation (the file bench_pages.py
uploads, 11.9 MB at 10^5), the CPU seconds (``time.process_time``, median) of the three steps of
``convmem_dashboard.data.register_upload`` after hashing: ``parse_conversations``, the registry's
``check_upload`` and its memory estimate ``estimated_bytes``; and, as the baseline in the same
process, ``json.loads`` of the same bytes with the cyclic collector paused (as the loader pauses
it). Ratios to that baseline are the measure: the machine's speed and load cancel out. ``--root``
imports convmem from another checkout (the code before a change), so two runs one after the other
compare them. ``--against DIR`` also loads DIR's convmem in this process (as the package
``convmem_before``) and times both loaders on the same files, alternating which goes first, with
``provider_records=False`` as the server loads uploads: a same-process A/B, the firm figure on a
loaded machine. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
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


def load_before(root: Path):
    """``root``'s convmem package, imported as ``convmem_before`` (its imports are relative)."""
    path = root.resolve() / "convmem"
    spec = importlib.util.spec_from_file_location("convmem_before", path / "__init__.py",
                                                  submodule_search_locations=[str(path)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["convmem_before"] = module
    spec.loader.exec_module(module)
    return module


def same_process(blobs: list[bytes], before, after) -> None:
    """CPU of each loader's ``parse_conversations(provider_records=False)`` on each file,
    alternating which goes first; medians and their ratio."""
    times: dict[str, list[float]] = {"before": [], "after": []}
    for k, blob in enumerate(blobs):
        order = [("before", before), ("after", after)]
        for name, module in order if k % 2 == 0 else order[::-1]:
            gc.collect()
            result, t = cpu(lambda: module.parse_conversations(
                blob, source_name="x", max_bytes=module.UPLOAD_MAX_BYTES, provider_records=False))
            times[name].append(t)
            del result
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"  same process, provider_records=False, {len(blobs)} files: parse before "
          f"{med['before']:.3f} s, after {med['after']:.3f} s, after / before "
          f"{med['after'] / med['before']:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose code to measure")
    ap.add_argument("--against", type=Path, default=None,
                    help="another checkout whose loader to time in this process too")
    args = ap.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    from convmem import UPLOAD_MAX_BYTES, parse_conversations
    from convmem.synthetic import generate_conversation, to_openai_jsonl
    from convmem_dashboard.uploads import check_upload, estimated_bytes

    times: dict[str, list[float]] = {"parse": [], "check": [], "estimate": [], "json.loads": []}
    blobs = []
    for k in range(args.repeat):
        blob = to_openai_jsonl([generate_conversation(args.messages, seed=1_000 + k)]).encode()
        blobs.append(blob)
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
    if args.against is not None:
        import convmem

        same_process(blobs, load_before(args.against), convmem)


if __name__ == "__main__":
    main()
