"""Issue 9: counting the largest single-line message the importer accepts stays memory-bounded.

The default counter (``convmem.make_counter()``) counts a huge text chunk by chunk (convmem.tokens),
so the peak traced memory is the text plus a bounded working set, never the text's whole token list.
No timing assertions here (speed is measured by benchmarks/).
"""

from __future__ import annotations

import gc
import tracemalloc

import convmem

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
