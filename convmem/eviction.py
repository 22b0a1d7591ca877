"""Forgetting whole past conversations by distinct listings (SPEC §5).

A shopping agent carries a shopper's past conversations, oldest first; each mentions listing ids
(repeats allowed). While the kept conversations mention more than ``max_listings`` distinct ids, the
oldest whole conversation goes. An id stops counting only when its last kept mention goes.

>>> evict_conversations([["p1", "p2"], ["p2", "p3"], ["p4", "p1"]], 3)
['p4', 'p1']
>>> evict_conversations([["p1", "p1"], ["p1"]], 1)
['p1']
>>> eviction_curve([["p1", "p2"], ["p2", "p3"], ["p4", "p1"]])
[4, 4, 2, 0]

Why one scan from the newest end is exact: dropping the oldest conversation never adds an id, so the
distinct count of the kept suffix never grows as k (conversations dropped) grows. The rule "drop the
oldest while over the cap" therefore keeps the longest suffix whose distinct count fits, and that
suffix is found by adding conversations newest first until the next one would pass the cap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, islice, repeat

__all__ = [
    "evict_conversations",
    "eviction_curve",
    "kept_from",
    "explain_eviction",
    "EvictionStep",
]


def _check_id(i: int, j: int, listing: object) -> None:
    if not isinstance(listing, str):
        raise TypeError(f"conversations[{i}][{j}] must be a listing id (str), got {listing!r:.80}")


def _check_cap(max_listings: object) -> int:
    if isinstance(max_listings, bool) or not isinstance(max_listings, int):
        raise TypeError(f"max_listings must be an int (not bool), got {max_listings!r:.80}")
    if max_listings < 0:
        raise ValueError(f"max_listings must be a non-negative int, got {max_listings!r}")
    return max_listings


def _check_outer(conversations: object) -> Sequence[Sequence[str]]:
    """O(1): the outer value is a sequence (each conversation is checked when it is read)."""
    if conversations.__class__ is list or conversations.__class__ is tuple:
        return conversations  # type: ignore[return-value]
    if isinstance(conversations, (str, bytes)) or not isinstance(conversations, Sequence):
        raise TypeError(
            f"conversations must be a list of lists of listing ids, got {type(conversations).__name__}: "
            f"{conversations!r:.80}"
        )
    return conversations


def _check_one(i: int, conv: object) -> None:
    if isinstance(conv, (str, bytes)) or not isinstance(conv, Sequence):
        raise TypeError(
            f"conversations[{i}] must be a list of listing ids (str), got "
            f"{type(conv).__name__}: {conv!r:.80}"
        )


def _all_str(ids: set) -> bool:
    """True when every id is a str: ``str.join`` checks each item in C, in chunks so the joined
    text stays small (O(distinct) time, O(chunk) extra memory)."""
    it = iter(ids)
    join = "".join
    try:
        while join(islice(it, 4096)):
            pass
    except TypeError:
        return False
    # join stops early only on an empty chunk of non-empty strings: make sure the rest is empty
    return all(isinstance(x, str) for x in it)


def _check_read(conversations: Sequence[Sequence[str]], first: int) -> None:
    """TypeError naming the first id that is not a str, reading as the scans do: newest first."""
    for i in range(len(conversations) - 1, first - 1, -1):
        for j, listing in enumerate(conversations[i]):
            _check_id(i, j, listing)


def _scan(conversations: Sequence[Sequence[str]], cap: int | None) -> tuple[int, int, list[int] | None]:
    """The newest-first scan behind kept_from and eviction_curve: C-level set updates.

    Adds whole conversations, newest first, to one set. With a ``cap`` it stops at the first
    conversation ``i`` that takes the count past the cap and returns ``(i + 1, distinct before it,
    None)``; without, it returns ``(0, distinct, curve)``. Every id of every conversation it read is
    checked to be a str, after the scan, over the distinct ids only (O(distinct)); on a problem the
    scan is redone id by id to name the first bad one.
    """
    n = len(conversations)
    seen: set[str] = set()
    update = seen.update
    curve = [0] * (n + 1) if cap is None else None
    start = 0
    count = 0
    try:
        for i in range(n - 1, -1, -1):
            conv = conversations[i]
            if conv.__class__ is not list and conv.__class__ is not tuple:
                _check_one(i, conv)
            update(conv)
            size = len(seen)
            if curve is not None:
                curve[i] = size
            elif size > cap:
                start = i + 1
                break
            count = size
        else:
            count = len(seen)
    except TypeError:  # an unhashable id: name it
        _check_read(conversations, 0)
        raise
    if seen and not _all_str(seen):
        _check_read(conversations, max(start - 1, 0))
    return start, count, curve


def kept_from(conversations: Sequence[Sequence[str]], max_listings: int) -> int:
    """How many of the oldest conversations :func:`evict_conversations` drops.

    The kept conversations are ``conversations[kept_from(...):]``. One scan from the newest end, a
    whole conversation at a time (C-level set updates), that stops at the conversation that passes
    the cap: O(mentions kept + that one conversation) time, O(max_listings + one conversation)
    extra memory. Older conversations are never read (nor type-checked).

    Raises:
        TypeError: conversations is not a list of lists, an id the scan read (in the kept
            conversations or the one that passes the cap) is not a str, max_listings is not an int.
        ValueError: max_listings is negative.

    >>> kept_from([["a"], ["b"], ["c"], ["d"]], 3)
    1
    >>> kept_from([["a", "b", "c"]], 2)
    1
    """
    conversations = _check_outer(conversations)
    cap = _check_cap(max_listings)
    return _scan(conversations, cap)[0]


def evict_conversations(conversations: Sequence[Sequence[str]], max_listings: int) -> list[str]:
    """Drop the oldest whole conversations until at most ``max_listings`` distinct ids remain.

    Args:
        conversations: past conversations, oldest first; each a list of listing ids (str), repeats
            allowed, possibly empty.
        max_listings: the most distinct ids the kept conversations may mention (int >= 0).

    Returns:
        The distinct ids of the kept conversations, each once, in first-appearance order.

    Complexity: O(mentions kept + the conversation that passes the cap): the newest-first scan of
    :func:`kept_from`, an O(distinct) type check, then an oldest-first pass over the kept
    conversations for the order, which stops as soon as every distinct kept id has been placed
    (often long before the end when ids repeat). Conversations older than the one that passes the
    cap are never read, not even to check their type.

    Raises:
        TypeError, ValueError: as :func:`kept_from`.

    >>> evict_conversations([["L1", "L2"], ["L2", "L3"], ["L3", "L4"]], 3)
    ['L2', 'L3', 'L4']
    >>> evict_conversations([], 5), evict_conversations([["a", "b", "c"]], 2)
    ([], [])
    """
    conversations = _check_outer(conversations)
    cap = _check_cap(max_listings)
    start, distinct, _ = _scan(conversations, cap)
    remaining: dict[str, None] = {}
    update = remaining.update
    # Oldest first, in chunks of conversations that double in size (C-level dict updates), until
    # every distinct kept id has its place: at most twice the mentions that were needed.
    i, n, size = start, len(conversations), 8
    while i < n and len(remaining) < distinct:
        update(zip(chain.from_iterable(conversations[i : i + size]), repeat(None)))
        i += size
        size *= 2
    return list(remaining)


def eviction_curve(conversations: Sequence[Sequence[str]]) -> list[int]:
    """Distinct ids left after dropping the k oldest conversations, for every k from 0 to n.

    ``curve[k]`` is non-increasing in k, ``curve[n] == 0``, and the kept count for a cap c is the
    smallest k with ``curve[k] <= c``. One pass from the newest end, a whole conversation at a time
    (C-level set updates), then an O(distinct) type check: O(all mentions) time, O(distinct ids)
    memory.

    Raises:
        TypeError: conversations is not a list of lists of str.

    >>> eviction_curve([["A", "A", "A"], ["B"]])
    [2, 1, 0]
    >>> eviction_curve([])
    [0]
    """
    conversations = _check_outer(conversations)
    curve = _scan(conversations, None)[2]
    assert curve is not None
    return curve


@dataclass(frozen=True, slots=True)
class EvictionStep:
    """Why dropping one conversation did (or did not) lower the distinct count.

    Attributes:
        index: the conversation's 0-based position (oldest first).
        count_before, count_after: distinct ids of the kept suffix before and after dropping it.
        released: ids whose last mention was in this conversation, in first-mention order; dropping
            it lowers the count by exactly ``len(released)``.
        shared: ids it mentions that newer conversations mention too, so they keep counting.
        dropped: True when evict_conversations drops it under the cap given to explain_eviction.
    """

    index: int
    count_before: int
    count_after: int
    released: tuple[str, ...]
    shared: tuple[str, ...]
    dropped: bool


def explain_eviction(conversations: Sequence[Sequence[str]], max_listings: int) -> list[EvictionStep]:
    """One :class:`EvictionStep` per conversation: what dropping it would release, what it shares.

    For the dashboard's "why did this drop (not) help" view. O(all mentions) time and memory.

    Raises:
        TypeError, ValueError: as :func:`kept_from`.

    >>> [(s.index, s.released, s.shared, s.dropped) for s in explain_eviction([["p1", "p2"], ["p2", "p3"], ["p4", "p1"]], 3)]
    [(0, (), ('p1', 'p2'), True), (1, ('p2', 'p3'), (), True), (2, ('p4', 'p1'), (), False)]
    """
    curve = eviction_curve(conversations)
    start = kept_from(conversations, max_listings)
    last: dict[str, int] = {}
    for i, conv in enumerate(conversations):
        for listing in conv:
            last[listing] = i
    steps = []
    for i, conv in enumerate(conversations):
        distinct = dict.fromkeys(conv)
        released = tuple(x for x in distinct if last[x] == i)
        shared = tuple(x for x in distinct if last[x] != i)
        steps.append(EvictionStep(i, curve[i], curve[i + 1], released, shared, i < start))
    return steps
