"""convmem beside bare loops, a 20-line deque History, LangChain and LlamaIndex, in one process.

    python benchmarks/compare.py                      # the full run (docs/performance.md)
    python benchmarks/compare.py --tiny               # seconds; what the test suite runs
    PYTHONPATH=/tmp/benchlibs python benchmarks/compare.py   # with the anchors installed there
                                                             # (benchmarks/requirements-bench.txt)

Every figure is the best of ``--repeat`` runs, the subject and its baseline run alternately, and
every ratio compares two figures from this one process (the machine's speed and load cancel out as
far as they can). Sizes are options, so the suite runs it tiny and a full run fits the time at hand.

Sections (each row: workload, size, ns per item, baseline, ratio, target):

1. History.add per message at windows of about 50 / 500 / 5,000 messages and 10^3..10^6 messages:
   a bare deque append/popleft loop with a running total (the floor), a 20-line deque History, base
   History.add (target: within 2.5x of the bare loop), every policy (within 2x of base), LangChain
   ``trim_messages`` after each append and LlamaIndex ``ChatMemoryBuffer`` put+get (anchors; their
   per-message cost grows with the window, so they run on at most ``--anchor-n`` messages).
2. Memory per kept message (tracemalloc, steady state, records off), and the growth between 2x10^4
   and 10^5 adds with unique tool-call ids under keep_tool_groups (must stay bounded).
3. Replay with extractive summaries against the same replay without (target 3x), and sweep_limits
   over 18 limits (target under 1 s at 10^5 messages).
4. evict_conversations and eviction_curve at 10^4..10^7 mentions against one set pass over the kept
   mentions (evict: within 1.5x) and one Counter pass (curve: within 1.2x).
5. load_history at page sizes 10 / 100 / 1,000 against a bare while-cursor loop and a loop that also
   de-duplicates ids (target: within 1.5x of the latter when nothing fails).
6. load_conversations (JSONL, no token counting) against json.loads per line (target 2x).

Nothing here asserts a speed; the test suite only checks that every row prints.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import platform
import random
import sys
import time
import tracemalloc
from collections import Counter, deque
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from convmem import (  # noqa: E402
    ExtractiveSummarizer,
    History,
    HistorySettings,
    Message,
    evict_conversations,
    eviction_curve,
    load_history,
    replay,
    sweep_limits,
)

# -- measuring ------------------------------------------------------------------------------------


def best_pair(subject: Callable[[], object], baseline: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best-of-``repeat`` seconds of ``subject`` and ``baseline``, run alternately."""
    ts, tb = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        baseline()
        tb.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subject()
        ts.append(time.perf_counter() - t0)
    return min(ts), min(tb)


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


class Table:
    """Rows of (section, workload, size, ns/item, baseline, ratio, target); printed as they come."""

    HEADER = f"{'workload':<50} {'size':>10} {'ns/item':>10}  {'baseline':<34} {'ratio':>9}  target"

    def __init__(self, out=None) -> None:
        self.out = out or sys.stdout
        self.rows: list[dict] = []

    def section(self, title: str) -> None:
        print(f"\n## {title}\n{self.HEADER}", file=self.out, flush=True)

    def row(self, workload: str, size: int | str, seconds: float | None, items: int, baseline: str = "",
            base_seconds: float | None = None, target: str = "", note: str = "") -> None:
        per = None if seconds is None or not items else seconds / items * 1e9
        ratio = None if seconds is None or not base_seconds else seconds / base_seconds
        met = ""
        if target and ratio is not None:
            limit = float(target.rstrip("x").lstrip("<= "))
            met = " met" if ratio <= limit else " NOT met"
        self.rows.append(dict(workload=workload, size=size, ns=per, baseline=baseline, ratio=ratio,
                              target=target, met=met.strip(), note=note))
        size_s = f"{size:,}" if isinstance(size, int) else str(size)
        per_s = "-" if per is None else f"{per:,.0f}"
        ratio_s = "-" if ratio is None else f"{ratio:,.2f}x"
        tail = f"{target}{met}" if target else ""
        if note:
            tail = f"{tail}  {note}".strip()
        print(f"{workload:<50} {size_s:>10} {per_s:>10}  {baseline:<34} {ratio_s:>9}  {tail}",
              file=self.out, flush=True)


# -- workloads: History ---------------------------------------------------------------------------


def agent_messages(n: int, seed: int = 1, mean_tokens: int = 100) -> list[Message]:
    """An agent's conversation: a system prompt, user turns, tool calls with unique ids and results."""
    rng = random.Random(seed)
    out = [Message("s0", "system", mean_tokens)]
    i = 0
    while len(out) < n:
        i += 1
        out.append(Message(f"u{i}", "user", rng.randint(mean_tokens // 4, mean_tokens * 2)))
        if rng.random() < 0.5:
            calls = tuple(f"call_{i}_{k}" for k in range(rng.choice((1, 1, 2))))
            out.append(Message(f"a{i}", "assistant", rng.randint(mean_tokens // 4, mean_tokens), tool_call_ids=calls))
            for k, c in enumerate(calls):
                out.append(Message(f"t{i}_{k}", "tool", rng.randint(mean_tokens // 2, mean_tokens * 2), tool_call_id=c))
        out.append(Message(f"r{i}", "assistant", rng.randint(mean_tokens // 4, mean_tokens * 2)))
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


class DequeHistory:
    """The simplest correct History: a deque, a running total, the base rule (20 lines)."""

    __slots__ = ("limit", "q", "total")

    def __init__(self, limit: int) -> None:
        self.limit, self.q, self.total = limit, deque(), 0

    def add(self, m: Message) -> list[str]:
        self.q.append(m)
        self.total += m.tokens
        dropped = []
        while self.total > self.limit and self.q:
            old = self.q.popleft()
            self.total -= old.tokens
            dropped.append(old.id)
        return dropped

    def messages(self) -> list[str]:
        return [m.id for m in self.q]


def run_deque_history(messages: list[Message], limit: int) -> int:
    h = DequeHistory(limit)
    add = h.add
    for m in messages:
        add(m)
    return h.total


def run_history(messages: list[Message], limit: int, **policies) -> int:
    h = History(limit, **policies)
    add = h.add
    for m in messages:
        add(m)
    return h.total()


def all_policies(limit: int) -> dict:
    return dict(pin_system=True, pin_latest_user=True, keep_tool_groups=True, start_on_user=True,
                target=limit * 3 // 4)


def cheap_count(text: str) -> int:
    return len(text) // 4


def with_text(messages: list[Message]) -> list[Message]:
    """The same messages with a line of text each (what an extractive summary quotes)."""
    return [Message(m.id, m.role, m.tokens, content=f"{m.role} said something about order #{i % 997}",
                    tool_call_ids=m.tool_call_ids, tool_call_id=m.tool_call_id)
            for i, m in enumerate(messages)]


# -- anchors --------------------------------------------------------------------------------------


def version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def langchain_runner():
    """``run(messages, limit)``: trim_messages(strategy="last") after each append, or None."""
    try:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, trim_messages
    except Exception:  # noqa: BLE001 - not installed, or broken: the row says so
        return None

    def convert(m: Message):
        text = m.content or ""
        if m.role == "system":
            return SystemMessage(content=text, id=m.id)
        if m.role == "user":
            return HumanMessage(content=text, id=m.id)
        if m.role == "tool":
            return ToolMessage(content=text, id=m.id, tool_call_id=m.tool_call_id or "none")
        calls = [{"name": "tool", "args": {}, "id": c} for c in m.tool_call_ids]
        return AIMessage(content=text, id=m.id, tool_calls=calls)

    def run(messages: list[Message], limit: int) -> int:
        tokens = {m.id: m.tokens for m in messages}
        lc = [convert(m) for m in messages]

        def counter(msgs) -> int:
            return sum(tokens[x.id] for x in msgs)

        window: list = []
        for x in lc:
            window.append(x)
            window = trim_messages(window, max_tokens=limit, token_counter=counter, strategy="last")
        return counter(window)

    return run


def llamaindex_runner():
    """``run(messages, limit)``: ChatMemoryBuffer.put then get for each message, or None."""
    try:
        from llama_index.core.base.llms.types import ChatMessage
        from llama_index.core.memory import ChatMemoryBuffer
    except Exception:  # noqa: BLE001
        return None

    roles = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}

    def run(messages: list[Message], limit: int) -> int:
        # tokenizer_fn returns the message's token count as a list of that length: counts are equal
        chat = [ChatMessage(role=roles[m.role], content="x" * m.tokens) for m in messages]
        memory = ChatMemoryBuffer.from_defaults(token_limit=limit, tokenizer_fn=lambda text: text)
        kept = 0
        for c in chat:
            memory.put(c)
            kept = len(memory.get())
        return kept

    return run


# -- sections -------------------------------------------------------------------------------------


def section_history(t: Table, sizes: list[int], windows: list[int], repeat: int, anchor_n: int,
                    summary_n: int) -> None:
    t.section("1. History.add per message (ns per add; windows in messages, sizes in messages added)")
    biggest = agent_messages(max(sizes))
    mean = sum(m.tokens for m in biggest[:10_000]) / min(len(biggest), 10_000)
    lc, li = langchain_runner(), llamaindex_runner()
    for w in windows:
        limit = int(w * mean)
        for n in sizes:
            msgs = biggest[:n]
            r = repeat if n < 10**6 else max(2, repeat // 2)
            tag = f"w~{w}"
            t_base, t_deque = best_pair(lambda: run_history(msgs, limit), lambda: bare_deque(msgs, limit), r)
            assert run_history(msgs, limit) == bare_deque(msgs, limit)
            t_20, t_deque2 = best_pair(lambda: run_deque_history(msgs, limit), lambda: bare_deque(msgs, limit), r)
            t.row(f"20-line deque History, {tag}", n, t_20, n, "bare deque loop", t_deque2)
            t.row(f"History.add base, {tag}", n, t_base, n, "bare deque loop", t_deque, "<= 2.5x")
            t_all, t_base2 = best_pair(lambda: run_history(msgs, limit, **all_policies(limit)),
                                       lambda: run_history(msgs, limit), r)
            t.row(f"History.add all policies, {tag}", n, t_all, n, "History.add base", t_base2, "<= 2x")
            free = Message("summary", "system", 1, content="earlier turns")
            t_free, t_base3 = best_pair(
                lambda: run_history(msgs, limit, summarizer=lambda p, d: free, summary_budget=min(400, limit // 8),
                                    **all_policies(limit)),
                lambda: run_history(msgs, limit), r)
            t.row(f"History.add all + free summarizer, {tag}", n, t_free, n, "History.add base", t_base3, "<= 2x")
            if n <= summary_n:
                texts = with_text(msgs)
                budget = max(1, min(400, limit // 8))

                def extractive():
                    s = ExtractiveSummarizer(max_tokens=budget, count_tokens=cheap_count)
                    return run_history(texts, limit, summarizer=s, summary_budget=budget, **all_policies(limit))

                t_ext, t_base4 = best_pair(extractive, lambda: run_history(texts, limit), max(1, r // 2))
                t.row(f"History.add all + extractive (len/4), {tag}", n, t_ext, n, "History.add base", t_base4,
                      "<= 2x")
            if n <= anchor_n:
                for name, runner in (("LangChain trim_messages per append", lc),
                                     ("LlamaIndex ChatMemoryBuffer put+get", li)):
                    if runner is None:
                        t.row(f"{name}, {tag}", n, None, n, "History.add base", None,
                              note="not installed (benchmarks/requirements-bench.txt)")
                        continue
                    t_a = best(lambda: runner(msgs, limit), 1)
                    t_b = best(lambda: run_history(msgs, limit), r)
                    t.row(f"{name}, {tag}", n, t_a, n, "History.add base", t_b)


def section_memory(t: Table, windows: list[int], n_growth: int) -> None:
    t.section("2. Memory (bytes; tracemalloc at steady state)")
    for w in windows:
        msgs = agent_messages(6 * w + 100, seed=3)
        mean = sum(m.tokens for m in msgs) / len(msgs)
        limit = int(w * mean)
        for label, policies in (("base", {}), ("all policies", all_policies(limit))):
            gc.collect()
            tracemalloc.start()
            try:
                h = History(limit, records=0, **policies)
                for m in msgs:
                    h.add(m)
                gc.collect()
                used, _ = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            per = used / max(1, len(h))
            t.rows.append(dict(workload=f"memory per kept message, {label}, w~{w}", size=len(h), ns=None,
                               baseline="", ratio=None, target="< 100 B", met="met" if per < 100 else "NOT met",
                               note=f"{per:.0f} B"))
            print(f"{'memory per kept message, ' + label + ', w~' + str(w):<50} {len(h):>10,} {'-':>10}  "
                  f"{'(kept messages; Message excluded)':<34} {per:>7.0f} B  < 100 B "
                  f"{'met' if per < 100 else 'NOT met'}", file=t.out, flush=True)
    # growth: unique tool-call ids under keep_tool_groups, 2x10^4 -> n adds
    msgs = agent_messages(n_growth, seed=5)
    limit = int(500 * sum(m.tokens for m in msgs[:1000]) / 1000)
    h = History(limit, keep_tool_groups=True, records=64)
    gc.collect()
    tracemalloc.start()
    try:
        first = min(20_000, n_growth // 5)
        for m in msgs[:first]:
            h.add(m)
        gc.collect()
        a, _ = tracemalloc.get_traced_memory()
        for m in msgs[first:]:
            h.add(m)
        gc.collect()
        b, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grew = b - a
    t.rows.append(dict(workload="traced growth, keep_tool_groups, unique call ids", size=n_growth, ns=None,
                       baseline=f"after {first:,} adds", ratio=None, target="bounded", met="", note=f"{grew:+,} B"))
    print(f"{'traced growth, keep_tool_groups, unique call ids':<50} {n_growth:>10,} {'-':>10}  "
          f"{'after ' + format(first, ',') + ' adds: ' + format(a, ',') + ' B':<34} {grew:>+9,} B  bounded "
          f"(kept {len(h)})", file=t.out, flush=True)


def section_replay(t: Table, n: int, repeat: int) -> None:
    t.section("3. Replay and sweep (10^5 messages in the full run)")
    msgs = with_text(agent_messages(n, seed=9))
    mean = sum(m.tokens for m in msgs) / max(1, len(msgs))
    limit = int(80 * mean)
    plain = HistorySettings.all_policies(limit, target=limit * 3 // 4)
    summ = HistorySettings.all_policies(limit, target=limit * 3 // 4, summary_budget=min(400, limit // 8))
    t_s, t_p = best_pair(lambda: replay(msgs, summ, count_tokens=cheap_count),
                         lambda: replay(msgs, plain, count_tokens=cheap_count), max(1, repeat // 2))
    t.row("replay all policies + summaries (len/4 counter)", n, t_s, n, "same replay, no summaries", t_p, "<= 3x")
    no_target = HistorySettings.all_policies(limit)
    no_target_s = HistorySettings.all_policies(limit, summary_budget=min(400, limit // 8))
    t_s2, t_p2 = best_pair(lambda: replay(msgs, no_target_s, count_tokens=cheap_count),
                           lambda: replay(msgs, no_target, count_tokens=cheap_count), max(1, repeat // 2))
    t.row("  same, no target (compaction on most adds)", n, t_s2, n, "same replay, no summaries", t_p2, "<= 3x")
    from convmem.tokens import default_counter

    counter = default_counter()
    small = msgs[: max(1, n // 10)]
    t_s3, t_p3 = best_pair(lambda: replay(small, summ, count_tokens=counter.count_text),
                           lambda: replay(small, plain, count_tokens=counter.count_text), 1)
    t.row(f"  same, default counter ({counter.name})", len(small), t_s3, len(small),
          "same replay, no summaries", t_p3, "<= 3x")
    limits = [max(1, round(limit * k / 9)) for k in range(1, 19)]
    for label, settings in (("base rule", HistorySettings(limit)),
                            ("base rule + target", HistorySettings(limit, target=limit * 3 // 4)),
                            ("all policies, target", plain)):
        t_sw = best(lambda: sweep_limits(msgs, settings, limits), max(1, repeat // 2))
        t.rows.append(dict(workload=f"sweep_limits, 18 limits, {label}", size=n, ns=t_sw / n / 18 * 1e9,
                           baseline="", ratio=None, target="< 1 s", met="met" if t_sw < 1 else "NOT met",
                           note=f"{t_sw:.3f} s"))
        print(f"{'sweep_limits, 18 limits, ' + label:<50} {n:>10,} {t_sw / n / 18 * 1e9:>10,.0f}  "
              f"{'(seconds for all 18 replays)':<34} {t_sw:>8.3f}s  < 1 s {'met' if t_sw < 1 else 'NOT met'}",
              file=t.out, flush=True)


def make_conversations(mentions: int, distinct: int = 5000, seed: int = 2) -> list[list[str]]:
    rng = random.Random(seed)
    pool = [f"{i:010d}" for i in range(distinct)]
    convs = []
    left = mentions
    while left > 0:
        k = min(left, rng.randint(5, 40))
        convs.append([pool[rng.randrange(distinct)] for _ in range(k)])
        left -= k
    return convs


def set_pass(convs: list[list[str]]) -> int:
    s: set[str] = set()
    for conv in convs:
        s.update(conv)
    return len(s)


def counter_pass(convs: list[list[str]]) -> int:
    c: Counter[str] = Counter()
    for conv in convs:
        c.update(conv)
    return len(c)


def section_eviction(t: Table, mention_sizes: list[int], repeat: int) -> None:
    t.section("4. Eviction (ns per mention)")
    for m in mention_sizes:
        for distinct_label, distinct in (("5,000 ids", 5000), ("pool of m ids", m)):
            convs = make_conversations(m, distinct=distinct)
            r = repeat if m < 10**7 else max(2, repeat // 2)
            total_distinct = set_pass(convs)
            t_ev, t_set = best_pair(lambda: evict_conversations(convs, total_distinct), lambda: set_pass(convs), r)
            t.row(f"evict, keeps all ({distinct_label})", m, t_ev, m, "one set pass over kept", t_set, "<= 1.5x")
            half = total_distinct // 2
            from convmem.eviction import kept_from

            kept = convs[kept_from(convs, half):]
            kept_m = sum(len(c) for c in kept)
            t_ev2, t_set2 = best_pair(lambda: evict_conversations(convs, half), lambda: set_pass(kept), r)
            t.row(f"evict, cap = half the ids ({distinct_label})", kept_m, t_ev2, kept_m,
                  "one set pass over kept", t_set2, "<= 1.5x")
            t_cu, t_co = best_pair(lambda: eviction_curve(convs), lambda: counter_pass(convs), r)
            t.row(f"eviction_curve ({distinct_label})", m, t_cu, m, "one Counter pass", t_co, "<= 1.2x")
            del convs, kept
            gc.collect()


def section_loading(t: Table, n: int, page_sizes: list[int], repeat: int) -> None:
    t.section("5. load_history, no faults (ns per message)")
    msgs = [Message(f"m{i}", "user", 1) for i in range(n)]
    for size in page_sizes:
        def fetch_page(cursor, size=size):
            start = cursor or 0
            end = start + size
            return msgs[start:end], (end if end < n else None)

        def bare():
            out, cursor = [], None
            while True:
                page, cursor = fetch_page(cursor)
                out.extend(page)
                if not page or cursor is None:
                    return out

        def dedup():
            out, seen, cursor = [], set(), None
            while True:
                page, cursor = fetch_page(cursor)
                for m in page:
                    if m.id not in seen:
                        seen.add(m.id)
                        out.append(m)
                if not page or cursor is None:
                    return out

        assert [m.id for m in load_history(fetch_page)] == [m.id for m in dedup()]
        t_l, t_b = best_pair(lambda: load_history(fetch_page), bare, repeat)
        t.row(f"load_history, page size {size}", n, t_l, n, "bare while-cursor loop", t_b)
        t_l2, t_d = best_pair(lambda: load_history(fetch_page), dedup, repeat)
        t.row(f"load_history, page size {size}", n, t_l2, n, "de-duplicating loop", t_d, "<= 1.5x")


def section_parsing(t: Table, n: int, repeat: int) -> None:
    t.section("6. load_conversations, JSONL, no token counting (ns per message)")
    try:
        from convmem import load_conversations
    except ImportError:
        t.row("load_conversations", n, None, n, note="not available")
        return
    lines = []
    for c in range(0, n, 20):  # one conversation of 20 messages per line (OpenAI chat shape)
        msgs = [{"role": ("user", "assistant")[i % 2], "content": f"message {i} about order #W{i % 9973}",
                 "tokens": 5 + i % 50} for i in range(c, min(n, c + 20))]
        lines.append(json.dumps({"messages": msgs}))
    data = ("\n".join(lines) + "\n").encode()

    def parse():
        return load_conversations(io.BytesIO(data), format="jsonl")

    def baseline():
        return [json.loads(line) for line in data.splitlines()]

    try:
        parse()
    except Exception as exc:  # noqa: BLE001 - the importer is another module's; report, do not stop
        t.row("load_conversations, JSONL", n, None, n, note=f"failed: {type(exc).__name__}: {exc}"[:120])
        return
    t_p, t_j = best_pair(parse, baseline, max(1, repeat // 2))
    t.row("load_conversations, JSONL", n, t_p, n, "json.loads per line", t_j, "<= 2x")


# -- main -----------------------------------------------------------------------------------------


def describe_machine(out) -> None:
    uname = platform.uname()
    print("# convmem comparison", file=out)
    print(f"machine: {uname.system} {uname.release} {uname.machine}, {os.cpu_count()} CPU(s), "
          f"{platform.processor() or 'processor unknown'}; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}", file=out)
    print(f"python: {platform.python_implementation()} {platform.python_version()}", file=out)
    libs = ["tenacity", "tiktoken", "hypothesis", "langchain-core", "llama-index-core"]
    print("libraries: " + ", ".join(f"{d} {version(d) or 'not installed'}" for d in libs), file=out, flush=True)


def parse_sizes(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None, out=None) -> Table:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000,1000000", help="messages added (History rows)")
    ap.add_argument("--windows", default="50,500,5000", help="window sizes, in messages")
    ap.add_argument("--mentions", default="10000,100000,1000000,10000000", help="eviction sizes")
    ap.add_argument("--pages", default="10,100,1000", help="load_history page sizes")
    ap.add_argument("--load-n", type=int, default=100_000, help="messages per load_history run")
    ap.add_argument("--replay-n", type=int, default=100_000, help="messages per replay / sweep")
    ap.add_argument("--anchor-n", type=int, default=2_000, help="most messages for LangChain/LlamaIndex")
    ap.add_argument("--summary-n", type=int, default=100_000, help="most messages for extractive rows")
    ap.add_argument("--growth-n", type=int, default=100_000, help="adds for the memory growth row")
    ap.add_argument("--parse-n", type=int, default=100_000, help="messages for the JSONL row")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="1,2,3,4,5,6", help="sections to run")
    ap.add_argument("--tiny", action="store_true", help="every row at toy sizes (the test suite)")
    args = ap.parse_args(argv)
    if args.tiny:
        args.sizes, args.windows, args.mentions, args.pages = "200,400", "5,20", "2000", "10,100"
        args.load_n = args.replay_n = args.parse_n = 400
        args.anchor_n, args.summary_n, args.growth_n, args.repeat = 200, 400, 2000, 1
    out = out or sys.stdout
    t = Table(out)
    describe_machine(out)
    only = set(args.only.split(","))
    started = time.perf_counter()
    if "1" in only:
        section_history(t, parse_sizes(args.sizes), parse_sizes(args.windows), args.repeat, args.anchor_n,
                        args.summary_n)
    if "2" in only:
        section_memory(t, parse_sizes(args.windows), args.growth_n)
    if "3" in only:
        section_replay(t, args.replay_n, args.repeat)
    if "4" in only:
        section_eviction(t, parse_sizes(args.mentions), args.repeat)
    if "5" in only:
        section_loading(t, args.load_n, parse_sizes(args.pages), args.repeat)
    if "6" in only:
        section_parsing(t, args.parse_n, args.repeat)
    print(f"\n({time.perf_counter() - started:.0f} s; command: python benchmarks/compare.py "
          f"{' '.join(argv if argv is not None else sys.argv[1:])})", file=out, flush=True)
    return t


if __name__ == "__main__":
    main()
