"""Issue 9 in a real browser: after a hostile upload, every CSV (and JSON) a page offers is
downloaded and no cell starts a formula; a hostile URL shows a warning, not an error.

Run: ``.venv/bin/python -m pytest -m e2e tests/e2e/test_hostile_e2e.py``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from e2e_helpers import assert_no_exception, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

CORPUS = Path(__file__).resolve().parents[1] / "hostile_corpus"
PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
#: page path, nav label, the download buttons it offers once the upload is in use
DOWNLOADS = [
    ("/flaky_store", "Flaky store", ["Download the call log (CSV)", "Download every message with its fate (CSV)"]),
    ("/token_budget", "Token budget", ["Download the table (CSV)", "Download this context (JSON)"]),
    ("/listing_eviction", "Listing eviction", ["Download this table (CSV)"]),
]


def starts_formula(cell: str) -> bool:
    """OWASP: = + - @ (or full-width forms) after leading whitespace, or a leading tab/CR,
    unless the cell is a plain number."""
    if cell[:1] in ("\t", "\r"):
        return True
    return cell.lstrip()[:1] in ("=", "+", "-", "@", "＝", "＋", "－", "＠") and not PLAIN_NUMBER.fullmatch(cell)


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def test_every_download_after_a_formula_upload_has_no_formula_cell(page, streamlit_url, screenshot_dir):
    page.goto(streamlit_url + "/your_data", wait_until="domcontentloaded")
    wait_for_app(page)
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
        str(CORPUS / "formula_cells.jsonl")
    )
    page.get_by_text("Using the uploaded file: 2 conversations").wait_for(timeout=30_000)
    wait_for_app(page)
    assert_no_exception(page)

    downloaded = 0
    escaped = 0
    for path, label, buttons in DOWNLOADS:
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text=label).click()
        page.wait_for_url(re.compile(rf"{path}"))
        wait_for_app(page)
        assert_no_exception(page)
        for name in buttons:
            button = page.get_by_role("button", name=name)
            button.scroll_into_view_if_needed()
            with page.expect_download(timeout=30_000) as info:
                button.click()
            text = Path(info.value.path()).read_text(encoding="utf-8")
            if info.value.suggested_filename.endswith(".csv"):
                cells = [c for row in csv.reader(io.StringIO(text, newline="")) for c in row]
            else:
                cells = list(strings(json.loads(text)))
            assert cells, name
            bad = [c for c in cells if starts_formula(c)]
            assert not bad, (path, name, bad)
            escaped += sum(1 for c in cells if c.startswith("'") and starts_formula(c[1:]))
            downloaded += 1
            wait_for_app(page)
        screenshot(page, screenshot_dir, f"hostile_downloads{path.replace('/', '_')}")
    assert downloaded == 5
    assert escaped > 0  # the upload's formula ids and content reached the files, neutralized


def test_hostile_url_values_show_a_warning_not_an_error(page, streamlit_url, screenshot_dir):
    page.goto(streamlit_url + "/flaky_store?seed=inf&psize=1e309&rate=nan&overlap=-inf&zzz=1", wait_until="domcontentloaded")
    wait_for_app(page, charts=1)
    assert_no_exception(page)
    warning = page.locator('[data-testid="stAlert"]').filter(has_text="could not be used").first.inner_text()
    for key in ("seed", "psize", "rate", "overlap"):
        assert key in warning, warning
    assert "seed=" not in page.url and "psize=" not in page.url  # the URL no longer carries them
    screenshot(page, screenshot_dir, "hostile_url_flaky_store")
