"""Shared fixtures: the path of ../shared/real_data, the offline tokenizer cache, and the
hypothesis profiles.

Hypothesis profiles (pick one with ``HYPOTHESIS_PROFILE=<name>``; README "Tests"):

* ``ci`` (the default): ``derandomize=True``, so every run draws the same examples (a fixed seed
  per test: CI never flips on a new random draw), no deadline, no example database.
* ``dev``: random draws, examples saved in .hypothesis/ to replay a failure.
* ``release``: random draws and every property test runs ``RELEASE_FACTOR`` times its own
  ``max_examples`` (the History, generated-store and importer fuzzers included): run it before a
  release, e.g. ``HYPOTHESIS_PROFILE=release .venv/bin/python -m pytest -m "not e2e" -p no:cacheprovider``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

#: How many times its own max_examples each property test runs under the release profile.
RELEASE_FACTOR = 20

settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.register_profile(
    "release", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def pytest_collection_modifyitems(config, items):
    """Under the release profile, scale each property test's own max_examples by RELEASE_FACTOR
    (tests pin their max_examples with @settings, which a profile alone cannot raise)."""
    if PROFILE != "release":
        return
    for item in items:
        test = getattr(item, "obj", None)
        current = getattr(test, "_hypothesis_internal_use_settings", None)  # hypothesis's own slot
        if current is not None:
            test._hypothesis_internal_use_settings = settings(
                current, max_examples=current.max_examples * RELEASE_FACTOR
            )

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
REAL_DATA = SHARED / "real_data"
TAU_RETAIL_FILE = (
    REAL_DATA
    / "tau-bench/retail/trajectories/tool-calling-grok-3-0.0_range_0--1_user-grok-3-llm_0921131646.json"
)
TIKTOKEN_CACHE = REAL_DATA / "tokenizers" / "tiktoken_cache"

# tiktoken reads its BPE files from here, with no network (SPEC tests; real_data/README.md).
if TIKTOKEN_CACHE.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))


@pytest.fixture(scope="session")
def tau_retail_file() -> Path:
    """The real tau-bench retail run file; skips when ../shared/real_data is absent."""
    if not TAU_RETAIL_FILE.is_file():
        pytest.skip(f"real retail data not found at {TAU_RETAIL_FILE} (needs ../shared/real_data)")
    return TAU_RETAIL_FILE


@pytest.fixture
def script_runs(monkeypatch):
    """One entry per script run while the test runs: AppTest runs the reruns a page asks for
    (``st.rerun()``: a dataset's load, replay slices) inside one ``at.run()``, each through
    Streamlit's ``exec_func_with_error_handling``. Tests clear the list before the run they count."""
    from streamlit.runtime.scriptrunner import script_runner

    runs: list[int] = []
    real = script_runner.exec_func_with_error_handling

    def counted(func, ctx):
        runs.append(1)
        return real(func, ctx)

    monkeypatch.setattr(script_runner, "exec_func_with_error_handling", counted)
    return runs
