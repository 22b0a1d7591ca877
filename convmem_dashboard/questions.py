"""The one question each page answers (issue 10 item 8): the first sentence under its title, and
the caption of its link on Home, from one table so the two never disagree.

>>> sorted(QUESTIONS)
['agent_session', 'flaky_store', 'home', 'listing_eviction', 'token_budget', 'your_data']
>>> all(q.endswith("?") for q in QUESTIONS.values())
True
"""

from __future__ import annotations

__all__ = ["QUESTIONS"]

QUESTIONS = {
    "home": "What does convmem keep of an agent's conversations, and which of them is in use?",
    "your_data": (
        "Which conversations do the pages read (the bundled sample, your agent's database, or a "
        "file you upload), and which one of them do they show?"
    ),
    "flaky_store": (
        "Does a conversation load whole, once and in order, from a store that fails on purpose "
        "or receives new messages while it pages, and when it cannot, what was loaded and where "
        "does a resume start?"
    ),
    "token_budget": (
        "Under a token limit, which messages does compaction drop from this conversation, when, "
        "and why?"
    ),
    "listing_eviction": (
        "Which of a shopper's past conversations must an agent forget so that they mention at "
        "most max_listings distinct listings, and why does each one go?"
    ),
    "agent_session": (
        "How many tokens did a coding agent's calls really use, how close is convmem's count, and "
        "what did they cost?"
    ),
}
