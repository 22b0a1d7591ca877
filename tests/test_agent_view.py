"""The coding-agent views (convmem_dashboard/agent_view.py) on the hand-made Claude Code session:
the agent's context and compactions beside convmem's replay, the usage frame, costs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from convmem import HistorySettings, calibrate, load_conversations, parse_conversations, replay
from convmem.testing.sessions import claude_code_session
from convmem_dashboard.agent_view import (
    Prices,
    add_agent_compactions,
    agent_context,
    calibration_lines,
    compaction_table,
    reported_cache_line,
    reported_cost,
    session_caption,
    usage_figure,
    usage_frame,
)
from convmem_dashboard.figures_budget import totals_figure

DATA = Path(__file__).parent / "data" / "agent_sessions"


class Words:
    name = "words"

    def count_text(self, text):
        return len(text.split())

    def count_message(self, role, content, tool_calls=(), name=None, images=()):
        return (len((content or "").split()) + sum(len(a.split()) + 1 for _n, a in tool_calls)
                + 10 * len(images))


@pytest.fixture(scope="module")
def main():
    return load_conversations(DATA / "claude_code_session.jsonl", counter=Words())[0]


def test_agent_context_restarts_at_each_compaction(main):
    # tokens 6 0 3 2 13 3 | 20 4 8 3 (compaction at index 6)
    assert agent_context(main).tolist() == [6, 6, 9, 11, 24, 27, 20, 24, 32, 35]


def test_timeline_shows_the_agents_compactions_beside_convmems(main):
    r = replay(main.messages, HistorySettings(limit=20))
    fig = add_agent_compactions(totals_figure(r), main)
    names = [t.name for t in fig.data]
    assert "drop events" in names and "agent compactions" in names
    stars = fig.data[names.index("agent compactions")]
    assert list(stars.x) == [6] and list(stars.y) == [27]
    assert "1,200 tokens (reported)" in stars.hovertext[0] and "auto" in stars.hovertext[0]
    dots = fig.data[names.index("reported prompt (provider)")]
    assert list(dots.x) == [1, 5, 8] and list(dots.y) == [1010, 1053, 925]
    assert fig.layout.yaxis.range[1] >= 1053  # the reported prompts fit in the view
    # a window without the compaction draws no star
    fig2 = add_agent_compactions(totals_figure(r, start=0, stop=4), main, start=0, stop=4)
    assert "agent compactions" not in [t.name for t in fig2.data]


def test_compaction_table_says_what_each_kept(main):
    r = replay(main.messages, HistorySettings(limit=20))
    t = compaction_table(main, r)
    row = t.iloc[0].to_dict()
    assert row["add step"] == 6 and row["trigger"] == "auto"
    assert row["before (reported)"] == 1200 and row["before (convmem count)"] == 27
    assert row["agent kept (tokens)"] == 20
    assert row["convmem kept (tokens)"] == r.totals[5] <= 20
    assert row["convmem kept (messages)"] == r.kept_counts[5]
    assert row["convmem compactions so far"] == sum(1 for s in r.compactions.steps if s <= 5) > 0


def test_usage_frame_figure_and_cost(main):
    f = usage_frame(main)
    assert f["reported prompt"].tolist() == [1010, 1053, 925]
    assert f["convmem count"].tolist() == [6, 24, 24]
    assert f["cache reads"].tolist() == [0, 1000, 900]
    fig = usage_figure(f)
    assert [t.name for t in fig.data][:3] == ["cache reads (reported)", "cache writes (reported)",
                                              "input (reported)"]
    # three calls: ticks on whole calls only (plotly's own put -0.5, 0.5, 1.5: the new user)
    assert (fig.layout.xaxis.dtick, fig.layout.xaxis.tick0, fig.layout.xaxis.tickformat) == (1, 0, ",d")
    cost = reported_cost(main, Prices(3.0, 3.75, 0.30, 15.0))
    assert cost["cache reads"] == pytest.approx(1900 * 0.30e-6)
    assert cost["input"] == pytest.approx(18 * 3e-6)
    assert cost["cache writes"] == pytest.approx(1070 * 3.75e-6)
    assert cost["output"] == pytest.approx(77 * 15e-6)
    assert cost["uncached total"] == pytest.approx((2988 * 3 + 77 * 15) * 1e-6)
    assert "claude-code" in session_caption(main) and "3 reported calls" in session_caption(main)


def test_calibration_lines_name_the_fit():
    conv = parse_conversations(claude_code_session(600, seed=2, ratio=1.1, overhead=4,
                                                   base=5000), counter=Words())[0]
    lines = calibration_lines(calibrate(conv))
    assert lines[0].startswith("Fitted on ") and "1.100 x" in lines[0] and "4.0 per message" in lines[0]
    assert "5,000 per prompt" in lines[0]
    assert np.isfinite(calibrate(conv).error_after)


def test_cost_panel_line_uses_the_reported_cache_reads(main):
    from convmem import PROVIDERS, Conversation, Message

    pricing = PROVIDERS["anthropic"]
    line = reported_cache_line(main, pricing)
    inp, write, read = 18, 1070, 1900
    cost = (inp * pricing.input_per_mtok + write * pricing.write_per_mtok
            + read * pricing.cached_per_mtok) / 1e6
    assert line.startswith("The agent's own 3 calls") and f"${cost:,.4f}" in line
    assert "1,900 cache-read tokens (reads: 63.6% of the prompt tokens)" in line
    assert reported_cache_line(Conversation("c", None, (Message("m", "user", 1),)), pricing) is None
