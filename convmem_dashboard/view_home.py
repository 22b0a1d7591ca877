"""The view model of Home and Your data (the data in use, the conversation in use, the upload):
everything the two pages derive, as pure functions (no streamlit).

* :data:`QUESTION` and :data:`PAGE_LINKS`: the page's first sentence, and each page's link with
  the one question it answers (convmem_dashboard.questions).
* :func:`dataset_metrics`: the numbers of the data in use.
* :func:`conversation_metrics` / :func:`roles_table`: the selected conversation at a glance
  (the shared selection, convmem_dashboard.selection).
* :func:`upload_outcome`: the words shown after an upload.

>>> from convmem import Conversation, Message
>>> c = Conversation("c1", "ann", (Message("a", "system", 10), Message("b", "user", 5, content="hi 1234567890"),
...                               Message("c", "assistant", 7), Message("d", "user", 3)),
...                  ("1234567890", "1234567890"))
>>> [(m.label, m.value) for m in conversation_metrics(c)]
[('Messages in it', '4'), ('Tokens in it', '25'), ('Tool calls', '0'), ('Listing ids', '1')]
>>> roles_table(c)
[{'role': 'system', 'messages': 1, 'tokens': 10}, {'role': 'user', 'messages': 2, 'tokens': 8}, {'role': 'assistant', 'messages': 1, 'tokens': 7}]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from convmem.conversations import Conversation

from .choices import clean_text
from .data import md_escape
from .questions import QUESTIONS
from .view_listing_eviction import Metric

__all__ = [
    "PAGE_LINKS",
    "QUESTION",
    "PageLink",
    "YOUR_DATA_LINK",
    "UploadOutcome",
    "conversation_caption",
    "conversation_metrics",
    "dataset_metrics",
    "roles_table",
    "upload_outcome",
]

QUESTION = QUESTIONS["home"]


@dataclass(frozen=True, slots=True)
class PageLink:
    """A page's link on Home: its file, label, icon and the question it answers."""

    path: str
    label: str
    icon: str
    question: str


PAGE_LINKS = (
    PageLink("app_pages/flaky_store.py", "Flaky store", ":material/cloud_sync:", QUESTIONS["flaky_store"]),
    PageLink("app_pages/token_budget.py", "Token budget", ":material/data_usage:", QUESTIONS["token_budget"]),
    PageLink("app_pages/listing_eviction.py", "Listing eviction", ":material/shopping_cart:",
             QUESTIONS["listing_eviction"]),
    PageLink("app_pages/agent_session.py", "Agent session", ":material/smart_toy:",
             QUESTIONS["agent_session"]),
)


#: Home's link to the page where the data is chosen and brought (below the data in use).
YOUR_DATA_LINK = PageLink("app_pages/your_data.py", "Your data: open your database, upload a file, pick a conversation",
                          ":material/upload_file:", QUESTIONS["your_data"])


def dataset_metrics(conversations: Sequence[Conversation]) -> tuple[Metric, ...]:
    """Conversations, messages, shoppers (distinct user ids) and tokens of a dataset. O(n).

    >>> from convmem import Conversation
    >>> [m.value for m in dataset_metrics([Conversation("a", "u", ()), Conversation("b", None, ())])]
    ['2', '0', '1', '0']
    """
    return (
        Metric("Conversations", f"{len(conversations):,}"),
        Metric("Messages", f"{sum(len(c.messages) for c in conversations):,}"),
        Metric("Shoppers", f"{len({c.user_id for c in conversations if c.user_id}):,}"),
        Metric("Tokens", f"{sum(c.total_tokens for c in conversations):,}"),
    )


def conversation_metrics(conv: Conversation) -> tuple[Metric, ...]:
    """The selected conversation at a glance: messages, tokens, tool calls, distinct listing ids
    (every 10-digit id). O(text) on first read of the listing ids. (The shopper is in
    :func:`conversation_caption`: a long user id would be cut off in a metric.)

    Tool calls are counted from the messages' call ids (as the command line does): a database
    store keeps those, not the calls' names and arguments (``Conversation.tool_calls`` is empty
    for a conversation read from SQL; a new user saw 0 beside 5 tool results)."""
    return (
        Metric("Messages in it", f"{len(conv.messages):,}"),
        Metric("Tokens in it", f"{conv.total_tokens:,}"),
        Metric("Tool calls", f"{sum(len(m.tool_call_ids) for m in conv.messages):,}"),
        Metric("Listing ids", f"{len(conv.distinct_listing_ids):,}",
               help="Distinct 10-digit ids mentioned (convmem's default definition)."),
    )


def conversation_caption(conv: Conversation) -> str:
    """One Markdown line naming the conversation's shopper and id (user text, escaped). O(1).

    A conversation without a shopper id (a coding agent's session, a file without user ids) is
    named by its id, not as "Shopper (no shopper id)", which read as a shopper of that name.

    >>> from convmem import Conversation
    >>> conversation_caption(Conversation("c-1", "a_b*", ()))
    'Shopper **a\\\\_b\\\\*** · conversation c\\\\-1'
    >>> conversation_caption(Conversation("S1", None, ()))
    'Conversation **S1** (no shopper id)'
    """
    conv_id = md_escape(clean_text(conv.id, 80))
    if not conv.user_id:
        return f"Conversation **{conv_id}** (no shopper id)"
    return f"Shopper **{md_escape(clean_text(conv.user_id, 60))}** · conversation {conv_id}"


def roles_table(conv: Conversation) -> list[dict[str, object]]:
    """Messages and tokens per role, in order of first appearance. O(messages)."""
    rows: dict[str, dict[str, object]] = {}
    for m in conv.messages:
        row = rows.setdefault(m.role, {"role": m.role, "messages": 0, "tokens": 0})
        row["messages"] += 1  # type: ignore[operator]
        row["tokens"] += m.tokens  # type: ignore[operator]
    return list(rows.values())


@dataclass(frozen=True, slots=True)
class UploadOutcome:
    """What Your data says after an upload: a success line, and when conversations were skipped a
    warning and the expander's title (the reasons go in st.code, verbatim)."""

    success: str
    warning: str | None
    skipped_title: str | None


def upload_outcome(loaded: int, total: int, skipped: int) -> UploadOutcome:
    """The words after an upload of ``total`` conversations, ``loaded`` loaded, ``skipped`` not.

    >>> upload_outcome(1, 1, 0).success
    'Using the uploaded file: 1 conversation.'
    >>> upload_outcome(3, 5, 2).warning, upload_outcome(3, 5, 2).skipped_title
    ('Loaded 3 of 5 conversations; 2 skipped.', 'Why 2 conversations were skipped')
    """
    success = f"Using the uploaded file: {loaded:,} conversation{'s' if loaded != 1 else ''}."
    if not skipped:
        return UploadOutcome(success, None, None)
    return UploadOutcome(
        success,
        f"Loaded {loaded:,} of {total:,} conversations; {skipped:,} skipped.",
        f"Why {skipped:,} conversation{'s were' if skipped != 1 else ' was'} skipped",
    )
