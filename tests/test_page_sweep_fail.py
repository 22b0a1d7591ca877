"""A limit of the sweep that convmem.replay refuses (break20): the fill must not retry it forever.

Some conversations replay at some limits and not others (a message id equal to the summary id in
place at that limit: History.add raises, see tests/test_summary_log.py); the limit sweep then meets
the error in a follow-up (fragment) run. The page must show it and stop filling (no fragment left
whose run_every timer replays the failing limit again every FILL_EVERY seconds).
"""

from __future__ import annotations

from convmem_dashboard import cache_budget as cb
from test_page_sweep_fill import bar_texts, follow_up_run, open_sweep


def test_a_limit_replay_refuses_stops_the_fill_and_is_shown(monkeypatch):
    for f in (cb.get_limit_run, cb.get_limit_stats, cb.get_limit_cost):
        f.clear()
    real = cb.limit_run
    calls = []

    def refusing(messages, settings):
        calls.append(settings.limit)
        if len(calls) == 6:  # the first limit of the first follow-up run (a full run computes 5)
            raise ValueError("History.add message id 'summary-1' is already the id of the summary in place")
        return real(messages, settings)

    monkeypatch.setattr(cb, "limit_run", refusing)
    at = open_sweep()
    assert len(calls) == 5 and bar_texts(at)
    failing = None
    for _ in range(3):
        at = follow_up_run(at, monkeypatch)
        failing = failing or calls[5]
        if not at._fragment_storage._fragments:
            break
    assert calls.count(failing) == 1  # replayed once, not again on every timer tick
    assert not at._fragment_storage._fragments  # no timer left to fire
    shown = [e.value for e in at.error] + [e.value.message for e in at.exception]
    assert any("summary in place" in str(v) for v in shown), shown
    assert not bar_texts(at)  # no "Sweeping limits: k of N" bar: nothing fills in any more
    assert any(str(e.value).startswith("The limit sweep stopped at 5 of 20 limits") for e in at.error)
    at.run()  # a full run with the same settings: still stopped, the failing limit not replayed
    assert calls.count(failing) == 1 and not at._fragment_storage._fragments and at.error
    at.toggle(key="pin_sys").set_value(True).run()  # new settings: a new fill
    assert bar_texts(at) and not at.error


def test_a_clearing_pair_replay_refuses_stops_the_clearing_fill_and_is_shown(monkeypatch):
    """The same for clearing's (trigger, keep) sweep, which fills after the limits: the first pair
    a follow-up run replays raises."""
    from test_page_sweep_fill import clearing_bar_texts

    for f in (cb.get_limit_run, cb.get_limit_stats, cb.get_limit_cost):
        f.clear()
    real = cb.limit_run
    calls, armed, failed = [], [], []

    def refusing(messages, settings):
        calls.append(settings)
        if armed and not failed:
            failed.append(settings)
            raise ValueError("History.add message id 'summary-1' is already the id of the summary in place")
        return real(messages, settings)

    monkeypatch.setattr(cb, "limit_run", refusing)
    at = open_sweep({"clr": "true"})
    for _ in range(8):  # full runs: the limits 5 at a time, then the pairs the last one's budget left
        if clearing_bar_texts(at):
            break
        at.run()
    assert clearing_bar_texts(at)
    armed.append(True)
    for _ in range(4):
        at = follow_up_run(at, monkeypatch)
        if not at._fragment_storage._fragments:
            break
    assert len(failed) == 1 and calls.count(failed[0]) == 1  # replayed once, not on every timer tick
    assert not at._fragment_storage._fragments and not clearing_bar_texts(at)
    assert any(str(e.value).startswith("Clearing's sweep stopped at") and "summary in place" in str(e.value)
               for e in at.error), [e.value for e in at.error]
    at.run()  # the same settings: still stopped, the failing pair not replayed again
    assert calls.count(failed[0]) == 1 and at.error and not clearing_bar_texts(at)
