"""The cost panel of the Token budget page (convmem_dashboard.panel_cost): AppTest of its controls
and URL params, and the pure table / figure builders it calls."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from convmem import (
    ANTHROPIC_SONNET,
    OPENAI_GPT,
    PROVIDERS,
    HistorySettings,
    cache_accounting,
    load_conversations,
    prompt_cache,
    replay,
    sweep_limit_costs,
    sweep_limits,
)
from convmem_dashboard.figures_cost import CACHE_COLORS, cache_steps_figure, sweep_cost_figure
from convmem_dashboard.choices import default_conversation_id as default_conversation
from convmem_dashboard.tables_cost import (
    COST_COLUMNS,
    PRICE_KEYS,
    cost_table,
    pricing_from,
    step_buckets,
    sweep_cost_table,
    sweep_cost_view,
)
from convmem_dashboard.url_params import PARAMS, PROVIDER_KEYS, sanitize
from apptest_support import dashboard_app, ok, open_token_budget_sections

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
PAGE = "app_pages/token_budget.py"


# ------------------------------------------------------------------------------ pure functions


def test_url_presets_are_the_library_presets():
    assert PROVIDER_KEYS == tuple(PROVIDERS)
    for widget in ("cp", *PRICE_KEYS):
        assert widget in PARAMS
    clean, fixes = sanitize({"cp": ["gemini"], "cp_read": ["-1"], "cp_min": ["1e9"], "cp_inc": ["0"], "cp_in": ["3"]})
    assert clean == {"cp_in": ["3"]}
    assert {f.key for f in fixes} == {"cp", "cp_read", "cp_min", "cp_inc"}


def test_pricing_from_widget_values():
    assert pricing_from({}) is ANTHROPIC_SONNET
    assert pricing_from({"cp": "openai", "cp_in": 2.5, "cp_inc": 128}) is OPENAI_GPT
    p = pricing_from({"cp": "openai", "cp_min": 2048})
    assert (p.provider, p.min_cacheable, p.cached_per_mtok) == ("OpenAI (GPT-5.4), edited", 2048, 0.25)
    with pytest.raises(ValueError, match="increment"):
        pricing_from({"cp": "openai", "cp_inc": 0})


def test_cost_table_rows_and_differences():
    a = cache_accounting([2000, 2000], [0, 2000], ANTHROPIC_SONNET)
    b = cache_accounting([3000, 3000], [0, 0], ANTHROPIC_SONNET)
    t = cost_table(a.totals, b.totals, a.cost_without_cache, b.cost_without_cache).set_index("quantity")
    assert list(t.reset_index().columns) == COST_COLUMNS
    assert (t.loc["input tokens sent", "A"], t.loc["input tokens sent", "B"], t.loc["input tokens sent", "B − A"]) == (4000, 6000, 2000)
    assert t.loc["served from cache", "A"] == 2000 and t.loc["served from cache", "B"] == 0
    assert t.loc["cached share", "A"] == 50.0
    assert t.loc["cost", "A"] == round((2000 * 0.2 + 2000 * 2.5) / 1e6, 4)
    assert t.loc["cost without caching", "B"] == round(6000 * 2.0 / 1e6, 4)


def test_step_buckets_sum_every_token_once():
    sent = [100 + (i * 37) % 900 for i in range(1001)]
    prefix = [0] + [min(sent[i - 1], sent[i]) if i % 7 else 0 for i in range(1, 1001)]
    c = cache_accounting(sent, prefix, OPENAI_GPT)
    for max_points in (1, 3, 400, 2000):
        b = step_buckets(c, max_points)
        assert len(b.start) <= max_points
        assert int(b.cached.sum()) == c.totals.cached and int(b.written.sum()) == c.totals.written
        assert int(b.uncached.sum()) == c.totals.uncached
        assert b.start[0] == 0 and b.stop[-1] == 1000
    assert step_buckets(cache_accounting([], [], OPENAI_GPT)).start.tolist() == []
    with pytest.raises(ValueError, match="max_points"):
        step_buckets(c, 0)


def test_cache_steps_figure_traces_and_aggregation():
    msgs = [m for m in load_sample_conv().messages]
    a = prompt_cache(replay(msgs, HistorySettings(1500)), ANTHROPIC_SONNET)
    b = prompt_cache(replay(msgs, HistorySettings(3000, 1500)), ANTHROPIC_SONNET)
    fig = cache_steps_figure(a, b, max_points=10)
    names = [t.name for t in fig.data]
    assert names == [p for _ in "AB" for p in ("served from cache", "written to cache", "uncached")]
    assert [t.showlegend for t in fig.data] == [True] * 3 + [False] * 3  # one legend, for both panels
    assert [a.text.split(":")[0] for a in fig.layout.annotations] == ["A", "B"]  # the panels' titles
    assert [t.marker.color for t in fig.data[:3]] == list(CACHE_COLORS.values())
    assert sum(sum(t.y) for t in fig.data[:3]) == a.totals.sent
    assert sum(sum(t.y) for t in fig.data[3:]) == b.totals.sent
    assert len(fig.data[0].x) <= 10
    if len(msgs) > 10:
        assert "summed over" in fig.layout.title.text
    only_a = cache_steps_figure(a)
    assert len(only_a.data) == 3


def test_sweep_cost_figure_and_table():
    msgs = load_sample_conv().messages
    rows = sweep_limit_costs(msgs, HistorySettings(2000, 1000), [1000, 2000, 3000], OPENAI_GPT)
    fig = sweep_cost_figure(rows, 2000)
    assert [t.name for t in fig.data] == ["cost", "tokens sent", "served from cache"]
    assert list(fig.data[0].y) == [r.cache.cost for r in rows]
    t = sweep_cost_table(rows)
    assert t["limit (tokens)"].tolist() == [1000, 2000, 3000]
    assert t["target (tokens)"].tolist() == [500, 1000, 1500]
    assert t["input tokens sent"].tolist() == [r.cache.sent for r in rows]
    view = sweep_cost_view(len(rows))
    assert set(view["column_config"]) == set(t.columns)  # every column gets a short header
    assert view["column_config"]["served from cache (tokens)"]["label"] == "cached (tokens)"  # the browser test checks the fit


def test_sweep_cost_help_names_every_price_the_cost_holds():
    """The cost column's tooltip says what the number is: with Anthropic's prices (a cache write
    dearer than uncached input), the cost is reads, writes and uncached input each at its own
    price, not the two prices of "cached and uncached" (session 22's tooltip)."""
    msgs = load_sample_conv().messages
    p = ANTHROPIC_SONNET
    rows = sweep_limit_costs(msgs, HistorySettings(2000, 1000), [1000, 2000, 3000], p)
    t = sweep_cost_table(rows)
    three = [round((r.cache.cached * p.cached_per_mtok + r.cache.written * p.write_per_mtok
                    + r.cache.uncached * p.input_per_mtok) / 1e6, 4) for r in rows]
    two = [round((r.cache.cached * p.cached_per_mtok + (r.cache.sent - r.cache.cached) * p.input_per_mtok)
                 / 1e6, 4) for r in rows]
    assert t["cost (USD)"].tolist() == three != two
    help_text = sweep_cost_view(len(rows))["column_config"]["cost (USD)"]["help"]
    assert all(w in help_text for w in ("served from the cache", "written to it", "uncached"))


# ------------------------------------------------------------------------------------ AppTest


def load_sample():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated yet (scripts/make_sample_data.py)")
    return load_conversations(SAMPLE)


def load_sample_conv():
    convs = load_sample()
    return next(c for c in convs if c.id == default_conversation(convs))


def open_page(query: dict | None = None):
    at = dashboard_app()
    if query:
        at.query_params.update(query)
    at.run()
    at.switch_page(PAGE)
    open_token_budget_sections(at, query)
    return ok(at.run())


def cost_rows(at):
    """The cost table's numbers (shown as grouped text: counts and prices share its columns)."""
    shown = next(d.value for d in at.dataframe if list(d.value.columns) == COST_COLUMNS).set_index("quantity")
    for c in ("A", "B", "B − A"):
        assert all(isinstance(v, str) for v in shown[c]), shown[c]
        shown[c] = pd.to_numeric(shown[c].str.replace(",", "", regex=False))
    return shown


def test_panel_shows_the_library_figures_and_the_preset_switch_fills_the_prices():
    conv = load_sample_conv()
    at = open_page()
    assert at.selectbox(key="cp").value == "anthropic"
    assert at.number_input(key="cp_read").value == pytest.approx(ANTHROPIC_SONNET.cached_per_mtok)
    limit = at.slider(key="limit").value
    a = prompt_cache(replay(conv.messages, HistorySettings(limit)), ANTHROPIC_SONNET).totals
    b = prompt_cache(replay(conv.messages, HistorySettings.all_policies(limit, target=round(limit * 0.5))), ANTHROPIC_SONNET).totals
    rows = cost_rows(at)
    assert (rows.loc["input tokens sent", "A"], rows.loc["input tokens sent", "B"]) == (a.sent, b.sent)
    assert (rows.loc["served from cache", "A"], rows.loc["served from cache", "B"]) == (a.cached, b.cached)
    assert rows.loc["cost", "B"] == round(b.cost, 4)
    assert any(t.value.startswith("B sends ") for t in at.text)

    at.selectbox(key="cp").set_value("openai").run()
    ok(at)
    assert at.number_input(key="cp_inc").value == 128
    assert at.number_input(key="cp_read").value == pytest.approx(OPENAI_GPT.cached_per_mtok)
    b2 = prompt_cache(replay(conv.messages, HistorySettings.all_policies(limit, target=round(limit * 0.5))), OPENAI_GPT).totals
    assert cost_rows(at).loc["cost", "B"] == round(b2.cost, 4)

    # an edited price re-prices without touching the tokens
    at.number_input(key="cp_read").set_value(2.5).run()
    rows = cost_rows(ok(at))
    assert rows.loc["served from cache", "B"] == b2.cached
    assert rows.loc["cost", "B"] == round((b2.cached * 2.5 + b2.written * 2.5 + b2.uncached * 2.5) / 1e6, 4)


def test_url_params_reproduce_the_pricing():
    conv = load_sample_conv()
    at = open_page({"cp": "openai", "cp_read": "1.0", "cp_min": "0", "limit": "1500"})
    assert at.number_input(key="cp_read").value == pytest.approx(1.0)
    assert at.number_input(key="cp_min").value == 0
    p = pricing_from({"cp": "openai", "cp_read": 1.0, "cp_min": 0})
    limit = at.slider(key="limit").value
    a = prompt_cache(replay(conv.messages, HistorySettings(limit)), p).totals
    assert cost_rows(at).loc["cost", "A"] == round(a.cost, 4)


def test_bad_url_values_fall_back_to_the_preset():
    at = open_page({"cp": "nope", "cp_read": "nan", "cp_inc": "0"})
    assert at.selectbox(key="cp").value == "anthropic"
    assert at.number_input(key="cp_read").value == pytest.approx(ANTHROPIC_SONNET.cached_per_mtok)
    assert at.number_input(key="cp_inc").value == 1


def test_sweep_has_cost_columns():
    conv = load_sample_conv()
    at = open_page()
    t = next(d.value for d in at.dataframe if "cost (USD)" in d.value.columns)
    limits = t["limit (tokens)"].tolist()
    assert len(limits) >= 5
    settings = HistorySettings(at.slider(key="limit").value)
    rows = sweep_limit_costs(conv.messages, settings, limits, ANTHROPIC_SONNET)
    assert t["cost (USD)"].tolist() == [round(r.cache.cost, 4) for r in rows]
    assert t["input tokens sent"].tolist() == [r.cache.sent for r in rows]


def test_sweep_prices_follow_the_link_when_the_cost_panel_is_closed():
    """The cost panel sits in the comparison expander; closed, its widgets do not run, and the
    sweep used to price with the preset's defaults whatever the link said."""
    conv = load_sample_conv()
    at = open_page({"cp": "openai", "cp_read": "1.0", "cmp": "false", "sweep": "true"})
    assert not at.get("selectbox") or all(s.key != "cp" for s in at.selectbox)  # the panel is closed
    caption = next(c.value for c in at.caption if c.value.startswith("Priced as in"))
    assert "OpenAI (GPT-5.4), edited" in caption and "cache read $1," in caption
    p = pricing_from({"cp": "openai", "cp_read": 1.0})
    t = next(d.value for d in at.dataframe if "cost (USD)" in d.value.columns)
    limits = t["limit (tokens)"].tolist()
    rows = sweep_limit_costs(conv.messages, HistorySettings(at.slider(key="limit").value), limits, p)
    assert t["cost (USD)"].tolist() == [round(r.cache.cost, 4) for r in rows]


def test_prices_that_make_no_pricing_keep_the_sweep_stats_and_say_why(monkeypatch):
    """The sweep computes its stats rows whatever the pricing: a pricing error shows the stats
    table and chart, then the error in place of the cost rows."""
    from convmem_dashboard import panel_cost

    def no_pricing(values):
        raise ValueError("CachePricing.input_per_mtok must be a finite price >= 0 USD per million tokens, got -1.0")

    monkeypatch.setattr(panel_cost, "pricing_from", no_pricing)
    conv = load_sample_conv()
    at = open_page({"cmp": "false"})
    stats = next(d.value for d in at.dataframe if "compactions" in d.value.columns)
    limits = stats["limit (tokens)"].tolist()
    rows = sweep_limits(conv.messages, HistorySettings(at.slider(key="limit").value), limits)
    assert stats["compactions"].tolist() == [r.stats.compactions for r in rows]
    assert any("sweep_pick" in c.proto.id for c in at.get("plotly_chart"))
    assert [e.value for e in at.error] == [
        "These prices do not make a pricing: CachePricing.input_per_mtok must be a finite price >= 0 USD per "
        "million tokens, got -1.0"
    ]
    assert not any("cost (USD)" in d.value.columns for d in at.dataframe)
