"""Issue 9: one upload cap shared by .streamlit/config.toml, the Home page and the library."""

from __future__ import annotations

import tomllib
from pathlib import Path

from apptest_support import dashboard_app, ok, upload_error, upload_file
from convmem import UPLOAD_MAX_BYTES
from convmem.limits import UPLOAD_MAX_MB
from convmem_dashboard import data

ROOT = Path(__file__).resolve().parent.parent


def test_config_toml_and_the_byte_cap_agree():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    mb = config["server"]["maxUploadSize"]
    assert mb == UPLOAD_MAX_MB == 50
    # Streamlit's browser side: maxUploadSizeMb * (1024**2 on Windows, else 1000**2), and
    # react-dropzone refuses file.size > maxSize. The cap every browser enforces is 1000**2.
    assert UPLOAD_MAX_BYTES == mb * 1000 * 1000 == 50_000_000
    assert data.MAX_UPLOAD_BYTES == UPLOAD_MAX_BYTES


def test_the_home_page_says_why_a_file_over_the_cap_is_refused():
    """Reachable from a Windows browser (it lets through up to 50 * 1024**2 bytes)."""
    at = ok(dashboard_app().run())
    big = b"[" + b" " * (UPLOAD_MAX_BYTES - 1) + b"]"  # one byte over the cap
    assert len(big) == UPLOAD_MAX_BYTES + 1
    at = upload_file(at, "big.json", big)
    assert upload_error(at) == f"big.json: the file has {len(big):,} bytes, over the {UPLOAD_MAX_BYTES:,}-byte cap."
