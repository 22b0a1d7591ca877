"""The smallest-safe-limit panel and the exact limit input on the Token budget page (AppTest),
and the panel's pure helpers. Expected numbers come from convmem directly."""

from __future__ import annotations

from pathlib import Path

import re

import pytest

from convmem import HistorySettings, Message, explain_safe_limit, load_conversations, replay
from convmem_dashboard.panel_safe_limit import mark_safe_limit, protected_status, safe_limit_caption
from convmem_dashboard.figures_budget import sweep_figure
from convmem_dashboard.choices import default_conversation_id as default_conversation
from convmem_dashboard.tables_budget import limit_bounds
from apptest_support import dashboard_app, metrics, ok

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
PAGE = "app_pages/token_budget.py"
SAFE = "Smallest safe limit (tokens)"


@pytest.fixture(scope="module")
def conv():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated yet (scripts/make_sample_data.py)")
    convs = load_conversations(SAMPLE)
    by_id = {c.id: c for c in convs}
    return by_id[default_conversation(convs)]


def open_page(query: dict | None = None):
    at = dashboard_app()
    if query:
        at.query_params.update(query)
    at.run()
    at.switch_page(PAGE)
    return ok(at.run())


def caption_with(at, text: str) -> str:
    """The caption holding ``text``, Markdown escapes removed (captions escape user text)."""
    shown = [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]
    found = [c for c in shown if text in c]
    assert found, shown
    return found[0]


def test_default_view_shows_the_answer_and_its_step(conv):
    at = open_page()
    want = explain_safe_limit(conv.messages, "latest_user")
    assert metrics(at)[SAFE] == f"{want.limit:,}"
    text = caption_with(at, "Decided at add step")
    assert f"add step {want.step:,} by message {want.message_id}" in text


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
    # The input says the range it takes (a number outside it is refused): a new user typed 5 and
    # 99999 and saw only a red mark (sessions 19 and 20).
    box = at.number_input(key="limit_n")
    bounds = limit_bounds(conv.total_tokens, conv.messages[0].tokens)
    assert (box.min, box.max) == (bounds.lo, bounds.hi)
    assert f"from {bounds.lo:,} to {bounds.hi:,} tokens" in box.help


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


def _status_by_loop(r, protect):
    """The reference: the first drop of a protected message, message by message (the oldest on a
    tie), as protected_status read it before it used numpy."""
    msgs, first = r.messages, None
    if protect == "latest_user":
        users = [i for i, m in enumerate(msgs) if m.role == "user"]
        picks = [(r.dropped_at[i], i) for k, i in enumerate(users)
                 if r.dropped_at[i] is not None and r.dropped_at[i] < (users[k + 1] if k + 1 < len(users) else len(msgs))]
    elif protect == "system":
        picks = [(r.dropped_at[i], i) for i, m in enumerate(msgs) if m.role == "system" and r.dropped_at[i] is not None]
    else:
        picks = [(r.dropped_at[i], i) for i, m in enumerate(msgs) if m.id == protect and r.dropped_at[i] is not None]
    if picks:
        first = min(picks)
    return (True, None, None) if first is None else (False, first[0], msgs[first[1]].id)


@pytest.mark.parametrize("seed", range(4))
def test_protected_status_equals_the_loop_on_generated_conversations(seed):
    from convmem.synthetic import generate_conversation

    from convmem_dashboard.figures_budget import replay_arrays

    msgs = generate_conversation(400, seed=seed).messages
    ids = [msgs[5].id, msgs[200].id, msgs[-1].id, "absent-id"]
    seen = set()
    for limit in (1500, 4000, 12000, 10**7):
        for pol in ({}, {"pin_system": True}, {"keep_tool_groups": True, "start_on_user": True}, {"pin_latest_user": True}):
            r = replay(msgs, HistorySettings(limit, **pol))
            a = replay_arrays(r)
            for protect in ("latest_user", "system", *ids):
                got = protected_status(r, protect, a)
                want = _status_by_loop(r, protect)
                assert (got.kept, got.step, got.message_id) == want, (limit, pol, protect)
                assert got == protected_status(r, protect)
                seen.add(got.kept)
    assert seen == {True, False}


@pytest.mark.parametrize("budget", [None, 40, 300])
def test_the_limit_free_key_gives_the_answer_of_every_limit(budget):
    """The panel caches the answer under settings without the limit when there is no target:
    the answer at every limit equals the one under that key (summaries on or off)."""
    from convmem.synthetic import generate_conversation

    from convmem_dashboard.panel_safe_limit import _limit_free, safe_policies

    msgs = generate_conversation(300, seed=3).messages
    for pol in ({}, {"pin_system": True, "keep_tool_groups": True}, {"start_on_user": True}):
        answers = set()
        for limit in range(400, 6000, 700):
            s = HistorySettings(limit, summary_budget=None if budget is None else min(budget, limit), **pol)
            for protect in ("latest_user", "system", msgs[40].id):
                want = explain_safe_limit(msgs, protect, **safe_policies(s))
                assert explain_safe_limit(msgs, protect, **safe_policies(_limit_free(s))) == want
                answers.add(want.limit)
        assert len(answers) > 1
    with_target = HistorySettings(1000, target=500)
    assert _limit_free(with_target) == with_target  # a target's ratio moves with rounding: kept


def test_the_answer_key_drops_only_policies_the_answer_does_not_read():
    """The cache key of the newest-user answer ignores start_on_user (and everything once the turn
    is pinned): the answer under the key equals the answer with every policy, on generated
    conversations with targets and summary budgets."""
    import itertools

    from convmem.synthetic import generate_conversation

    from convmem_dashboard.panel_safe_limit import _answer_key, safe_policies

    keys = set()
    for seed in (3, 8):
        msgs = generate_conversation(400, seed=seed).messages
        for bits in itertools.product((False, True), repeat=4):
            pol = dict(zip(("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user"), bits))
            for extra in ({}, {"target": 1500}, {"summary_budget": 200}):
                s = HistorySettings(3000, **extra, **pol)
                for protect in ("latest_user", "system", msgs[50].id):
                    key = _answer_key(s, protect)
                    assert explain_safe_limit(msgs, protect, **safe_policies(key)) == explain_safe_limit(
                        msgs, protect, **safe_policies(s)), (pol, extra, protect)
                    if protect == "latest_user":
                        keys.add(key)
    assert HistorySettings(0, pin_latest_user=True) in keys and not any(k.start_on_user for k in keys)


def test_mark_and_caption():
    msgs = [Message("u1", "user", 10), Message("a1", "assistant", 30)]
    got = explain_safe_limit(msgs)
    fig = mark_safe_limit(go_fig := sweep_figure([], None), got)
    assert fig is go_fig and any(s.x0 == got.limit for s in fig.layout.shapes)
    assert "Exact: every smaller limit drops it" in safe_limit_caption(got)
    pinned = explain_safe_limit(msgs, pin_latest_user=True)
    assert safe_limit_caption(pinned) == "Any limit keeps it: it is pinned: History keeps it at any limit."
    assert len(mark_safe_limit(sweep_figure([], None), pinned).layout.shapes) == 0
    plain = explain_safe_limit([*msgs, Message("u2", "user", 5)])
    assert plain.limit == plain.need and "tokens more" not in safe_limit_caption(plain)
    budget = explain_safe_limit([*msgs, Message("u2", "user", 5)], summary_budget=40, summarizer=lambda prev, dropped: None)
    assert budget.limit > budget.need  # the summary budget sits between the cut and the limit
    assert (f"{budget.need:,} tokens must survive the cut there. The limit is "
            f"{budget.limit - budget.need:,} tokens more: a cut goes below the limit by the target's gap "
            "and the summary budget.") in safe_limit_caption(budget)
