"""The Listing eviction page's view model: everything the page derives, as pure functions.

The page (app_pages/listing_eviction.py) reads widgets, calls these, and draws. Nothing here imports
streamlit, so plain pytest checks it (tests/test_view_listing_eviction.py).

* :data:`QUESTION`: the one sentence the page opens with.
* :func:`definitions_offered`: the listing definitions this dataset can use.
* :func:`cap_bounds` / :func:`resolve_cap`: the max_listings slider's range (the shopper's own)
  and value (a link's ``?cap=``, else the session's while the scope is the same, else the
  shopper's default).
* :func:`no_cut_notice`: the sentence shown when no cut meets the cap.
* :func:`eviction_metrics` / :func:`drop_caption`: the numbers and words under the slider.
* :func:`what_counts`: on data with a catalogue, what the ids counted are.

>>> from convmem.conversations import Conversation
>>> from .tables_eviction import evict, shopper_view
>>> view = shopper_view([Conversation(f"c{i}", "u", (), tuple(ids))
...                      for i, ids in enumerate([["p1"], ["p2", "p3", "p4"]])])
>>> cap_bounds(view)
(0, 4)
>>> no_cut_notice(view, 2)
'No cut meets max_listings = 2: the newest conversation alone mentions 3 distinct ids, so every conversation is dropped. A cap of 3 or more keeps the newest one.'
>>> [m.value for m in eviction_metrics(view, evict(view, 3))]
['1 / 2', '1', '3', '4']
"""

from __future__ import annotations

from dataclasses import dataclass

from .questions import QUESTIONS
from .listing_definitions import DEFINITIONS, Catalog, IdKinds, id_kinds
from .tables_eviction import Eviction, ShopperView
from .wording import plural

__all__ = [
    "QUESTION",
    "Metric",
    "cap_bounds",
    "definitions_offered",
    "drop_caption",
    "eviction_metrics",
    "newest_alone",
    "no_cut_notice",
    "resolve_cap",
    "what_counts",
]

#: The question the page answers, its first sentence (also Home's link caption).
QUESTION = QUESTIONS["listing_eviction"]


@dataclass(frozen=True, slots=True)
class Metric:
    """One st.metric: label, value (thousands separators), help."""

    label: str
    value: str
    help: str | None = None


def definitions_offered(has_catalog: bool) -> tuple[str, ...]:
    """The listing definitions a dataset can use: ``catalog`` only with a catalogue.

    >>> definitions_offered(False)
    ('digits', 'keys')
    """
    return tuple(d for d in DEFINITIONS if has_catalog or d != "catalog")


def cap_bounds(view: ShopperView) -> tuple[int, int]:
    """The max_listings slider's range for this shopper: 0 to the shopper's distinct ids (at
    least 1: a slider needs two values). O(1)."""
    return 0, max(view.max_cap, 1)


def resolve_cap(
    *,
    url: str | None,
    url_seen: str | None,
    session: object,
    same_scope: bool,
    view: ShopperView,
) -> int:
    """The cap a run shows: a ``?cap=`` this session has not seen yet (a link) when it is a whole
    number in :func:`cap_bounds`; else the session's value when the shopper and the definition
    are unchanged (``same_scope``) and it is in range; else the shopper's default cap.

    >>> from .tables_eviction import shopper_view
    >>> from convmem.conversations import Conversation
    >>> v = shopper_view([Conversation("a", "u", (), ("1", "2")), Conversation("b", "u", (), ("3",))])
    >>> resolve_cap(url="2", url_seen=None, session=None, same_scope=False, view=v)
    2
    >>> resolve_cap(url="99", url_seen=None, session=1, same_scope=True, view=v)
    1
    >>> resolve_cap(url="2", url_seen="2", session=1, same_scope=False, view=v) == v.default_cap
    True
    """
    lo, hi = cap_bounds(view)
    if url is not None and url != url_seen and url.strip().isdigit():
        value = int(url.strip())
        if lo <= value <= hi:
            return value
    if same_scope and isinstance(session, int) and not isinstance(session, bool) and lo <= session <= hi:
        return session
    return min(max(view.default_cap, lo), hi)


def newest_alone(view: ShopperView) -> int:
    """Distinct ids of the newest conversation alone (the smallest cap that keeps anything
    that mentions a listing). O(1)."""
    return view.curve[-2] if len(view.curve) >= 2 else 0


def no_cut_notice(view: ShopperView, cap: int) -> str | None:
    """The sentence to show when no cut meets the cap (the newest conversation alone is over
    it, so evict_conversations drops every conversation); None otherwise."""
    alone = newest_alone(view)
    if cap >= alone:
        return None
    return (
        f"No cut meets max_listings = {cap:,}: the newest conversation alone mentions {alone:,} "
        f"distinct ids, so every conversation is dropped. A cap of {alone:,} or more keeps the "
        "newest one."
    )


def eviction_metrics(view: ShopperView, ev: Eviction) -> tuple[Metric, ...]:
    """The four numbers under the slider."""
    return (
        Metric("Conversations kept", f"{view.n - ev.k:,} / {view.n:,}"),
        Metric("Conversations dropped", f"{ev.k:,}"),
        Metric("Distinct ids remaining", f"{len(ev.remaining):,}"),
        Metric("Distinct ids before eviction", f"{view.max_cap:,}"),
    )


def drop_caption(view: ShopperView, ev: Eviction) -> str:
    """The line under the why-table: how many drops lowered nothing, and why."""
    if ev.k == 0:
        return f"Nothing is dropped: all {view.max_cap:,} distinct ids fit under the cap."
    wasted = sum(1 for i in range(ev.k) if not ev.released[i] and ev.shared[i])
    empty = sum(1 for i in range(ev.k) if not ev.released[i] and not ev.shared[i])
    return (
        f"{plural(ev.k, 'conversation')} dropped; {wasted:,} of them lowered nothing because every id "
        "they mention is mentioned again by a newer conversation"
        + (f", and {empty:,} mention no listing at all" if empty else "")
        + ". Released: ids whose last mention went with the conversation."
    )


def what_counts(definition: str, newest_ids: tuple[str, ...], catalog: Catalog | None) -> str | None:
    """On data with a catalogue: what the ids counted in the shopper's newest conversation are
    (catalogue item ids, product ids, neither) under ``definition``; None without a catalogue.

    >>> cat = Catalog(frozenset({"1111111111"}), frozenset({"2222222222"}))
    >>> what_counts("digits", ("1111111111", "2222222222"), cat)
    'Newest conversation of this shopper: 2 distinct ids counted, of which 1 catalogue item id, 1 product id (not a listing), 0 other. Pick "catalog" to count item ids only.'
    """
    if catalog is None:
        return None
    kinds: IdKinds = id_kinds(newest_ids, catalog)
    text = (
        f"Newest conversation of this shopper: {kinds.total:,} distinct ids counted, of which "
        f"{kinds.items:,} catalogue item id{'s' if kinds.items != 1 else ''}, {kinds.products:,} "
        f"product id{'s' if kinds.products != 1 else ''} (not a listing), {kinds.other:,} other."
    )
    if definition != "catalog" and kinds.products + kinds.other:
        text += ' Pick "catalog" to count item ids only.'
    return text
