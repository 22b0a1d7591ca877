"""Token counting speed and memory, as ratios against tiktoken alone in the same process.

    .venv/bin/python benchmarks/bench_tokens.py [--repeat 7] [--mib 40] [--rounds 2] [--no-baseline]

Prints:
1. Speed on the real tau-bench retail texts (../shared/real_data; a generated stand-in of the same
   size when absent), best of --repeat runs, alternating with the baseline: ``counter.count_text`` over every text against
   ``len(encoding.encode_ordinary(text))`` (tiktoken alone); ``count_message`` in chat mode and
   ``count_prompt`` per conversation against the same tiktoken-alone sum; for cl100k_base and
   o200k_base, and the approximation.
2. One single-line message of --mib MiB (prose, spaces every few characters): time (untraced),
   tracemalloc peak (a second, traced run: Python allocations only) and the process's peak RSS for the chunked counter and for tiktoken alone (each in a fresh
   subprocess, so the RSS peaks are its own), and whether the two counts are equal.
3. A text with no space at all (base64, 4 MiB): the hard cuts' count difference against tiktoken
   alone.
4. The approximation's error against both encodings on the same texts.

Ratios, not absolute times, are the measure. Nothing here asserts (tests/test_token_*.py do).
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from convmem.tokens import ApproxCounter, TiktokenCounter, count_prompt, make_counter  # noqa: E402

RETAIL = next(iter(sorted((ROOT.parent / "shared/real_data/tau-bench/retail/trajectories")
                          .glob("*.json"))), None) if (ROOT.parent / "shared").is_dir() else None


def paired(baseline, candidate, repeat: int) -> tuple[float, float]:
    """Best times of baseline and candidate, run alternately (a busy machine slows both alike)."""
    baseline(), candidate()  # warm up
    tb, tc = [], []
    for _ in range(repeat):
        for fn, times in ((baseline, tb), (candidate, tc)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return min(tb), min(tc)


def conversations() -> tuple[list[list[dict]], str]:
    """The retail trajectories, or a generated stand-in (3,800 messages) when they are absent."""
    if RETAIL is not None:
        return [r["traj"] for r in json.loads(RETAIL.read_text())], RETAIL.name
    rng = random.Random(7)
    words = ("order item refund shipping address the a to is for your please 1234567890 "
             "exchange product details W2378156 thank you").split()
    convs = []
    for c in range(115):
        traj = [{"role": "system", "content": " ".join(rng.choices(words, k=600))}]
        for t in range(32):
            traj.append({"role": "user", "content": " ".join(rng.choices(words, k=25))})
            traj.append({"role": "assistant", "content": None, "tool_calls": [{
                "id": f"c{c}_{t}", "type": "function", "function": {
                    "name": "get_order_details", "arguments": json.dumps({"order_id": f"#W{t}"})}}]})
            traj.append({"role": "tool", "tool_call_id": f"c{c}_{t}", "name": "get_order_details",
                         "content": json.dumps({"items": rng.choices(words, k=60)})})
        convs.append(traj)
    return convs, "generated stand-in"


def texts_of(convs: list[list[dict]]) -> list[str]:
    out = []
    for traj in convs:
        for m in traj:
            out.append(m["content"] or "")
            for tc in m.get("tool_calls") or []:
                out += [tc["function"]["name"], tc["function"]["arguments"]]
    return out


def speed(repeat: int) -> None:
    convs, source = conversations()
    texts = texts_of(convs)
    n_msgs = sum(len(t) for t in convs)
    print(f"1. speed on {source}: {len(convs)} conversations, {n_msgs:,} messages, "
          f"{sum(map(len, texts)):,} characters (best of {repeat})")
    for model in ("gpt-4", "gpt-4o"):
        chat = make_counter(model)
        enc = chat.encoding
        bare = make_counter(model, per_message_overhead=0)

        def raw() -> int:
            return sum(len(enc.encode_ordinary(t)) for t in texts)

        def counted() -> int:
            return sum(bare.count_text(t) for t in texts)

        def messages() -> int:
            return sum(chat.count_message(m["role"], m["content"], m.get("tool_calls") or (),
                                          name=m.get("name")) for traj in convs for m in traj)

        def prompts() -> int:
            return sum(count_prompt(traj, counter=chat) for traj in convs)

        rows = [("count_text", counted), ("count_message (chat)", messages),
                ("count_prompt", prompts)]
        print(f"   {chat.encoding_name}: tiktoken alone = encode_ordinary over the same texts "
              f"({raw():,} tokens of content)")
        for label, fn in rows:
            t_raw, t = paired(raw, fn, repeat)
            print(f"     {label:<22} {t:.3f} s vs {t_raw:.3f} s  ratio {t / t_raw:.2f}x  "
                  f"-> {fn():,} tokens")
    approx = ApproxCounter()
    enc = make_counter().encoding
    t_raw, t = paired(lambda: sum(len(enc.encode_ordinary(x)) for x in texts),
                      lambda: sum(approx.count_text(x) for x in texts), repeat)
    print(f"   approx-cl100k-regex count_text {t:.3f} s  ratio {t / t_raw:.2f}x vs cl100k alone")


_CHILD = r"""
import resource, sys, time, tracemalloc
sys.path.insert(0, {root!r})
from convmem.tokens import make_counter
mode, mib = sys.argv[1], int(sys.argv[2])
unit = "Refund 1,234.56 for order #W2378156; the item 6086499569 ships today. "
text = (unit * (mib * 1024 * 1024 // len(unit) + 1))[: mib * 1024 * 1024]
c = make_counter(per_message_overhead=0)
count = c.count_text if mode == "chunked" else (lambda t: len(c.encoding.encode_ordinary(t)))
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
n = count(text)  # timed without tracemalloc (it slows every Python allocation)
dt = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
count(text)
peak = tracemalloc.get_traced_memory()[1]
print(n, dt, peak, rss0, rss)
"""


def huge(mib: int, baseline: bool, rounds: int) -> None:
    print(f"2. one single-line message of {mib} MiB (prose), each run in a fresh process, "
          f"alternating, best of {rounds}:")
    modes = ("chunked", "tiktoken") if baseline else ("chunked",)
    results: dict[str, tuple[int, float, int, int, int]] = {}
    for _ in range(rounds):
        for mode in modes:
            out = subprocess.run(
                [sys.executable, "-c", _CHILD.format(root=str(ROOT)), mode, str(mib)],
                capture_output=True, text=True, check=True).stdout.split()
            row = (int(out[0]), float(out[1]), int(out[2]), int(out[3]), int(out[4]))
            if mode not in results or row[1] < results[mode][1]:
                results[mode] = row
    for mode, (n, dt, peak, rss0, rss) in results.items():
        label = "convmem count_text (chunked)" if mode == "chunked" else "tiktoken encode_ordinary"
        print(f"   {label:<30} {dt:7.2f} s  tracemalloc peak {peak / 2**20:8.1f} MiB  "
              f"peak RSS {rss / 1024:8.1f} MiB (before counting {rss0 / 1024:.1f} MiB)  "
              f"{n:,} tokens")
    if len(results) == 2:
        c, t = results["chunked"], results["tiktoken"]
        print(f"   ratio time {c[1] / t[1]:.2f}x; counts equal: {c[0] == t[0]}")


def hard_cuts() -> None:
    rng = random.Random(3)
    blob = base64.b64encode(rng.randbytes(3 * 2**20)).decode()  # 4 MiB, no space
    exact_counter = make_counter(per_message_overhead=0)
    exact = len(exact_counter.encoding.encode_ordinary(blob))
    chunked = exact_counter.count_text(blob)
    cuts = len(blob) // exact_counter.chunk_chars
    print(f"3. no-space text (base64, {len(blob) / 2**20:.0f} MiB): chunked {chunked:,} vs "
          f"tiktoken {exact:,} tokens: {chunked - exact:+d} over {cuts} hard cuts "
          f"({(chunked - exact) / exact * 100:+.4f} %)")


def approx_error() -> None:
    convs, source = conversations()
    texts = texts_of(convs)
    a = ApproxCounter()
    approx_msgs = []
    exact_msgs = {}
    for model in ("gpt-4", "gpt-4o"):
        c = make_counter(model, per_message_overhead=0)
        exact_msgs[c.encoding_name] = [c.count_text(t) for t in texts]
    approx_msgs = [a.count_text(t) for t in texts]
    print(f"4. approximation vs exact on {source} (content + tool-call names and arguments):")
    for name, ex in exact_msgs.items():
        errs = sorted(abs(x - e) / e for x, e in zip(approx_msgs, ex) if e)
        print(f"   vs {name}: total {sum(approx_msgs):,} vs {sum(ex):,} "
              f"({(sum(approx_msgs) - sum(ex)) / sum(ex) * 100:+.2f} %); per text median "
              f"{statistics.median(errs) * 100:.1f} %, p90 {errs[int(0.9 * len(errs))] * 100:.1f} %")
    for model in ("gpt-4", "gpt-4o"):
        ex, ap = make_counter(model), make_counter(model, approximate=True)
        errs = [abs(count_prompt(t, counter=ap) - count_prompt(t, counter=ex))
                / count_prompt(t, counter=ex) for t in convs]
        print(f"   chat prompts vs {ex.encoding_name}: per conversation median "
              f"{statistics.median(errs) * 100:.2f} %, max {max(errs) * 100:.2f} %")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--mib", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2, help="runs of each huge-line process")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip tiktoken alone on the huge line (about 30 s and 2 GB)")
    args = ap.parse_args(argv)
    speed(args.repeat)
    huge(args.mib, not args.no_baseline, args.rounds)
    hard_cuts()
    approx_error()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
