"""Adversarial inputs to the APIs added for issues 10-13 (breaker session): each test failed
before its fix. Stores, prices and inputs are built by hand; values are checked against
History / brute force, errors must name the field and the value."""

from __future__ import annotations

import pytest

from convmem import History, Message
from convmem.stores import SQLStore
from convmem.tail import load_tail
from convmem.testing import MemoryStore


def _conversation() -> list[Message]:
    return [Message(f"m{i}", "user" if i % 2 == 0 else "assistant", 10) for i in range(10)]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_load_tail_refuses_a_pager_that_pages_oldest_first(kind):
    # Before: load_tail(store.pager(cid), 30) kept ['m2', 'm1', 'm0'] - the oldest messages,
    # reversed - where History over the conversation keeps ['m7', 'm8', 'm9'].
    store = MemoryStore(page_size=2) if kind == "memory" else SQLStore("sqlite://", page_size=2)
    store.append("c1", _conversation())
    with pytest.raises(ValueError, match="newest_first=False"):
        load_tail(store.pager("c1"), 30)
    history = History(30)
    for m in _conversation():
        history.add(m)
    tail = load_tail(store.pager("c1", newest_first=True), 30)
    assert [m.id for m in tail.messages] == [m.id for m in history.context()] == ["m7", "m8", "m9"]


# -- prompt cache accounting: every bad input is a TypeError/ValueError naming the field -------

from convmem import HistorySettings, replay  # noqa: E402
from convmem.prompt_cache import (  # noqa: E402
    CachePricing,
    cache_accounting,
    prompt_cache,
    sweep_limit_costs,
    unchanged_prefix_tokens,
)

_PRICING = CachePricing("x", input_per_mtok=1.0, cached_per_mtok=0.1, write_per_mtok=1.25,
                        min_cacheable=0)


@pytest.mark.parametrize(
    "call, match",
    [
        # Before: 1.5 tokens and True were priced as counts; "a" failed with "'>' not supported".
        (lambda: cache_accounting([1.5], [0], _PRICING), r"sent\[0\] must be an int .*1\.5"),
        (lambda: cache_accounting([True], [False], _PRICING), r"sent\[0\] must be an int .*True"),
        (lambda: cache_accounting([3], ["a"], _PRICING), r"prefix\[0\] must be an int .*'a'"),
        (lambda: cache_accounting(iter([1]), [0], _PRICING), "sent must be a sequence"),
        # Before: AttributeError 'str' object has no attribute 'served' / 'totals' / 'id'.
        (lambda: cache_accounting([1], [0], "anthropic"), "pricing must be a CachePricing.*anthropic"),
        (lambda: prompt_cache([Message("a", "user", 1)], _PRICING), "result must be a Replay"),
        (lambda: CachePricing(None, 1.0, 0.1, 1.25, 0), "provider must be a str, got None"),
    ],
)
def test_cache_accounting_names_the_bad_field(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_unchanged_prefix_tokens_checks_its_edits():
    messages = [Message(f"m{i}", "user", 600) for i in range(6)]
    result = replay(messages, HistorySettings(limit=2_400))
    # Before: IndexError "tuple index out of range" and AttributeError "'str' ... 'id'".
    with pytest.raises(ValueError, match=r"edits has step 99, not a step in \[0, 6\)"):
        unchanged_prefix_tokens(result, edits={99: []})
    with pytest.raises(TypeError, match=r"edits\[0\] must be a list of Message, got 'abc'"):
        unchanged_prefix_tokens(result, edits={0: "abc"})
    assert unchanged_prefix_tokens(result, edits={}) == unchanged_prefix_tokens(result)


def test_sweep_limit_costs_names_bad_limits_and_pricing():
    messages = [Message(f"m{i}", "user", 600) for i in range(6)]
    settings = HistorySettings(limit=2_400)
    with pytest.raises(TypeError, match="limits must be a sequence.*got 5"):
        sweep_limit_costs(messages, settings, 5, _PRICING)
    with pytest.raises(TypeError, match="pricing must be a CachePricing.*openai"):
        sweep_limit_costs(messages, settings, [1_200], "openai")


# -- History clearing: bad thinking counts and placeholders are refused up front ----------------

from convmem.history import ClearThinking, ClearToolUses  # noqa: E402


@pytest.mark.parametrize(
    "value, error, match",
    [
        # Before: "'<' not supported between instances of 'int' and 'str'" mid-add.
        ("5", TypeError, r"thinking\['a1'\] must be an int .*'5'"),
        # Before: True counted as 1 thinking token; -5 silently cleared nothing.
        (True, TypeError, r"thinking\['a1'\] must be an int .*True"),
        (-5, ValueError, r"thinking\['a1'\] must be >= 0 .*-5"),
    ],
)
def test_a_bad_thinking_count_names_the_message_and_changes_nothing(value, error, match):
    history = History(1_000, clear_thinking=ClearThinking(keep=0), thinking={"a1": value})
    history.add(Message("u", "user", 5))
    with pytest.raises(error, match=match):
        history.add(Message("a1", "assistant", 5))
    assert [m.id for m in history.context()] == ["u"] and history.total() == 5
    history.add(Message("a2", "assistant", 5))  # still usable: the failed add left no trace
    assert [m.id for m in history.context()] == ["u", "a2"]


def test_a_placeholder_with_a_lone_surrogate_is_refused_by_clear_tool_uses():
    # Before: accepted, then History.add failed halfway naming "Message.content".
    with pytest.raises(ValueError, match="ClearToolUses placeholder"):
        ClearToolUses(placeholder="\ud800")


# -- redaction: nothing the file said survives in skip reasons or ignored record subtypes -------

import io  # noqa: E402
import json  # noqa: E402

from convmem import load_conversations, redact_conversation  # noqa: E402

SECRET = "SECRETXYZ"


def test_redaction_leaks_nothing_through_skip_reasons_or_ignored_subtypes():
    def rec(**fields):
        return json.dumps(fields)

    lines = [
        rec(type="user", uuid="u1", parentUuid=None, sessionId="s1",
            message={"role": "user", "content": "hello " + SECRET}),
        rec(type="assistant", uuid="a1", parentUuid="u1", sessionId="s1",
            message={"id": "r1", "role": "assistant", "content": [
                {"type": "text", "text": SECRET}, {"type": "weird_" + SECRET, "x": SECRET}]}),
        rec(type="rec_" + SECRET, uuid="x", parentUuid="a1", data=SECRET),
        rec(type="system", subtype="sub_" + SECRET, uuid="y", parentUuid="a1"),
        '{"type": "user", "cut ' + SECRET,
    ]
    loaded = load_conversations(io.BytesIO("\n".join(lines).encode()), format="claude-code")
    (conv,) = loaded.conversations
    session = conv.envelope
    # The original keeps the reasons as the file gave them (the check below can fail) ...
    assert any(SECRET in s.reason for s in session.skipped)
    assert any(SECRET in key for key, _ in session.ignored)
    red = redact_conversation(conv)
    # Before: "unknown content block 'weird_SECRETXYZ'" and ('system:sub_SECRETXYZ', 1) survived.
    text = repr(red) + repr(red.envelope.skipped) + repr(red.envelope.ignored)
    assert SECRET not in text
    assert [s.line for s in red.envelope.skipped] == [s.line for s in session.skipped]
    assert dict(red.envelope.ignored) == {"system:[redacted]": 1}
    assert any("unknown content block '[redacted]'" in s.reason for s in red.envelope.skipped)


# -- importers: malformed usage is noted, never silently read as 0 or kept past MAX_TOKENS ------

from convmem.limits import MAX_TOKENS  # noqa: E402


def _claude_code_with_usage(usage):
    user = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
            "message": {"role": "user", "content": "hi"}}
    reply = {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s1",
             "message": {"id": "r", "role": "assistant", "content": "yo", "usage": usage}}
    text = json.dumps(user) + "\n" + json.dumps(reply)
    (conv,) = load_conversations(io.BytesIO(text.encode()), format="claude-code").conversations
    return conv.envelope


@pytest.mark.parametrize("bad", [-5, 1e300, "7", True, MAX_TOKENS + 1])
def test_claude_code_malformed_usage_is_noted_with_its_field(bad):
    session = _claude_code_with_usage({"input_tokens": bad, "output_tokens": 3})
    # Before: read as 0 with no note (and 2**53 passed through as a count).
    assert [u.input_tokens for u in session.usage] == [0]
    assert [u.output_tokens for u in session.usage] == [3]
    notes = [s for s in session.skipped if s.field == "message.usage.input_tokens"]
    assert len(notes) == 1 and notes[0].line == 2 and "read as 0" in notes[0].reason
    good = _claude_code_with_usage({"input_tokens": MAX_TOKENS, "output_tokens": 3})
    assert [u.input_tokens for u in good.usage] == [MAX_TOKENS] and good.skipped == ()


def test_codex_malformed_usage_is_noted_with_its_field():
    lines = [
        {"type": "session_meta", "payload": {"id": "s2"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "hi"}]}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {
            "input_tokens": 10, "cached_input_tokens": 2**80, "output_tokens": "x"}}}},
    ]
    text = "\n".join(json.dumps(line) for line in lines)
    (conv,) = load_conversations(io.BytesIO(text.encode()), format="codex-cli").conversations
    session = conv.envelope
    assert [(u.input_tokens, u.cache_read_tokens, u.output_tokens) for u in session.usage] == [
        (10, 0, 0)]
    assert sorted(s.field for s in session.skipped if s.line == 3) == [
        "payload.info.last_token_usage.cached_input_tokens",
        "payload.info.last_token_usage.output_tokens",
    ]


# -- dashboard database source: a password in the query string is never shown ------------------

from convmem_dashboard.db_source import _scrub, parse_database_url  # noqa: E402


def test_a_password_in_the_query_string_is_hidden_like_the_password():
    # libpq takes ?password= (and ?sslpassword=); before, both were shown as typed.
    source = parse_database_url("postgresql://agent@db.internal/memory?password=hunter2&sslpassword=zz9")
    assert "hunter2" not in source.shown and "zz9" not in source.shown
    assert "hunter2" not in repr(source)
    assert source.shown == "postgresql+psycopg://agent@db.internal/memory?password=***&sslpassword=***"
    # The real values stay on the server, for the connection.
    assert source.url.query["password"] == "hunter2"
    # The link key does not depend on the secret.
    other = parse_database_url("postgresql://agent@db.internal/memory?password=other&sslpassword=x")
    assert source.key == other.key
    assert _scrub('FATAL: password "hunter2" / key zz9 rejected', source.url) == (
        'FATAL: password "***" / key *** rejected')


@pytest.mark.parametrize(("url", "error", "shown"), [
    # a one-letter password: every "p" of the message was masked ("***ort 1 failed")
    ("postgresql://u:p@127.0.0.1:1/db", 'connection to server at "127.0.0.1", port 1 failed: p@127',
     'connection to server at "127.0.0.1", port 1 failed: ***@127'),
    ("postgresql://u:p%40ss@h/db", "auth p@ss and p%40ss failed for u:p@ss@h", "auth *** and *** failed for u:***@h"),
    ("postgresql://u@h/db?password=s3", "bad s3; s3cret stays; x_s3 goes", "bad ***; s3cret stays; x_*** goes"),
])
def test_a_secret_is_scrubbed_where_it_stands_alone_not_inside_other_words(url, error, shown):
    assert _scrub(error, parse_database_url(url).url) == shown


# -- replay / safe limit / cost sweep: an iterator of messages is named, not len()'d ------------

from convmem import smallest_safe_limit  # noqa: E402


@pytest.mark.parametrize("call", [
    lambda ms: replay(ms, HistorySettings(limit=10)),
    lambda ms: smallest_safe_limit(ms),
    lambda ms: sweep_limit_costs(ms, HistorySettings(limit=10), [10], _PRICING),
])
def test_an_iterator_of_messages_is_refused_naming_messages(call):
    messages = [Message(f"m{i}", "user", 5) for i in range(4)]
    # Before: "object of type 'list_iterator' has no len()" after the check had used it up.
    with pytest.raises(TypeError, match="messages must be a sequence .*list_iterator"):
        call(iter(messages))
    with pytest.raises(TypeError, match="messages must be a sequence .*str"):
        call("m0m1")


# -- dashboard: a failed attempt at a database never evicts the one that works -------------------


def test_a_failed_register_keeps_the_working_database(tmp_path, monkeypatch):
    from convmem_dashboard import data
    from convmem_dashboard.db_source import DatabaseSourceError

    path = tmp_path / "agent.sqlite"
    SQLStore(f"sqlite:///{path}").append("c1", _conversation())
    data._databases().clear()
    data._read_database.clear()
    key = data.register_database(str(path))
    working = data.database_source(key)
    assert working is not None

    # The same database (same key) typed again, and this time the connection fails (a wrong
    # password, a server down): before, the registration that worked was dropped, and while the
    # read was cached a wrong password replaced it silently.
    from sqlalchemy import exc as sa_exc

    from convmem_dashboard import db_source

    class Refusing:  # an engine whose server refuses the login
        def connect(self):
            raise sa_exc.OperationalError("connect", {}, Exception("password authentication failed"))

        def dispose(self):
            pass

    def refuse(*args, **kwargs):
        return Refusing()

    monkeypatch.setattr(db_source.sa, "create_engine", refuse)
    with pytest.raises(DatabaseSourceError, match="password authentication failed"):
        data.register_database(str(path))
    assert data.database_source(key) is working
    data._databases().clear()
    data._read_database.clear()
