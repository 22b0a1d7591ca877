"""SQLStore paging speed, as ratios against one SELECT of the same rows, in the same process.

    .venv/bin/python benchmarks/bench_stores.py [--n 100000] [--repeat 3] [--postgres URL]

For a conversation of --n messages (next to a second conversation of n/10, so the index matters),
on a SQLite file in a temporary folder and, when a URL is given (--postgres, default
$CONVMEM_TEST_POSTGRES_URL), on PostgreSQL (in a schema of its own, dropped at the end), it times
(best of --repeat rounds, the workloads interleaved within each round):

- load_history(store.pager(cid, page_size=P)) for P = 100 and 1,000: keyset pages, each one
  indexed range query, each message built and de-duplicated by load_history;
- the bare keyset walk (the pager called in a ``while cursor`` loop, no load_history);
- baseline "one SELECT": the same columns of the same rows in one query, ordered by seq, fetched
  as rows (what the database and driver cost at least);
- baseline "one SELECT + Message": the same, each row made a Message (the work a load cannot
  avoid).

Then tail loading (issue 12, item 4): ``load_tail(store.pager(cid, newest_first=True), 8000,
**policies)`` against a full load fed through ``History(8000, **policies)`` (the same kept
messages, checked), page size 100, with no policy and with the agent policies
(``pin_latest_user``, ``keep_tool_groups``), and with the README's agent (target 6,000 and
start_on_user too): pages fetched, seconds, and the ratios.

Ratios, not absolute times, are the measure. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa  # noqa: E402

from convmem import History, Message, load_history, load_tail  # noqa: E402
from convmem.stores import SQLStore  # noqa: E402

SCHEMA = "convmem_bench"
TAIL_BUDGET = 8000
TAIL_POLICIES = {
    "no policy": {},
    "pin_latest_user+keep_tool_groups": {"pin_latest_user": True, "keep_tool_groups": True},
    # the README's agent (pin_system: this conversation has no system message, so system_messages
    # is []); target 6,000: no message passes limit - target = 2,000 tokens on its own, so no
    # synchronization can be proven and the tail reads everything (the kept messages depend on
    # the phase of every compaction)
    "agent, target 6000 + start_on_user": {
        "pin_system": True, "pin_latest_user": True, "keep_tool_groups": True,
        "start_on_user": True, "target": 6000,
    },
}


def interleaved(workloads: dict, repeat: int) -> dict[str, float]:
    """Best time of each workload over ``repeat`` rounds; each round runs every workload once, in
    turn, so a slow spell of a shared machine hits baselines and candidates alike."""
    best = dict.fromkeys(workloads, float("inf"))
    for _ in range(repeat):
        for name, fn in workloads.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def make_messages(n: int, prefix: str, seed: int = 1) -> list[Message]:
    """An agent-shaped conversation: turns, tool calls with results, ~100 characters of content."""
    rng = random.Random(seed)
    out: list[Message] = []
    i = 0
    while len(out) < n:
        text = f"turn {i}: " + "lorem ipsum dolor " * rng.randint(2, 8)
        out.append(Message(f"{prefix}u{i}", "user", rng.randint(10, 120), content=text))
        if rng.random() < 0.4 and len(out) + 2 < n:
            call = f"{prefix}c{i}"
            out.append(Message(f"{prefix}a{i}", "assistant", 30, tool_call_ids=(call,)))
            out.append(Message(f"{prefix}t{i}", "tool", rng.randint(50, 600), content=text,
                               tool_call_id=call))
        out.append(Message(f"{prefix}r{i}", "assistant", rng.randint(20, 300), content=text))
        i += 1
    return out[:n]


def bench(label: str, store: SQLStore, n: int, repeat: int) -> list[tuple[str, float, str, float]]:
    cid = "bench"
    messages = make_messages(n, "b")
    t0 = time.perf_counter()
    store.append(cid, messages)
    store.append("other", make_messages(max(1, n // 10), "o", seed=2))
    took = time.perf_counter() - t0
    print(f"  [{label}] appended {n + max(1, n // 10):,} messages in {took:.1f} s")

    m = store._messages
    query = (
        sa.select(m.c.seq, m.c.message_id, m.c.role, m.c.tokens, m.c.content, m.c.tool_call_ids,
                  m.c.tool_call_id)
        .where(m.c.conversation_id == cid)
        .order_by(m.c.seq)
    )

    def one_select_rows():
        with store._reader.connect() as conn:
            return conn.execute(query).all()

    def one_select_messages():
        rows = one_select_rows()
        return [store._message(cid, row) for row in rows]

    assert one_select_messages() == messages
    workloads = {"one SELECT": one_select_rows, "one SELECT + Message": one_select_messages}
    for page_size in (100, 1000):
        def load(page_size=page_size):
            return load_history(store.pager(cid, page_size=page_size), max_pages=10**6)

        def walk(page_size=page_size):
            pager, cursor, got = store.pager(cid, page_size=page_size), None, 0
            while True:
                page, cursor = pager(cursor)
                got += len(page)
                if cursor is None:
                    return got

        assert load() == messages and walk() == n
        workloads[f"load_history, keyset pages of {page_size}"] = load
        workloads[f"bare keyset walk, pages of {page_size}"] = walk
    times = interleaved(workloads, repeat)
    bench_tail(label, store, cid, messages, repeat)
    results = []
    for page_size in (100, 1000):
        name = f"load_history, keyset pages of {page_size}"
        for base in ("one SELECT", "one SELECT + Message"):
            results.append((f"{label}: {name}", times[name], base, times[base]))
        name = f"bare keyset walk, pages of {page_size}"
        results.append((f"{label}: {name}", times[name], "one SELECT + Message",
                        times["one SELECT + Message"]))
    return results


def bench_tail(label: str, store: SQLStore, cid: str, messages: list[Message], repeat: int,
               page_size: int = 100) -> None:
    """Tail loading vs a full load + History for one conversation; prints its own table."""
    workloads = {}
    pages = {}
    for name, policies in TAIL_POLICIES.items():
        def full(policies=policies):
            history = History(TAIL_BUDGET, **policies)
            for m in load_history(store.pager(cid, page_size=page_size), max_pages=10**6):
                history.add(m)
            return tuple(history.context())

        def tail(policies=policies):
            extra = {"system_messages": []} if policies.get("pin_system") else {}
            return load_tail(store.pager(cid, newest_first=True, page_size=page_size),
                             TAIL_BUDGET, total_messages=len(messages), **policies, **extra)

        got = tail()
        assert got.messages == full(), name
        pages[name] = (got.pages, got.full_load_pages, len(got.messages), got.tokens)
        workloads[f"full {name}"] = full
        workloads[f"tail {name}"] = tail
    times = interleaved(workloads, repeat)
    print(f"  [{label}] tail loading, {len(messages):,} messages, {TAIL_BUDGET:,}-token budget, "
          f"pages of {page_size}:")
    print(f"    {'policies':<36} {'kept':>5} {'tokens':>6} {'pages tail/full':>16} "
          f"{'tail s':>8} {'full s':>8} {'time ratio':>10}")
    for name in TAIL_POLICIES:
        tail_pages, full_pages, kept, tokens = pages[name]
        t_tail, t_full = times[f"tail {name}"], times[f"full {name}"]
        print(f"    {name:<36} {kept:>5} {tokens:>6} {tail_pages:>7}/{full_pages:<8} "
              f"{t_tail:8.4f} {t_full:8.3f} {t_tail / t_full:9.5f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--postgres", default=os.environ.get("CONVMEM_TEST_POSTGRES_URL"),
                    help="a PostgreSQL URL (default $CONVMEM_TEST_POSTGRES_URL); omit to skip")
    ap.add_argument("--schema", default=SCHEMA,
                    help=f"the PostgreSQL schema to create and drop (default {SCHEMA})")
    args = ap.parse_args()
    n, r = args.n, args.repeat
    schema = args.schema
    print(f"convmem store benchmark: n = {n:,} messages in one conversation, best of {r}, "
          f"Python {sys.version.split()[0]}, SQLAlchemy {sa.__version__}")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        with SQLStore(Path(folder) / "bench.sqlite") as store:
            rows += bench("SQLite file", store, n, r)
    if args.postgres:
        admin = sa.create_engine(args.postgres)
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
            conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
        try:
            options = {"connect_args": {"options": f"-c search_path={schema}"}}
            with SQLStore(args.postgres, engine_options=options) as store:
                rows += bench("PostgreSQL", store, n, r)
        finally:
            with admin.begin() as conn:
                conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
            admin.dispose()
    else:
        print("  (PostgreSQL skipped: pass --postgres URL or set CONVMEM_TEST_POSTGRES_URL)")
    print(f"{'workload':<50} {'time s':>7} {'µs/msg':>7}   {'baseline':<21} {'time s':>7} "
          f"{'ratio':>6}")
    for name, t, base_name, base_t in rows:
        print(f"{name:<50} {t:7.3f} {t / n * 1e6:7.2f}   {base_name:<21} {base_t:7.3f} "
              f"{t / base_t:5.2f}x")


if __name__ == "__main__":
    main()
