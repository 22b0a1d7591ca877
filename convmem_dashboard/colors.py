"""One palette for every page, so a role or an outcome has the same colour everywhere.

Colours are from the Okabe-Ito colour-blind-safe set; greys mark what is absent or dropped.
"""

from __future__ import annotations

from convmem.outcomes import CallOutcome, DropReason

__all__ = ["ROLE_COLORS", "OUTCOME_COLORS", "REASON_COLORS", "LINE_COLORS", "SETTING_COLORS", "role_color"]

#: Message roles (legend order = convmem.ROLES).
ROLE_COLORS: dict[str, str] = {
    "system": "#7F7F7F",  # grey: the prompt frame
    "user": "#0072B2",  # blue
    "assistant": "#009E73",  # green
    "tool": "#E69F00",  # orange
    "summary": "#CC79A7",  # purple: a summary in the window
}

#: Outcomes of a store call and of a message's fate.
OUTCOME_COLORS: dict[CallOutcome, str] = {
    CallOutcome.OK: "#009E73",
    CallOutcome.TRANSIENT: "#E69F00",
    CallOutcome.ERROR: "#D55E00",
    "backoff": "#56B4E9",
    "kept": "#009E73",
    "dropped": "#D55E00",
    "lost": "#D55E00",
    "repeated": "#CC79A7",
    "released": "#009E73",
    "shared": "#E69F00",
}

#: Why a message was dropped (convmem.DROP_REASONS).
REASON_COLORS: dict[DropReason, str] = {
    DropReason.OVER_LIMIT: "#D55E00",
    DropReason.TOOL_GROUP: "#E69F00",
    DropReason.START_ON_USER: "#56B4E9",
    DropReason.TOO_BIG: "#000000",
    DropReason.PIN_MOVED: "#CC79A7",
}

#: Reference lines drawn on charts.
LINE_COLORS: dict[str, str] = {
    "limit": "#D55E00",
    "target": "#0072B2",
    "cap": "#444444",  # dark grey: not the curve's green, not the dropped/chosen vermilion
    "budget": "#CC79A7",
}


#: The two settings compared side by side on the token-budget page.
SETTING_COLORS: dict[str, str] = {"A": "#0072B2", "B": "#E69F00"}


def role_color(role: str) -> str:
    """The colour of a role; unknown roles are grey."""
    return ROLE_COLORS.get(role, "#7F7F7F")
