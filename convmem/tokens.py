"""Token counting for messages, offline only.

convmem's messages carry a given token count (SPEC §2); this module computes that count when a
file has none. Two counters share one interface (:class:`TokenCounter`):

* :class:`TiktokenCounter` — exact OpenAI ``cl100k_base`` counts via tiktoken. It is used only
  when the ``cl100k_base`` BPE rank file is already on disk, so convmem **never** starts a network
  download (tiktoken would otherwise fetch the file, and on a machine without network that can
  hang). The file is looked for under its tiktoken cache name
  (``9b5ad71b2ce5302211f9c61530b329a4922fc6a4``) in ``$CONVMEM_TIKTOKEN_CACHE`` first, then in the
  directory tiktoken itself reads (``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else
  ``<tmp>/data-gym-cache``), and its sha256 is checked first (tiktoken deletes and re-downloads a
  file whose hash is wrong).
* :class:`ApproxCounter` — a documented approximation when the file is absent: the text is split
  with a stdlib-``re`` copy of cl100k's own pre-tokenizer pattern, and each piece of ``n`` UTF-8
  bytes counts ``ceil(n / 10)`` tokens (a short word is one token, a long run a few). Measured
  against cl100k on the 3,804 messages of the real tau-bench retail run (content plus tool-call
  names and arguments): total 606,695 vs 612,374 (-0.93 %); per message the absolute relative error
  has median 2.0 %, 90th percentile 6.5 %, max 50 % (on 2-token messages). For comparison,
  ``ceil(bytes / 4)`` is off by -5.1 % in total and 10.9 % per message (median). The pattern treats
  a run of CJK letters as one piece, so it undercounts non-Latin scripts.

What is counted (the definition of ``tau-bench/retail`` README): the content text, plus for each
tool call its function name and its arguments, each counted on its own and summed. The role and the
chat template are not counted: ``per_message_overhead`` defaults to 0, so counts are reproducible
content counts that match the data's own definition. OpenAI's chat format adds about 3 tokens per
message (plus 3 to prime the reply); pass ``per_message_overhead=3`` (or 4) to budget for that.

>>> c = ApproxCounter()
>>> c.name, c.count_text("Hello, world!"), c.count_text("")
('approx-cl100k-regex', 4, 0)
>>> c.count_message("assistant", None, [("get_product_details", '{"product_id":"6086499569"}')])
12
>>> default_counter().name in ("cl100k_base", "approx-cl100k-regex")
True
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import re
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .message import ROLES

__all__ = [
    "ApproxCounter",
    "CL100K_CACHE_KEY",
    "CL100K_SHA256",
    "TiktokenCounter",
    "TokenCounter",
    "default_counter",
    "find_cl100k_file",
    "make_counter",
]

#: tiktoken's cache file name for cl100k_base (sha1 of the download URL).
CL100K_CACHE_KEY = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
#: sha256 of the cl100k_base rank file, as in tiktoken 0.14.0's registry.
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

# cl100k_base's pre-tokenizer (tiktoken_ext.openai_public.cl100k_base), needed to build the
# encoding from a file outside tiktoken's cache directory. tests/test_tokens.py checks it is equal.
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
    r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}

# The same pattern in stdlib ``re`` (3.11 has possessive quantifiers): \p{L} -> [^\W\d_],
# \p{N} -> \d, and "_" counted as punctuation as in cl100k. Equal to the regex-module pattern on
# every text of the real retail run.
_APPROX_PAT = re.compile(
    r"""'(?i:[sdmt]|ll|ve|re)|(?:[^\r\n\w]|_)?+[^\W\d_]++|\d{1,3}+| ?(?:[^\s\w]|_)++[\r\n]*+|"""
    r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_APPROX_BYTES_PER_TOKEN = 10


@runtime_checkable
class TokenCounter(Protocol):
    """What convmem needs from a token counter.

    Attributes:
        name: which counter this is, for display (``"cl100k_base"``, ``"approx-cl100k-regex"``).
    """

    name: str

    def count_text(self, text: str) -> int:
        """Tokens in ``text`` (a non-negative int)."""
        ...  # pragma: no cover

    def count_message(
        self, role: str, content: str | None, tool_calls: Iterable[Any] = ()
    ) -> int:
        """Tokens of one message: content plus each tool call's name and arguments."""
        ...  # pragma: no cover


def _call_parts(call: Any) -> tuple[str, str]:
    """(name, arguments text) of one tool call given as a pair, an object or an OpenAI dict."""
    if isinstance(call, Mapping):
        fn = call.get("function", call)
        if not isinstance(fn, Mapping):
            raise TypeError(f"tool call 'function' must be a mapping, got {fn!r}")
        name, args = fn.get("name"), fn.get("arguments", "")
    elif isinstance(call, tuple) and len(call) == 2:
        name, args = call
    elif hasattr(call, "name") and hasattr(call, "arguments"):
        name, args = call.name, call.arguments
    else:
        raise TypeError(
            "tool call must be a (name, arguments) pair, an object with .name and .arguments, "
            f"or an OpenAI tool_call dict, got {call!r}"
        )
    if not isinstance(name, str):
        raise TypeError(f"tool call name must be a str, got {name!r}")
    if args is None:
        args = ""
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    return name, args


class _BaseCounter(ABC):
    """count_message on top of count_text; subclasses set ``name`` and ``count_text``."""

    __slots__ = ("per_message_overhead",)
    name: str

    def __init__(self, *, per_message_overhead: int = 0) -> None:
        if isinstance(per_message_overhead, bool) or not isinstance(per_message_overhead, int):
            raise TypeError(
                f"per_message_overhead must be an int, got {per_message_overhead!r}"
            )
        if per_message_overhead < 0:
            raise ValueError(
                f"per_message_overhead must be non-negative, got {per_message_overhead!r}"
            )
        self.per_message_overhead = per_message_overhead

    @abstractmethod
    def count_text(self, text: str) -> int:
        """Tokens of ``text``; each subclass counts its own way."""

    def count_message(
        self, role: str, content: str | None, tool_calls: Iterable[Any] = ()
    ) -> int:
        """Tokens of one message: overhead + content + each call's name + each call's arguments.

        Args:
            role: one of :data:`convmem.ROLES` (not itself counted).
            content: the text, or None.
            tool_calls: the calls, each a ``(name, arguments)`` pair, an object with ``.name`` and
                ``.arguments`` (like :class:`convmem.ToolCall`), or an OpenAI tool_call dict;
                arguments that are not a str are counted as compact JSON.

        Returns:
            a non-negative int. O(total text length).

        Raises:
            ValueError: unknown role. TypeError: content or a call of the wrong type.
        """
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        total = self.per_message_overhead
        if content is not None:
            total += self.count_text(content)
        for call in tool_calls:
            name, args = _call_parts(call)
            total += self.count_text(name) + self.count_text(args)
        return total

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, overhead={self.per_message_overhead})"


class ApproxCounter(_BaseCounter):
    """Approximate cl100k counts with no tokenizer file (see the module docstring for its error).

    Each piece of cl100k's pre-tokenizer split counts ``ceil(utf8_bytes / 10)``. O(len(text)).

    >>> ApproxCounter().count_text("The item 1234567890 is in stock.")
    11
    """

    __slots__ = ("detail",)
    name = "approx-cl100k-regex"

    def __init__(self, *, per_message_overhead: int = 0, detail: str = "") -> None:
        super().__init__(per_message_overhead=per_message_overhead)
        #: why this counter is in use, for display (set by :func:`make_counter`).
        self.detail = detail or "approximation of cl100k_base"

    def count_text(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {text!r}")
        if text.isascii():
            return sum(
                -(-len(piece) // _APPROX_BYTES_PER_TOKEN) for piece in _APPROX_PAT.findall(text)
            )
        return sum(
            -(-len(piece.encode("utf-8", "surrogatepass")) // _APPROX_BYTES_PER_TOKEN)
            for piece in _APPROX_PAT.findall(text)
        )


class TiktokenCounter(_BaseCounter):
    """Exact counts with a tiktoken ``Encoding`` (special-token text is counted as plain text).

    Build it with :func:`make_counter` / :func:`default_counter`, which never download.
    """

    __slots__ = ("encoding", "name", "detail")

    def __init__(self, encoding: Any, *, per_message_overhead: int = 0, detail: str = "") -> None:
        super().__init__(per_message_overhead=per_message_overhead)
        self.encoding = encoding
        self.name = encoding.name
        self.detail = detail or f"tiktoken {encoding.name}"

    def count_text(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {text!r}")
        if not text:
            return 0
        return len(self.encoding.encode_ordinary(text))


def _tiktoken_cache_dir(env: Mapping[str, str]) -> str | None:
    """The directory tiktoken itself reads, or None when its caching is disabled."""
    if "TIKTOKEN_CACHE_DIR" in env:
        d = env["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in env:
        d = env["DATA_GYM_CACHE_DIR"]
    else:
        d = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return d or None  # "" disables tiktoken's cache: it would download every time


def _sha256_ok(path: Path) -> bool:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == CL100K_SHA256
    except OSError:
        return False


def find_cl100k_file(env: Mapping[str, str] | None = None) -> tuple[Path, bool] | None:
    """Where the cl100k_base rank file is on disk, if anywhere; never touches the network.

    Looks in ``$CONVMEM_TIKTOKEN_CACHE`` and then tiktoken's own cache directory for a file named
    :data:`CL100K_CACHE_KEY` whose sha256 is :data:`CL100K_SHA256`.

    Returns:
        ``(path, in_tiktoken_cache)`` — the second item says whether tiktoken itself would find it
        — or None when no valid file exists.
    """
    env = os.environ if env is None else env
    tk_dir = _tiktoken_cache_dir(env)
    candidates: list[tuple[str, bool]] = []
    if env.get("CONVMEM_TIKTOKEN_CACHE"):
        mine = env["CONVMEM_TIKTOKEN_CACHE"]
        same = tk_dir is not None and os.path.abspath(mine) == os.path.abspath(tk_dir)
        candidates.append((mine, same))
    if tk_dir is not None:
        candidates.append((tk_dir, True))
    for directory, in_tk in candidates:
        path = Path(directory) / CL100K_CACHE_KEY
        if path.is_file() and _sha256_ok(path):
            return path, in_tk
    return None


_ENCODINGS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _load_cl100k(path: Path, in_tiktoken_cache: bool) -> Any:
    """A cl100k_base ``tiktoken.Encoding`` from a verified local file (cached per path)."""
    import tiktoken

    key = str(path)
    with _LOCK:
        if key in _ENCODINGS:
            return _ENCODINGS[key]
        if in_tiktoken_cache:
            # tiktoken finds the file itself (hash already checked), so it will not download.
            enc = tiktoken.get_encoding("cl100k_base")
        else:
            ranks: dict[bytes, int] = {}
            for line in path.read_bytes().splitlines():
                if line:
                    token, rank = line.split()
                    ranks[base64.b64decode(token)] = int(rank)
            enc = tiktoken.Encoding(
                name="cl100k_base",
                pat_str=_CL100K_PAT,
                mergeable_ranks=ranks,
                special_tokens=dict(_CL100K_SPECIAL),
            )
        _ENCODINGS[key] = enc
        return enc


def make_counter(*, per_message_overhead: int = 0) -> TiktokenCounter | ApproxCounter:
    """A fresh counter: cl100k_base when its file is on disk (see :func:`find_cl100k_file`), else
    :class:`ApproxCounter`. Never attempts a download. The encoding itself is loaded once per
    process (about 0.2 s).

    The returned counter's ``detail`` says why it was chosen, for display.

    Raises:
        ValueError/TypeError: a bad ``per_message_overhead``.
    """
    found = find_cl100k_file()
    if found is not None:
        try:
            enc = _load_cl100k(*found)
        except ImportError:
            reason = "tiktoken is not installed"
        else:
            return TiktokenCounter(
                enc,
                per_message_overhead=per_message_overhead,
                detail=f"tiktoken cl100k_base from {found[0]}",
            )
    else:
        reason = (
            f"no cl100k_base file ({CL100K_CACHE_KEY}) in $CONVMEM_TIKTOKEN_CACHE or tiktoken's "
            "cache directory"
        )
    return ApproxCounter(
        per_message_overhead=per_message_overhead, detail=f"approximation: {reason}"
    )


@functools.lru_cache(maxsize=1)
def default_counter() -> TiktokenCounter | ApproxCounter:
    """The process-wide default counter (:func:`make_counter` with no overhead), built once.

    Call ``default_counter.cache_clear()`` after changing the environment to choose again.
    """
    return make_counter()
