"""Token budget: a conversation's summary lines counted in slices before its first replay with
summaries (issue 10 item 3: every widget change under 1 s of server time at 10^5 messages).

The first replay with summaries in a server process makes and counts one summary line per
message (:meth:`convmem.ExtractiveSummarizer.warm`): at 10^5 messages about 0.5-0.6 s of tiktoken
and 0.3-0.5 s of convmem's own line work, on top of the replay. convmem_dashboard.idle_lines
counts them in idle time while summaries are off; when summaries are turned on before it is done
(or a link opens with them on), :func:`lines_ready` counts what is left in slices, one per script
run, as convmem_dashboard.panel_replay replays:

* a run counts at most :data:`FULL_RUN_LINES` missing lines itself (inside its replay), and so
  does every run on a conversation of more than :data:`MAX_MESSAGES` (left to its replay);
* with more missing, it draws a bar ("Counting summary lines: 40,960 of 100,000 messages"),
  counts :data:`SLICE_LINES` more and reruns the script (``st.rerun()``). A run that ends in a
  rerun leaves the page's elements on screen (Streamlit's frontend clears stale elements only
  after a run that finished) and removes no widget state, so the previous view stays, faded,
  under the bar. The run that finds at most FULL_RUN_LINES missing goes on to the replay.
  A slice that raises, or a run that finds lines lost (the cache emptied at its cap, which fills
  of other sessions sharing it may do on every slice), leaves that conversation's lines to its
  replay (no bar, no rerun): every fill ends.

The lines go into convmem's process-wide line cache (bounded by its cap), so the fill happens once
per conversation per server process, for every session and every setting. (Until session 23 the
fill ran in a fragment's follow-up runs after the page stopped under the bar, which removed
everything below it: a new user saw the page go blank for 4 s.)
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from convmem import Message
from convmem.summarizers import LINE_CACHE_SIZE

from . import cache_budget as cb
from .url_params import rerun_keeping_link_fixes
from . import idle_lines

__all__ = ["BAR_LABEL", "FULL_RUN_LINES", "MAX_MESSAGES", "SLICE_LINES", "fill_text", "lines_ready"]

#: Missing lines a run counts itself (about 0.05-0.1 s).
FULL_RUN_LINES = 10_000
#: Conversations longer than this are left to their replay: the line cache (LINE_CACHE_SIZE
#: messages, emptied whole at its cap) could not hold their lines with room to spare, and a fill
#: that a clear sets back must still end.
MAX_MESSAGES = LINE_CACHE_SIZE // 2
#: Lines counted per script run of the fill, at least (whole batches of idle_lines.BATCH: 20 of
#: them, about 0.15-0.25 s).
SLICE_LINES = 20_480
#: The bar's label.
BAR_LABEL = "Counting summary lines"
#: (dataset key, conversation id) whose fill stopped (a slice raised, or lines it counted were
#: lost): its lines are left to the replay, whose run counts them (or shows the error) once, with
#: no bar and no rerun.
_TO_REPLAY = "_summary_lines_to_replay"
#: (dataset key, conversation id, lines missing after the last slice): a run that finds more
#: missing saw the line cache emptied at its cap (another session's fill, the idle worker), which
#: may happen on every slice when fills share the cache, so the fill stops: every fill ends.
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


def lines_ready(dataset_key: str, conv_id: str) -> None:
    """Return when the summary lines of the conversation ``conv_id`` of dataset ``dataset_key``
    are counted, or few enough are missing for this run to count them (:data:`FULL_RUN_LINES`),
    or the fill gave way to the replay; else draw the bar, count :data:`SLICE_LINES` more and
    rerun the script (``st.rerun()``: the call does not return). The messages are
    cache_budget.conversation's, the ones the replay and the fill read (a dataset read again,
    e.g. a database, gives the page new objects while that cache keeps the first ones). O(n)
    lookups (about 3 ms per 10^5 messages) plus the slice."""
    key = (dataset_key, conv_id)
    if st.session_state.get(_TO_REPLAY) == key:
        return
    messages = cb.conversation(dataset_key, conv_id).messages
    n = len(messages)
    if n <= FULL_RUN_LINES or n > MAX_MESSAGES:
        return
    missing = idle_lines.lines_missing(messages)
    expected = st.session_state.pop(_EXPECTED, None)
    if missing <= FULL_RUN_LINES:
        return
    if expected is not None and expected[:2] == key and missing > expected[2]:
        st.session_state[_TO_REPLAY] = key  # lines counted here were lost at the cache's cap
        return
    _bar(messages, missing)  # before the slice: the browser gets it while the slice runs
    try:
        counted = idle_lines.count_lines(messages, SLICE_LINES)
    except Exception:  # noqa: BLE001 - the replay counts them itself and shows what fails, once
        st.session_state[_TO_REPLAY] = key
        rerun_keeping_link_fixes()
    st.session_state[_EXPECTED] = (dataset_key, conv_id, missing - counted)
    rerun_keeping_link_fixes()
