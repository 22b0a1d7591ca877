"""The one conversation selection of the dashboard, as pure rules (no streamlit).

Every page shows the same conversation until the user picks another one (issue 10 item 2):
convmem_dashboard.selection keeps the choice in session state and in the URL (``?conv=``) and
asks this module for the rest:

* :func:`default_conversation_id`: the conversation every page opens on (one rule for all pages).
* :func:`conversation_label` / :func:`shopper_label`: what a picker shows for an option (the
  options themselves stay plain ids, so the URL stays readable).
* :func:`resolve_selection`: which conversation a run shows, from the URL, the session and the
  default.

The default rule (docs/decisions.md, "One conversation selection"): the shopper shown first by
the Listing eviction page (:func:`convmem_dashboard.tables_eviction.default_shopper`: most
conversations, then one whose eviction has a drop that lowers nothing, then most steps on the
eviction curve), and of that shopper's conversations the one with the most tokens (the first of
equals). So the Listing eviction page opens on a shopper whose eviction shows something, and the
Token budget and Flaky store pages on a long conversation of that same shopper.

>>> from convmem import Conversation, Message
>>> a = Conversation("a-1", "ann", (Message("m0", "user", 5, content="Where is\\nmy **order**?"),))
>>> b = Conversation("b-1", "bob", (Message("m0", "user", 9, content="hi"),))
>>> c = Conversation("a-2", "ann", (Message("m0", "user", 7, content="Return a lamp"),))
>>> default_conversation_id([a, b, c])
'a-2'
>>> conversation_label(a)
'ann · “Where is my **order**?” · 1 message · 5 tokens · a-1'
>>> resolve_selection(["a-1", "a-2"], url="a-1", url_seen=None, session="a-2", default="a-2")
'a-1'
>>> resolve_selection(["a-1", "a-2"], url="a-1", url_seen="a-1", session="a-2", default="a-2")
'a-2'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from convmem.conversations import Conversation, group_by_user

from .tables_eviction import NO_SHOPPER, default_shopper
from .wording import plural  # re-exported: pages and views import it from here too

__all__ = [
    "TITLE_CHARS",
    "clean_text",
    "conversation_label",
    "default_conversation_id",
    "most_tokens_id",
    "plural",
    "resolve_selection",
    "shopper_conversations",
    "shopper_label",
]

#: Longest title a picker shows (characters, after whitespace is collapsed).
TITLE_CHARS = 48


def clean_text(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` made safe for one line of a picker: every control, format (bidi overrides,
    zero-width) and line/paragraph separator character becomes a space, whitespace runs become
    one space, and the result is cut to ``limit`` characters with an ellipsis. O(len(text)).

    Picker options are plain text in Streamlit (never Markdown), so nothing else needs escaping.

    >>> clean_text("a\\u202eb\\x00c\\n\\n  d")
    'a b c d'
    >>> clean_text("x" * 60, 10)
    'xxxxxxxxx…'
    """
    out = [
        " " if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch
        for ch in text[: limit * 8]  # bounded: a huge first message costs O(limit)
    ]
    flat = " ".join("".join(out).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _first_user_text(conv: Conversation) -> str | None:
    """The first user message's text that is not empty; "" when the user messages carry no text
    (tool-only or image-only turns, empty content); None when there is no user message."""
    found = None
    for m in conv.messages:
        if m.role == "user":
            if m.content:
                return m.content
            found = ""
    return found


def conversation_label(conv: Conversation) -> str:
    """A picker's line for one conversation: shopper (user id), title (the first user message,
    cleaned by :func:`clean_text`; "(no user text)" when its user messages are all empty, "(no user
    message)" when it has none), message and token counts, and the id (so a search by id finds
    it). O(messages before the first user message with text).
    """
    text = _first_user_text(conv)
    title = clean_text(text or "")
    parts = [clean_text(conv.user_id or NO_SHOPPER, 40)]
    parts.append(f"“{title}”" if title else "(no user message)" if text is None else "(no user text)")
    parts.append(plural(len(conv.messages), "message"))
    parts.append(plural(conv.total_tokens, "token"))
    parts.append(clean_text(conv.id, 60))
    return " · ".join(parts)


def shopper_label(shopper: str, conversations: Sequence[Conversation]) -> str:
    """A picker's line for one shopper: the user id, conversations, messages and tokens.

    >>> from convmem import Conversation, Message
    >>> shopper_label("ann", [Conversation("a", "ann", (Message("m", "user", 1200),))])
    'ann · 1 conversation · 1 message · 1,200 tokens'
    """
    messages = sum(len(c.messages) for c in conversations)
    tokens = sum(c.total_tokens for c in conversations)
    return " · ".join([
        clean_text(shopper, 40), plural(len(conversations), "conversation"),
        plural(messages, "message"), plural(tokens, "token"),
    ])


def shopper_conversations(conversations: Sequence[Conversation], shopper: str) -> list[Conversation]:
    """The conversations of ``shopper`` (a picker key: a user id or NO_SHOPPER), in file order."""
    user = None if shopper == NO_SHOPPER else shopper
    return [c for c in conversations if c.user_id == user]


def default_conversation_id(conversations: Sequence[Conversation]) -> str | None:
    """The conversation every page opens on (see the module docstring for the rule); None when
    there is none. O(messages + listing mentions) over the whole dataset: cache it per dataset.
    """
    if not conversations:
        return None
    if len(conversations) == 1:
        return conversations[0].id
    shopper = default_shopper(group_by_user(conversations))
    own = shopper_conversations(conversations, shopper) if shopper is not None else []
    return most_tokens_id(own or conversations)


def most_tokens_id(conversations: Sequence[Conversation]) -> str | None:
    """The id of the conversation with the most tokens, the first of equals (None if empty):
    what a shopper picker selects for a shopper."""
    if not conversations:
        return None
    return max(enumerate(conversations), key=lambda ic: (ic[1].total_tokens, -ic[0]))[1].id


def resolve_selection(
    options: Sequence[str],
    *,
    url: str | None,
    url_seen: str | None,
    session: str | None,
    default: str | None,
) -> str | None:
    """The conversation id a run shows.

    ``url``: the URL's ``?conv=`` now; ``url_seen``: the value the picker last wrote to (or read
    from) the URL in this session; ``session``: the session's choice for this dataset;
    ``default``: :func:`default_conversation_id`. A URL value the session has not seen yet (a
    shared link, an edited URL, the browser's back button) wins when it names an option; then
    the session's choice; then the default; then the first option. None when there is no option.
    """
    valid = set(options)
    if url is not None and url != url_seen and url in valid:
        return url
    for candidate in (session, default):
        if candidate is not None and candidate in valid:
            return candidate
    return options[0] if options else None

