"""Issue 9: one byte budget for what the server keeps (convmem_dashboard.uploads, data).

tracemalloc measures what the data layer really holds: the estimate is an upper bound of the
parsed data's memory, and a registry fed many uploads stays within its budget (evicting the least
recently used). The real budget is 512 MiB; the tests scale it down (same code, smaller numbers).
"""

from __future__ import annotations

import gc
import json
import tracemalloc

import pytest

from convmem import MAX_TOKENS, Conversation, FormatError, Message, parse_conversations, to_openai_jsonl
from convmem.synthetic import generate_conversation
from convmem_dashboard import data, uploads
from convmem_dashboard.uploads import UploadRegistry, check_upload, estimated_bytes


def measured(make):
    """(result, bytes tracemalloc still sees allocated for it after make() returns)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = make()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return result, after - before


def jsonl_upload(k: int, n_messages: int) -> bytes:
    c = generate_conversation(n_messages, seed=k, conversation_id=f"c{k}", user_id=f"u{k}")
    return to_openai_jsonl([c]).encode()


@pytest.mark.parametrize(
    "make",
    [
        lambda: tuple(parse_conversations(jsonl_upload(1, 3000))),
        lambda: tuple(parse_conversations(json.dumps(
            [{"role": "user", "content": "héllo wörld ✓ " * 40 + str(i), "tokens": 9} for i in range(2000)]
        ))),
        lambda: (generate_conversation(5000, seed=3),),
    ],
    ids=["synthetic-jsonl", "non-ascii-json", "generated"],
)
def test_estimate_is_an_upper_bound_of_the_parsed_datas_memory(make):
    conversations, real = measured(make)
    estimate = estimated_bytes(conversations)
    assert real > 0
    assert real <= estimate <= 3 * real, (real, estimate)  # an upper bound, and not a wild one


def test_registry_keeps_many_uploads_within_its_budget_least_recently_used_out():
    budget = 6 * 1024 * 1024
    files = [jsonl_upload(k, 1500) for k in range(24)]
    convs = [tuple(parse_conversations(f)) for f in files]
    sizes = [estimated_bytes(c) for c in convs]
    assert all(s < budget // 3 for s in sizes) and sum(sizes) > 4 * budget
    r = UploadRegistry(budget_bytes=budget, max_messages=10_000)
    for k, c in enumerate(convs):
        r.add(f"upload:{k}", f"f{k}.jsonl", c)
        if k >= 2:
            r.get("upload:0")  # in use all along: never the least recently used
        assert r.total_bytes <= budget
        assert r.total_bytes == sum(sizes[int(key.split(":")[1])] for key in r.keys())
    kept = r.keys()
    assert kept[-2:] == ["upload:23", "upload:0"] and "upload:1" not in kept  # used last, added last
    assert len(kept) < 24


def test_the_data_layer_holding_many_uploads_stays_under_its_budget(monkeypatch):
    """register_upload (parse + check + registry) fed 30 uploads: tracemalloc sees no more than
    the budget held once they are all in."""
    budget = 6 * 1024 * 1024
    monkeypatch.setattr(uploads, "UPLOADS_BUDGET_BYTES", budget)
    data._uploads.clear()
    files = [jsonl_upload(k, 1500) for k in range(30)]
    try:
        def feed():
            for k, f in enumerate(files):
                data.register_upload(f"f{k}.jsonl", f)
            return data._uploads()

        registry, held = measured(feed)
        assert 0 < registry.total_bytes <= budget
        assert held <= budget, (held, budget)
        assert len(registry) < 30 and f"upload:" in registry.keys()[-1]
    finally:
        data._uploads.clear()


def test_one_upload_over_the_whole_budget_is_refused_readably():
    c = tuple(parse_conversations(jsonl_upload(1, 1000)))
    r = UploadRegistry(budget_bytes=estimated_bytes(c) - 1, max_messages=10_000)
    with pytest.raises(FormatError, match=r"^big\.jsonl: the parsed file takes about [\d,]+ bytes in memory, over this server's [\d,]+-byte budget"):
        r.add("upload:x", "big.jsonl", c)
    assert len(r) == 0 and r.total_bytes == 0


def test_per_upload_message_cap_is_a_readable_error(monkeypatch):
    monkeypatch.setattr(uploads, "MAX_UPLOAD_MESSAGES", 999)
    data._uploads.clear()
    try:
        with pytest.raises(FormatError) as info:
            data.register_upload("many.jsonl", jsonl_upload(2, 1000))
        assert str(info.value) == (
            "many.jsonl: the file holds 1,000 messages, over this dashboard's cap of 999 messages "
            "per upload; split the file, or load it with convmem.load_conversations"
        )
        assert len(data._uploads()) == 0
    finally:
        data._uploads.clear()


def test_strings_outside_messages_and_token_totals_are_checked():
    m = Message("m", "user", MAX_TOKENS)
    with pytest.raises(FormatError, match=r"^x\.json: conversation 2: id holds a lone UTF-16 surrogate U\+D800 at index 1 "):
        check_upload([Conversation("ok", None, (m,)), Conversation("c\ud800", None, (m,))], "x.json")
    with pytest.raises(FormatError, match=r"^x\.json: conversation 1: user_id holds a lone UTF-16 surrogate"):
        check_upload([Conversation("c", "\udfff", (m,))], "x.json")
    with pytest.raises(FormatError, match=r"^x\.json: conversation 1: its messages have 18,014,398,509,481,982 tokens in all, over MAX_TOKENS"):
        check_upload([Conversation("c", None, (m, Message("m2", "user", MAX_TOKENS)))], "x.json")
    check_upload([Conversation("c", None, (m,))], "x.json")  # exactly MAX_TOKENS fits


def _decoded_bytes_by_walk(value) -> int:
    """The reference: one object at a time off a stack (the first version of _decoded_bytes)."""
    import sys

    seen, stack, total = set(), [value], 0
    while stack:
        obj = stack.pop()
        if obj is None or isinstance(obj, bool) or id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj) + uploads._PER_OBJECT
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
    return total


def _estimated_by_walk(conversations) -> int:
    """The reference estimate, message by message (the first version of estimated_bytes)."""
    import sys

    size, per = sys.getsizeof, uploads._PER_OBJECT
    total = size(conversations) + per
    for c in conversations:
        objs = [c, c.id, c.user_id, c.messages, c.listing_ids, c.tool_calls, c.source, c.source_format]
        total += sum(size(o) for o in objs if o is not None) + per * len(objs) + size(c.total_tokens)
        total += _decoded_bytes_by_walk((c.records, c.parts, c.provider_roles, c.envelope))
        total += sum(size(x) + per for x in c.listing_ids)
        for t in c.tool_calls:
            total += size(t) + size(t.id) + size(t.name) + size(t.arguments) + size(t.message_id) + 5 * per
        for m in c.messages:
            total += size(m) + size(m.id) + size(m.tokens) + 3 * per
            if m.content is not None:
                total += size(m.content) + per
            if m.tool_call_ids:
                total += size(m.tool_call_ids) + per + sum(size(x) + per for x in m.tool_call_ids)
            if m.tool_call_id is not None:
                total += size(m.tool_call_id) + per
    return total


def test_the_level_by_level_estimate_equals_the_object_by_object_walk():
    """Same bytes as walking one object at a time: shared strings and containers once, None and
    bools not counted, tuples and nested lists followed (the upload path runs the fast one)."""
    shared = "a shared string" * 3
    inner = {"k": [shared, 1.5, None, True, (2, 3, shared)], "z": {"deep": [[[[shared]]]]}}
    value = [inner, inner, [inner, {"k2": shared}], ("t", False, 10**30)]
    assert uploads._decoded_bytes(value) == _decoded_bytes_by_walk(value) > 0
    assert uploads._decoded_bytes(None) == _decoded_bytes_by_walk(None) == 0
    for convs in (
        tuple(parse_conversations(jsonl_upload(2, 2000))),
        tuple(parse_conversations(json.dumps([{"role": "user", "content": "x" * i, "tokens": 3} for i in range(300)]))),
        (generate_conversation(800, seed=9),),
    ):
        assert estimated_bytes(convs) == _estimated_by_walk(convs)
