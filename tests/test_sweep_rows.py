"""The limit sweep computed one limit at a time (HistorySettings.at_limit, convmem_dashboard.sweep_rows,
cache_budget.get_sweep_rows) equals the whole-sweep functions (convmem.sweep_limits,
convmem.sweep_limit_costs) on the sample conversations, and at_limit keeps the sweep's old rule."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from convmem import (
    ANTHROPIC_SONNET,
    OPENAI_GPT,
    CachePricing,
    HistorySettings,
    cache_accounting,
    load_conversations,
    sweep_limit_costs,
    sweep_limits,
)
from convmem_dashboard import cache_budget as cb
from convmem_dashboard.sweep_rows import cache_totals, cost_row, limit_run

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"

#: Settings of every kind the sweep takes: the plain walk, a target, each policy, summaries, clearing.
SETTINGS = (
    HistorySettings(800),
    HistorySettings(1_000, 600),
    HistorySettings(900, 450, pin_system=True, pin_latest_user=True),
    HistorySettings.all_policies(1_200, 700, summary_budget=150),
    HistorySettings(1_000, keep_tool_groups=True, start_on_user=True, summary_budget=2_000),
    HistorySettings(1_000, 800, clear_trigger=600, clear_keep=1),
)
LIMITS = (300, 550, 800, 1_000, 1_650, 4_000)


def old_at_limit(settings: HistorySettings, limit: int) -> tuple[int, int | None, int | None]:
    """The rule sweep_limits / sweep_limit_costs inlined before at_limit: (limit, target, budget)."""
    target = settings.target
    if target is not None and settings.limit:
        target = min(limit, round(target * limit / settings.limit))
    budget = settings.summary_budget
    cap = limit if target is None else target
    if budget is not None:
        budget = min(budget, cap)
    return limit, target, budget


@pytest.fixture(scope="module")
def convs():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated yet (scripts/make_sample_data.py)")
    return load_conversations(SAMPLE)[:6]


@given(
    limit=st.integers(1, 10**7),
    new=st.integers(1, 10**7),
    target_pct=st.none() | st.integers(0, 100),
    budget=st.none() | st.integers(0, 10**7),
    pins=st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans()),
    clear=st.none() | st.integers(0, 10**7),
)
def test_at_limit_is_the_old_inline_rule_and_keeps_every_other_field(limit, new, target_pct, budget, pins, clear):
    target = None if target_pct is None else limit * target_pct // 100
    s = HistorySettings(limit, target, *pins, summary_budget=budget, clear_trigger=clear, clear_keep=2)
    moved = s.at_limit(new)
    assert (moved.limit, moved.target, moved.summary_budget) == old_at_limit(s, new)
    assert (moved.pin_system, moved.pin_latest_user, moved.keep_tool_groups, moved.start_on_user) == pins
    # a clearing trigger keeps its ratio to the limit, as a target does (at most the new limit)
    assert moved.clear_trigger == (None if clear is None else min(new, round(clear * new / limit)))
    assert moved.clear_keep == 2
    if moved.target is not None:
        assert moved.target <= new
    assert moved.at_limit(new) == moved  # a row keyed by the settings at its limit is that row


@given(
    requests=st.lists(st.tuples(st.integers(0, 2**40), st.floats(0, 1)), max_size=60),
    typecode=st.sampled_from("iq"),
    low=st.integers(0, 3_000),
    increment=st.integers(1, 300),
    prices=st.tuples(*[st.floats(0, 100, allow_nan=False)] * 3),
)
def test_cache_totals_equal_cache_accounting(requests, typecode, low, increment, prices):
    """The vectorized totals equal the library's, cost included, for any requests a replay can
    make (each prefix within its request) in either array width."""
    cap = 2**31 - 1 if typecode == "i" else 2**40
    sent = [min(total, cap) for total, _ in requests]
    prefix = [int(total * share) for total, (_, share) in zip(sent, requests)]
    pricing = CachePricing("test", *prices, min_cacheable=low, increment=increment)
    got = cache_totals(array(typecode, sent), array(typecode, prefix), pricing)
    assert got == cache_accounting(sent, prefix, pricing).totals


@pytest.mark.parametrize("settings", SETTINGS, ids=repr)
def test_per_limit_rows_equal_the_whole_sweeps(convs, settings):
    for conv in convs:
        stats = [sweep_limits(conv.messages, settings.at_limit(limit), [limit])[0] for limit in LIMITS]
        assert stats == sweep_limits(conv.messages, settings, LIMITS), conv.id
        runs = [limit_run(conv.messages, settings.at_limit(limit)) for limit in LIMITS]
        # the page takes a priced limit's stats row from its replay: equal to the stats pass
        assert [r.stats for r in runs] == [row.stats for row in stats], conv.id
        for pricing in (ANTHROPIC_SONNET, OPENAI_GPT):
            assert [cost_row(r, pricing) for r in runs] == sweep_limit_costs(
                conv.messages, settings, LIMITS, pricing
            ), (conv.id, pricing.provider)


def test_cached_sweep_rows_equal_the_whole_sweeps_and_a_missing_pricing_keeps_the_stats():
    """cache_budget.get_sweep_rows on the sample dataset (Streamlit's caches in bare mode)."""
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated yet (scripts/make_sample_data.py)")
    conv = cb.get_dataset("sample").conversations[0]
    for settings in (HistorySettings(1_000, 600, pin_system=True), HistorySettings(1_000, clear_trigger=400, clear_keep=1)):
        got = cb.get_sweep_rows("sample", conv.id, settings, LIMITS, OPENAI_GPT)
        assert got.stats == sweep_limits(conv.messages, settings, LIMITS)
        assert got.costs == sweep_limit_costs(conv.messages, settings, LIMITS, OPENAI_GPT)
        unpriced = cb.get_sweep_rows("sample", conv.id, settings, LIMITS[::-1], None)
        assert unpriced.costs is None and unpriced.stats == got.stats[::-1]
