"""Library speed, as ratios against a bare baseline run in the same process.

    .venv/bin/python benchmarks/bench_library.py [--n 100000] [--repeat 5]

Prints, for 10^5 messages / mentions each (best of --repeat runs, seconds and ns per item):
- History.add (base rules) against a bare deque append/popleft loop with a running total over the
  same messages (the seed's "strong answer" skeleton with no API around it);
- History.add with every policy on (pins, tool groups, start_on_user, target, summaries) against base
  History.add (goal: within 2x);
- evict_conversations and eviction_curve against one collections.Counter pass over all mentions;
- load_history against a bare ``while cursor`` loop over the same in-memory store, no faults.

Ratios, not absolute times, are the measure: the machine's speed cancels out. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter, deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from convmem import History, Message, evict_conversations, eviction_curve  # noqa: E402
from convmem.loading import load_history  # noqa: E402
from convmem.testing import PagedStore  # noqa: E402


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def make_messages(n: int, seed: int = 1) -> list[Message]:
    """A conversation shaped like an agent's: system prompt, turns, tool calls with results."""
    rng = random.Random(seed)
    out = [Message("s0", "system", 800)]
    i = 1
    while len(out) < n:
        out.append(Message(f"u{i}", "user", rng.randint(10, 120)))
        if rng.random() < 0.5 and len(out) + 3 < n:
            calls = tuple(f"c{i}_{k}" for k in range(rng.choice((1, 1, 2))))
            out.append(Message(f"a{i}", "assistant", rng.randint(20, 80), tool_call_ids=calls))
            for k, c in enumerate(calls):
                out.append(Message(f"t{i}_{k}", "tool", rng.randint(50, 600), tool_call_id=c))
        out.append(Message(f"r{i}", "assistant", rng.randint(20, 300)))
        i += 1
    return out[:n]


def bare_deque(messages: list[Message], limit: int) -> int:
    q: deque[Message] = deque()
    total = 0
    for m in messages:
        q.append(m)
        total += m.tokens
        while total > limit:
            total -= q.popleft().tokens
    return total


def run_history(messages: list[Message], limit: int, **policies) -> int:
    """Add every message to ``History(limit, **policies)``; the final total."""
    h = History(limit, **policies)
    add = h.add
    for m in messages:
        add(m)
    return h.total()


def all_policies(limit: int, **extra) -> dict:
    """Every pin and group policy on, with a target at 3/4 of the limit."""
    return dict(
        pin_system=True,
        pin_latest_user=True,
        keep_tool_groups=True,
        start_on_user=True,
        target=limit * 3 // 4,
        **extra,
    )


def history_base(messages: list[Message], limit: int) -> int:
    return run_history(messages, limit)


def history_all(messages: list[Message], limit: int) -> int:
    from convmem import ExtractiveSummarizer

    summarizer = ExtractiveSummarizer(max_tokens=400, count_tokens=lambda t: len(t) // 4)
    return run_history(messages, limit, **all_policies(limit, summarizer=summarizer, summary_budget=400))


def history_all_fixed_summary(messages: list[Message], limit: int) -> int:
    """All policies with a summarizer that costs nothing: History's own summary bookkeeping."""
    summary = Message("summary", "system", 300, content="earlier turns")
    return run_history(
        messages, limit, **all_policies(limit, summarizer=lambda previous, dropped: summary, summary_budget=400)
    )


def history_all_no_summary(messages: list[Message], limit: int) -> int:
    return run_history(messages, limit, **all_policies(limit))


def make_conversations(mentions: int, seed: int = 2) -> list[list[str]]:
    rng = random.Random(seed)
    convs = []
    left = mentions
    while left > 0:
        k = min(left, rng.randint(5, 40))
        convs.append([f"{rng.randint(0, 5000):010d}" for _ in range(k)])
        left -= k
    return convs


def counter_pass(convs: list[list[str]]) -> int:
    c: Counter[str] = Counter()
    for conv in convs:
        c.update(conv)
    return len(c)


def bare_while_cursor(store: PagedStore) -> int:
    out = []
    cursor = None
    while True:
        page, cursor = store.fetch_page(cursor)
        out.extend(page)
        if not page or cursor is None:
            break
    return len(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="messages / mentions per workload")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n, r = args.n, args.repeat
    messages = make_messages(n)
    limit = 8_000
    rows = []

    def row(name: str, t: float, base_name: str, base_t: float) -> None:
        rows.append((name, t, base_name, base_t))

    t_deque = best(lambda: bare_deque(messages, limit), r)
    t_base = best(lambda: history_base(messages, limit), r)
    t_all_ns = best(lambda: history_all_no_summary(messages, limit), r)
    t_all_fixed = best(lambda: history_all_fixed_summary(messages, limit), r)
    t_all = best(lambda: history_all(messages, limit), r)
    assert bare_deque(messages, limit) == history_base(messages, limit)
    row("History.add, base rules", t_base, "bare deque append/popleft", t_deque)
    row("History.add, all policies, no summarizer", t_all_ns, "History.add, base rules", t_base)
    row("History.add, all policies + free summarizer", t_all_fixed, "History.add, base rules", t_base)
    row("History.add, all policies + extractive summaries", t_all, "History.add, base rules", t_base)

    convs = make_conversations(n)
    distinct = counter_pass(convs)
    t_counter = best(lambda: counter_pass(convs), r)
    t_curve = best(lambda: eviction_curve(convs), r)
    t_evict_all = best(lambda: evict_conversations(convs, distinct), r)  # keeps every conversation
    t_evict_half = best(lambda: evict_conversations(convs, distinct // 2), r)
    row("eviction_curve (all mentions)", t_curve, "one Counter pass over all mentions", t_counter)
    row("evict_conversations, cap = all distinct (keeps all)", t_evict_all, "one Counter pass", t_counter)
    row("evict_conversations, cap = half the distinct ids", t_evict_half, "one Counter pass", t_counter)

    store = PagedStore(messages, page_size=100)
    t_bare = best(lambda: bare_while_cursor(store), r)
    t_load = best(lambda: load_history(store.fetch_page), r)
    assert len(load_history(store.fetch_page)) == n
    row("load_history, page size 100, no faults", t_load, "bare while-cursor loop", t_bare)

    print(f"convmem library benchmark: n = {n:,} messages/mentions, best of {r}, Python {sys.version.split()[0]}")
    print(f"{'workload':<52} {'time s':>8} {'ns/item':>8}   {'baseline':<38} {'time s':>8} {'ratio':>6}")
    for name, t, base_name, base_t in rows:
        print(f"{name:<52} {t:8.4f} {t / n * 1e9:8.0f}   {base_name:<38} {base_t:8.4f} {t / base_t:6.2f}x")


if __name__ == "__main__":
    main()
