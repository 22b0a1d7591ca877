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

from convmem import MAX_TOKENS, ApproxCounter, Conversation, FormatError, Message, parse_conversations, to_openai_jsonl
from convmem.synthetic import generate_conversation
from convmem.testing.sessions import claude_code_session
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


def agent_session_upload(n_unknown: int) -> str:
    """A generated Claude Code session (usage on every call, a compaction every 40 steps) and
    ``n_unknown`` lines of an unknown record type: each one a row of ``AgentSession.skipped``,
    which the loader keeps without the records."""
    unknown = "".join(json.dumps({"type": f"new-kind-{k}", "uuid": f"n{k}", "note": "z" * 40}) + "\n"
                      for k in range(n_unknown))
    return claude_code_session(1500, seed=5, compact_every=40) + unknown


@pytest.mark.parametrize(
    "make",
    [
        lambda: tuple(parse_conversations(jsonl_upload(1, 3000))),
        lambda: tuple(parse_conversations(jsonl_upload(1, 3000), provider_records=False)),
        lambda: tuple(parse_conversations(json.dumps(
            [{"role": "user", "content": "héllo wörld ✓ " * 40 + str(i), "tokens": 9} for i in range(2000)]
        ))),
        lambda: (generate_conversation(5000, seed=3),),
        lambda: tuple(parse_conversations(agent_session_upload(4000), counter=ApproxCounter(),
                                          provider_records=False)),
    ],
    ids=["synthetic-jsonl", "synthetic-jsonl-no-records", "non-ascii-json", "generated",
         "agent-session-no-records"],
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


def test_the_server_keeps_an_upload_without_its_provider_records():
    """No page writes an upload back in its own format: the registry holds its messages only, at
    well under half the estimated bytes of the same file with its records (synthetic JSONL)."""
    data._uploads.clear()
    blob = jsonl_upload(4, 2000)
    try:
        key = data.register_upload("r.jsonl", blob)
        _name, kept = data._uploads().get(key)
        assert [(c.records, c.parts, c.provider_roles, c.envelope) for c in kept] == [((), (), (), None)]
        full = tuple(parse_conversations(blob))
        assert [c.messages for c in kept] == [c.messages for c in full]
        assert data._uploads().total_bytes == estimated_bytes(kept) < 0.5 * estimated_bytes(full)
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
