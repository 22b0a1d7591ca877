"""Huge texts are counted in chunks cut just before a space that follows a non-space character:
no pre-tokenizer piece of cl100k_base or o200k_base spans such a point, so the count is exact."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem.tokens import _SAFE_CUT, ApproxCounter, TiktokenCounter, make_counter

ENCODINGS = {name: make_counter(encoding=name, per_message_overhead=0).encoding
             for name in ("cl100k_base", "o200k_base")}

# letters (Latin, accented, CJK, marks), digits, punctuation, every kind of whitespace
ALPHABET = st.sampled_from(list("aZé東京ñ\u0301 0 9 .,'\"/_-!?\n\r\t  \u00a0\u3000sdtlmvre'"))
TEXTS = st.text(alphabet=ALPHABET, max_size=200)


def pieces_at_every_safe_cut(text: str) -> list[str]:
    cuts = [0] + [m.start() for m in _SAFE_CUT.finditer(text)] + [len(text)]
    return [text[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(TEXTS)
def test_cutting_at_every_safe_point_changes_no_count(text):
    parts = pieces_at_every_safe_cut(text)
    assert "".join(parts) == text
    for enc in ENCODINGS.values():
        assert sum(len(enc.encode_ordinary(p)) for p in parts) == len(enc.encode_ordinary(text))
    approx = ApproxCounter()
    assert sum(approx.count_text(p) for p in parts) == approx.count_text(text)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.text(alphabet=ALPHABET.filter(lambda c: c != " "), min_size=1, max_size=6),
                min_size=1, max_size=60))
def test_small_chunks_are_exact_when_every_window_has_a_safe_cut(words):
    # words of <= 6 characters joined by one space: every 16-character window has a safe cut
    text = " ".join(words)
    for enc in ENCODINGS.values():
        chunked = TiktokenCounter(enc, chunk_chars=16)
        assert chunked.count_text(text) == len(enc.encode_ordinary(text))


def test_safe_points_in_the_first_half_of_a_window_are_used():
    from convmem.tokens import _chunks

    text = "ab " + "x" * 30 + " cd" + "y" * 40  # safe cuts at 2 and 33 only
    assert list(_chunks(text, 32)) == ["ab", " " + "x" * 30, " cd" + "y" * 29, "y" * 11]
    enc = ENCODINGS["o200k_base"]
    assert TiktokenCounter(enc, chunk_chars=64).count_text(text) == len(enc.encode_ordinary(text))


def test_long_text_is_exact_and_hard_cuts_stay_close():
    enc = ENCODINGS["cl100k_base"]
    prose = ("The order #W2378156 was delivered; refund 1,234.56 to the card. " * 5000)
    assert len(prose) > 2 * 131072
    assert make_counter(per_message_overhead=0).count_text(prose) == len(enc.encode_ordinary(prose))
    # no space at all: hard cuts every 1,000 characters, each may move the count a little
    blob = "".join(f"{i:08x}+/=" for i in range(2000))  # 22,000 characters, no space
    exact = len(enc.encode_ordinary(blob))
    hard = TiktokenCounter(enc, chunk_chars=1000).count_text(blob)
    assert 0 <= hard - exact <= 22  # at most one token per hard cut here


def test_chunk_chars_is_checked():
    enc = ENCODINGS["cl100k_base"]
    with pytest.raises(ValueError, match="chunk_chars"):
        TiktokenCounter(enc, chunk_chars=1)
    with pytest.raises(TypeError, match="chunk_chars"):
        TiktokenCounter(enc, chunk_chars=2.0)
