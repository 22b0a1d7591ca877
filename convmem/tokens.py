"""Token counting as the provider counts, exact and offline (no download, ever).

convmem's messages carry a given token count (SPEC §2); this module computes that count when a
file has none, so that **a message's tokens are what it costs in the prompt**: for an OpenAI chat
request, ``sum(message tokens) + counter.reply_priming`` is the provider's prompt token count.

Encodings (exact). ``cl100k_base`` and ``o200k_base`` BPE rank files ship inside the package
(``convmem/encodings/``, taken from the litellm 1.80.0 wheel, MIT; see PROVENANCE.md there) and
are checked against their SHA-256 (the hashes in tiktoken 0.14.0's registry) when first loaded.
The tiktoken ``Encoding`` is built from the local file with the encodings' own split pattern and
special tokens; ``tiktoken.get_encoding`` is never called, so nothing touches the network. If a
shipped file is missing or corrupt, a valid copy under tiktoken's cache name in
``$CONVMEM_TIKTOKEN_CACHE`` or tiktoken's cache directory is used instead; if there is none,
:func:`make_counter` raises :class:`EncodingUnavailableError` (it never silently approximates).

Models (:func:`encoding_for_model`): tiktoken 0.14.0's own model table (gpt-4o, gpt-4o-mini, o1,
o3, o4-mini, gpt-4.1, gpt-4.5, gpt-5 -> ``o200k_base``; gpt-4, gpt-3.5-turbo -> ``cl100k_base``;
gpt-oss's ``o200k_harmony`` has o200k's ranks, so ordinary text counts as ``o200k_base``).
``model=None`` means :data:`DEFAULT_ENCODING` (``cl100k_base``, the encoding the real-data README
and the sample data are defined in). A model tiktoken does not know is counted with
:data:`DEFAULT_ENCODING` and flagged ``exact=False``. ``claude*`` and ``gemini*`` models use
:class:`ApproxCounter` (``exact=False``): their tokenizers are not public.

Message rule (OpenAI cookbook "How to count tokens with tiktoken", ``num_tokens_from_messages``,
for gpt-3.5-turbo-0613 and later / gpt-4 / gpt-4o): every message costs
``tokens_per_message = 3``, plus the tokens of each of its values (role, content, name), plus 1
per ``name``; every request adds 3 for the reply priming (``<|start|>assistant<|message|>``).
The cookbook does not cover tool calls. convmem counts each tool call as its function name plus its
arguments plus :data:`TOOL_CALL_OVERHEAD` (3): the rule hmarr/openai-chat-tokens measured against
the API for a legacy ``function_call`` (name + arguments + 3), applied to each call. Tool
*definitions* (the request's ``tools``) are not messages and are not counted here; the cookbook's
``num_tokens_for_tools`` is itself only an estimate. A tool result's ``tool_call_id`` is not counted
(the cookbook has no such key; convmem's counters never see ids).

Content-only mode (``per_message_overhead=0``): the content text plus each tool call's name and
arguments, nothing else (no role, no name, no per-call constant, ``reply_priming == 0``). This is
the definition of the real tau-bench data's README, kept so that definition can be checked.

Images (:class:`ImageRef`, :class:`ImageRule`): OpenAI's documented formula, per model family
(see :data:`IMAGE_RULES` and docs/decisions.md): ``detail="low"`` costs the base tokens; ``high``
(and ``auto``, counted as high) scales the image down to fit 2048x2048, then its shortest side down
to 768, and costs base + per-tile x (512 px tiles). An image of unknown size costs the most the
formula can give for that model (a budget never undercounts).

Huge texts: texts longer than :data:`CHUNK_CHARS` characters are encoded chunk by chunk, cut only
just before a space that follows a non-whitespace character. No piece of either encoding's
pre-tokenizer spans such a point, so the count is exactly the unchunked count (tests cut every text
of the real retail run at all 321,701 such points: 0 differences; and hypothesis-generated texts).
Only a window of CHUNK_CHARS characters with no such point (e.g. 128 Ki characters of base64) is cut
hard, which can move the count by a token or so per hard cut (measured: +4 tokens over 32 hard cuts
of 4 MiB of base64, benchmarks/bench_tokens.py). Memory stays O(CHUNK_CHARS)
beyond the text itself.

>>> c = make_counter()                      # exact cl100k_base, OpenAI chat framing
>>> (c.name, c.exact, c.per_message_overhead, c.reply_priming)
('cl100k_base', True, 3, 3)
>>> c.count_text("Hello, world!")
4
>>> c.count_message("user", "Hello, world!")  # 3 + role (1) + content (4)
8
>>> make_counter(per_message_overhead=0).count_message("user", "Hello, world!")
4
>>> make_counter("gpt-4o").encoding_name
'o200k_base'
>>> ImageRule.tile(85, 170).tokens(ImageRef(1024, 1024, "high"))   # OpenAI's own example
765
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import json
import math
import os
import re
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .errors import ConvmemError

__all__ = [
    "ApproxCounter",
    "CHUNK_CHARS",
    "CL100K_CACHE_KEY",
    "CL100K_SHA256",
    "DEFAULT_ENCODING",
    "ENCODINGS",
    "EncodingUnavailableError",
    "IMAGE_RULES",
    "ImageRef",
    "ImageRule",
    "O200K_CACHE_KEY",
    "O200K_SHA256",
    "OPENAI_PER_MESSAGE",
    "OPENAI_REPLY_PRIMING",
    "TOOL_CALL_OVERHEAD",
    "TiktokenCounter",
    "TokenCounter",
    "count_prompt",
    "default_counter",
    "encoding_for_model",
    "find_cl100k_file",
    "find_encoding_file",
    "image_rule_for_model",
    "make_counter",
]

#: tiktoken's cache file name for cl100k_base (sha1 of the download URL).
CL100K_CACHE_KEY = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
#: sha256 of the cl100k_base rank file, as in tiktoken 0.14.0's registry.
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
#: tiktoken's cache file name for o200k_base.
O200K_CACHE_KEY = "fb374d419588a4632f3f557e76b4b70aebbca790"
#: sha256 of the o200k_base rank file, as in tiktoken 0.14.0's registry.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

#: OpenAI cookbook: tokens every chat message costs beyond its values.
OPENAI_PER_MESSAGE = 3
#: OpenAI cookbook: tokens every request adds to prime the reply.
OPENAI_REPLY_PRIMING = 3
#: per tool call beyond its name and arguments, chat mode only (hmarr/openai-chat-tokens).
TOOL_CALL_OVERHEAD = 3
#: the encoding for ``model=None`` and for models tiktoken does not know.
DEFAULT_ENCODING = "cl100k_base"
#: texts longer than this (characters) are counted in chunks (see the module docstring).
CHUNK_CHARS = 1 << 17

# Split patterns and special tokens, equal to tiktoken_ext.openai_public's (tests check it).
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
    r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@dataclass(frozen=True, slots=True)
class _EncodingSpec:
    name: str
    file: str  # file name under convmem/encodings/
    cache_key: str  # tiktoken's cache file name
    sha256: str
    pat_str: str
    special_tokens: Mapping[str, int]


#: The encodings shipped with convmem: name -> spec (file, sha256, split pattern, special tokens).
ENCODINGS: Mapping[str, _EncodingSpec] = {
    "cl100k_base": _EncodingSpec(
        "cl100k_base", "cl100k_base.tiktoken", CL100K_CACHE_KEY, CL100K_SHA256, _CL100K_PAT,
        {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
         "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    ),
    "o200k_base": _EncodingSpec(
        "o200k_base", "o200k_base.tiktoken", O200K_CACHE_KEY, O200K_SHA256, _O200K_PAT,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}

_SHIPPED_DIR = Path(__file__).resolve().parent / "encodings"

# The same cl100k pattern in stdlib ``re`` (3.11 has possessive quantifiers): \p{L} -> [^\W\d_],
# \p{N} -> \d, and "_" counted as punctuation as in cl100k. Equal to the regex-module pattern on
# every text of the real retail run.
_APPROX_PAT = re.compile(
    r"""'(?i:[sdmt]|ll|ve|re)|(?:[^\r\n\w]|_)?+[^\W\d_]++|\d{1,3}+| ?(?:[^\s\w]|_)++[\r\n]*+|"""
    r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_APPROX_BYTES_PER_TOKEN = 10

# A safe chunk boundary: a space right after a non-whitespace character (module docstring).
_SAFE_CUT = re.compile(r"(?<=\S) ")


class EncodingUnavailableError(ConvmemError, RuntimeError):
    """No valid rank file for an encoding: the shipped one is missing or corrupt, and no cache holds
    a copy with the right SHA-256. Reinstall convmem (or point ``$CONVMEM_TIKTOKEN_CACHE`` at a
    folder holding the file under tiktoken's cache name)."""


# ---------------------------------------------------------------------------------------------
# Images


_DETAILS = ("auto", "low", "high")


@dataclass(frozen=True, slots=True)
class ImageRef:
    """An image part of a message, as far as its token cost goes.

    Attributes:
        width, height: pixels (positive ints), or None when the file does not say.
        detail: ``"auto"`` (default), ``"low"`` or ``"high"`` (OpenAI's ``image_url.detail``).

    Raises:
        TypeError/ValueError: a size that is not a positive int, or an unknown detail.
    """

    width: int | None = None
    height: int | None = None
    detail: str = "auto"

    def __post_init__(self) -> None:
        for field in ("width", "height"):
            v = getattr(self, field)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"ImageRef.{field} must be an int or None, got {v!r}")
            if v < 1:
                raise ValueError(f"ImageRef.{field} must be positive, got {v!r}")
        if self.detail not in _DETAILS:
            raise ValueError(f"ImageRef.detail must be one of {_DETAILS}, got {self.detail!r}")

    @property
    def known_size(self) -> bool:
        """True when both width and height are given."""
        return self.width is not None and self.height is not None


@dataclass(frozen=True, slots=True)
class ImageRule:
    """How one model family counts an image (construct with :meth:`tile`, :meth:`patch`,
    :meth:`area` or :meth:`gemini`).

    * ``tile`` (OpenAI gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3, gpt-4-turbo): low -> ``base``;
      high/auto -> scale down to fit 2048x2048, then the shortest side down to 768 (sizes rounded to
      the nearest pixel, never scaled up), ``base + per_tile * ceil(w/512) * ceil(h/512)``.
      Unknown size: 8 tiles (the largest result: 2048x768).
    * ``patch`` (OpenAI gpt-4.1-mini/nano, gpt-5-mini/nano, o4-mini): 32 px patches,
      ``ceil(w/32) * ceil(h/32)`` capped at 1536 by scaling down (OpenAI's algorithm), times
      ``multiplier``, rounded; ``detail`` does not change the cost. Unknown size: 1536 patches.
    * ``area`` (Anthropic): scale down so the long edge is <= 1568 px, ``round(w * h / 750)``,
      at most ``cap`` (1600). Unknown size: ``cap``.
    * ``gemini`` (Google Gemini 2.x): 258 if both sides <= 384, else 258 per 768x768 tile.
      Unknown size: 258 (one tile: Gemini has no documented maximum).

    >>> r = ImageRule.tile(85, 170)
    >>> r.tokens(ImageRef(1024, 1024)), r.tokens(ImageRef(2048, 4096)), r.tokens(ImageRef(9, 9, "low"))
    (765, 1105, 85)
    >>> r.tokens(ImageRef(None, None))
    1445
    >>> ImageRule.patch(1.62).tokens(ImageRef(1800, 2400))   # 1452 patches x 1.62
    2352
    """

    kind: str
    base: int = 0
    per_tile: int = 0
    multiplier: float = 1.0
    cap: int = 0

    @classmethod
    def tile(cls, base: int, per_tile: int) -> ImageRule:
        """OpenAI's 512 px tile formula with the given constants."""
        return cls("tile", base=base, per_tile=per_tile)

    @classmethod
    def patch(cls, multiplier: float) -> ImageRule:
        """OpenAI's 32 px patch formula with the given multiplier."""
        return cls("patch", multiplier=multiplier)

    @classmethod
    def area(cls, cap: int = 1600) -> ImageRule:
        """Anthropic's ``width * height / 750`` rule."""
        return cls("area", cap=cap)

    @classmethod
    def gemini(cls) -> ImageRule:
        """Gemini 2.x: 258 tokens per 768 px tile (one tile up to 384x384)."""
        return cls("gemini", per_tile=258)

    def tokens(self, image: ImageRef) -> int:
        """Tokens of ``image`` under this rule (a non-negative int). O(1)."""
        if not isinstance(image, ImageRef):
            raise TypeError(f"image must be an ImageRef, got {image!r}")
        known = image.known_size
        w, h = (image.width, image.height) if known else (0, 0)
        if self.kind == "tile":
            if image.detail == "low":
                return self.base
            if not known:
                return self.base + 8 * self.per_tile
            w, h = _fit(w, h, 2048 / max(w, h))
            w, h = _fit(w, h, 768 / min(w, h))
            return self.base + self.per_tile * math.ceil(w / 512) * math.ceil(h / 512)
        if self.kind == "patch":
            if not known:
                return round(1536 * self.multiplier)
            patches = math.ceil(w / 32) * math.ceil(h / 32)
            if patches > 1536:
                s = math.sqrt(32 * 32 * 1536 / (w * h))
                s *= min(math.floor(w * s / 32) / (w * s / 32), math.floor(h * s / 32) / (h * s / 32))
                patches = min(1536, math.ceil(w * s / 32) * math.ceil(h * s / 32))
            return round(patches * self.multiplier)
        if self.kind == "area":
            if not known:
                return self.cap
            w, h = _fit(w, h, 1568 / max(w, h))
            return min(self.cap, round(w * h / 750))
        if self.kind == "gemini":
            if not known or (w <= 384 and h <= 384):
                return self.per_tile
            return self.per_tile * math.ceil(w / 768) * math.ceil(h / 768)
        raise ValueError(f"ImageRule.kind must be tile, patch, area or gemini, got {self.kind!r}")


def _fit(w: int, h: int, scale: float) -> tuple[int, int]:
    """(w, h) scaled by ``scale`` when it is below 1, each rounded to the nearest pixel (>= 1)."""
    if scale >= 1:
        return w, h
    return max(1, round(w * scale)), max(1, round(h * scale))


_TILE_DEFAULT = ImageRule.tile(85, 170)
#: Model-name prefix -> image rule, longest prefix first when matching. Sources in
#: docs/decisions.md: OpenAI's vision guide ("Calculating costs"), Anthropic's and Google's docs.
IMAGE_RULES: Mapping[str, ImageRule] = {
    "gpt-4o-mini": ImageRule.tile(2833, 5667),
    "gpt-4.1-mini": ImageRule.patch(1.62),
    "gpt-4.1-nano": ImageRule.patch(2.46),
    "gpt-5-mini": ImageRule.patch(1.62),
    "gpt-5-nano": ImageRule.patch(2.46),
    "o4-mini": ImageRule.patch(1.72),
    "o1": ImageRule.tile(75, 150),
    "o3": ImageRule.tile(75, 150),
    "claude": ImageRule.area(),
    "gemini": ImageRule.gemini(),
}


def image_rule_for_model(model: str | None) -> ImageRule:
    """The image rule for ``model`` (longest matching prefix of :data:`IMAGE_RULES`; else OpenAI's
    gpt-4o tile rule, 85 + 170 per tile, which is also the rule for ``None``)."""
    if model:
        for prefix in sorted(IMAGE_RULES, key=len, reverse=True):
            if model.startswith(prefix) or model.startswith("ft:" + prefix):
                return IMAGE_RULES[prefix]
    return _TILE_DEFAULT


# ---------------------------------------------------------------------------------------------
# Counters


@runtime_checkable
class TokenCounter(Protocol):
    """What convmem needs from a token counter.

    convmem's counters (:func:`make_counter`) also have ``reply_priming`` (tokens once per
    request), ``encoding_name`` and ``exact``; callers read ``getattr(c, "reply_priming", 0)`` for
    a counter of their own. Callers pass ``name`` and ``images`` only when a message has them, so a
    counter of one's own with the older three-parameter ``count_message`` keeps working.

    Attributes:
        name: which counter this is, for display (``"cl100k_base"``, ``"approx-cl100k-regex"``).
    """

    name: str

    def count_text(self, text: str) -> int:
        """Tokens in ``text`` (a non-negative int)."""
        ...  # pragma: no cover

    def count_message(
        self,
        role: str,
        content: str | None,
        tool_calls: Iterable[Any] = (),
        *,
        name: str | None = None,
        images: Sequence[ImageRef] = (),
    ) -> int:
        """Tokens of one message in the prompt (see :meth:`_BaseCounter.count_message`)."""
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
        try:
            args = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:  # a set, bytes, a circular dict
            raise TypeError(
                f"tool call {name!r} arguments must be a str or JSON-serializable, got "
                f"{args!r:.200} ({exc})"
            ) from None
    return name, args


def _chunks(text: str, size: int) -> Iterator[str]:
    """``text`` in pieces of at most ``size`` characters, each cut at the first safe point of the
    window's second half, else at the last safe point of its first half, else (no safe point in
    the whole window) hard at ``size`` (see the module docstring)."""
    n, start = len(text), 0
    while n - start > size:
        hi, mid = start + size, start + size // 2
        m = _SAFE_CUT.search(text, mid, hi)
        if m is None:
            for m in _SAFE_CUT.finditer(text, start + 1, mid):  # noqa: B007 - keep the last
                pass
        cut = m.start() if m else hi
        yield text[start:cut]
        start = cut
    yield text[start:]


class _BaseCounter(ABC):
    """count_message on top of count_text; subclasses set ``name`` and ``_count_chunk``."""

    __slots__ = (
        "per_message_overhead", "reply_priming", "image_rule", "model", "exact", "detail",
        "chunk_chars", "_short",
    )
    name: str
    encoding_name: str

    def __init__(
        self,
        *,
        per_message_overhead: int = 0,
        reply_priming: int | None = None,
        image_rule: ImageRule | None = None,
        model: str | None = None,
        exact: bool = False,
        detail: str = "",
        chunk_chars: int = CHUNK_CHARS,
    ) -> None:
        for field, v in (("per_message_overhead", per_message_overhead),
                         ("reply_priming", reply_priming), ("chunk_chars", chunk_chars)):
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{field} must be an int, got {v!r}")
            if v < 0 or (field == "chunk_chars" and v < 2):
                raise ValueError(f"{field} must be non-negative (chunk_chars >= 2), got {v!r}")
        #: tokens every message costs beyond its values (0: content-only mode).
        self.per_message_overhead = per_message_overhead
        #: tokens added once per request (3 for OpenAI chat; 0 in content-only mode).
        self.reply_priming = (
            (OPENAI_REPLY_PRIMING if per_message_overhead else 0)
            if reply_priming is None else reply_priming
        )
        self.image_rule = image_rule or image_rule_for_model(model)
        self.model = model
        #: True when counts are the provider's own tokenizer's counts.
        self.exact = exact
        self.detail = detail
        self.chunk_chars = chunk_chars
        # counts of short strings (roles, names, function names) repeat on every message
        self._short: dict[str, int] = {}

    @abstractmethod
    def _count_chunk(self, text: str) -> int:
        """Tokens of one chunk of text."""

    def _count_short(self, text: str) -> int:
        """count_text for a role, name or function name, remembered (at most 4,096 strings of at
        most 64 characters; the memo is emptied when full)."""
        n = self._short.get(text)
        if n is None:
            n = self.count_text(text)
            if len(text) <= 64:
                if len(self._short) >= 4096:
                    self._short.clear()
                self._short[text] = n
        return n

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` (no message framing). O(len(text)); memory O(:data:`CHUNK_CHARS`).

        Raises:
            TypeError: ``text`` is not a str.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {text!r}")
        if not text:
            return 0
        if len(text) <= self.chunk_chars:
            return self._count_chunk(text)
        return sum(self._count_chunk(c) for c in _chunks(text, self.chunk_chars))

    def count_texts(self, texts: Iterable[str]) -> list[int]:
        """``[count_text(t) for t in texts]``: tokens of each text, in order, in one call (for
        many short texts, e.g. a replay's summary lines). O(total length).

        >>> make_counter().count_texts(["Hello, world!", "", "Hello"])
        [4, 0, 1]

        Raises:
            TypeError: a text is not a str.
        """
        if isinstance(texts, str):
            raise TypeError(f"count_texts takes an iterable of str, got the str {texts[:40]!r}")
        return list(map(self.count_text, texts))

    def count_message(
        self,
        role: str,
        content: str | None,
        tool_calls: Iterable[Any] = (),
        *,
        name: str | None = None,
        images: Sequence[ImageRef] = (),
    ) -> int:
        """Tokens one message costs in the prompt (module docstring: the cookbook's rule).

        Chat mode (``per_message_overhead > 0``): overhead + role + content + name (+1) + for each
        tool call (name + arguments + :data:`TOOL_CALL_OVERHEAD`) + each image (:class:`ImageRule`).
        Content-only mode (``per_message_overhead == 0``): content + each call's name and arguments
        + each image.

        Args:
            role: the provider's own role string (``"developer"``, ``"function"``, ``"human"``...):
                any non-empty str; it is counted as text in chat mode.
            content: the text, or None.
            tool_calls: each a ``(name, arguments)`` pair, an object with ``.name`` and
                ``.arguments`` (like :class:`convmem.ToolCall`), or an OpenAI tool_call dict;
                arguments that are not a str are counted as compact JSON.
            name: the message's ``name`` field, or None.
            images: the message's image parts.

        Returns:
            a non-negative int. O(total text length).

        Raises:
            ValueError: an empty role. TypeError: a field of the wrong type.
        """
        if not isinstance(role, str):
            raise TypeError(f"role must be a str, got {role!r}")
        if not role:
            raise ValueError("role must be a non-empty str, got ''")
        if content is not None and not isinstance(content, str):
            raise TypeError(f"content must be a str or None, got {content!r}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {name!r}")
        chat = self.per_message_overhead > 0
        total = 0
        if chat:
            total += self.per_message_overhead + self._count_short(role)
            if name is not None:
                total += self._count_short(name) + 1
        if content:
            total += self.count_text(content)
        if isinstance(tool_calls, (str, bytes, Mapping)):  # one call, or text: not a list
            raise TypeError(f"tool_calls must be a list of tool calls, got {tool_calls!r:.200}")
        for call in tool_calls:
            call_name, args = _call_parts(call)
            total += self._count_short(call_name) + self.count_text(args)
            if chat:
                total += TOOL_CALL_OVERHEAD
        if isinstance(images, ImageRef):
            raise TypeError("images must be a sequence of ImageRef, got one ImageRef")
        for image in images:
            total += self.image_rule.tokens(image)
        return total

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, "
                f"overhead={self.per_message_overhead}, exact={self.exact})")


class ApproxCounter(_BaseCounter):
    """Approximate cl100k counts without a tokenizer (for providers whose tokenizer is not public,
    or when asked with ``make_counter(approximate=True)``).

    Each piece of cl100k's pre-tokenizer split (a stdlib-``re`` copy) counts
    ``ceil(utf8_bytes / 10)``. O(len(text)). Measured on the 3,804 messages of the real tau-bench
    retail run (content plus tool-call names and arguments): total 606,695 vs cl100k's 612,374
    (-0.93 %); per message median absolute error 2.0 %, 90th percentile 6.5 %. Against o200k_base
    (609,002 on the same texts) the total is -0.38 %. The split treats a run of CJK letters as one piece, so it
    undercounts non-Latin scripts. How far it is from Anthropic's or Google's own tokenizers cannot
    be measured here (they are not public and there is no network): expect a larger error.

    Constructed directly it is in content-only mode (``per_message_overhead=0``) unless told.

    >>> ApproxCounter().count_text("The item 1234567890 is in stock.")
    11
    """

    __slots__ = ()
    name = "approx-cl100k-regex"
    encoding_name = "cl100k_base"

    def __init__(self, *, per_message_overhead: int = 0, detail: str = "", **kw: Any) -> None:
        super().__init__(per_message_overhead=per_message_overhead,
                         detail=detail or "approximation of cl100k_base", **kw)

    def _count_chunk(self, text: str) -> int:
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

    Build it with :func:`make_counter`, which never downloads. Constructed directly it is in
    content-only mode (``per_message_overhead=0``) unless told.
    """

    __slots__ = ("encoding", "name", "encoding_name")

    def __init__(self, encoding: Any, *, per_message_overhead: int = 0, detail: str = "",
                 exact: bool = True, **kw: Any) -> None:
        super().__init__(per_message_overhead=per_message_overhead,
                         detail=detail or f"tiktoken {encoding.name}", exact=exact, **kw)
        self.encoding = encoding
        self.name = encoding.name
        self.encoding_name = encoding.name

    def _count_chunk(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def count_texts(self, texts: Iterable[str]) -> list[int]:
        """``[count_text(t) for t in texts]`` in one loop: each str of at most ``chunk_chars``
        characters is one ``encode_ordinary`` call, with no method call of convmem's per text
        (tiktoken's ``encode_ordinary_batch`` is slower for short texts, and its threads do not
        run in parallel: tiktoken 0.14 holds the GIL). O(total length).

        A subclass that overrides ``_count_chunk`` is counted through it (the loop above is the
        base class's own count).

        Raises:
            TypeError: ``texts`` is a str, or a text is not a str.
        """
        if type(self)._count_chunk is not TiktokenCounter._count_chunk or isinstance(texts, str):
            return super().count_texts(texts)
        encode, limit, count = self.encoding.encode_ordinary, self.chunk_chars, self.count_text
        return [len(encode(t)) if type(t) is str and len(t) <= limit else count(t) for t in texts]


# ---------------------------------------------------------------------------------------------
# Finding and loading the rank files


def _tiktoken_cache_dir(env: Mapping[str, str]) -> str | None:
    """The directory tiktoken itself reads, or None when its caching is disabled."""
    if "TIKTOKEN_CACHE_DIR" in env:
        d = env["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in env:
        d = env["DATA_GYM_CACHE_DIR"]
    else:
        d = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return d or None  # "" disables tiktoken's cache: it would download every time


@functools.lru_cache(maxsize=16)
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _sha256_ok(path: Path, expected: str) -> bool:
    try:
        st = path.stat()
        return _sha256_of(str(path), st.st_size, st.st_mtime_ns) == expected
    except OSError:
        return False


def _spec(encoding: str) -> _EncodingSpec:
    try:
        return ENCODINGS[encoding]
    except (KeyError, TypeError):
        raise ValueError(
            f"encoding must be one of {sorted(ENCODINGS)}, got {encoding!r}"
        ) from None


def find_encoding_file(
    encoding: str = "cl100k_base", env: Mapping[str, str] | None = None
) -> Path | None:
    """Where a valid rank file for ``encoding`` is on disk; never touches the network.

    Looks at the shipped file (``convmem/encodings/<encoding>.tiktoken``) first, then for a file
    named by tiktoken's cache key in ``$CONVMEM_TIKTOKEN_CACHE`` and tiktoken's cache directory
    (``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else ``<tmp>/data-gym-cache``). A file
    counts only when its SHA-256 is the registry's. Returns None when none is valid.

    Raises:
        ValueError: an encoding convmem does not ship.
    """
    spec = _spec(encoding)
    env = os.environ if env is None else env
    candidates = [_SHIPPED_DIR / spec.file]
    if env.get("CONVMEM_TIKTOKEN_CACHE"):
        candidates.append(Path(env["CONVMEM_TIKTOKEN_CACHE"]) / spec.cache_key)
    tk_dir = _tiktoken_cache_dir(env)
    if tk_dir is not None:
        candidates.append(Path(tk_dir) / spec.cache_key)
    for path in candidates:
        if path.is_file() and _sha256_ok(path, spec.sha256):
            return path
    return None


def find_cl100k_file(env: Mapping[str, str] | None = None) -> tuple[Path, bool] | None:
    """Back-compatible form of :func:`find_encoding_file` for cl100k_base.

    Returns:
        ``(path, in_tiktoken_cache)`` or None; the second item says whether the file is in
        tiktoken's own cache directory (it is False for the shipped file).
    """
    env = os.environ if env is None else env
    path = find_encoding_file("cl100k_base", env)
    if path is None:
        return None
    tk_dir = _tiktoken_cache_dir(env)
    return path, tk_dir is not None and path.parent.resolve() == Path(tk_dir).resolve()


_ENCODINGS_LOADED: dict[str, Any] = {}
_LOCK = threading.Lock()


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    """``{token bytes: rank}`` of a rank file's bytes (tiktoken's format: one ``base64 rank`` pair
    per line), equal to ``tiktoken.load.load_tiktoken_bpe``'s parse. Splits the whole file at once
    and decodes in C-level maps, with no Python loop per line: about 0.06 s instead of 0.08-0.11 s
    for cl100k_base's 100,256 lines. O(file size).

    Raises:
        ValueError: the file does not hold two fields per non-empty line (the files are checked
            against their SHA-256 first, so never for a shipped or cached file).
    """
    fields = data.split()
    lines = data.splitlines()
    if len(fields) != 2 * (len(lines) - lines.count(b"")):
        raise ValueError("a rank file's lines must each be one 'base64 rank' pair")
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2])))


def _load_encoding(encoding: str) -> Any:
    """The tiktoken ``Encoding`` for ``encoding`` from a verified local file, built once per
    process (about 0.3 s for cl100k_base, 0.6 s for o200k_base).

    Raises:
        EncodingUnavailableError: no valid file. ImportError: tiktoken is not installed.
    """
    import tiktoken

    spec = _spec(encoding)
    with _LOCK:
        enc = _ENCODINGS_LOADED.get(encoding)
        if enc is not None:
            return enc
        path = find_encoding_file(encoding)
        if path is None:
            raise EncodingUnavailableError(
                f"no {encoding} rank file with sha256 {spec.sha256}: the packaged "
                f"{_SHIPPED_DIR / spec.file} is missing or corrupt and no cache holds "
                f"{spec.cache_key}; reinstall convmem, or pass approximate=True"
            )
        ranks = _parse_ranks(path.read_bytes())
        enc = tiktoken.Encoding(
            name=spec.name,
            pat_str=spec.pat_str,
            mergeable_ranks=ranks,
            special_tokens=dict(spec.special_tokens),
        )
        _ENCODINGS_LOADED[encoding] = enc
        return enc


# ---------------------------------------------------------------------------------------------
# Models and factories

_APPROX_PREFIXES = ("claude", "anthropic", "gemini", "models/gemini", "google/gemini")


def encoding_for_model(model: str) -> tuple[str, bool]:
    """``(encoding name, known)`` for an OpenAI model name, from tiktoken 0.14.0's own table
    (``tiktoken.encoding_name_for_model``, offline). ``o200k_harmony`` (gpt-oss) maps to
    ``o200k_base`` (same ranks; only special tokens differ). A model tiktoken does not know gives
    ``(DEFAULT_ENCODING, False)``.

    >>> encoding_for_model("gpt-4o-mini"), encoding_for_model("gpt-4")
    (('o200k_base', True), ('cl100k_base', True))
    >>> encoding_for_model("my-local-llama")
    ('cl100k_base', False)

    Raises:
        TypeError/ValueError: ``model`` is not a non-empty str; a model whose encoding convmem
            does not ship (e.g. ``text-davinci-003`` -> p50k_base).
    """
    if not isinstance(model, str):
        raise TypeError(f"model must be a str, got {model!r}")
    if not model:
        raise ValueError("model must be a non-empty str, got ''")
    import tiktoken

    try:
        name = tiktoken.encoding_name_for_model(model)
    except KeyError:
        return DEFAULT_ENCODING, False
    if name == "o200k_harmony":
        name = "o200k_base"
    if name not in ENCODINGS:
        raise ValueError(
            f"model {model!r} uses {name}, which convmem does not ship "
            f"(shipped: {sorted(ENCODINGS)})"
        )
    return name, True


def make_counter(
    model: str | None = None,
    *,
    encoding: str | None = None,
    approximate: bool = False,
    per_message_overhead: int | None = None,
) -> TiktokenCounter | ApproxCounter:
    """A counter for ``model``'s prompts; never downloads anything.

    Args:
        model: the provider's model name (``"gpt-4o"``, ``"gpt-4"``, ``"claude-..."``), or None
            for :data:`DEFAULT_ENCODING`. See the module docstring for the model table.
        encoding: ``"cl100k_base"`` or ``"o200k_base"``, overriding the model's encoding.
        approximate: use :class:`ApproxCounter` (no rank file needed).
        per_message_overhead: None -> OpenAI chat framing (3 per message, role and name counted,
            3 for the reply priming); 0 -> content-only mode; any other int replaces the 3.

    Returns:
        :class:`TiktokenCounter` (``exact`` True when the model is known or none was given) or
        :class:`ApproxCounter` (``claude*``/``gemini*`` models, or ``approximate=True``).
        ``detail`` says which file or rule is used, for display.

    Raises:
        ValueError/TypeError: bad arguments. EncodingUnavailableError: the packaged rank file is
        missing or corrupt and no cache has a valid copy.
    """
    if not isinstance(approximate, bool):
        raise TypeError(f"approximate must be a bool, got {approximate!r}")
    overhead = OPENAI_PER_MESSAGE if per_message_overhead is None else per_message_overhead
    known = True
    if encoding is not None:
        _spec(encoding)
        enc_name = encoding
    elif model is not None:
        if isinstance(model, str) and model.lower().startswith(_APPROX_PREFIXES):
            return ApproxCounter(
                per_message_overhead=overhead, model=model,
                detail=f"approximation: {model}'s tokenizer is not public",
            )
        enc_name, known = encoding_for_model(model)
    else:
        enc_name = DEFAULT_ENCODING
    if model is not None and not isinstance(model, str):
        raise TypeError(f"model must be a str or None, got {model!r}")
    if approximate:
        return ApproxCounter(per_message_overhead=overhead, model=model,
                             detail="approximation of cl100k_base (asked for)")
    enc = _load_encoding(enc_name)
    why = "" if known else f" (model {model!r} unknown to tiktoken: default encoding)"
    return TiktokenCounter(
        enc, per_message_overhead=overhead, model=model, exact=known,
        detail=f"tiktoken {enc_name} from {find_encoding_file(enc_name)}{why}",
    )


@functools.lru_cache(maxsize=1)
def default_counter() -> TiktokenCounter | ApproxCounter:
    """The process-wide default counter, ``make_counter()`` (exact cl100k_base with OpenAI's chat
    framing), built once. Call ``default_counter.cache_clear()`` to build it again."""
    return make_counter()


_TEXT_PART_KEYS = ("text", "refusal")
_IMAGE_PART_TYPES = ("image_url", "input_image")


def _message_fields(m: Mapping[str, Any], i: int) -> tuple[str, str | None, list, str | None,
                                                         list[ImageRef]]:
    """(role, content text, tool calls, name, images) of one OpenAI chat message dict."""
    role = m.get("role")
    if not isinstance(role, str) or not role:
        raise ValueError(f"messages[{i}].role must be a non-empty str, got {role!r}")
    content = m.get("content")
    images: list[ImageRef] = []
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if isinstance(part, str):
                texts.append(part)
                continue
            if not isinstance(part, Mapping):
                raise TypeError(f"messages[{i}].content[{j}] must be a dict, got {part!r}")
            if part.get("type") in _IMAGE_PART_TYPES:
                spec = part.get("image_url", part)
                detail = spec.get("detail", "auto") if isinstance(spec, Mapping) else "auto"
                images.append(ImageRef(part.get("width"), part.get("height"), detail or "auto"))
                continue
            for key in _TEXT_PART_KEYS:
                if isinstance(part.get(key), str):
                    texts.append(part[key])
        content = "".join(texts)
    elif content is not None and not isinstance(content, str):
        raise TypeError(f"messages[{i}].content must be a str, a list or None, got {content!r}")
    calls = list(m.get("tool_calls") or ())
    if isinstance(m.get("function_call"), Mapping):
        calls.append(m["function_call"])
    name = m.get("name")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"messages[{i}].name must be a str, got {name!r}")
    return role, content, calls, name, images


def count_prompt(
    messages: Iterable[Mapping[str, Any]],
    model: str | None = None,
    *,
    counter: TiktokenCounter | ApproxCounter | None = None,
) -> int:
    """Prompt tokens of a list of OpenAI chat message dicts: the sum of
    :meth:`~_BaseCounter.count_message` over the messages plus the counter's ``reply_priming``
    (the OpenAI cookbook's ``num_tokens_from_messages`` for plain messages).

    Content may be a str, None or a list of parts: ``text``/``refusal`` strings are counted as
    text; ``image_url``/``input_image`` parts as images (``width``/``height`` keys on the part if
    present, else unknown size; ``detail`` from the part). Other parts (audio, file) have no
    documented count and are not counted. ``tool_calls`` and a legacy ``function_call`` count as
    tool calls; ids are not counted.

    Args:
        messages: the dicts. model: as :func:`make_counter` (ignored when ``counter`` is given).
        counter: a counter to use instead of ``make_counter(model)``.

    >>> count_prompt([{"role": "user", "content": "Hello, world!"}], "gpt-4")   # 3 + 1 + 4 + 3
    11

    Raises:
        TypeError/ValueError: a message that is not a dict, or a field of the wrong type.
    """
    counter = counter if counter is not None else make_counter(model)
    total = counter.reply_priming
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise TypeError(f"messages[{i}] must be a dict, got {m!r}")
        role, content, calls, name, images = _message_fields(m, i)
        total += counter.count_message(role, content, calls, name=name, images=images)
    return total
