"""Shared helpers of the AppTest page tests (tests/test_page_*.py)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def dashboard_app() -> AppTest:
    """The whole dashboard (dashboard.py runs before every page), with a generous timeout."""
    return AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=60)


def ok(at: AppTest) -> AppTest:
    """``at`` after asserting that no exception element is shown."""
    assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    """Every st.metric shown, label -> value."""
    return {m.label: m.value for m in at.metric}


def open_dashboard_page(page: str, query: dict[str, str] | None = None, data: str | None = None) -> AppTest:
    """Run the dashboard on ``page`` (e.g. "pages/flaky_store.py") with URL params and a dataset key."""
    at = dashboard_app()
    at.switch_page(page)
    if query:
        at.query_params.update(query)
    if data:
        at.session_state["data"] = data  # the sidebar's dataset picker (convmem_dashboard.data)
    return at.run()
