"""The entry points: load / parse a file into a LoadResult, dump conversations back to a format."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from .._gc import gc_paused
from ..conversations import DEFAULT_MAX_BYTES, Conversation, LoadResult
from ..errors import FormatError
from . import ALIASES, DETECT_ORDER, FORMATS, RECORD_KEYS
from ._base import Context, Format, Where, json_fault, kind, short

__all__ = ["dump_conversations", "load_conversations", "parse_conversations"]


def _names() -> str:
    return ", ".join(FORMATS)


def _resolve(fmt: Any) -> tuple[Format | None, bool]:
    """(the Format or None for auto, whether the file must be JSONL)."""
    if not isinstance(fmt, str):
        raise TypeError(f"format must be a str, got {fmt!r}")
    if fmt in FORMATS:
        return FORMATS[fmt], False
    if fmt in ALIASES:
        target, jsonl = ALIASES[fmt]
        return (FORMATS[target] if target else None), jsonl
    accepted = ("auto", *FORMATS, *(a for a in ALIASES if a != "auto"))
    raise ValueError(f"format must be one of {accepted}, got {fmt!r}")


def _found(value: Any) -> str:
    if isinstance(value, dict):
        return f"an object with keys {sorted(value)[:8]}"
    if isinstance(value, list):
        if not value:
            return "an empty list"
        first = value[0]
        inner = (f"objects with keys {sorted(first)[:8]}" if isinstance(first, dict)
                 else f"{kind(first)} values")
        return f"a list of {inner}"
    return f"a {kind(value)} value {short(value, 30)}"


def _suggest_path(value: Any, depth: int = 0) -> str | None:
    """A JMESPath to the first nested message list (a list of objects with ``role``), if any."""
    if depth > 4:
        return None
    if isinstance(value, list) and value:
        first = value[0]
        if isinstance(first, dict) and "role" in first:
            return ""
        if isinstance(first, list) and first and isinstance(first[0], dict) \
                and "role" in first[0]:
            return "[-1]"
        return None
    if isinstance(value, dict):
        for key, child in list(value.items())[:64]:
            if not isinstance(key, str) or not key.isidentifier():
                continue
            sub = _suggest_path(child, depth + 1)
            if sub is not None:
                return key + sub if not sub or sub.startswith("[") else f"{key}.{sub}"
    return None


def _unknown(ctx: Context, value: Any, where: tuple[int | None, str | None]) -> Any:
    if isinstance(value, dict) and "role" in value:
        ctx.fail("this is a single message, not a conversation: JSONL holds one conversation per "
                 "line (a list of messages or an object with 'messages')", where)
    hint = ""
    path = _suggest_path(value) if isinstance(value, dict) else None
    if path:
        hint = (f"; the messages seem to be nested: pass messages_path={path!r} "
                "(a JMESPath expression)")
    elif isinstance(value, dict):
        hint = "; if the messages are nested, pass messages_path (a JMESPath expression)"
    return ctx.fail(f"unknown format: expected one of {_names()}; found {_found(value)}{hint}",
                    where, None)


def _pick(record: Any) -> Format | None:
    for f in DETECT_ORDER:
        if f.detect(record):
            return f
    return None


def _record_id(record: Any) -> str | None:
    if isinstance(record, dict):
        raw = record.get("id")
        if isinstance(raw, str) and raw:
            return raw
        if isinstance(raw, int) and not isinstance(raw, bool):
            return str(raw)
    return None


def _search(ctx: Context, path: Any, record: Any, where: Where) -> Any:
    """``path.search(record)``; a JMESPath error while searching (an unknown function, a function
    given a value of the wrong type) is a Fault naming the expression, as a wrong match is."""
    from jmespath.exceptions import JMESPathError

    try:
        return path.search(record)
    except JMESPathError as exc:
        ctx.fail(f"messages_path {path.expression!r} failed: {exc}", where.conv(path.expression))


def _one(ctx: Context, fmt: Format | None, record: Any, where: Where, path: Any) -> None:
    """Parse one conversation record, or record why it was skipped."""
    try:
        if path is not None:
            inner = _search(ctx, path, record, where)
            if not isinstance(inner, list):
                found = _found(inner) if inner is not None else "nothing"
                ctx.fail(f"messages_path {path.expression!r} found {found}, not a list of messages",
                         where.conv(path.expression), None)
            where = Where(where.line, path.expression, False)
            record = inner
        f = fmt if fmt is not None else (_pick(record) or ctx.last)
        if f is None:
            _unknown(ctx, record, where.conv(None))
        ctx.last = f
        conv = f.parse(record, ctx, where)
        ctx.conversations.append(conv)
    except FormatError as exc:
        ctx.skip(exc, _record_id(record))
    except RecursionError:  # a value nested too deeply to re-encode (tool-call arguments)
        ctx.skip(FormatError("a value is nested too deeply", source=ctx.source,
                             line=where.conv(None)[0]), _record_id(record))


def _jsonl(ctx: Context, text: str, fmt: Format | None, path: Any) -> None:
    """One conversation per non-blank line. A line may open with one UTF-8 byte order mark (JSONL
    files saved with one, then joined: ``cat a.jsonl b.jsonl``); it is dropped, as the file's own."""
    loads = json.loads
    n = 0
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.startswith("\ufeff"):
            line = line[1:]
        if not line or line.isspace():
            continue
        n += 1
        try:
            value = loads(line)
        except json.JSONDecodeError as exc:
            fault = FormatError(json_fault(exc, f"column {exc.colno}"), source=ctx.source, line=lineno)
            ctx.skip(fault, None)
            continue
        except (ValueError, RecursionError) as exc:
            fault = FormatError(f"invalid JSON: {exc}", source=ctx.source, line=lineno)
            ctx.skip(fault, None)
            continue
        if not isinstance(value, (list, dict)) and path is None:
            fault = FormatError(
                "each JSONL line must be a conversation (a list of messages or an object), got "
                f"{kind(value)}", source=ctx.source, line=lineno)
            ctx.skip(fault, None)
            continue
        _one(ctx, fmt, value, Where(lineno, "", False), path)
    if not n:
        ctx.fail("empty file: no conversations")


def _looks_like_jsonl(text: str) -> bool:
    """A file that failed as one JSON document is JSONL when one of its first two non-blank
    lines is, alone, a JSON list or object (the fault is then in some other line)."""
    lines = [ln for ln in text.split("\n", 8)[:8] if ln.strip()][:2]
    if len(lines) < 2:
        return False
    for ln in lines:
        try:
            if isinstance(json.loads(ln), (list, dict)):
                return True
        except (ValueError, RecursionError):
            continue
    return False


def _document(ctx: Context, doc: Any, fmt: Format | None, path: Any) -> None:
    if isinstance(doc, dict) or path is not None and not isinstance(doc, list):
        _one(ctx, fmt, doc, Where(None, "", True), path)
        return
    if not isinstance(doc, list):
        ctx.fail(f"unknown format: expected one of {_names()}; found {_found(doc)}")
    if not doc:
        ctx.fail("the document is an empty list: no messages or conversations")
    if path is None:
        first = doc[0]
        records = isinstance(first, list) or (
            isinstance(first, dict) and any(k in first for k in RECORD_KEYS))
        if fmt is None:
            whole = _pick(doc)
        else:
            whole = None if records or fmt.name == "tau-bench" else fmt
        if whole is not None:
            _one(ctx, whole, doc, Where(None, "", True), None)
            return
    for k, record in enumerate(doc):
        _one(ctx, fmt, record, Where(k + 1, "", False), path)


_FIRST_LINE = re.compile(r"[^\r\n]*")
_UTF16_BOMS = {b"\xff\xfe": "UTF-16 LE", b"\xfe\xff": "UTF-16 BE"}


def _decode(data: Any, source: str, max_bytes: int) -> str:
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        if len(raw) > max_bytes:
            raise FormatError(f"file is {len(raw):,} bytes, over the {max_bytes:,}-byte cap",
                              source=source)
        utf16 = _UTF16_BOMS.get(raw[:2])
        if utf16 is not None:  # a UTF-16 BOM (docs/decisions.md: refused, not decoded)
            raise FormatError(f"the file is {utf16} text (it starts with a UTF-16 byte order "
                              "mark); save it as UTF-8 and upload it again", source=source)
        try:
            return raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise FormatError(f"not UTF-8 text: {exc.reason} at byte {exc.start}",
                              source=source) from None
    if isinstance(data, str):
        if len(data) > max_bytes or len(data.encode("utf-8", "surrogatepass")) > max_bytes:
            raise FormatError(f"text is over the {max_bytes:,}-byte cap", source=source)
        return data[1:] if data.startswith("\ufeff") else data
    raise TypeError(f"data must be bytes or str, got {type(data).__name__}")


def _check_common(max_bytes: Any, listing_extractor: Any, strict: Any) -> None:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(f"max_bytes must be an int, got {max_bytes!r}")
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes!r}")
    if listing_extractor is not None and not callable(listing_extractor):
        raise TypeError(f"listing_extractor must be callable, got {listing_extractor!r}")
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be a bool, got {strict!r}")


def _compile_path(messages_path: Any) -> Any:
    if messages_path is None:
        return None
    if not isinstance(messages_path, str):
        raise TypeError(f"messages_path must be a str (a JMESPath expression), got "
                        f"{messages_path!r}")
    import jmespath
    from jmespath.exceptions import JMESPathError

    try:
        return jmespath.compile(messages_path)
    except JMESPathError as exc:
        raise ValueError(f"messages_path {messages_path!r} is not a JMESPath expression: "
                         f"{exc}") from None
    except RecursionError:  # jmespath's parser recurses once per nesting level ("[[[[...")
        raise ValueError(f"messages_path {messages_path!r:.200} is nested too deeply to "
                         f"parse") from None


def parse_conversations(
    data: bytes | str,
    *,
    format: str = "auto",
    strict: bool = False,
    messages_path: str | None = None,
    counter: Any = None,
    listing_extractor: Callable[[str], Iterable[str]] | None = None,
    source_name: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    provider_records: bool = True,
) -> LoadResult:
    """Parse a conversation file's bytes (e.g. from ``st.file_uploader``) or text.

    The cyclic garbage collector (when enabled) is paused for the load, and at its end (a load
    that did not raise) every object it tracks goes to its oldest generation, unexamined (the
    load's objects all stay alive; a young collection would only traverse them): process-wide,
    as ``gc`` is (convmem._gc.gc_paused).

    Args:
        data: UTF-8 bytes (a BOM is allowed) or text.
        format: ``"auto"`` (detect each conversation record from its content) or a
            :data:`~convmem.formats.FORMATS` name; aliases ``"openai"`` (openai-chat) and
            ``"jsonl"`` (auto-detected, one conversation per line).
        strict: True raises the first fault; False (default) skips a conversation at fault,
            recording a :class:`~convmem.Skipped`, and loads the rest.
        messages_path: a JMESPath expression (``jmespath`` package) locating the message list
            inside each record (a JSON document, each item of a JSON list, or each JSONL line),
            e.g. ``"answer_generation.train_messages[-1]"``.
        counter: counts tokens of messages that carry no ``"tokens"``: called as
            ``count_message(provider_role, content, [(name, arguments)], name=..., images=...)``,
            or ``count_message(role, content, calls)`` when it takes no keywords; default
            :func:`convmem.tokens.default_counter` (loaded only when needed).
        listing_extractor: ``callable(text) -> iterable[str]`` finding listing ids; default
            :func:`~convmem.extract_listing_ids`.
        source_name: the name errors and conversations carry (default ``"<input>"``).
        max_bytes: the size cap; larger input raises FormatError before parsing.
        provider_records: True (default) keeps each conversation's provider records, content
            part indices, provider roles and envelope (``Conversation.records`` ...: what
            :func:`dump_conversations` writes a conversation back from, unchanged). False leaves
            them out, for a caller that keeps conversations and never writes them back in their
            own format: the decoded JSON is freed after the load (an OpenAI JSONL file of 10^5
            messages: about 74 MB of the 124 MB the parsed file holds), and dump builds each
            conversation from its messages (provider roles gone: a ``developer`` message is
            written as ``system``). A coding-agent session keeps its
            :class:`~convmem.AgentSession` envelope (:func:`~convmem.session_of`).

    Returns:
        a :class:`~convmem.LoadResult`: the conversations in file order, the skipped ones with
        line, field, value and reason, and the format read. O(size of the input + tokenizing).

    Raises:
        FormatError: the file as a whole cannot be read (not UTF-8, over the cap, not JSON / JSONL
            / CSV, unknown format, empty), every conversation of it is at fault (the first fault),
            or, with ``strict``, any fault. It names the source, the line (1-based line for JSONL
            and CSV; for a JSON document the 1-based index of the message when the document is
            one conversation, else of the conversation) and the field (a JSON path within that
            record, 0-based indices: ``"traj[4].tool_call_id"``).
        ValueError/TypeError: a bad argument (format, max_bytes, messages_path, counter output,
            extractor output).

    >>> r = parse_conversations('{"id": "a", "messages": [{"role": "user", "content": "hi"}]}\\n'
    ...                         '{"id": "b", "messages": [{"role": "robot", "content": "x"}]}\\n',
    ...                         counter=None, source_name="t.jsonl")
    >>> [c.id for c in r], r.summary()
    (['a'], 'Loaded 1 of 2 conversations; 1 skipped')
    >>> s = r.skipped[0]
    >>> s.conversation_id, s.line, s.field, s.value, s.reason[:20]
    ('b', 2, 'messages[0].role', "'robot'", "unknown role 'robot'")
    """
    source = "<input>" if source_name is None else str(source_name)
    fmt, force_jsonl = _resolve(format)
    _check_common(max_bytes, listing_extractor, strict)
    if not isinstance(provider_records, bool):
        raise TypeError(f"provider_records must be a bool, got {provider_records!r}")
    path = _compile_path(messages_path)
    text = _decode(data, source, max_bytes)
    ctx = Context(source, counter, listing_extractor, strict, provider_records)
    # A load allocates millions of acyclic objects (decoded JSON, messages) that all stay alive:
    # the cyclic collector would walk them again and again (measured: a third of the load time,
    # benchmarks/bench_parse.py). Nothing here makes cycles, so it is paused for the load, and
    # what it made goes to the oldest generation (convmem._gc.promote_young).
    with gc_paused():
        _parse_text(ctx, text, fmt, force_jsonl, path)
    if not ctx.conversations and ctx.first is not None:
        raise ctx.first
    name = (ctx.conversations[0].source_format if ctx.conversations
            else (fmt.name if fmt is not None else ""))
    return LoadResult(tuple(ctx.conversations), tuple(ctx.skipped), format=name or "",
                      source=source)


def _parse_text(ctx: Context, text: str, fmt: Format | None, force_jsonl: bool,
                path: Any) -> None:
    stripped = text.lstrip()
    if not stripped:
        ctx.fail("empty file")
    if fmt is not None and fmt.text:
        fmt.parse(text, ctx, Where(None, "", False))
        return
    if force_jsonl:
        _jsonl(ctx, text, fmt, path)
        return
    if stripped[0] == "{" and fmt is None and path is None:
        # a whole-file session format (coding-agent JSONL: one session spread over the lines)
        head = _FIRST_LINE.match(stripped[:4096]).group()
        for f in FORMATS.values():
            if f.text and f.detect(head):
                f.parse(text, ctx, Where(None, "", False))
                return
    if stripped[0] not in "[{":
        first_line = _FIRST_LINE.match(stripped).group()  # CRLF, LF or CR-only endings
        if fmt is None and path is None:
            for f in FORMATS.values():
                if f.text and f.detect(first_line):
                    f.parse(text, ctx, Where(None, "", False))
                    return
        # every format but CSV is JSON or JSONL (the coding-agent sessions are JSONL read whole)
        json_names = ", ".join(n for n in FORMATS if n != "csv")
        ctx.fail(f"unknown format: expected JSON or JSONL ({json_names}) or CSV with header "
                 f"id,role,tokens; the file starts with {short(first_line, 30)}")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" or _looks_like_jsonl(text):
            _jsonl(ctx, text, fmt, path)  # several JSON values: one per line
            return
        ctx.fail(json_fault(exc, f"line {exc.lineno} column {exc.colno}"), (exc.lineno, None))
    except RecursionError:
        ctx.fail("invalid JSON: nested too deeply")
    except ValueError as exc:  # e.g. an integer with too many digits
        ctx.fail(f"invalid JSON: {exc}")
    _document(ctx, doc, fmt, path)


def load_conversations(
    path_or_file: str | os.PathLike[str] | IO[bytes] | IO[str],
    *,
    format: str = "auto",
    strict: bool = False,
    messages_path: str | None = None,
    counter: Any = None,
    listing_extractor: Callable[[str], Iterable[str]] | None = None,
    source_name: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    provider_records: bool = True,
) -> LoadResult:
    """Load conversations from a path or an open file (binary or text); see
    :func:`parse_conversations` for the arguments, the result and the errors.

    The file is never read past ``max_bytes + 1`` bytes. ``source_name`` defaults to the file's
    base name.

    Raises:
        FormatError: malformed or oversized content. OSError: the file cannot be opened or read.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(f"max_bytes must be an int, got {max_bytes!r}")
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes!r}")
    if isinstance(path_or_file, (str, os.PathLike)):
        p = Path(path_or_file)
        name = p.name if source_name is None else source_name
        size = p.stat().st_size
        if size > max_bytes:
            raise FormatError(f"file is {size:,} bytes, over the {max_bytes:,}-byte cap",
                              source=name)
        with p.open("rb") as f:
            data: bytes | str = f.read(max_bytes + 1)
    elif hasattr(path_or_file, "read"):
        name = source_name
        if name is None:
            raw_name = getattr(path_or_file, "name", None)
            name = os.path.basename(raw_name) if isinstance(raw_name, str) else "<input>"
        data = path_or_file.read(max_bytes + 1)
        if not isinstance(data, (bytes, str)):
            raise TypeError(f"file read() must return bytes or str, got {type(data).__name__}")
    else:
        raise TypeError(f"path_or_file must be a path or a file object, got {path_or_file!r}")
    return parse_conversations(
        data, format=format, strict=strict, messages_path=messages_path, counter=counter,
        listing_extractor=listing_extractor, source_name=name, max_bytes=max_bytes,
        provider_records=provider_records,
    )


def dump_conversations(conversations: Iterable[Conversation], format: str) -> str:
    """The file text of ``conversations`` in ``format`` (a :data:`~convmem.formats.FORMATS`
    name, or the alias ``"openai"``).

    A conversation read as ``format`` is written from its provider records, unchanged (what
    :meth:`~convmem.Conversation.keep` dropped is left out); any other is built from its
    normalized messages. Each format module's docstring says what it writes; parse -> dump ->
    parse gives the same conversations (docs/decisions.md, "Formats": what "the same" means per
    format). O(total size).

    Raises:
        ValueError: unknown format. TypeError: an item is not a Conversation.

    >>> r = parse_conversations('[{"role": "developer", "content": "Be brief."}]', counter=None)
    >>> dump_conversations(r, "openai-chat")
    '[{"role":"developer","content":"Be brief."}]\\n'
    >>> print(dump_conversations(r, "anthropic"), end="")
    {"id":"c1","system":"Be brief.","messages":[]}
    """
    f, _jsonl_only = _resolve(format)
    if f is None:
        raise ValueError(f"dump needs a format name ({_names()}), got {format!r}")
    convs: Sequence[Conversation] = (list(conversations) if not isinstance(conversations, Sequence)
                                     else conversations)
    for c in convs:
        if not isinstance(c, Conversation):
            raise TypeError(f"dump_conversations expects Conversation values, got {c!r}")
    return f.dump(convs)
