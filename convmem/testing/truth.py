"""What a load lost, repeated or reordered against the store's truth."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..message import Message

__all__ = ["TruthDiff", "compare_to_truth"]


@dataclass(frozen=True, slots=True)
class TruthDiff:
    """How a loaded history differs from the store's truth (by message id).

    Attributes:
        lost: ids of the truth missing from the load, in truth order.
        repeated: ids the load holds more than once, each once, in the order the repeat appeared.
        extra: ids the load holds that the truth does not, in load order.
        out_of_order: the loaded ids that are in the truth are not in truth order.
        loaded_count: messages in the load (with repeats).
        truth_count: messages in the truth.
        ok: nothing lost, repeated, extra or out of order.
    """

    lost: tuple[str, ...]
    repeated: tuple[str, ...]
    extra: tuple[str, ...]
    out_of_order: bool
    loaded_count: int
    truth_count: int
    ok: bool = field(init=False)

    def __post_init__(self) -> None:
        ok = not (self.lost or self.repeated or self.extra or self.out_of_order)
        object.__setattr__(self, "ok", ok)


def _ids(name: str, items: Any) -> list[str]:
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise TypeError(
            f"compare_to_truth: {name} must be a list of Message or str ids, got {items!r}"
        )
    ids = []
    for position, item in enumerate(items):
        if isinstance(item, Message):
            ids.append(item.id)
        elif isinstance(item, str):
            ids.append(item)
        else:
            raise TypeError(
                f"compare_to_truth: {name}[{position}] must be a Message or a str id, got {item!r}"
            )
    return ids


def compare_to_truth(loaded: Sequence[Message | str], truth: Sequence[Message | str]) -> TruthDiff:
    """Compare a loaded history with the truth, by id. O(len(loaded) + len(truth)).

    Both are lists of Message (or of str ids). The truth must not repeat an id (ValueError).

    >>> diff = compare_to_truth(["m1", "m3", "m3"], ["m1", "m2", "m3"])
    >>> diff.lost, diff.repeated, diff.extra, diff.out_of_order, diff.ok
    (('m2',), ('m3',), (), False, False)
    >>> compare_to_truth(["b", "a"], ["a", "b"]).out_of_order
    True
    """
    loaded_ids = _ids("loaded", loaded)
    truth_ids = _ids("truth", truth)
    position: dict[str, int] = {}
    for i, id_ in enumerate(truth_ids):
        if id_ in position:
            raise ValueError(f"compare_to_truth: truth repeats the id {id_!r}")
        position[id_] = i
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    extra: list[str] = []
    out_of_order = False
    last = -1
    for id_ in loaded_ids:
        if id_ in seen:
            repeated.setdefault(id_, None)
            continue
        seen.add(id_)
        where = position.get(id_)
        if where is None:
            extra.append(id_)
        else:
            if where < last:
                out_of_order = True
            last = where
    lost = tuple(id_ for id_ in truth_ids if id_ not in seen)
    return TruthDiff(
        lost=lost,
        repeated=tuple(repeated),
        extra=tuple(extra),
        out_of_order=out_of_order,
        loaded_count=len(loaded_ids),
        truth_count=len(truth_ids),
    )
