"""Axis settings shared by the dashboard's figures.

A count axis (add steps, calls) holds whole numbers only: plotly's automatic ticks put 0.5 or
-0.4 on a short one (a one-message conversation, a session of three calls), which reads as a
half message, and print 4000 without a separator beside labels such as 3,616.
:func:`integer_ticks` gives a tick on every whole number of a short axis and grouped digits on
any axis.

>>> integer_ticks(0, 3)
{'tickformat': ',d', 'tick0': 0, 'dtick': 1}
>>> integer_ticks(0, 99_999)
{'tickformat': ','}
"""

from __future__ import annotations

__all__ = ["integer_ticks"]


def integer_ticks(lo: int, hi: int, max_ticks: int = 10) -> dict:
    """Plotly axis settings for a whole-number axis over ``lo..hi``.

    Under ``max_ticks`` whole numbers: one tick on each (``dtick`` 1 from 0), printed as
    integers. Otherwise plotly's own ticks (whole numbers over a span of 10 or more; they
    follow a zoom in the browser, which fixed ticks would not), digits grouped. Pass to
    ``fig.update_xaxes(**...)`` or merge into an axis dict. O(1).
    """
    if hi - lo + 1 < max_ticks:
        return {"tickformat": ",d", "tick0": 0, "dtick": 1}
    return {"tickformat": ","}
