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

import unicodedata
from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress, repeat
from operator import is_

from .limits import MAX_TOKENS
from .message import ROLES, Message

__all__ = ["ExtractiveSummarizer", "LLMSummarizer"]

_HEADER = "Earlier:"


_default_counter: Callable | None = None


def _default_count() -> Callable[[str], int]:
    global _default_counter
    if _default_counter is None:
        from .tokens import default_counter

        _default_counter = default_counter
    return _default_counter().count_text


def _clip(text: str, max_chars: int) -> str:
    """``text`` with whitespace collapsed, cut to ``max_chars`` (``…`` marks a cut). Reads only a
    prefix of a long text: collapsing a prefix gives the same first characters."""
    head = " ".join(text[: 4 * max_chars].split())
    if len(head) > max_chars:
        return head[: max_chars - 1].rstrip() + "…"
    text = head if len(text) <= 4 * max_chars else " ".join(text.split())
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def _line(m: Message, max_chars: int) -> str:
    text = m.content
    if text:
        if len(text) <= max_chars and "  " not in text and text.isprintable() and text[0] != " " and text[-1] != " ":
            # Already one line with its whitespace collapsed (the only printable whitespace is
            # the ASCII space, here single and inside): what _clip would return, about 3x cheaper.
            return f"{m.role}: {text}"
        body = _clip(text, max_chars)
        # _clip collapses whitespace and trims both ends, and a role has none: the line is
        # already what the collapse below would make of it.
        return f"{m.role}: {body}" if body else f"{m.role}:"
    if m.tool_call_ids:
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
#: Messages whose lines a preloaded replay appends to the log ahead of their calls, per batch, at
#: most (:meth:`ExtractiveSummarizer._preload`). A batch starts at PRELOAD_FIRST messages and
#: doubles each time the lines appended ahead were all used, back to PRELOAD_FIRST when some were
#: thrown away (a call that did not start where the last one ended), so the lines made and thrown
#: away stay O(lines used + PRELOAD_FIRST per such call).
PRELOAD_BLOCK = 1 << 12
PRELOAD_FIRST = 16
#: Entries an ExtractiveSummarizer keeps in its table of what "\n" adds to a line by its last two
#: characters (emptied when full).
_NL_DELTAS_SIZE = 1 << 16
#: Clipped lines of deferred summarizers (a replay clips the line that did not fit on most
#: calls): ``{id(line memo): {(line, room): (clipped line, tokens, tokens with "\n") or None}}``
#: under that memo's counter, each emptied at LINE_MEMO_SIZE entries.
_CLIP_MEMOS: dict[int, dict[tuple[str, int], tuple[str, int, int] | None]] = {}


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


#: Lines of dropped messages for replays (:meth:`ExtractiveSummarizer._defer`), shared by every
#: deferred summarizer of the process (a dashboard replays the same messages at many limits):
#: ``{line_chars: {id(message): line}}``. ``_LINE_KEPT`` holds every cached message, so no other
#: object can take its id while its entry exists. Both are emptied when LINE_CACHE_SIZE messages
#: are cached (bounded memory: at most that many messages kept alive and as many lines of at most
#: ``line_chars`` characters, about 40 MB of lines at the default 120). Plain int -> str entries:
#: nothing for the cyclic GC to walk. Live History use (not a replay) never fills it.
LINE_CACHE_SIZE = 1 << 18
_LINE_CACHE: dict[tuple, dict[int, object]] = {}
_LINE_KEPT: list[Message] = []
#: Entries of the line cache by ``(role, content)`` for messages of at most ``line_chars``
#: characters of content, whose line those two decide (:func:`_line`): a message made anew on
#: every replay (a cleared tool result's placeholder, the same text each time) finds its entry
#: here without taking a place in ``_LINE_KEPT``. ``{(line_chars, id(line memo)): {(role,
#: content): (line, tokens, tokens of line + "\n")}}``, each emptied at LINE_MEMO_SIZE entries.
_TEXT_LINES: dict[tuple, dict[tuple[str, str], tuple]] = {}


def _cached_lines(key: tuple) -> dict:
    """The line cache for ``key``: ``(line_chars, None)`` -> ``{id(message): line}``;
    ``(line_chars, id(line memo))`` -> ``{id(message): (line, tokens, tokens of line + "\n")}``
    under that memo's counter. All are emptied when LINE_CACHE_SIZE messages are kept (checked
    once per call: one call's dropped messages may go over)."""
    if len(_LINE_KEPT) >= LINE_CACHE_SIZE:
        _LINE_CACHE.clear()
        _LINE_KEPT.clear()
    return _LINE_CACHE.setdefault(key, {})


def _last_piece(line: str) -> str:
    r"""The last piece cl100k_base's pre-tokenizer makes of a line ending in punctuation: its
    trailing run of characters that are neither whitespace, letters nor numbers, with the one
    space before it (the pattern `` ?[^\s\p{L}\p{N}]++[\r\n]*``, which also takes a following
    ``"\n"``). "" when the line ends otherwise."""
    i = len(line)
    while i > 0:
        ch = line[i - 1]
        if ch.isspace() or ch.isalpha() or unicodedata.category(ch)[0] == "N":
            break
        i -= 1
    if i > 0 and line[i - 1] == " ":
        i -= 1
    return line[i:]


_new_message = object.__new__
_SET_MESSAGE_FIELDS = tuple(getattr(Message, name).__set__ for name in
                            ("id", "role", "tokens", "content", "tool_call_ids", "tool_call_id"))


def _summary_message(sid: str, role: str, tokens: int) -> Message:
    """``Message(sid, role, tokens)`` without its checks, for a deferred summary whose id differs
    from an earlier checked one only in its number (same prefix and role, tokens in range):
    about 3x cheaper, one per compaction of a replay. Equal to the checked Message."""
    m = _new_message(Message)
    set_id, set_role, set_tokens, set_content, set_calls, set_call = _SET_MESSAGE_FIELDS
    set_id(m, sid)
    set_role(m, role)
    set_tokens(m, tokens)
    set_content(m, None)
    set_calls(m, ())
    set_call(m, None)
    return m


def _span_text(spans: tuple[list, list, array, array], call: int) -> str:
    """The content of the summary made by deferred call number ``call`` (0-based) of an
    ExtractiveSummarizer, from its ``_spans()``. O(the summary's lines)."""
    log, tops, los, his = spans
    lines = log[los[call] : his[call]]
    top = tops[call]
    if top is not None:
        lines.insert(0, top)
    return _HEADER + " " + "\n".join(lines) if lines else _HEADER


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
    lines: the summarizer keeps every line it made in a log (a list, with each line's token count)
    and the summary it made last as a window over that log (its oldest line may be a clipped one
    held apart) with running sums. A call appends one line per dropped message (one token count
    each, two when ``additive``: the line alone and followed by ``"\\n"``), then drops lines from
    the oldest end while the running estimate (header + each line + 1 per separator) is over
    ``max_tokens``: every line enters and leaves the window once. ``tokens`` is exactly
    ``count_tokens(content)``: summed from the lines when ``additive`` (plus one count of the
    header with the oldest line), else one count of the whole text (O(max_tokens) per call).
    When ``previous`` is not the summary this summarizer returned last (History rejected it, or
    another summarizer made it), its lines are read back from its text and counted again.
    Memory: O(max_tokens) (the log is trimmed to the window as it grows).

    In a replay (:func:`convmem.replay`, which owns its summarizer) the summarizer runs deferred
    (``_defer``): the log is kept whole (O(dropped messages), as the replay's records are anyway),
    each summary is recorded as a span of it, and the Message returned to History has
    ``content=None`` (History needs its id, role and tokens only). The replay's
    :class:`~convmem.replay.SummaryLog` builds each summary's text from its span on access, equal
    to what this summarizer makes eagerly. Live History use keeps the eager behaviour above.

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
    # The log: every line made (or read back), its tokens and the tokens of line + "\n" (additive
    # only; None until needed). The window is ``_top`` (a clipped oldest line [line, tokens,
    # tokens + "\n"], or None; a tuple when made by the deferred close, its "\n" count known)
    # then the log from ``_lo`` to its end; ``_valid`` False means "nothing kept" (read the
    # previous summary back).
    _log: list = field(default_factory=list, init=False, repr=False, compare=False)
    _tok: list = field(default_factory=list, init=False, repr=False, compare=False)
    _nlt: list = field(default_factory=list, init=False, repr=False, compare=False)
    _lo: int = field(default=0, init=False, repr=False, compare=False)
    _top: list | tuple | None = field(default=None, init=False, repr=False, compare=False)
    _valid: bool = field(default=False, init=False, repr=False, compare=False)
    _counted_with: object = field(default=None, init=False, repr=False, compare=False)
    _last: Message | None = field(default=None, init=False, repr=False, compare=False)
    _head: int | None = field(default=None, init=False, repr=False, compare=False)
    _est: int = field(default=0, init=False, repr=False, compare=False)
    _nl: int = field(default=0, init=False, repr=False, compare=False)
    _memo: dict | None = field(default=None, init=False, repr=False, compare=False)
    _own: bool = field(default=False, init=False, repr=False, compare=False)  # additive, resolved
    _tails: bool = field(default=False, init=False, repr=False, compare=False)  # cl100k_base: see _with_newline
    # Tokens "\n" adds to a line, by its last two characters where they decide it (_newline_delta).
    _nl_deltas: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    # Deferred with convmem's own counters: what the space before a line's leading word (its role)
    # adds to that word's tokens, by word (_close); and the clipped lines memo (_CLIP_MEMOS).
    _swaps: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _clips: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    # Deferred (replay) mode: per call, the span of its summary: clipped oldest line (or None),
    # first and end log positions; and the summary ids made -> call index (0-based).
    _deferred: bool = field(default=False, init=False, repr=False, compare=False)
    _span_top: list = field(default_factory=list, init=False, repr=False, compare=False)
    _span_lo: array = field(default_factory=lambda: array("q"), init=False, repr=False, compare=False)
    _span_hi: array = field(default_factory=lambda: array("q"), init=False, repr=False, compare=False)
    _made: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    # Deferred with convmem's own counters (_call_spans): running sums over the log, _pe[i] of
    # tokens + 1 and _pn[i] of tokens with "\n" over log[:i].
    _pe: list = field(default_factory=lambda: [0], init=False, repr=False, compare=False)
    _pn: list = field(default_factory=lambda: [0], init=False, repr=False, compare=False)
    # Preloaded replay (_preload / _call_range): the messages whose lines are appended ahead of
    # their calls, the log position of message 0 (message k's line is log[k + _pre_base]), the
    # first message not yet summarized, the first not yet in the log, and the next batch's size.
    _pre: Sequence | None = field(default=None, init=False, repr=False, compare=False)
    _pre_base: int = field(default=0, init=False, repr=False, compare=False)
    _pre_end: int = field(default=0, init=False, repr=False, compare=False)
    _pre_stop: int = field(default=0, init=False, repr=False, compare=False)
    _pre_block: int = field(default=PRELOAD_FIRST, init=False, repr=False, compare=False)
    # The last copy of a summary's lines to the end of the log (_call_spans): (its call index,
    # first and end log positions of the copy, the call that made it), or None.
    _copied: tuple | None = field(default=None, init=False, repr=False, compare=False)
    # (id_prefix, role) of the last summary Message built with its checks (_close).
    _checked: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 0:
            raise ValueError(f"ExtractiveSummarizer.max_tokens must be an int >= 0, got {self.max_tokens!r}")
        if not isinstance(self.line_chars, int) or self.line_chars < 8:
            raise ValueError(f"ExtractiveSummarizer.line_chars must be an int >= 8, got {self.line_chars!r}")
        if self.role not in ROLES:
            raise ValueError(f"ExtractiveSummarizer.role must be one of {ROLES}, got {self.role!r}")
        if self.additive is not None and not isinstance(self.additive, bool):
            raise TypeError(f"ExtractiveSummarizer.additive must be a bool or None, got {self.additive!r}")

    # -- deferred (replay) mode ---------------------------------------------------------------
    def _defer(self) -> None:
        """Switch to deferred mode (before the first call; see the class docstring): summaries
        come back with ``content=None`` and are recorded as spans of the kept log."""
        if self.calls:
            raise RuntimeError("ExtractiveSummarizer._defer must be called before the first summary")
        self._deferred = True

    def _spans(self) -> tuple[list, list, array, array]:
        """``(log, clipped oldest lines, span starts, span ends)`` for :func:`_span_text` (lines
        preloaded but not summarized yet are dropped from the log first)."""
        self._unload()
        return self._log, self._span_top, self._span_lo, self._span_hi

    # -- the window ---------------------------------------------------------------------------
    def _push(self, line: str, tokens: int, count, additive: bool) -> None:
        log = self._log
        if additive:
            lo = self._lo
            if len(log) > lo:
                i = len(log) - 1
                nl = self._nlt[i]
                if nl is None:
                    nl = self._nlt[i] = self._with_newline(log[i], self._tok[i], count)
                self._nl += nl
            elif self._top is not None:
                top = self._top
                if top[2] is None:
                    top[2] = self._with_newline(top[0], top[1], count)
                self._nl += top[2]
        log.append(line)
        self._tok.append(tokens)
        self._nlt.append(None)
        self._est += tokens + 1

    def _push_oldest(self, line: str, tokens: int, count, additive: bool) -> None:
        """Hold ``line`` (a clipped line) as the window's oldest; only when none is held."""
        entry = [line, tokens, None]
        if additive and len(self._log) > self._lo:
            entry[2] = self._with_newline(line, tokens, count)
            self._nl += entry[2]
        self._top = entry
        self._est += tokens + 1

    def _pop_oldest(self) -> tuple:
        """Drop the window's oldest line: ``(line, tokens)``."""
        top = self._top
        if top is not None:
            self._top = None
            line, tokens, nl = top
            rest = len(self._log) > self._lo
        else:
            i = self._lo
            self._lo = i + 1
            line, tokens, nl = self._log[i], self._tok[i], self._nlt[i]
            rest = len(self._log) > i + 1
        self._est -= tokens + 1
        if rest and nl is not None:
            self._nl -= nl
        return line, tokens

    def _with_newline(self, line: str, tokens: int, count) -> int:
        """count(line + "\n"): a line ending in a letter or digit gains the "\n" piece alone
        (convmem's counters); after punctuation the "\n" joins the last piece, which under
        cl100k_base is the line's trailing run of punctuation (with the space before it): only
        that piece is counted again (tests/test_summary_log.py checks it on random text)."""
        if self._memo is None:
            return count(line + "\n")
        if line[-1].isalnum():
            return tokens + self._count("\n", count)
        if self._tails:
            piece = _last_piece(line)
            if piece:
                return tokens - self._count(piece, count) + self._count(piece + "\n", count)
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

    def _exact(self, count) -> int:
        """count(text) from the lines' counts (additive counters only)."""
        log, lo, top = self._log, self._lo, self._top
        size = len(log) - lo + (top is not None)
        if not size:
            return self._head  # type: ignore[return-value]
        if size == 1:
            return self._count(_HEADER + " " + (top[0] if top is not None else log[lo]), count)
        if top is not None:
            line, oldest_nl = top[0], top[2]
        else:
            line, oldest_nl = log[lo], self._nlt[lo]
        k = 0
        while k < len(line) and line[k].isalpha():
            k += 1
        if self._memo is not None and 0 < k < len(line) and line[k] == ":":
            # The header's pieces end at its ":", and only the oldest line's leading word changes
            # piece with the space before it: swap that word's count for " word"'s.
            word = line[:k]
            head = self._head + oldest_nl - self._count(word, count) + self._count(" " + word, count)
        else:
            head = self._count(_HEADER + " " + line + "\n", count)
        return head + self._nl - oldest_nl + self._tok[-1]

    def _reset(self, previous: Message | None, count, additive: bool) -> None:
        """A window holding ``previous``'s lines (read back from its text), counted afresh."""
        self._trim(len(self._log))
        self._top = None
        self._est = self._nl = 0
        self._valid = True
        if previous is None:
            return
        body = previous.content
        if body is None and self._deferred:
            call = self._made.get(previous.id)
            if call is not None:
                body = _span_text(self._spans(), call)
        if body:
            if body.startswith(_HEADER):
                body = body[len(_HEADER) :]
            for ln in body.split("\n"):
                ln = ln.strip()
                if ln:
                    self._push(ln, count(ln), count, additive)

    def _clip_cut(self, cut: tuple, room: int, count) -> tuple[str, int] | None:
        """The newest line that did not fit, clipped to ``room`` tokens (its separator
        included): ``(line, tokens)``, or None when no clipped form fits."""
        ln, cost = cut[0], cut[1] + 1
        clipped = False
        while ln and cost > room and len(ln) > 8:
            part = ln[: max(8, int(len(ln) * room / cost) - 2)]
            if " " in part[8:]:
                part = part[: part.rfind(" ")]  # end on a word boundary
            ln = part.rstrip() + "…"
            cost = self._count(ln, count) + 1
            clipped = True
            if len(ln) <= 9:
                break
        if clipped and cost <= room:
            return ln, cost - 1
        return None

    def _trim(self, lo: int) -> None:
        """Forget the log before ``lo`` (eager mode only: a replay keeps its whole log)."""
        if self._deferred:
            self._lo = lo
            return
        del self._log[:lo], self._tok[:lo], self._nlt[:lo]
        self._lo = 0

    def __call__(self, previous: Message | None, dropped: Sequence[Message]) -> Message:
        if not dropped:
            raise ValueError("ExtractiveSummarizer called with no dropped messages")
        count = self.count_tokens or _default_count()
        self.calls += 1
        if self._counted_with != count:  # bound methods compare equal, are not identical
            self._use_counter(count)
        memo = self._memo
        additive = self._own
        if self._deferred and memo is not None:
            return self._call_spans(previous, dropped, count, memo)
        if previous is None or previous is not self._last or not self._valid:
            self._reset(previous, count, additive)
        if self._head is None:
            self._head = count(_HEADER)
        if memo is not None and len(memo) >= LINE_MEMO_SIZE:
            memo.clear()
        line_chars = self.line_chars
        if self._deferred:
            lines = _cached_lines((line_chars, None))
            kept = _LINE_KEPT
        for m in dropped:
            if self._deferred:
                ln = lines.get(id(m))
                if ln is None:
                    ln = lines[id(m)] = _line(m, line_chars)
                    kept.append(m)
            else:
                ln = _line(m, line_chars)
            if memo is None:
                tokens = count(ln)
            else:
                tokens = memo.get(ln)
                if tokens is None:
                    tokens = memo[ln] = count(ln)
            self._push(ln, tokens, count, additive)
        # Newest lines win: drop from the oldest end while the estimate is over; the newest of
        # the lines dropped (the first that did not fit) is clipped to the room left.
        max_tokens = self.max_tokens
        cut = None
        while (self._top is not None or len(self._log) > self._lo) and self._head + self._est > max_tokens:
            cut = self._pop_oldest()
        if cut is not None:
            clipped = self._clip_cut(cut, max_tokens - self._head - self._est, count)
            if clipped is not None:
                self._push_oldest(clipped[0], clipped[1], count, additive)
        # The exact count of the text; the tokenizer may merge across lines (drop the oldest).
        deferred = self._deferred
        while True:
            window = self._top is not None or len(self._log) > self._lo
            if additive:
                text = None
                tokens = self._exact(count)
            else:
                text = self._window_text()
                tokens = count(text)
            if tokens <= max_tokens or not window:
                break
            self._pop_oldest()
        sid = f"{self.id_prefix}-{self.calls}"
        if deferred:
            top = self._top
            self._span_top.append(top[0] if top is not None else None)
            self._span_lo.append(self._lo)
            self._span_hi.append(len(self._log))
            self._made[sid] = self.calls - 1
            out = Message(sid, self.role, tokens)
        else:
            if text is None:
                text = self._window_text()
            out = Message(sid, self.role, tokens, content=text)
            if self._lo > 64 and 2 * self._lo > len(self._log):
                self._trim(self._lo)  # amortized O(1) per line; memory O(the window)
        self._last = out
        return out

    def _use_counter(self, count) -> None:
        """Resolve ``count`` (a new counter): its shared line memo, additivity, cl100k tails; the
        window is read back afresh at the next call."""
        self._counted_with = count
        self._head = None
        self._valid = False
        self._copied = None  # its counts were made under the counter before
        memo = _own_counter_memo(count)
        if not (self.additive if self.additive is not None else memo is not None):
            memo = None
        self._own = memo is not None or bool(self.additive)
        self._memo = memo
        owner = getattr(count, "__self__", None)
        self._tails = memo is not None and type(owner).__name__ == "TiktokenCounter" and owner.name == "cl100k_base"
        self._nl_deltas = {}
        self._swaps = {}
        self._clips = {} if memo is None else _CLIP_MEMOS.setdefault(id(memo), {})

    def warm(self, messages: Sequence[Message]) -> int:
        """Make and count the summary lines of ``messages`` ahead of any summary: they go into the
        process-wide line cache that every ExtractiveSummarizer with the same counter and
        ``line_chars`` reads, so a later replay with summaries finds them counted (the first
        replay of 10^5 messages spends about 0.5-0.9 s on them otherwise). Returns how many lines
        were new; 0 with a counter that is not convmem's own (nothing is shared then).

        O(len(messages)) (one ``count_texts`` batch of the new lines); memory: the cache's, bounded
        by its size cap. Safe beside a replay in another thread (the cache and the memo are only
        read and filled; a line cleared at the cap is made again on use). Nothing else changes:
        ``calls`` stays 0, so the summarizer may still be deferred.
        """
        shared = self._shared_lines()
        if shared is None:
            return 0
        count, memo, cache = shared
        new = [m for m in messages if id(m) not in cache]
        if new:
            self._entries(new, count, memo, by_text=False)
        return len(new)

    def lines_missing(self, messages: Sequence[Message]) -> int:
        """How many of ``messages`` :meth:`warm` would make and count now: those with no line in
        the process-wide line cache under this summarizer's counter and ``line_chars``. 0 with a
        counter that is not convmem's own (nothing is shared then). O(len(messages)) dict lookups
        (about 3 ms per 10^5 messages); builds the default counter when it is the one used.

        >>> from convmem import Message
        >>> s = ExtractiveSummarizer(max_tokens=50, count_tokens=lambda text: len(text.split()))
        >>> s.lines_missing([Message("m1", "user", 3, content="hi")])  # not convmem's own counter
        0
        """
        shared = self._shared_lines()
        if shared is None:
            return 0
        cache = shared[2]
        return len(messages) - sum(map(cache.__contains__, map(id, messages)))

    def _shared_lines(self) -> tuple[Callable[[str], int], dict, dict] | None:
        """``(counter, its line memo, the line cache)`` shared by every summarizer of the process
        with this counter and ``line_chars``; None with a counter that is not convmem's own."""
        count = self.count_tokens or _default_count()
        if self._counted_with != count:
            self._use_counter(count)
        memo = self._memo
        if memo is None:
            return None
        return count, memo, _cached_lines((self.line_chars, id(memo)))

    # -- preloaded replay (the replay's walk) -------------------------------------------------
    def _preload(self, messages: Sequence[Message]) -> None:
        """Prepare for :meth:`_call_range` calls over ``messages`` (deferred mode): each call's
        dropped messages are a slice of ``messages``, and when a call's slice starts where the
        last one ended (a replay with no summary refused), their lines are already in the log,
        appended ahead in batches (one pass of line making and token counting per batch, see
        :meth:`_entries`; from PRELOAD_FIRST messages, doubling up to PRELOAD_BLOCK while the
        lines ahead are all used), so the call is O(log n) plus the clipped line (memoized), with
        no per-message work. O(1) here."""
        if not self._deferred:
            raise RuntimeError("ExtractiveSummarizer._preload needs deferred mode (_defer first)")
        self._unload()
        self._pre = messages
        self._pre_base = len(self._log)
        self._pre_end = self._pre_stop = 0
        self._pre_block = PRELOAD_FIRST

    def _call_range(self, previous: Message | None, first: int, stop: int) -> Message:
        """``self(previous, messages[first:stop])`` for the messages given to :meth:`_preload`
        (``first < stop``): the same summary, recorded the same way. O(log n) amortized when
        ``first`` is where the last call ended and ``previous`` is the summary made last (or
        None); any other call (a refused summary, a new counter) drops the lines appended ahead
        and runs the plain call (O(the lines appended ahead) more: at most the lines used since
        the last such call, plus PRELOAD_FIRST)."""
        messages = self._pre
        count = self.count_tokens or _default_count()
        memo = self._memo
        if (
            memo is None or self._counted_with != count or first != self._pre_end
            or (previous is not None and (previous is not self._last or not self._valid))
        ):
            self._unload()
            out = self(previous, messages[first:stop])
            self._pre_base = len(self._log) - stop
            self._pre_end = self._pre_stop = stop
            return out
        self.calls += 1
        base = self._pre_base
        if previous is None:  # a window of the dropped lines only
            self._top = None
            self._lo = first + base
            self._valid = True
        if stop > self._pre_stop:
            block = min(self._pre_block, PRELOAD_BLOCK)
            ahead = min(len(messages), max(stop, self._pre_stop + block))
            self._append(self._entries(messages[self._pre_stop : ahead], count, memo, by_text=False))
            self._pre_stop = ahead
            self._pre_block = 2 * block  # every line appended ahead so far was used
        self._pre_end = stop
        return self._close(count, memo, stop + base)

    def _call_steps(self, previous: Message | None, steps: Sequence[int]) -> Message:
        """``self(previous, [messages[k] for k in steps])`` for the messages given to
        :meth:`_preload` (``steps`` increasing, not empty): the same summary, recorded the same
        way. A run of consecutive steps is :meth:`_call_range`; any other (a compaction that
        passed over pinned messages) drops the lines appended ahead and runs the plain call,
        after which later runs are preloaded again from the newest step. O(log n) amortized for a
        run that starts where the last call ended, else O(len(steps) + the lines appended ahead)
        (see :meth:`_call_range`)."""
        first, stop = steps[0], steps[-1] + 1
        if stop - first == len(steps):
            return self._call_range(previous, first, stop)
        messages = self._pre
        self._unload()
        out = self(previous, list(map(messages.__getitem__, steps)))
        self._pre_base = len(self._log) - stop
        self._pre_end = self._pre_stop = stop
        return out

    def _unload(self) -> None:
        """Drop the lines appended ahead of their calls (the log ends at the last summarized
        message again); the next batch starts small again. O(lines dropped)."""
        if self._pre_stop > self._pre_end:
            end = self._pre_end + self._pre_base
            del self._log[end:], self._tok[end:], self._nlt[end:], self._pe[end + 1 :], self._pn[end + 1 :]
            self._pre_stop = self._pre_end
            self._pre_block = PRELOAD_FIRST

    # -- deferred calls -----------------------------------------------------------------------
    def _call_spans(self, previous: Message | None, dropped: Sequence[Message], count, memo: dict) -> Message:
        """One call in deferred mode with convmem's own counters (the replay's case): the same
        summary as the eager path, from prefix sums over the log.

        Every log line's tokens and tokens with ``"\n"`` are known when it is appended (the
        process-wide line cache gives both for a message summarized before), and ``_pe`` /
        ``_pn`` hold their running sums (``_pe[i]`` = sum of tokens + 1 over ``log[:i]``, ``_pn``
        of the tokens with ``"\n"``), so the cut from the oldest end is one bisect and the exact
        count O(1): O(dropped messages) per call, no per-line method call."""
        log, tok, nlt = self._log, self._tok, self._nlt
        if len(self._pe) <= len(log):
            self._cover(count)  # lines appended by the eager path (a counter change)
        if previous is None or previous is not self._last or not self._valid:
            self._top = None
            self._lo = len(log)
            self._valid = True
            body = None
            if previous is not None:
                body = previous.content
                call = self._made.get(previous.id) if body is None else None
                if call is not None and not self._reuse_copy(call):
                    # A summary of this replay (History refused newer ones): its lines are copied
                    # from the log with their counts, not read back from its text and recounted.
                    copied = self._span_entries(call, count)
                    if copied is None:
                        body = _span_text(self._spans(), call)
                    else:
                        start = len(log)
                        self._append(copied)
                        self._copied = (call, start, len(log), self.calls)
            if body:
                if body.startswith(_HEADER):
                    body = body[len(_HEADER) :]
                fresh = [ln for ln in (x.strip() for x in body.split("\n")) if ln]
                self._append([(ln, t, self._with_newline(ln, t, count), t + 1) for ln, t in
                              ((ln, self._count(ln, count)) for ln in fresh)])
        self._append(self._entries(dropped, count, memo))
        return self._close(count, memo, len(log))

    def _reuse_copy(self, call: int) -> bool:
        """When the call just before this one copied summary ``call``'s lines to the end of the log
        (``_copied``) and History refused what it made (``previous`` is ``call``'s summary again,
        not the one returned last): cut the log back to the end of that copy and start the window
        at it, so the copy serves again (the refused summary's span, overwritten by this call's
        lines, is forgotten: History never gives a refused summary back, and only accepted ones
        are built). True when done. O(the lines cut: the last call's dropped ones), where a new
        copy is O(the summary's lines): a replay whose summaries History refuses on most of its
        compactions (a budget close to the limit) no longer copies a whole summary each time."""
        copied = self._copied
        if copied is None or copied[0] != call or copied[3] != self.calls - 1:
            return False
        start, end = copied[1], copied[2]
        self._made.pop(f"{self.id_prefix}-{self.calls - 1}", None)
        del self._log[end:], self._tok[end:], self._nlt[end:], self._pe[end + 1 :], self._pn[end + 1 :]
        self._lo = start
        self._copied = (call, start, end, self.calls)
        return True

    def _span_entries(self, call: int, count) -> list[tuple[str, int, int, int]] | None:
        """The log entries ``(line, tokens, tokens with "\n", tokens + 1)`` of the summary made by
        call number ``call`` (0-based), oldest first: its clipped oldest line (counted through the
        memo) and a copy of its span of the log. The same lines and counts as reading its text
        back (:func:`_span_text` joins exactly these lines), without counting them again: O(lines)
        at C level, where the read-back was one ``"\n"`` count per line (a replay whose summaries
        History keeps refusing read a whole summary back on every compaction: 40 s at 10^5).
        None when a line of the span has no ``"\n"`` count yet (appended by the eager path)."""
        self._unload()
        lo, hi = self._span_lo[call], self._span_hi[call]
        nls = self._nlt[lo:hi]
        if None in nls:
            return None
        toks = self._tok[lo:hi]
        entries = list(zip(self._log[lo:hi], toks, nls, map((1).__add__, toks)))
        top = self._span_top[call]
        if top is not None:
            t = self._count(top, count)
            entries.insert(0, (top, t, self._with_newline(top, t, count), t + 1))
        return entries

    def _entries(
        self, dropped: Sequence[Message], count, memo: dict, by_text: bool = True
    ) -> list[tuple[str, int, int, int]]:
        """``(line, tokens, tokens with "\n", tokens + 1)`` of each message of ``dropped``, from
        the process-wide line cache (or, for a short text, from _TEXT_LINES); the messages in
        neither get their lines made and counted in one batch (texts the memo does not hold
        counted by the counter's ``count_texts``). ``by_text``: use _TEXT_LINES and enter the
        short texts made there (a replay's compactions: the messages made anew, cleared results,
        are the ones missing), else the line cache only (the batches of a whole conversation's
        lines, preloaded or warmed: each message gets its own entry)."""
        if len(memo) >= LINE_MEMO_SIZE:
            memo.clear()
        line_chars = self.line_chars
        key = (line_chars, id(memo))
        cache = _cached_lines(key)
        entries = list(map(cache.get, map(id, dropped)))
        if None in entries:
            missing = [i for i, e in enumerate(entries) if e is None]
            texts = _TEXT_LINES.get(key) if by_text else None
            if texts is not None:
                missing = self._from_text(missing, dropped, entries, texts)
                if not missing:
                    return entries
            fresh = [dropped[i] for i in missing] if len(missing) < len(entries) else list(dropped)
            lines = [_line(m, line_chars) for m in fresh]
            tokens = self._count_lines(lines, count, memo)
            made = list(zip(lines, tokens, self._with_newlines(lines, tokens, count), map((1).__add__, tokens)))
            cache.update(zip(map(id, fresh), made))
            _LINE_KEPT.extend(fresh)
            if by_text:
                self._keep_text(key, fresh, made)
            if len(made) == len(entries):
                return made
            for i, e in zip(missing, made):
                entries[i] = e
        return entries

    @staticmethod
    def _from_text(missing: list[int], dropped: Sequence[Message], entries: list, by_text: dict) -> list[int]:
        """Fill ``entries[i]`` for the positions ``missing`` whose message's ``(role, content)``
        has an entry in ``by_text`` (see _TEXT_LINES); return the positions still missing. O(1)
        per position (a short content's hash, cached by the str)."""
        still = []
        for i in missing:
            m = dropped[i]
            e = by_text.get((m.role, m.content)) if m.content else None
            if e is None:
                still.append(i)
            else:
                entries[i] = e
        return still

    def _keep_text(self, key: tuple, fresh: list[Message], made: list) -> None:
        """Enter the lines just made for messages of short content in _TEXT_LINES."""
        line_chars = self.line_chars
        by_text = _TEXT_LINES.get(key)
        for m, e in zip(fresh, made):
            text = m.content
            if text and len(text) <= line_chars:
                if by_text is None:
                    by_text = _TEXT_LINES[key] = {}
                elif len(by_text) >= LINE_MEMO_SIZE:
                    by_text.clear()
                by_text[(m.role, text)] = e

    def _with_newlines(self, lines: list[str], tokens: list[int], count) -> list[int]:
        """``[self._with_newline(ln, t, count) for ln, t in zip(lines, tokens)]``, O(1) per line
        when its last two characters decide the tokens ``"\n"`` adds (:meth:`_newline_delta`,
        one dict lookup: most lines end in a letter, a digit or one punctuation mark)."""
        deltas = self._nl_deltas
        out = []
        for ln, t in zip(lines, tokens):
            tail = ln[-2:]
            d = deltas.get(tail, False)
            if d is False:
                if len(deltas) >= _NL_DELTAS_SIZE:
                    deltas.clear()
                d = deltas[tail] = self._newline_delta(tail, count)
            out.append(t + d if d is not None else self._with_newline(ln, t, count))
        return out

    def _newline_delta(self, tail: str, count) -> int | None:
        """``count(line + "\n") - count(line)`` for every line ending in the two characters
        ``tail``, or None when they do not decide it. They do (see :meth:`_with_newline`) when
        the counter is convmem's own and the line ends in a letter or digit, or, under
        cl100k_base, when ``tail[0]`` ends the final run of punctuation (:func:`_last_piece` of
        the line is then ``_last_piece(tail)``)."""
        if self._memo is None or len(tail) < 2:
            return None
        if tail[-1].isalnum():
            return self._count("\n", count)
        a = tail[0]
        if not self._tails or not (a.isspace() or a.isalpha() or unicodedata.category(a)[0] == "N"):
            return None
        piece = _last_piece(tail)
        return self._count(piece + "\n", count) - self._count(piece, count) if piece else None

    @staticmethod
    def _count_lines(lines: list[str], count, memo: dict) -> list[int]:
        """count(line) for each of ``lines`` through ``memo`` (filled with the new ones); the
        texts it lacks are counted in one ``count_texts`` call of the counter ``count`` is bound
        to (convmem's own counters)."""
        tokens = list(map(memo.get, lines))
        if None in tokens:
            unknown = list(map(is_, tokens, repeat(None)))
            texts = list(dict.fromkeys(compress(lines, unknown)))
            new = dict(zip(texts, count.__self__.count_texts(texts)))
            memo.update(new)
            # Read back from this call's own counts: the memo is shared by every thread and may
            # be cleared (at its size cap) by another one between the update and this read.
            if all(unknown):  # a batch of new lines (a first replay, a warm): no per-line branch
                return list(map(new.__getitem__, lines))
            tokens = [new[ln] if t is None else t for ln, t in zip(lines, tokens)]
        return tokens

    def _close(self, count, memo: dict, n: int) -> Message:
        """The summary of the window ending at log position ``n`` (its lines appended): cut from
        the oldest end to ``max_tokens`` (the first line that does not fit clipped), its exact
        tokens from the lines' counts, recorded as a span; the Message returned (content None).
        O(log n) plus the clipped line when it is new."""
        head = self._head
        if head is None:
            head = self._head = count(_HEADER)
        pe = self._pe
        lo = self._lo
        top = self._top
        max_tokens = self.max_tokens
        room = max_tokens - head
        end = pe[n]
        est = end - pe[lo] if top is None else end - pe[lo] + top[1] + 1
        if est > room:
            # Newest lines win: drop from the oldest end while over; the newest line dropped
            # (the first that did not fit) is clipped to the room left.
            if top is not None:
                cut, cut_tokens = top[0], top[1]
                est -= cut_tokens + 1
                self._top = top = None
            if est > room:
                lo = self._lo = bisect_left(pe, end - room, lo, n)
                cut, cut_tokens = self._log[lo - 1], self._tok[lo - 1]
                est = end - pe[lo]
            left = room - est
            if left > 0:  # no clipped line fits in no room (its separator alone takes a token)
                clipped = self._clips.get((cut, left), False)
                if clipped is False:
                    clipped = self._clip_entry(cut, cut_tokens, left, count)
                if clipped is not None:
                    top = self._top = clipped
        # The exact count of the text, from the lines' counts (drop the oldest while over: the
        # tokenizer may merge across lines).
        pn = self._pn
        while True:
            if top is not None:
                line = top[0]
                if n == lo:
                    tokens = self._count(_HEADER + " " + line, count)
                else:  # "\n" counts of the top and of every log line but the newest
                    tokens = self._first_line(line, top[2], head, count) + pn[n - 1] - pn[lo] + self._tok[n - 1]
            elif n - lo > 1:
                line = self._log[lo]
                tokens = self._first_line(line, self._nlt[lo], head, count) + pn[n - 1] - pn[lo + 1] + self._tok[n - 1]
            elif n > lo:
                tokens = self._count(_HEADER + " " + self._log[lo], count)
            else:
                tokens = head
                break
            if tokens <= max_tokens:
                break
            if top is not None:
                self._top = top = None
            else:
                lo = self._lo = lo + 1
        calls = self.calls
        sid = f"{self.id_prefix}-{calls}"
        self._span_top.append(top[0] if top is not None else None)
        self._span_lo.append(lo)
        self._span_hi.append(n)
        self._made[sid] = calls - 1
        named = (self.id_prefix, self.role)
        if named != self._checked or not 0 <= tokens <= MAX_TOKENS:
            out = Message(sid, self.role, tokens)  # checked: each id prefix and role once
            self._checked = named
        else:
            out = _summary_message(sid, self.role, tokens)
        self._last = out
        return out

    def _first_line(self, line: str, with_newline: int, head: int, count) -> int:
        """count(_HEADER + " " + line + "\n") for the oldest line of a summary of two lines or
        more, ``with_newline`` being count(line + "\n"): the header's pieces end at its ":", and
        only the line's leading word (its role, up to the first ":") changes piece with the space
        before it, so that word's count is swapped for " word"'s (memoized per word); counted
        whole when the line does not start with letters then ":"."""
        k = line.find(":")
        if k > 0:
            word = line[:k]
            swaps = self._swaps
            swap = swaps.get(word)
            if swap is None and word.isalpha():
                if len(swaps) >= _NL_DELTAS_SIZE:
                    swaps.clear()
                swap = swaps[word] = self._count(" " + word, count) - self._count(word, count)
            if swap is not None:
                return head + swap + with_newline
        return self._count(_HEADER + " " + line + "\n", count)

    def _clip_entry(self, line: str, tokens: int, room: int, count) -> tuple[str, int, int] | None:
        """``(clipped line, tokens, tokens with "\n")`` of ``line`` (``tokens`` tokens) clipped to
        ``room`` tokens (:meth:`_clip_cut`), or None when no clipped form fits; entered in the
        clipped lines memo under ``(line, room)``."""
        clips = self._clips
        if len(clips) >= LINE_MEMO_SIZE:
            clips.clear()
        clipped = self._clip_cut((line, tokens), room, count)
        if clipped is not None:
            ln, t = clipped
            clipped = (ln, t, self._with_newlines((ln,), (t,), count)[0])
        clips[(line, room)] = clipped
        return clipped

    def _append(self, entries: list) -> None:
        """Append ``(line, tokens, tokens with "\n", tokens + 1)`` entries to the log and its
        running sums."""
        if not entries:
            return
        lines, toks, nls, costs = zip(*entries)
        self._log.extend(lines)
        self._tok.extend(toks)
        self._nlt.extend(nls)
        sums = accumulate(costs, initial=self._pe[-1])
        next(sums)  # the initial value is there already
        self._pe.extend(sums)
        sums = accumulate(nls, initial=self._pn[-1])
        next(sums)
        self._pn.extend(sums)

    def _cover(self, count) -> None:
        """Extend the running sums over log lines appended without them."""
        start = len(self._pe) - 1
        for i in range(start, len(self._log)):
            if self._nlt[i] is None:
                self._nlt[i] = self._with_newline(self._log[i], self._tok[i], count)
            self._pe.append(self._pe[-1] + self._tok[i] + 1)
            self._pn.append(self._pn[-1] + self._nlt[i])

    def _window_text(self) -> str:
        lines = self._log[self._lo :]
        if self._top is not None:
            lines.insert(0, self._top[0])
        return _HEADER + " " + "\n".join(lines) if lines else _HEADER


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
