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

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .message import ROLES, Message

__all__ = ["ExtractiveSummarizer", "LLMSummarizer"]

_HEADER = "Earlier:"


def _default_count() -> Callable[[str], int]:
    from .tokens import default_counter

    return default_counter().count_text


def _clip(text: str, max_chars: int) -> str:
    """``text`` with whitespace collapsed, cut to ``max_chars`` (``…`` marks a cut). Reads only a
    prefix of a long text: collapsing a prefix gives the same first characters."""
    head = " ".join(text[: 4 * max_chars].split())
    if len(head) > max_chars:
        return head[: max_chars - 1].rstrip() + "…"
    text = head if len(text) <= 4 * max_chars else " ".join(text.split())
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def _line(m: Message, max_chars: int) -> str:
    if m.content:
        body = _clip(m.content, max_chars)
    elif m.tool_call_ids:
        body = f"called tools {', '.join(m.tool_call_ids)}"
    else:
        body = f"({m.tokens} tokens, no text)"
    # one line, no surrounding whitespace: the text reads back line by line exactly
    return " ".join(f"{m.role}: {body}".split())


#: Token counts of summary lines under convmem's own counters, shared by every
#: ExtractiveSummarizer of the process (a replay per setting re-summarizes the same messages):
#: ``{(counter class, encoding): {text: tokens}}`` (a line, or a line with its final ``"\\n"``),
#: each emptied when it reaches LINE_MEMO_SIZE texts (bounded memory: at most that many texts of
#: at most ``line_chars + 1`` characters, about 50 MB). Plain str -> int entries: no container
#: object per line for Python's cyclic GC to walk at every full collection.
LINE_MEMO_SIZE = 1 << 18
_LINE_MEMOS: dict[tuple[str, str], dict[str, int]] = {}


def _own_counter_memo(count: Callable[[str], int]) -> dict[str, int] | None:
    """The line memo when ``count`` is ``count_text`` of one of convmem's own counters (tiktoken
    or the regex approximation), else None.

    Those counters' pre-tokenizers (cl100k_base, o200k_base) never make a piece that spans a
    ``"\n"`` followed by a non-space character, and they count each piece alone, so for lines
    without surrounding whitespace ``count(a + "\n" + b) == count(a + "\n") + count(b)``
    exactly (tests/test_replay_and_summarizers.py checks it against whole-text counts)."""
    from .tokens import ApproxCounter, TiktokenCounter

    owner = getattr(count, "__self__", None)
    if not isinstance(owner, (TiktokenCounter, ApproxCounter)) or getattr(count, "__name__", "") != "count_text":
        return None
    return _LINE_MEMOS.setdefault((type(owner).__name__, owner.name), {})


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
        additive: whether counts of lines joined by ``"\\n"`` add up exactly (``count(a + "\\n" +
            b) == count(a + "\\n") + count(b)``), so the summary's tokens are summed from its lines
            instead of counting the whole text. None (default): True for convmem's own counters
            (``count_tokens`` None, or ``count_text`` of a TiktokenCounter / ApproxCounter), False
            for any other callable.

    Lines from newer dropped messages win when space runs out; the previous summary's lines follow
    (older still), then older lines are cut. The first line that does not fit is clipped to the
    room left, so a long newest message never leaves an empty summary. Each line is one dropped
    message's role and text with its whitespace collapsed (no line breaks inside a line).

    Cost per call, amortized O(1) per dropped message plus one ``"\\n".join`` of the summary's
    lines: the summarizer keeps the lines of the summary it made last as a window (a deque) with
    their token counts and running sums. A call appends one line per dropped message (one token
    count each, two when ``additive``: the line alone and followed by ``"\\n"``), then drops lines
    from the oldest end while the running estimate (header + each line + 1 per separator) is over
    ``max_tokens``: every line enters and leaves the window once. ``tokens`` is exactly
    ``count_tokens(content)``: summed from the lines when ``additive`` (plus one count of the
    header with the oldest line), else one count of the whole text (O(max_tokens) per call).
    When ``previous`` is not the summary this summarizer returned last (History rejected it, or
    another summarizer made it), its lines are read back from its text and counted again.
    Memory: O(max_tokens) (the lines of one summary).

    Raises:
        ValueError: max_tokens negative, line_chars < 8, role unknown.
    """

    max_tokens: int
    count_tokens: Callable[[str], int] | None = None
    line_chars: int = 120
    role: str = "system"
    id_prefix: str = "summary"
    additive: bool | None = None
    calls: int = field(default=0, init=False)
    # The window: [line, tokens, tokens of line + "\n" (additive only; None until needed)], oldest
    # first, of the summary returned last (anything else, e.g. {}, means "nothing kept").
    _line_counts: object = field(default_factory=dict, init=False, repr=False, compare=False)
    _texts: deque = field(default_factory=deque, init=False, repr=False, compare=False)
    _counted_with: object = field(default=None, init=False, repr=False, compare=False)
    _last: Message | None = field(default=None, init=False, repr=False, compare=False)
    _head: int | None = field(default=None, init=False, repr=False, compare=False)
    _est: int = field(default=0, init=False, repr=False, compare=False)
    _nl: int = field(default=0, init=False, repr=False, compare=False)
    _memo: dict | None = field(default=None, init=False, repr=False, compare=False)
    _own: bool = field(default=False, init=False, repr=False, compare=False)  # additive, resolved

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 0:
            raise ValueError(f"ExtractiveSummarizer.max_tokens must be an int >= 0, got {self.max_tokens!r}")
        if not isinstance(self.line_chars, int) or self.line_chars < 8:
            raise ValueError(f"ExtractiveSummarizer.line_chars must be an int >= 8, got {self.line_chars!r}")
        if self.role not in ROLES:
            raise ValueError(f"ExtractiveSummarizer.role must be one of {ROLES}, got {self.role!r}")
        if self.additive is not None and not isinstance(self.additive, bool):
            raise TypeError(f"ExtractiveSummarizer.additive must be a bool or None, got {self.additive!r}")

    # -- the window ---------------------------------------------------------------------------
    def _push(self, window: deque, line: str, tokens: int, count, additive: bool) -> None:
        if window and additive:
            newest = window[-1]
            if newest[2] is None:
                newest[2] = self._with_newline(newest[0], newest[1], count)
            self._nl += newest[2]
        window.append([line, tokens, None])
        self._texts.append(line)
        self._est += tokens + 1

    def _push_oldest(self, window: deque, line: str, tokens: int, count, additive: bool) -> None:
        entry = [line, tokens, None]
        if window and additive:
            entry[2] = self._with_newline(line, tokens, count)
            self._nl += entry[2]
        window.appendleft(entry)
        self._texts.appendleft(line)
        self._est += tokens + 1

    def _pop_oldest(self, window: deque) -> list:
        entry = window.popleft()
        self._texts.popleft()
        self._est -= entry[1] + 1
        if window and entry[2] is not None:
            self._nl -= entry[2]
        return entry

    def _with_newline(self, line: str, tokens: int, count) -> int:
        """count(line + "\n"): a line ending in a letter or digit gains the "\n" piece alone
        (convmem's counters); after punctuation the "\n" joins the last piece."""
        if self._memo is None:
            return count(line + "\n")
        if line[-1].isalnum():
            return tokens + self._count("\n", count)
        return self._count(line + "\n", count)

    def _count(self, text: str, count) -> int:
        """count(text), through the shared memo (``{text: tokens}``) when the counter is
        convmem's own."""
        memo = self._memo
        if memo is None:
            return count(text)
        tokens = memo.get(text)
        if tokens is None:
            tokens = memo[text] = count(text)
        return tokens

    def _exact(self, window: deque, count) -> int:
        """count(text) from the lines' counts (additive counters only)."""
        if not window:
            return self._head  # type: ignore[return-value]
        if len(window) == 1:
            return count(_HEADER + " " + window[0][0])
        oldest = window[0]
        line = oldest[0]
        k = 0
        while k < len(line) and line[k].isalpha():
            k += 1
        if self._memo is not None and 0 < k < len(line) and line[k] == ":":
            # The header's pieces end at its ":", and only the oldest line's leading word changes
            # piece with the space before it: swap that word's count for " word"'s.
            word = line[:k]
            head = self._head + oldest[2] - self._count(word, count) + self._count(" " + word, count)
        else:
            head = count(_HEADER + " " + line + "\n")
        return head + self._nl - oldest[2] + window[-1][1]

    def _reset(self, previous: Message | None, count, additive: bool) -> deque:
        """A window holding ``previous``'s lines (read back from its text), counted afresh."""
        window: deque = deque()
        self._line_counts = window
        self._texts = deque()
        self._est = self._nl = 0
        if previous is not None and previous.content:
            body = previous.content
            if body.startswith(_HEADER):
                body = body[len(_HEADER) :]
            for ln in body.split("\n"):
                ln = ln.strip()
                if ln:
                    self._push(window, ln, count(ln), count, additive)
        return window

    def __call__(self, previous: Message | None, dropped: Sequence[Message]) -> Message:
        if not dropped:
            raise ValueError("ExtractiveSummarizer called with no dropped messages")
        count = self.count_tokens or _default_count()
        self.calls += 1
        if self._counted_with != count:  # bound methods compare equal, are not identical
            self._counted_with = count
            self._head = None
            self._line_counts = {}
            memo = _own_counter_memo(count)
            if not (self.additive if self.additive is not None else memo is not None):
                memo = None
            self._own = memo is not None or bool(self.additive)
            self._memo = memo
        memo = self._memo
        additive = self._own
        window = self._line_counts
        if previous is None or previous is not self._last or not isinstance(window, deque):
            window = self._reset(previous, count, additive)
        if self._head is None:
            self._head = count(_HEADER)
        if memo is not None and len(memo) >= LINE_MEMO_SIZE:
            memo.clear()
        for m in dropped:
            ln = _line(m, self.line_chars)
            if memo is None:
                tokens = count(ln)
            else:
                tokens = self._count(ln, count)
            self._push(window, ln, tokens, count, additive)
        # Newest lines win: drop from the oldest end while the estimate is over; the newest of
        # the lines dropped (the first that did not fit) is clipped to the room left.
        max_tokens = self.max_tokens
        cut = None
        while window and self._head + self._est > max_tokens:
            cut = self._pop_oldest(window)
        if cut is not None:
            ln, cost = cut[0], cut[1] + 1
            room = max_tokens - self._head - self._est
            clipped = False
            while ln and cost > room and len(ln) > 8:
                part = ln[: max(8, int(len(ln) * room / cost) - 2)]
                if " " in part[8:]:
                    part = part[: part.rfind(" ")]  # end on a word boundary
                ln = part.rstrip() + "…"
                cost = count(ln) + 1
                clipped = True
                if len(ln) <= 9:
                    break
            if clipped and cost <= room:
                self._push_oldest(window, ln, cost - 1, count, additive)
        # The exact count of the text; the tokenizer may merge across lines (drop the oldest).
        while True:
            text = _HEADER + " " + "\n".join(self._texts) if window else _HEADER
            tokens = self._exact(window, count) if additive else count(text)
            if tokens <= max_tokens or not window:
                break
            self._pop_oldest(window)
        self._last = out = Message(f"{self.id_prefix}-{self.calls}", self.role, tokens, content=text)
        return out


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
