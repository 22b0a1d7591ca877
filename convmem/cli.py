"""The command line: ``python -m convmem SUBCOMMAND ...``.

Five subcommands, each a thin layer over the library (the rules live in the library, never here):

=========  ======================================================================================
inspect    FILE: its format, conversations, messages, tokens, roles, listings, and every
           conversation skipped with its reason (line, field, value)
convert    FILE --to FORMAT [-o OUT]: write the conversations in another format
budget     FILE --limit N [policies]: add one conversation's messages to a History one by one and
           show, per add, what was dropped (and why), the total and what is kept
safe-limit FILE [--protect latest_user|system|ID] [policies]: the smallest token limit at which
           the protected message is never dropped, and the add step that decides it
evict      FILE --max-listings N [--user ID]: per shopper, the conversations dropped and kept, the
           listing ids kept and the eviction curve
simulate   [FILE] [fault options]: load a conversation page by page from a seeded flaky store on a
           virtual clock; calls, retries, stop reason and the check against the truth
=========  ======================================================================================

Every subcommand takes ``--json``: one JSON document on stdout (one line, keys in a fixed order,
documented in README.md "Command line"; ``"schema": 1`` marks this layout), nothing else on stdout.
A progress bar (tqdm) goes to stderr on long inputs only when stderr is a terminal, or always with
``--progress`` (``--no-progress`` turns it off); it never touches stdout.

Exit codes (:data:`EXIT_CODES`):

====  ==========================================================================================
0     done
1     input error: the file cannot be read (OSError), is malformed (FormatError, naming the file,
      line and field), or does not hold what was asked (no such conversation or shopper, nothing
      loaded, cannot be written in the requested format); or ``-o OUT`` cannot be written
2     usage error: a bad command line (argparse) or a bad option value or combination (the
      library's ValueError/TypeError, e.g. ``--target`` above ``--limit``)
3     load failure: ``simulate``'s load raised PageLoadError (a page kept failing); with
      ``--json`` the document is still printed, with ``"failure"`` and ``"error"`` set
4     internal error (a bug): one line on stderr; ``--traceback`` shows the traceback
130   interrupted (Ctrl-C)
141   stdout was closed early (e.g. piped into ``head``)
====  ==========================================================================================

Every error is one line on stderr, ``python -m convmem SUBCOMMAND: error: ...``, never a
traceback (unless ``--traceback``).

The library is reached through one small function per contract, so a change of the library's API
touches one place: :func:`_load` (``load_conversations``), :func:`_dump` / :func:`_output_formats`
(``dump_conversations``), :func:`_input_formats`, and the import of the test doubles below.
"""

from __future__ import annotations

import argparse
import inspect as _inspect
import json
import math
import os
import re
import sys
import tempfile
import textwrap
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import convmem
from convmem import (
    CallOutcome,
    Conversation,
    FormatError,
    HistorySettings,
    LoadReport,
    Message,
    PageLoadError,
    evict_conversations,
    eviction_curve,
    explain_eviction,
    generate_conversation,
    group_by_user,
    kept_from,
    load_conversations,
    load_history,
    replay,
)

try:  # the test doubles are moving from convmem.stores to convmem.testing
    from convmem.testing import (  # type: ignore[import-not-found]
        FaultConfig,
        FlakyStore,
        PagedStore,
        VirtualClock,
        compare_to_truth,
    )
except ImportError:  # pragma: no cover - depends on the library version
    from convmem.stores import FaultConfig, FlakyStore, PagedStore, VirtualClock, compare_to_truth

__all__ = ["EXIT_CODES", "JSON_SCHEMA", "build_parser", "main"]

#: The exit codes and what each means (also in the module docstring and README).
EXIT_CODES: dict[int, str] = {
    0: "done",
    1: "input error (unreadable or malformed file, or it lacks what was asked)",
    2: "usage error (bad command line, bad option value or combination)",
    3: "load failure (simulate: PageLoadError, a page kept failing)",
    4: "internal error (a bug; --traceback shows it)",
    130: "interrupted (Ctrl-C)",
    141: "stdout closed early (broken pipe)",
}
EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_LOAD, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141

#: How the command is run (error lines and help start with it).
PROG = "python -m convmem"

#: The version of the ``--json`` layout; bumped when a key changes meaning or goes away.
JSON_SCHEMA = 1

#: On a terminal, a progress bar shows only for loops over at least this many items.
PROGRESS_MIN_ITEMS = 2_000

#: On a terminal, loading shows its elapsed time only for files of at least this many bytes.
PROGRESS_MIN_BYTES = 2_000_000

#: ``simulate``'s text output lists this many calls by default (``--calls``; ``--json``: all).
SIMULATE_CALL_ROWS = 20
#: What FILE ``-`` reads: standard input through its device file.
STDIN_PATH = "/dev/stdin"
#: Largest ``simulate --messages``: the synthetic conversation is built in memory first, and
#: 10**8 messages ran for minutes toward an out-of-memory kill instead of an error.
SIMULATE_MAX_MESSAGES = 1_000_000

#: Human output lists at most this many conversations in ``inspect`` (``--json`` lists all).
INSPECT_ROWS = 20


class _UsageError(Exception):
    """A bad option value or combination: exit 2."""


class _InputError(Exception):
    """The input does not hold what was asked (no such conversation, nothing loaded): exit 1."""


# ------------------------------------------------------------------------------------------------
# Glue to the library: one small function per contract.


@dataclass(frozen=True, slots=True)
class _Loaded:
    """What :func:`_load` hands the subcommands."""

    conversations: list[Conversation]
    skipped: tuple[Any, ...]
    format: str | None


def _input_formats() -> list[str]:
    """Names ``--format`` accepts: the format registry and its aliases when present, else
    today's ``FORMATS``."""
    try:
        from convmem import formats as registry  # type: ignore[attr-defined]
    except ImportError:
        names = list(convmem.FORMATS)
    else:
        names = [*getattr(registry, "ALIASES", ()), *registry.FORMATS]
    return names if "auto" in names else ["auto", *names]


def _load(path: str, args: argparse.Namespace) -> _Loaded:
    """Load ``path`` (``-``: standard input) with the command line's loader options; works with
    both library versions.

    ``load_conversations`` returns a list today (and raises FormatError for any fault) and will
    return a ``LoadResult`` (``.conversations``, ``.skipped``, ``.format``). ``--strict``,
    ``--messages-path`` and ``--listing-pattern`` are passed only when the function takes them;
    ``--strict`` on a loader without it is today's behaviour anyway.
    """
    if path == "-" and os.path.exists(STDIN_PATH):
        path = STDIN_PATH  # a pipe is read like a file, up to the same size cap
    params = _inspect.signature(load_conversations).parameters
    kwargs: dict[str, Any] = {}
    formats = _input_formats()
    if args.format not in formats:
        raise _UsageError(f"--format {args.format!r}: expected one of {', '.join(formats)}")
    if args.format != "auto":
        kwargs["format"] = args.format
    if args.strict and "strict" in params:
        kwargs["strict"] = True
    if args.messages_path is not None:
        if "messages_path" not in params:
            raise _UsageError(
                "--messages-path needs a convmem whose load_conversations takes messages_path "
                "(this one does not)"
            )
        _check_messages_path(args.messages_path)
        kwargs["messages_path"] = args.messages_path
    if args.listing_pattern is not None:
        if "listing_extractor" not in params:
            raise _UsageError("--listing-pattern needs a load_conversations that takes "
                              "listing_extractor (this one does not)")
        try:
            re.compile(args.listing_pattern)
        except re.error as exc:
            raise _UsageError(f"--listing-pattern {args.listing_pattern!r}: {exc}") from None
        try:
            extractor = convmem.make_listing_extractor(pattern=args.listing_pattern)
        except ValueError as exc:  # more than one capturing group
            raise _UsageError(f"--listing-pattern: {exc}") from None
        kwargs["listing_extractor"] = extractor
    with _loading(path, args):
        result = load_conversations(path, **kwargs)
    conversations = list(getattr(result, "conversations", result))
    skipped = tuple(getattr(result, "skipped", ()))
    fmt = getattr(result, "format", None)
    if not fmt:
        found = list(dict.fromkeys(c.source_format for c in conversations if c.source_format))
        fmt = "+".join(found) if found else None
    return _Loaded(conversations, skipped, fmt)


def _check_messages_path(expression: str) -> None:
    """A usage error naming ``--messages-path`` when it is not a JMESPath expression (it was an
    internal error: the loader's ValueError); O(len(expression))."""
    import jmespath
    from jmespath.exceptions import JMESPathError

    try:
        jmespath.compile(expression)
    except JMESPathError as exc:
        raise _UsageError(f"--messages-path {expression!r}: {exc}") from None
    except RecursionError:
        raise _UsageError(f"--messages-path {expression!r:.200}: nested too deeply to parse"
                          ) from None


#: ``convert --to`` names kept working across library versions: today's writer is OpenAI chat
#: JSONL (``to_openai_jsonl``), which the format registry calls ``openai-chat``.
_OUTPUT_ALIASES = {"openai-jsonl": "openai-chat"}


def _output_formats() -> list[str]:
    """Names ``convert --to`` accepts: the format registry's names when the library has
    ``dump_conversations``, else the one writer there is (under both of its names)."""
    if hasattr(convmem, "dump_conversations"):
        try:
            from convmem.formats import FORMATS as registry  # type: ignore[import-not-found]
        except ImportError:
            registry = ()
        names = [name for name in registry if name != "auto"]
        if names:
            return names + [a for a, target in _OUTPUT_ALIASES.items() if target in names]
    return ["openai-chat", "openai-jsonl"]


def _dump(conversations: Sequence[Conversation], fmt: str) -> str:
    """The conversations written as ``fmt``: ``dump_conversations`` when the library has it,
    else ``to_openai_jsonl`` (the only writer today). A conversation that cannot be written in
    that format is an input error."""
    dump = getattr(convmem, "dump_conversations", None)
    try:
        if dump is not None:
            return dump(conversations, _OUTPUT_ALIASES.get(fmt, fmt))
        if fmt not in ("openai-chat", "openai-jsonl"):
            raise _UsageError(f"--to {fmt!r}: this convmem writes only openai-chat (JSONL)")
        return convmem.to_openai_jsonl(conversations)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise _InputError(f"cannot write as {fmt}: {exc}") from exc


# ------------------------------------------------------------------------------------------------
# Small helpers: option types, progress, output.


def _int_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected seconds (a number >= 0), got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected seconds (a finite number >= 0), got {text!r}")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a probability in [0, 1], got {text!r}") from None
    if not 0 <= value <= 1:  # also rejects nan
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1], got {text!r}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


_non_negative = _int_at_least(0)
_positive = _int_at_least(1)


def _tqdm(args: argparse.Namespace) -> Any:
    """tqdm's class, or None when it is not installed (the library itself does not need it):
    then no bar, and one note on stderr if ``--progress`` asked for one."""
    try:
        from tqdm import tqdm
    except ImportError:
        if args.progress and not getattr(args, "_tqdm_noted", False):
            args._tqdm_noted = True
            _note("no progress bar: the tqdm package is not installed (pip install tqdm)")
        return None
    return tqdm


def _want_bar(args: argparse.Namespace, long: bool) -> bool:
    """Show a bar? Always with ``--progress``, never with ``--no-progress``, else only for a
    long input (``long``) when stderr is a terminal."""
    if args.progress is not None:
        return bool(args.progress)
    return long and _isatty(sys.stderr)


def _bar(args: argparse.Namespace, *, total: int | None, size: int | None, desc: str,
         unit: str) -> Any:
    """A tqdm bar on stderr, or None (see :func:`_want_bar`); the input is long when ``size``
    (the items the loop is expected to take) is at least :data:`PROGRESS_MIN_ITEMS`."""
    if not _want_bar(args, size is not None and size >= PROGRESS_MIN_ITEMS):
        return None
    tqdm = _tqdm(args)
    if tqdm is None:
        return None
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                dynamic_ncols=True)


def _progress(items: Iterable[Any], args: argparse.Namespace, *, total: int, desc: str,
              unit: str) -> Iterator[Any]:
    """Yield ``items``, advancing a progress bar (see :func:`_bar`) when there is one."""
    bar = _bar(args, total=total, size=total, desc=desc, unit=unit)
    if bar is None:
        yield from items
        return
    try:
        for item in items:
            yield item
            bar.update(1)
    finally:
        bar.close()


@contextmanager
def _spinner(args: argparse.Namespace, desc: str, long: bool) -> Iterator[None]:
    """While the body runs, a tqdm line on stderr with the elapsed time (for one library call
    that has no progress hook; a thread refreshes the line). Shown as :func:`_want_bar` says."""
    tqdm = _tqdm(args) if _want_bar(args, long) else None
    if tqdm is None:
        yield
        return
    bar = tqdm(total=None, desc=desc, bar_format="{desc}: {elapsed}", file=sys.stderr,
               leave=False)
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(0.25):
            bar.refresh()

    ticker = threading.Thread(target=tick, name="convmem-cli-spinner", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        bar.close()


def _loading(path: str, args: argparse.Namespace) -> Any:
    """:func:`_spinner` while ``path`` loads; long means :data:`PROGRESS_MIN_BYTES` or more."""
    try:
        size = os.path.getsize(path)
    except (OSError, TypeError, ValueError):
        size = 0  # the loader reports the error
    name = os.path.basename(path)
    name = name if len(name) <= 40 else "…" + name[-39:]
    return _spinner(args, f"loading {name} ({size / 1e6:.1f} MB)", size >= PROGRESS_MIN_BYTES)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)


def _emit_json(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, ensure_ascii=False, default=repr) + "\n")


def _out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def _note(line: str) -> None:
    """A remark for a person, on stderr (so it never mixes with data on stdout)."""
    sys.stderr.write(f"convmem: {_one_line(line)}\n")


def _n(count: int, word: str, plural: str | None = None) -> str:
    """``"1 message"``, ``"2 messages"`` (thousands separated)."""
    return f"{count:,} {word if count == 1 else plural or word + 's'}"


def _one_line(text: str) -> str:
    return " ".join(str(text).replace("\r", "\n").split("\n")).strip()


def _skipped_rows(skipped: Sequence[Any]) -> list[dict[str, Any]]:
    return [
        {
            "conversation_id": getattr(s, "conversation_id", None),
            "line": getattr(s, "line", None),
            "field": getattr(s, "field", None),
            "value": _jsonable(getattr(s, "value", None)),
            "reason": getattr(s, "reason", None) or str(s),
        }
        for s in skipped
    ]


def _skipped_line(row: dict[str, Any]) -> str:
    where = []
    if row["conversation_id"] is not None:
        where.append(f"conversation {row['conversation_id']}")
    if row["line"] is not None:
        where.append(f"line {row['line']}")
    if row["field"] is not None:
        where.append(f"field {row['field']!r}")
    if row["value"] is not None:  # the loader gives a short repr already
        value = row["value"]
        where.append(f"value {value if isinstance(value, str) else _short(value)}")
    return _one_line(f"{', '.join(where) or 'file'}: {row['reason']}")


def _short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _warn_skipped(loaded: _Loaded, args: argparse.Namespace) -> None:
    """Skipped conversations are never silent: a line on stderr (human output) per skip."""
    if not loaded.skipped or args.json:
        return
    total = len(loaded.conversations) + len(loaded.skipped)
    _note(f"loaded {len(loaded.conversations)} of {total} conversations; "
          f"{len(loaded.skipped)} skipped:")
    for row in _skipped_rows(loaded.skipped):
        sys.stderr.write(f"  {_skipped_line(row)}\n")


def _pick_conversation(loaded: _Loaded, conversation_id: str | None) -> Conversation:
    if not loaded.conversations:
        why = f" ({len(loaded.skipped)} skipped; 'inspect' says why)" if loaded.skipped else ""
        raise _InputError(f"no conversation loaded from the file{why}")
    if conversation_id is None:
        return loaded.conversations[0]
    for conv in loaded.conversations:
        if conv.id == conversation_id:
            return conv
    ids = [c.id for c in loaded.conversations]
    shown = ", ".join(ids[:5]) + (f", ... ({len(ids)} in all)" if len(ids) > 5 else "")
    raise _InputError(f"no conversation {conversation_id!r} in the file (it has {shown})")


def _base(command: str, file: str | None) -> dict[str, Any]:
    return {"schema": JSON_SCHEMA, "command": command, "file": file}


# ------------------------------------------------------------------------------------------------
# inspect


def _cmd_inspect(args: argparse.Namespace) -> int:
    loaded = _load(args.file, args)  # skips are part of its report, not a warning
    convs = loaded.conversations
    roles: Counter[str] = Counter()
    rows = []
    mentions = 0
    distinct: dict[str, None] = {}
    for conv in _progress(convs, args, total=len(convs), desc="inspect", unit="conv"):
        roles.update(m.role for m in conv.messages)
        mentions += len(conv.listing_ids)
        distinct.update(dict.fromkeys(conv.listing_ids))
        rows.append({
            "id": conv.id,
            "user_id": conv.user_id,
            "messages": len(conv.messages),
            "tokens": conv.total_tokens,
            "tool_calls": sum(len(m.tool_call_ids) for m in conv.messages),
            "distinct_listings": len(conv.distinct_listing_ids),
            "title": conv.title,
        })
    doc = _base("inspect", args.file)
    doc.update({
        "format": loaded.format,
        "conversations": len(convs),
        "skipped_count": len(loaded.skipped),
        "messages": sum(r["messages"] for r in rows),
        "tokens": sum(r["tokens"] for r in rows),
        "users": len({c.user_id for c in convs if c.user_id is not None}),
        "roles": {role: roles[role] for role in convmem.ROLES},
        "tool_calls": sum(r["tool_calls"] for r in rows),
        "listing_mentions": mentions,
        "distinct_listings": len(distinct),
        "skipped": _skipped_rows(loaded.skipped),
        "per_conversation": rows,
    })
    if args.json:
        _emit_json(doc)
        return EXIT_OK
    total = len(convs) + len(loaded.skipped)
    _out(f"file           {args.file}")
    _out(f"format         {loaded.format or 'unknown'}")
    _out(f"conversations  {len(convs):,} loaded of {total:,}; {len(loaded.skipped):,} skipped")
    _out(f"messages       {doc['messages']:,}")
    _out(f"tokens         {doc['tokens']:,}")
    _out(f"users          {doc['users']:,}")
    _out("roles          " + ", ".join(f"{r} {n:,}" for r, n in doc["roles"].items()))
    _out(f"tool calls     {doc['tool_calls']:,}")
    _out(f"listings       {doc['distinct_listings']:,} distinct, {mentions:,} mentions")
    if rows:
        _out()
        table = [("id", "user", "messages", "tokens", "title")]
        table += [(r["id"], r["user_id"] or "-", f"{r['messages']:,}", f"{r['tokens']:,}",
                   r["title"] or "") for r in rows[:INSPECT_ROWS]]
        _table(table, right={2, 3})
        if len(rows) > INSPECT_ROWS:
            _out(f"... {len(rows) - INSPECT_ROWS:,} more (--json lists all)")
    if loaded.skipped:
        _out()
        _out("skipped:")
        for row in doc["skipped"]:
            _out(f"  {_skipped_line(row)}")
    return EXIT_OK


def _table(rows: Sequence[Sequence[str]], right: Iterable[int] = ()) -> None:
    """Print ``rows`` (the first is the header) as aligned columns; ``right``: right-aligned."""
    right = set(right)
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [str(c).rjust(w) if i in right else str(c).ljust(w)
                 for i, (c, w) in enumerate(zip(r, widths))]
        _out("  ".join(cells).rstrip())


# ------------------------------------------------------------------------------------------------
# convert


def _cmd_convert(args: argparse.Namespace) -> int:
    formats = _output_formats()
    if args.to not in formats:
        raise _UsageError(f"--to {args.to!r}: this convmem writes {', '.join(formats)}")
    if args.output == "-":  # stdout, as FILE '-' is stdin (it wrote a file named '-')
        args.output = None
    loaded = _load(args.file, args)
    _warn_skipped(loaded, args)
    text = _dump(loaded.conversations, args.to)
    if args.output is not None:
        _write_atomic(args.output, text)
    doc = _base("convert", args.file)
    doc.update({
        "from": loaded.format,
        "to": args.to,
        "output": args.output,
        "conversations": len(loaded.conversations),
        "messages": sum(len(c.messages) for c in loaded.conversations),
        "bytes": len(text.encode("utf-8")),
        "skipped": _skipped_rows(loaded.skipped),
        "content": text if args.output is None else None,
    })
    if args.json:
        _emit_json(doc)
    elif args.output is None:
        sys.stdout.write(text)
    else:
        _out(f"wrote {_n(doc['conversations'], 'conversation')} "
             f"({_n(doc['messages'], 'message')}, "
             f"{doc['bytes']:,} bytes) as {args.to} to {args.output}")
    return EXIT_OK


def _write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, so a failed or
    interrupted write never leaves half a file. A symlink's target is what gets replaced (the
    link stays). A path that is not a regular file (``/dev/stdout``, a FIFO, a device) is written
    in place: replacing it would put a regular file where the device was."""
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_file():
        _write_in_place(path, text)
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".",
                                   prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise _InputError(f"cannot write {path!r}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, _output_mode(target))
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise _InputError(f"cannot write {path!r}: {exc.strerror or exc}") from exc
        raise


def _output_mode(target: Path) -> int:
    """The permission bits the written file gets: those of the file it replaces, else what
    ``open()`` would give (0o666 less the umask); mkstemp's own 0o600 hid the output from others."""
    try:
        return target.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _write_in_place(path: str, text: str) -> None:
    """Write ``text`` straight to ``path`` (not a regular file); a failed write (a full device,
    a FIFO with no reader left) is an input error naming the path."""
    try:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    except OSError as exc:
        raise _InputError(f"cannot write {path!r}: {exc.strerror or exc}") from exc


# ------------------------------------------------------------------------------------------------
# budget


def _budget_settings(args: argparse.Namespace) -> HistorySettings:
    settings = HistorySettings(
        limit=args.limit,
        target=args.target,
        pin_system=args.pin_system,
        pin_latest_user=args.pin_latest_user,
        keep_tool_groups=args.keep_tool_groups,
        start_on_user=args.start_on_user,
        summary_budget=args.summary_budget,
    )
    try:
        settings.build()  # History's own checks: target <= limit, summary_budget <= target, ...
    except (ValueError, TypeError) as exc:
        raise _UsageError(str(exc)) from exc
    return settings


def _cmd_budget(args: argparse.Namespace) -> int:
    settings = _budget_settings(args)
    loaded = _load(args.file, args)
    _warn_skipped(loaded, args)
    conv = _pick_conversation(loaded, args.conversation)
    messages = conv.messages
    n = len(messages)
    with _spinner(args, f"budget: replaying {n:,} messages", n >= PROGRESS_MIN_ITEMS):
        try:
            rep = replay(messages, settings)  # the token-budget page's own recorder
        except ValueError as exc:  # e.g. two messages with one id
            raise _InputError(f"conversation {conv.id!r}: {exc}") from exc
    dropped_by_step: dict[int, list[dict[str, Any]]] = {}
    for i, step in enumerate(rep.dropped_at):  # by position = by add order: oldest first
        if step is not None:
            m = messages[i]
            dropped_by_step.setdefault(step, []).append(
                {"id": m.id, "reason": rep.drop_reason[i], "tokens": m.tokens})
    log = rep.compactions
    triggers = dict(zip(log.steps, log.triggers))
    summaries = dict(log.summary_events)
    kept_lists = _kept_each_add(messages, settings, args) if args.kept_each_add else None
    steps = []
    for step, m in enumerate(messages):
        event = summaries.get(step)
        row: dict[str, Any] = {
            "step": step,
            "id": m.id,
            "role": m.role,
            "tokens": m.tokens,
            "dropped": dropped_by_step.get(step, []),
            "trigger": triggers.get(step),
            "summary": None if event is None else _summary_row(event),
            "total": rep.totals[step],
            "kept_count": rep.kept_counts[step],
        }
        if kept_lists is not None:
            row["kept"] = kept_lists[step]
        steps.append(row)
    total = rep.totals[-1] if n else 0
    doc = _base("budget", args.file)
    doc.update({
        "conversation": conv.id,
        "settings": {
            "limit": settings.limit,
            "target": settings.limit if settings.target is None else settings.target,
            "pin_system": settings.pin_system,
            "pin_latest_user": settings.pin_latest_user,
            "keep_tool_groups": settings.keep_tool_groups,
            "start_on_user": settings.start_on_user,
            "summary_budget": settings.summary_budget,
        },
        "messages": len(messages),
        "steps": steps,
        "kept": [m.id for m in rep.final_context],
        "total": total,
        "over_limit": total > settings.limit,
        "compactions": rep.stats.compactions,
        "dropped_messages": rep.stats.messages_dropped,
        "dropped_tokens": rep.stats.tokens_dropped,
        "skipped": _skipped_rows(loaded.skipped),
    })
    if args.json:
        _emit_json(doc)
        return EXIT_OK
    policies = [name for name in ("pin_system", "pin_latest_user", "keep_tool_groups",
                                  "start_on_user") if getattr(settings, name)]
    if settings.target is not None:
        policies.append(f"target={settings.target}")
    if settings.summary_budget is not None:
        policies.append(f"summary_budget={settings.summary_budget}")
    _out(f"conversation {conv.id} ({_n(len(messages), 'message')}, "
         f"{_n(conv.total_tokens, 'token')}), "
         f"limit {settings.limit:,}" + (f" [{', '.join(policies)}]" if policies else ""))
    table = [("step", "id", "role", "tokens", "total", "kept", "dropped")]
    for r in steps:
        dropped = ", ".join(f"{d['id']} ({d['reason']})" for d in r["dropped"])
        if r["summary"] is not None:
            s = r["summary"]
            verdict = "accepted" if s["accepted"] else f"rejected: {s['reason']}"
            dropped += f"; summary {s['id']} ({s['tokens']} tokens) {verdict}"
        kept = " ".join(r["kept"]) if args.kept_each_add else f"{r['kept_count']:,}"
        table.append((str(r["step"]), r["id"], r["role"], f"{r['tokens']:,}", f"{r['total']:,}",
                      kept, dropped))
    _table(table, right={0, 3, 4} | (set() if args.kept_each_add else {5}))
    _out()
    _out(f"kept ({len(doc['kept']):,}): {' '.join(doc['kept']) or '(nothing)'}")
    _out(f"total {doc['total']:,} of limit {settings.limit:,}"
         + ("; OVER THE LIMIT (pinned messages alone)" if doc["over_limit"] else ""))
    _out(f"{_n(doc['compactions'], 'compaction')} dropped "
         f"{_n(doc['dropped_messages'], 'message')} "
         f"({_n(doc['dropped_tokens'], 'token')})")
    return EXIT_OK


def _cmd_safe_limit(args: argparse.Namespace) -> int:
    """The smallest limit keeping the protected class (convmem.explain_safe_limit), one pass."""
    loaded = _load(args.file, args)
    _warn_skipped(loaded, args)
    conv = _pick_conversation(loaded, args.conversation)
    policies: dict[str, Any] = {
        name: getattr(args, name)
        for name in ("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user")
    }
    if args.target_percent is not None:
        if args.target_percent > 100:
            raise _UsageError(f"--target-percent must be 0..100, got {args.target_percent}")
        policies.update(target=args.target_percent, limit=100)
    if args.summary_budget is not None:
        policies.update(summary_budget=args.summary_budget, summarizer=convmem.ExtractiveSummarizer)
    try:
        got = convmem.explain_safe_limit(conv.messages, args.protect, **policies)
    except ValueError as exc:  # a protect id not in the conversation, a stray tool result, ...
        raise _InputError(f"conversation {conv.id!r}: {exc}") from exc
    doc = _base("safe-limit", args.file)
    doc.update({
        "conversation": conv.id,
        "protect": args.protect,
        "policies": {k: v for k, v in policies.items() if k not in ("summarizer", "limit")},
        "limit": got.limit,
        "step": got.step,
        "message_id": got.message_id,
        "need": got.need,
        "exact": got.exact,
        "reason": got.reason,
        "skipped": _skipped_rows(loaded.skipped),
    })
    if args.json:
        _emit_json(doc)
        return EXIT_OK
    shown = [name for name in ("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user")
             if policies[name]]
    if args.target_percent is not None:
        shown.append(f"target={args.target_percent}% of the limit")
    if args.summary_budget is not None:
        shown.append(f"summary_budget={args.summary_budget}")
    # the policies echoed as `budget` echoes them: the answer holds for these only
    _out(f"conversation {conv.id} ({_n(len(conv.messages), 'message')}, "
         f"{_n(conv.total_tokens, 'token')}), protect {args.protect} "
         + (f"[{', '.join(shown)}]" if shown else "[no policy]"))
    _out(f"smallest safe limit {got.limit:,} tokens")
    if got.step is not None:
        how = ("every smaller limit drops it" if got.exact
               else "kept here and above whatever the compaction timing; a smaller limit may be lucky")
        _out(f"decided at add step {got.step:,} by message {got.message_id} "
             f"({got.need:,} tokens must survive the cut; {how})")
    else:
        _out(f"nothing needs room ({got.reason})")
    return EXIT_OK


def _kept_each_add(messages: Sequence[Message], settings: HistorySettings,
                   args: argparse.Namespace) -> list[list[str]]:
    """The kept ids after every add (``--kept-each-add``): a History with the same settings,
    read after each add. O(adds x kept)."""
    history = settings.build()
    kept = []
    for m in _progress(messages, args, total=len(messages), desc="budget: kept ids", unit="msg"):
        history.add(m)
        kept.append(history.messages())
    return kept


def _summary_row(event: Any) -> dict[str, Any]:
    return {
        "accepted": event.accepted,
        "id": event.id,
        "tokens": event.tokens,
        "budget": event.budget,
        "replaced_id": event.replaced_id,
        "reason": event.reason,
        "removed_id": event.removed_id,
    }


# ------------------------------------------------------------------------------------------------
# evict


def _cmd_evict(args: argparse.Namespace) -> int:
    loaded = _load(args.file, args)
    _warn_skipped(loaded, args)
    groups = group_by_user(loaded.conversations)
    if args.user is not None:
        if args.user not in groups:
            known = [u for u in groups if u is not None]
            shown = ", ".join(known[:5])
            shown += f", ... ({len(known)} in all)" if len(known) > 5 else ""
            raise _InputError(f"no shopper {args.user!r} in the file (it has {shown or 'none'})")
        groups = {args.user: groups[args.user]}
    users = []
    for user_id, convs in _progress(groups.items(), args, total=len(groups), desc="evict",
                                    unit="user"):
        listings = [list(c.listing_ids) for c in convs]
        start = kept_from(listings, args.max_listings)
        users.append({
            "user_id": user_id,
            "conversations": [c.id for c in convs],
            "dropped": [c.id for c in convs[:start]],
            "kept": [c.id for c in convs[start:]],
            "kept_listings": evict_conversations(listings, args.max_listings),
            "curve": eviction_curve(listings),
            "steps": [
                {"conversation": convs[s.index].id, "count_before": s.count_before,
                 "count_after": s.count_after, "released": list(s.released),
                 "shared": list(s.shared), "dropped": s.dropped}
                for s in explain_eviction(listings, args.max_listings)
            ],
        })
    doc = _base("evict", args.file)
    doc.update({
        "max_listings": args.max_listings,
        "users": users,
        "skipped": _skipped_rows(loaded.skipped),
    })
    if args.json:
        _emit_json(doc)
        return EXIT_OK
    if not users:
        _out("no conversations loaded")
    for i, u in enumerate(users):
        if i:
            _out()
        who = u["user_id"] if u["user_id"] is not None else "(no user id)"
        _out(f"shopper {who}: {_n(len(u['conversations']), 'conversation')}, {u['curve'][0]:,} "
             f"distinct listings; cap {args.max_listings:,}")
        _out(f"  dropped ({len(u['dropped'])}): {' '.join(u['dropped']) or '-'}")
        _out(f"  kept ({len(u['kept'])}): {' '.join(u['kept']) or '-'}")
        _out(f"  kept listings ({len(u['kept_listings'])}): {' '.join(u['kept_listings']) or '-'}")
        _out("  curve (distinct listings left after dropping the k oldest): "
             + " ".join(f"{k}:{n}" for k, n in enumerate(u["curve"])))
    return EXIT_OK


# ------------------------------------------------------------------------------------------------
# simulate


def _simulate_setup(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    try:
        faults = FaultConfig(
            failure_rate=args.failure_rate,
            burst_length=args.burst,
            repeated_cursor=args.repeated_cursor,
            cursor_cycle=args.cursor_cycle,
            wrap_around=args.wrap_around,
            empty_page=args.empty_page,
            overlap=args.overlap,
            seed=args.seed,
        )
        if faults.overlap >= args.page_size:
            raise ValueError(f"--overlap {faults.overlap} must be below --page-size "
                             f"{args.page_size}, or pages never advance")
    except (ValueError, TypeError) as exc:
        raise _UsageError(str(exc)) from exc
    load = {
        "attempts": args.attempts,
        "base_delay": args.base_delay,
        "max_delay": args.max_delay,
        "deadline": args.deadline,
        "empty_page_ends": not args.follow_empty_pages,
    }
    return faults, load


def _simulate_messages(args: argparse.Namespace) -> tuple[str | None, str, list[Message]]:
    """(file, conversation id, messages): a conversation of FILE, or a synthetic one."""
    if args.file is None:
        if args.conversation is not None:
            raise _UsageError("--conversation needs a FILE")
        if args.messages > SIMULATE_MAX_MESSAGES:
            raise _UsageError(f"--messages {args.messages:,}: at most {SIMULATE_MAX_MESSAGES:,} "
                              f"(the synthetic conversation is built in memory)")
        conv = generate_conversation(args.messages, seed=args.seed)
        return None, conv.id, list(conv.messages)
    loaded = _load(args.file, args)
    _warn_skipped(loaded, args)
    conv = _pick_conversation(loaded, args.conversation)
    return args.file, conv.id, list(conv.messages)


def _cmd_simulate(args: argparse.Namespace) -> int:
    faults, load = _simulate_setup(args)
    file, conversation_id, messages = _simulate_messages(args)
    clock = VirtualClock()
    store = FlakyStore(PagedStore(messages, args.page_size), faults, clock=clock)
    report = LoadReport()
    bar = _bar(args, total=None, size=len(messages), desc="simulate", unit="call")
    on_event = None if bar is None else (lambda _call: bar.update(1))
    error: dict[str, Any] | None = None
    try:
        loaded = load_history(store, sleep=clock.sleep, clock=clock,
                              random=store.rng_for_jitter(), report=report, on_event=on_event,
                              **load)
    except PageLoadError as exc:
        loaded = list(exc.loaded)
        cause = exc.__cause__
        error = {
            "cursor": exc.cursor,
            "attempts": exc.attempts,
            "loaded": len(exc.loaded),
            "message": str(exc),
            "last_error": f"{type(cause).__name__}: {cause}" if cause is not None else None,
        }
    finally:
        if bar is not None:
            bar.close()
    diff = compare_to_truth(loaded, messages)
    summary = report.summary()
    store_calls = store.calls
    call_log = []
    for i, c in enumerate(report.calls):
        call_log.append({
            "index": c.index,
            "cursor": c.cursor,
            "attempt": c.attempt,
            "outcome": c.outcome,
            "fault": store_calls[i].fault if i < len(store_calls) else None,
            "error": c.error,
            "started_at": c.started_at,
            "delay_after": c.delay_after,
            "page_size": c.page_size,
            "new_messages": c.new_messages,
            "duplicates": c.duplicates,
            "next_cursor": c.next_cursor,
        })
    doc = _base("simulate", file)
    doc.update({
        "conversation": conversation_id,
        "messages": len(messages),
        "page_size": args.page_size,
        "faults": {f.name: getattr(faults, f.name) for f in fields(faults)},
        "load": load,
        "calls": summary["calls"],
        "pages": summary["pages"],
        "retries": summary["retries"],
        "transient_failures": summary["transient_failures"],
        "duplicates_skipped": summary["duplicates_skipped"],
        "total_delay": summary["total_delay"],
        "elapsed": summary["elapsed"],
        "stop_reason": summary["stop_reason"],
        "failure": summary["failure"],
        "error": error,
        "fired": list(store.fired),
        "loaded_ids": [m.id for m in loaded],
        "truth": {
            "ok": diff.ok and error is None,
            "loaded": diff.loaded_count,
            "truth": diff.truth_count,
            "lost": list(diff.lost),
            "repeated": list(diff.repeated),
            "extra": list(diff.extra),
            "out_of_order": diff.out_of_order,
            "explanation": _explain(store, loaded, error, load["empty_page_ends"]),
        },
        "call_log": call_log,
    })
    code = EXIT_LOAD if error is not None else EXIT_OK
    if args.json:
        _emit_json(doc)
    else:
        head = (f"conversation {conversation_id} from {file}" if file is not None
                else f"a synthetic conversation (seed {args.seed})")
        _out(f"{head}: {_n(len(messages), 'message')}, page size {args.page_size}")
        set_faults = [f"{k}={v}" for k, v in doc["faults"].items()
                      if k != "seed" and v != getattr(FaultConfig(), k)]
        _out(f"faults         {', '.join(set_faults) or 'none'} (seed {args.seed}); "
             f"fired: {', '.join(doc['fired']) or 'none'}")
        _out(f"calls          {doc['calls']:,} ({_n(doc['pages'], 'page')}, "
             f"{_n(doc['retries'], 'retry', 'retries')}, "
             f"{_n(doc['transient_failures'], 'transient failure')})")
        _out(f"virtual time   {doc['elapsed']:.3f} s ({doc['total_delay']:.3f} s of backoff)")
        _out(f"stop reason    {doc['stop_reason'] or '(raised ' + str(doc['failure']) + ')'}")
        t = doc["truth"]
        verdict = "ok" if t["ok"] else "NOT ok"
        _out(f"truth check    {verdict}: {t['loaded']:,} loaded of {t['truth']:,}; "
             f"{len(t['lost']):,} lost, {len(t['repeated']):,} repeated, {len(t['extra']):,} extra"
             + (", out of order" if t["out_of_order"] else ""))
        _out(f"               {t['explanation']}")
        if args.calls and call_log:
            _out()
            # calls counted from 1, as the store's error messages and the dashboard count them
            # (the JSON's call_log[].index is the 0-based position in the list)
            table = [("call #", "cursor", "attempt", "outcome", "fault", "backoff", "page", "new",
                      "next cursor")]
            for c in call_log[: args.calls]:
                ok = c["outcome"] == CallOutcome.OK
                table.append((
                    str(c["index"] + 1), "(first page)" if c["cursor"] is None else str(c["cursor"]),
                    str(c["attempt"]), c["outcome"], c["fault"] or "",
                    "" if c["delay_after"] is None else f"{c['delay_after']:.3f} s",
                    str(c["page_size"]) if ok else "", str(c["new_messages"]) if ok else "",
                    ("(end)" if c["next_cursor"] is None else str(c["next_cursor"])) if ok else "",
                ))
            _table(table, right={0, 2, 5, 6, 7})
            if len(call_log) > args.calls:
                _out(f"... {len(call_log) - args.calls:,} more (--calls N, or --json, lists them)")
    if error is not None:
        sys.stderr.write(f"{PROG} simulate: error: load failed: {_one_line(error['message'])}\n")
    return code


def _explain(store: Any, loaded: list[Message], error: dict[str, Any] | None,
             empty_page_ends: bool) -> str:
    """One sentence on the truth check: the store's own explanation, or why the load raised."""
    if error is None:
        return store.explain_loss(loaded, empty_page_ends=empty_page_ends)
    cursor = "the first page" if error["cursor"] is None else f"cursor {error['cursor']!r}"
    return (f"load_history raised PageLoadError: {cursor} failed {error['attempts']} time(s); "
            f"the {error['loaded']} message(s) loaded before it are kept on the error, and a "
            f"caller can resume from that cursor")


# ------------------------------------------------------------------------------------------------
# The parser


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2) pointing at ``--help``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {_one_line(message)} "
                              f"(see '{self.prog} --help')\n")


_DESCRIPTION = "convmem: an agent's conversation memory, from the command line."

_EPILOG = "exit codes:\n" + "\n".join(
    f"  {code:<4} {text}" for code, text in EXIT_CODES.items()) + (
    "\n\nEvery subcommand takes --json (one JSON document on stdout; keys in README.md, "
    "'Command line').\nRun 'python -m convmem SUBCOMMAND --help' for its options."
)


def _add_loading_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("reading the file")
    g.add_argument("--format", default="auto", metavar="NAME",
                   help=f"the file's format (default: auto-detect); one of "
                        f"{', '.join(_input_formats())}")
    g.add_argument("--strict", action="store_true",
                   help="a fault in any conversation fails the whole file (default: skip that "
                        "conversation with its reason, where the library supports it)")
    g.add_argument("--messages-path", metavar="JMESPATH",
                   help="where each record keeps its messages, e.g. "
                        "'answer_generation.train_messages[-1]' (needs library support)")
    g.add_argument("--listing-pattern", metavar="REGEX",
                   help="regular expression of a listing id (default: exactly 10 digits)")


def _add_output_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("output")
    g.add_argument("--json", action="store_true",
                   help="print one JSON document on stdout instead of text")
    g.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="always show progress on stderr (default: only on a terminal, for "
                        f"{PROGRESS_MIN_ITEMS:,}+ items or a file of "
                        f"{PROGRESS_MIN_BYTES / 1e6:g}+ MB)")
    g.add_argument("--no-progress", dest="progress", action="store_false", default=None,
                   help="never show progress")
    g.add_argument("--traceback", action="store_true",
                   help="on an internal error, show the Python traceback")


def _subcommand(sub: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=summary, description=textwrap.fill(description, 79),
                          epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m convmem`` parser (exposed for docs and tests)."""
    parser = _Parser(prog=PROG, description=_DESCRIPTION, epilog=_EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True,
                                parser_class=_Parser)

    p = _subcommand(sub, "inspect",
                    "what a file holds: format, conversations, messages, tokens, skips",
                    "Load FILE and say what it holds: format, conversations, messages, tokens, "
                    "roles, tool calls, listings, and each conversation skipped with its reason.")
    p.add_argument("file", metavar="FILE", help="a conversation file ('-': standard input)")
    p.set_defaults(run=_cmd_inspect)

    p = _subcommand(sub, "convert", "write a file's conversations in another format",
                    "Load FILE and write its conversations in another format, to stdout or to "
                    "OUT (written whole or not at all).")
    p.add_argument("file", metavar="FILE", help="a conversation file ('-': standard input)")
    p.add_argument("--to", required=True, metavar="FORMAT",
                   help=f"the output format; one of {', '.join(_output_formats())}")
    p.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout ('-': stdout)")
    p.set_defaults(run=_cmd_convert)

    p = _subcommand(sub, "budget",
                    "add a conversation to a History under a token limit, add by add",
                    "Add one conversation's messages to a History(limit) one by one; show after "
                    "each add what was dropped and why, the total and how many messages are "
                    "kept.")
    p.add_argument("file", metavar="FILE", help="a conversation file ('-': standard input)")
    p.add_argument("--limit", required=True, type=_non_negative, metavar="N",
                   help="the token limit (tokens, >= 0)")
    p.add_argument("--conversation", metavar="ID",
                   help="which conversation (default: the first in the file)")
    p.add_argument("--kept-each-add", action="store_true",
                   help="list the kept ids after every add (output grows with kept x adds)")
    pol = p.add_argument_group("policies (History keywords; all off by default)")
    pol.add_argument("--pin-system", action="store_true", help="system messages are never dropped")
    pol.add_argument("--pin-latest-user", action="store_true",
                     help="the newest user message is never dropped")
    pol.add_argument("--keep-tool-groups", action="store_true",
                     help="a tool call and its results are dropped together")
    pol.add_argument("--start-on-user", action="store_true",
                     help="after a compaction, the context starts on a user message")
    pol.add_argument("--target", type=_non_negative, metavar="T",
                     help="compaction cuts to T tokens (T <= limit; default: the limit)")
    pol.add_argument("--summary-budget", type=_non_negative, metavar="B",
                     help="summarize what compaction drops (extractive summarizer) in at most B "
                          "tokens")
    p.set_defaults(run=_cmd_budget)

    p = _subcommand(sub, "safe-limit",
                    "the smallest token limit that never drops a protected message",
                    "The exact smallest token limit at which History with the given policies "
                    "never drops the protected message class (the newest user turn, the system "
                    "prompts, or one message id), computed in one pass (convmem.smallest_safe_limit), "
                    "with the add step and message that decide it.")
    p.add_argument("file", metavar="FILE", help="a conversation file ('-': standard input)")
    p.add_argument("--conversation", metavar="ID",
                   help="which conversation (default: the first in the file)")
    p.add_argument("--protect", default="latest_user", metavar="WHAT",
                   help="latest_user (default), system, or a message id")
    pol = p.add_argument_group("policies (History keywords; all off by default)")
    pol.add_argument("--pin-system", action="store_true", help="system messages are never dropped")
    pol.add_argument("--pin-latest-user", action="store_true",
                     help="the newest user message is never dropped")
    pol.add_argument("--keep-tool-groups", action="store_true",
                     help="a tool call and its results are dropped together")
    pol.add_argument("--start-on-user", action="store_true",
                     help="after a compaction, the context starts on a user message")
    pol.add_argument("--target-percent", type=_int_at_least(0), metavar="P",
                     help="compaction cuts to P%% of the limit (0..100; default: the limit)")
    pol.add_argument("--summary-budget", type=_non_negative, metavar="B",
                     help="tokens reserved for a summary beside what compaction keeps")
    p.set_defaults(run=_cmd_safe_limit)

    p = _subcommand(sub, "evict", "per shopper, forget the oldest conversations over a listing cap",
                    "Group FILE's conversations by shopper (user id), oldest first, and drop the "
                    "oldest whole conversations while they mention more than N distinct listing "
                    "ids.")
    p.add_argument("file", metavar="FILE", help="a conversation file ('-': standard input)")
    p.add_argument("--max-listings", required=True, type=_non_negative, metavar="N",
                   help="the most distinct listing ids kept per shopper (>= 0)")
    p.add_argument("--user", metavar="ID", help="only this shopper (default: every shopper)")
    p.set_defaults(run=_cmd_evict)

    p = _subcommand(sub, "simulate",
                    "load page by page from a seeded flaky store on a virtual clock",
                    "Serve a conversation (from FILE, or a synthetic one of --messages messages) "
                    "page by page from a store that injects faults, load it with load_history on "
                    "a virtual clock (no real waiting), and check what loaded against the truth. "
                    "Same seed, same run.")
    p.add_argument("file", metavar="FILE", nargs="?",
                   help="a conversation file ('-': standard input; default: a synthetic "
                        "conversation)")
    p.add_argument("--conversation", metavar="ID",
                   help="which conversation of FILE (default: the first)")
    p.add_argument("--messages", type=_non_negative, default=200, metavar="N",
                   help="messages of the synthetic conversation (default: 200; at most "
                        f"{SIMULATE_MAX_MESSAGES:,})")
    p.add_argument("--page-size", type=_positive, default=10, metavar="N",
                   help="messages per page (default: 10)")
    p.add_argument("--seed", type=_int, default=0, metavar="S",
                   help="seeds the faults, the jitter and the synthetic conversation (default: 0)")
    p.add_argument("--calls", type=_non_negative, default=SIMULATE_CALL_ROWS, metavar="N",
                   help=f"text output lists the first N calls (default: {SIMULATE_CALL_ROWS}; "
                        "--json lists all)")
    fg = p.add_argument_group("faults (all off by default)")
    fg.add_argument("--failure-rate", type=_probability, default=0.0, metavar="P",
                    help="probability that a call fails with TransientError")
    fg.add_argument("--burst", type=_positive, default=1, metavar="N",
                    help="a failure fails the next N-1 calls with the same cursor too")
    fg.add_argument("--repeated-cursor", type=_positive, metavar="K",
                    help="page K+1 hands back its own cursor (a stuck cursor)")
    fg.add_argument("--cursor-cycle", type=_int_at_least(2), metavar="J",
                    help="the last page points back to page J")
    fg.add_argument("--wrap-around", action="store_true",
                    help="after the last page the store starts over under fresh cursors")
    fg.add_argument("--empty-page", type=_positive, metavar="K",
                    help="an empty page carrying a cursor after page K")
    fg.add_argument("--overlap", type=_non_negative, default=0, metavar="N",
                    help="each page repeats the previous page's last N messages")
    rg = p.add_argument_group("retries (load_history)")
    rg.add_argument("--attempts", type=_positive, default=5, metavar="N",
                    help="tries per call (default: 5)")
    rg.add_argument("--base-delay", type=_seconds, default=0.1, metavar="S",
                    help="backoff base, seconds (default: 0.1)")
    rg.add_argument("--max-delay", type=_seconds, default=2.0, metavar="S",
                    help="backoff cap, seconds (default: 2.0)")
    rg.add_argument("--deadline", type=_seconds, metavar="S",
                    help="give up when the next sleep would pass S seconds (default: none)")
    rg.add_argument("--follow-empty-pages", action="store_true",
                    help="an empty page that carries a cursor does not end the load")
    p.set_defaults(run=_cmd_simulate)

    for p in sub.choices.values():
        _add_loading_options(p)
        _add_output_options(p)
    return parser


# ------------------------------------------------------------------------------------------------
# main


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m convmem`` with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    Exit codes: 0 done; 1 input error (OSError, FormatError, the file lacks what was asked);
    2 usage error (argparse, or a bad option value/combination); 3 load failure (PageLoadError in
    ``simulate``); 4 internal error; 130 interrupted; 141 stdout closed early. Errors are one line
    on stderr; nothing is raised (argparse's ``--help`` exits 0 through SystemExit, caught here).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    prog = f"{PROG} {args.command}"
    try:
        try:
            code = args.run(args)
        finally:
            sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{prog}: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # Python's advice: point stdout at devnull so the interpreter's final flush is quiet.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # a stdout with no file descriptor (tests)
            pass
        return EXIT_BROKEN_PIPE
    except _UsageError as exc:
        return _fail(prog, f"{exc} (see '{prog} --help')", EXIT_USAGE)
    except _InputError as exc:
        return _fail(prog, str(exc), EXIT_INPUT)
    except FormatError as exc:
        hint = " (on the command line: --messages-path)" if "messages_path=" in str(exc) else ""
        return _fail(prog, f"format error: {exc}{hint}", EXIT_INPUT)
    except OSError as exc:
        return _fail(prog, _os_error(exc), EXIT_INPUT)
    except PageLoadError as exc:
        return _fail(prog, f"load failed: {exc}", EXIT_LOAD)
    except Exception as exc:
        if args.traceback:
            import traceback

            traceback.print_exc(file=sys.stderr)
        detail = f"{type(exc).__name__}: {exc}"
        return _fail(prog, f"internal error: {detail} (a bug; rerun with --traceback)",
                     EXIT_INTERNAL)


def _fail(prog: str, message: str, code: int) -> int:
    sys.stderr.write(f"{prog}: error: {_one_line(message)}\n")
    return code


def _os_error(exc: OSError) -> str:
    if exc.filename is not None and exc.strerror:
        return f"cannot read {str(exc.filename)!r}: {exc.strerror}"
    return str(exc) or type(exc).__name__
