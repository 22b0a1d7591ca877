"""convmem_dashboard.gc_tuning: the server's generation-0 GC threshold."""

from __future__ import annotations

import gc

import pytest

from convmem_dashboard.gc_tuning import GEN0_THRESHOLD, tune_gc


@pytest.fixture
def saved_thresholds():
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_raises_gen0_and_keeps_the_older_generations(saved_thresholds):
    gc.set_threshold(700, 11, 13)
    assert tune_gc() == GEN0_THRESHOLD
    assert gc.get_threshold() == (GEN0_THRESHOLD, 11, 13)
    assert tune_gc() == GEN0_THRESHOLD  # idempotent


def test_never_lowers_an_operators_larger_threshold(saved_thresholds):
    gc.set_threshold(GEN0_THRESHOLD * 3, 10, 10)
    assert tune_gc() == GEN0_THRESHOLD * 3
    assert gc.get_threshold() == (GEN0_THRESHOLD * 3, 10, 10)


def test_the_entry_script_tunes_the_server(saved_thresholds):
    from apptest_support import dashboard_app

    gc.set_threshold(700, 10, 10)
    at = dashboard_app()
    at.run()
    assert not at.exception
    assert gc.get_threshold()[0] == GEN0_THRESHOLD
