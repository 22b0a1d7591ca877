"""Issue 9: one upload cap shared by .streamlit/config.toml, the Your data page and the library."""

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


def test_figures_and_tables_keep_counts_near_the_max_exact():
    """A conversation whose total is exactly MAX_TOKENS (the most an upload may hold): the int64
    arrays and float64 sums behind the figures and the table stay exact."""
    from convmem import MAX_TOKENS, HistorySettings, Message, replay
    from convmem_dashboard.figures_budget import replay_arrays, totals_figure
    from convmem_dashboard.tables_budget import base_table, messages_table

    msgs = [Message("a", "user", MAX_TOKENS - 3), Message("b", "assistant", 1),
            Message("c", "user", 1), Message("d", "assistant", 1)]
    r = replay(msgs, HistorySettings(MAX_TOKENS - 1))
    arrays = replay_arrays(r)
    assert [int(t) for t in arrays.totals] == [MAX_TOKENS - 3, MAX_TOKENS - 2, MAX_TOKENS - 1, 3]
    assert [int(x) for x in arrays.ev_tokens] == [MAX_TOKENS - 3]  # float64 bincount, still exact
    table = messages_table(r, base_table(msgs))
    assert [int(x) for x in table["tokens"]] == [MAX_TOKENS - 3, 1, 1, 1]
    totals_figure(arrays, start=0, stop=3, selected=0).to_json()  # builds and serializes
