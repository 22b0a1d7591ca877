"""The command line (``python -m convmem``): outputs, ``--json``, exit codes, bad input.

Most tests call ``convmem.cli.main(argv)`` in-process (fast); the ones marked "subprocess" run
``python -m convmem`` as a user would, to check the real entry point, exit codes and stderr.
Expected values are the hand cases of ../shared/cases/CASES.md (H1, H4, H5, H6, H8, E1, E4) put in
small files under tests/data/cli/.
"""

from __future__ import annotations

import inspect
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import convmem
from convmem import cli, generate_conversation, load_conversations, load_history_with_report
from convmem.cli import EXIT_CODES, main

try:
    from convmem.testing import FaultConfig, FlakyStore, PagedStore, VirtualClock
except ImportError:
    from convmem.stores import FaultConfig, FlakyStore, PagedStore, VirtualClock

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "cli"
BUDGET = DATA / "budget.csv"  # conversations h1, h4, h5, h6, h8 (CASES.md shapes, tokens given)
E1 = DATA / "e1.jsonl"  # u1: E1 (p1..p4), u2: E4 (L1..L4), interleaved; 10-digit ids beside them
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
#: The OpenAI chat writer's name (``openai-jsonl`` is kept as an alias of it).
OPENAI = "openai-chat"
#: What ``inspect`` calls an OpenAI chat JSONL file: today's loader says "openai-jsonl"
#: (Conversation.source_format), the format registry "openai-chat".
OPENAI_READ = ("openai-jsonl", "openai-chat")
STRICT_PARAM = "strict" in inspect.signature(load_conversations).parameters


def run(capsys, *args) -> tuple[int, str, str]:
    """main(argv) in-process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *args) -> dict:
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    assert out.endswith("\n") and out.count("\n") == 1, "one JSON document, one line"
    return json.loads(out)


def run_subprocess(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "convmem", *map(str, args)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, **kw,
    )


def one_error_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def drops(doc: dict) -> list[list[str]]:
    return [[d["id"] for d in step["dropped"]] for step in doc["steps"]]


# ---------------------------------------------------------------------------------------- budget


def test_budget_h4_tool_groups_per_add(capsys):
    doc = run_json(capsys, "budget", BUDGET, "--conversation", "h4", "--limit", 5,
                   "--keep-tool-groups", "--kept-each-add")
    assert doc["command"] == "budget" and doc["conversation"] == "h4" and doc["schema"] == 1
    assert [s["id"] for s in doc["steps"]] == ["u1", "a1", "t1", "u2", "a2", "u3", "a3"]
    assert drops(doc) == [[], [], [], [], [], ["u1"], ["a1", "t1"]]
    last = doc["steps"][-1]
    assert [(d["id"], d["reason"], d["tokens"]) for d in last["dropped"]] == [
        ("a1", "over_limit", 1), ("t1", "tool_group", 1)]
    assert last["trigger"] == "limit"
    assert [s["total"] for s in doc["steps"]] == [1, 2, 3, 4, 5, 5, 4]
    assert [s["kept_count"] for s in doc["steps"]] == [1, 2, 3, 4, 5, 5, 4]
    assert doc["steps"][5]["kept"] == ["a1", "t1", "u2", "a2", "u3"]
    assert doc["kept"] == last["kept"] == ["u2", "a2", "u3", "a3"]
    assert doc["total"] == 4 and doc["over_limit"] is False
    assert (doc["compactions"], doc["dropped_messages"], doc["dropped_tokens"]) == (2, 3, 3)
    assert doc["settings"] == {"limit": 5, "target": 5, "pin_system": False,
                               "pin_latest_user": False, "keep_tool_groups": True,
                               "start_on_user": False, "summary_budget": None}


def test_budget_h4_without_the_policy_leaves_the_orphan_result(capsys):
    doc = run_json(capsys, "budget", BUDGET, "--conversation", "h4", "--limit", 5)
    assert drops(doc) == [[], [], [], [], [], ["u1"], ["a1"]]
    assert doc["kept"] == ["t1", "u2", "a2", "u3", "a3"] and doc["total"] == 5
    assert "kept" not in doc["steps"][0]  # only with --kept-each-add


def test_budget_h1_seed(capsys):
    doc = run_json(capsys, "budget", BUDGET, "--conversation", "h1", "--limit", 100)
    assert drops(doc) == [[], [], [], ["s"], ["u1", "a1", "u2", "t1"]]
    assert [s["total"] for s in doc["steps"]] == [20, 50, 90, 95, 0]
    assert doc["kept"] == [] and doc["total"] == 0
    assert [d["reason"] for d in doc["steps"][4]["dropped"]] == [
        "over_limit", "over_limit", "over_limit", "too_big"]


def test_budget_first_conversation_by_default(capsys):
    doc = run_json(capsys, "budget", BUDGET, "--limit", 100)
    assert doc["conversation"] == "h1" and doc["messages"] == 5


@pytest.mark.parametrize(
    ("flags", "expected_drops", "kept"),
    [
        (["--pin-system"], [[], [], [], ["u1"], ["a1"]], ["s", "u2", "a2"]),
        ([], [[], [], [], ["s"], ["u1"]], ["a1", "u2", "a2"]),
    ],
)
def test_budget_h5_pin_system(capsys, flags, expected_drops, kept):
    doc = run_json(capsys, "budget", BUDGET, "--conversation", "h5", "--limit", 6, *flags)
    assert drops(doc) == expected_drops and doc["kept"] == kept


def test_budget_h6_start_on_user(capsys):
    doc = run_json(capsys, "budget", BUDGET, "--conversation", "h6", "--limit", 7,
                   "--start-on-user")
    assert drops(doc) == [[], [], [], ["u1", "a1"]]
    assert [d["reason"] for d in doc["steps"][3]["dropped"]] == ["over_limit", "start_on_user"]
    assert doc["kept"] == ["u2", "a2"] and doc["total"] == 4


def test_budget_h8_target(capsys):
    doc = run_json(capsys, "budget", BUDGET, "--conversation", "h8", "--limit", 20_000,
                   "--target", 10_000)
    assert drops(doc) == [[], [], [], [], [], ["x0", "x1", "x2"], [], []]
    assert doc["steps"][4]["total"] == 18_000 and doc["steps"][5]["total"] == 8_500
    assert doc["kept"] == ["x3", "x4", "x5", "x6", "x7"] and doc["total"] == 11_500
    assert doc["settings"]["target"] == 10_000


def test_budget_summary_budget_places_a_summary(capsys):
    doc = run_json(capsys, "budget", BUDGET, "--conversation", "h8", "--limit", 20_000,
                   "--target", 10_000, "--summary-budget", 500)
    step = doc["steps"][5]
    # target - budget = 9,500: x0, x1, x2 leave 8,500 live tokens; x3 stays (it would leave 5,500).
    assert [d["id"] for d in step["dropped"]] == ["x0", "x1", "x2"]
    summary = step["summary"]
    assert summary["accepted"] is True and summary["id"] == "summary-1"
    assert 0 < summary["tokens"] <= 500 and summary["budget"] == 500
    assert doc["kept"] == ["summary-1", "x3", "x4", "x5", "x6", "x7"]
    assert doc["total"] == 11_500 + summary["tokens"]


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--pin-system", "--keep-tool-groups"],
        ["--pin-system", "--pin-latest-user", "--keep-tool-groups", "--start-on-user",
         "--target", "1500"],
        ["--keep-tool-groups", "--start-on-user", "--target", "1800", "--summary-budget", "300"],
    ],
)
def test_budget_rows_equal_history_add(capsys, tmp_path, flags):
    """Every add's row is what History.add returned and what History says after it."""
    conv = generate_conversation(400, seed=3)
    path = tmp_path / "long.jsonl"
    path.write_text(convmem.to_openai_jsonl([conv]), encoding="utf-8")
    doc = run_json(capsys, "budget", path, "--limit", 2_000, "--kept-each-add", *flags)
    opts = {"pin_system": "--pin-system" in flags, "pin_latest_user": "--pin-latest-user" in flags,
            "keep_tool_groups": "--keep-tool-groups" in flags,
            "start_on_user": "--start-on-user" in flags}
    if "--target" in flags:
        opts["target"] = int(flags[flags.index("--target") + 1])
    if "--summary-budget" in flags:
        opts["summary_budget"] = int(flags[flags.index("--summary-budget") + 1])
    history = convmem.HistorySettings(2_000, **opts).build()
    assert len(doc["steps"]) == 400
    for row, m in zip(doc["steps"], conv.messages):
        returned = history.add(m)
        assert [d["id"] for d in row["dropped"]] == returned, row["step"]
        assert (row["total"], row["kept_count"], row["kept"]) == (
            history.total(), len(history), history.messages())
    assert doc["kept"] == history.messages() and doc["total"] == history.total()
    assert doc["dropped_messages"] == sum(len(r["dropped"]) for r in doc["steps"]) > 0


def test_budget_text_output(capsys):
    code, out, err = run(capsys, "budget", BUDGET, "--conversation", "h4", "--limit", 5,
                         "--keep-tool-groups")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "conversation h4 (7 messages, 7 tokens), limit 5 [keep_tool_groups]"
    assert re.fullmatch(r"\s*6\s+a3\s+assistant\s+1\s+4\s+4\s+a1 \(over_limit\), t1 \(tool_group\)",
                        lines[8])
    assert "kept (4): u2 a2 u3 a3" in lines
    assert "total 4 of limit 5" in lines
    assert "2 compactions dropped 3 messages (3 tokens)" in lines


def test_budget_subprocess_json_equals_in_process(capsys):
    args = ["budget", BUDGET, "--conversation", "h4", "--limit", 5, "--keep-tool-groups", "--json"]
    proc = run_subprocess(*args)
    assert proc.returncode == 0 and proc.stderr == ""
    code, out, _ = run(capsys, *args)
    assert code == 0 and json.loads(proc.stdout) == json.loads(out)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--limit", "-1"], "argument --limit: expected an integer >= 0, got -1"),
        (["--limit", "abc"], "argument --limit: expected an integer >= 0, got 'abc'"),
        (["--limit", "5", "--target", "6"], "target must be <= limit"),
        (["--limit", "5", "--summary-budget", "9"], "summary_budget must be <= target"),
        (["--limit", "5", "--format", "nope"], "--format 'nope': expected one of auto"),
        ([], "the following arguments are required: --limit"),
    ],
)
def test_budget_bad_options_exit_2(capsys, args, needle):
    code, out, err = run(capsys, "budget", BUDGET, *args)
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert line.startswith("python -m convmem budget: error: ") and needle in line
    assert "--help" in line


def test_budget_unknown_conversation_exit_1(capsys):
    code, out, err = run(capsys, "budget", BUDGET, "--limit", 5, "--conversation", "zz")
    assert code == 1 and out == ""
    assert one_error_line(err) == (
        "python -m convmem budget: error: no conversation 'zz' in the file "
        "(it has h1, h4, h5, h6, h8)")


# ----------------------------------------------------------------------------------------- evict


def test_evict_e1_and_e4_per_shopper(capsys):
    doc = run_json(capsys, "evict", E1, "--max-listings", 3)
    assert doc["max_listings"] == 3 and doc["skipped"] == []
    u1, u2 = doc["users"]
    assert u1["user_id"] == "u1" and u1["conversations"] == ["c1", "c2", "c3"]
    assert (u1["dropped"], u1["kept"]) == (["c1", "c2"], ["c3"])
    assert u1["kept_listings"] == ["1000000004", "1000000001"]  # E1: ["p4", "p1"]
    assert u1["curve"] == [4, 4, 2, 0]
    assert u2["user_id"] == "u2" and (u2["dropped"], u2["kept"]) == (["d1"], ["d2", "d3"])
    assert u2["kept_listings"] == ["2000000002", "2000000003", "2000000004"]  # E4
    assert u2["curve"] == [4, 3, 2, 0]


def test_evict_listing_pattern_and_one_user(capsys):
    doc = run_json(capsys, "evict", E1, "--max-listings", 3, "--user", "u1",
                   "--listing-pattern", r"p\d|L\d")
    (u1,) = doc["users"]
    assert u1["kept_listings"] == ["p4", "p1"] and u1["curve"] == [4, 4, 2, 0]
    assert [(s["conversation"], s["released"], s["shared"], s["dropped"]) for s in u1["steps"]] == [
        ("c1", [], ["p1", "p2"], True), ("c2", ["p2", "p3"], [], True),
        ("c3", ["p4", "p1"], [], False)]
    assert [(s["count_before"], s["count_after"]) for s in u1["steps"]] == [(4, 4), (4, 2), (2, 0)]


@pytest.mark.parametrize(("cap", "kept"), [(0, []), (2, ["c3"]), (4, ["c1", "c2", "c3"])])
def test_evict_caps(capsys, cap, kept):
    doc = run_json(capsys, "evict", E1, "--max-listings", cap, "--user", "u1")
    assert doc["users"][0]["kept"] == kept


def test_evict_text_output(capsys):
    code, out, err = run(capsys, "evict", E1, "--max-listings", 3, "--user", "u1")
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "shopper u1: 3 conversations, 4 distinct listings; cap 3",
        "  dropped (2): c1 c2",
        "  kept (1): c3",
        "  kept listings (2): 1000000004 1000000001",
        "  curve (distinct listings left after dropping the k oldest): 0:4 1:4 2:2 3:0",
    ]


def test_evict_errors(capsys):
    code, _, err = run(capsys, "evict", E1, "--max-listings", 3, "--user", "nobody")
    assert code == 1
    assert one_error_line(err).endswith("no shopper 'nobody' in the file (it has u1, u2)")
    code, _, err = run(capsys, "evict", E1, "--max-listings", 3, "--listing-pattern", "(")
    assert code == 2 and "--listing-pattern '('" in one_error_line(err)
    code, _, err = run(capsys, "evict", E1, "--max-listings", "x")
    assert code == 2 and "--max-listings" in one_error_line(err)


# -------------------------------------------------------------------------------------- simulate


def _reference_run(n, page_size, faults, **load):
    """What load_history gives in-process for a synthetic conversation under these faults."""
    messages = list(generate_conversation(n, seed=faults.seed).messages)
    clock = VirtualClock()
    store = FlakyStore(PagedStore(messages, page_size), faults, clock=clock)
    loaded, report = load_history_with_report(
        store, sleep=clock.sleep, clock=clock, random=store.rng_for_jitter(), **load)
    return messages, loaded, report, store


def test_simulate_equals_load_history_in_process():
    proc = run_subprocess("simulate", "--messages", 60, "--page-size", 7, "--failure-rate", 0.3,
                          "--burst", 2, "--overlap", 2, "--attempts", 6, "--base-delay", 0.05,
                          "--max-delay", 1.0, "--seed", 5, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    messages, loaded, report, store = _reference_run(
        60, 7, FaultConfig(failure_rate=0.3, burst_length=2, overlap=2, seed=5),
        attempts=6, base_delay=0.05, max_delay=1.0)
    assert doc["file"] is None and doc["conversation"] == "synthetic" and doc["messages"] == 60
    assert doc["loaded_ids"] == [m.id for m in loaded] == [m.id for m in messages]
    assert doc["calls"] == len(report.calls) and doc["retries"] == report.retries > 0
    assert doc["transient_failures"] == report.transient_failures
    assert doc["duplicates_skipped"] == report.duplicates_skipped > 0
    assert doc["stop_reason"] == report.stop_reason == "end"
    assert doc["elapsed"] == pytest.approx(report.elapsed)
    assert [(c["cursor"], c["attempt"], c["outcome"]) for c in doc["call_log"]] == [
        (c.cursor, c.attempt, c.outcome) for c in report.calls]
    assert [c["delay_after"] for c in doc["call_log"]] == [c.delay_after for c in report.calls]
    assert doc["fired"] == list(store.fired) == ["overlap", "transient"]
    assert doc["truth"]["ok"] is True and doc["truth"]["lost"] == []
    assert doc["faults"] == {"failure_rate": 0.3, "burst_length": 2, "repeated_cursor": None,
                             "cursor_cycle": None, "wrap_around": False, "empty_page": None,
                             "overlap": 2, "seed": 5}


def test_simulate_same_seed_same_run_other_seed_other_run(capsys):
    args = ["simulate", "--messages", 80, "--failure-rate", 0.4, "--attempts", 12, "--seed"]
    a = run_json(capsys, *args, 3)
    b = run_json(capsys, *args, 3)
    c = run_json(capsys, *args, 4)
    assert a == b
    assert a["call_log"] != c["call_log"]


def test_simulate_empty_page_loses_data_unless_followed(capsys):
    doc = run_json(capsys, "simulate", "--messages", 30, "--page-size", 10, "--empty-page", 1)
    synthetic = [m.id for m in generate_conversation(30, seed=0).messages]
    assert doc["stop_reason"] == "empty_page" and doc["loaded_ids"] == synthetic[:10]
    assert doc["truth"]["ok"] is False and doc["truth"]["lost"] == synthetic[10:]
    assert doc["truth"]["explanation"].startswith("lost 20 of 30 messages because empty_page")
    calls = doc["call_log"]
    assert [(c["cursor"], c["page_size"], c["next_cursor"], c["fault"]) for c in calls] == [
        (None, 10, "e10", None), ("e10", 0, "p10", "empty_page")]
    doc = run_json(capsys, "simulate", "--messages", 30, "--page-size", 10, "--empty-page", 1,
                   "--follow-empty-pages")
    assert doc["stop_reason"] == "end" and doc["truth"]["ok"] is True
    assert doc["load"]["empty_page_ends"] is False and doc["pages"] == 4


@pytest.mark.parametrize(
    ("flags", "stop", "ok", "calls"),
    [
        (["--wrap-around"], "no_progress", True, 4),
        (["--cursor-cycle", "2"], "repeated_cursor", True, 3),
        (["--repeated-cursor", "1"], "repeated_cursor", False, 2),
    ],
)
def test_simulate_walk_faults(capsys, flags, stop, ok, calls):
    doc = run_json(capsys, "simulate", "--messages", 30, "--page-size", 10, *flags)
    assert doc["stop_reason"] == stop and doc["truth"]["ok"] is ok and doc["calls"] == calls


def test_simulate_page_load_error_exit_3(capsys):
    code, out, err = run(capsys, "simulate", "--messages", 20, "--failure-rate", 1,
                         "--attempts", 3, "--json")
    assert code == 3
    doc = json.loads(out)
    assert doc["failure"] == "attempts_exhausted" and doc["stop_reason"] is None
    assert doc["error"]["cursor"] is None and doc["error"]["attempts"] == 3
    assert doc["error"]["loaded"] == 0 and doc["calls"] == 3 and doc["retries"] == 2
    assert doc["truth"]["ok"] is False and len(doc["truth"]["lost"]) == 20
    line = one_error_line(err)
    assert line.startswith("python -m convmem simulate: error: load failed: fetch_page(None) "
                           "kept failing after 3 attempt(s)")


def test_simulate_from_a_file(capsys):
    conv = load_conversations(SAMPLE)[1]
    doc = run_json(capsys, "simulate", SAMPLE, "--conversation", conv.id, "--page-size", 4)
    assert doc["file"] == str(SAMPLE) and doc["conversation"] == conv.id
    assert doc["loaded_ids"] == [m.id for m in conv.messages]
    assert doc["pages"] == -(-len(conv.messages) // 4)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--failure-rate", "2"], "expected a probability in [0, 1], got '2'"),
        (["--failure-rate", "nan"], "expected a probability in [0, 1], got 'nan'"),
        (["--page-size", "0"], "expected an integer >= 1, got 0"),
        (["--cursor-cycle", "1"], "expected an integer >= 2, got 1"),
        (["--base-delay", "-0.5"], "expected seconds"),
        (["--overlap", "10"], "--overlap 10 must be below --page-size 10"),
        (["--wrap-around", "--cursor-cycle", "2"], "choose one"),
        (["--conversation", "x"], "--conversation needs a FILE"),
    ],
)
def test_simulate_bad_options_exit_2(capsys, args, needle):
    code, out, err = run(capsys, "simulate", *args)
    assert code == 2 and out == "" and needle in one_error_line(err)


def test_simulate_text_output(capsys):
    code, out, err = run(capsys, "simulate", "--messages", 30, "--page-size", 10, "--wrap-around")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "a synthetic conversation (seed 0): 30 messages, page size 10"
    assert lines[1] == "faults         wrap_around=True (seed 0); fired: wrap_around"
    assert lines[2] == "calls          4 (4 pages, 0 retries, 0 transient failures)"
    assert lines[4] == "stop reason    no_progress"
    assert lines[5] == "truth check    ok: 30 loaded of 30; 0 lost, 0 repeated, 0 extra"
    assert [line.split() for line in lines[8:]] == [
        ["call", "#", "cursor", "attempt", "outcome", "fault", "backoff", "page", "new", "next",
         "cursor"],
        ["1", "(first", "page)", "1", "ok", "10", "10", "p10"],  # counted from 1, as errors say
        ["2", "p10", "1", "ok", "10", "10", "p20"],
        ["3", "p20", "1", "ok", "10", "10", "w1:p0"],
        ["4", "w1:p0", "1", "ok", "wrap_around", "10", "0", "w1:p10"],
    ]
    code, out, _ = run(capsys, "simulate", "--messages", 30, "--page-size", 10, "--wrap-around",
                       "--calls", 2)
    assert out.splitlines()[-1] == "... 2 more (--calls N, or --json, lists them)"
    code, out, _ = run(capsys, "simulate", "--messages", 30, "--calls", 0)
    assert len(out.splitlines()) == 7  # no call table


# --------------------------------------------------------------------------------------- inspect


def test_inspect_budget_file(capsys):
    doc = run_json(capsys, "inspect", BUDGET)
    assert doc["format"] == "csv"
    assert (doc["conversations"], doc["skipped_count"], doc["messages"], doc["tokens"]) == (
        5, 0, 29, 25_260)
    assert doc["roles"] == {"system": 2, "user": 17, "assistant": 8, "tool": 2}
    assert doc["tool_calls"] == 1 and doc["users"] == 0
    assert [(c["id"], c["messages"], c["tokens"]) for c in doc["per_conversation"]] == [
        ("h1", 5, 235), ("h4", 7, 7), ("h5", 5, 10), ("h6", 4, 8), ("h8", 8, 25_000)]


def test_inspect_listings_and_users(capsys):
    doc = run_json(capsys, "inspect", E1)
    assert doc["format"] in OPENAI_READ and doc["users"] == 2
    assert (doc["listing_mentions"], doc["distinct_listings"]) == (12, 8)
    assert doc["per_conversation"][0] == {
        "id": "c1", "user_id": "u1", "messages": 2, "tokens": 14, "tool_calls": 0,
        "distinct_listings": 2, "title": "I looked at p1 (1000000001) and p2 (1000000002)."}


def test_inspect_bundled_sample(capsys):
    convs = load_conversations(SAMPLE)
    doc = run_json(capsys, "inspect", SAMPLE)
    assert (doc["conversations"], doc["messages"], doc["tokens"]) == (26, 435, 24_187)
    assert doc["tokens"] == sum(c.total_tokens for c in convs)
    assert doc["users"] == 8 and doc["skipped"] == []
    code, out, err = run(capsys, "inspect", SAMPLE)
    assert code == 0 and err == ""
    assert "conversations  26 loaded of 26; 0 skipped" in out
    assert "tokens         24,187" in out and "... 6 more (--json lists all)" in out


@pytest.mark.realdata
def test_inspect_real_retail_file(tau_retail_file):
    rows = json.loads(tau_retail_file.read_text(encoding="utf-8"))
    convs = load_conversations(tau_retail_file)
    proc = run_subprocess("inspect", tau_retail_file, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["format"] == "tau-bench"
    assert doc["conversations"] + doc["skipped_count"] == len(rows) == 115
    assert doc["conversations"] == len(convs)
    assert doc["messages"] == sum(len(c.messages) for c in convs)
    assert doc["tokens"] == sum(c.total_tokens for c in convs)
    assert doc["roles"]["tool"] == sum(m.role == "tool" for c in convs for m in c.messages) > 0


def test_inspect_bad_conversation_strict(capsys):
    code, out, err = run(capsys, "inspect", DATA / "bad_role.jsonl", "--strict")
    assert code == 1 and out == ""
    line = one_error_line(err)
    assert line.startswith("python -m convmem inspect: error: format error: bad_role.jsonl, "
                           "line 2, field 'messages[1].role': unknown role 'bot'")


def test_inspect_bad_conversation_default(capsys):
    """Without --strict: skipped with its reason where the library skips, else today's refusal."""
    code, out, err = run(capsys, "inspect", DATA / "bad_role.jsonl", "--json")
    if not STRICT_PARAM:  # this library refuses the whole file for one bad conversation
        assert code == 1 and "line 2, field 'messages[1].role'" in one_error_line(err)
        return
    assert code == 0
    doc = json.loads(out)
    assert doc["conversations"] == 2 and doc["skipped_count"] == 1
    (skip,) = doc["skipped"]
    assert skip["conversation_id"] == "bad" and skip["line"] == 2 and "bot" in skip["reason"]


def test_inspect_skipped_rows_and_warning(capsys, monkeypatch):
    """How skipped conversations are shown, with a loader that skips (the LoadResult contract)."""

    class Skip:
        conversation_id, line, field, value = "bad", 2, "messages[1].role", "'bot'"
        reason = "unknown role 'bot'"

    class Result(list):
        pass

    def fake_load(path, *, format="auto", strict=False):
        result = Result(load_conversations(E1)[:2])
        result.conversations, result.skipped, result.format = list(result), (Skip(),), OPENAI
        return result

    monkeypatch.setattr(cli, "load_conversations", fake_load)
    doc = run_json(capsys, "inspect", E1)
    assert doc["conversations"] == 2 and doc["skipped_count"] == 1
    assert doc["skipped"] == [{"conversation_id": "bad", "line": 2, "field": "messages[1].role",
                               "value": "'bot'", "reason": "unknown role 'bot'"}]
    code, out, err = run(capsys, "inspect", E1)
    assert code == 0 and err == ""  # inspect reports skips on stdout, in its own section
    assert "conversations  2 loaded of 3; 1 skipped" in out
    assert out.endswith("skipped:\n  conversation bad, line 2, field 'messages[1].role', "
                        "value 'bot': unknown role 'bot'\n")
    code, out, err = run(capsys, "evict", E1, "--max-listings", 3)
    assert code == 0
    assert err.splitlines() == [
        "convmem: loaded 2 of 3 conversations; 1 skipped:",
        "  conversation bad, line 2, field 'messages[1].role', value 'bot': unknown role 'bot'"]


def test_format_option(capsys):
    doc = run_json(capsys, "inspect", BUDGET, "--format", "csv")
    assert doc["conversations"] == 5 and doc["format"] == "csv"
    code, out, err = run(capsys, "inspect", E1, "--format", "csv")
    assert code == 1 and out == "" and "format error: e1.jsonl" in one_error_line(err)


def test_nothing_loaded_is_an_input_error(capsys, monkeypatch):
    class Skip:
        conversation_id, line, field, value, reason = None, 1, None, None, "not a conversation"

    class Result(list):
        conversations, skipped, format = (), (Skip(),), "openai-chat"

    monkeypatch.setattr(cli, "load_conversations", lambda path, **kw: Result())
    code, out, err = run(capsys, "budget", E1, "--limit", 5)
    assert code == 1 and out == ""
    assert err.splitlines() == [
        "convmem: loaded 0 of 1 conversations; 1 skipped:",
        "  line 1: not a conversation",
        "python -m convmem budget: error: no conversation loaded from the file (1 skipped; "
        "'inspect' says why)"]


def test_loader_options_passed_only_when_accepted(capsys, monkeypatch):
    seen = {}

    def fake_load(path, *, format="auto", strict=False, messages_path=None):
        seen.update(format=format, strict=strict, messages_path=messages_path)
        return load_conversations(E1)

    monkeypatch.setattr(cli, "load_conversations", fake_load)
    doc = run_json(capsys, "inspect", E1, "--strict", "--messages-path", "a.b[-1]",
                   "--format", "jsonl")
    assert seen == {"format": "jsonl", "strict": True, "messages_path": "a.b[-1]"}
    assert doc["conversations"] == 6
    code, _, err = run(capsys, "inspect", E1, "--listing-pattern", "p")  # no listing_extractor
    assert code == 2 and "--listing-pattern needs" in one_error_line(err)


# --------------------------------------------------------------------------------------- convert


def test_convert_round_trip_to_a_file(capsys, tmp_path):
    out_file = tmp_path / "out.jsonl"
    code, out, err = run(capsys, "convert", SAMPLE, "--to", OPENAI, "-o", out_file)
    assert code == 0 and err == ""
    assert out.startswith("wrote 26 conversations (435 messages, ")
    assert load_conversations(out_file) == load_conversations(SAMPLE)
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary file left


def test_convert_json_and_stdout(capsys):
    doc = run_json(capsys, "convert", E1, "--to", OPENAI)
    assert doc["from"] in OPENAI_READ and (doc["to"], doc["output"]) == (OPENAI, None)
    assert doc["conversations"] == 6 and doc["messages"] == 12
    assert doc["bytes"] == len(doc["content"].encode("utf-8"))
    assert convmem.parse_conversations(doc["content"]) == load_conversations(E1)
    code, out, err = run(capsys, "convert", E1, "--to", OPENAI)
    assert code == 0 and out == doc["content"]
    code, out, err = run(capsys, "convert", E1, "--to", "openai-jsonl")  # the older name
    assert code == 0 and out == doc["content"]


def test_convert_errors(capsys):
    code, out, err = run(capsys, "convert", E1, "--to", "nope")
    assert code == 2 and out == ""
    assert "--to 'nope'" in one_error_line(err) and OPENAI in err
    # CSV gives tool call ids but no names/arguments: OpenAI JSONL cannot carry that call.
    code, out, err = run(capsys, "convert", BUDGET, "--to", OPENAI)
    if code == 0:  # a library that writes such calls: one record per conversation
        records = [json.loads(line) for line in out.splitlines()]
        assert [(r["id"], len(r["messages"])) for r in records] == [
            ("h1", 5), ("h4", 7), ("h5", 5), ("h6", 4), ("h8", 8)]
    else:
        assert code == 1 and "cannot write as openai-chat" in one_error_line(err)
    code, out, err = run(capsys, "convert", E1, "--to", OPENAI, "-o",
                         DATA / "no-such-dir" / "x.jsonl")
    assert code == 1 and one_error_line(err) == (
        f"python -m convmem convert: error: cannot write '{DATA / 'no-such-dir' / 'x.jsonl'}': "
        "No such file or directory")


# ------------------------------------------------------------------------ errors and exit codes


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["inspect", DATA / "missing.json"], 1, "missing.json': No such file or directory"),
        (["inspect", DATA / "truncated.json"], 1, "format error: truncated.json, line "),
        (["budget", BUDGET, "--limit", "-1"], 2, "argument --limit: expected an integer >= 0"),
        (["budget", BUDGET, "--limit", "abc"], 2, "argument --limit: expected an integer >= 0"),
        (["frobnicate"], 2, "invalid choice: 'frobnicate'"),
        ([], 2, "the following arguments are required: SUBCOMMAND"),
    ],
)
def test_exit_codes_subprocess(args, code, needle):
    proc = run_subprocess(*args)
    assert proc.returncode == code and proc.stdout == ""
    assert needle in one_error_line(proc.stderr)


def test_help_is_readable_subprocess():
    proc = run_subprocess("--help")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("usage: python -m convmem [-h] SUBCOMMAND ...")
    for name in ("inspect", "convert", "budget", "evict", "simulate", "exit codes:"):
        assert name in proc.stdout
    for code, meaning in EXIT_CODES.items():
        assert f"{code:<4} {meaning}" in proc.stdout


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("inspect", ["--json", "--strict", "--messages-path", "--format"]),
        ("convert", ["--to", "--output"]),
        ("budget", ["--limit", "--conversation", "--pin-system", "--pin-latest-user",
                    "--keep-tool-groups", "--start-on-user", "--target", "--summary-budget"]),
        ("evict", ["--max-listings", "--user", "--listing-pattern"]),
        ("simulate", ["--messages", "--page-size", "--failure-rate", "--burst",
                      "--repeated-cursor", "--cursor-cycle", "--wrap-around", "--empty-page",
                      "--overlap", "--attempts", "--base-delay", "--max-delay", "--seed",
                      "--progress", "--no-progress"]),
    ],
)
def test_subcommand_help(capsys, command, options):
    code, out, err = run(capsys, command, "--help")
    assert code == 0 and err == ""
    assert out.startswith(f"usage: python -m convmem {command} ")
    for option in options:
        assert option in out
    assert "130  interrupted (Ctrl-C)" in out


def test_format_error_names_the_option(capsys, monkeypatch):
    def fake_load(path, **kwargs):
        raise convmem.FormatError("unknown format; the messages seem to be nested: pass "
                                  "messages_path='a.b[-1]'", source="x.json")

    monkeypatch.setattr(cli, "load_conversations", fake_load)
    code, _, err = run(capsys, "inspect", E1)
    assert code == 1 and one_error_line(err) == (
        "python -m convmem inspect: error: format error: x.json: unknown format; the messages "
        "seem to be nested: pass messages_path='a.b[-1]' (on the command line: --messages-path)")


def _raiser(exc):
    def command(args):
        raise exc

    return command


@pytest.mark.parametrize(
    ("exc", "code", "line"),
    [
        (KeyboardInterrupt(), 130, "python -m convmem inspect: interrupted"),
        (BrokenPipeError(), 141, None),
        (RuntimeError("boom"), 4, "python -m convmem inspect: error: internal error: "
                                  "RuntimeError: boom (a bug; rerun with --traceback)"),
        (convmem.PageLoadError("gave up", cursor="c", attempts=2, loaded=[]), 3,
         "python -m convmem inspect: error: load failed: gave up"),
        (PermissionError(13, "Permission denied", "x.json"), 1,
         "python -m convmem inspect: error: cannot read 'x.json': Permission denied"),
    ],
)
def test_exit_codes_for_each_failure(capsys, monkeypatch, exc, code, line):
    monkeypatch.setattr(cli, "_cmd_inspect", _raiser(exc))
    got, out, err = run(capsys, "inspect", E1)
    assert got == code and out == ""
    if line is None:
        assert err == ""
    else:
        assert one_error_line(err) == line


def test_traceback_option_shows_it(capsys, monkeypatch):
    monkeypatch.setattr(cli, "_cmd_inspect", _raiser(RuntimeError("boom")))
    code, _, err = run(capsys, "inspect", E1, "--traceback")
    assert code == 4 and "Traceback (most recent call last)" in err and "RuntimeError: boom" in err


def test_exit_code_table_matches_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for code in EXIT_CODES:
        assert f"| {code} |" in readme
        assert re.search(rf"^{code}\s", cli.__doc__, flags=re.M)


# -------------------------------------------------------------------------------------- progress


def test_progress_goes_to_stderr_only(capsys):
    code, out, err = run(capsys, "budget", SAMPLE, "--limit", 300, "--json", "--progress")
    assert code == 0
    doc = json.loads(out)  # stdout holds the one JSON document, nothing else
    assert doc["messages"] == len(doc["steps"]) == 14
    assert "budget: replaying 14 messages: 00:00" in err  # the replay: its elapsed time
    assert "loading shoppers.jsonl (0.1 MB)" in err  # the load itself: elapsed time
    code, out, err = run(capsys, "inspect", SAMPLE, "--progress")
    assert code == 0 and "inspect:" in err and "/26 " in err and "/26 " not in out
    code, out, err = run(capsys, "budget", SAMPLE, "--limit", 300, "--kept-each-add",
                         "--progress")
    assert code == 0 and "budget: kept ids:" in err and "/14 " in err


def test_broken_pipe_is_quiet_subprocess(tmp_path):
    """``... | head -1``: the reader goes away; exit 141, nothing on stderr."""
    big = tmp_path / "long.jsonl"
    big.write_text(convmem.to_openai_jsonl([generate_conversation(5_000, seed=1)]), "utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "convmem", "budget", big, "--limit", "2000"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # 5,000 lines, one write each: more than a pipe holds, so a write fails
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""
    assert first.decode().startswith("conversation synthetic (5,000 messages, ")


def test_no_progress_when_not_a_terminal_or_turned_off(capsys, monkeypatch):
    code, _, err = run(capsys, "budget", SAMPLE, "--limit", 300)
    assert code == 0 and err == ""  # captured stderr is not a terminal
    monkeypatch.setattr(cli, "_isatty", lambda stream: True)
    monkeypatch.setattr(cli, "PROGRESS_MIN_ITEMS", 10)
    code, _, err = run(capsys, "budget", SAMPLE, "--limit", 300)
    assert code == 0 and "budget:" in err  # a terminal and a long enough input
    code, _, err = run(capsys, "budget", SAMPLE, "--limit", 300, "--no-progress")
    assert code == 0 and err == ""
    monkeypatch.setattr(cli, "PROGRESS_MIN_ITEMS", 100)
    code, _, err = run(capsys, "budget", SAMPLE, "--limit", 300)
    assert code == 0 and err == ""  # short input: no bar


def test_progress_without_tqdm(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm now raises ImportError
    code, out, err = run(capsys, "budget", SAMPLE, "--limit", 300, "--json", "--progress")
    assert code == 0 and json.loads(out)["messages"] == 14
    assert err == "convmem: no progress bar: the tqdm package is not installed (pip install tqdm)\n"


def test_simulate_progress_counts_calls(capsys):
    code, out, err = run(capsys, "simulate", "--messages", 30, "--page-size", 10, "--progress",
                         "--json")
    assert code == 0 and json.loads(out)["calls"] == 3 and "simulate:" in err and "call" in err


# ---------------------------------------------------------------------------- documented output


def _documented_keys() -> dict[str, list[str]]:
    """README's 'Command line' key table: `name` -> its keys, in order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Command line", 1)[1].split("\n## ", 1)[0]
    table = {}
    for row in re.findall(r"^\| `([^`]+)` \| (.+) \|$", section, flags=re.M):
        table[row[0]] = re.findall(r"`([^`]+)`", row[1])
    return table


def test_json_keys_are_the_documented_ones(capsys):
    keys = _documented_keys()
    common = keys["every document"]
    docs = {
        "inspect": run_json(capsys, "inspect", E1),
        "convert": run_json(capsys, "convert", E1, "--to", OPENAI),
        "budget": run_json(capsys, "budget", BUDGET, "--conversation", "h8", "--limit", 20_000,
                           "--target", 10_000, "--summary-budget", 500, "--kept-each-add"),
        "evict": run_json(capsys, "evict", E1, "--max-listings", 3),
        "simulate": run_json(capsys, "simulate", "--messages", 20, "--failure-rate", 0.5),
    }
    for command, doc in docs.items():
        assert list(doc) == common + keys[command], command
    assert list(docs["inspect"]["per_conversation"][0]) == keys["inspect.per_conversation[]"]
    assert list(docs["budget"]["steps"][0]) == keys["budget.steps[]"]
    assert list(docs["budget"]["steps"][5]["dropped"][0]) == keys["budget.steps[].dropped[]"]
    assert list(docs["budget"]["steps"][5]["summary"]) == keys["budget.steps[].summary"]
    assert list(docs["budget"]["settings"]) == keys["budget.settings"]
    assert list(docs["evict"]["users"][0]) == keys["evict.users[]"]
    assert list(docs["evict"]["users"][0]["steps"][0]) == keys["evict.users[].steps[]"]
    assert list(docs["simulate"]["truth"]) == keys["simulate.truth"]
    assert list(docs["simulate"]["call_log"][0]) == keys["simulate.call_log[]"]
    assert list(docs["simulate"]["load"]) == keys["simulate.load"]
    failed = json.loads(run(capsys, "simulate", "--failure-rate", 1, "--json")[1])
    assert list(failed["error"]) == keys["simulate.error"]


def test_readme_examples_run(capsys, tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Command line", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^\.venv/bin/python -m convmem (.+)$", section, flags=re.M)
    assert len(commands) >= 5
    for command in commands:
        argv = shlex.split(command.split("  #")[0])
        if "-o" in argv:
            argv[argv.index("-o") + 1] = str(tmp_path / "out.jsonl")
        code, out, err = run(capsys, *argv)
        assert code == 0, (command, err)
        assert out


def test_readme_console_output_is_real(capsys):
    """The README's console example prints exactly what it shows."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Command line", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```console\n\$ \.venv/bin/python -m convmem (.+?)\n(.*?)```", section,
                        flags=re.S)
    assert blocks
    for command, shown in blocks:
        code, out, err = run(capsys, *shlex.split(command))
        assert code == 0 and err == "" and out == shown
