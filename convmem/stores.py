"""Real message stores (the test doubles live in :mod:`convmem.testing`)."""

from __future__ import annotations

__all__: list[str] = []


def __getattr__(name: str):
    # The test doubles moved to convmem.testing (issue 12); the old names still resolve, with a
    # DeprecationWarning, until every caller imports them from there.
    from .testing import _moved

    return _moved.resolve(__name__, name)
