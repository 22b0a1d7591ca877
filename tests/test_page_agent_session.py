"""Coding-agent sessions in the dashboard (issue 13): a Claude Code session uploaded on Your data loads,
the token budget page shows the agent's compactions beside convmem's, the Agent session page
shows usage, calibration and cost, downloads redact by default, a local file is followed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from apptest_support import DeferredDownloads, dashboard_app, metrics, ok, to_your_data
from convmem_dashboard.live_tail import SessionTail, allowed_roots, check_path

import pytest

DATA = Path(__file__).parent / "data" / "agent_sessions"
SESSION = (DATA / "claude_code_session.jsonl").read_bytes()


def frame(at, column: str):
    """The first dataframe shown with ``column``."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def uploaded(name: str = "session.jsonl", data: bytes = SESSION):
    at = to_your_data(ok(dashboard_app().run()))
    at.get("file_uploader")[0].set_value((name, data, "application/jsonl"))
    return ok(at.run())


def test_upload_on_your_data_then_token_budget_shows_the_agents_compactions():
    at = uploaded()
    shown = metrics(at)
    assert (shown["Conversations"], shown["Messages"]) == ("2", "12")
    assert [s.value for s in at.success] == ["Using the uploaded file: 2 conversations."]
    at.switch_page("app_pages/token_budget.py")
    at.session_state["conv"] = "S1"
    at.session_state["cmp"] = True  # the comparison, with the cost panel, starts closed
    ok(at.run())
    table = frame(at, "before (reported)")
    assert table["add step"].tolist() == [6] and table["before (reported)"].tolist() == [1200]
    assert any("Green stars: the agent's own compactions" in c.value for c in at.caption)
    # the prompt-cache cost panel prices the session's calls from the reported cache reads
    assert any(t.value.startswith("The agent's own 3 calls, as the provider reported them")
               for t in at.text)


def test_agent_session_page_usage_calibration_cost_and_redacted_download():
    at = uploaded()
    at.switch_page("app_pages/agent_session.py")
    with DeferredDownloads() as dl:
        ok(at.run())
        usage = frame(at, "reported prompt")
        assert usage["reported prompt"].tolist() == [1010, 1053, 925]
        assert "Cost as reported ($)" in metrics(at)
        assert at.toggle(key="data_redact").value is True
        body = json.loads(dl.made["session-S1-redacted.json"]())
    assert body["redacted"] is True and body["messages"][0]["content"].startswith("[redacted: ")
    assert "flaky" not in json.dumps(body)
    # the sidechain is a conversation of its own
    at.selectbox(key="agent_conv").set_value("S1:sidechain:1")
    ok(at.run())
    assert frame(at, "reported prompt")["reported prompt"].tolist() == [100]


def test_agent_session_page_without_sessions_says_where_to_get_one():
    at = dashboard_app()
    at.switch_page("app_pages/agent_session.py")
    ok(at.run())
    assert any("holds no coding-agent session" in i.value for i in at.info)
    # the paths are code, so Markdown keeps their ~ and * (it struck them out as ~...~ and *...*)
    assert any("`~/.claude/projects/*/*.jsonl`" in i.value
               and "`~/.codex/sessions/**/rollout-*.jsonl`" in i.value for i in at.info)


def test_follow_a_file_being_written(tmp_path):
    root = tmp_path / "projects"
    root.mkdir()
    f = root / "live.jsonl"
    text = SESSION.decode()
    cut = text.index("\n", len(text) // 3) + 1
    f.write_text(text[:cut] + text[cut: cut + 30])  # a complete part and a record half written
    roots = allowed_roots({"CONVMEM_SESSION_ROOTS": str(root)})
    tail = SessionTail(check_path(str(f), roots))
    assert tail.poll() is True
    first = tail.state.result[0]
    assert first.envelope.truncated and tail.state.reads == 1
    assert tail.poll() is False  # unchanged: one stat, no read
    f.write_text(text)
    assert tail.poll() is True and tail.state.reads == 2
    assert len(tail.state.result[0].messages) == 10 > len(first.messages)
    small = SessionTail(check_path(str(f), roots), max_bytes=100)
    assert small.poll() and small.state.stopped and "over the 100-byte cap" in small.state.message
    for bad, why in (("", "enter the path"), (str(tmp_path / "x.json"), "ends in .jsonl"),
                     ("/etc/passwd.jsonl", "only files under"),
                     (str(root / "missing.jsonl"), "no such file")):
        with pytest.raises(ValueError, match=why):
            check_path(bad, roots)


def test_follow_on_the_page(tmp_path, monkeypatch):
    root = tmp_path / "projects"
    root.mkdir()
    shutil.copy(DATA / "claude_code_session.jsonl", root / "s.jsonl")
    monkeypatch.setenv("CONVMEM_SESSION_ROOTS", str(root))
    at = dashboard_app()
    at.switch_page("app_pages/agent_session.py")
    ok(at.run())
    at.text_input(key="tail_path").set_value(str(root / "s.jsonl"))
    at.toggle(key="tail_on").set_value(True)
    ok(at.run())
    assert frame(at, "reported prompt")["reported prompt"].tolist() == [1010, 1053,
                                                                                      925]
    at.text_input(key="tail_path").set_value("/etc/passwd")
    ok(at.run())
    assert any("ends in .jsonl" in e.value for e in at.error)


def test_a_link_names_the_session_conversation_and_a_wrong_one_falls_back_to_the_first():
    """?agent_conv= (bound to the picker: the browser writes it when a conversation is picked) opens
    that session conversation; a value that is not one of the dataset's sessions shows the first,
    without an error (session 27's new user: a link to a sidechain opened the main session)."""
    key = uploaded().session_state["data"]
    for asked, shown in (("S1:sidechain:1", "S1:sidechain:1"), ("nope", "S1")):
        at = dashboard_app()
        at.switch_page("app_pages/agent_session.py")
        at.query_params.update({"data": key, "agent_conv": asked})
        ok(at.run())
        assert at.selectbox(key="agent_conv").value == shown
        assert not at.exception and not at.error
