"""Cold first view of each dashboard page in a real browser (Debian's Chromium, Playwright).

    .venv/bin/python benchmarks/bench_cold.py [--repeat 3] [--data sample] [--pages home,token_budget]
                                              [--shots DIR] [--shot-at 1,3,5] [--before ../main] [--floor]
                                              [--http-cache cold|warm]

For every repeat and every page (home, your_data, token_budget, flaky_store, listing_eviction,
agent_session), a fresh ``streamlit run dashboard.py`` server (headless, a free 127.0.0.1 port,
the flags the e2e tests use) is started, and the page is opened with ``?data=<key>``:

- cold: the first view after the server answered ``/_stcore/health`` (the page's script imports
  convmem and the dashboard's modules, the dataset is loaded for the first time), ``--settle``
  seconds after it (default 0: at once; a real first visitor comes later, when the server's
  start-up work and the previous round's are over);
- warm: a second browser context (a new Streamlit session) opening the same URL on the same server
  (modules imported, caches warm).

For each view, times in seconds from the start of the navigation (the browser's
``performance.now()``, so Python's polling adds nothing):

- question: the page's first sentence (its question, convmem_dashboard.questions) is visible;
- metric: the first st.metric value is visible ("-" when the page has none in its first view);
- run done: the last time Streamlit's app root turned ``data-test-script-state="notRunning"``;
- script: run done minus the first time it turned ``running`` (the server's work for the view,
  with the websocket's transfer; the frontend's own load before it is left out);
- settled: the last time the page became idle (run done, and no spinner, no "Running" status,
  no skeleton placeholder, no stale element), confirmed by 1 s without a change;
- skeleton: how long grey skeleton placeholders were on screen (s), and whether a progress
  indicator (spinner text, st.status, st.progress) was seen while the page worked.

The server start (process start to ``/_stcore/health`` answering) is printed too. The baseline is
a one-line Streamlit script (a title, a bold sentence, a metric) served and viewed the same way in
the same process, so every figure is also a ratio against it: the machine's load and the browser's
own cost of loading Streamlit's frontend cancel out. Each figure is the median of --repeat runs.
Nothing here asserts; the load average (``os.getloadavg``) is printed before and after.

``--floor`` also measures Home's floor: a script without convmem that draws the element kinds of
Home's first view (sidebar page list and selectbox, title, markdown, four page links, nine
metrics, a form with a text input and a submit button, a button, a selectbox, a dataframe, a text
input, a file uploader) with constant values, served with everything the launcher preloads. Its
time after the websocket's first message is what Streamlit's frontend takes to fetch and draw
those element kinds (each kind's code is a chunk the browser loads when the kind first shows).

``--shots DIR`` saves viewport screenshots of every cold view ``--shot-at`` seconds after the
navigation started (issue 10 item 3: a cold-opened link shows progress, never blank placeholders)
and one when it settled; taking them costs some time, so figures of such a run are not comparable.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from convmem_dashboard.questions import QUESTIONS  # noqa: E402  (plain module: no streamlit)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [  # as tests/e2e/conftest.py
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 900}
TIKTOKEN_CACHE = ROOT.parent / "shared" / "real_data" / "tokenizers" / "tiktoken_cache"
HEALTH_TIMEOUT_S = 90
VIEW_TIMEOUT_S = 300
#: The page is taken as settled once it stayed idle this long (s).
CALM_S = 1.0

#: (name, URL path, the first sentence to wait for)
PAGES = (
    ("home", "/", QUESTIONS["home"]),
    ("your_data", "/your_data", QUESTIONS["your_data"]),
    ("token_budget", "/token_budget", QUESTIONS["token_budget"]),
    ("flaky_store", "/flaky_store", QUESTIONS["flaky_store"]),
    ("listing_eviction", "/listing_eviction", QUESTIONS["listing_eviction"]),
    ("agent_session", "/agent_session", QUESTIONS["agent_session"]),
)
BASELINE_QUESTION = "Is this the baseline page, served and viewed like every other page?"
BASELINE_SCRIPT = f'''import streamlit as st

st.title("Baseline")
st.markdown("**{BASELINE_QUESTION}**")
st.metric("Messages", "1")
'''

FLOOR_QUESTION = "Is this the floor page, with the element kinds of Home's first view?"
FLOOR_SCRIPT = f'''import pandas as pd
import streamlit as st

st.set_page_config(page_title="floor", page_icon="\N{BRAIN}", layout="wide")


def home():
    st.title("Floor: Home's element kinds")
    st.markdown("**{FLOOR_QUESTION}**")
    st.markdown("A paragraph as long as Home's introduction. " * 6)
    for col, page in zip(st.columns(4), PAGES[1:]):
        col.page_link(page, label=page.title, icon=":material/home:")
        col.caption("The question this page answers, as Home's links show it. " * 2)
    st.subheader("Data in use")
    st.metric("Dataset", "Sample shoppers (bundled)")
    for col in st.columns(4):
        col.metric("Conversations", "1,234", help="how many")
    st.caption("Source: a bundled file.")
    st.subheader("Open your agent's database")
    with st.form("db_form", clear_on_submit=True, border=False):
        st.text_input("Database URL", key="db_url")
        st.form_submit_button("Open the database", icon=":material/database:")
    st.columns(2)[0].button("Open the bundled SQLite sample")
    st.subheader("Conversation in use")
    st.selectbox("Conversation", [f"conversation {{i}}" for i in range(40)], help="pick one")
    st.markdown("**shopper** · 12 messages")
    for col in st.columns(4):
        col.metric("Messages", "12", help="how many")
    st.dataframe(pd.DataFrame({{"role": ["user", "assistant", "tool"], "messages": [4, 5, 3],
                               "tokens": [1200, 3400, 560]}}), hide_index=True, width="content")
    st.caption("A caption.")
    st.subheader("Use your own conversations")
    st.text_input("Messages path", key="messages_path", help="where the messages are")
    st.file_uploader("Upload a conversation file", type=["json", "jsonl", "csv"], help="formats")


PAGES = [st.Page(home, title="Home", icon=":material/home:", default=True),
         *(st.Page(st.empty, title=title, icon=":material/home:", url_path=title.lower().replace(" ", "_"))
           for title in ("Flaky store", "Token budget", "Listing eviction", "Agent session"))]
page = st.navigation(PAGES)
st.sidebar.selectbox("Data in use", ["sample", "sample-db", "synthetic-1000"], help="the data")
st.sidebar.caption("Sample: 40 conversations")
page.run()
'''
#: Serves the floor script (sys.argv[1]) after importing what the launcher preloads, minus the
#: dashboard's own modules (python -m convmem_dashboard serves only dashboard.py).
FLOOR_LAUNCHER = f"""import importlib, sys
sys.path.insert(0, {str(ROOT)!r})
import convmem_dashboard.__main__ as launcher
for name in (*launcher.PRELOAD, *launcher.streamlit_first_run()):
    importlib.import_module(name)
from streamlit.web import cli
cli.main(args=["run", *sys.argv[1:]], prog_name="streamlit")
"""

# Runs in every document before Streamlit's own code: marks (performance.now(), ms since the
# navigation started) taken on the next animation frame after any DOM change.
MARKS_JS = """
(() => {
  const needle = %s;
  const m = {question: null, metric: null, runStart: null, runDone: null, idleSince: null, lastChange: 0,
             skeletonFirst: null, skeletonLast: null, progressFirst: null, progressTexts: [],
             running: false};
  window.__cold = m;
  const visible = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  let queued = false;
  function check() {
    queued = false;
    const now = performance.now();
    m.lastChange = now;
    if (m.question === null) {
      for (const el of document.querySelectorAll('[data-testid="stMarkdownContainer"]')) {
        if (el.innerText.includes(needle) && visible(el)) { m.question = now; break; }
      }
    }
    if (m.metric === null) {
      const el = document.querySelector('[data-testid="stMetricValue"]');
      if (el && visible(el) && el.innerText.trim()) m.metric = now;
    }
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app ? app.getAttribute('data-test-script-state') : null;
    if (state === 'running') { m.running = true; m.runDone = null; if (m.runStart === null) m.runStart = now; }
    // a run so short that no frame saw 'running' (the baseline app, a quiet machine): its
    // elements are drawn and the app is idle, so it ran (it waited 300 s for a 'running' once)
    if (state === 'notRunning' && !m.running && m.question !== null) { m.running = true; if (m.runStart === null) m.runStart = now; }
    if (state === 'notRunning' && m.running && m.runDone === null) m.runDone = now;
    const skeleton = Array.from(document.querySelectorAll('[data-testid="stSkeleton"]')).some(visible);
    if (skeleton) { if (m.skeletonFirst === null) m.skeletonFirst = now; m.skeletonLast = now; }
    const progress = Array.from(document.querySelectorAll(
      '[data-testid="stSpinner"], [data-testid="stExpander"] [data-testid="stExpanderIconSpinner"], ' +
      '[data-testid="stProgress"]')).filter(visible);
    if (progress.length && m.progressFirst === null) m.progressFirst = now;
    for (const e of progress) {  // each distinct text once, without its elapsed time
      const text = e.innerText.replace(/\s+/g, ' ').replace(/\s*\([\d.]+ seconds?\)\s*$/, '').trim();
      if (text && !m.progressTexts.includes(text)) m.progressTexts.push(text);
    }
    const status = document.querySelector('[data-testid="stStatusWidget"]');
    const idle = state === 'notRunning' && m.running && !skeleton && !progress.length &&
      !(status && /running/i.test(status.innerText)) && !document.querySelector('[data-stale="true"]');
    if (!idle) m.idleSince = null; else if (m.idleSince === null) m.idleSince = now;
  }
  const schedule = () => { if (!queued) { queued = true; requestAnimationFrame(check); } };
  new MutationObserver(schedule).observe(document, {subtree: true, childList: true, attributes: true,
                                                    characterData: true});
  setInterval(schedule, 100);  // a spinner's text appears by timer, not only by mutation
})();
"""


@dataclass(frozen=True)
class View:
    """One page view's marks, in seconds since the navigation started (None: never seen)."""

    question: float | None
    metric: float | None
    run_start: float | None
    run_done: float | None
    settled: float | None
    skeleton_s: float
    progress_text: str | None

    @property
    def script(self) -> float | None:
        """Seconds from the first run starting to the last run done."""
        if self.run_start is None or self.run_done is None:
            return None
        return self.run_done - self.run_start


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``streamlit run <script>`` in ``cwd`` on a free port, as tests/e2e/conftest.py starts it
    (``python -m convmem_dashboard``, the README's command, for a tree's dashboard.py)."""

    def __init__(self, script: str, cwd: Path, port: int | None = None) -> None:
        self.port = port or _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if TIKTOKEN_CACHE.is_dir():
            env.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))
        # the README's launcher where the tree has one (the dashboard of this tree), else
        # `streamlit run` (the baseline script, an older tree given with --before)
        launcher = ["-m", "convmem_dashboard"] if script == "dashboard.py" and (cwd / "convmem_dashboard" / "__main__.py").is_file() else ["-m", "streamlit", "run", script]
        if script == "floor.py":
            launcher = ["-c", FLOOR_LAUNCHER, script]
        cmd = [
            sys.executable, *launcher,
            "--server.headless", "true",
            "--server.port", str(self.port),
            "--server.address", "127.0.0.1",
            "--browser.gatherUsageStats", "false",
            "--server.fileWatcherType", "none",
        ]
        self.log = tempfile.TemporaryFile()
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = t0 + HEALTH_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}: {self._log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base}/_stcore/health", timeout=2) as resp:
                    if resp.status == 200 and resp.read().strip() == b"ok":
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.perf_counter() > deadline:
                self.stop()
                raise RuntimeError(f"no /_stcore/health within {HEALTH_TIMEOUT_S} s")
            time.sleep(0.05)
        self.start_s = time.perf_counter() - t0

    def _log_tail(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-2000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()


def view(browser, url: str, needle: str, shot: Path | None = None, shot_at: tuple[float, ...] = (1.0,),
         profile=None) -> View:
    """Open ``url`` in a fresh context (a new Streamlit session) and read the page's marks; with
    ``profile`` (a persistent context: ``--http-cache warm``), in a new tab of it instead, whose
    HTTP cache holds what earlier views of the same origin fetched."""
    context = browser.new_context(viewport=VIEWPORT) if profile is None else None
    try:
        page = context.new_page() if profile is None else profile.new_page()
        page.add_init_script(MARKS_JS % _js_string(needle))
        page.goto(url, wait_until="commit")
        for at in shot_at if shot is not None else ():
            wait = at - page.evaluate("performance.now()") / 1000
            if wait > 0:
                page.wait_for_timeout(wait * 1000)
            page.screenshot(path=str(shot.with_name(shot.stem + f"-at{at:g}s.png")))
        deadline = time.monotonic() + VIEW_TIMEOUT_S
        while True:
            marks = page.evaluate("() => ({...window.__cold, now: performance.now()})")
            if marks["idleSince"] is not None and marks["now"] - marks["idleSince"] >= CALM_S * 1000:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not settle within {VIEW_TIMEOUT_S} s: {marks}")
            time.sleep(0.1)
        if shot is not None:
            page.screenshot(path=str(shot.with_name(shot.stem + "-settled.png")))
    finally:
        if context is not None:
            context.close()
        else:
            page.close()
    sec = lambda v: None if v is None else v / 1000  # noqa: E731
    skeleton = 0.0 if marks["skeletonFirst"] is None else (marks["skeletonLast"] - marks["skeletonFirst"]) / 1000
    return View(sec(marks["question"]), sec(marks["metric"]), sec(marks["runStart"]), sec(marks["runDone"]), sec(marks["idleSince"]),
                skeleton, " / ".join(marks["progressTexts"]) or None)


def _js_string(text: str) -> str:
    import json

    return json.dumps(text)


def _interrupt(signum, frame) -> None:
    """A SIGTERM stops the run like Ctrl-C, so the servers it started (each in its own process
    group) are stopped by the ``finally`` blocks."""
    raise KeyboardInterrupt(f"signal {signum}")


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt(v: float | None, base: float | None = None) -> str:
    if v is None:
        return "        -"
    if base:
        return f"{v:6.2f} ({v / base:4.1f}x)"
    return f"{v:6.2f}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh servers per page (median of them)")
    ap.add_argument("--data", default="sample", help="?data= of every page (sample, synthetic-100000...)")
    ap.add_argument("--pages", default=",".join(p[0] for p in PAGES), help="comma-separated page names")
    ap.add_argument("--shots", type=Path, default=None, help="save screenshots of every cold view here")
    ap.add_argument("--shot-at", default="1,3,5",
                    help="comma-separated seconds after the navigation started of the early shots")
    ap.add_argument("--cold-only", action="store_true", help="skip the warm view (a second session)")
    ap.add_argument("--settle", type=float, default=0.0,
                    help="seconds to wait after the server answered its health check before the cold view "
                         "(a real first visitor comes later than the health check; 0: at once)")
    ap.add_argument("--before", type=Path, default=None,
                    help="another checkout (e.g. /work/main) whose pages are measured too, as '<page> before', "
                    "in the same rounds")
    ap.add_argument("--http-cache", choices=("cold", "warm"), default="cold",
                    help="cold: every view in a fresh browser context (nothing cached, a first-time visitor); "
                         "warm: one browser profile whose HTTP cache already holds Streamlit's static files "
                         "(a visitor who opened the dashboard before: they are served immutable for a year), "
                         "each target on a fixed port, primed by one unrecorded view before round 1; the "
                         "server is still fresh in every view")
    ap.add_argument("--floor", action="store_true",
                    help="also measure 'home floor': Home's element kinds without convmem (see the module)")
    args = ap.parse_args(argv)
    wanted = [p for p in PAGES if p[0] in args.pages.split(",")]
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    signal.signal(signal.SIGTERM, _interrupt)

    print("# convmem cold first view, real browser (Chromium headless, Playwright)")
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} CPU(s); load average before: "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"data: ?data={args.data}; {args.repeat} fresh server(s) per page; browser HTTP cache: {args.http_cache}; "
          "times in s from navigation start")
    results: dict[str, dict[str, list]] = {}
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as tmp:
        base_dir = Path(tmp)
        profile = None
        if args.http_cache == "warm":
            profile = pw.chromium.launch_persistent_context(str(base_dir / "profile"), executable_path=CHROMIUM,
                                                            headless=True, args=CHROMIUM_ARGS, viewport=VIEWPORT)
            browser = profile
        else:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        (base_dir / "baseline.py").write_text(BASELINE_SCRIPT)
        shutil.copytree(ROOT / ".streamlit", base_dir / ".streamlit")
        (base_dir / "floor.py").write_text(FLOOR_SCRIPT)
        targets = [("baseline", base_dir, "baseline.py", "/", BASELINE_QUESTION)]
        if args.floor:
            targets.append(("home floor", base_dir, "floor.py", "/", FLOOR_QUESTION))
        for name, path, needle in wanted:
            if args.before:
                targets.append((f"{name} before", args.before, "dashboard.py", path, needle))
            targets.append((name, ROOT, "dashboard.py", path, needle))
        ports = {t[0]: _free_port() for t in targets} if profile is not None else {}
        try:
            for name, cwd, script, path, needle in targets if profile is not None else ():
                server = Server(script, cwd, ports[name])  # primes the profile's cache (not recorded)
                try:
                    view(browser, f"{server.base}{path}", needle, profile=profile)
                finally:
                    server.stop()
            for r in range(args.repeat):
                # the baseline runs in every round, between the pages, so it sees the same load
                for name, cwd, script, path, needle in targets:
                    server = Server(script, cwd, ports.get(name))
                    try:
                        time.sleep(args.settle)
                        url = f"{server.base}{path}" + ("" if name == "baseline" else f"?data={args.data}")
                        stem = name.replace(" ", "-")
                        shot = args.shots / f"{stem}-{args.data}-r{r}.png" if args.shots else None
                        cold = view(browser, url, needle, shot, tuple(float(x) for x in args.shot_at.split(',')),
                                    profile=profile)
                        warm = None if args.cold_only else view(browser, url, needle, profile=profile)
                    finally:
                        server.stop()
                    res = results.setdefault(name, {"start": [], "cold": [], "warm": []})
                    res["start"].append(server.start_s)
                    res["cold"].append(cold)
                    if warm is not None:
                        res["warm"].append(warm)
                    print(f"  round {r + 1} {name:24s} cold: question {_fmt(cold.question)} script "
                          f"{_fmt(cold.script)} settled {_fmt(cold.settled)} skeleton {cold.skeleton_s:.2f} s progress "
                          f"{cold.progress_text!r}", flush=True)
        finally:
            browser.close()

    b = results["baseline"]
    print()
    print(f"load average after: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("medians in s (ratio to the baseline's same figure)")
    header = (f"{'page':24s} {'view':5s} {'question':>14s} {'metric':>14s} {'run done':>14s} "
              f"{'script':>14s} {'settled':>14s} {'skeleton s':>10s}  progress seen")
    print(header)
    print("-" * len(header))
    for name, res in results.items():
        for kind in ("cold", "warm"):
            views = res[kind]
            if not views:
                continue
            bviews = b[kind]
            cols = []
            for attr in ("question", "metric", "run_done", "script", "settled"):
                cols.append(_fmt(_median(getattr(v, attr) for v in views),
                                 None if name == "baseline" else _median(getattr(v, attr) for v in bviews)))
            progress = sorted({v.progress_text for v in views if v.progress_text})
            print(f"{name:24s} {kind:5s} " + " ".join(f"{c:>14s}" for c in cols)
                  + f" {_median(v.skeleton_s for v in views):10.2f}  {'; '.join(progress)[:60] or '-'}")
    print()
    print("server start (process start to /_stcore/health), median s: "
          + ", ".join(f"{name} {_median(res['start']):.2f}" for name, res in results.items()))


if __name__ == "__main__":
    main()
