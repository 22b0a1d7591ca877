"""Token budget: a long replay spread over script runs, under a progress bar (issue 10 item 3:
every widget change under 1 s of server time at 10^5 messages, and progress instead of a blank
wait).

A replay with clearing and summaries takes 0.6-1.3 s at 10^5 messages on the 2-core test machine,
the page's drawing 0.2-0.3 s more. :func:`replay_ready` advances the cached
:class:`convmem.SlicedReplay` (cache_budget.replay_job) by at most :func:`run_messages` messages
per script run:

* when that ends the replay, it returns and the run draws the page;
* else it draws a bar ("Replaying 100,000 messages: 40,960 added") and calls ``st.rerun()``.
  A run that ends in a rerun leaves the page's elements on screen (Streamlit's frontend clears
  stale elements only after a run that finished), so the charts of the previous setting stay,
  faded, under the bar, and no widget state is lost; the next run draws the bar first (it reaches
  the browser while the slice runs) and advances again.

The slice is counted in messages, not seconds, so the runs are the same under load and in tests.
A replay that raises raises in the run that meets it and in every later one (the page shows the
error; nothing reruns). Sessions share the replay (its lock makes them take turns), so a second
session asking for the same setting finds it done or further along. A job evicted from the
cache between two runs (replay_job keeps 12) comes back at 0 added: the run that finds it set
back ends it in one go, so no loop of slices and evictions goes on for ever.
"""

from __future__ import annotations

import streamlit as st

from convmem import HistorySettings

from . import cache_budget as cb
from .url_params import rerun_keeping_link_fixes

__all__ = ["BAR_LABEL", "LIGHT_RUN_MESSAGES", "RUN_MESSAGES", "bar_text", "replay_ready", "run_messages"]

#: Messages one script run replays at most (plus up to convmem.PAUSE_EVERY - 1; all that are
#: left for a job found set back, see :func:`replay_ready`) with summaries or clearing on:
#: 0.2-0.35 s of CPU on the heaviest path (both) on the 2-core test machine, so the run that ends
#: the replay and draws the page (0.2-0.3 s more) stays under 1 s.
RUN_MESSAGES = 40_000
#: The same with neither (the base rule, pins, tool groups, start_on_user, a target: 0.1-0.3 s
#: per 10^5 messages): a 10^5-message conversation in one run, no bar.
LIGHT_RUN_MESSAGES = 150_000
#: The bar's label.
BAR_LABEL = "Replaying"
#: Session state key (plus ``what``): the replay this session's last run left partial and the
#: messages it had added, so the next run knows a job set back from one moved on.
_PROGRESS = "_replay_left_at"


def bar_text(added: int, total: int, what: str = "") -> str:
    """The bar's text.

    >>> bar_text(40_960, 100_000)
    'Replaying 100,000 messages: 40,960 added'
    >>> bar_text(0, 100_000, "setting B")
    'Replaying 100,000 messages (setting B): 0 added'
    """
    return f"{BAR_LABEL} {total:,} messages{f' ({what})' if what else ''}: {added:,} added"


def run_messages(settings: HistorySettings) -> int:
    """Messages a script run replays at most under ``settings``: :data:`RUN_MESSAGES` with
    summaries or clearing (tool results or thinking), else :data:`LIGHT_RUN_MESSAGES`."""
    heavy = (settings.summary_budget is not None or settings.clear_trigger is not None
             or settings.clear_thinking_keep is not None)
    return RUN_MESSAGES if heavy else LIGHT_RUN_MESSAGES


def replay_ready(
    dataset_key: str, conv_id: str, settings: HistorySettings, what: str = "", *, own_run: bool = False
) -> None:
    """Return once the replay of conversation ``conv_id`` of dataset ``dataset_key`` under
    ``settings`` is done (then cache_budget.get_replay returns it at once). Else replay at most
    :func:`run_messages` more messages under a bar and rerun the script (``st.rerun()``: this
    call does not return). ``what`` names the setting in the bar ("setting B"). A job found
    with fewer messages added than this session's last run left it (evicted from replay_job's
    cache meanwhile and made anew: other sessions' settings filling its entries would evict each
    other's jobs in turn, for ever) is driven to its end in this run instead, so every replay
    ends. ``own_run``: a replay this call had to work on gets its runs to itself: after its last
    slice the script reruns too, so what the page draws from it next (the comparison's cost
    panel: 0.5 s at 10^5 messages) runs in a fresh run (not after a job found set back, which
    must end in the run that finds it). Raises what the replay raises."""
    job = cb.replay_job(dataset_key, conv_id, settings)
    if job.done:
        job.result()  # raises the replay's error, if it raised
        return
    share = run_messages(settings)
    mark = _PROGRESS + what
    left = st.session_state.pop(mark, None)
    set_back = left is not None and left[0] == (dataset_key, conv_id, settings) and job.added < left[1]
    if set_back:
        share = job.total  # set back (evicted, made anew): this run ends it, so every replay ends
    bar = st.empty()
    if job.total - job.added > run_messages(settings):
        # drawn before the slice: the browser gets it while the slice runs (a rerun's first
        # messages replace anything still queued from the run before)
        bar.progress(job.added / job.total, text=bar_text(job.added, job.total, what))
    if job.advance(share):
        bar.empty()
        job.result()
        if own_run and not set_back:
            st.session_state[mark] = ((dataset_key, conv_id, settings), job.total)
            rerun_keeping_link_fixes()
        return
    st.session_state[mark] = ((dataset_key, conv_id, settings), job.added)
    bar.progress(job.added / job.total, text=bar_text(job.added, job.total, what))
    rerun_keeping_link_fixes()
