"""Coding-agent sessions (issue 13): hand-made Claude Code and Codex CLI transcripts, one quirk
each (tests/data/agent_sessions/), with their expected messages, the agent's compactions and the
reported usage series; detection; a truncated last line; unknown record types; calibration on
generated usage; redaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convmem import (
    AgentCompaction,
    ApproxCounter,
    FORMATS,
    FormatError,
    ReportedUsage,
    calibrate,
    dump_conversations,
    fit_calibration,
    load_conversations,
    parse_conversations,
    redact_conversation,
    session_of,
    usage_comparison,
)
from convmem.testing.sessions import claude_code_session

DATA = Path(__file__).parent / "data" / "agent_sessions"


class Words:
    """Words of content and call arguments (+1 per call), +10 per image."""

    name = "words"

    def count_text(self, text):
        return len(text.split())

    def count_message(self, role, content, tool_calls=(), name=None, images=()):
        return (len((content or "").split()) + sum(len(a.split()) + 1 for _n, a in tool_calls)
                + 10 * len(images))


def load(name, **kw):
    return load_conversations(DATA / name, counter=Words(), **kw)


def shape(conv):
    return [(m.id, m.role, m.tokens, m.tool_call_ids, m.tool_call_id) for m in conv.messages]


# -- Claude Code ---------------------------------------------------------------------------------

def test_claude_code_main_thread_messages_events_and_usage():
    r = load("claude_code_session.jsonl")
    assert r.format == "claude-code" and [c.id for c in r] == ["S1", "S1:sidechain:1"]
    assert r.skipped == ()
    main = r[0]
    assert shape(main) == [
        ("u1", "user", 6, (), None),
        ("a1", "assistant", 0, (), None),  # a thinking block: kept in the record, not counted
        ("a2", "assistant", 3, (), None),
        ("a3", "assistant", 2, ("toolu_1",), None),
        ("u2", "tool", 13, (), "toolu_1"),  # 3 words + an image in the tool result (10)
        ("a4", "assistant", 3, (), None),
        ("s1", "user", 20, (), None),  # the compaction summary
        ("u3", "user", 4, (), None),
        ("a5", "assistant", 8, ("toolu_2",), None),
        ("u4", "tool", 3, (), "toolu_2"),
    ]
    assert main.provider_roles[4] == "user" and main.records[4]["uuid"] == "u2"
    s = session_of(main)
    assert (s.agent, s.session_id, s.version, s.model) == ("claude-code", "S1", "1.0.80",
                                                           "claude-sonnet-4")
    assert s.compactions == (AgentCompaction(
        6, "s1", 1200, "auto", "This session is being continued from a previous conversation "
        "that ran out of context. Summary: the flaky test slept; fixed.", 11),)
    # three API responses; msg_1 was written as three records: its last counts are kept
    assert s.usage == (ReportedUsage(1, "a1", 10, 1000, 0, 40, 0, 6),
                       ReportedUsage(5, "a4", 3, 50, 1000, 7, 0, 8),
                       ReportedUsage(8, "a5", 5, 20, 900, 30, 0, 14))
    assert [u.prompt_tokens for u in s.usage] == [1010, 1053, 925]
    assert s.branches_dropped == 1  # the abandoned retry a0
    assert s.truncated is True
    assert [(x.line, x.field, x.reason.split(":")[0]) for x in s.skipped] == [
        (10, "type", "unknown record type 'hook-progress'"),
        (18, None, "truncated last line (the session is still being written)"),
    ]
    assert dict(s.ignored) == {"file-history-snapshot": 1, "summary": 1}


def test_claude_code_sidechain_is_its_own_conversation_linked_to_the_task_call():
    side = load("claude_code_session.jsonl")[1]
    assert shape(side) == [("x1", "user", 6, (), None), ("x2", "assistant", 3, (), None)]
    s = session_of(side)
    assert (s.parent_id, s.parent_message_id, s.model) == ("S1", "a5", "claude-haiku")
    assert s.usage == (ReportedUsage(1, "x2", 100, 0, 0, 10, 0, 16),)


def test_claude_code_older_field_names():
    """usage on the record (not in message), a boundary without subtype, a summary marked only
    by its opening words, a preTokens that is not a number."""
    c = load("claude_code_old_fields.jsonl")[0]
    assert shape(c) == [("o1", "user", 2, (), None), ("o2", "assistant", 1, (), None),
                        ("o4", "user", 11, (), None)]
    s = session_of(c)
    assert s.compactions == (AgentCompaction(
        2, "o4", None, "manual",
        "This session is being continued from a previous conversation. Summary: greeted.", 3),)
    assert s.usage == (ReportedUsage(1, "o2", 4, 0, 0, 2, 0, 2),)
    assert s.truncated is False and s.skipped == ()


def test_usage_comparison_counts_the_context_since_the_last_compaction():
    main = load("claude_code_session.jsonl")[0]
    rows = usage_comparison(main)
    assert [(r.turn, r.start, r.index, r.messages, r.counted, r.reported) for r in rows] == [
        (0, 0, 1, 1, 6, 1010),
        (1, 0, 5, 5, 6 + 0 + 3 + 2 + 13, 1053),
        (2, 6, 8, 2, 20 + 4, 925),  # after the compaction: the summary and the prompt
    ]
    assert rows[2].difference == 24 - 925
    assert rows[0].relative_error == pytest.approx((6 - 1010) / 1010)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir()))
def test_a_load_without_provider_records_keeps_the_agents_session(name):
    """provider_records=False (the dashboard's uploads and live tail) drops the decoded records but
    keeps each conversation's AgentSession: the agent page, usage comparison and calibration read
    it (session 22: it was dropped with the records, and the page showed no agent at all)."""
    full = load_conversations(DATA / name, counter=Words())
    bare = load_conversations(DATA / name, counter=Words(), provider_records=False)
    assert [c.messages for c in bare] == [c.messages for c in full]
    assert all(c.records == () and session_of(c) is not None for c in bare)
    assert [session_of(c) for c in bare] == [session_of(c) for c in full]
    assert [[(r.turn, r.start, r.index, r.counted, r.reported) for r in usage_comparison(c)]
            for c in bare] == [[(r.turn, r.start, r.index, r.counted, r.reported)
                                for r in usage_comparison(c)] for c in full]


def test_a_file_being_written_loads_and_loads_more_later():
    full = (DATA / "claude_code_session.jsonl").read_text()
    complete = full[: full.rindex("\n") + 1]
    assert session_of(parse_conversations(complete, counter=Words())[0]).truncated is False
    for cut in (len(complete) + 5, len(complete) - 40):  # mid-record, at any point
        r = parse_conversations(full[:cut], counter=Words())
        assert r.format == "claude-code" and session_of(r[0]).truncated is True


def test_unknown_record_types_never_fail_a_session():
    lines = [json.dumps({"type": "new-kind", "uuid": f"n{k}", "parentUuid": None,
                         "sessionId": "N", "isSidechain": False}) for k in range(3)]
    lines.insert(1, json.dumps({"parentUuid": None, "isSidechain": False, "sessionId": "N",
                                "type": "user", "uuid": "u", "message": {
                                    "role": "user", "content": [
                                        {"type": "text", "text": "hi"},
                                        {"type": "server_tool_use", "id": "x"}]}}))
    r = parse_conversations("\n".join(lines) + "\n", counter=Words())
    assert [c.id for c in r] == ["N"]
    msgs = [m for c in r for m in c.messages]
    assert [(m.id, m.content) for m in msgs] == [("u", "hi")]
    reasons = [x.reason for c in r for x in session_of(c).skipped]
    assert sum("unknown record type 'new-kind'" in x for x in reasons) == 3
    assert any("unknown content block 'server_tool_use'" in x for x in reasons)


def test_a_file_with_no_messages_is_a_format_error():
    text = json.dumps({"type": "summary", "summary": "t", "leafUuid": "x"}) + "\n"
    with pytest.raises(FormatError, match="no Claude Code user or assistant records"):
        parse_conversations(text)


def test_claude_code_round_trip_same_format_and_from_another_format():
    r = load("claude_code_session.jsonl")
    again = parse_conversations(dump_conversations(r, "claude-code"), counter=Words())
    assert [shape(c) for c in again] == [shape(c) for c in r]
    chat = parse_conversations(
        '{"id": "k", "messages": [{"role": "system", "content": "be brief"},'
        ' {"role": "user", "content": "list files"}, {"role": "assistant", "content": null,'
        ' "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls",'
        ' "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "a b"}]}',
        counter=Words())
    back = parse_conversations(dump_conversations(chat, "claude-code"), counter=Words())[0]
    assert [(m.role, m.content, m.tool_call_ids, m.tool_call_id) for m in back.messages] == [
        ("user", "be brief", (), None), ("user", "list files", (), None),
        ("assistant", None, ("c1",), None), ("tool", "a b", (), "c1")]


# -- Codex CLI -----------------------------------------------------------------------------------

def test_codex_rollout_messages_events_and_usage():
    r = load("codex_rollout.jsonl")
    assert r.format == "codex-cli" and len(r) == 1
    c = r[0]
    assert shape(c) == [
        ("R1:3", "system", 2, (), None),  # developer
        ("R1:4", "user", 2, (), None),
        ("R1:6", "assistant", 3, (), None),  # reasoning summary
        ("R1:7", "assistant", 2, ("call_1",), None),
        ("R1:9", "tool", 2, (), "call_1"),
        ("R1:10", "assistant", 2, (), None),
        ("R1:13", "user", 7, (), None),  # the compaction summary
        ("R1:14", "user", 3, (), None),
    ]
    assert c.provider_roles[0] == "developer"
    s = session_of(c)
    assert (s.agent, s.session_id, s.version, s.model) == ("codex-cli", "R1", "0.46.0",
                                                           "gpt-5-codex")
    # input_tokens include the cached ones in OpenAI's usage: split into input and cache reads
    assert s.usage == (ReportedUsage(2, "R1:6", 1000, 0, 0, 50, 20, 8),
                       ReportedUsage(5, "R1:10", 200, 0, 900, 30, 0, 11))
    assert s.compactions == (AgentCompaction(6, "R1:13", 1100 + 30, None,
                                             "Summary: listed the files a.py and b.py.", 13),)
    assert [(x.line, x.field) for x in s.skipped] == [(16, "payload.type"), (18, "type")]
    ignored = dict(s.ignored)
    assert ignored["event_msg:token_count (repeated)"] == 1
    assert ignored["event_msg:token_count (no info)"] == 1
    assert ignored["response_item:ghost_snapshot"] == 1


def test_codex_older_rollout_shape():
    """Bare items, a bare session meta first line, a state line, a flat token_count."""
    c = load("codex_rollout_old.jsonl")[0]
    assert c.id == "old-1"
    assert shape(c) == [("old-1:3", "user", 2, (), None), ("old-1:4", "assistant", 2, (), None)]
    s = session_of(c)
    assert s.usage == (ReportedUsage(1, "old-1:4", 40, 0, 10, 5, 0, 5),)
    assert dict(s.ignored) == {"session_meta": 1, "state": 1}


def test_codex_round_trip():
    r = load("codex_rollout.jsonl")
    again = parse_conversations(dump_conversations(r, "codex-cli"), counter=Words())
    assert [(m.role, m.content, m.tool_call_ids, m.tool_call_id) for m in again[0].messages] == [
        (m.role, m.content, m.tool_call_ids, m.tool_call_id) for m in r[0].messages]


# -- detection -----------------------------------------------------------------------------------

def test_detection_by_content_and_registry():
    assert {"claude-code", "codex-cli"} <= set(FORMATS)
    assert FORMATS["claude-code"].text and FORMATS["codex-cli"].text
    for name, fmt in (("claude_code_session.jsonl", "claude-code"),
                      ("claude_code_old_fields.jsonl", "claude-code"),
                      ("codex_rollout.jsonl", "codex-cli"),
                      ("codex_rollout_old.jsonl", "codex-cli")):
        assert load(name).format == fmt
        assert load(name, format=fmt).format == fmt
    # other JSONL files are not sessions
    chat = '{"id": "a", "messages": [{"role": "user", "content": "parentUuid"}]}\n'
    assert parse_conversations(chat, counter=Words()).format == "openai-chat"
    assert not FORMATS["claude-code"].detect('{"id": "x", "timestamp": 1}')
    assert not FORMATS["codex-cli"].detect('{"id": "x", "timestamp": "t", "messages": []}')


# -- calibration ---------------------------------------------------------------------------------

@pytest.mark.parametrize("ratio,overhead,base", [(1.0, 0.0, 0.0), (1.3, 7.0, 12000.0),
                                                 (0.85, 3.5, 2500.0)])
def test_calibration_recovers_known_overhead_and_ratio_within_one_percent(ratio, overhead,
                                                                         base):
    text = claude_code_session(1500, seed=5, ratio=ratio, overhead=overhead, base=base,
                               compact_every=120)
    conv = parse_conversations(text, counter=Words())[0]
    assert len(session_of(conv).compactions) >= 3
    cal = calibrate(conv)
    assert cal.calls == len(session_of(conv).usage) > 500
    assert cal.ratio == pytest.approx(ratio, rel=0.01)
    assert cal.per_message_overhead == pytest.approx(overhead, rel=0.01, abs=0.05)
    assert cal.base_tokens == pytest.approx(base, rel=0.01, abs=5)
    assert cal.max_error_after < 0.01
    # the calibrated counter counts each message as ratio * content + overhead
    c = cal.counter()
    assert c.count_message("user", "a b c d") == round(cal.ratio * 4 + cal.per_message_overhead)
    assert cal.make_counter_kwargs() == {"approximate": True,
                                         "per_message_overhead": round(cal.per_message_overhead)}


def test_calibration_reports_how_far_convmem_is():
    cal = fit_calibration([(100, 1, 1100, 100), (200, 2, 1200, 200), (400, 5, 1400, 380),
                           (900, 9, 1900, 880)])
    assert cal.error_before == pytest.approx(sum(abs(c - r) / r for c, r in
                                                 [(100, 1100), (200, 1200), (380, 1400),
                                                  (880, 1900)]) / 4)
    assert cal.ratio == pytest.approx(1.0, abs=1e-6) and cal.base_tokens == pytest.approx(1000)
    with pytest.raises(ValueError, match="at least 2 reported calls, got 1"):
        fit_calibration([(1, 1, 1)])
    with pytest.raises(ValueError, match="cannot determine a ratio"):
        fit_calibration([(0, 1, 5), (0, 1, 5)])


# -- redaction -----------------------------------------------------------------------------------

def test_redaction_keeps_shape_and_tokens_and_drops_content():
    conv = load("claude_code_session.jsonl")[0]
    red = redact_conversation(conv)
    assert shape(red) == shape(conv) and red.total_tokens == conv.total_tokens
    assert red.messages[0].content == "[redacted: 6 tokens]"
    assert red.records == () and red.listing_ids == ()
    approx = ApproxCounter()
    assert [json.loads(tc.arguments) for tc in red.tool_calls] == [
        {"redacted_tokens": approx.count_text(tc.arguments)} for tc in conv.tool_calls]
    assert [tc.name for tc in red.tool_calls] == ["Read", "Task"]
    s = session_of(red)
    assert s.usage == session_of(conv).usage
    assert s.compactions[0].summary.startswith("[redacted: ") and s.compactions[0].index == 6
    assert all(x.value is None for x in s.skipped)
    out = dump_conversations([red], "claude-code") + dump_conversations([red], "openai-chat")
    for secret in ("flaky", "test_x", "/home/dev", "sleep", "Fixed", "suite"):
        assert secret not in out


def test_a_sub_agent_file_alone_is_one_conversation_linked_to_its_session():
    """Newer Claude Code writes each sub-agent to agent-<id>.jsonl: every record a sidechain."""
    recs = [{"parentUuid": None, "isSidechain": True, "agentId": "a1b2", "sessionId": "S9",
             "type": "user", "uuid": "q1", "message": {"role": "user", "content": "Explore"}},
            {"parentUuid": "q1", "isSidechain": True, "agentId": "a1b2", "sessionId": "S9",
             "type": "assistant", "uuid": "q2", "message": {
                 "id": "m", "role": "assistant", "content": [{"type": "text", "text": "done"}],
                 "usage": {"input_tokens": 7, "output_tokens": 1}}}]
    r = parse_conversations("\n".join(json.dumps(x) for x in recs) + "\n", counter=Words())
    assert [c.id for c in r] == ["a1b2"]
    s = session_of(r[0])
    assert (s.parent_id, s.parent_message_id) == ("S9", None)
    assert s.usage == (ReportedUsage(1, "q2", 7, 0, 0, 1, 0, 2),)


@pytest.mark.parametrize("name", ["claude_code_session.jsonl", "codex_rollout.jsonl"])
def test_any_prefix_of_a_session_loads_or_is_a_format_error(name):
    """A session read while being written, cut at any byte: never anything but a FormatError,
    and every message loaded is a message of the whole file (same id, role and content)."""
    text = (DATA / name).read_text()
    full = {m.id: (m.role, m.content) for c in parse_conversations(text, counter=Words())
            for m in c.messages}
    # while only the first lines were written, the retry a0 was the newest leaf: its thread
    full["a0"] = ("assistant", "abandoned retry")
    loaded = 0
    for cut in range(1, len(text), 3):
        try:
            r = parse_conversations(text[:cut], counter=Words())
        except FormatError:
            continue
        for c in r:
            for m in c.messages:
                loaded += 1
                role, content = full[m.id]
                assert m.role == role
                # a cut inside the last line leaves that line out, never a part of it
                assert m.content == content, (cut, m.id)
    assert loaded > 0


def test_parent_cycles_and_dangling_parents_terminate():
    """u1 <- u2 <- u1 (a cycle), u3 its own parent, u4 naming a parent that is not in the file."""
    def user(uuid, parent, text):
        return json.dumps({"parentUuid": parent, "isSidechain": False, "sessionId": "C",
                           "type": "user", "uuid": uuid,
                           "message": {"role": "user", "content": text}})

    text = "\n".join([user("u1", "u2", "one"), user("u2", "u1", "two"), user("u3", "u3", "three"),
                      user("u4", "gone", "four")]) + "\n"
    r = parse_conversations(text, counter=Words())
    contents = sorted(m.content for c in r for m in c.messages)
    assert contents == ["four", "one", "three", "two"]


@pytest.mark.parametrize("name", ["claude_code_session.jsonl", "codex_rollout.jsonl"])
def test_session_files_joined_with_their_byte_order_marks_read_every_record(name):
    """Break24: a session line opening with a UTF-8 BOM (files saved with one, then joined) was
    skipped as invalid JSON: the record after each mark was lost. Each line's mark is dropped now,
    so a marked file reads as the unmarked one."""
    text = (DATA / name).read_text()
    lines = text.split("\n")
    marked = "\ufeff" + "\n".join(("\ufeff" + ln) if ln and k % 3 == 1 else ln for k, ln in enumerate(lines))
    plain, got = parse_conversations(text, counter=Words()), parse_conversations(marked, counter=Words())
    assert [shape(c) for c in got] == [shape(c) for c in plain] and plain
    assert session_of(got[0]).skipped == session_of(plain[0]).skipped
