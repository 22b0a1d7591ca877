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
dropped and tool results cleared. Also the no-forgetting baseline. Skips (exit 0 with a reason)
when ../shared/real_data is absent. Nothing here is timed or asserted.
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
    out = dict(sent=0, breaks=0, dropped=0, cleared=0)
    for c in convs:
        s = replay(c.messages, settings, count_tokens=count_text, tool_names=tool_names_of(c)).stats
        out["sent"] += s.tokens_sent
        out["breaks"] += s.prefix_changes
        out["dropped"] += s.messages_dropped
        out["cleared"] += s.messages_cleared
    return out


def rows(convs, count_text, settings=SETTINGS) -> list[tuple]:
    """``(trigger, keep, strategy, tokens sent, cache breaks, dropped, cleared)`` per strategy."""
    base = totals(convs, HistorySettings(10**9), count_text)
    out = [(None, None, "none", base["sent"], base["breaks"], 0, 0)]
    for trigger, keep in settings:
        for name, s in strategies(trigger, keep).items():
            t = totals(convs, s, count_text)
            out.append((trigger, keep, name, t["sent"], t["breaks"], t["dropped"], t["cleared"]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", type=Path, default=REAL / RETAIL)
    args = parser.parse_args()
    if not args.file.is_file():
        print(f"skipped: real retail data not found at {args.file} (needs ../shared/real_data)")
        return 0
    counter = make_counter(per_message_overhead=0)
    convs = load_conversations(args.file, counter=counter)
    print(f"{len(convs)} conversations, {sum(c.total_tokens for c in convs):,} tokens ({counter.name})")
    table = rows(convs, counter.count_text)
    base = table[0][3]
    print(f"{'trigger':>7} {'keep':>4} {'strategy':<10} {'tokens sent':>12} {'vs none':>7} "
          f"{'cache breaks':>12} {'dropped':>7} {'cleared':>7}")
    for trigger, keep, name, sent, breaks, dropped, cleared in table:
        print(f"{trigger if trigger else '-':>7} {keep if keep is not None else '-':>4} {name:<10} "
              f"{sent:>12,} {sent / base:>7.3f} {breaks:>12,} {dropped:>7,} {cleared:>7,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
