"""Counted words for the dashboard's sentences (pure, no streamlit; a leaf module every view,
table and figure module can import): "1 message", "1,200 messages", never "message(s)"."""

from __future__ import annotations

__all__ = ["plural"]


def plural(n: int, word: str) -> str:
    """``n`` (with thousands separators) and ``word``, plural unless ``n`` is 1 (an ``s`` added:
    the words counted here are regular). O(len(word)).

    >>> plural(1, "conversation"), plural(1200, "message"), plural(0, "tool result")
    ('1 conversation', '1,200 messages', '0 tool results')
    """
    return f"{n:,} {word}{'' if n == 1 else 's'}"
