"""``python -m convmem``: the command line (see :mod:`convmem.cli` for subcommands and exit codes)."""

from __future__ import annotations

if __name__ == "__main__":
    from .cli import main

    raise SystemExit(main())
