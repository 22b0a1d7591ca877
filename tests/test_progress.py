"""StepProgress (convmem_dashboard.progress): a bar only for slow work, moved per step, removed at
the end. A fake clock and a recording placeholder: no Streamlit run, no sleeping."""

from __future__ import annotations

import pytest

from convmem_dashboard.progress import SHOW_AFTER, StepProgress


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Placeholder:
    """Records what st.empty() would show: ('progress', value, text) calls, then ('empty',)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def progress(self, value: float, text: str = "") -> Placeholder:
        self.calls.append(("progress", value, text))
        return self  # the bar: st.progress returns the element, and .progress moves it

    def empty(self) -> None:
        self.calls.append(("empty",))


def test_fast_work_draws_nothing():
    clock, place = Clock(), Placeholder()
    with StepProgress(3, "Sweeping", placeholder=place, clock=clock) as p:
        for k in (1, 2, 3):
            clock.now += SHOW_AFTER / 4
            p.done(k)
        assert not p.shown
    assert place.calls == []


def test_slow_work_draws_the_bar_after_the_threshold_moves_it_and_removes_it():
    clock, place = Clock(), Placeholder()
    with StepProgress(4, "Sweeping limits", placeholder=place, clock=clock, show_after=0.3) as p:
        clock.now += 0.2
        p.done(1, "limit 1,000 tokens")  # under the threshold: nothing yet
        assert place.calls == [] and not p.shown
        clock.now += 0.2
        p.done(2, "limit 2,000 tokens")
        assert p.shown
        p.done(3)
        p.done(4, "limit 4,000 tokens")
    assert place.calls == [
        ("progress", 0.5, "Sweeping limits: 2 of 4 (limit 2,000 tokens)"),
        ("progress", 0.75, "Sweeping limits: 3 of 4"),
        ("progress", 1.0, "Sweeping limits: 4 of 4 (limit 4,000 tokens)"),
        ("empty",),
    ]
    assert not p.shown


def test_the_threshold_counts_from_creation_and_a_bar_once_shown_stays_until_closed():
    clock, place = Clock(), Placeholder()
    p = StepProgress(1_000, "Work", placeholder=place, clock=clock, show_after=1.0)
    clock.now += 1.0  # exactly the threshold: shown
    p.done(1)
    clock.now += 0.0
    p.done(1_000)
    assert [c[:2] for c in place.calls] == [("progress", 0.001), ("progress", 1.0)]
    assert place.calls[0][2] == "Work: 1 of 1,000"
    p.close()
    p.close()  # twice: removed once
    assert place.calls[-1] == ("empty",) and place.calls.count(("empty",)) == 1


def test_the_bar_is_removed_when_the_work_raises():
    clock, place = Clock(), Placeholder()
    with pytest.raises(RuntimeError):
        with StepProgress(2, "Work", placeholder=place, clock=clock, show_after=0.0) as p:
            p.done(1)
            raise RuntimeError("replay failed")
    assert place.calls == [("progress", 0.5, "Work: 1 of 2"), ("empty",)]


def test_no_steps_and_bad_totals():
    clock, place = Clock(), Placeholder()
    p = StepProgress(0, "Nothing", placeholder=place, clock=clock, show_after=0.0)
    p.done(0)
    assert place.calls == [("progress", 1.0, "Nothing: 0 of 0")]
    with pytest.raises(ValueError, match="total must be >= 0"):
        StepProgress(-1, "Bad", placeholder=place, clock=clock)
