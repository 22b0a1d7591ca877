"""The smallest-safe-limit panel and the exact limit input on the Token budget page (AppTest),
and the panel's pure helpers. Expected numbers come from convmem directly."""

from __future__ import annotations

from pathlib import Path

import pytest

from convmem import HistorySettings, Message, explain_safe_limit, load_conversations, replay
from convmem_dashboard.panel_safe_limit import mark_safe_limit, protected_status, safe_limit_caption
from convmem_dashboard.figures_budget import sweep_figure
from convmem_dashboard.choices import default_conversation_id
from convmem_dashboard.data import md_escape
from convmem_dashboard.tables_budget import limit_bounds
from apptest_support import dashboard_app, metrics, ok

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
PAGE = "pages/token_budget.py"
SAFE = "Smallest safe limit (tokens)"


@pytest.fixture(scope="module")
def conv():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated yet (scripts/make_sample_data.py)")
    convs = load_conversations(SAMPLE)
    by_id = {c.id: c for c in convs}
    return by_id[default_conversation_id(convs)]  # the conversation every page opens on


def open_page(query: dict | None = None):
    at = dashboard_app()
    if query:
        at.query_params.update(query)
    at.run()
    at.switch_page(PAGE)
    return ok(at.run())


def caption_with(at, text: str) -> str:
    found = [c.value for c in at.caption if text in c.value]
    assert found, [c.value for c in at.caption]
    return found[0]


def test_default_view_shows_the_answer_and_its_step(conv):
    at = open_page()
    want = explain_safe_limit(conv.messages, "latest_user")
    assert metrics(at)[SAFE] == f"{want.limit:,}"
    text = caption_with(at, "Decided at add step")
    assert md_escape(f"add step {want.step:,} by message {want.message_id}") in text  # shown literally


def test_exact_input_sets_the_limit_and_the_url(conv):
    at = open_page()
    want = explain_safe_limit(conv.messages, "latest_user").limit
    at.number_input(key="limit_n").set_value(want).run()
    ok(at)
    assert at.slider(key="limit").value == want
    assert at.query_params["limit"] == str(want)
    assert "Current limit" in caption_with(at, "kept at this limit")
    r = replay(conv.messages, HistorySettings(want))
    assert metrics(at)["Final total (tokens)"] == f"{r.totals[-1]:,}"
    at.number_input(key="limit_n").set_value(want - 1).run()
    ok(at)
    assert at.slider(key="limit").value == want - 1
    caption_with(at, "dropped at this limit")


def test_use_this_limit_button(conv):
    at = open_page({"sl_p": "system"})
    want = explain_safe_limit(conv.messages, "system").limit
    assert metrics(at)[SAFE] == f"{want:,}"
    at.button(key="sl_use").click().run()
    ok(at)
    assert at.slider(key="limit").value == want and at.number_input(key="limit_n").value == want
    caption_with(at, "kept at this limit")


def test_url_round_trip_message_id_and_policies(conv):
    bounds = limit_bounds(conv.total_tokens, conv.messages[0].tokens)
    target = conv.messages[len(conv.messages) // 2]
    limit = bounds.lo + 7  # off the slider's step grid: only the exact input reaches it
    at = open_page({"sl_p": "message", "sl_id": target.id, "limit": str(limit), "pin_sys": "true"})
    assert at.radio(key="sl_p").value == "message" and at.text_input(key="sl_id").value == target.id
    assert at.number_input(key="limit_n").value == limit == at.slider(key="limit").value
    want = explain_safe_limit(conv.messages, target.id, pin_system=True)
    assert metrics(at)[SAFE] == f"{want.limit:,}"
    assert at.query_params["sl_id"] == target.id


def test_unknown_message_id_is_a_message_not_a_traceback():
    at = open_page({"sl_p": "message", "sl_id": "no-such-id"})
    assert [w.value for w in at.warning] == ["No safe limit for this choice:"]
    assert any("protect='no-such-id' is no message id" in t.value for t in at.text)
    assert SAFE not in metrics(at)


# ------------------------------------------------------------------------------- pure helpers


def test_protected_status_matches_drops():
    msgs = [Message("s", "system", 50), Message("u1", "user", 10), Message("a1", "assistant", 30),
            Message("u2", "user", 5), Message("a2", "assistant", 20)]
    for protect in ("latest_user", "system", "a1"):
        want = explain_safe_limit(msgs, protect).limit
        assert protected_status(replay(msgs, HistorySettings(want)), protect).kept
        below = protected_status(replay(msgs, HistorySettings(want - 1)), protect)
        assert not below.kept and below.step is not None


def test_mark_and_caption():
    msgs = [Message("u1", "user", 10), Message("a1", "assistant", 30)]
    got = explain_safe_limit(msgs)
    fig = mark_safe_limit(go_fig := sweep_figure([], None), got)
    assert fig is go_fig and any(s.x0 == got.limit for s in fig.layout.shapes)
    assert "Exact: every smaller limit drops it" in safe_limit_caption(got)
    pinned = explain_safe_limit(msgs, pin_latest_user=True)
    assert safe_limit_caption(pinned) == "Any limit keeps it: it is pinned: History keeps it at any limit."
    assert len(mark_safe_limit(sweep_figure([], None), pinned).layout.shapes) == 0
