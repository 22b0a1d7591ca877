"""The cost panel of the Token budget page: what A and B cost with a provider's prompt cache.

Called from the page in one line each (:func:`render` inside the A/B comparison, :func:`render_sweep`
inside the limit sweep). Widgets (a provider preset and its editable prices / minimum cacheable
length / hit granularity, every one bound to the URL) → cached calls into convmem.prompt_cache →
the pure figure and table builders of :mod:`.figures_cost` and :mod:`.tables_cost`.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st
from streamlit.errors import StreamlitAPIException

from convmem import (
    PROVIDERS,
    CachePricing,
    ClearingSweepRow,
    CostSweepRow,
    HistorySettings,
    PromptCache,
    cache_accounting,
    unchanged_prefix_tokens,
)

from . import cache_budget as cb
from .agent_view import reported_cache_line
from .clearing_view import clearing_sweep_table
from .figures_cost import cache_steps_figure, sweep_cost_figure
from .tables_cost import DEFAULT_PROVIDER, PRICE_KEYS, cost_table, pricing_caption, pricing_from, sweep_cost_table, sweep_cost_view
from .url_params import PARAMS
from .show_table import show_table
from .table_layout import number_text

__all__ = ["CLEARING_SWEEP_CAPTION", "render", "render_sweep", "render_clearing_sweep", "pricing_controls", "sweep_pricing_or_error", "get_prefix", "get_cache"]

URL = "query-params"
#: Bars drawn per panel at most (longer replays are summed over runs of steps).
MAX_BARS = 400


@st.cache_resource(show_spinner=False, max_entries=12)
def get_prefix(dataset_key: str, conv_id: str, settings: HistorySettings) -> tuple[int, ...]:
    """Per step, the tokens unchanged since the previous request (O(n), from the cached replay)."""
    return unchanged_prefix_tokens(cb.get_replay(dataset_key, conv_id, settings))


@st.cache_resource(show_spinner=False, max_entries=24)
def get_cache(dataset_key: str, conv_id: str, settings: HistorySettings, pricing: CachePricing) -> PromptCache:
    """The replay's per-request cache accounting under ``pricing`` (read-only: shared)."""
    r = cb.get_replay(dataset_key, conv_id, settings)
    return cache_accounting(r.totals, get_prefix(dataset_key, conv_id, settings), pricing)


def _apply_preset() -> None:
    """A new preset fills the price inputs with its numbers (the user may edit them after)."""
    preset = PROVIDERS.get(st.session_state.get("cp"), PROVIDERS[DEFAULT_PROVIDER])
    for widget, field in PRICE_KEYS.items():
        st.session_state[widget] = getattr(preset, field)


def pricing_controls() -> CachePricing | None:
    """The preset picker and its editable numbers; the pricing they mean, or None (with an error
    shown) when the numbers do not make one."""
    # bottom-aligned: a label that wraps at a narrow width ("Min cacheable (tokens)") does not push
    # its input below the row's others (the new user, session 24)
    cols = st.columns([2.2, 1.6, 1.6, 1.6, 1.8, 1.6], vertical_alignment="bottom")
    key = cols[0].selectbox(
        "Provider preset", list(PROVIDERS), key="cp", bind=URL, on_change=_apply_preset,
        help="anthropic = " + PROVIDERS["anthropic"].provider + "; openai = " + PROVIDERS["openai"].provider
        + ". Picking one fills the numbers beside it; edit any of them.",
    )
    preset = PROVIDERS[key]

    def money(p_key: str) -> dict:
        p = PARAMS[p_key]
        return dict(min_value=float(p.lo), max_value=float(p.hi), step=float(p.step), format="%.4g")

    def count(p_key: str) -> dict:
        p = PARAMS[p_key]
        return dict(min_value=int(p.lo), max_value=int(p.hi), step=int(p.step))

    values = {
        "cp": key,
        "cp_in": cols[1].number_input(
            "Input $/M tokens", value=float(preset.input_per_mtok), key="cp_in", bind=URL,
            help="Uncached input tokens, USD per million.", **money("cp_in"),
        ),
        "cp_read": cols[2].number_input(
            "Cache read $/M", value=float(preset.cached_per_mtok), key="cp_read", bind=URL,
            help="Input tokens served from the cache, USD per million.", **money("cp_read"),
        ),
        "cp_write": cols[3].number_input(
            "Cache write $/M", value=float(preset.write_per_mtok), key="cp_write", bind=URL,
            help="Tokens written to the cache, USD per million (OpenAI charges none: the input price).",
            **money("cp_write"),
        ),
        "cp_min": cols[4].number_input(
            "Min cacheable (tokens)", value=preset.min_cacheable, key="cp_min", bind=URL,
            help="A prefix shorter than this is never served from the cache.", **count("cp_min"),
        ),
        "cp_inc": cols[5].number_input(
            "Hit step (tokens)", value=preset.increment, key="cp_inc", bind=URL,
            help="Cache hits are whole multiples of this (OpenAI 128, Anthropic 1).", **count("cp_inc"),
        ),
    }
    try:
        return pricing_from(values)
    except (ValueError, TypeError) as exc:
        st.error(f"These prices do not make a pricing: {exc}")
        return None


def render(dataset_key: str, conv_id: str, settings_a: HistorySettings, settings_b: HistorySettings) -> None:
    """The cost panel: A and B priced with a provider's prompt cache, per request and in total."""
    st.subheader("What A and B cost with a prompt cache")
    st.caption(
        "One request after every add. The provider serves from its cache the longest start of the "
        "prompt unchanged since the previous request (a drop or a new summary breaks it there), "
        "from its minimum cacheable length; the rest is written to the cache or sent uncached."
    )
    pricing = pricing_controls()
    if pricing is None:
        return
    a = get_cache(dataset_key, conv_id, settings_a, pricing)
    b = get_cache(dataset_key, conv_id, settings_b, pricing)
    ta, tb = a.totals, b.totals
    st.text(_verdict(ta.sent, tb.sent, ta.cost, tb.cost))
    # counts and prices share the A, B and B − A columns: each number as text, grouped
    show_table(
        number_text(cost_table(ta, tb, a.cost_without_cache, b.cost_without_cache), ["A", "B", "B − A"]),
        hide_index=True, key="cost_table",
        column_config={c: {"alignment": "right"} for c in ("A", "B", "B − A")},
    )
    st.plotly_chart(cache_steps_figure(a, b, MAX_BARS), key="cost_chart")
    reported = reported_cache_line(cb.conversation(dataset_key, conv_id), pricing)  # issue 13
    if reported:  # a coding-agent session: its calls as the provider reported them
        st.text(reported)
    st.caption(pricing_caption(pricing) + " Defaults: " + preset_source(pricing))


def preset_source(pricing: CachePricing) -> str:
    """Where the preset's numbers come from (its page and the date read)."""
    return pricing.source or "edited by you."


def _verdict(sent_a: int, sent_b: int, cost_a: float, cost_b: float) -> str:
    """One line: B against A in tokens sent and in USD."""
    def pct(new: float, old: float) -> str:
        return f"{(new - old) / old:+.1%}" if old else "n/a"

    return (
        f"B sends {sent_b:,} input tokens ({pct(sent_b, sent_a)} against A's {sent_a:,}) and costs "
        f"${cost_b:,.4f} ({pct(cost_b, cost_a)} against A's ${cost_a:,.4f})."
    )


def sweep_pricing() -> CachePricing:
    """The pricing the sweeps use: the cost panel's widgets when it ran, else the link's values
    (``?cp=openai&cp_read=0.5``: the panel sits in the comparison expander, which may be closed,
    and a closed expander runs no widget), else the preset's defaults. Values already checked by
    the URL sanitizer (convmem_dashboard.url_params); if they still make no pricing, the link's
    values are ignored. Raises what pricing_from raises for the widgets' own values."""
    widgets = {k: st.session_state[k] for k in ("cp", *PRICE_KEYS) if k in st.session_state}
    try:
        link = {k: st.query_params[k] for k in ("cp", *PRICE_KEYS) if k not in widgets and k in st.query_params}
    except StreamlitAPIException:  # a key bound to a widget of this run cannot be read back
        link = {}
    try:
        return pricing_from({**link, **widgets})
    except (ValueError, TypeError):
        if not link:
            raise
        return pricing_from(widgets)  # a bad link value: the widgets' and the preset's values stand


def sweep_pricing_or_error() -> tuple[CachePricing | None, str | None]:
    """:func:`sweep_pricing`, or None and the error to show when the values make no pricing."""
    try:
        return sweep_pricing(), None
    except (ValueError, TypeError) as exc:
        return None, f"These prices do not make a pricing: {exc}"


def render_sweep(
    rows: Sequence[CostSweepRow] | None, pricing: CachePricing | None, error: str | None, limit: int
) -> None:
    """The sweep's cost: each limit priced (``rows``, from cache_budget.get_sweep_rows with the
    ``pricing`` of :func:`sweep_pricing_or_error`), or that function's ``error`` (rows and pricing
    None) when the prices make no pricing."""
    if rows is None or pricing is None:
        st.error(error)
        return
    st.plotly_chart(sweep_cost_figure(rows, limit), key="sweep_cost_chart")
    st.caption(
        f"Priced as in the comparison's cost panel — {pricing_caption(pricing)} A cost that falls "
        "while tokens sent rise is a rarer, deeper compaction the prompt cache rewards."
    )
    show_table(sweep_cost_table(rows), hide_index=True, key="sweep_cost_table", **sweep_cost_view(len(rows)))


#: Under the clearing sweep's table (complete or partial).
CLEARING_SWEEP_CAPTION = (
    "Clearing swept: each trigger (tokens) with each number of newest tool results kept, the rest "
    "as set above. A lower trigger or a smaller keep sends fewer tokens but breaks the prompt "
    "cache more often; raise 'Clear at least' to clear less often, in bigger bites."
)


def render_clearing_sweep(rows: list[ClearingSweepRow], settings: HistorySettings) -> None:
    """Issue 11: the sweep over clearing's trigger and keep (current clear_at_least and policies),
    each pair's tokens sent, cache breaks and price, priced as the cost panel prices; ``rows`` from
    cache_budget.get_clearing_rows (all of them, or those done while it fills: panel_sweep)."""
    st.caption(CLEARING_SWEEP_CAPTION)
    show_table(clearing_sweep_table(rows, settings.clear_trigger, settings.clear_keep),
                 hide_index=True, key="clearing_sweep_table")
