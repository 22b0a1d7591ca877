"""Token budget: a conversation's summary lines counted in slices before its first replay with
summaries (issue 10 item 3: every widget change under 1 s of server time at 10^5 messages).

The first replay with summaries in a server process makes and counts one summary line per
message (:meth:`convmem.ExtractiveSummarizer.warm`): at 10^5 messages about 0.5-0.6 s of tiktoken
and 0.3-0.5 s of convmem's own line work, on top of the replay (0.4-0.9 s). convmem_dashboard.idle_lines
counts them in idle time while summaries are off; when summaries are turned on before it is done
(or a link opens with them on), :func:`lines_ready` counts what is left in slices:

* a full run counts at most :data:`FULL_RUN_LINES` missing lines itself (inside its replay), and
  so does every run on a conversation of more than :data:`MAX_MESSAGES` (left to its replay);
* with more missing, it draws a bar ("Counting summary lines: 40,960 of 100,000 messages") and
  returns False: the page then stops its script (``st.stop()``: a run stopped early removes no
  widget state, so every setting below the bar is kept). A fragment rerun every
  :data:`FILL_EVERY` seconds counts :data:`SLICE_LINES` more per follow-up run; the follow-up run
  that finds at most FULL_RUN_LINES missing reruns the whole page (``st.rerun()``) before anything
  else, which replays with the lines counted and registers no fragment, so the frontend's timer
  stops. Every run of the fill is one bounded slice; the replay gets its own run. A slice that
  raises, or a follow-up run that finds lines lost (the cache emptied at its cap, which fills of
  other sessions sharing it may do on every slice), reruns the page, which leaves that
  conversation's lines to its replay (no bar, no timer): every fill ends.

The lines go into convmem's process-wide line cache (bounded by its cap), so the fill happens once
per conversation per server process, for every session and every setting.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from convmem import Message
from convmem.summarizers import LINE_CACHE_SIZE

from . import cache_budget as cb
from . import idle_lines

__all__ = ["BAR_LABEL", "FILL_EVERY", "FULL_RUN_LINES", "MAX_MESSAGES", "SLICE_LINES", "fill_text", "lines_ready"]

#: Missing lines a full run counts itself (about 0.05-0.1 s).
FULL_RUN_LINES = 10_000
#: Conversations longer than this are left to their replay: the line cache (LINE_CACHE_SIZE
#: messages, emptied whole at its cap) could not hold their lines with room to spare, and a fill
#: that a clear sets back must still end.
MAX_MESSAGES = LINE_CACHE_SIZE // 2
#: Lines counted per follow-up run, at least (whole batches of idle_lines.BATCH: 20 of them, about
#: 0.15-0.25 s).
SLICE_LINES = 20_480
#: Seconds between follow-up runs while lines are counted (the frontend's timer).
FILL_EVERY = 0.2
#: The bar's label.
BAR_LABEL = "Counting summary lines"
#: Set by a full run just before it calls the fragment: the fragment's call inside that run
#: draws the bar only; its later calls (follow-up runs) count a slice.
_FULL_RUN = "_summary_lines_full_run"
#: (dataset key, conversation id) whose fill stopped (a slice raised, or lines it counted were
#: lost): its lines are left to the replay, whose run counts them (or shows the error) once, with
#: no bar and no timer.
_TO_REPLAY = "_summary_lines_to_replay"
#: (dataset key, conversation id, lines missing after the last slice): a follow-up run that finds
#: more missing saw the line cache emptied at its cap (another session's fill, the idle worker),
#: which may happen on every slice when fills share the cache, so the fill stops: every fill ends.
_EXPECTED = "_summary_lines_expected"


def fill_text(counted: int, total: int) -> str:
    """The bar's text: "Counting summary lines: 40,960 of 100,000 messages"."""
    return f"{BAR_LABEL}: {counted:,} of {total:,} messages"


def _bar(messages: Sequence[Message], missing: int) -> None:
    n = len(messages)
    st.progress((n - missing) / n, text=fill_text(n - missing, n))
    st.caption(
        "Summaries keep one clipped line per dropped message. Their token counts are made once per "
        "conversation (for every setting and every session) before the first replay with summaries; "
        "the charts follow when they are done."
    )


def _fill(dataset_key: str, conv_id: str) -> None:
    """The fragment: the bar, then (in a follow-up run) one slice more; the whole page when done."""
    follow_up = not st.session_state.pop(_FULL_RUN, False)
    messages = cb.conversation(dataset_key, conv_id).messages
    missing = idle_lines.lines_missing(messages)
    if follow_up and missing <= FULL_RUN_LINES:
        st.rerun()  # counted meanwhile (by the idle worker or another session)
    expected = st.session_state.pop(_EXPECTED, None)
    if follow_up and expected is not None and expected[:2] == (dataset_key, conv_id) and missing > expected[2]:
        _to_replay(dataset_key, conv_id)  # lines counted here were lost at the cache's cap
    _bar(messages, missing)
    if follow_up:
        # The next tick reruns the page when this slice was the last: the replay's run stays apart
        # from the slice's (each its own script run, each timed alone).
        try:
            counted = idle_lines.count_lines(messages, SLICE_LINES)
        except Exception:  # noqa: BLE001 - else the timer reruns the failing slice forever
            _to_replay(dataset_key, conv_id)
        st.session_state[_EXPECTED] = (dataset_key, conv_id, missing - counted)


def _to_replay(dataset_key: str, conv_id: str) -> None:
    """Stop the fill: rerun the page, whose replay counts the conversation's lines itself (and
    shows what fails, once)."""
    st.session_state[_TO_REPLAY] = (dataset_key, conv_id)
    st.rerun()


def lines_ready(dataset_key: str, conv_id: str) -> bool:
    """True when the summary lines of the conversation ``conv_id`` of dataset ``dataset_key`` are
    counted, or few enough are missing for this run to count them (:data:`FULL_RUN_LINES`); else
    draws the bar, registers the fragment that counts the rest, and returns False: the caller
    stops its script (``st.stop()``) and the fragment reruns the page when the lines are counted.
    The messages are cache_budget.conversation's, the ones the replay and the fill read (a
    dataset read again, e.g. a database, gives the page new objects while that cache keeps the
    first ones). O(n) lookups (about 3 ms per 10^5 messages)."""
    if st.session_state.get(_TO_REPLAY) == (dataset_key, conv_id):
        return True
    messages = cb.conversation(dataset_key, conv_id).messages
    n = len(messages)
    if n <= FULL_RUN_LINES or n > MAX_MESSAGES or idle_lines.lines_missing(messages) <= FULL_RUN_LINES:
        return True
    st.session_state[_FULL_RUN] = True
    st.fragment(_fill, run_every=FILL_EVERY)(dataset_key, conv_id)
    return False
