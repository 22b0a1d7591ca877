"""benchmarks/compare.py runs at toy sizes and prints every row, so it cannot rot (issue 8).

No speed is asserted here (the brief forbids timed assertions); only that each workload, baseline
and target row is printed, with or without LangChain / LlamaIndex installed.
"""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def compare():
    spec = importlib.util.spec_from_file_location("bench_compare", ROOT / "benchmarks" / "compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXPECTED = [
    "20-line deque History, w~5",
    "History.add base, w~5",
    "History.add all policies, w~20",
    "History.add all + free summarizer, w~20",
    "History.add all + extractive (len/4), w~20",
    "LangChain trim_messages per append, w~5",
    "LlamaIndex ChatMemoryBuffer put+get, w~20",
    "memory per kept message, base, w~5",
    "memory per kept message, all policies, w~20",
    "traced growth, keep_tool_groups, unique call ids",
    "replay all policies + summaries (len/4 counter)",
    "sweep_limits, 18 limits, base rule",
    "sweep_limits, 18 limits, all policies, target",
    "evict, keeps all (5,000 ids)",
    "evict, cap = half the ids (pool of m ids)",
    "eviction_curve (pool of m ids)",
    "load_history, page size 10",
    "load_history, page size 100",
    "load_conversations, JSONL",
]


def test_every_row_prints_without_the_anchors(compare, monkeypatch):
    monkeypatch.setattr(compare, "langchain_runner", lambda: None)
    monkeypatch.setattr(compare, "llamaindex_runner", lambda: None)
    out = io.StringIO()
    table = compare.main(["--tiny"], out=out)
    text = out.getvalue()
    print(text)  # visible with -s: the whole table
    assert text.startswith("# convmem comparison\nmachine: ")
    assert "python: CPython 3." in text and "libraries: tenacity " in text
    for workload in EXPECTED:
        assert workload in text, workload
    anchors = [r for r in table.rows if r["workload"].startswith(("LangChain", "LlamaIndex"))]
    assert anchors and all("not installed" in r["note"] for r in anchors)
    # every History row at each window and size, each with a figure and its baseline ratio
    base = [r for r in table.rows if r["workload"].startswith("History.add base")]
    assert [(r["workload"], r["size"]) for r in base] == [
        ("History.add base, w~5", 200), ("History.add base, w~5", 400),
        ("History.add base, w~20", 200), ("History.add base, w~20", 400),
    ]
    assert all(r["ratio"] and r["ratio"] > 0 and r["target"] == "<= 2.5x" for r in base)
    loading = [r for r in table.rows if r["workload"].startswith("load_history")]
    assert {r["baseline"] for r in loading} == {"bare while-cursor loop", "de-duplicating loop"}


def test_anchor_rows_run_when_the_libraries_are_there(compare):
    runner = compare.langchain_runner()
    if runner is None:
        pytest.skip("langchain-core not installed (benchmarks/requirements-bench.txt)")
    msgs = compare.agent_messages(60)
    limit = 500
    # trim_messages keeps the newest messages that fit, like the base rule's total
    assert runner(msgs, limit) == compare.run_history(msgs, limit)
