"""Every URL parameter the dashboard binds to a widget: one table, one pure sanitizer.

Each page binds its widgets to the URL (``bind="query-params"``) so a link reproduces a view. A
link can carry anything, and Streamlit parses a bound value *before* the page's code runs: an
int ``st.number_input`` seeded from ``?seed=inf`` raises ``OverflowError`` inside Streamlit's own
deserializer, which no page can catch. So dashboard.py calls :func:`sanitize_query_params` first,
on every run, before ``st.navigation``: it runs the pure :func:`sanitize` over the URL and puts
the result back where Streamlit seeds widgets from, and shows one warning naming each parameter
and value it changed.

:data:`PARAMS` is the one table of bound keys: type, the static range, default and step. The
pages build their widgets from it (``*PARAMS["rate"].slider``), so the sanitizer and the widgets
cannot disagree. Where a range depends on the data (the limit slider's range comes from the
conversation), the table gives the widest range any data can give (for tokens, ``0..MAX_TOKENS``)
and the page narrows it; Streamlit already refuses finite values outside a widget's range.

Rules (pure, O(total length of the query)), for a bound key:

* ``int``: a decimal int in ``[lo, hi]``; ``float``: a finite float in ``[lo, hi]``. Anything
  else (``nan``, ``inf``, ``-inf``, ``1e309``, ``10**30``, ``-1`` below 0, ``7.5`` for an int,
  text) is dropped: the widget shows its default, as Streamlit does for an out-of-range value
  it can parse (docs/decisions.md: dropped, not clamped, so a link never silently means
  something else, e.g. ``?rate=7`` is not a failure rate of 1).
* ``bool``: ``true``/``false`` in any case; anything else is dropped.
* ``choice``: one of ``options``; ``choices`` (multiselect): the known options, in order, once.
* ``int_range``: two whole numbers in order, in range (``?win=0&win=99``).
* ``text`` (options that come from the data: conversation ids, dataset keys): kept when it is at
  most :data:`MAX_TEXT` characters; the page then checks it against its options.
* An empty value (``?rep=``) is kept for a ``clearable`` number (it means "off"/"none") and for
  ``choices`` (no option picked), else dropped. A repeated single-value key keeps its last value,
  as Streamlit does. A value over :data:`MAX_TEXT` characters is dropped whatever its type.
* A key not in the table is left alone (Streamlit ignores it; it may be someone else's, such as
  ``embed``): it cannot break a page.

Dropped values are reported as :class:`Fix` items; :func:`sanitize_query_params`
shows them in one ``st.warning`` (escaped: URL text is never Markdown).

>>> clean, fixes = sanitize({"rate": ["nan"], "seed": ["1e309"], "psize": ["10000"], "other": ["x"]})
>>> clean
{'other': ['x']}
>>> [(f.key, f.value, f.reason) for f in fixes]  # doctest: +NORMALIZE_WHITESPACE
[('rate', 'nan', 'it is not a finite number'), ('seed', '1e309', 'it is not a finite number'),
 ('psize', '10000', 'it is outside 1 to 200')]
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from convmem.limits import MAX_TOKENS

__all__ = [
    "forget_widget_values",
    "out_of_range_note",
    "link_range_note",
    "rerun_keeping_link_fixes",
    "kept_note",
    "COUNT_MAX",
    "Fix",
    "MAX_TEXT",
    "PARAMS",
    "Param",
    "POLICIES",
    "RUN_MODES",
    "STORE_KINDS",
    "TARGET_MODES",
    "UNBOUND_KEYS",
    "fix_message",
    "sanitize",
    "sanitize_query_params",
]

#: Longest value kept for any key (characters); longer ones are dropped.
MAX_TEXT = 1000
#: Static upper bound of counts that come from the data (message steps, events, pages, calls).
COUNT_MAX = 2**31 - 1
#: History's keyword names (the Token budget page's B policies; no format_func: readable URLs).
POLICIES = ("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user")
#: Token budget target modes: off (target = limit), a percentage of the limit, or a token count.
TARGET_MODES = ("off", "percent", "tokens")
#: Keys the dashboard reads and writes itself instead of binding a widget (the shared conversation
#: selection, convmem_dashboard.selection; the per-shopper cap slider, app_pages/listing_eviction.py;
#: the dataset in use, convmem_dashboard.data.dataset_picker: Home names it without a picker).
UNBOUND_KEYS = ("conv", "shopper", "cap", "data")
#: What counts as a listing (convmem_dashboard.listing_definitions.DEFINITIONS).
LISTING_DEFINITIONS = ("digits", "catalog", "keys")
#: The cost panel's provider presets (convmem.PROVIDERS keys).
PROVIDER_KEYS = ("anthropic", "openai")
#: Flaky store run modes.
RUN_MODES = ("All at once", "Step by step")
#: Flaky store: the store the faults wrap (convmem_dashboard.view_flaky_store).
STORE_KINDS = ("In-memory pages (offset cursors)", "SQLite store (keyset cursors)")

_KINDS = ("int", "float", "bool", "choice", "choices", "int_range", "text")


@dataclass(frozen=True)
class Param:
    """One URL-bound widget key.

    ``lo``/``hi``: the static range (inclusive; for a data-dependent range, the widest one).
    ``default``/``step``: the widget's, when static (None when the page derives it from data).
    ``clearable``: an empty value is valid (a number_input with ``value=None``).
    """

    key: str
    kind: str
    lo: float | None = None
    hi: float | None = None
    default: Any = None
    step: float | None = None
    options: tuple[str, ...] | None = None
    clearable: bool = False

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Param.kind must be one of {_KINDS}, got {self.kind!r}")

    @property
    def slider(self) -> tuple:
        """``(min_value, max_value, value, step)``: the positional arguments of st.slider and
        st.number_input for a widget whose range and default are static."""
        return self.lo, self.hi, self.default, self.step


def _p(key: str, kind: str, **kw) -> tuple[str, Param]:
    return key, Param(key, kind, **kw)


#: Every URL-bound key of every page (dataset picker: ``data``). ``conv`` is shared by two pages
#: with the same meaning (a conversation id).
PARAMS: dict[str, Param] = dict(
    [
        # sidebar (convmem_dashboard.data)
        _p("data", "text"),
        # Token budget: the smallest safe limit panel (convmem_dashboard.panel_safe_limit)
        _p("sl_p", "choice", options=("latest_user", "system", "message")),
        _p("sl_id", "text"),
        # Agent session: the session conversation picked (app_pages/agent_session.py)
        _p("agent_conv", "text"),
        # Flaky store
        _p("conv", "text"),
        _p("rate", "float", lo=0.0, hi=1.0, default=0.3, step=0.05),
        _p("burst", "int", lo=1, hi=10, default=1, step=1),
        _p("seed", "int", lo=0, hi=2**31 - 1, default=7, step=1),
        _p("rep", "int", lo=1, hi=100_000, default=None, step=1, clearable=True),
        _p("cyc", "int", lo=2, hi=100_000, default=None, step=1, clearable=True),
        _p("wrap", "bool", default=False),
        _p("empty", "int", lo=1, hi=100_000, default=None, step=1, clearable=True),
        _p("psize", "int", lo=1, hi=200, default=5, step=1),
        _p("overlap", "int", lo=0, hi=199, step=1),  # hi: page size - 1
        _p("tries", "int", lo=1, hi=10, default=5, step=1),
        _p("base", "float", lo=0.0, hi=60.0, default=0.1, step=0.05),
        _p("maxd", "float", lo=0.0, hi=600.0, default=2.0, step=0.5),
        _p("dl", "float", lo=0.0, hi=3600.0, default=None, step=0.5, clearable=True),
        _p("epe", "bool", default=True),
        _p("mode", "choice", options=RUN_MODES),
        _p("step", "int", lo=1, hi=COUNT_MAX),  # hi: the run's calls
        _p("truth_all", "bool", default=False),
        _p("store", "choice", options=STORE_KINDS),
        _p("arr", "int", lo=0, hi=10_000, default=0, step=1),  # flaky_sql.MAX_ARRIVALS
        _p("arr_at", "int", lo=1, hi=100_000, default=1, step=1),
        _p("hwm", "bool", default=False),
        # Token budget
        _p("limit", "int", lo=0, hi=MAX_TOKENS),  # range from the conversation's tokens
        _p("pin_sys", "bool", default=False),
        _p("pin_user", "bool", default=False),
        _p("tools", "bool", default=False),
        _p("on_user", "bool", default=False),
        _p("tmode", "choice", options=TARGET_MODES),
        _p("tgt", "int", lo=5, hi=100, default=50, step=5),
        _p("tgt_tok", "int", lo=0, hi=MAX_TOKENS),
        _p("sum", "bool", default=False),
        _p("sb", "int", lo=0, hi=MAX_TOKENS),
        _p("win", "int_range", lo=0, hi=COUNT_MAX),  # hi: messages - 1
        _p("ev", "int", lo=1, hi=COUNT_MAX),  # hi: drop events
        _p("ctx_step", "int", lo=0, hi=COUNT_MAX, clearable=True),  # hi: messages - 1
        _p("cmp", "bool"),
        _p("b_limit", "int", lo=0, hi=MAX_TOKENS, clearable=True),
        _p("b_tgt", "int", lo=5, hi=100, default=50, step=5),
        _p("b_sum", "bool", default=False),
        _p("b_pol", "choices", options=POLICIES, default=POLICIES),
        _p("sweep", "bool"),
        _p("sw_n", "int", lo=5, hi=40, default=20, step=1),
        _p("pg", "int", lo=1, hi=COUNT_MAX),  # hi: table pages
        # Token budget: clearing (issue 11; convmem_dashboard.clearing_view)
        _p("clr", "bool", default=False),
        _p("clr_trig", "int", lo=0, hi=MAX_TOKENS, clearable=True),
        _p("clr_keep", "int", lo=0, hi=1000, default=3, step=1),
        _p("clr_min", "int", lo=0, hi=MAX_TOKENS, default=0),
        _p("b_clr", "bool", default=False),
        # Token budget: the cost panel (convmem_dashboard.panel_cost); defaults from the preset
        _p("cp", "choice", options=PROVIDER_KEYS),
        _p("cp_in", "float", lo=0.0, hi=10_000.0, step=0.05),
        _p("cp_read", "float", lo=0.0, hi=10_000.0, step=0.01),
        _p("cp_write", "float", lo=0.0, hi=10_000.0, step=0.05),
        _p("cp_min", "int", lo=0, hi=MAX_TOKENS, step=128),
        _p("cp_inc", "int", lo=1, hi=1_000_000, step=1),
        # Listing eviction
        _p("shopper", "text"),
        _p("cap", "int", lo=0, hi=COUNT_MAX),  # hi: the dataset's most distinct ids
        _p("only", "bool", default=True),
        _p("listing", "choice", options=LISTING_DEFINITIONS),
    ]
)


@dataclass(frozen=True)
class Fix:
    """A URL value :func:`sanitize` dropped (``action``: ``"dropped"``, or for a multiselect
    ``"kept a, b"``); ``reason`` says why, in words."""

    key: str
    value: str
    action: str
    reason: str


_INT = re.compile(r"[+-]?\d+")


def _number(text: str, as_int: bool) -> float | int | None:
    """The number ``text`` writes (int when ``as_int``; a finite float is rounded), else None."""
    text = text.strip()
    if as_int and _INT.fullmatch(text) and len(text) <= 40:
        return int(text)
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return round(value) if as_int else value


def _shown(value: str) -> str:
    return value if len(value) <= 40 else value[:37] + "..."


def _fmt(value: float | int) -> str:
    """A bound as a person reads it: digits grouped (``2,147,483,647``, ``10,000.0``)."""
    return f"{value:,}" if isinstance(value, int) else f"{float(value):,}"


def _scalar(p: Param, raw: str) -> tuple[str | None, str, str]:
    """(clean value or None to drop, action, reason) for one single-valued key."""
    if raw == "":
        if p.clearable:
            return "", "", ""
        return None, "dropped", "it is empty"
    if p.kind == "bool":
        if raw.lower() in ("true", "false"):
            return raw.lower(), "", ""
        return None, "dropped", "it is not true or false"
    if p.kind == "choice":
        if raw in p.options:
            return raw, "", ""
        return None, "dropped", "it is not one of " + ", ".join(p.options)
    if p.kind == "text":
        return raw, "", ""
    value = _number(raw, p.kind == "int")
    if value is None:
        return None, "dropped", "it is not a finite number"
    if p.kind == "int" and not _INT.fullmatch(raw.strip()):
        return None, "dropped", "it is not a whole number"
    if not p.lo <= value <= p.hi:
        return None, "dropped", f"it is outside {_fmt(p.lo)} to {_fmt(p.hi)}"
    return raw.strip(), "", ""


def sanitize(
    query: Mapping[str, str | Sequence[str]], params: Mapping[str, Param] = PARAMS
) -> tuple[dict[str, list[str]], list[Fix]]:
    """The query with every bound key's value made valid (see the module docstring), and what
    changed. ``query`` maps a key to its value or values (as Streamlit keeps them); the result
    maps each kept key to a list of values. Pure; never raises for any str keys and values."""
    clean: dict[str, list[str]] = {}
    fixes: list[Fix] = []
    for key, values in query.items():
        values = [values] if isinstance(values, str) else list(values)
        p = params.get(key)
        if p is None:
            clean[key] = values
            continue
        if any(len(v) > MAX_TEXT for v in values):
            long = next(v for v in values if len(v) > MAX_TEXT)
            fixes.append(Fix(key, _shown(long), "dropped", f"it is over {MAX_TEXT:,} characters"))
            continue
        if p.kind == "choices":
            known = [v for v in dict.fromkeys(values) if v in p.options]
            unknown = [v for v in values if v and v not in p.options]
            if unknown:
                action = "dropped" if not known else "kept " + ", ".join(known)
                fixes.append(Fix(key, _shown(unknown[0]), action, "it is not one of " + ", ".join(p.options)))
            if known:
                clean[key] = known
            elif not unknown:
                clean[key] = values[-1:] if values and values[-1] == "" else []
            continue
        if p.kind == "int_range":
            numbers = [_number(v, True) for v in values]
            if len(values) != 2 or any(n is None for n in numbers):
                fixes.append(Fix(key, _shown("&".join(values)), "dropped", "it is not two finite numbers"))
                continue
            pair = [int(n) for n in numbers]
            if not p.lo <= pair[0] <= pair[1] <= p.hi or any(not _INT.fullmatch(v.strip()) for v in values):
                fixes.append(Fix(key, _shown("&".join(values)), "dropped",
                                 f"it is not two whole numbers in {p.lo}..{p.hi}, in order"))
                continue
            clean[key] = [str(n) for n in pair]
            continue
        raw = values[-1] if values else ""
        value, action, reason = _scalar(p, raw)
        if action:
            fixes.append(Fix(key, _shown(raw), action, reason))
        if value is not None:
            clean[key] = [value]
    return clean, fixes


def out_of_range_note(
    key: str, raw: str | None, lo: int, hi: int, unit: str, scope: str = "this conversation's range"
) -> str | None:
    """The warning for a link whose ``key`` is a whole number outside this view's range
    ``lo..hi`` (a range that depends on the data, which :func:`sanitize` cannot know, so
    Streamlit drops the value silently and the widget shows its default); ``scope`` names what
    sets the range. A range widget's two values come joined by ``&`` (``?win=0&win=99`` as
    ``"0&99"``): the note is given when either is outside. None when ``raw`` is absent, not
    whole numbers (the sanitizer reports that) or in range. Plain text (no Markdown).

    >>> print(out_of_range_note("limit", "99999999", 100, 1_220, "tokens"))
    The link's limit=99999999 is outside this conversation's range (100 to 1,220 tokens): the default is shown.
    >>> out_of_range_note("limit", "500", 100, 1_220, "tokens") is None
    True
    >>> print(out_of_range_note("win", "0&5000", 0, 434, "add steps"))
    The link's win=0&5000 is outside this conversation's range (0 to 434 add steps): the default is shown.
    """
    if raw is None:
        return None
    parts = [part.strip() for part in raw.split("&")]
    if not all(part.lstrip("-").isdigit() for part in parts):
        return None
    if all(lo <= int(part) <= hi for part in parts):
        return None
    return f"The link's {key}={'&'.join(parts)} is outside {scope} ({lo:,} to {hi:,} {unit}): the default is shown."


def link_range_note(
    key: str, lo: int, hi: int, unit: str, scope: str = "this conversation's range"
) -> str | None:
    """:func:`out_of_range_note` for the link's ``?key=`` (read from the URL; a range widget's
    values joined by ``&``), for a widget whose range this run knows: only a value the link brought, not one the session's widget wrote
    into the URL (a range that shrinks under it, or a view forgotten on a switch of
    conversation while the URL still holds it, is not the link's doing), and again in the runs
    the dashboard splits from that one (:func:`kept_note`). Call it before the widget. O(1)."""
    import streamlit as st

    written = st.session_state.setdefault(_WIDGET_WROTE, {})
    if key in st.session_state:  # the widget's value, as its binding writes it into the URL
        value = st.session_state[key]
        written[key] = "&".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)
    raw = "&".join(st.query_params.get_all(key)) or None  # a range widget's two values, joined
    return kept_note(key, out_of_range_note(key, None if raw == written.get(key) else raw, lo, hi, unit, scope))


def fix_message(fixes: Sequence[Fix]) -> str:
    """One Markdown line per fix, user text escaped (shown in st.warning)."""
    from .data import md_escape

    lines = [
        f"- {md_escape(f.key)} = {md_escape(repr(f.value))}: {md_escape(f.action)} ({md_escape(f.reason)})"
        for f in fixes
    ]
    return "Some settings in the link could not be used:\n" + "\n".join(lines)


def sanitize_query_params() -> list[Fix]:
    """Sanitize this run's URL before any widget is seeded from it (dashboard.py calls it first).

    Streamlit seeds a bound widget from a snapshot of the URL taken when the run started
    (``QueryParams._initial_query_params``) and keeps the browser's URL in ``_query_params``;
    neither is reachable through ``st.query_params`` once a key is bound (it raises), so both are
    rewritten here, and the browser is sent the cleaned URL. Returns the fixes (also shown).
    """
    import streamlit as st
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return []
    fixes: list[Fix] = []
    with ctx.session_state.query_params() as qp:
        if not hasattr(qp, "_initial_query_params"):  # another Streamlit: the URL fuzz tests fail
            return []
        initial, i_fixes = sanitize(qp._initial_query_params)
        current, c_fixes = sanitize(qp._query_params)
        if i_fixes or c_fixes:
            qp._initial_query_params = initial
            qp._query_params = {k: v[0] if len(v) == 1 else v for k, v in current.items()}
            qp._send_query_param_msg()
        seen = set()
        for f in i_fixes + c_fixes:
            if (f.key, f.value) not in seen:
                seen.add((f.key, f.value))
                fixes.append(f)
    keep = st.session_state.pop(_KEEP_FIXES, False)
    st.session_state[_KEPT_RUN] = keep
    if fixes:
        st.session_state[_FIXES_SHOWN] = fixes
    elif keep:  # a run the dashboard split (rerun_keeping_link_fixes): the URL is clean by now
        fixes = st.session_state.get(_FIXES_SHOWN, [])
    else:
        st.session_state.pop(_FIXES_SHOWN, None)
    if fixes:
        st.warning(fix_message(fixes), icon=":material/link:")
    return fixes


def forget_widget_values(*keys: str) -> None:
    """Forget the values of the widgets ``keys`` (URL-bound or not) before this run draws them:
    out of the session and out of the URL, both the browser's and the snapshot Streamlit seeds a
    bound widget from, so each widget starts from its default. For a view whose widgets' ranges
    change (another dataset or conversation): a bound widget forgotten only in the session is
    seeded again from the URL its last value was written to, which may be outside its new range
    (Streamlit then raises ``StreamlitValueBelowMinError``; session 27's breaker: Token budget's
    limit 430 of the sample brought back on a 1,000-message synthetic conversation), and
    the browser and the server disagreed on the value shown. O(len(keys) + URL parameters)."""
    import streamlit as st
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    for key in keys:
        st.session_state.pop(key, None)
    ctx = get_script_run_ctx()
    if ctx is None:
        return
    with ctx.session_state.query_params() as qp:
        if not hasattr(qp, "_initial_query_params"):  # another Streamlit (as sanitize_query_params)
            return
        hit = [k for k in keys if k in qp._initial_query_params or k in qp._query_params]
        for k in hit:
            qp._initial_query_params.pop(k, None)
            qp._query_params.pop(k, None)
        if hit:
            qp._send_query_param_msg()


#: Session keys: the link fixes the last run showed, the flag rerun_keeping_link_fixes sets, whether
#: this run is such a rerun, and the pages' own link notes (kept_note).
_FIXES_SHOWN = "_url_fixes_shown"
_KEEP_FIXES = "_url_fixes_keep"
_KEPT_RUN = "_url_fixes_kept_run"
_NOTES_SHOWN = "_url_notes_shown"
#: Session key: {widget key: the value the widget last held, as its URL binding wrote it}.
_WIDGET_WROTE = "_url_widget_wrote"


def kept_note(key: str, note: str | None) -> str | None:
    """A page's own warning about the link's ``key`` (e.g. :func:`out_of_range_note`) for this
    run: ``note`` when there is one (remembered), else, in a run the dashboard split
    (:func:`rerun_keeping_link_fixes`: its URL no longer holds the value, the widget rewrote
    it), the one the run before showed; else None (forgotten). O(1)."""
    import streamlit as st

    notes = st.session_state.setdefault(_NOTES_SHOWN, {})
    if note is not None:
        notes[key] = note
        return note
    if st.session_state.get(_KEPT_RUN):
        return notes.get(key)
    notes.pop(key, None)
    return None


def rerun_keeping_link_fixes() -> NoReturn:
    """``st.rerun()`` for a run the dashboard splits in two (a dataset's load, a slice of a
    replay or of the summary lines): the next run shows again the link fixes this one showed
    (:func:`sanitize_query_params`). That run finds the URL clean, since the fixes were applied
    here, so without this a link's warnings would flash for one run and be gone. Does not return
    (raises Streamlit's rerun exception)."""
    import streamlit as st

    st.session_state[_KEEP_FIXES] = True
    st.rerun()
