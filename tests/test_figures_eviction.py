"""Listing eviction page: the pure figure and table builders (plain pytest, no streamlit)."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from convmem import evict_conversations, eviction_curve, kept_from
from convmem.conversations import Conversation, group_by_user
from convmem_dashboard.colors import LINE_COLORS, OUTCOME_COLORS
from convmem_dashboard.figures_eviction import (
    WEBGL_THRESHOLD,
    conversation_timeline,
    eviction_curve_figure,
    ids_hover,
)
from convmem_dashboard.tables_eviction import (
    NO_SHOPPER,
    default_shopper,
    dropped_table,
    evict,
    remaining_table,
    shopper_options,
    shopper_view,
    why_text,
)

# The SPEC §5 shape: conversation 1 shares everything with newer ones, so dropping it lowers nothing.
LISTINGS = [["p1", "p2"], ["p2", "p3", "p3"], ["p4", "p1"], [], ["p5", "p4"]]


def convs(listings=LISTINGS, user="u1"):
    return [Conversation(f"c{i + 1}", user, (), tuple(ids)) for i, ids in enumerate(listings)]


def shape(fig: go.Figure, name: str):
    return next(s for s in fig.layout.shapes if s.name == name)


# -- tables ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cap", range(0, 7))
def test_evict_agrees_with_convmem(cap):
    view = shopper_view(convs())
    ev = evict(view, cap)
    assert ev.k == kept_from(LISTINGS, cap)
    assert ev.remaining == tuple(evict_conversations(LISTINGS, cap))
    table = dropped_table(view, ev)
    assert list(table["fate"]) == ["dropped"] * ev.k + ["kept"] * (len(LISTINGS) - ev.k)
    remaining = remaining_table(view, ev)
    assert tuple(remaining["listing id"]) == ev.remaining


def test_view_curve_and_default_cap_show_a_drop_that_did_not_help():
    view = shopper_view(convs())
    assert view.curve == tuple(eviction_curve(LISTINGS)) == (5, 5, 3, 2, 2, 0)
    assert view.max_cap == 5
    # Conversation 1's drop releases nothing: the default cap is the largest one that drops it.
    assert view.default_cap == 3
    ev = evict(view, view.default_cap)
    assert ev.k == 2 and ev.released[0] == () and set(ev.shared[0]) == {"p1", "p2"}
    assert evict(view, 4).k == 2 and evict(view, 5).k == 0


def test_default_cap_without_a_flat_step_drops_about_half():
    view = shopper_view(convs([["a"], ["b"], ["c"], ["d"]]))
    assert view.curve == (4, 3, 2, 1, 0)
    assert view.default_cap == 2 and evict(view, 2).k == 2
    single = shopper_view(convs([["a", "b"]]))
    assert single.default_cap == 2  # one conversation: nothing below the top but 0


def test_why_text_says_released_or_shared():
    view = shopper_view(convs())
    ev = evict(view, 0)
    assert why_text(ev, 0).startswith("did not lower the count (5 → 5): all 2")
    assert why_text(ev, 1) == "lowered the count by 2 (5 → 3): it held the last mention of 2 ids"
    assert why_text(ev, 2).endswith("1 other id is mentioned again by newer conversations")
    assert "mentions no listing" in why_text(ev, 3)
    table = dropped_table(view, ev).set_index("conversation")
    assert table.loc["c1", "released"] == 0 and table.loc["c1", "shared with newer"] == 2
    assert table.loc["c2", "count before -> after"] == "5 → 3"
    kept = dropped_table(view, evict(view, 2)).set_index("conversation")  # keeps c4 and c5
    assert kept.loc["c5", "fate"] == "kept" and kept.loc["c5", ["released", "shared with newer", "count before -> after"]].isna().all()
    assert kept.loc["c1", "released"] == 0 and kept.loc["c2", "count before -> after"] == "5 → 3"


def test_remaining_table_counts_mentions_in_kept_conversations():
    view = shopper_view(convs())
    ev = evict(view, 2)  # keeps c4 (empty) and c5
    rows = remaining_table(view, ev).set_index("listing id")
    assert list(rows.index) == ["p5", "p4"]
    assert rows.loc["p4", "in conversations #"] == "5"


def test_default_shopper_prefers_many_conversations_then_a_flat_step():
    a = convs([["x"], ["y"]], user="a")
    b = convs([["x"], ["x"], ["y"]], user="b")
    c = [Conversation(f"n{i}", None, (), ("z",)) for i in range(5)]
    groups = group_by_user([*a, *b, *c])
    assert default_shopper(groups) == "b"  # the None bucket is not a shopper
    assert shopper_options(groups) == ["a", "b", NO_SHOPPER]
    assert default_shopper({}) is None


# -- the curve -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cap", [0, 2, 4, 5])
def test_curve_has_the_cap_line_at_the_cap_and_marks_k(cap):
    curve = eviction_curve(LISTINGS)
    k = kept_from(LISTINGS, cap)
    fig = eviction_curve_figure(curve, cap, k)
    line = shape(fig, "cap")
    assert line.y0 == line.y1 == cap
    assert line.line.color == LINE_COLORS["cap"]
    chosen = next(t for t in fig.data if t.meta == "chosen")
    assert (chosen.x[0], chosen.y[0]) == (k, curve[k])
    assert chosen.y[0] <= cap
    assert shape(fig, "chosen k").x0 == k
    main = next(t for t in fig.data if t.meta == "curve")
    assert list(main.x) == list(range(len(curve))) and list(main.y) == curve
    assert "(count)" in fig.layout.xaxis.title.text and "(count)" in fig.layout.yaxis.title.text
    assert fig.layout.yaxis.range[1] > max(curve)


def test_curve_uses_webgl_when_long():
    curve = list(range(WEBGL_THRESHOLD + 5, -1, -1))
    fig = eviction_curve_figure(curve, 10, len(curve) - 11)
    assert isinstance(next(t for t in fig.data if t.meta == "curve"), go.Scattergl)


# -- the timeline ----------------------------------------------------------------------------------


def test_timeline_bars_add_up_to_distinct_ids_and_colour_by_fate():
    view = shopper_view(convs())
    ev = evict(view, 2)  # drops c1..c3
    fig = conversation_timeline(view.ids, ev.released, ev.shared, ev.k, titles=view.titles)
    totals: dict[str, int] = {}
    for trace in fig.data:
        fate, _part = trace.meta
        assert trace.marker.color == OUTCOME_COLORS[fate]
        assert trace.orientation == "h"
        for y, x in zip(trace.y, trace.x):
            totals[y] = totals.get(y, 0) + x
    assert totals == {f"#{i + 1} c{i + 1}": len(set(ids)) for i, ids in enumerate(LISTINGS)}
    dropped_rows = {y for t in fig.data if t.meta[0] == "dropped" for y in t.y}
    assert dropped_rows == {"#1 c1", "#2 c2", "#3 c3"}
    shared = next(t for t in fig.data if list(t.meta) == ["dropped", "shared with newer"])
    assert shared.marker.pattern.shape == "/"
    assert "(count)" in fig.layout.xaxis.title.text
    assert fig.layout.yaxis.autorange == "reversed"
    assert list(fig.layout.yaxis.categoryarray)[0] == "#1 c1"


def test_timeline_with_nothing_dropped_has_only_kept_traces():
    view = shopper_view(convs())
    ev = evict(view, 5)
    fig = conversation_timeline(view.ids, ev.released, ev.shared, ev.k)
    assert {t.meta[0] for t in fig.data} == {"kept"}


def test_timeline_hover_lists_escaped_ids():
    fig = conversation_timeline(["<c>"], [["<id>", "b"]], [[]], 0)
    hover = fig.data[0].hovertext[0]
    assert "&lt;id&gt;" in hover and "<id>" not in hover and "&lt;c&gt;" in hover
    assert fig.data[0].y[0] == "#1 &lt;c&gt;"


def test_ids_hover_wraps_and_truncates():
    ids = [f"{i:010d}" for i in range(100)]
    text = ids_hover(ids)
    assert text.count("<br>") == 15  # 60 ids, 4 per line, then "... and 40 more"
    assert text.endswith("... and 40 more")
    assert ids_hover([]) == "(none)"


def test_curve_has_markers_and_a_thinner_cap_line_of_another_colour_below_it():
    curve = eviction_curve(LISTINGS)
    fig = eviction_curve_figure(curve, 5, 0)  # the cap lies on the flat start of the curve (5, 5)
    main = next(t for t in fig.data if t.meta == "curve")
    line = shape(fig, "cap")
    assert "markers" in main.mode and main.marker.size >= 6
    assert line.line.color != main.line.color and line.line.color != OUTCOME_COLORS["dropped"]
    assert line.line.width < main.line.width and line.line.dash == "dash" and main.line.dash is None
    assert line.layer == "below"  # the curve is drawn over the cap where they meet


def test_why_table_view_wraps_the_sentence_after_the_counts_it_explains():
    from convmem_dashboard.table_layout import WRAP_ROW_PX, fit_height
    from convmem_dashboard.tables_eviction import dropped_table_view

    view = shopper_view(convs())
    table = dropped_table(view, evict(view, 3))
    shown = dropped_table_view(len(table))
    order = shown["column_order"]
    assert sorted(order) == sorted(table.columns)
    # the columns that answer "why" come first (issue 10 item 5), then the details
    key = ["#", "why", "count before -> after", "released", "shared with newer", "fate"]
    assert order[:6] == key
    assert shown["column_config"]["why"]["width"] == "large"
    assert shown["row_height"] == WRAP_ROW_PX > 64  # Streamlit wraps text only in rows over 4rem
    assert shown["height"] == fit_height(len(table), row_height=WRAP_ROW_PX, max_rows=8)
    widths = [shown["column_config"][c]["width"] for c in key]
    # the key columns fit the main area of a 1280-px-wide window (820 px); "large" is 400 px
    assert sum(400 if w == "large" else w for w in widths) <= 800
