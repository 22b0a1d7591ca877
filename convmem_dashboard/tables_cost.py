"""Tables of the cost panel (Token budget page): A against B priced, the sweep with its cost.

Pure functions of convmem values (plain pytest checks them). Tokens are tokens, money is USD.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from convmem import PROVIDERS, CachePricing, CacheTotals, CostSweepRow, PromptCache

from .table_layout import column, table_view

__all__ = [
    "COST_COLUMNS",
    "DEFAULT_PROVIDER",
    "PRICE_KEYS",
    "StepBuckets",
    "cost_table",
    "pricing_caption",
    "pricing_from",
    "step_buckets",
    "sweep_cost_table",
    "sweep_cost_view",
]

#: Columns of :func:`cost_table` (not "metric": the page's A/B stats table is found by that name).
COST_COLUMNS = ["quantity", "unit", "A", "B", "B − A"]


def _row(label: str, unit: str, a: float, b: float, digits: int | None = None) -> dict:
    if digits is not None:
        a, b = round(a, digits), round(b, digits)
        diff = round(b - a, digits)
    else:
        diff = b - a
    return {"quantity": label, "unit": unit, "A": a, "B": b, "B − A": diff}


def cost_table(a: CacheTotals, b: CacheTotals, without_a: float, without_b: float) -> pd.DataFrame:
    """Rows: requests, input tokens sent, served from cache, written to cache, uncached, cached
    share (%), cost (USD), cost without caching (USD); columns :data:`COST_COLUMNS`.

    ``without_a`` / ``without_b``: each setting's cost if every token were uncached input.
    """
    rows = [
        _row("requests", "requests", a.requests, b.requests),
        _row("input tokens sent", "tokens", a.sent, b.sent),
        _row("served from cache", "tokens", a.cached, b.cached),
        _row("written to cache", "tokens", a.written, b.written),
        _row("uncached", "tokens", a.uncached, b.uncached),
        _row("cached share", "%", 100 * a.cached_share, 100 * b.cached_share, 1),
        _row("cost", "USD", a.cost, b.cost, 4),
        _row("cost without caching", "USD", without_a, without_b, 4),
    ]
    return pd.DataFrame(rows, columns=COST_COLUMNS)


def sweep_cost_table(rows: Sequence[CostSweepRow]) -> pd.DataFrame:
    """One row per swept limit: limit, target, compactions, prefix changes, tokens sent, served
    from cache, cached share (%), cost (USD)."""
    return pd.DataFrame(
        [
            {
                "limit (tokens)": r.limit,
                "target (tokens)": r.target if r.target is not None else r.limit,
                "compactions": r.stats.compactions,
                "prefix changes": r.stats.prefix_changes,
                "input tokens sent": r.cache.sent,
                "served from cache (tokens)": r.cache.cached,
                "cached share (%)": round(100 * r.cache.cached_share, 1),
                "cost (USD)": round(r.cache.cost, 4),
            }
            for r in rows
        ],
        columns=[
            "limit (tokens)", "target (tokens)", "compactions", "prefix changes", "input tokens sent",
            "served from cache (tokens)", "cached share (%)", "cost (USD)",
        ],
    )


def sweep_cost_view(rows: int) -> dict:
    """st.dataframe arguments of :func:`sweep_cost_table`: short headers (units and meanings in
    the tooltips) so its eight columns fit inside the sweep's expander in a 1280-px window (784 px;
    the full headers took 874 px and cut "cost (USD)"); at most 10 rows tall."""
    return table_view(
        rows, max_rows=10,
        columns={
            "limit (tokens)": column("limit (tokens)", help="In tokens."),
            "target (tokens)": column("target (tokens)", help="What a compaction cuts down to, in tokens."),
            "compactions": column("compactions", help="Adds that dropped something."),
            "prefix changes": column("prefix chg.", help="Requests whose prompt starts differently from the previous one's (uncached re-sends)."),
            "input tokens sent": column("sent (tokens)", help="Input tokens sent over the whole conversation."),
            "served from cache (tokens)": column("cached (tokens)", help="Of those, tokens the prompt cache serves."),
            "cached share (%)": column("cached %", help="Served from cache over sent, in percent."),
            "cost (USD)": column("cost (USD)", help="Input cost over the whole conversation: tokens served from the cache, written to it and sent uncached, each at its own price."),
        },
    )


def pricing_caption(p: CachePricing) -> str:
    """One line naming the prices in use (USD per million tokens) and the cache rules."""
    inc = f", hits in {p.increment:,}-token steps" if p.increment > 1 else ""
    return (
        f"{p.provider}: input ${p.input_per_mtok:g}, cache read ${p.cached_per_mtok:g}, cache write "
        f"${p.write_per_mtok:g} per million tokens; cached from {p.min_cacheable:,} tokens{inc}."
    )


@dataclass(frozen=True, slots=True)
class StepBuckets:
    """Per-step token counts summed over buckets of consecutive steps (a long replay drawn as at
    most ``max_points`` bars). ``start``/``stop``: each bucket's first and last step."""

    start: np.ndarray
    stop: np.ndarray
    cached: np.ndarray
    written: np.ndarray
    uncached: np.ndarray

    @property
    def width(self) -> int:
        """Steps per bucket (1 = not aggregated)."""
        return int(self.stop[0] - self.start[0] + 1) if len(self.start) else 1


def step_buckets(cache: PromptCache, max_points: int = 400) -> StepBuckets:
    """Sum cached / written / uncached tokens over equal runs of steps so at most ``max_points``
    bars remain. O(n) with numpy. ValueError when ``max_points`` < 1.

    >>> from convmem import OPENAI_GPT, cache_accounting
    >>> b = step_buckets(cache_accounting([2000] * 5, [0, 2000, 2000, 2000, 2000], OPENAI_GPT), 2)
    >>> b.start.tolist(), b.stop.tolist(), b.cached.tolist(), b.written.tolist()
    ([0, 3], [2, 4], [3840, 3840], [2160, 160])
    """
    if max_points < 1:
        raise ValueError(f"step_buckets max_points must be at least 1, got {max_points}")
    n = len(cache.sent)
    width = max(1, -(-n // max_points))
    starts = np.arange(0, n, width, dtype=np.int64)
    stops = np.minimum(starts + width - 1, n - 1)

    def summed(values: Sequence[int]) -> np.ndarray:
        arr = np.asarray(values, dtype=np.int64)
        return np.add.reduceat(arr, starts) if n else arr

    return StepBuckets(starts, stops, summed(cache.cached), summed(cache.written), summed(cache.uncached))


#: The cost panel's URL-bound widget keys -> the CachePricing field each one sets.
PRICE_KEYS = {
    "cp_in": "input_per_mtok",
    "cp_read": "cached_per_mtok",
    "cp_write": "write_per_mtok",
    "cp_min": "min_cacheable",
    "cp_inc": "increment",
}
#: The preset used when none is chosen.
DEFAULT_PROVIDER = "anthropic"


def pricing_from(values) -> CachePricing:
    """The pricing a set of widget values means: the preset named by ``values["cp"]`` (default
    :data:`DEFAULT_PROVIDER`) with each price / length of :data:`PRICE_KEYS` present in ``values``
    overriding it; the provider name says "edited" when one differs. Raises what
    :class:`~convmem.CachePricing` raises (ValueError / TypeError naming the field).

    >>> pricing_from({"cp": "openai"}).provider
    'OpenAI (GPT-5.4)'
    >>> p = pricing_from({"cp": "openai", "cp_read": 0.5})
    >>> p.provider, p.cached_per_mtok
    ('OpenAI (GPT-5.4), edited', 0.5)
    """
    key = values.get("cp", DEFAULT_PROVIDER) if hasattr(values, "get") else DEFAULT_PROVIDER
    preset = PROVIDERS.get(key, PROVIDERS[DEFAULT_PROVIDER])
    changes = {}
    for widget, field in PRICE_KEYS.items():
        value = values.get(widget) if hasattr(values, "get") else None
        if value is None:
            continue
        value = int(value) if field in ("min_cacheable", "increment") else float(value)
        if value != getattr(preset, field):
            changes[field] = value
    if not changes:
        return preset
    return replace(preset, provider=f"{preset.provider}, edited", **changes)
