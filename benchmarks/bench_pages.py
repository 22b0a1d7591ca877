"""Each dashboard page's rerun time on a 10^5-message conversation, with Streamlit's AppTest.

    .venv/bin/python benchmarks/bench_pages.py [--data synthetic-100000] [--repeat 5] [--cold 3]

For each page (your_data, flaky_store, token_budget, listing_eviction), opened with ``?data=<key>``:

- cold: st.cache_data and st.cache_resource cleared, a new session, its first run (this includes
  generating the dataset);
- new session: a new session's first run with the caches warm (a second visitor opening the link);
- rerun: a rerun with nothing changed;
- change (new): a rerun after the page's main widget takes a value never shown before (token
  budget: the limit slider; flaky store: the failure rate; listing eviction: max_listings; your
  data: uploading a new 10^5-message OpenAI JSONL file, different bytes each time);
- change (cached): the same widget moved back to a value already shown (your data: the same file
  uploaded again), so cached results are hit.

Token budget also gets a matrix (skip it with --no-matrix): for summaries off and on, and each
policy combination (none, each of the four alone, all four), then with "Clear tool results" on
(trigger: the limit, keep 3, clear at least 0) with no policy and with all four, the time of
- the change that reaches it (toggles flipped: a replay never computed before),
- one limit step down (new value, summaries and policies kept),
- the limit back (cached),
- "Next ▶" on the drop events (cached replay, another event drawn),
- a jump to the event that dropped a message id (text input).

Each figure is the median of --repeat runs (--cold for the cold column). A change the page makes
in several script runs (it calls ``st.rerun()``: Token budget replays a long conversation in slices
under a bar, convmem_dashboard.panel_replay) counts by its slowest script run, each being a server
run of its own; the runs and their sum are printed below the table. The baseline is a bare
AppTest of a one-line script (``st.write("hello")``) rerun in the same process, so every figure is
also a ratio: the machine's speed and AppTest's own overhead cancel out. Goal (issue 4): under 1 s
after a widget change. AppTest time is script time plus building the element tree, close to the
server's time for a rerun (no browser, no websocket). Nothing here asserts.

AppTest compiles the entry script and the page on every run (a new ScriptCache per run: ~0.1 s
for the Token budget page, most of it Streamlit's "magic" AST pass); the server compiles each
script once (one ScriptCache in its Runtime, cleared when a file changes). By default the bench
shares one ScriptCache across runs, as the server does; ``--recompile`` measures AppTest as is.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TIKTOKEN_CACHE = ROOT.parent / "shared" / "real_data" / "tokenizers" / "tiktoken_cache"
if TIKTOKEN_CACHE.is_dir():  # as tests/conftest.py: tiktoken reads its files from here, no network
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))

import streamlit as st  # noqa: E402
import streamlit.testing.v1.local_script_runner as local_script_runner  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from convmem.synthetic import generate_conversation, to_openai_jsonl  # noqa: E402

DASHBOARD = str(ROOT / "dashboard.py")
TIMEOUT = 600.0
# page, its main widget's key (None: your_data, whose change is an upload; Home has no widget
# below its links)
PAGES = (
    ("your_data", "app_pages/your_data.py", None),
    ("flaky_store", "app_pages/flaky_store.py", "rate"),
    ("token_budget", "app_pages/token_budget.py", "limit"),
    ("listing_eviction", "app_pages/listing_eviction.py", "cap"),
)
COLUMNS = ("cold", "new session", "rerun", "change (new)", "change (cached)")


def server_like_script_cache() -> None:
    """One ScriptCache for every AppTest run, as the server's Runtime keeps one for every session
    (AppTest makes a new one per run, so it recompiles each script on every rerun)."""
    import streamlit.testing.v1.app_test as app_test
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    shared = ScriptCache()
    app_test.ScriptCache = lambda: shared


def quiet() -> None:
    """Silence Streamlit's bare-mode warnings ("missing ScriptRunContext"); AppTest resets levels."""
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("streamlit"):
            logging.getLogger(name).setLevel(logging.ERROR)


#: (wall s, CPU s) of each script run of the last :func:`timed_run`: a run that calls
#: ``st.rerun()`` (Token budget's replay in slices, convmem_dashboard.panel_replay) is followed by
#: another inside the same ``at.run()``, and each is a script run of its own on the server, held
#: to the 1 s goal alone.
SCRIPT_RUNS: list[tuple[float, float]] = []


def _time_script_runs() -> None:
    """Record every script run's wall and CPU time in SCRIPT_RUNS: ScriptRunner._run_script runs
    the script in a loop, once more per ``st.rerun()``, each through ``exec_func_with_error_handling``
    (timed here), then ``ScriptRunner._on_script_finished`` (timed too and added to that run: the
    server's cleanup after a run, which holds the interpreter lock before the browser hears the
    run ended; with Streamlit's default ``runner.postScriptGC`` it is a full collection, 0.1 s on
    the sample and 0.3-0.56 s with a 10^5-message replay cached, session 24)."""
    from streamlit.runtime.scriptrunner import script_runner

    real = script_runner.exec_func_with_error_handling
    if getattr(real, "_bench_timed", False):
        return

    def timed(func, ctx):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return real(func, ctx)
        finally:
            SCRIPT_RUNS.append((time.perf_counter() - wall, time.process_time() - cpu))

    real_finished = script_runner.ScriptRunner._on_script_finished

    def timed_finished(self, *args, **kwargs):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return real_finished(self, *args, **kwargs)
        finally:
            if SCRIPT_RUNS:
                run_wall, run_cpu = SCRIPT_RUNS[-1]
                SCRIPT_RUNS[-1] = (run_wall + time.perf_counter() - wall, run_cpu + time.process_time() - cpu)

    timed._bench_timed = True
    script_runner.exec_func_with_error_handling = timed
    script_runner.ScriptRunner._on_script_finished = timed_finished


_time_script_runs()


def slowest_run() -> float:
    """The longest script run (wall s) of the last :func:`timed_run` (its only one, mostly)."""
    return max((w for w, _ in SCRIPT_RUNS), default=0.0)


def run_figure(at: AppTest, notes: list[str], what: str) -> float:
    """Run ``at``; the figure held to the goal: its slowest script run (wall s). When the page
    reran itself (a replay in slices), a note with the runs and their sum goes to ``notes``."""
    total = timed_run(at)
    if len(SCRIPT_RUNS) > 1:
        notes.append(f"{what}: {len(SCRIPT_RUNS)} script runs of "
                     f"{', '.join(f'{w:.3f}' for w, _ in SCRIPT_RUNS)} s ({total:.3f} s in all)")
    return slowest_run()


def timed_run(at: AppTest) -> float:
    """Wall seconds of ``at.run()`` (every script run it made: see SCRIPT_RUNS)."""
    SCRIPT_RUNS.clear()
    t0 = time.perf_counter()
    at.run(timeout=TIMEOUT)
    elapsed = time.perf_counter() - t0
    quiet()
    if at.exception:
        raise RuntimeError(f"the page raised: {[e.value for e in at.exception]}")
    return elapsed


@contextmanager
def fragment_reruns(at: AppTest):
    """Within it, ``at.run()`` reruns only the registered fragments, as when the frontend's
    ``run_every`` timer fires (``is_auto_rerun``)."""
    fragments = list(at._fragment_storage._fragments)
    real = local_script_runner.RerunData
    local_script_runner.RerunData = lambda **kw: real(**kw, fragment_id_queue=fragments, is_auto_rerun=True)
    try:
        yield
    finally:
        local_script_runner.RerunData = real


#: The bar Token budget draws while it counts summary lines before the first replay with
#: summaries (convmem_dashboard.panel_summary_lines); follow-up runs tried at most.
LINES_BAR = "Counting summary lines"
MAX_LINE_RUNS = 50


def finish_line_fill(at: AppTest) -> list[tuple[float, float]]:
    """(wall s, CPU s of this process) of each script run while the summary lines bar is on
    screen (none when it is not): each follow-up run counts one slice; the last reruns the whole
    page, whose replay may take more runs (convmem_dashboard.panel_replay). Every one is a script
    run of its own on the server, so each is held to the 1 s goal."""
    times = []
    while any(p.proto.text.startswith(LINES_BAR) for p in at.get("progress")):
        if len(times) == MAX_LINE_RUNS:
            raise RuntimeError(f"summary lines still counting after {MAX_LINE_RUNS} follow-up runs")
        with fragment_reruns(at):
            timed_run(at)
            times.extend(SCRIPT_RUNS)  # the last one reruns the page: its replay's runs follow
    return times


def open_page(path: str, data: str) -> AppTest:
    at = AppTest.from_file(DASHBOARD, default_timeout=TIMEOUT)
    at.query_params["data"] = data
    at.switch_page(path)  # before the first run: the page is found by its file name
    return at


def new_values(slider, count: int) -> list:
    """``count`` values of the slider never used before: below the default first, then above."""
    lo, hi, step, default = slider.min, slider.max, slider.step, slider.value
    out, k = [], 1
    while len(out) < count and k < 10_000:
        for v in (default - k * step, default + k * step):
            if lo <= v <= hi and len(out) < count:
                out.append(round(v, 10) if isinstance(v, float) else v)
        k += 1
    if isinstance(default, int):
        out = [int(v) for v in out]
    if len(out) < count:
        raise ValueError(f"slider {slider.key!r} has fewer than {count} other values")
    return out


def jsonl_upload(n: int, seed: int) -> bytes:
    return to_openai_jsonl([generate_conversation(n, seed=seed)]).encode()


def bench_page(name: str, path: str, key: str | None, data: str, repeat: int, cold_repeat: int) -> dict:
    times: dict[str, list[float]] = {c: [] for c in COLUMNS}
    notes: list[str] = []  # changes the page made in several script runs (each figure: the slowest)
    for _ in range(cold_repeat):
        st.cache_data.clear()
        st.cache_resource.clear()
        times["cold"].append(run_figure(open_page(path, data), notes, "cold"))
    for _ in range(repeat):
        at = open_page(path, data)
        times["new session"].append(run_figure(at, notes, "new session"))
    timed_run(at)  # settle: one rerun after the first (pages may rerun once to clean state)
    for _ in range(repeat):
        times["rerun"].append(timed_run(at))
    if key is None:  # your_data: upload a new 10^5-message file, then the same file again
        n = sum(len(c.messages) for c in _dataset(data))
        files = [jsonl_upload(n, seed=1_000 + i) for i in range(repeat)]
        for i, blob in enumerate(files):
            at.get("file_uploader")[0].set_value((f"big{i}.jsonl", blob, "application/jsonl"))
            times["change (new)"].append(timed_run(at))
            _check_upload(at, n)
            at.get("file_uploader")[0].set_value((f"big{i}.jsonl", blob, "application/jsonl"))
            times["change (cached)"].append(timed_run(at))
            _check_upload(at, n)
        extra = f"upload of {len(files[0]) / 1e6:.1f} MB ({n:,} messages)"
    else:
        slider = at.slider(key=key)
        base = slider.value
        for v in new_values(slider, repeat):
            at.slider(key=key).set_value(v)
            times["change (new)"].append(run_figure(at, notes, f"{key} -> {v}"))
            assert at.slider(key=key).value == v, (key, v, at.slider(key=key).value)
            at.slider(key=key).set_value(base)  # a value computed before: cached
            times["change (cached)"].append(run_figure(at, notes, f"{key} -> {base}"))
            assert at.slider(key=key).value == base
        extra = f"slider {key!r}: {base} -> new values, and back to {base}"
    return {"name": name, "median": {c: statistics.median(v) for c, v in times.items()}, "note": extra,
            "runs": notes}


POLICY_TOGGLES = ("pin_sys", "pin_user", "tools", "on_user")
COMBOS = ((), ("pin_sys",), ("pin_user",), ("tools",), ("on_user",), POLICY_TOGGLES)
CLEARING_COMBOS = ((), POLICY_TOGGLES)  # clearing on: without a policy and with all four
MATRIX_COLUMNS = ("to this setting", "limit step (new)", "limit back (cached)", "next event", "jump to id")


def budget_matrix(data: str, combos=COMBOS, summaries=(False, True), clearing=(False, True)) -> list[dict]:
    """Token budget: each widget change's rerun time for each (summaries, clearing, policies)
    setting (clearing on: the CLEARING_COMBOS only)."""
    at = open_page("app_pages/token_budget.py", data)
    timed_run(at)
    timed_run(at)
    rows = []
    cases = [(s, c, combo) for c in clearing for s in summaries for combo in (CLEARING_COMBOS if c else combos)]
    for summ, clr, combo in cases:
        for key in POLICY_TOGGLES:
            at.toggle(key=key).set_value(key in combo)
        at.toggle(key="sum").set_value(summ)
        at.toggle(key="clr").set_value(clr)
        notes: list[str] = []
        t = {"to this setting": run_figure(at, notes, "to this setting")}
        fill = finish_line_fill(at)  # the first replay with summaries: its lines counted first
        slider = at.slider(key="limit")
        base, step = slider.value, slider.step
        at.slider(key="limit").set_value(base - step)
        t["limit step (new)"] = run_figure(at, notes, "limit step")
        at.slider(key="limit").set_value(base)
        t["limit back (cached)"] = run_figure(at, notes, "limit back")
        nxt = [b for b in at.button if b.key == "ev_next"]
        if nxt and not nxt[0].disabled:
            nxt[0].click()
            t["next event"] = run_figure(at, notes, "next event")
        else:
            t["next event"] = float("nan")
        boxes = [b for b in at.text_input if b.key == "ev_msg"]
        if boxes:
            ids = [m.id for m in _dataset(data)[0].messages]
            boxes[0].set_value(ids[len(ids) // 2])
            t["jump to id"] = run_figure(at, notes, "jump to id")
        else:  # a page without the jump (before issue 10)
            t["jump to id"] = float("nan")
        rows.append({"summaries": summ, "clearing": clr, "policies": "+".join(combo) or "none", "times": t, "fill": fill})
        print(f"  summaries {'on ' if summ else 'off'} {'clearing ' if clr else '':<9}{'+'.join(combo) or 'none':<28}"
              + "".join(f"{t[c]:>12.3f} s" for c in MATRIX_COLUMNS), flush=True)
        for note in notes:
            print(f"      {note}", flush=True)
        if fill:
            print(f"      the setting's summary lines were counted first, then the page replayed: {len(fill)} "
                  f"script run(s) of {', '.join(f'{w:.3f}' for w, _ in fill)} s", flush=True)
    return rows


def _dataset(data: str):
    from convmem_dashboard.data import get_dataset

    return get_dataset(data).conversations


def _check_upload(at: AppTest, n: int) -> None:
    if at.error:
        raise RuntimeError(f"upload refused: {[c.value for c in at.code]}")
    shown = {m.label: m.value for m in at.metric}
    if shown.get("Messages") != f"{n:,}":
        raise RuntimeError(f"upload not in use: {shown}")


def baseline(repeat: int) -> tuple[float, float]:
    """A bare AppTest of a one-line script: first run and rerun (medians)."""
    firsts, reruns = [], []
    for _ in range(repeat):
        at = AppTest.from_string('import streamlit as st\nst.write("hello")\n', default_timeout=TIMEOUT)
        firsts.append(timed_run(at))
        reruns.append(timed_run(at))
    return statistics.median(firsts), statistics.median(reruns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="synthetic-100000", help="dataset key (?data=)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--cold", type=int, default=3, help="cold runs (caches cleared) per page")
    parser.add_argument("--pages", nargs="*", default=[p[0] for p in PAGES], help="subset of pages")
    parser.add_argument("--no-matrix", action="store_true", help="skip the token budget policy matrix")
    parser.add_argument("--matrix-only", action="store_true", help="only the token budget policy matrix")
    parser.add_argument("--summaries", choices=("off", "on", "both"), default="both", help="matrix rows")
    parser.add_argument("--clearing", choices=("off", "on", "both"), default="both",
                        help="matrix rows with 'Clear tool results' off / on (on: no policy and all four)")
    parser.add_argument("--recompile", action="store_true",
                        help="AppTest as is: every run recompiles the scripts (the server compiles once)")
    args = parser.parse_args()

    if not args.recompile:
        server_like_script_cache()
    print("scripts compiled " + ("on every run (AppTest as is)" if args.recompile else "once, as the server does"))
    quiet()
    base_first, base_rerun = baseline(max(args.repeat, 5))
    matrix = []
    if not args.no_matrix and "token_budget" in args.pages:
        print(f"baseline (bare AppTest, one st.write): rerun {base_rerun:.4f} s")
        print("token budget, each widget change (seconds):")
        print("  " + " " * 51 + "".join(c.rjust(14) for c in MATRIX_COLUMNS))
        choice = {"off": (False,), "on": (True,), "both": (False, True)}
        matrix = budget_matrix(args.data, summaries=choice[args.summaries], clearing=choice[args.clearing])
        worst = max(max(v for v in r["times"].values() if v == v) for r in matrix)
        print(f"  slowest change: {worst:.3f} s ({worst / base_rerun:.0f}x the baseline rerun), "
              f"{'under' if worst < 1.0 else 'OVER'} the 1 s goal")
        print()
    if args.matrix_only:
        return
    results = [bench_page(n, p, k, args.data, args.repeat, args.cold) for n, p, k in PAGES if n in args.pages]

    n_messages = sum(len(c.messages) for c in _dataset(args.data))
    print(f"Page rerun times with AppTest, data={args.data} ({n_messages:,} messages); "
          f"median of {args.repeat} runs (cold: {args.cold}), seconds")
    print(f"baseline (bare AppTest, one st.write): first run {base_first:.4f} s, rerun {base_rerun:.4f} s")
    print()
    width = max(len(r["name"]) for r in results) + 2
    head = "page".ljust(width) + "".join(c.rjust(17) for c in COLUMNS)
    print(head)
    print("-" * len(head))
    for r in results:
        print(r["name"].ljust(width) + "".join(f"{r['median'][c]:>15.3f} s" for c in COLUMNS))
    print()
    print("as multiples of the baseline rerun")
    print(head)
    print("-" * len(head))
    for r in results:
        print(r["name"].ljust(width) + "".join(f"{r['median'][c] / base_rerun:>16.0f}x" for c in COLUMNS))
    print()
    for r in results:
        change = r["median"]["change (new)"]
        verdict = "under" if change < 1.0 else "OVER"
        print(f"{r['name']}: {r['note']}; change (new) {change:.3f} s, {verdict} the 1 s goal")
        for note in r["runs"]:
            print(f"    {note}")


if __name__ == "__main__":
    main()
