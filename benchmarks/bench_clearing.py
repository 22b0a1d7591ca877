"""Drop vs summarize vs clear on the real tau-bench retail conversations: tokens sent, cache breaks.

    .venv/bin/python benchmarks/bench_clearing.py [--file PATH]

For each (trigger T tokens, keep K) setting, every one of the 115 retail conversations (cl100k_base,
content only, as in tests/test_real_retail.py) is replayed through History with every pin and
group policy on and:

- drop: limit T (drop from the oldest end past T);
- summarize: limit T, an extractive summary of T/10 tokens in place of what was dropped;
- clear: clear tool results past T keeping the newest K (placeholder "[cleared]", 4 tokens), then
  drop only if the total is still over a limit of T (the same limit as drop);
- clear+: the same with clear_at_least = 1,000 tokens (fewer, bigger clearings).

Printed per strategy, summed over the conversations: tokens sent (the sum of the context after
every add: one model call per message), cache breaks (adds after which the prompt no longer starts
with the previous prompt: a drop, a new summary, or a clearing before the newest message), messages
dropped and tool results cleared, and the prompt-cache view (convmem.prompt_cache, Anthropic Sonnet
defaults: min 1,024 cacheable tokens, reads 0.1x, writes 1.25x): tokens served from the cache and
the priced cost in USD. Also the no-forgetting baseline. Skips (exit 0 with a reason)
when ../shared/real_data is absent. Nothing here is asserted.

``--speed`` also prints History.add with clearing on (ClearToolUses and ClearThinking, every pin and
group policy on) against the same History without clearing, over 10^5 synthetic tool-heavy
messages: a ratio (best of 5, same process), the measure of the amortized O(1) claim.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
REAL = ROOT.parent / "shared" / "real_data"
if not REAL.is_dir():
    REAL = Path("/work/shared/real_data")
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(REAL / "tokenizers" / "tiktoken_cache"))

from convmem import HistorySettings, load_conversations, replay  # noqa: E402
from convmem.prompt_cache import PROVIDERS, prompt_cache  # noqa: E402
from convmem.replay import tool_names_of  # noqa: E402
from convmem.tokens import make_counter  # noqa: E402

RETAIL = "tau-bench/retail/trajectories/tool-calling-grok-3-0.0_range_0--1_user-grok-3-llm_0921131646.json"
SETTINGS = [(3000, 3), (3000, 1), (4000, 3), (6000, 3)]


def strategies(trigger: int, keep: int) -> dict[str, HistorySettings]:
    base = HistorySettings.all_policies(trigger)
    clear = replace(base, clear_trigger=trigger, clear_keep=keep)
    return {
        "drop": base,
        "summarize": HistorySettings.all_policies(trigger, summary_budget=trigger // 10),
        "clear": clear,
        "clear+": replace(clear, clear_at_least=1000),
    }


def totals(convs, settings: HistorySettings, count_text) -> dict[str, int]:
    out = dict(sent=0, breaks=0, dropped=0, cleared=0, cached=0, cost=0.0)
    for c in convs:
        r = replay(c.messages, settings, count_tokens=count_text, tool_names=tool_names_of(c))
        s = r.stats
        cache = prompt_cache(r, PROVIDERS["anthropic"]).totals
        out["cached"] += cache.cached
        out["cost"] += cache.cost
        out["sent"] += s.tokens_sent
        out["breaks"] += s.prefix_changes
        out["dropped"] += s.messages_dropped
        out["cleared"] += s.messages_cleared
    return out


def rows(convs, count_text, settings=SETTINGS, *, cache: bool = False) -> list[tuple]:
    """``(trigger, keep, strategy, tokens sent, cache breaks, dropped, cleared)`` per strategy,
    plus ``(cached tokens, cost USD)`` when ``cache``."""
    def row(trigger, keep, name, t):
        base = (trigger, keep, name, t["sent"], t["breaks"], t["dropped"], t["cleared"])
        return base + (t["cached"], t["cost"]) if cache else base

    out = [row(None, None, "none", totals(convs, HistorySettings(10**9), count_text))]
    for trigger, keep in settings:
        for name, s in strategies(trigger, keep).items():
            out.append(row(trigger, keep, name, totals(convs, s, count_text)))
    return out


def speed(n: int = 100_000, repeat: int = 5) -> None:
    """Print History.add with clearing against without, over ``n`` tool-heavy messages."""
    import random
    import time

    from convmem import ClearThinking, ClearToolUses, History, Message

    rng = random.Random(7)
    msgs, thinking = [], {}
    while len(msgs) < n:
        i = len(msgs)
        msgs.append(Message(f"a{i}", "assistant", rng.randint(5, 60), tool_call_ids=(f"c{i}",)))
        thinking[f"a{i}"] = 5
        msgs.append(Message(f"t{i}", "tool", rng.randint(10, 800), tool_call_id=f"c{i}"))
        if rng.random() < 0.2:
            msgs.append(Message(f"u{i}", "user", rng.randint(5, 50)))

    def run(**kw) -> float:
        best = float("inf")
        for _ in range(repeat):
            h = History(20_000, pin_system=True, pin_latest_user=True, keep_tool_groups=True,
                        start_on_user=True, **kw)
            add = h.add
            t0 = time.perf_counter()
            for m in msgs:
                add(m)
            best = min(best, time.perf_counter() - t0)
        return best

    base = run()
    clear = run(clear=ClearToolUses(trigger=12_000, keep=3, clear_at_least=2_000),
                clear_thinking=ClearThinking(1), thinking=thinking)
    print(f"History.add over {len(msgs):,} messages: without clearing {base * 1e9 / len(msgs):,.0f} ns/add, "
          f"with clearing {clear * 1e9 / len(msgs):,.0f} ns/add, ratio {clear / base:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", type=Path, default=REAL / RETAIL)
    parser.add_argument("--speed", action="store_true", help="also time History.add with clearing")
    args = parser.parse_args()
    if args.speed:
        speed()
    if not args.file.is_file():
        print(f"skipped: real retail data not found at {args.file} (needs ../shared/real_data)")
        return 0
    counter = make_counter(per_message_overhead=0)
    convs = load_conversations(args.file, counter=counter)
    print(f"{len(convs)} conversations, {sum(c.total_tokens for c in convs):,} tokens ({counter.name})")
    table = rows(convs, counter.count_text, cache=True)
    base = table[0][3]
    print(f"{'trigger':>7} {'keep':>4} {'strategy':<10} {'tokens sent':>12} {'vs none':>7} "
          f"{'cache breaks':>12} {'dropped':>7} {'cleared':>7} {'cached':>11} {'cost $':>8}")
    for trigger, keep, name, sent, breaks, dropped, cleared, cached, cost in table:
        print(f"{trigger if trigger else '-':>7} {keep if keep is not None else '-':>4} {name:<10} "
              f"{sent:>12,} {sent / base:>7.3f} {breaks:>12,} {dropped:>7,} {cleared:>7,} "
              f"{cached:>11,} {cost:>8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
