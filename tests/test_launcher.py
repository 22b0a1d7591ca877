"""python -m convmem_dashboard (convmem_dashboard/__main__.py): what the server imports before it
listens, so that a cold first view imports nothing (issue 10 item 3)."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

import convmem_dashboard.__main__ as launcher
from convmem_dashboard.warmup import HEAVY_MODULES

ROOT = Path(__file__).resolve().parent.parent


def test_dashboard_modules_are_warm_ups_then_the_entry_then_each_page_in_name_order_once(tmp_path):
    (tmp_path / "b_page.py").write_text("import json\nfrom convmem_dashboard import data\nimport os.path\n")
    (tmp_path / "a_page.py").write_text("import streamlit as st\nimport json\nfrom convmem import FormatError\n")
    (tmp_path / "notes.txt").write_text("import nothing")
    entry = tmp_path / "entry.py"
    entry.write_text("import streamlit as st\nfrom convmem_dashboard.questions import QUESTIONS\n")
    names = launcher.dashboard_modules(tmp_path, entry)
    assert names == (*HEAVY_MODULES, "streamlit", "convmem_dashboard.questions", "json", "convmem",
                     "convmem_dashboard", "os.path")


def test_dashboard_modules_of_the_real_dashboard():
    names = launcher.dashboard_modules()
    assert len(names) == len(set(names))
    assert names[: len(HEAVY_MODULES)] == HEAVY_MODULES
    # dashboard.py's own, Home's and another page's modules
    assert {"convmem_dashboard.gc_tuning", "convmem_dashboard.warmup", "convmem_dashboard.url_params",
            "convmem_dashboard.view_home", "convmem_dashboard.db_panel", "convmem_dashboard.selection",
            "convmem_dashboard.cache_budget", "convmem_dashboard.figures_store"} <= set(names)


def test_streamlit_first_run_modules_are_all_in_the_pinned_streamlit():
    assert launcher.streamlit_first_run() == launcher.STREAMLIT_FIRST_RUN


def test_a_streamlit_without_one_of_them_still_starts(monkeypatch):
    monkeypatch.setattr(launcher, "STREAMLIT_FIRST_RUN",
                        ("streamlit.no_such_module", "streamlit.emojis", "streamlit.no_such_package.module"))
    assert launcher.streamlit_first_run() == ("streamlit.emojis",)


def test_the_cache_warning_is_muted_inside_the_block_only():
    logger = logging.getLogger(launcher._CACHE_DATA_LOGGER)
    before = logger.level
    with pytest.raises(RuntimeError):
        with launcher._cache_params_warnings_muted():
            assert not logger.isEnabledFor(logging.WARNING) and logger.isEnabledFor(logging.ERROR)
            raise RuntimeError("an import failed")
    assert logger.level == before


PRELOADED = """
import sys
import convmem_dashboard.__main__ as launcher
from convmem_dashboard.warmup import HEAVY_MODULES, missing_modules, page_modules
fresh = [m for m in ("convmem_dashboard.view_home", "streamlit.emojis") if m in sys.modules]
launcher.preload()
missing = [missing_modules((*HEAVY_MODULES, *page_modules(p))) for p in
           (launcher.DASHBOARD, *sorted(launcher.PAGES_DIR.glob("*.py")))]
from convmem.tokens import default_counter
print(fresh, missing, [m for m in launcher.STREAMLIT_FIRST_RUN if m not in sys.modules],
      default_counter.cache_info().currsize)
"""


def test_after_the_preload_no_page_imports_anything_and_nothing_warned():
    """In a new process (this one imported everything already): before the preload neither Home's
    view module nor the emoji catalog is in; after it, warm_up finds nothing missing for
    dashboard.py or any page (it draws no spinner), and no cache warning went to the console."""
    done = subprocess.run([sys.executable, "-c", PRELOADED], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] [[], [], [], [], [], []] [] 1"  # the token counter built too
    assert "No runtime found" not in done.stderr and "WARNING" not in done.stderr, done.stderr


def test_a_missing_encoding_does_not_stop_the_server(monkeypatch):
    from convmem import tokens

    def unavailable():
        raise tokens.EncodingUnavailableError("no cl100k_base file")

    monkeypatch.setattr(tokens, "default_counter", unavailable)
    assert launcher.warm_default_counter() is False
