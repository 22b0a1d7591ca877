"""Replay with summaries: ExtractiveSummarizer now against the one on main before issue 10 (the
whole summary text counted at every compaction, every line of the previous summary re-read).

    .venv/bin/python benchmarks/bench_summaries.py [--n 20000] [--old path/to/old_summarizers.py]
        [--replay-only]
    .venv/bin/python benchmarks/bench_summaries.py --before REF [--n 100000] [--repeat 3]

``--before REF`` (e.g. ``main``): replay() with summaries, this tree's convmem against REF's
(``git archive REF convmem`` imported as a second package, ``convmem_before``, in this process),
interleaved: CPU seconds of a first replay (process-wide line caches emptied, as a new process)
and of the next limits (caches warm, as each limit step on the Token budget page), each with no
other policy (replay's walk) and with all four policies (the policy walk since the sumpol branch;
History.add before it), and the ratios. The
summaries' ids, tokens and texts and the records are checked equal. Prints nothing else.

Both run in this process, interleaved, on the same synthetic conversation (convmem.synthetic,
seed 7) and settings (limit 32,000 tokens, summary budget 3,000 tokens: the Token budget page's
defaults at 10^5 messages), so the machine's load cancels out of the ratio. The old module is read
from ``git show main~:convmem/summarizers.py`` saved to a file (--old). Prints seconds per replay
(median) and the ratio. Nothing asserts; both must give equal summaries (checked).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TIKTOKEN_CACHE = ROOT.parent / "shared" / "real_data" / "tokenizers" / "tiktoken_cache"
if TIKTOKEN_CACHE.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))

from convmem import History, replay  # noqa: E402
from convmem.replay import HistorySettings  # noqa: E402
from convmem.summarizers import ExtractiveSummarizer, _LINE_MEMOS  # noqa: E402
from convmem.synthetic import generate_conversation  # noqa: E402
from convmem.tokens import default_counter  # noqa: E402


def load_old(path: str):
    spec = importlib.util.spec_from_file_location("convmem._old_summarizers", path)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "convmem"
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod.ExtractiveSummarizer


def run(messages, cls, limit: int, budget: int, policies: dict) -> tuple[float, list]:
    h = History(limit, summarizer=cls(max_tokens=budget), summary_budget=budget, **policies)
    made = []
    t0 = time.perf_counter()
    for m in messages:
        h.add(m)
        if h.summary is not None and (not made or made[-1] is not h.summary):
            made.append(h.summary)
    return time.perf_counter() - t0, made


def replay_rows(messages, old, repeat: int, limit: int = 32_000, budget: int = 3_000) -> None:
    """replay() with summaries (what the Token budget page runs per rerun): now (deferred
    summaries, Replay.summaries a lazy SummaryLog, and the walk where it applies) against eager
    ones through History.add (every summary's text built: this module's summarizer with
    deferral off, and the old module's), and against the same replay without summaries. "first" empties the process-wide line caches (a new process),
    "warm" keeps them (another limit of the same conversation). Interleaved; medians."""
    replay_module = sys.modules["convmem.replay"]  # (convmem.replay is also the function)
    old._defer, old._deferred = (lambda self: None), False  # the old one knows no deferral
    from convmem import summarizers as sm

    def clear() -> None:
        _LINE_MEMOS.clear(), sm._LINE_CACHE.clear(), sm._LINE_KEPT.clear(), sm._CLIP_MEMOS.clear()

    def timed(settings, mode: str) -> tuple[float, object]:
        saved = (replay_module.ExtractiveSummarizer, ExtractiveSummarizer._defer, replay_module._summary_walk_applies,
                 replay_module._policy_walk_applies)
        if mode != "deferred":
            # Through History.add, as before (neither walk: both need the deferred summarizer).
            replay_module._summary_walk_applies = replay_module._policy_walk_applies = lambda *a: False
        if mode == "old":
            replay_module.ExtractiveSummarizer = old  # HistorySettings.build makes the old one
        elif mode == "eager":
            ExtractiveSummarizer._defer = lambda self: None
        try:
            t0 = time.perf_counter()
            r = replay(messages, settings)
            return time.perf_counter() - t0, r
        finally:
            (replay_module.ExtractiveSummarizer, ExtractiveSummarizer._defer, replay_module._summary_walk_applies,
             replay_module._policy_walk_applies) = saved

    for name, ctor in (("no pins", HistorySettings), ("all policies", HistorySettings.all_policies)):
        plain, with_sum = ctor(limit), ctor(limit, summary_budget=budget)
        times: dict[str, list[float]] = {}
        kept: dict[str, object] = {}
        for _ in range(repeat):
            for mode in ("old", "eager", "deferred"):
                clear()
                first, r = timed(with_sum, mode)
                warm, r = timed(with_sum, mode)
                times.setdefault(mode + " first", []).append(first)
                times.setdefault(mode + " warm", []).append(warm)
                kept[mode] = r
            times.setdefault("no summaries", []).append(timed(plain, "deferred")[0])
        med = {k: statistics.median(v) for k, v in times.items()}
        same = list(kept["deferred"].summaries) == list(kept["old"].summaries)
        eager_chars = sum(len(m.content) for m in kept["old"].summaries if m is not None)
        log_chars = sum(map(len, kept["deferred"].summaries._spans[0]))
        base = med["no summaries"]
        print(f"  replay, {name}: no summaries {base:.3f} s")
        for mode in ("old", "eager", "deferred"):
            f, w = med[mode + " first"], med[mode + " warm"]
            print(f"    {mode:<8} first {f:6.3f} s  warm {w:6.3f} s  (warm - no summaries {w - base:+.3f} s;"
                  f" old/this: first {med['old first'] / f:4.1f}x, warm {med['old warm'] / w:4.1f}x)")
        print(f"    {len(kept['deferred'].summaries):,} summaries equal to the old ones: {same}; text kept:"
              f" eager {eager_chars / 1e6:,.1f} M chars, deferred log {log_chars / 1e6:,.1f} M chars")


def walk_rows(messages, repeat: int, limit: int = 32_000, budget: int = 3_000) -> None:
    """replay() and sweep_limits (5 limits) with summaries and no other policy: replay's walk
    against the same through History.add (the walk switched off), line caches warm."""
    replay_module = sys.modules["convmem.replay"]
    from convmem import sweep_limits

    saved = replay_module._summary_walk_applies
    settings = HistorySettings(limit, summary_budget=budget)
    limits = [limit - 2_000 * k for k in range(5)]
    replay(messages, settings)  # warm the line caches
    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        for walk in (False, True):
            if not walk:
                replay_module._summary_walk_applies = lambda *a: False
            try:
                t0 = time.perf_counter()
                replay(messages, settings)
                t1 = time.perf_counter()
                sweep_limits(messages, settings, limits)
                t2 = time.perf_counter()
            finally:
                replay_module._summary_walk_applies = saved
            times.setdefault(f"replay {walk}", []).append(t1 - t0)
            times.setdefault(f"sweep {walk}", []).append(t2 - t1)
    med = {k: statistics.median(v) for k, v in times.items()}
    for what in ("replay", "sweep"):
        h, w = med[f"{what} False"], med[f"{what} True"]
        label = "replay" if what == "replay" else "sweep_limits, 5 limits"
        print(f"  {label:<24} History.add {h:6.3f} s   walk {w:6.3f} s   ({h / w:4.1f}x)")


def import_before(ref: str) -> None:
    """Import REF's convmem package as ``convmem_before`` from a temporary copy (its modules
    import each other relatively, so the copy is a package of its own)."""
    import subprocess
    import tarfile
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="convmem_before_"))
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "convmem"], check=True, capture_output=True).stdout
    path = tmp / "convmem.tar"
    path.write_bytes(blob)
    with tarfile.open(path) as tar:
        tar.extractall(tmp, filter="data")
    (tmp / "convmem").rename(tmp / "convmem_before")
    sys.path.insert(0, str(tmp))
    importlib.import_module("convmem_before")


def _summary_outputs(r) -> tuple:
    """What a replay with summaries shows: its records, the summaries' ids, tokens and texts."""
    events = [(c.step, c.total_before, c.total_after, c.dropped, c.summary) for c in r.compactions]
    return events, [(m.id, m.tokens, m.content) for m in r.summaries], r.totals


def before_rows(ref: str, n: int, repeat: int, limit: int = 32_000, budget: int = 3_000) -> None:
    """replay() with summaries, this tree against REF (see the module docstring), CPU seconds."""
    import_before(ref)
    mod = sys.modules
    packages = {k: (mod[f"{name}.replay"], mod[f"{name}.summarizers"])
                for k, name in (("before", "convmem_before"), ("now", "convmem"))}
    convs = {k: mod[f"{name}.synthetic"].generate_conversation(n, seed=7).messages
             for k, name in (("before", "convmem_before"), ("now", "convmem"))}
    for name in ("convmem_before", "convmem"):
        mod[f"{name}.tokens"].default_counter().count_text("warm up")
    limits = [limit - 1_000 * k for k in range(repeat + 1)]
    print(f"replay() with summaries, {n:,} synthetic messages, budget {budget:,} tokens: {ref} against this tree"
          f" (CPU s, medians of {repeat})", flush=True)
    for name, policies in (("no other policy (walk)", {}),
                           ("all four policies (REF's path; now the policy walk)", dict(pin_system=True, pin_latest_user=True,
                                                                     keep_tool_groups=True, start_on_user=True))):
        times: dict[str, list[float]] = {}
        outputs: dict[str, list] = {"before": [], "now": []}
        for _ in range(repeat):
            for key, (rp, sm) in packages.items():
                for cache in (sm._LINE_MEMOS, sm._LINE_CACHE, sm._LINE_KEPT, sm._CLIP_MEMOS):
                    cache.clear()
                for i, lim in enumerate(limits):
                    settings = rp.HistorySettings(lim, summary_budget=budget, **policies)
                    t0 = time.process_time()
                    r = rp.replay(convs[key], settings)
                    times.setdefault(f"{key} {'first' if i == 0 else 'warm'}", []).append(time.process_time() - t0)
                    if len(outputs[key]) < len(limits):
                        outputs[key].append(_summary_outputs(r))
        med = {k: statistics.median(v) for k, v in times.items()}
        same = all(repr(a) == repr(b) for a, b in zip(outputs["before"], outputs["now"]))
        print(f"  {name}: equal outputs at {len(limits)} limits: {same}")
        for kind in ("first", "warm"):
            b, a = med[f"before {kind}"], med[f"now {kind}"]
            print(f"    {kind:<6} before {b:6.3f} s   now {a:6.3f} s   ({b / a:4.1f}x)", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20_000, help="messages")
    p.add_argument("--old", default="/tmp/old_summarizers.py", help="the old summarizers.py")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--replay-only", action="store_true", help="only the replay() rows (deferred summaries)")
    p.add_argument("--before", metavar="REF", help="only: replay() with summaries, REF's convmem against this one")
    args = p.parse_args()
    if args.before:
        before_rows(args.before, args.n, args.repeat)
        return
    old = load_old(args.old)
    default_counter().count_text("warm up")
    msgs = generate_conversation(args.n, seed=7).messages
    print(f"replay() with summaries, {args.n:,} synthetic messages, limit 32,000, budget 3,000 tokens")
    replay_rows(msgs, old, args.repeat)
    print("summaries with no other policy: replay's walk against History.add (line caches warm)")
    walk_rows(msgs, args.repeat)
    if args.replay_only:
        return
    combos = {"none": {}, "start_on_user": {"start_on_user": True},
              "all four": {"pin_system": True, "pin_latest_user": True, "keep_tool_groups": True, "start_on_user": True}}
    print(f"History with ExtractiveSummarizer, {args.n:,} synthetic messages, limit 32,000, budget 3,000 tokens")
    for name, pol in combos.items():
        t_old, t_cold, t_new = [], [], []
        for _ in range(args.repeat):
            a, made_old = run(msgs, old, 32_000, 3_000, pol)
            _LINE_MEMOS.clear()
            b, made_new = run(msgs, ExtractiveSummarizer, 32_000, 3_000, pol)  # line memo empty
            c, _ = run(msgs, ExtractiveSummarizer, 32_000, 3_000, pol)  # line memo warm (another setting)
            t_old.append(a), t_cold.append(b), t_new.append(c)
        same = [(m.content, m.tokens) for m in made_old] == [(m.content, m.tokens) for m in made_new]
        o, b, c = (statistics.median(x) for x in (t_old, t_cold, t_new))
        print(f"  {name:<14} old {o:7.3f} s   new {b:7.3f} s ({o / b:5.1f}x)   new, lines memoized {c:7.3f} s "
              f"({o / c:5.1f}x)   {len(made_new):,} summaries, equal: {same}")
    # the replay the page makes, for scale
    t0 = time.perf_counter()
    replay(msgs, HistorySettings(32_000))
    print(f"  (replay without summaries, same messages: {time.perf_counter() - t0:.3f} s)")


if __name__ == "__main__":
    main()
