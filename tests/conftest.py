"""Shared fixtures: the path of ../shared/real_data and the offline tokenizer cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
