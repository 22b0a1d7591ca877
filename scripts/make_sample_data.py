#!/usr/bin/env python3
"""Write sample_data/: the seeded synthetic shoppers the dashboard opens with.

    cd <repo root> && .venv/bin/python scripts/make_sample_data.py

writes sample_data/shoppers.jsonl (OpenAI chat JSONL, one conversation per line, each message with
its cl100k_base token count under "tokens") and sample_data/README.md. The output depends only on
SEED and the code in convmem/synthetic.py: running the script twice gives byte-identical files
(tests/test_synthetic.py checks this, and that the committed files are up to date).

It also writes sample_data/shoppers.sqlite: the same conversations in a convmem.stores.SQLStore
(SQLite file, filled with SQLStore.from_conversations, then VACUUMed), for the dashboard's live-
database mode and the flaky store page. Its bytes depend on the SQLite library's version, so --check
compares its contents (every conversation's messages, user id and listing ids) with shoppers.jsonl
instead of its bytes.

Token counts need the cl100k_base BPE file offline (convmem never downloads it). The script uses
$CONVMEM_TIKTOKEN_CACHE / $TIKTOKEN_CACHE_DIR if set, else ../shared/real_data/tokenizers/
tiktoken_cache beside the repo when present (it reads that file; nothing is copied). Without it
the script stops, unless --allow-approx (then counts come from the documented approximation and
differ from the committed file). --check compares instead of writing (exit 1 when stale).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from convmem import group_by_user, load_conversations, to_openai_jsonl  # noqa: E402
from convmem.stores import SQLStore  # noqa: E402
from convmem.synthetic import generate_shoppers  # noqa: E402
from convmem.tokens import find_cl100k_file, make_counter  # noqa: E402

SEED = 20240607
N_SHOPPERS = 8
CONVERSATIONS_PER_SHOPPER = (2, 6)
N_PRODUCTS = 8
SHARED_CACHE = ROOT.parent / "shared" / "real_data" / "tokenizers" / "tiktoken_cache"
COMMAND = ".venv/bin/python scripts/make_sample_data.py"


def _readme(jsonl: str, counter_name: str) -> str:
    convs = load_conversations_from_text(jsonl)
    groups = group_by_user(convs)
    n_messages = sum(len(c.messages) for c in convs)
    roles: dict[str, int] = {}
    for c in convs:
        for m in c.messages:
            roles[m.role] = roles.get(m.role, 0) + 1
    n_parallel = sum(1 for c in convs for m in c.messages if len(m.tool_call_ids) > 1)
    distinct = sorted(len(c.distinct_listing_ids) for c in convs)
    median = statistics.median(distinct)
    all_ids = {x for c in convs for x in c.listing_ids}
    per_user = ", ".join(f"{u} {len(v)}" for u, v in groups.items())
    total = sum(c.total_tokens for c in convs)
    return f"""# sample_data: synthetic shoppers for the dashboard

`shoppers.jsonl` is **synthetic**: written by `scripts/make_sample_data.py` with
`convmem.synthetic.generate_shoppers(seed={SEED}, n_shoppers={N_SHOPPERS},
conversations_per_shopper={CONVERSATIONS_PER_SHOPPER}, n_products={N_PRODUCTS})`. No real person,
order or product is in it; no third-party data was copied. The dashboard opens with it on a fresh
machine.

Format: OpenAI chat JSONL, one conversation per line:
`{{"id", "user_id", "messages": [...]}}`, each message
`{{"id", "role", "content", "tool_calls"?, "tool_call_id"?, "tokens"}}`.
`tokens` is each message's {counter_name} count of its content plus, for tool calls, the function
name and arguments (no per-message overhead); convmem reads it as given, so the numbers are the same
on a machine without the tokenizer file. Listing ids are 10-digit item ids from one small catalog
(product ids look like `P1234`, so they are not mistaken for listings).

| what | value |
|---|---|
| conversations | {len(convs)} |
| shoppers (conversations each) | {len(groups)} ({per_user}) |
| messages | {n_messages} ({", ".join(f"{r} {n}" for r, n in roles.items())}) |
| assistant messages with parallel tool calls | {n_parallel} |
| tokens ({counter_name}) | {total:,} |
| distinct listing ids per conversation | min {distinct[0]}, median {median:g}, max {distinct[-1]} |
| distinct listing ids in the file | {len(all_ids)} |
| size | {len(jsonl.encode()):,} bytes |

`shoppers.sqlite` holds the same conversations in a convmem SQL store (SQLite; tables
`convmem_conversations` and `convmem_messages`, written by
`convmem.stores.SQLStore.from_conversations`): open it with `SQLStore("sqlite:///sample_data/shoppers.sqlite")` and load any conversation with
`load_history(store.pager(conversation_id))`.

Regenerate (byte-identical output; needs the cl100k_base file offline, see the script's docstring):

    {COMMAND}

Check that the committed files are current: `{COMMAND} --check`.
"""


def load_conversations_from_text(jsonl: str):  # noqa: ANN201 - tiny helper
    import io

    return load_conversations(io.StringIO(jsonl), source_name="shoppers.jsonl")


def build(allow_approx: bool = False) -> dict[str, str]:
    """The files to write: {file name: text}. Raises SystemExit without cl100k (unless allowed)."""
    use_shared = "CONVMEM_TIKTOKEN_CACHE" not in os.environ and SHARED_CACHE.is_dir()
    if find_cl100k_file() is None and use_shared:
        os.environ["CONVMEM_TIKTOKEN_CACHE"] = str(SHARED_CACHE)
    counter = make_counter(per_message_overhead=0)  # content-only: the README's definition
    if counter.name != "cl100k_base" and not allow_approx:
        raise SystemExit(
            f"make_sample_data: cl100k_base is not available offline ({counter.detail}); set "
            "TIKTOKEN_CACHE_DIR to a folder holding it, or pass --allow-approx"
        )
    convs = generate_shoppers(
        seed=SEED,
        n_shoppers=N_SHOPPERS,
        conversations_per_shopper=CONVERSATIONS_PER_SHOPPER,
        n_products=N_PRODUCTS,
        counter=counter,
    )
    jsonl = to_openai_jsonl(convs)
    return {"shoppers.jsonl": jsonl, "README.md": _readme(jsonl, counter.name)}


SQLITE_NAME = "shoppers.sqlite"


def write_sqlite(path: Path, jsonl: str) -> None:
    """Write the conversations of ``jsonl`` to a fresh SQLite store at ``path`` (replacing it)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    SQLStore.from_conversations(tmp, load_conversations_from_text(jsonl)).close()
    import sqlite3

    conn = sqlite3.connect(tmp)
    try:
        conn.execute("VACUUM")
    finally:
        conn.close()
    tmp.replace(path)


def sqlite_is_current(path: Path, jsonl: str) -> bool:
    """Whether the store at ``path`` holds exactly the conversations of ``jsonl``, in order."""
    if not path.is_file():
        return False
    from convmem import load_history

    convs = load_conversations_from_text(jsonl)
    with SQLStore(path) as store:
        infos = store.conversations()
        if [(i.id, i.user_id, i.listing_ids) for i in infos] != [
            (c.id, c.user_id, c.listing_ids) for c in convs
        ]:
            return False
        return all(load_history(store.pager(c.id)) == list(c.messages) for c in convs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path, default=ROOT / "sample_data")
    ap.add_argument("--check", action="store_true", help="compare with the files, write nothing")
    ap.add_argument("--allow-approx", action="store_true",
                    help="use the approximate counter when cl100k_base is unavailable")
    args = ap.parse_args(argv)
    files = build(allow_approx=args.allow_approx)
    stale = []
    for name, text in files.items():
        path = args.out_dir / name
        data = text.encode("utf-8")
        if args.check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            print(f"wrote {path} ({len(data):,} bytes)")
    sqlite_path = args.out_dir / SQLITE_NAME
    if args.check:
        if not sqlite_is_current(sqlite_path, files["shoppers.jsonl"]):
            stale.append(str(sqlite_path))
    else:
        write_sqlite(sqlite_path, files["shoppers.jsonl"])
        print(f"wrote {sqlite_path} ({sqlite_path.stat().st_size:,} bytes)")
    if stale:
        print("stale: " + ", ".join(stale) + f"; run {COMMAND}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
