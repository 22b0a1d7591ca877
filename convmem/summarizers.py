"""Summarizers for :class:`~convmem.history.History` (the ``summarizer=`` policy).

A summarizer is any callable ``f(previous_summary, dropped) -> Message``: ``previous_summary`` is
the summary in place (a Message, or None) and ``dropped`` the messages one compaction dropped,
oldest first, never empty. History places the returned Message after the pinned messages older than
the run, and rejects it (keeping the previous one) when its tokens exceed ``summary_budget``.

Two are shipped:

* :class:`ExtractiveSummarizer`: deterministic, no model; keeps one clipped line per dropped message
  (newest first) plus the previous summary's lines, until ``max_tokens``. For demos and tests.
* :class:`LLMSummarizer`: wraps any ``complete(prompt) -> str`` callable (an LLM call) and counts
  the reply's tokens, so the budget is enforced on the real output.

>>> from convmem import History, Message
>>> words = lambda text: len(text.split())
>>> h = History(40, summarizer=ExtractiveSummarizer(max_tokens=20, count_tokens=words),
...             summary_budget=20)
>>> _ = h.add(Message("u1", "user", 15, content="I want to return the blue kettle"))
>>> _ = h.add(Message("a1", "assistant", 15, content="Sure, which order is it?"))
>>> h.add(Message("u2", "user", 15, content="Order W123"))
['u1', 'a1']
>>> print(h.summary.content)
Earlier: user: I want to return the blue kettle
assistant: Sure, which order is it?
>>> h.messages(), h.total()
(['summary-1', 'u2'], 30)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .message import ROLES, Message

__all__ = ["ExtractiveSummarizer", "LLMSummarizer"]

_HEADER = "Earlier:"


def _default_count() -> Callable[[str], int]:
    from .tokens import default_counter

    return default_counter().count_text


def _clip(text: str, max_chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def _line(m: Message, max_chars: int) -> str:
    if m.content:
        body = _clip(m.content, max_chars)
    elif m.tool_call_ids:
        body = f"called tools {', '.join(m.tool_call_ids)}"
    else:
        body = f"({m.tokens} tokens, no text)"
    return f"{m.role}: {body}"


@dataclass(slots=True)
class ExtractiveSummarizer:
    """A deterministic extractive summarizer: clipped lines of what was dropped, newest first kept.

    Args:
        max_tokens: the most tokens the summary may have; give History's ``summary_budget`` so the
            summary is never rejected (a smaller value leaves headroom).
        count_tokens: ``text -> tokens``; default: convmem's default counter (cl100k_base when its
            files are available offline, else the documented approximation).
        line_chars: each dropped message contributes at most this many characters.
        role: the summary message's role (default ``"system"``).
        id_prefix: summary ids are ``f"{id_prefix}-{n}"`` for the n-th summary made (1-based).

    Lines from newer dropped messages win when space runs out; the previous summary's lines follow
    (older still), then older lines are cut. The first line that does not fit is clipped to the
    room left, so a long newest message never leaves an empty summary.

    Cost per call: one token count per *new* line (the dropped messages' lines, and a clipped
    line) plus one count of the resulting text (``tokens`` is exactly ``count_tokens(content)``).
    The previous summary's lines are not counted again: the counts of the lines of the summary it
    made last are kept (at most the lines of one summary, so memory stays O(max_tokens)). Before
    this cache a compaction re-counted every line of the previous summary.

    Raises:
        ValueError: max_tokens negative, line_chars < 8, role unknown.
    """

    max_tokens: int
    count_tokens: Callable[[str], int] | None = None
    line_chars: int = 120
    role: str = "system"
    id_prefix: str = "summary"
    calls: int = field(default=0, init=False)
    # line -> tokens for the lines of the last summary made, and the counter they were counted with
    _line_counts: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    _counted_with: object = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 0:
            raise ValueError(f"ExtractiveSummarizer.max_tokens must be an int >= 0, got {self.max_tokens!r}")
        if not isinstance(self.line_chars, int) or self.line_chars < 8:
            raise ValueError(f"ExtractiveSummarizer.line_chars must be an int >= 8, got {self.line_chars!r}")
        if self.role not in ROLES:
            raise ValueError(f"ExtractiveSummarizer.role must be one of {ROLES}, got {self.role!r}")

    def __call__(self, previous: Message | None, dropped: Sequence[Message]) -> Message:
        if not dropped:
            raise ValueError("ExtractiveSummarizer called with no dropped messages")
        count = self.count_tokens or _default_count()
        self.calls += 1
        if self._counted_with != count:  # bound methods compare equal, are not identical
            self._line_counts = {}
            self._counted_with = count
        known = self._line_counts
        counted: dict[str, int] = {}

        def count_line(ln: str) -> int:
            tokens = known.get(ln)
            if tokens is None:
                tokens = count(ln)
            counted[ln] = tokens
            return tokens

        old_lines: list[str] = []
        if previous is not None and previous.content:
            body = previous.content
            if body.startswith(_HEADER):
                body = body[len(_HEADER) :]
            old_lines = [ln.strip() for ln in body.split("\n") if ln.strip()]
        new_lines = [_line(m, self.line_chars) for m in dropped]
        # Newest first: the dropped messages from newest to oldest, then the previous summary's.
        # Each line is counted once; the joined text is counted once more and trimmed if the
        # tokenizer merges across lines differently (so max_tokens holds exactly).
        candidates = list(reversed(new_lines)) + list(reversed(old_lines))
        chosen: list[str] = []
        used = count_line(_HEADER)
        for ln in candidates:
            cost = count_line(ln) + 1
            if used + cost > self.max_tokens:
                # Clip the line that does not fit to the room left (never return an empty
                # summary because the newest line alone is long), then stop: lines stay a
                # contiguous newest run.
                room = self.max_tokens - used
                while ln and cost > room and len(ln) > 8:
                    cut = ln[: max(8, int(len(ln) * room / cost) - 2)]
                    if " " in cut[8:]:
                        cut = cut[: cut.rfind(" ")]  # end on a word boundary
                    ln = cut.rstrip() + "…"
                    cost = count_line(ln) + 1
                    if len(ln) <= 9:
                        break
                if cost <= room:
                    chosen.append(ln)
                break
            chosen.append(ln)
            used += cost
        while True:
            text = _HEADER + " " + "\n".join(reversed(chosen)) if chosen else _HEADER
            tokens = count(text)
            if tokens <= self.max_tokens or not chosen:
                break
            chosen.pop()  # the oldest line goes first
        # Keep the counts of this summary's lines only: the next call reads them back.
        self._line_counts = {ln: counted[ln] for ln in (_HEADER, *chosen) if ln in counted}
        return Message(f"{self.id_prefix}-{self.calls}", self.role, tokens, content=text)


@dataclass(slots=True)
class LLMSummarizer:
    """Plug any text completion into History: ``complete(prompt) -> summary text``.

    Args:
        complete: the model call, e.g. ``lambda p: client.responses.create(model=..., input=p)
            .output_text``. If it raises (or returns something that is not a str), History records
            the compaction first, with a rejected summary outcome naming the error (its drops
            stand), then raises :class:`~convmem.SummarizerError` carrying that record as
            ``.compaction`` and the original error as ``__cause__`` (docs/decisions.md, rule 7).
            A blank reply (empty or whitespace only) is rejected by History like an oversize one:
            the earlier summary stays and the record says why.
        max_tokens: told to the model in the prompt; History still rejects a reply over its budget.
        count_tokens: ``text -> tokens`` for the reply (default: convmem's default counter).
        role, id_prefix: as in :class:`ExtractiveSummarizer`.

    Cost per call: one ``complete`` call on a prompt of O(previous summary + dropped messages)
    characters, and one token count of the reply.

    >>> s = LLMSummarizer(lambda prompt: "User wants a refund.", max_tokens=50,
    ...                   count_tokens=lambda t: len(t.split()))
    >>> s(None, [Message("u1", "user", 9, content="refund please")]).content
    'User wants a refund.'
    """

    complete: Callable[[str], str]
    max_tokens: int
    count_tokens: Callable[[str], int] | None = None
    role: str = "system"
    id_prefix: str = "summary"
    calls: int = field(default=0, init=False)

    def prompt(self, previous: Message | None, dropped: Sequence[Message]) -> str:
        """The prompt sent to ``complete``: the previous summary and the dropped messages."""
        parts = [
            f"Summarize the earlier part of a conversation in at most {self.max_tokens} tokens. "
            "Keep facts the assistant will need: names, ids, amounts, decisions, open requests."
        ]
        if previous is not None and previous.content:
            parts.append("Summary so far:\n" + previous.content)
        parts.append("Messages to fold in, oldest first:")
        parts.extend(f"{m.role}: {m.content or ''}" for m in dropped)
        return "\n\n".join(parts)

    def __call__(self, previous: Message | None, dropped: Sequence[Message]) -> Message:
        if not dropped:
            raise ValueError("LLMSummarizer called with no dropped messages")
        text = self.complete(self.prompt(previous, dropped))
        if not isinstance(text, str):
            raise TypeError(f"LLMSummarizer.complete must return a str, got {text!r}")
        count = self.count_tokens or _default_count()
        self.calls += 1
        return Message(f"{self.id_prefix}-{self.calls}", self.role, count(text), content=text)
