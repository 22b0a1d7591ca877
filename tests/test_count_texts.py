"""count_texts(texts) equals [count_text(t) for t in texts] for every convmem counter."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convmem.tokens import ApproxCounter, make_counter

CHUNKED = make_counter()
CHUNKED.chunk_chars = 16  # texts over chunk_chars take count_text's chunked path
COUNTERS = [make_counter(), make_counter(encoding="o200k_base"), make_counter(per_message_overhead=0),
            ApproxCounter(), make_counter(approximate=True), CHUNKED]

TEXTS = st.lists(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=80), max_size=30)


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_count_texts_equals_count_text_each(texts):
    for counter in COUNTERS:
        assert counter.count_texts(texts) == [counter.count_text(t) for t in texts], counter


def test_count_texts_known_values_and_errors():
    c = make_counter()
    assert c.count_texts(["Hello, world!", "", "Hello"]) == [4, 0, 1]
    assert c.count_texts(iter(["a b", "x"])) == [2, 1]
    assert ApproxCounter().count_texts(["The item 1234567890 is in stock."]) == [11]
    for counter in COUNTERS:
        with pytest.raises(TypeError, match="text must be a str"):
            counter.count_texts(["ok", 3])


def test_count_texts_refuses_a_single_str():
    # a str is an iterable of characters: counting each one would be a silent wrong answer
    for counter in COUNTERS:
        with pytest.raises(TypeError, match="count_texts takes an iterable of str, got the str 'ab'"):
            counter.count_texts("ab")


def test_count_texts_goes_through_a_subclass_chunk_count():
    """A TiktokenCounter subclass overriding ``_count_chunk`` counts the same through count_texts
    as through count_text (the summarizer counts its lines with count_texts)."""
    from convmem import HistorySettings, Message, replay
    from convmem.tokens import TiktokenCounter, default_counter

    class Doubled(TiktokenCounter):
        def _count_chunk(self, text: str) -> int:
            return 2 * len(self.encoding.encode_ordinary(text))

    c = Doubled(default_counter().encoding)
    assert c.count_text("hello world") == 4
    assert c.count_texts(["hello world", ""]) == [4, 0]
    msgs = [Message(f"m{i}", "user", 10, content=f"hello world number {i}") for i in range(20)]
    r = replay(msgs, HistorySettings(50, summary_budget=40), count_tokens=c.count_text)
    summaries = [s for s in r.summaries if s is not None]
    assert summaries and all(s.tokens == c.count_text(s.content) <= 40 for s in summaries)
