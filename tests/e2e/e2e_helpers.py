"""Helpers for the real-browser tests: serve the dashboard, wait for a Streamlit run, read metrics,
take screenshots."""

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
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
# Same cache tests/conftest.py points tiktoken at (no network: the BPE files are on disk).
TIKTOKEN_CACHE = ROOT.parent / "shared" / "real_data" / "tokenizers" / "tiktoken_cache"
HEALTH_TIMEOUT_S = 60

#: A common laptop window (the width a real-browser review of the dashboard used).
VIEWPORT = {"width": 1280, "height": 900}
#: Bounded waits in the browser (ms).
RUN_TIMEOUT_MS = 45_000
CHART_TIMEOUT_MS = 20_000

APP = '[data-testid="stApp"]'
CHARTS = '.js-plotly-plot, [data-testid="stPlotlyChart"]'
EXCEPTION = '[data-testid="stException"]'


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve_dashboard(log_path: Path) -> Iterator[str]:
    """The README's server, `python -m convmem_dashboard` (`streamlit run dashboard.py` with the
    pages' heavy modules imported first), headless on a free 127.0.0.1 port, with this venv's python;
    yields its base URL once ``/_stcore/health`` answers ``ok`` (bounded: fails the test with the
    log's tail), and kills the process group on exit. Every call starts a fresh server (a cold
    one: nothing imported or cached yet)."""
    port = _free_port()
    env = dict(os.environ)
    if TIKTOKEN_CACHE.is_dir():
        env.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))
    env["PYTHONUNBUFFERED"] = "1"
    cmd = [
        sys.executable, "-m", "convmem_dashboard",
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

def wait_for_app(page, *, charts: int = 0, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Wait until the script has run to its end and (optionally) ``charts`` plotly charts are drawn.

    Streamlit marks the app root with ``data-test-script-state`` (initial → running →
    notRunning) and the connection with ``data-test-connection-state``. After the run ends the
    frontend may still be loading element code (skeletons, ``stSkeleton``), and a rerun triggered
    by an interaction may not have started yet when this is called, so the page must look idle
    (notRunning, no "Running" status, no spinner, no skeleton, no stale element) twice, 200 ms
    apart.
    """
    page.wait_for_selector(APP, state="attached", timeout=timeout_ms)
    page.wait_for_selector(f'{APP}[data-test-connection-state="CONNECTED"]', timeout=timeout_ms)
    deadline = time.monotonic() + timeout_ms / 1000
    calm = 0
    while calm < 2:
        if time.monotonic() > deadline:
            state = page.get_attribute(APP, "data-test-script-state")
            raise AssertionError(f"Streamlit still running after {timeout_ms} ms (script state {state!r})")
        idle = page.evaluate(
            """() => {
                const app = document.querySelector('[data-testid="stApp"]');
                if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
                const status = document.querySelector('[data-testid="stStatusWidget"]');
                if (status && /running/i.test(status.innerText)) return false;
                if (document.querySelector('[data-testid="stSpinner"]')) return false;
                // elements whose code chunk is still loading render as skeletons after the run
                if (document.querySelector('[data-testid="stSkeleton"]')) return false;
                if (document.querySelector('[data-stale="true"]')) return false;
                return true;
            }"""
        )
        calm = calm + 1 if idle else 0
        page.wait_for_timeout(200)
    if charts:
        page.wait_for_function(
            "n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n",
            arg=charts,
            timeout=CHART_TIMEOUT_MS,
        )


def metric_values(page) -> list[str]:
    return [t.strip() for t in page.locator('[data-testid="stMetricValue"]').all_inner_texts()]


def assert_no_exception(page) -> None:
    n = page.locator(EXCEPTION).count()
    if n:
        text = page.locator(EXCEPTION).first.inner_text()
        raise AssertionError(f"{n} stException element(s) on {page.url}:\n{text[:2000]}")


def screenshot(page, directory: Path, name: str) -> Path:
    """A screenshot of the whole page, including the part of the main area below the fold.

    Streamlit scrolls its main area inside a container, so Playwright's ``full_page`` sees only
    the viewport; the viewport is made as tall as the content for the shot, then put back.
    """
    path = directory / f"{name}.png"
    height = page.evaluate(
        """() => {
            const els = [document.documentElement, document.body,
                         document.querySelector('[data-testid="stMain"]'),
                         document.querySelector('[data-testid="stAppViewContainer"]'),
                         document.querySelector('[data-testid="stMainBlockContainer"]')];
            return Math.max(...els.filter(Boolean).map(e => e.scrollHeight));
        }"""
    )
    size = page.viewport_size or VIEWPORT
    tall = max(size["height"], min(int(height) + 40, 16_000))
    page.set_viewport_size({"width": size["width"], "height": tall})
    try:
        page.wait_for_timeout(300)  # let plotly relayout after the resize
        page.screenshot(path=str(path), full_page=True)
    finally:
        page.set_viewport_size(size)
    return path


DATAFRAMES_JS = """() => Array.from(document.querySelectorAll('[data-testid="stDataFrame"]')).map(el => {
    const scroller = el.querySelector('.dvn-scroller');
    return {
        // the grid's accessible DOM lists only the columns drawn in view (the last may be cut)
        heads: Array.from(el.querySelectorAll('[role="columnheader"]')).map(h => h.innerText.trim()),
        cells: Array.from(el.querySelectorAll('[role="gridcell"]')).map(c => c.innerText.trim()),
        fits: !scroller || scroller.scrollWidth <= scroller.clientWidth + 1,
        height: el.clientHeight,
    };
})"""


def dataframe(page, first_header: str, *, second: str | None = None) -> dict:
    """The st.dataframe whose first column header is ``first_header`` (and second ``second``,
    when two tables start alike): its headers in view, visible cell texts, whether it fits its
    width without scrolling, and its height (px)."""
    heads = [first_header] if second is None else [first_header, second]
    # The grids draw (and fill their accessible DOM) a moment after the run ends, each in its own
    # time: wait, bounded, for this one (another table with the same first header may draw first).
    try:
        page.wait_for_function(
            f"hs => ({DATAFRAMES_JS})().some(t => hs.every((h, i) => t.heads[i] === h))", arg=heads,
            timeout=CHART_TIMEOUT_MS,
        )
    except Exception:  # noqa: BLE001 - reported below with what is on the page
        pass
    tables = [t for t in page.evaluate(DATAFRAMES_JS) if t["heads"][: len(heads)] == heads]
    assert tables, (
        f"no table whose first columns are {heads!r} on {page.url}: "
        f"{[t['heads'][:3] for t in page.evaluate(DATAFRAMES_JS)]}"
    )
    return tables[0]


def assert_columns_in_view(page, first_header: str, columns: list[str]) -> None:
    """Every one of ``columns`` is drawn whole in the table's view (no horizontal scrolling needed
    to read it): a table that scrolls may cut its last drawn column, so that one does not count."""
    table = dataframe(page, first_header)
    whole = table["heads"] if table["fits"] else table["heads"][:-1]
    missing = [c for c in columns if c not in whole]
    assert not missing, f"{missing} cut off or out of view in the {first_header!r} table on {page.url}: {table['heads']}"


TEXT_CUT_JS = """e => {
    const p = e.matches('p') ? e : (e.querySelector('p') || e);
    const room = p.parentElement.getBoundingClientRect().width;
    const range = document.createRange();
    range.selectNodeContents(p);
    return range.getBoundingClientRect().width > room + 1;
}"""


def text_is_cut(locator) -> bool:
    """Whether a label's text is wider than the box that shows it (Streamlit cuts it with "…")."""
    return locator.evaluate(TEXT_CUT_JS)


# An init script (``context.add_init_script(RECORD_PROGRESS_JS % json.dumps(question))``): it runs
# before Streamlit's own code in the page and records in ``window.__progress`` every visible
# progress indicator's text, in the order first seen, with whether ``question`` was visible then,
# and in ``window.__silent`` the longest time (seconds) the script ran with the screen frozen: no
# DOM change at all and no progress indicator visible (a blank wait, whatever its cause).
# Recorded in the browser: no race with the test process over a transient element.
RECORD_PROGRESS_JS = """
(() => {
  const question = %s;
  const seen = [];
  window.__progress = seen;
  const visible = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  window.__silent = 0;
  let lastChange = performance.now();
  function check() {
    const shown = Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"]'))
      .some(el => el.innerText.includes(question) && visible(el));
    let indicator = false;
    for (const el of document.querySelectorAll(
        '[data-testid="stSpinner"], [data-testid="stProgress"], [data-testid="stExpanderIconSpinner"]')) {
      if (!visible(el)) continue;
      indicator = true;
      // a spinner's text carries its elapsed time ("... (1.2 seconds)"): keep the words only
      const text = el.innerText.replace(/\\s*\\([\\d.]+ seconds?\\)\\s*$/, '').trim();
      if (text && !seen.some(s => s.text === text)) seen.push({text, questionShown: shown});
    }
    const app = document.querySelector('[data-testid="stApp"]');
    const running = app && app.getAttribute('data-test-script-state') === 'running';
    const now = performance.now();
    if (!running || indicator) lastChange = now;
    window.__silent = Math.max(window.__silent, (now - lastChange) / 1000);
  }
  new MutationObserver(() => { lastChange = performance.now(); check(); })
    .observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
  setInterval(check, 50);
})();
"""


#: Every metric's value and label: whether its text is wider than the box that shows it.
METRICS_CUT_JS = """() => Array.from(document.querySelectorAll('[data-testid="stMetric"]')).map(m => {
    const cut = el => {
        if (!el) return false;
        const p = el.querySelector('p, div') || el;
        const range = document.createRange();
        range.selectNodeContents(el);
        const text = range.getBoundingClientRect().width;
        return text > el.getBoundingClientRect().width + 1 || el.scrollWidth > el.clientWidth + 1
            || (p !== el && p.scrollWidth > p.clientWidth + 1);
    };
    const value = m.querySelector('[data-testid="stMetricValue"]');
    const label = m.querySelector('[data-testid="stMetricLabel"]');
    return {label: label ? label.innerText.trim() : '', value: value ? value.innerText.trim() : '',
            cut: cut(value) || cut(label)};
})"""


def cut_metrics(page) -> list[dict]:
    """The metrics whose value or label text is wider than its box (issue 10 item 4: no metric
    cut off): ``[{label, value, cut}]`` of those cut."""
    return [m for m in page.evaluate(METRICS_CUT_JS) if m["cut"]]


def dataset_line(page) -> str:
    """The "Dataset: <name>" line of Home's or Your data's "Data in use" section (a line of
    Markdown that wraps, not a metric: issue 10 item 4)."""
    line = page.locator('[data-testid="stMarkdown"]').filter(has_text="Dataset:").first
    return line.inner_text(timeout=10_000).strip()
