"""AppTest for the Token budget page: the numbers shown equal convmem.replay's for the settings shown.

Every expected number is computed here with convmem directly (replay, context_at), never read back
from the page's own helpers, except the widget ranges (tables_budget.limit_bounds), which are the
page's choice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from convmem import HistorySettings, context_at, load_conversations, replay, sweep_limits
from convmem_dashboard.choices import default_conversation_id
from convmem_dashboard.tables_budget import MESSAGE_COLUMNS, limit_bounds, sweep_grid
from apptest_support import dashboard_app, metrics, ok, open_token_budget_sections

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
PAGE = "app_pages/token_budget.py"


@pytest.fixture(scope="module")
def convs():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated yet (scripts/make_sample_data.py)")
    return {c.id: c for c in load_conversations(SAMPLE)}


@pytest.fixture(scope="module")
def default_conv(convs):
    return convs[default_conversation_id(list(convs.values()))]


def open_page(query: dict | None = None, data: str | None = None) -> AppTest:
    at = dashboard_app()
    if query:
        at.query_params.update(query)
    at.run()
    at.switch_page(PAGE)
    if data:
        at.session_state["data"] = data  # the sidebar's dataset picker (convmem_dashboard.data)
    open_token_budget_sections(at, query)
    return at.run()


def assert_metrics(at: AppTest, r) -> None:
    shown = metrics(ok(at))
    shown.pop("Smallest safe limit (tokens)", None)  # tests/test_panel_safe_limit.py checks it
    s = r.stats
    assert shown == {
        "Final total (tokens)": f"{r.totals[-1]:,}",
        "Compactions": f"{s.compactions:,}",
        "Messages dropped": f"{s.messages_dropped:,}",
        "Prefix changes": f"{s.prefix_changes:,}",
        "Mean context (tokens)": f"{s.mean_context:,.0f}",
        "Adds over limit": f"{s.over_limit_steps:,}",
    }


def widget_values(at: AppTest) -> dict:
    out = {}
    for kind in ("slider", "toggle", "selectbox", "radio", "number_input", "multiselect"):
        for w in getattr(at, kind):
            if w.key:
                out[w.key] = w.value
    return out


def test_first_load_shows_compactions(default_conv):
    at = ok(open_page())
    bounds = limit_bounds(default_conv.total_tokens, default_conv.messages[0].tokens)
    values = widget_values(at)
    assert values["conv"] == default_conv.id
    assert values["limit"] == bounds.default
    assert not any(values[k] for k in ("pin_sys", "pin_user", "tools", "on_user", "sum"))
    assert values["tmode"] == "off"
    r = replay(default_conv.messages, HistorySettings(bounds.default))
    assert_metrics(at, r)
    assert r.stats.compactions >= 3  # something to look at on first load
    assert len(at.get("plotly_chart")) >= 2
    assert len(at.caption) >= 3


def test_limit_slider_retunes_the_numbers(default_conv):
    at = open_page()
    bounds = limit_bounds(default_conv.total_tokens, default_conv.messages[0].tokens)
    before = metrics(at)
    for limit in (bounds.default * 2, bounds.lo * 20, bounds.hi):
        limit = min(bounds.hi, limit - limit % bounds.step)
        at.slider(key="limit").set_value(limit).run()
        assert_metrics(at, replay(default_conv.messages, HistorySettings(limit)))
    assert metrics(at) != before
    assert metrics(at)["Compactions"] == "0"  # the top of the range fits the whole conversation


def test_policy_toggles(default_conv):
    at = open_page()
    limit = at.slider(key="limit").value
    at.toggle(key="pin_sys").set_value(True).run()
    assert_metrics(at, replay(default_conv.messages, HistorySettings(limit, pin_system=True)))
    at.toggle(key="tools").set_value(True).run()
    at.toggle(key="on_user").set_value(True).run()
    at.toggle(key="pin_user").set_value(True).run()
    assert_metrics(at, replay(default_conv.messages, HistorySettings.all_policies(limit)))


def test_target_and_summaries(default_conv):
    at = open_page()
    limit = at.slider(key="limit").value
    at.radio(key="tmode").set_value("percent").run()
    pct = at.slider(key="tgt").value
    target = round(limit * pct / 100)
    assert_metrics(at, replay(default_conv.messages, HistorySettings(limit, target)))
    at.toggle(key="sum").set_value(True).run()
    budget = min(int(at.number_input(key="sb").value), target)
    r = replay(default_conv.messages, HistorySettings(limit, target, summary_budget=budget))
    assert_metrics(at, r)
    assert r.stats.summaries_accepted >= 1
    # the selected drop event shows its summary outcome, in plain text
    assert any(t.value.startswith("Summary summary-1 accepted") for t in at.text)
    at.radio(key="tmode").set_value("tokens").run()
    at.number_input(key="tgt_tok").set_value(limit // 3).run()
    target = limit // 3
    assert_metrics(at, replay(default_conv.messages, HistorySettings(limit, target, summary_budget=min(budget, target))))


def test_url_state_reproduces_the_view(convs):
    conv = convs["raj_ali_9480-1"] if "raj_ali_9480-1" in convs else list(convs.values())[1]
    bounds = limit_bounds(conv.total_tokens, conv.messages[0].tokens)
    limit = bounds.lo * 40
    query = {
        "conv": conv.id,
        "limit": str(limit),
        "pin_sys": "true",
        "tools": "true",
        "tmode": "percent",
        "tgt": "60",
        "sum": "true",
        "sb": str(bounds.step * 6),
        "ev": "2",
        "ctx_step": "5",
        "b_pol": ["pin_system", "start_on_user"],
        "b_tgt": "70",
    }
    at = ok(open_page(query))
    values = widget_values(at)
    assert values["conv"] == conv.id
    assert values["limit"] == limit
    assert (values["pin_sys"], values["pin_user"], values["tools"], values["on_user"]) == (True, False, True, False)
    assert (values["tmode"], values["tgt"], values["sum"], values["sb"]) == ("percent", 60, True, bounds.step * 6)
    assert (values["ev"], values["ctx_step"]) == (2, 5)
    assert (values["b_pol"], values["b_tgt"]) == (["pin_system", "start_on_user"], 70)
    target = round(limit * 0.6)
    settings = HistorySettings(limit, target, True, False, True, False, min(bounds.step * 6, target))
    r = replay(conv.messages, settings)
    assert_metrics(at, r)
    event = r.compactions[1]
    assert any(t.value.startswith(f"Drop event 2 of {len(r.compactions)}: add step {event.step} ") for t in at.text)
    ctx = context_at(conv.messages, settings, 5)
    assert any(t.value == f"After add step 5: {len(ctx)} message{'' if len(ctx) == 1 else 's'}, {sum(m.tokens for m in ctx):,} tokens." for t in at.text)


def test_bad_url_values_fall_back_to_defaults(default_conv):
    at = ok(open_page({"conv": "no-such-conversation", "limit": "999999999", "tmode": "sideways", "ev": "abc"}))
    bounds = limit_bounds(default_conv.total_tokens, default_conv.messages[0].tokens)
    values = widget_values(at)
    assert (values["conv"], values["limit"], values["tmode"]) == (default_conv.id, bounds.default, "off")


def test_drop_event_selection_and_context_step(default_conv):
    at = open_page()
    limit = at.slider(key="limit").value
    r = replay(default_conv.messages, HistorySettings(limit))
    at.number_input(key="ev").set_value(3).run()
    event = r.compactions[2]
    assert any(t.value.startswith(f"Drop event 3 of {len(r.compactions)}: add step {event.step} ") for t in ok(at).text)
    tables = [d.value for d in at.dataframe if list(d.value.columns)[:2] == ["id", "role"]]
    assert list(tables[0]["id"]) == event.dropped_ids
    assert list(tables[0]["reason"]) == [d.reason for d in event.dropped]
    # the context step follows the selected event until one is chosen
    ctx = context_at(default_conv.messages, r.settings, event.step)
    context_tables = [d.value for d in at.dataframe if list(d.value.columns)[:2] == ["#", "id"]]
    assert list(context_tables[0]["id"]) == [m.id for m in ctx]
    at.number_input(key="ctx_step").set_value(len(default_conv.messages) - 1).run()
    ctx = context_at(default_conv.messages, r.settings, len(default_conv.messages) - 1)
    context_tables = [d.value for d in at.dataframe if list(d.value.columns)[:2] == ["#", "id"]]
    assert list(context_tables[0]["id"]) == [m.id for m in ctx]


def test_table_and_downloads(default_conv):
    at = ok(open_page())
    limit = at.slider(key="limit").value
    r = replay(default_conv.messages, HistorySettings(limit))
    table = next(d.value for d in at.dataframe if list(d.value.columns) == list(MESSAGE_COLUMNS))
    assert list(table["id"]) == [m.id for m in default_conv.messages]
    assert [None if pd.isna(v) else int(v) for v in table["dropped at"]] == list(r.dropped_at)
    assert list(table["reason"]) == [x or "" for x in r.drop_reason]
    labels = {b.label: b for b in at.download_button}
    # Both are made on click (deferred, through convmem_dashboard.export_safety).
    assert {"Download the table (CSV)", "Download this context (JSON)"} <= set(labels)


def test_comparison_a_against_b(default_conv):
    at = ok(open_page())
    limit = at.slider(key="limit").value
    a = replay(default_conv.messages, HistorySettings(limit)).stats
    b = replay(default_conv.messages, HistorySettings.all_policies(limit, target=round(limit * 0.5))).stats
    cmp = next(d.value for d in at.dataframe if list(d.value.columns) == ["metric", "unit", "A", "B", "B − A"])
    rows = cmp.set_index("metric")
    assert (rows.loc["compactions", "A"], rows.loc["compactions", "B"]) == (a.compactions, b.compactions)
    assert (rows.loc["prefix changes (uncached re-sends)", "A"], rows.loc["prefix changes (uncached re-sends)", "B"]) == (
        a.prefix_changes,
        b.prefix_changes,
    )
    assert rows.loc["tokens dropped", "B"] == b.tokens_dropped
    # B's own widgets: a different B limit
    at.number_input(key="b_limit").set_value(limit * 2).run()
    b2 = replay(default_conv.messages, HistorySettings.all_policies(limit * 2, target=limit)).stats
    rows = next(d.value for d in ok(at).dataframe if list(d.value.columns)[:2] == ["metric", "unit"]).set_index("metric")
    assert rows.loc["max context", "B"] == b2.max_context


@pytest.mark.parametrize("data", ["synthetic-1000", "retail"])
def test_other_datasets(data):
    from convmem_dashboard.data import RETAIL_FILE, get_dataset

    if data == "retail" and not RETAIL_FILE.is_file():
        pytest.skip("real retail data not found (needs ../shared/real_data)")
    at = ok(open_page(data=data))
    conv = get_dataset(data).conversation(at.selectbox(key="conv").value)
    limit = at.slider(key="limit").value
    assert_metrics(at, replay(conv.messages, HistorySettings(limit)))
    at.toggle(key="tools").set_value(True).run()
    assert_metrics(at, replay(conv.messages, HistorySettings(limit, keep_tool_groups=True)))


def test_no_drop_event_wording(default_conv):
    """At a limit the whole conversation fits, the page never speaks of a selected drop event or of
    triangles it does not draw."""
    at = open_page()
    bounds = limit_bounds(default_conv.total_tokens, default_conv.messages[0].tokens)
    at.slider(key="limit").set_value(bounds.hi).run()
    assert metrics(ok(at))["Compactions"] == "0"
    step = at.number_input(key="ctx_step")
    last = len(default_conv.messages) - 1
    assert step.proto.placeholder == f"{last} (the last add; click the total line to pick a step)"
    captions = [c.value for c in at.caption]
    assert not any("riangle" in c or "drop event" in c.replace("to see drop events", "") for c in captions), captions
    assert any(c.startswith("Each point is the total after one add") and "Nothing was dropped" in c for c in captions)
    # with drop events, both speak of them again
    at.slider(key="limit").set_value(bounds.default).run()
    assert "(the selected drop event;" in at.number_input(key="ctx_step").proto.placeholder
    assert any("Triangles mark the" in c.value for c in at.caption)


def test_sweep_limits_are_evenly_spaced_through_the_current_limit(default_conv):
    at = open_page()
    bounds = limit_bounds(default_conv.total_tokens, default_conv.messages[0].tokens)
    limit = bounds.default + 3 * bounds.step
    at.slider(key="limit").set_value(limit).run()
    table = next(d.value for d in ok(at).dataframe if "limit (tokens)" in d.value.columns)
    limits = list(table["limit (tokens)"])
    assert limit in limits
    assert len({b - a for a, b in zip(limits, limits[1:])}) == 1
    assert tuple(limits) == sweep_grid(bounds.lo, bounds.hi, at.slider(key="sw_n").value, bounds.step, through=limit)
    row = table.set_index("limit (tokens)").loc[limit]
    r = replay(default_conv.messages, HistorySettings(limit))
    assert (row["compactions"], row["messages dropped"]) == (r.stats.compactions, r.stats.messages_dropped)


def sweep_chart_traces(at: AppTest) -> dict[str, tuple[list, list]]:
    """The sweep chart's traces as name -> (x, y), read from the spec sent to the browser."""
    chart = next(c for c in at.get("plotly_chart") if "sweep_pick" in c.proto.id)
    return {t["name"]: (t["x"], t["y"]) for t in json.loads(chart.proto.spec)["data"] if t.get("name")}


def test_sweep_opened_shows_convmem_sweep_limits_row_for_row(default_conv):
    """Computed per limit (cached rows, a progress bar while new ones run), the sweep still shows
    what convmem.sweep_limits gives over the whole grid: every table column and the chart's three
    panels, with a target (kept in % of each limit) and a pin on; and again after the sweep is
    closed and opened, and after a click on a swept limit (rows reused)."""
    at = open_page({"tmode": "percent", "tgt": "60", "pin_sys": "true", "cmp": "false"})  # no "sweep": the
    for turn in ("open", "reopen", "pick"):  # link would win over the state; open_page opens it
        ok(at)
        limit = at.slider(key="limit").value
        settings = HistorySettings(limit, round(limit * 60 / 100), pin_system=True)
        table = next(d.value for d in at.dataframe if "limit (tokens)" in d.value.columns and "compactions" in d.value.columns)
        limits = list(table["limit (tokens)"])
        bounds = limit_bounds(default_conv.total_tokens, default_conv.messages[0].tokens)
        assert tuple(limits) == sweep_grid(bounds.lo, bounds.hi, at.slider(key="sw_n").value, bounds.step, through=limit)
        rows = sweep_limits(default_conv.messages, settings, limits)
        assert table["compactions"].tolist() == [r.stats.compactions for r in rows], turn
        assert table["tokens dropped"].tolist() == [r.stats.tokens_dropped for r in rows], turn
        assert table["prefix changes"].tolist() == [r.stats.prefix_changes for r in rows], turn
        assert table["mean context (tokens)"].tolist() == [round(r.stats.mean_context, 1) for r in rows], turn
        traces = sweep_chart_traces(at)
        assert traces["compactions"] == (limits, [r.stats.compactions for r in rows]), turn
        assert traces["messages dropped"] == (limits, [r.stats.messages_dropped for r in rows]), turn
        assert traces["mean context"][1] == pytest.approx([r.stats.mean_context for r in rows]), turn
        assert sum(r.stats.compactions for r in rows) > 0
        if turn == "open":  # closed as a click does: the state and the link's ?sweep= (bound) both change
            at.session_state["sweep"] = False
            at.query_params["sweep"] = "false"
            assert not any("compactions" in d.value.columns for d in ok(at.run()).dataframe)
            at.session_state["sweep"] = True
            at.query_params["sweep"] = "true"
        elif turn == "reopen":
            at.session_state["limit"] = limits[limits.index(limit) - 1]
        at.run()
    assert not at.get("progress")  # the bar is gone once the rows are in


def test_b_policies_on_their_own_row_and_preview_columns_wide(default_conv):
    """The B widgets get room (the four policies on a full-width row), and every preview column
    is wide and wraps, placed right after the short columns."""
    at = ok(open_page())
    policies = at.multiselect(key="b_pol")
    assert policies.value == ["pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user"]
    tables = [d for d in at.dataframe if "preview" in d.value.columns]
    assert [list(d.value.columns)[0] for d in tables] == ["id", "#", "step"]  # drop event, context, all
    for d in tables:
        proto, key = d.proto, list(d.value.columns)[0]
        config = json.loads(proto.columns)
        width = config["preview"]["width"]
        assert width == "large" or width >= 290, key  # 80 characters in two wrapped lines at least
        assert proto.row_height > 64, key  # Streamlit wraps text cells only in rows over 4rem
        order = list(proto.column_order)
        assert "preview" in order and order.index("preview") <= 6, (key, order)


def test_drop_event_navigation_previous_next_and_jump_to_a_message_id(default_conv):
    at = open_page()
    limit = at.slider(key="limit").value
    r = replay(default_conv.messages, HistorySettings(limit))
    n_events = len(r.compactions)
    assert n_events >= 3

    def shown() -> str:
        return next(t.value for t in ok(at).text if t.value.startswith("Drop event "))

    assert shown().startswith(f"Drop event 1 of {n_events}: ")
    assert at.button(key="ev_prev").disabled and not at.button(key="ev_next").disabled
    at.button(key="ev_next").click().run()
    assert shown().startswith(f"Drop event 2 of {n_events}: add step {r.compactions[1].step} ")
    at.button(key="ev_prev").click().run()
    assert shown().startswith(f"Drop event 1 of {n_events}: ")
    # the event that dropped a given message, by its id (the URL keeps the event number)
    target = r.compactions[2].dropped_ids[0]
    at.text_input(key="ev_msg").set_value(target).run()
    assert shown().startswith(f"Drop event 3 of {n_events}: add step {r.compactions[2].step} ")
    assert at.number_input(key="ev").value == 3 and at.query_params["ev"] in ("3", ["3"])
    assert any(f"Message '{target}'" in c.value and "drop event 3" in c.value for c in at.caption)
    # an unknown id and a message never dropped are said so; the selection stays
    at.text_input(key="ev_msg").set_value("no-such-id").run()
    assert any("No message has the id 'no-such-id'" in c.value for c in at.caption)
    kept = next(m.id for m, d in zip(r.messages, r.dropped_at) if d is None)
    at.text_input(key="ev_msg").set_value(kept).run()
    assert any(f"Message '{kept}'" in c.value and "never dropped" in c.value for c in at.caption)
    assert shown().startswith(f"Drop event 3 of {n_events}: ")
    # the last event disables "Next"
    at.number_input(key="ev").set_value(n_events).run()
    assert at.button(key="ev_next").disabled and not at.button(key="ev_prev").disabled


def test_steps_shown_default_to_the_whole_conversation(default_conv):
    at = open_page()
    assert at.slider(key="win").value == (0, len(default_conv.messages) - 1)


def test_the_sidebar_counts_one_conversation_in_the_singular():
    """A synthetic dataset holds one conversation: "1 conversation · 1,000 messages", not
    "1 conversations" (a new user read it in the sidebar)."""
    at = ok(open_page(data="synthetic-1000"))
    captions = [c.value for c in at.sidebar.caption]
    assert any(c.startswith("Synthetic") and ": 1 conversation · 1,000 messages · tokens: " in c for c in captions), captions
