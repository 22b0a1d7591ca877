"""CSV rows (``"csv"``): one message a row, header ``id,role,tokens`` plus optional columns.

Optional columns: ``content``, ``conversation_id`` (default one conversation ``c1``; rows of a
conversation may interleave with others), ``user_id``, ``tool_call_ids`` (space-separated ids of an
assistant row's calls; an id may be reused once its call was answered) and ``tool_call_id`` (a
tool row's call; empty leaves the row unlinked, as CSV has no positions to pair by). ``tokens`` is
given, never counted. A row at fault skips its whole conversation; a row with the wrong number of
fields whose conversation cannot be told is a fault of the file.

Record per message: the row as ``{column: cell}``. Dump (same format): the file's header, then each
kept row unchanged, conversation by conversation. From another format: every column, tokens as
counted.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from ..conversations import Conversation
from ..errors import FormatError
from ..limits import MAX_TOKENS
from ..message import ROLES
from ._base import Builder, Context, Format, Where, same_format

__all__ = ["FORMAT", "detect", "dump", "parse"]

NAME = "csv"
REQUIRED = ("id", "role", "tokens")
OPTIONAL = ("content", "conversation_id", "user_id", "tool_call_ids", "tool_call_id")
_ALL = ("conversation_id", "user_id", "id", "role", "tokens", "content", "tool_call_ids",
        "tool_call_id")


def detect(first_line: Any) -> bool:
    """The first non-blank line is a CSV header naming ``id`` and ``role`` (a header without
    ``tokens`` is still CSV, so its error says ``missing column 'tokens'``)."""
    if not isinstance(first_line, str):
        return False
    try:
        cols = {c.strip() for c in next(csv.reader([first_line]))}
    except (csv.Error, StopIteration):
        return False
    return {"id", "role"} <= cols


def parse(text: str, ctx: Context, where: Where) -> None:
    # A cell may be as long as the file (a long tool result): lift the csv module's 128 KiB
    # default cell cap (process-wide; only ever raised, to the size cap in force).
    if csv.field_size_limit() < len(text) + 1:
        csv.field_size_limit(len(text) + 1)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        while header is not None and not any(h.strip() for h in header):
            header = next(reader, None)
    except csv.Error as exc:
        ctx.fail(f"invalid CSV: {exc}", (reader.line_num, None))
    if header is None:
        ctx.fail("empty file: no CSV header")
    header_line = reader.line_num
    cols = tuple(h.strip() for h in header)
    index: dict[str, int] = {}
    for k, name in enumerate(cols):
        if name not in REQUIRED + OPTIONAL:
            ctx.fail(f"unknown column {name!r} (expected {', '.join(REQUIRED)} and optionally "
                     f"{', '.join(OPTIONAL)})", (header_line, name), name)
        if name in index:
            ctx.fail(f"duplicate column {name!r}", (header_line, name), name)
        index[name] = k
    for name in REQUIRED:
        if name not in index:
            ctx.fail(f"missing column {name!r}", (header_line, name))
    builders: dict[str, Builder | None] = {}  # None: the conversation was skipped
    users: dict[str, tuple[str | None, int]] = {}
    order: list[str] = []
    conv_col = index.get("conversation_id")
    line = header_line
    rows = 0
    while True:
        start = line + 1
        try:
            row = next(reader, None)
        except csv.Error as exc:
            ctx.fail(f"invalid CSV: {exc}", (reader.line_num, None))
        line = reader.line_num
        if row is None:
            break
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        rows += 1
        conv_key = "c1" if conv_col is None else (row[conv_col] if conv_col < len(row) else None)
        if conv_key is not None and builders.get(conv_key, 0) is None:
            continue  # the rest of a skipped conversation
        try:
            if len(row) != len(cols):
                ctx.fail(f"expected {len(cols)} fields, got {len(row)}", (start, None), len(row))
            if not conv_key.strip():
                ctx.fail("conversation_id is empty", (start, "conversation_id"), conv_key)
            record = dict(zip(cols, row))
            uid = record.get("user_id") or None
            if uid is not None:
                ctx.text("user_id", uid, (start, "user_id"))
            b = builders.get(conv_key)
            if b is None:
                cid = ctx.claim(conv_key, (start, "conversation_id"))
                ctx.auto_ids += 1
                b = builders[conv_key] = Builder(ctx, cid, Where(start, None, False))
                users[conv_key] = (uid, start)
                order.append(conv_key)
            elif users[conv_key][0] != uid:
                ctx.fail(f"user_id {uid!r} differs from {users[conv_key][0]!r} given on line "
                         f"{users[conv_key][1]} for conversation {conv_key!r}",
                         (start, "user_id"), uid)
            _row(ctx, b, record, start)
        except FormatError as exc:
            if conv_key is None or ctx.strict:
                raise
            if conv_key not in builders:
                order.append(conv_key)
            builders[conv_key] = None
            ctx.skip(exc, conv_key)
    if not rows:
        ctx.fail("no rows after the CSV header", (header_line, None))
    for key in order:
        b = builders[key]
        if b is not None:
            ctx.conversations.append(b.build(users[key][0], NAME, envelope=cols, calls=False))


def _row(ctx: Context, b: Builder, record: dict[str, str], start: int) -> None:
    msg_id = record["id"]
    if not msg_id:
        ctx.fail("id is empty", (start, "id"), msg_id)
    role = record["role"]
    if role not in ROLES:
        ctx.fail(f"unknown role {role!r} (expected one of {', '.join(ROLES)})", (start, "role"),
                 role)
    raw_tokens = record["tokens"].strip()
    if not (raw_tokens.isascii() and raw_tokens.isdigit()) or len(raw_tokens) > 40:
        shown = raw_tokens if len(raw_tokens) <= 40 else raw_tokens[:37] + "..."
        ctx.fail(f"tokens must be a non-negative integer at most MAX_TOKENS = 2**53 - 1 = "
                 f"{MAX_TOKENS:,}, got {shown!r}", (start, "tokens"), shown)
    ctx.tokens(int(raw_tokens), (start, "tokens"))  # one cap, one message (Context.tokens)
    call_ids = tuple((record.get("tool_call_ids") or "").split())
    if call_ids and role != "assistant":
        ctx.fail(f"only assistant rows may have tool_call_ids, not {role!r}",
                 (start, "tool_call_ids"), role)
    if len(set(call_ids)) != len(call_ids):
        ctx.fail(f"duplicate id in tool_call_ids {call_ids!r}", (start, "tool_call_ids"),
                 call_ids)
    answers = (record.get("tool_call_id") or "").strip() or None
    if answers is not None and role != "tool":
        ctx.fail(f"only tool rows may have tool_call_id, not {role!r}", (start, "tool_call_id"),
                 role)
    b.where = Where(start, None, False)
    b.add(0, role, role, record.get("content") or None, record, own_id=msg_id,
          calls=[(c, "", "") for c in call_ids], answers=answers,
          answer_field="tool_call_id", tokens=int(raw_tokens), link=False)


def dump(conversations: Sequence[Conversation]) -> str:
    out = io.StringIO()
    # "\r\n" rows (RFC 4180): then a cell holding a lone "\r" or "\n" is quoted too
    writer = csv.writer(out, lineterminator="\r\n")
    header: tuple[str, ...] | None = None
    for c in conversations:
        if same_format(c, NAME) and isinstance(c.envelope, tuple):
            header = c.envelope if header is None else header
    if header is None or not all(same_format(c, NAME) and c.envelope == header
                                 for c in conversations):
        header = _ALL
    writer.writerow(header)
    for c in conversations:
        if same_format(c, NAME) and c.envelope == header:
            for rec in c.records:
                writer.writerow([rec.get(col, "") for col in header])
            continue
        for m in c.messages:
            cells = {"conversation_id": c.id, "user_id": c.user_id or "", "id": m.id,
                     "role": m.role, "tokens": str(m.tokens), "content": m.content or "",
                     "tool_call_ids": " ".join(m.tool_call_ids),
                     "tool_call_id": m.tool_call_id or ""}
            writer.writerow([cells[col] for col in header])
    return out.getvalue()


FORMAT = Format(
    name=NAME,
    description="CSV with header id,role,tokens[,content,conversation_id,user_id,tool_call_ids,"
                "tool_call_id]",
    detect=detect,
    parse=parse,
    dump=dump,
    text=True,
)
