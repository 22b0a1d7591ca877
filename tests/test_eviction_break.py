"""Listing eviction end to end, per listing definition (session 24 breaker): ids found in message
text and tool-call arguments (9/10/11-digit runs, inside URLs, JSON keys, next to non-ASCII
digits), through Conversation.listing_ids, into evict_conversations / eviction_curve, against a
brute-force reference (the spec's rule, literally: drop the oldest while over the cap)."""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem import evict_conversations, eviction_curve, make_listing_extractor, parse_conversations

TEN = re.compile(r"(?<![0-9])[0-9]{10}(?![0-9])")
ITEM = re.compile(r"item/(\d+)")
CATALOG = frozenset({"1000000001", "2000000002", "0000000000"})

digits = st.sampled_from(
    ["100000000", "1000000001", "2000000002", "0000000000", "30000000003", "9999999999"]
)
piece = st.one_of(
    digits,
    digits.map(lambda d: f"https://shop.example/item/{d}?ref=4444444444x"),
    digits.map(lambda d: json.dumps({d: [d]})),
    st.sampled_from([" ", "a", "\n", "١", "٢٣", "é", "-", ".", "😀", "0", "12"]),
)
text = st.lists(piece, max_size=8).map("".join)
message = st.tuples(text, st.lists(text, max_size=2))  # content, tool-call arguments
conversation = st.lists(message, max_size=4)


def openai_chat(convs):
    """One OpenAI chat JSONL line per conversation: a user turn per (content, arguments) pair,
    then an assistant turn calling a tool with each arguments text, and its result."""
    lines = []
    for c, conv in enumerate(convs):
        messages = []
        for k, (content, arguments) in enumerate(conv):
            messages.append({"role": "user", "content": content})
            if arguments:
                calls = [{"id": f"c{k}_{j}", "type": "function",
                          "function": {"name": "look", "arguments": a}}
                         for j, a in enumerate(arguments)]
                messages.append({"role": "assistant", "content": None, "tool_calls": calls})
                messages += [{"role": "tool", "tool_call_id": call["id"], "content": ""}
                             for call in calls]
        lines.append(json.dumps({"id": f"conv{c}", "messages": messages}))
    return "\n".join(lines)


def reference_ids(conv, find):
    """Listing ids of a conversation as the spec defines them: message order, content then the
    calls' arguments, every match with repeats."""
    return [x for content, arguments in conv for t in [content, *arguments] for x in find(t)]


def reference_evict(listings, cap):
    k = 0
    while len({x for c in listings[k:] for x in c}) > cap:
        k += 1
    return list(dict.fromkeys(x for c in listings[k:] for x in c))


DEFINITIONS = {
    "default": (None, TEN.findall),
    "pattern": (make_listing_extractor(pattern=ITEM), ITEM.findall),
    "catalog": (make_listing_extractor(CATALOG),
                lambda t: [x for x in TEN.findall(t) if x in CATALOG]),
}


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(convs=st.lists(conversation, min_size=1, max_size=5), cap=st.integers(0, 6),
       definition=st.sampled_from(sorted(DEFINITIONS)))
def test_every_listing_definition_evicts_as_the_brute_force_reference(convs, cap, definition):
    extractor, find = DEFINITIONS[definition]
    loaded = parse_conversations(openai_chat(convs), listing_extractor=extractor)
    assert not loaded.skipped
    listings = [list(c.listing_ids) for c in loaded.conversations]
    assert listings == [reference_ids(conv, find) for conv in convs]
    assert evict_conversations(listings, cap) == reference_evict(listings, cap)
    assert eviction_curve(listings) == [
        len({x for c in listings[k:] for x in c}) for k in range(len(listings) + 1)
    ]


def test_edges_of_the_ten_digit_definition():
    (conv,) = parse_conversations(openai_chat([[
        ("123456789 1234567890 12345678901 ١1234567890٢ x1234567890y", []),
        ("", ['{"1111111111": "https://s/item/2222222222?ref=33333333333"}']),
    ]])).conversations
    assert conv.listing_ids == ("1234567890", "1234567890", "1234567890", "1111111111",
                                "2222222222")
    # the newest conversation alone over the cap: nothing is kept
    assert evict_conversations([list(conv.listing_ids)], 2) == []
    assert evict_conversations([list(conv.listing_ids)], 3) == [
        "1234567890", "1111111111", "2222222222"
    ]
