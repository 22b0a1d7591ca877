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


def dataset_named(at: AppTest) -> str:
    """The dataset's name in the "Data in use" section of Home or Your data (Markdown-escaped, as
    drawn), from its line ``**Dataset:** <name>``."""
    lines = [m.value for m in at.markdown if m.value.startswith("**Dataset:** ")]
    assert len(lines) == 1, [m.value for m in at.markdown]
    return lines[0].removeprefix("**Dataset:** ")


def open_dashboard_page(page: str, query: dict[str, str] | None = None, data: str | None = None) -> AppTest:
    """Run the dashboard on ``page`` (e.g. "app_pages/flaky_store.py") with URL params and a dataset key."""
    at = dashboard_app()
    at.switch_page(page)
    if query:
        at.query_params.update(query)
    if data:
        at.session_state["data"] = data  # the sidebar's dataset picker (convmem_dashboard.data)
    return at.run()


def open_token_budget_sections(at: AppTest, query: dict | None) -> None:
    """On Token budget, open the comparison and the sweep (they start closed) unless ``query``
    (the link) names them; set as state, not in the link, so that a test can close them again
    (a link would win)."""
    for key in ("cmp", "sweep"):
        if key not in (query or {}):
            at.session_state[key] = True


#: Where a file is uploaded and a database opened (Home draws no widget below its links).
YOUR_DATA = "app_pages/your_data.py"
PAGES = ("app_pages/home.py", YOUR_DATA, "app_pages/flaky_store.py", "app_pages/token_budget.py",
         "app_pages/listing_eviction.py")
UPLOAD_ERROR_HEAD = "Could not read the upload; nothing was loaded. What is wrong and where:"


def to_your_data(at: AppTest) -> AppTest:
    """``at`` on Your data (the upload and the database form), switched there and run unless it
    is there already."""
    if not at.get("file_uploader"):
        at.switch_page(YOUR_DATA)
        ok(at.run())
    return at


def upload_file(at: AppTest, name: str, data: bytes, mime: str = "application/json") -> AppTest:
    """``at`` on Your data after uploading ``data`` as ``name`` and rerunning (exceptions asserted
    away); a run on another page switches to Your data first."""
    to_your_data(at).get("file_uploader")[0].set_value((name, data, mime))
    return ok(at.run())


def upload_error(at: AppTest) -> str | None:
    """Your data's upload error (the parser's message, shown verbatim in st.code), or None."""
    if UPLOAD_ERROR_HEAD not in [e.value for e in at.error]:
        return None
    return at.code[0].value


class DeferredDownloads:
    """Captures the callables of deferred download buttons (``st.download_button(data=callable)``)
    while active, by file name, so a test can make the file a click would download."""

    def __init__(self) -> None:
        self.made: dict[str, object] = {}
        self._patch = None

    def __enter__(self) -> DeferredDownloads:
        from unittest import mock

        from streamlit.runtime.media_file_manager import MediaFileManager

        original = MediaFileManager.add_deferred
        made = self.made

        def add_deferred(mgr, data_callable, mimetype, coordinates, file_name=None, **kw):
            made[file_name] = data_callable
            return original(mgr, data_callable, mimetype, coordinates, file_name, **kw)

        self._patch = mock.patch.object(MediaFileManager, "add_deferred", add_deferred)
        self._patch.start()
        return self

    def __exit__(self, *exc) -> None:
        self._patch.stop()

    def text(self, file_name: str) -> str:
        """The downloaded file's text (runs the button's callable, as a click would)."""
        data = self.made[file_name]()
        return data.decode("utf-8") if isinstance(data, bytes) else data
