"""The Listing eviction page's data: a shopper's conversations as plain values, and the tables.

Pure (no streamlit). :func:`shopper_view` turns one shopper's conversations (oldest first) into a
:class:`ShopperView` of plain values the page caches by (dataset key, shopper); everything per cap
(:func:`evict`) is one call into convmem's linear eviction functions.

>>> from convmem.conversations import Conversation

from .table_layout import column, table_view
>>> convs = [Conversation(f"c{i}", "u", (), tuple(ids))
...          for i, ids in enumerate([["p1", "p2"], ["p2", "p3"], ["p4", "p1"]])]
>>> view = shopper_view(convs)
>>> view.curve, view.default_cap
((4, 4, 2, 0), 2)
>>> e = evict(view, 3)
>>> e.k, e.remaining
(2, ('p4', 'p1'))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from convmem import evict_conversations, eviction_curve, explain_eviction, kept_from
from convmem.conversations import Conversation

from .table_layout import column, table_view
from .wording import plural

__all__ = [
    "NO_SHOPPER",
    "Eviction",
    "ShopperView",
    "default_shopper",
    "dropped_table",
    "dropped_table_view",
    "evict",
    "remaining_table",
    "shopper_key",
    "shopper_options",
    "shopper_view",
    "why_text",
]

#: The picker's name for conversations without a user id (convmem.group_by_user's None bucket).
NO_SHOPPER = "(no shopper id)"


@dataclass(frozen=True)
class ShopperView:
    """One shopper's conversations, oldest first, as plain values.

    Attributes:
        ids: conversation ids; titles: first user text (or ""); messages: message counts.
        listings: each conversation's listing ids in order of mention, with repeats.
        curve: ``eviction_curve(listings)`` (distinct ids left after dropping the k oldest).
        default_cap: a cap that shows something on first load (see :func:`_default_cap`).
    """

    ids: tuple[str, ...]
    titles: tuple[str, ...]
    messages: tuple[int, ...]
    listings: tuple[tuple[str, ...], ...]
    curve: tuple[int, ...]
    default_cap: int

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def max_cap(self) -> int:
        """Distinct ids of all conversations: any cap at or above it drops nothing."""
        return self.curve[0] if self.curve else 0


@dataclass(frozen=True)
class Eviction:
    """What one cap does: ``k`` oldest conversations dropped, the ids that remain, and why."""

    cap: int
    k: int
    remaining: tuple[str, ...]
    released: tuple[tuple[str, ...], ...]
    shared: tuple[tuple[str, ...], ...]
    count_before: tuple[int, ...]
    count_after: tuple[int, ...]


def shopper_key(user_id: str | None) -> str:
    """The picker's string for a group_by_user key (None -> NO_SHOPPER)."""
    return NO_SHOPPER if user_id is None else user_id


def shopper_options(groups: Mapping[str | None, Sequence[Conversation]]) -> list[str]:
    """Picker options: every shopper, in first-appearance order (the None bucket last)."""
    keys = [shopper_key(u) for u in groups if u is not None]
    if None in groups:
        keys.append(NO_SHOPPER)
    return keys


def _first_flat(curve: Sequence[int]) -> int | None:
    """The first conversation whose drop lowers nothing though it mentions ids (a flat step of
    the curve above zero), or None."""
    for j in range(len(curve) - 2):
        if curve[j] == curve[j + 1] > 0:
            return j
    return None


def _default_cap(curve: Sequence[int]) -> int:
    """A cap that shows something on first load.

    When some conversation's drop lowers nothing (its ids are all mentioned again later), the
    largest cap that drops it, so the first view shows a drop that "did not help". Otherwise the
    count left after dropping half the conversations (at least one). Never 0 unless the top is 0:
    with nothing to show below the top (one conversation), the top itself (nothing dropped).
    """
    if not curve:
        return 0
    top = curve[0]
    flat = _first_flat(curve)
    if flat is not None:
        below = [c for c in curve if c < curve[flat]]
        if below and max(below) > 0:
            return max(below)
    n = len(curve) - 1
    cap = curve[max(1, n // 2)] if n >= 1 else top
    return cap if cap > 0 else top


def default_shopper(groups: Mapping[str | None, Sequence[Conversation]]) -> str | None:
    """The shopper shown first: most conversations, then one with a drop that lowers nothing
    (the interesting case), then most distinct steps on the eviction curve, then first
    appearance. The no-shopper bucket only when there is no shopper. None when empty."""
    best: tuple[int, ...] | None = None
    choice: str | None = None
    for user, convs in groups.items():
        curve = eviction_curve([c.listing_ids for c in convs])
        score = (
            user is not None,
            len(convs),
            _first_flat(curve) is not None,
            len(set(curve)),
        )
        if best is None or score > best:
            best, choice = score, shopper_key(user)
    return choice


def shopper_view(
    conversations: Iterable[Conversation], listings: Sequence[Sequence[str]] | None = None
) -> ShopperView:
    """Plain values for one shopper's conversations (oldest first). O(mentions).

    ``listings``: each conversation's listing ids under another definition of a listing
    (convmem_dashboard.listing_definitions); default ``Conversation.listing_ids``.
    """
    convs = list(conversations)
    if listings is None:
        listings = tuple(tuple(c.listing_ids) for c in convs)
    else:
        listings = tuple(tuple(x) for x in listings)
        if len(listings) != len(convs):
            raise ValueError(f"listings must have one entry per conversation ({len(convs)}), got {len(listings)}")
    curve = tuple(eviction_curve(listings))
    return ShopperView(
        ids=tuple(c.id for c in convs),
        titles=tuple(c.title or "" for c in convs),
        messages=tuple(len(c.messages) for c in convs),
        listings=listings,
        curve=curve,
        default_cap=_default_cap(curve),
    )


def evict(view: ShopperView, cap: int) -> Eviction:
    """Apply ``max_listings=cap`` with convmem: kept_from, evict_conversations, explain_eviction."""
    steps = explain_eviction(view.listings, cap)
    return Eviction(
        cap=cap,
        k=kept_from(view.listings, cap),
        remaining=tuple(evict_conversations(view.listings, cap)),
        released=tuple(s.released for s in steps),
        shared=tuple(s.shared for s in steps),
        count_before=tuple(s.count_before for s in steps),
        count_after=tuple(s.count_after for s in steps),
    )


def why_text(ev: Eviction, i: int) -> str:
    """Why dropping conversation ``i`` did or did not lower the distinct count, in one line."""
    released, shared = ev.released[i], ev.shared[i]
    before, after = ev.count_before[i], ev.count_after[i]
    if not released and not shared:
        return f"mentions no listing: dropping it leaves the count at {before}"
    if not released:
        return (
            f"did not lower the count ({before:,} → {after:,}): all {plural(len(shared), 'id')} it mentions are "
            f"mentioned again by newer conversations"
        )
    text = f"lowered the count by {len(released):,} ({before:,} → {after:,}): it held the last mention of "
    text += plural(len(released), "id")
    if shared:
        text += f"; {plural(len(shared), 'other id')} {'is' if len(shared) == 1 else 'are'} mentioned again by newer conversations"
    return text


def dropped_table(view: ShopperView, ev: Eviction) -> pd.DataFrame:
    """One row per conversation (oldest first) with its fate and why dropping it helped or not.

    Columns: #, conversation, fate, why, count before -> after ("5 → 3"), released, shared with
    newer (those three empty for a kept conversation), distinct ids, mentions, messages, title.
    """
    records = []
    for i, conv_id in enumerate(view.ids):
        dropped = i < ev.k
        records.append(
            {
                "#": i + 1,
                "conversation": conv_id,
                "title": view.titles[i],
                "messages": view.messages[i],
                "mentions": len(view.listings[i]),
                "distinct ids": len(set(view.listings[i])),
                "fate": "dropped" if dropped else "kept",
                # a kept conversation's drop columns stay empty ("–"): what dropping it would do
                # read as a drop that happened (session 21's new user)
                "released": len(ev.released[i]) if dropped else None,
                "shared with newer": len(ev.shared[i]) if dropped else None,
                "count before -> after": f"{ev.count_before[i]:,} → {ev.count_after[i]:,}" if dropped else None,
                "why": why_text(ev, i) if dropped else "kept (within the cap)",
            }
        )
    columns = [
        "#", "conversation", "fate", "why", "count before -> after", "released",
        "shared with newer", "distinct ids", "mentions", "messages", "title",
    ]
    return pd.DataFrame(records, columns=columns)


def remaining_table(view: ShopperView, ev: Eviction) -> pd.DataFrame:
    """The ids that remain (first-appearance order), with their mentions in kept conversations
    and the kept conversations (1-based #) that mention them."""
    mentions: dict[str, int] = {}
    where: dict[str, list[int]] = {}
    for i in range(ev.k, view.n):
        for listing in view.listings[i]:
            mentions[listing] = mentions.get(listing, 0) + 1
            seen = where.setdefault(listing, [])
            if not seen or seen[-1] != i + 1:
                seen.append(i + 1)
    records = [
        {
            "listing id": listing,
            "mentions": mentions.get(listing, 0),
            "in conversations #": ", ".join(str(j) for j in where.get(listing, [])),
        }
        for listing in ev.remaining
    ]
    return pd.DataFrame(records, columns=["listing id", "mentions", "in conversations #"])


#: The "why each drop" table's columns as shown: the ones that answer "why" first (the sentence,
#: the count before and after, the ids released and the ids newer conversations still mention),
#: then which conversation it was and the details, which a narrow window scrolls to.
DROPPED_ORDER = (
    "#", "why", "count before -> after", "released", "shared with newer", "fate", "conversation",
    "distinct ids", "mentions", "messages", "title",
)


def dropped_table_view(rows: int) -> dict:
    """st.dataframe arguments of :func:`dropped_table`: as tall as its rows (up to 8), the why
    sentence first after #, wrapped in a wide column, then the counts it explains; short headers."""
    return table_view(
        rows,
        wrap=True,
        max_rows=8,
        order=DROPPED_ORDER,
        placeholder="–",  # a kept conversation's drop columns
        columns={
            "#": column(width=40),
            "conversation": column(width=135),
            "fate": column(width=75),
            "released": column(
                "released", width=70,
                help="Ids whose last mention was in this conversation: dropping it releases them.",
            ),
            "shared with newer": column(
                "shared", width=65,
                help="Ids newer conversations mention again: dropping this one keeps them counted.",
            ),
            "count before -> after": column(
                "ids before → after", width=125,
                help="Distinct listing ids before and after this conversation was dropped.",
            ),
            "why": column(width="large"),
        },
    )
