"""Real-browser fixtures: `streamlit run dashboard.py` on a free localhost port, Debian's Chromium.

* ``streamlit_url`` (session): starts the dashboard headless with this venv's python, waits for
  ``/_stcore/health`` to answer ``ok`` (bounded), and kills the process group at teardown
  (e2e_helpers.serve_dashboard, which a test needing a server of its own uses too).
* ``browser`` (session): Playwright's sync API driving ``/usr/bin/chromium`` (browser downloads do
  not work here, so Playwright's own Chromium is never used). Skips with a reason when Chromium or
  Playwright is missing.
* ``page`` (per test): a fresh browser context, so a fresh Streamlit session per test.
Helpers (waiting for a run, metrics, screenshots) are in e2e_helpers.py.

Screenshots go to tests/e2e/screenshots/ (git-ignored); look at them after a run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import CHROMIUM, RUN_TIMEOUT_MS, VIEWPORT, serve_dashboard

SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # Without these Chromium keeps calling home on a closed network (and slows every test).
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _skip_reason() -> str | None:
    if not CHROMIUM.is_file():
        return f"Debian's Chromium not found at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        return f"playwright is not importable ({exc}); pip install -r requirements-dev.txt"
    return None


@pytest.fixture(scope="session")
def e2e_available() -> None:
    """Skip every e2e test, with the reason, when the browser side is missing."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def streamlit_url(e2e_available, tmp_path_factory) -> Iterator[str]:
    """Base URL of `streamlit run dashboard.py` served headless on a free 127.0.0.1 port."""
    with serve_dashboard(tmp_path_factory.mktemp("streamlit") / "streamlit.log") as base:
        yield base


@pytest.fixture(scope="session")
def browser(e2e_available) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def page(browser, streamlit_url) -> Iterator[object]:
    """A fresh context (new Streamlit session) per test; console errors are collected."""
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    context.set_default_timeout(RUN_TIMEOUT_MS)
    pg = context.new_page()
    pg.console_errors = []  # type: ignore[attr-defined]
    pg.on("pageerror", lambda exc: pg.console_errors.append(str(exc)))
    try:
        yield pg
    finally:
        context.close()
