"""Real-browser fixtures: `streamlit run dashboard.py` on a free localhost port, Debian's Chromium.

* ``streamlit_url`` (session): starts the dashboard headless with this venv's python, waits for
  ``/_stcore/health`` to answer ``ok`` (bounded), and kills the process group at teardown.
* ``browser`` (session): Playwright's sync API driving ``/usr/bin/chromium`` (browser downloads do
  not work here, so Playwright's own Chromium is never used). Skips with a reason when Chromium or
  Playwright is missing.
* ``page`` (per test): a fresh browser context, so a fresh Streamlit session per test.
Helpers (waiting for a run, metrics, screenshots) are in e2e_helpers.py.

Screenshots go to tests/e2e/screenshots/ (git-ignored); look at them after a run.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import RUN_TIMEOUT_MS, VIEWPORT

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
# Same cache tests/conftest.py points tiktoken at (no network: the BPE files are on disk).
TIKTOKEN_CACHE = ROOT.parent / "shared" / "real_data" / "tokenizers" / "tiktoken_cache"

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
HEALTH_TIMEOUT_S = 60


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    port = _free_port()
    log_path = tmp_path_factory.mktemp("streamlit") / "streamlit.log"
    env = dict(os.environ)
    if TIKTOKEN_CACHE.is_dir():
        env.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))
    env["PYTHONUNBUFFERED"] = "1"
    cmd = [
        sys.executable, "-m", "streamlit", "run", "dashboard.py",
        "--server.headless", "true",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false",
        # Pages may be edited while the suite runs: never show "source changed, rerun?" mid-test.
        "--server.fileWatcherType", "none",
    ]
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"

    def _log_tail() -> str:
        log.flush()
        return log_path.read_text(errors="replace")[-3000:]

    try:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode} before answering:\n{_log_tail()}")
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as resp:
                    if resp.status == 200 and resp.read().strip() == b"ok":
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit did not answer /_stcore/health within {HEALTH_TIMEOUT_S} s:\n{_log_tail()}")
            time.sleep(0.25)
        yield base
    finally:
        _kill_group(proc)
        log.close()


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group, then SIGKILL it if it lingers."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


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
