"""The caps every entry point shares: one value each, used by the library, the dashboard and config.

* :data:`MAX_TOKENS`: the largest token count a :class:`~convmem.Message` accepts.
  ``2**53 - 1`` (``Number.MAX_SAFE_INTEGER``): every count, and every sum the dashboard shows,
  is exact as an int64 *and* as a float64 (plotly's JSON, pandas columns that hold NaN, the
  browser's JavaScript numbers). Real counts are below 10**7; anything bigger is a broken file.
* :data:`UPLOAD_MAX_BYTES`: the largest upload, in bytes. It is the cap Streamlit's browser side
  enforces for ``server.maxUploadSize = 50`` in ``.streamlit/config.toml``: the file uploader
  converts megabytes to bytes with ``BYTE_CONVERSION_SIZE = isFromWindows() ? 1024 : 1000``
  (``frontend/lib/src/util/FileHelper.ts``, ``sizeConverter``) and react-dropzone rejects a file
  when ``file.size > maxSize``. So a browser on Linux or macOS refuses anything over
  ``50 * 1000**2`` bytes, a browser on Windows anything over ``50 * 1024**2``, and Streamlit's
  server anything over ``50 * 1024**2`` (plus a little slack). The one cap that every browser
  enforces the same way is therefore ``50 * 1000**2 = 50,000,000`` bytes; the Your data page and the
  library refuse a larger file with their own message (reachable from a Windows browser or a
  script). tests/test_hostile_limits.py reads config.toml and checks the two agree.

>>> MAX_TOKENS, float(MAX_TOKENS) == MAX_TOKENS, float(MAX_TOKENS + 2) == MAX_TOKENS + 2
(9007199254740991, True, False)
>>> UPLOAD_MAX_BYTES == UPLOAD_MAX_MB * 1000**2
True
"""

from __future__ import annotations

__all__ = ["MAX_TOKENS", "UPLOAD_MAX_BYTES", "UPLOAD_MAX_MB"]

#: Largest token count of one message (and of a conversation in the dashboard): 2**53 - 1.
MAX_TOKENS: int = 2**53 - 1

#: ``server.maxUploadSize`` in .streamlit/config.toml (Streamlit's unit: "MB").
UPLOAD_MAX_MB: int = 50

#: Largest upload in bytes: what Streamlit's browser side lets through for UPLOAD_MAX_MB (above).
UPLOAD_MAX_BYTES: int = UPLOAD_MAX_MB * 1000 * 1000
