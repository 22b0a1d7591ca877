"""A conversation's summary lines, counted in idle time before anyone turns summaries on.

The first replay with summaries in a server process makes and counts one summary line per message
(:meth:`convmem.ExtractiveSummarizer.warm`): about 0.5-0.9 s of the first "Summaries" toggle on a
10^5-message conversation (tiktoken, one count per line), against about 0.45 s for the replay
itself at a later limit (docs/performance.md). The Token budget page therefore hands the shown
conversation to :func:`warm_later` while summaries are off; one daemon thread per process counts
its lines in batches of :data:`BATCH` messages, each batch only while no script run is alive
(after a run it waits :data:`QUIET_S` seconds more), so a widget change never shares the
interpreter with more than one batch (1,024 messages: about 8-12 ms on an idle machine, up to
about 45 ms under a load of 6). The first conversation queued also loads the default counter's
rank file in that run (about 0.2 s, once per process), which the worker would otherwise load in the
toggle's own run when the toggle comes before any idle time. A conversation is queued once (by
key; the :data:`REMEMBERED` newest keys are remembered), and only from :data:`MIN_MESSAGES`
messages, where the first toggle would otherwise wait for its lines noticeably.

Memory: the lines go into convmem's process-wide line cache, which the first summaries replay
fills anyway and which is bounded by its own cap; the queue holds a conversation only until its
lines are counted (one it took from an evicted dataset lives until then, not longer).
"""

from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from convmem import EncodingUnavailableError, ExtractiveSummarizer, Message, default_counter

__all__ = ["BATCH", "MIN_MESSAGES", "QUIET_S", "REMEMBERED", "count_lines", "lines_missing", "wait_for_quiet", "warm_later"]

#: Messages whose lines are counted between two checks for a running script.
BATCH = 1_024
#: Conversations shorter than this are left to the replay (their lines cost < 0.1 s).
MIN_MESSAGES = 10_000
#: Seconds to wait after a script run ended before the next batch: a rerun often follows a run
#: within about 0.1 s (the browser's own rerun), and one that comes later waits for at most one
#: batch. Session 20 waited 1.0 s: a toggle 1.5 s after the view found few lines counted.
QUIET_S = 0.25
#: Conversation keys remembered as queued (the oldest forgotten first).
REMEMBERED = 64

_LOCK = threading.Lock()
_QUEUE: queue.SimpleQueue = queue.SimpleQueue()
_QUEUED: OrderedDict[str, None] = OrderedDict()
_WORKER: list[threading.Thread] = []


def wait_for_quiet(script_name: str, quiet_s: float | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
    """Return at once when no thread named ``script_name`` (Streamlit's script threads are all
    "ScriptRunner.scriptThread"), other than the main thread and the caller, is alive or starting;
    else wait for each to end, then ``quiet_s`` seconds more (default :data:`QUIET_S`: the
    browser's rerun that often follows a run), and check again. Never raises for a run that is
    still starting (one ``threading.enumerate`` lists before ``join`` accepts it)."""
    me = threading.current_thread()
    main = threading.main_thread()
    while True:
        busy = [t for t in threading.enumerate() if t.name == script_name and t is not me and t is not main]
        if not busy:
            return
        for t in busy:
            # threading.enumerate() also lists a thread between start() and its first step, which
            # join() refuses (RuntimeError): such a run is starting, so the quiet period and the
            # check after it cover it.
            if t.is_alive():
                t.join()
        sleep(QUIET_S if quiet_s is None else quiet_s)


def warm_later(key: str, messages: Sequence[Message], *, line_chars: int = 120) -> bool:
    """Queue the summary lines of ``messages`` (a conversation, ``key`` naming it) to be counted in
    idle time, with the default counter and ``line_chars`` (the page's ExtractiveSummarizer's).
    Returns True when queued by this call; False when the conversation is short (under
    :data:`MIN_MESSAGES`) or was queued before. O(1), except that a queued conversation makes sure
    the default counter is built (its rank file parsed: about 0.2 s, once per process; nothing when
    it cannot be built: the view that needs it reports that); starts the worker thread on first use
    (and again if an unexpected error ended it).
    """
    if len(messages) < MIN_MESSAGES:
        return False
    script_name = threading.current_thread().name
    with _LOCK:
        if key in _QUEUED:
            _QUEUED.move_to_end(key)
            return False
        _QUEUED[key] = None
        while len(_QUEUED) > REMEMBERED:
            _QUEUED.popitem(last=False)
        _QUEUE.put((messages, line_chars, script_name))
        if not _WORKER or not _WORKER[0].is_alive():  # first use, or the worker died
            worker = threading.Thread(target=_work, name="convmem-summary-lines", daemon=True)
            _WORKER[:] = [worker]
            worker.start()
    _load_counter()
    return True


def _load_counter() -> None:
    """Build the default counter now (cached by convmem for the process), in the caller's run:
    the worker would build it only after the quiet period, so a toggle right after the view
    would pay for it. A counter that cannot be built is left to the view that needs it."""
    try:
        default_counter()
    except (EncodingUnavailableError, ImportError):
        return


def _work() -> None:
    """The worker: each queued conversation's lines, batch by batch, each batch in quiet time. A
    conversation whose counter cannot be built (no rank file, no tiktoken) is skipped: the view
    that needs the counter reports it, and the worker goes on with the queue. No local holds a
    conversation while the worker waits for the next (its dataset may be evicted meanwhile)."""
    while True:
        try:
            _warm_batches(*_QUEUE.get())
        except (EncodingUnavailableError, ImportError):
            continue


def _warm_batches(messages: Sequence[Message], line_chars: int, script_name: str) -> None:
    """Count the summary lines of ``messages``, :data:`BATCH` at a time, each batch after
    :func:`wait_for_quiet`. Raises what the default counter raises when it cannot be built."""
    summarizer = ExtractiveSummarizer(max_tokens=0, line_chars=line_chars)
    for start in range(0, len(messages), BATCH):
        wait_for_quiet(script_name)
        summarizer.warm(messages[start : start + BATCH])


def lines_missing(messages: Sequence[Message], *, line_chars: int = 120) -> int:
    """How many of ``messages`` have no summary line counted yet (with the default counter and
    ``line_chars``, as the page's summarizer): what the first replay with summaries would count.
    0 when the default counter cannot be built (the replay reports that). O(len(messages)) dict
    lookups: about 3 ms per 10^5 messages."""
    try:
        return ExtractiveSummarizer(max_tokens=0, line_chars=line_chars).lines_missing(messages)
    except (EncodingUnavailableError, ImportError):
        return 0


def count_lines(messages: Sequence[Message], most: int, *, line_chars: int = 120) -> int:
    """Count the summary lines of ``messages`` not counted yet, oldest first, :data:`BATCH`
    messages at a time, until at least ``most`` were new (or none is left); returns how many were.
    Runs in the caller's thread (the page's fill, panel_summary_lines): O(len(messages)) lookups
    plus the lines counted, at most ``most + BATCH - 1`` of them. Raises what the default counter
    raises when it cannot be built."""
    summarizer = ExtractiveSummarizer(max_tokens=0, line_chars=line_chars)
    new = 0
    for start in range(0, len(messages), BATCH):
        if new >= most:
            break
        new += summarizer.warm(messages[start : start + BATCH])
    return new
