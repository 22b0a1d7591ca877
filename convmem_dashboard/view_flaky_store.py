"""The Flaky store page's view model: settings from the widgets, the run, and every text and number
the page shows (pure: no streamlit; plain pytest checks it).

* :class:`FlakySettings` - every setting of the page, normalized from the widgets' values (the
  defaults live in url_params.PARAMS, once); :meth:`FlakySettings.key` is the plain tuple the
  page caches a run by, and :meth:`FlakySettings.from_key` rebuilds the settings from it.
* :func:`run` - one simulated load: offset pages (:func:`tables_store.run_simulation`) or the
  SQLite store with arrivals (:func:`flaky_sql.run_sql_simulation`).
* :func:`run_metrics`, :func:`truth_metrics`, :func:`arrival_metrics`, :func:`outcome` - what the
  page says. Honest figures (issue 10): a load that raised is never said to have "lost" anything;
  it says what was loaded before the failure and the cursor to resume from. Every count has
  thousands separators, every time a unit, and every metric value fits
  :data:`MAX_METRIC_CHARS` characters (no metric cut off in a 1,400-px window).

>>> s = FlakySettings.from_widgets(rate=1.0, seed=7.0, rep=None, dl=None)
>>> s.faults().failure_rate, s.faults().seed, s.load().deadline
(1.0, 7, None)
>>> FlakySettings.from_key(s.key()) == s
True
>>> count(99679), seconds(0.0002), seconds(12.5), seconds(123456.0)
('99,679', '0.000 s', '12.50 s', '123,456 s')
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import astuple, dataclass
from typing import Any

from convmem import Message
from convmem.testing import FaultConfig

from .flaky_sql import Arrivals, run_sql_simulation
from .tables_store import (
    FIRST_PAGE,
    FlakyRun,
    LoadSettings,
    explain_stop,
    failure_message,
    run_simulation,
)
from .questions import QUESTIONS
from .url_params import PARAMS, STORE_KINDS
from .wording import plural

__all__ = [
    "INTRO",
    "MAX_METRIC_CHARS",
    "MAX_SQL_MESSAGES",
    "MAX_SQL_PAGES",
    "STORE_KINDS",
    "STORE_PAGED",
    "STORE_SQLITE",
    "FlakySettings",
    "Metric",
    "Outcome",
    "arrival_metrics",
    "count",
    "default_conversation",
    "failure_note",
    "outcome",
    "simulation_is_new",
    "messages_source",
    "reproduce_code",
    "run",
    "run_metrics",
    "seconds",
    "sql_cap_note",
    "sql_message_cap",
    "truth_metrics",
]

#: The question the page answers (its first sentence; one table for every page).
INTRO = QUESTIONS["flaky_store"]
#: The store the faults wrap (the ``store`` URL parameter's options, in url_params).
STORE_PAGED, STORE_SQLITE = STORE_KINDS
#: Messages the SQLite store mode copies into its private store at most (the first ones of the
#: conversation): each run fills a fresh store and reads it back (about 30 ms per 1,000 messages)
#: and pages through it, one SQL query per page (about 0.2 ms each).
MAX_SQL_MESSAGES = 10_000
#: Pages of the SQLite store mode's load at most: the store holds at most this many pages of
#: the chosen page size (``sql_message_cap``), so one run's queries, and its time, stay bounded
#: whatever the page size (1,000 queries: about 0.2 s; docs/decisions.md).
MAX_SQL_PAGES = 1_000
#: Longest metric value shown (characters): fits a third of the main column at 1,400 px.
MAX_METRIC_CHARS = 12


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _default(key: str) -> Any:
    return PARAMS[key].default


@dataclass(frozen=True, slots=True)
class FlakySettings:
    """Every setting of the page (field names = URL keys' meanings; see url_params.PARAMS)."""

    rate: float = _default("rate")
    burst: int = _default("burst")
    seed: int = _default("seed")
    repeated: int | None = None
    cycle: int | None = None
    wrap: bool = False
    empty: int | None = None
    overlap: int = 1
    page_size: int = _default("psize")
    attempts: int = _default("tries")
    base_delay: float = _default("base")
    max_delay: float = _default("maxd")
    deadline: float | None = None
    empty_page_ends: bool = _default("epe")
    store: str = STORE_PAGED
    arrivals: int = 0
    arrive_after: int = 1
    high_water: bool = False

    @classmethod
    def from_widgets(cls, **values: Any) -> FlakySettings:
        """Settings from widget values by URL key (``rate``, ``burst``, ``seed``, ``rep``,
        ``cyc``, ``wrap``, ``empty``, ``overlap``, ``psize``, ``tries``, ``base``, ``maxd``,
        ``dl``, ``epe``, ``store``, ``arr``, ``arr_at``, ``hwm``); a key not given keeps its
        default. Floats from number inputs become ints where the field is one."""
        names = {
            "rate": ("rate", float), "burst": ("burst", int), "seed": ("seed", int),
            "rep": ("repeated", _int_or_none), "cyc": ("cycle", _int_or_none),
            "wrap": ("wrap", bool), "empty": ("empty", _int_or_none), "overlap": ("overlap", int),
            "psize": ("page_size", int), "tries": ("attempts", int), "base": ("base_delay", float),
            "maxd": ("max_delay", float),
            "dl": ("deadline", lambda v: None if v is None else float(v)),
            "epe": ("empty_page_ends", bool), "store": ("store", str), "arr": ("arrivals", int),
            "arr_at": ("arrive_after", int), "hwm": ("high_water", bool),
        }
        kwargs = {}
        for key, value in values.items():
            field, convert = names[key]
            if value is None and field not in ("repeated", "cycle", "empty", "deadline"):
                continue  # an empty widget keeps the default
            kwargs[field] = None if value is None else convert(value)
        return cls(**kwargs)

    @property
    def sql(self) -> bool:
        """The faults wrap a SQLite store's keyset pager (else offset pages in memory)."""
        return self.store == STORE_SQLITE

    def key(self) -> tuple:
        """A plain, hashable tuple of every field (what the page caches a run by)."""
        return astuple(self)

    @classmethod
    def from_key(cls, key: Sequence[Any]) -> FlakySettings:
        return cls(*key)

    def faults(self) -> FaultConfig:
        """The FaultConfig (raises ValueError/TypeError naming the field when settings clash)."""
        if self.sql:
            return FaultConfig(self.rate, self.burst, seed=self.seed)
        return FaultConfig(self.rate, self.burst, self.repeated, self.cycle, self.wrap, self.empty,
                           self.overlap, self.seed)

    def load(self) -> LoadSettings:
        return LoadSettings(self.attempts, self.base_delay, self.max_delay, self.deadline,
                            self.empty_page_ends)

    def arrival(self) -> Arrivals:
        return Arrivals(self.arrivals if self.sql else 0, self.arrive_after, self.high_water)

    def ignored(self) -> tuple[str, ...]:
        """Walk faults set in the URL that the SQLite store does not inject (offset-store faults)."""
        if not self.sql:
            return ()
        names = {"repeated": self.repeated, "cycle": self.cycle, "empty": self.empty}
        out = [n for n, v in names.items() if v is not None]
        if self.wrap:
            out.append("wrap")
        if self.overlap:
            out.append("overlap")
        return tuple(out)


def run(settings: FlakySettings, conversation_id: str, messages: Sequence[Message]) -> FlakyRun:
    """One simulated load of ``messages`` with ``settings`` (never raises for a failed load).

    Raises:
        TypeError / ValueError: settings that cannot run together (names the field).
    """
    if settings.sql:
        cap = sql_message_cap(settings.page_size)
        return run_sql_simulation(conversation_id, messages[:cap], settings.page_size,
                                  settings.faults(), settings.load(), settings.arrival())
    return run_simulation(messages, settings.page_size, settings.faults(), settings.load())


#: Session-state key of the runs a session has simulated (run keys, newest last).
_SIMULATED = "_flaky_simulated"
#: How many run keys a session remembers (a key forgotten only costs a view in one run again).
SIMULATED_KEPT = 64


def simulation_is_new(state: MutableMapping[str, Any], run_key: tuple, messages: int, split_over: int) -> bool:
    """Whether this script run is the session's first to show the run ``run_key`` of a
    conversation of ``messages`` messages, when that is over ``split_over`` (then the page
    reruns, and draws the run's truth check, tables and timeline in a script run of its own:
    the simulation alone is 0.4-0.5 s at 10^5 messages, the page 0.6 s). Records the key in
    ``state`` (session state; the :data:`SIMULATED_KEPT` newest kept), so the rerun, and any later
    view of the same run in the session, is one run. O(1) amortized.

    >>> state = {}
    >>> simulation_is_new(state, ("k", "c", (1,)), 100_000, 20_000), simulation_is_new(state, ("k", "c", (1,)), 100_000, 20_000)
    (True, False)
    >>> simulation_is_new(state, ("k", "c", (2,)), 435, 20_000)  # small: never split
    False
    """
    if messages <= split_over:
        return False
    seen = state.setdefault(_SIMULATED, {})
    if run_key in seen:
        return False
    seen[run_key] = None
    while len(seen) > SIMULATED_KEPT:
        del seen[next(iter(seen))]
    return True


def sql_message_cap(page_size: int) -> int:
    """Messages the SQLite store mode holds at most at ``page_size``: :data:`MAX_SQL_PAGES` pages,
    and never more than :data:`MAX_SQL_MESSAGES`. O(1).

    >>> sql_message_cap(5), sql_message_cap(1), sql_message_cap(200)
    (5000, 1000, 10000)
    """
    return min(MAX_SQL_MESSAGES, MAX_SQL_PAGES * page_size)


def sql_cap_note(settings: FlakySettings, messages: int) -> str | None:
    """What the page says when the SQLite store mode uses only the first
    ``sql_message_cap(settings.page_size)`` messages (None when it holds them all).

    >>> print(sql_cap_note(FlakySettings(store=STORE_SQLITE), 100_000))
    The SQLite store holds the first 5,000 of this conversation's 100,000 messages: 1,000 pages of 5 (each run fills a fresh private store and pages through it, one query per page).
    >>> sql_cap_note(FlakySettings(), 100_000) is None
    True
    """
    cap = sql_message_cap(settings.page_size)
    if not settings.sql or messages <= cap:
        return None
    pages = -(-cap // settings.page_size)
    return (
        f"The SQLite store holds the first {count(cap)} of this conversation's {count(messages)} "
        f"messages: {count(pages)} pages of {count(settings.page_size)} (each run fills a fresh "
        f"private store and pages through it, one query per page)."
    )


def default_conversation(ids: Sequence[str], sizes: Mapping[str, int]) -> int:
    """Index of the longest conversation (the first one on a tie); 0 when there is none.

    >>> default_conversation(["a", "b", "c"], {"a": 3, "b": 9, "c": 9})
    1
    """
    return max(range(len(ids)), key=lambda i: (sizes[ids[i]], -i)) if ids else 0


# -- numbers ---------------------------------------------------------------------------------------


def count(n: int) -> str:
    """A count with thousands separators."""
    return f"{int(n):,}"


def seconds(x: float) -> str:
    """Virtual seconds with a unit, at most 12 characters whatever the size."""
    if x >= 1e8:
        return f"{x:.2e} s"
    if x >= 1_000:
        return f"{x:,.0f} s"
    if x >= 10:
        return f"{x:.2f} s"
    return f"{x:.3f} s"


@dataclass(frozen=True, slots=True)
class Metric:
    """One st.metric: label, value (at most MAX_METRIC_CHARS characters) and help."""

    label: str
    value: str
    help: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """The box above the metrics: ``kind`` is "info", "error" or "success"."""

    kind: str
    headline: str
    detail: str | None = None


def _cursor(shown: str) -> str:
    return "the first page" if shown == FIRST_PAGE else f"cursor {shown}"


def failure_note(run: FlakyRun) -> str:
    """Above the truth table of a load that raised: what it kept and where a resume starts."""
    err = run.error or {}
    return (
        f"load_history raised instead of returning a partial history; the "
        f"{plural(err.get('loaded', 0), 'message')} it had loaded are kept on the error, and a "
        f"resume from {_cursor(err.get('cursor', FIRST_PAGE))} loads the rest. Below: the "
        f"messages not loaded yet."
    )


def run_metrics(run: FlakyRun, state: Mapping[str, Any]) -> list[Metric]:
    """Calls, retries, pages, duplicates, loaded and virtual time after the calls shown."""
    truth = len(run.truth)
    return [
        Metric("Calls", count(state["calls"]), "Calls to the store, retries included."),
        Metric("Retries", count(state["retries"]), "Failed calls followed by a backoff and a retry."),
        Metric("Pages", count(state["pages"]), "Pages served."),
        Metric("Duplicates skipped", count(state["duplicates"]),
               "Messages served again and removed by id (messages)."),
        Metric(f"Loaded (of {count(truth)} messages)", count(state["loaded"]),
               "Distinct messages loaded after the calls shown."),
        Metric("Virtual time", seconds(state["at"]),
               "Virtual seconds since the load started (backoff only; calls take no time)."),
    ]


def truth_metrics(run: FlakyRun) -> list[Metric]:
    """The check against the truth. A load that raised is not a loss: it says what was loaded
    before the failure and what is not loaded yet (a resume from the cursor loads it)."""
    if run.error is not None:
        loaded = len(set(run.loaded_ids))
        return [
            Metric("Loaded before the failure", count(loaded), "Messages, kept on the PageLoadError."),
            Metric("Not loaded yet", count(len(run.truth) - loaded),
                   f"Messages a resume from {_cursor(run.error['cursor'])} loads."),
            Metric("Repeated", count(len(run.repeated_ids)), "Messages loaded more than once."),
        ]
    return [
        Metric("Lost", count(len(run.lost_ids)), "Messages of the store the load never returned."),
        Metric("Repeated", count(len(run.repeated_ids)), "Messages loaded more than once."),
        Metric("Out of order", "yes" if run.out_of_order else "no"),
    ]


def arrival_metrics(run: FlakyRun) -> list[Metric]:
    """What happened to the messages that arrived while the load paged (SQLite store only)."""
    a = run.arrivals
    if not a or not a["count"]:
        return []
    arrived = len(a["arrived_ids"])
    follow = sum(1 for i in a["follow_up_ids"] if i in set(a["arrived_ids"]))
    return [
        Metric("Arrived during the load", count(arrived), "Messages the writer appended."),
        Metric("Returned by this load", count(a["in_load"]), "Arrivals the load itself returned."),
        Metric("Returned by the follow-up", count(follow),
               "Arrivals the follow-up load (after the load's high-water mark) returned."),
    ]


def outcome(run: FlakyRun, state: Mapping[str, Any], stepping: bool) -> Outcome:
    """The headline box: the next call while stepping, the failure, or the stop reason."""
    truth = len(run.truth)
    if stepping and not state["done"]:
        return Outcome("info", f"Call {count(state['calls'])} of {count(len(run.calls))}. {state['next']}")
    if run.error is not None:
        err = run.error
        if err["kind"] != "PageLoadError":
            return Outcome("error", f"The load stopped with {err['kind']}.", failure_message(run))
        return Outcome(
            "error",
            f"Load failed: PageLoadError at cursor {err['cursor']} after "
            f"{plural(err['attempts'], 'attempt')}; {count(err['loaded'])} of {count(truth)} messages were loaded before "
            f"the failure. Nothing is lost: resume from {_cursor(err['cursor'])} with those "
            f"messages to load the rest.",
            failure_message(run),
        )
    detail = explain_stop(run)
    a = run.arrivals
    if a and a["arrived_ids"]:
        where = (
            f"the load stopped at the high-water mark it read before its first page, so the "
            f"follow-up load from that mark returned the {count(len(a['arrived_ids']))} arrivals"
            if a["high_water"]
            else f"with no high-water mark the load went on and returned {count(a['in_load'])} of "
            f"the {count(len(a['arrived_ids']))} arrivals itself; the follow-up returned the rest "
            f"({count(len(a['follow_up_ids']))})"
        )
        detail += (
            f"\n{plural(len(a['arrived_ids']), 'message')} were appended right after page "
            f"{count(a['after_page'])} was served; {where}. Keyset cursors: nothing skipped, "
            f"nothing repeated."
        )
    return Outcome("success", f"Stop reason: {run.stop_reason}", detail)


def messages_source(dataset_key: str, conversation_id: str, sample_file: str, sample_sqlite: str) -> str:
    """Python that defines ``messages`` (the conversation's, as the page loads it) for
    :func:`reproduce_code`: the bundled sample file or database by their paths relative to the
    project root, a synthetic conversation by its generator, anything else (an upload, a database
    of yours, the retail file) from a file you name."""
    cid = repr(conversation_id)
    if dataset_key == "sample":
        return f"messages = next(c for c in load_conversations({sample_file!r}) if c.id == {cid}).messages"
    if dataset_key == "sample-db":
        return (
            f'with SQLStore("sqlite:///{sample_sqlite}") as db:\n'
            f"    messages = load_history(db.pager({cid}))"
        )
    if dataset_key.startswith("synthetic-") and dataset_key.removeprefix("synthetic-").isdigit():
        return f"messages = generate_conversation({int(dataset_key.removeprefix('synthetic-'))}, seed=7).messages"
    return (
        f"# the conversation's messages, e.g. from the file you loaded:\n"
        f'messages = next(c for c in load_conversations("your-file.jsonl") if c.id == {cid}).messages'
    )


#: The imports every reproduced run needs (convmem's public names only).
_REPRODUCE_IMPORTS = (
    "from convmem import load_conversations, load_history\n"
    "from convmem.stores import SQLStore\n"
    "from convmem.synthetic import generate_conversation\n"
    "from convmem.testing import FaultConfig, FlakyStore, PagedStore, VirtualClock\n"
)


def reproduce_code(settings: FlakySettings, conversation_id: str, source: str) -> str:
    """Python that reproduces the run (shown in an expander), whole: imports, ``source`` (the
    line that defines ``messages``: :func:`messages_source`), the store, the faults and the load.
    Run from the project root, it loads the same messages with the same calls (SQLite store mode:
    the arrivals are described, not scripted)."""
    load = settings.load()
    tail = (
        f"loaded = load_history(\n"
        f"    store, attempts={load.attempts}, base_delay={load.base_delay}, max_delay={load.max_delay},\n"
        f"    deadline={load.deadline}, empty_page_ends={load.empty_page_ends},\n"
        f"    sleep=clock.sleep, clock=clock, random=store.rng_for_jitter(),\n"
        f")"
    )
    head = f"{_REPRODUCE_IMPORTS}\nconversation_id = {conversation_id!r}\n{source}\nclock = VirtualClock()\n"
    if settings.sql:
        a = settings.arrival()
        hw = "high_water=sql.high_water_mark(conversation_id)" if a.high_water else "high_water=None"
        return (
            f"{head}"
            f'sql = SQLStore("sqlite://", page_size={settings.page_size})\n'
            f"sql.append(conversation_id, messages[:{sql_message_cap(settings.page_size)}])  # the page's cap\n"
            f"pager = sql.pager(conversation_id, {hw})\n"
            f"# arrivals: {plural(a.count, 'message')} appended with sql.append(...) right after page "
            f"{a.after_page} is served\n"
            f"store = FlakyStore(pager, {settings.faults()!r}, clock=clock)\n"
            f"{tail}\n"
            f"follow_up = load_history(sql.pager(conversation_id, after=pager.position))"
        )
    return (
        f"{head}"
        f"store = FlakyStore(\n    PagedStore(messages, {settings.page_size}),\n"
        f"    {settings.faults()!r},\n    clock=clock,\n)\n{tail}"
    )