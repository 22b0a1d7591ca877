"""Issue 9: counting the largest single-line message the importer accepts stays memory-bounded.

The default counter (``convmem.make_counter()``) counts a huge text chunk by chunk (convmem.tokens),
so the peak traced memory is the text plus a bounded working set, never the text's whole token list.
No timing assertions here (speed is measured by benchmarks/).
"""

from __future__ import annotations

import gc
import tracemalloc

import convmem
from convmem import to_openai_jsonl
from convmem.synthetic import generate_conversation

MIB = 1024 * 1024
#: Stated bound on tracemalloc's peak while counting one 8 MiB message (the text itself is
#: allocated before tracing starts). Unchunked tiktoken needed about 55x the text (2.19 GB for
#: 40 MiB, issue 9).
PEAK_BOUND = 64 * MIB


def test_counting_one_8_mib_single_line_message_has_a_bounded_peak():
    counter = convmem.make_counter()
    block = "0123456789 abcdefghij " * 4096  # 90,112 characters, ASCII, no newline
    k = 8 * MIB // len(block) + 1
    text = block * k  # one line of about 8 MiB
    assert len(text) >= 8 * MIB and "\n" not in text
    per_block = counter.count_text(block)
    overhead = counter.count_message("user", "", []) - counter.count_text("")
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        n = counter.count_message("user", text, [])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The text repeats a block that starts with a digit and ends with a space, so every block
    # boundary splits pre-tokens exactly as inside a block: the count is k blocks' counts.
    assert n == overhead + k * per_block
    assert peak < PEAK_BOUND, f"peak {peak:,} bytes over the stated {PEAK_BOUND:,}"


def _generation_of(obj) -> int | None:
    """The cyclic collector's generation holding ``obj`` (0 youngest, 2 oldest), or None."""
    for generation in (0, 1, 2):
        if any(o is obj for o in gc.get_objects(generation)):
            return generation
    return None


def _load_a_tool_call_file():
    text = to_openai_jsonl([generate_conversation(200, seed=5)])
    return convmem.parse_conversations(text, counter=None)


def test_a_load_leaves_what_it_made_in_the_oldest_generation():
    """The load pauses the collector, then moves what it made to the oldest generation
    (convmem._gc.promote_young): the first collection after it does not traverse
    every message again. A frozen set someone else keeps stays frozen; a paused collector stays
    paused."""
    assert gc.isenabled() and gc.get_freeze_count() == 0
    (conv,) = _load_a_tool_call_file()
    assert gc.isenabled()
    message, call = conv.messages[-1], conv.tool_calls[-1]
    assert _generation_of(message) == 2 and _generation_of(call) == 2
    assert gc.get_freeze_count() == 0  # nothing left frozen

    kept = [object()]  # someone else's frozen objects (a pre-fork server)
    gc.freeze()
    try:
        assert _generation_of(kept) is None  # frozen: in no generation
        (conv,) = _load_a_tool_call_file()
        assert _generation_of(kept) is None  # not unfrozen by the load
        assert _generation_of(conv.messages[-1]) in (0, 1)  # and no move then
    finally:
        gc.unfreeze()

    gc.disable()
    try:
        (conv,) = _load_a_tool_call_file()
        assert not gc.isenabled()
        assert _generation_of(conv.messages[-1]) in (0, 1)
    finally:
        gc.enable()
