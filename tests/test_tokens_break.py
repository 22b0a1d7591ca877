"""Token counts against the OpenAI cookbook's rule as SPEC states it (session 24 breaker): every
message 3 + role + content + (name + 1) + each call's (name + arguments + 3), on both encodings,
for non-ASCII, emoji, special-token look-alikes and names; and chunked counting equal to the
unchunked count when every window holds a cut point (a space after a non-space)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convmem.tokens import make_counter

ALPHABET = list(" a1é\n\t\u00a0\u3000.'sX😀-\r\u200b") + ["'s", "  ", "123", "<|endoftext|>"]
text = st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join)
# Words of at most 11 characters that end in a non-space, joined by single spaces: every window
# of 16 characters holds a cut point, so the chunked count must be exact.
word = st.tuples(
    st.lists(st.sampled_from([x for x in ALPHABET if " " not in x and "<" not in x]), max_size=3)
    .map("".join),
    st.sampled_from(list("a1é.'X😀-") + ["'s"]),
).map("".join)
words = st.lists(word, max_size=20).map(" ".join)


@pytest.fixture(scope="module", params=["cl100k_base", "o200k_base"])
def counter(request):
    return make_counter(encoding=request.param)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(role=st.sampled_from(["user", "assistant", "system", "tool", "developer", "function"]),
       content=st.one_of(st.none(), text), name=st.one_of(st.none(), text.filter(bool)),
       calls=st.lists(st.tuples(text.filter(bool), text), max_size=3))
def test_count_message_is_the_cookbook_rule(counter, role, content, name, calls):
    n = lambda t: len(counter.encoding.encode_ordinary(t))  # noqa: E731
    expected = (3 + n(role) + (n(content) if content else 0) + ((n(name) + 1) if name else 0)
                + sum(n(f) + n(a) + 3 for f, a in calls))
    assert counter.count_message(role, content, calls, name=name) == expected
    assert counter.reply_priming == 3


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(t=words)
def test_chunked_counts_equal_the_whole_text_count(counter, t):
    small = copy.copy(counter)
    small.chunk_chars = 16
    assert small.count_text(t) == len(counter.encoding.encode_ordinary(t))


def test_tool_calls_that_are_not_a_list_or_not_json_are_named():
    counter = make_counter()
    circular = {}
    circular["a"] = circular
    for calls, message in [
        ("read", "tool_calls must be a list of tool calls, got 'read'"),
        ({"function": {"name": "f", "arguments": "{}"}},
         "tool_calls must be a list of tool calls, got {'function': "),
        ([("f", {1, 2})], "tool call 'f' arguments must be a str or JSON-serializable, got {1, 2} "
                          "(Object of type set is not JSON serializable)"),
        ([("f", b"x")], "tool call 'f' arguments must be a str or JSON-serializable, got b'x'"),
        ([("f", circular)], "(Circular reference detected)"),
    ]:
        with pytest.raises(TypeError) as caught:
            counter.count_message("assistant", None, calls)
        assert message in str(caught.value)
    assert counter.count_message("assistant", None, [("f", {"a": 1})]) == counter.count_message(
        "assistant", None, [("f", '{"a":1}')]
    )
