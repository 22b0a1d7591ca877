"""Where the test doubles used to be: ``convmem.X`` and ``convmem.stores.X`` (private).

They moved to :mod:`convmem.testing` (issue 12). A module-level ``__getattr__`` in ``convmem`` and
``convmem.stores`` resolves the old names through :func:`resolve`, with a DeprecationWarning naming
the new import, so code written against the old layout keeps working while it is updated. None of
them is in an ``__all__`` any more.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["MOVED", "resolve"]

#: Names that moved to convmem.testing.
MOVED: frozenset[str] = frozenset(
    {
        "FAULT_CURSOR_CYCLE",
        "FAULT_EFFECTS",
        "FAULT_EMPTY_PAGE",
        "FAULT_NAMES",
        "FAULT_OVERLAP",
        "FAULT_REPEATED_CURSOR",
        "FAULT_TRANSIENT",
        "FAULT_WRAP_AROUND",
        "FaultConfig",
        "FlakyCall",
        "FlakyStore",
        "PagedStore",
        "ScriptedStore",
        "TruthDiff",
        "VirtualClock",
        "compare_to_truth",
    }
)


def resolve(module: str, name: str) -> Any:
    """``convmem.testing.<name>`` with a DeprecationWarning, or AttributeError for other names."""
    if name not in MOVED:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        f"{module}.{name} moved to convmem.testing: use 'from convmem.testing import {name}'",
        DeprecationWarning,
        stacklevel=3,
    )
    from .. import testing

    return getattr(testing, name)
