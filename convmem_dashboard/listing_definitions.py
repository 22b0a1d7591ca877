"""What counts as a listing on the Listing eviction page (issue 10 item 5): three definitions.

* ``digits``: every 10-digit id (:data:`convmem.LISTING_ID_PATTERN`; convmem's default, what
  ``Conversation.listing_ids`` holds). On the tau-bench retail data it also counts the 10-digit
  ``product_id`` values, which are not listings.
* ``catalog``: only the item ids of a catalogue (:func:`convmem.make_listing_extractor` with the
  catalogue's item ids). Offered when the dataset has one: the retail run's
  ``db/products.json`` (591 item ids of 50 products), next to its trajectories.
* ``keys``: the values of JSON keys that name items (:data:`ITEM_KEYS`, e.g. ``"item_id":
  "1234567890"`` or ``"item_ids": ["…", "…"]``) in message text and tool-call arguments, with
  either quote style. It needs no catalogue, but misses an id written in prose.

Pure (no streamlit): :func:`extractor` gives a ``text -> list[str]`` function, and
:func:`listings_of` applies it to conversations through ``Conversation.keep`` (the library's
own walk over content and call arguments, in message order). Both O(text).

>>> ext = extractor("keys")
>>> ext('{"product_id": "6992792935", "item_id": "4202497723", "item_ids": ["1151293680"]}')
['4202497723', '1151293680']
>>> extractor("digits")('product 6992792935, item 4202497723')
['6992792935', '4202497723']
>>> extractor("catalog", Catalog(frozenset({"4202497723"}), frozenset()))('6992792935 4202497723')
['4202497723']
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from convmem import LISTING_ID_PATTERN, extract_listing_ids, make_listing_extractor
from convmem.conversations import Conversation

__all__ = [
    "DEFINITIONS",
    "DEFINITION_CAPTIONS",
    "ITEM_KEYS",
    "Catalog",
    "IdKinds",
    "extractor",
    "id_kinds",
    "listings_of",
    "load_catalog",
]

#: The definitions' URL values (``?listing=``), in the order the page offers them.
DEFINITIONS = ("digits", "catalog", "keys")
#: JSON keys whose values are item ids in the retail tools' arguments and results.
ITEM_KEYS = ("item_id", "item_ids", "new_item_ids", "return_items", "exchange_items",
             "exchange_new_items")
#: One line per definition, shown under its option.
DEFINITION_CAPTIONS = {
    "digits": "Every run of exactly 10 digits (convmem's default, `LISTING_ID_PATTERN`).",
    "catalog": "Only ids that are item ids of the dataset's catalogue.",
    "keys": "Values of the JSON keys " + ", ".join(f"`{k}`" for k in ITEM_KEYS) + ".",
}

_KEY_VALUE = re.compile(
    r"""["'](?:%s)["']\s*:\s*(\[[^\]]*\]|"[^"]*"|'[^']*')""" % "|".join(ITEM_KEYS)
)
_QUOTED = re.compile(r""""([^"]*)"|'([^']*)'""")


@dataclass(frozen=True, slots=True)
class Catalog:
    """A catalogue's ids: ``items`` (listings, e.g. retail ``item_id``) and ``products``."""

    items: frozenset[str]
    products: frozenset[str]


def load_catalog(path: Path) -> Catalog | None:
    """The catalogue in a tau-bench ``products.json`` (``{product_id: {"variants": {item_id:
    ...}}}``), or None when the file is missing or not in that shape. O(file size)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        items = {str(i) for p in data.values() for i in p["variants"]}
        products = {str(p) for p in data}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return Catalog(frozenset(items), frozenset(products))


def _json_key_ids(text: str) -> list[str]:
    out: list[str] = []
    for m in _KEY_VALUE.finditer(text):
        for a, b in _QUOTED.findall(m.group(1)):
            value = a or b
            if value:
                out.append(value)
    return out


def extractor(definition: str, catalog: Catalog | None = None) -> Callable[[str], list[str]]:
    """The ``text -> listing ids`` function of a definition (see the module docstring).

    Raises:
        ValueError: an unknown definition, or ``catalog`` with no catalogue.
    """
    if definition == "digits":
        return extract_listing_ids
    if definition == "keys":
        return _json_key_ids
    if definition == "catalog":
        if catalog is None:
            raise ValueError("definition 'catalog' needs a catalogue; this dataset has none")
        return make_listing_extractor(catalog.items)
    raise ValueError(f"definition must be one of {', '.join(DEFINITIONS)}, got {definition!r}")


def listings_of(
    conversations: Iterable[Conversation], extract: Callable[[str], list[str]]
) -> list[tuple[str, ...]]:
    """Each conversation's listing ids (in order of mention, with repeats) under ``extract``:
    message content, then the message's tool-call arguments, as the loader does. O(text)."""
    out = []
    for c in conversations:
        if extract is extract_listing_ids:
            out.append(tuple(c.listing_ids))
        else:
            kept = c.keep([m.id for m in c.messages], listing_extractor=extract)
            out.append(tuple(kept.listing_ids))
    return out


@dataclass(frozen=True, slots=True)
class IdKinds:
    """Distinct ids of one text split by what a catalogue says they are."""

    items: int
    products: int
    other: int

    @property
    def total(self) -> int:
        return self.items + self.products + self.other


def id_kinds(ids: Sequence[str], catalog: Catalog) -> IdKinds:
    """How many of the distinct ``ids`` are catalogue item ids, product ids, or neither.

    >>> id_kinds(["1", "2", "2", "9"], Catalog(frozenset({"1"}), frozenset({"2"})))
    IdKinds(items=1, products=1, other=1)
    """
    distinct = set(ids)
    items = len(distinct & catalog.items)
    products = len((distinct - catalog.items) & catalog.products)
    return IdKinds(items, products, len(distinct) - items - products)

