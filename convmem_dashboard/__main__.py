"""``python -m convmem_dashboard [streamlit run options]``: the dashboard's server, with the modules
every page needs already imported.

``streamlit run dashboard.py`` serves the same app, but the first page view after the server
started then imports numpy, pandas, pyarrow, plotly and convmem under its spinner (about 1.4 s of
a 1.8 s first run on the bundled sample, 2 cores under load; 0.4 s with them imported:
docs/decisions.md, "The server imports what every page needs before it listens"). This launcher
imports them first, as a web server preloads its application, then hands its arguments to
``streamlit run dashboard.py`` (e.g. ``--server.port 8600``), so the server answers its health
check only once they are in. The dashboard's own modules are left to the first view: they
create Streamlit caches, which belong to the running server.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PRELOAD", "main"]

#: Imported before the server starts, in this order (the slow first imports of a page view).
PRELOAD = ("numpy", "pandas", "pyarrow", "plotly.graph_objects", "convmem")
#: The entry script Streamlit runs (beside the convmem_dashboard package).
DASHBOARD = Path(__file__).resolve().parent.parent / "dashboard.py"


def main(argv: Sequence[str] | None = None) -> None:
    """Import :data:`PRELOAD`, then run ``streamlit run dashboard.py *argv`` (default: this
    process's arguments). Exits with Streamlit's exit status (raises SystemExit)."""
    for name in PRELOAD:
        importlib.import_module(name)
    from streamlit.web import cli

    args = list(sys.argv[1:] if argv is None else argv)
    cli.main(args=["run", str(DASHBOARD), *args], prog_name="streamlit")


if __name__ == "__main__":
    main()
