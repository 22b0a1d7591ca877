"""tau-bench run files (``"tau-bench"``): a JSON list of rows ``{task_id, trial, info, traj, ...}``.

``traj`` is an OpenAI chat message list (every quirk of :mod:`.openai_chat` applies); the
conversation id is ``f"task{task_id}-trial{trial}"`` and the user id ``info.task.user_id``.
Dump (same format): a JSON list of the rows, each row unchanged but for ``traj``, which holds the
kept messages' records. A conversation from another format becomes a row with ``task_id`` = its
id, ``trial`` 0, ``info.task.user_id`` and a ``traj`` of OpenAI chat messages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..conversations import Conversation
from . import openai_chat
from ._base import Builder, Context, Format, Where, kind, same_format, short

__all__ = ["FORMAT", "detect", "dump", "parse"]

NAME = "tau-bench"


def detect(record: Any) -> bool:
    """A row: an object with ``traj`` (or ``task_id`` and ``trial``) and no ``messages``."""
    return isinstance(record, dict) and "messages" not in record and (
        "traj" in record or ("task_id" in record and "trial" in record))


def parse(row: Any, ctx: Context, where: Where) -> Conversation:
    if not isinstance(row, dict):
        ctx.fail(f"a tau-bench row must be an object, got {kind(row)}", where.conv(None), row)
    parts = []
    for key in ("task_id", "trial"):
        if key not in row:
            ctx.fail(f"missing '{key}'", where.conv(key))
        value = row[key]
        if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
            ctx.fail(f"'{key}' must be an integer or a non-empty string, got {short(value)}",
                     where.conv(key), value)
        parts.append(value)
    if "traj" not in row:
        ctx.fail("missing 'traj'", where.conv("traj"))
    traj = row["traj"]
    if not isinstance(traj, list):
        ctx.fail(f"'traj' must be a list of messages, got {kind(traj)}", where.conv("traj"), traj)
    uid = None
    info = row.get("info")
    if info is not None:
        if not isinstance(info, dict):
            ctx.fail(f"'info' must be an object, got {kind(info)}", where.conv("info"), info)
        task = info.get("task")
        if task is not None:
            if not isinstance(task, dict):
                ctx.fail(f"'info.task' must be an object, got {kind(task)}",
                         where.conv("info.task"), task)
            uid = ctx.user_id(task.get("user_id"), where.conv("info.task.user_id"))
    cid = ctx.claim(f"task{parts[0]}-trial{parts[1]}", where.conv("task_id"))
    ctx.auto_ids += 1
    b = Builder(ctx, cid, where.under("traj"))
    openai_chat.add_messages(ctx, b, traj)
    return b.build(uid, NAME, envelope=row)


def dump(conversations: Sequence[Conversation]) -> str:
    rows = []
    for c in conversations:
        if same_format(c, NAME):
            rows.append({**c.envelope, "traj": list(c.records)})
        else:
            rows.append({"task_id": c.id, "trial": 0, "info": {"task": {"user_id": c.user_id}},
                         "traj": openai_chat.normalized_messages(c)})
    return json.dumps(rows, ensure_ascii=False, indent=1) + "\n"


FORMAT = Format(
    name=NAME,
    description="tau-bench run file (a JSON list of rows with task_id, trial, info, traj)",
    detect=detect,
    parse=parse,
    dump=dump,
)
