"""OpenAI Responses API items (``"openai-responses"``): a list of items, or ``{"input": [...]}``.

Items, one message each (the item is its record):

* ``message`` (or a bare ``{"role", "content"}``): roles system, developer, user, assistant;
  content a string or parts ``input_text`` / ``output_text`` (text), ``refusal``, ``input_image``
  (counted as an :class:`ImageRef` with its ``detail``), ``input_file``, ``input_audio`` (kept);
* ``function_call`` / ``custom_tool_call``: an assistant message with one call, id ``call_id``;
* ``function_call_output`` / ``custom_tool_call_output``: a tool message answering the nearest
  earlier unanswered call with its ``call_id``;
* ``reasoning``: an assistant message whose content is the summary text.

Provider roles (what the counter is given): the message's role; ``assistant`` for calls and
reasoning, ``tool`` for call outputs (the item type stays in the record).

The item's ``id`` (``msg_...``, ``fc_...``) is the message id when present. Dump (same format):
the items unchanged, one conversation a line (a bare list, or the envelope with ``input``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..conversations import Conversation
from ._base import ROLE_MAP, Builder, Context, Format, ImageRef, Where, kind, same_format, short

__all__ = ["FORMAT", "detect", "dump", "parse"]

NAME = "openai-responses"
_ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning",
               "custom_tool_call", "custom_tool_call_output")
_TEXT_PARTS = ("input_text", "output_text")
_KEPT_PARTS = ("input_image", "input_file", "input_audio")
_ROLES = ("system", "developer", "user", "assistant")


def detect(record: Any) -> bool:
    """A list whose first item has a Responses ``type`` or ``input_text``/``output_text``
    parts, or an object with an ``input`` list."""
    if isinstance(record, dict):
        return isinstance(record.get("input"), list) and "messages" not in record
    if not isinstance(record, list) or not record or not isinstance(record[0], dict):
        return False
    first = record[0]
    if first.get("type") in _ITEM_TYPES:
        return True
    content = first.get("content")
    return (isinstance(content, list) and bool(content) and isinstance(content[0], dict)
            and content[0].get("type") in _TEXT_PARTS)


def _content(ctx: Context, content: Any, where: Where, i: int) -> tuple[str, list[Any]]:
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        ctx.fail(f"content must be a string or a list of parts, got {kind(content)}",
                 where.msg(i, "content"), content)
    texts, images = [], []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            ctx.fail(f"a content part must be an object, got {kind(part)}",
                     where.msg(i, f"content[{j}]"), part)
        ptype = part.get("type")
        key = "refusal" if ptype == "refusal" else "text"
        if ptype in _TEXT_PARTS or ptype == "refusal":
            text = part.get(key)
            if not isinstance(text, str):
                ctx.fail(f"a {ptype} part needs a string {key!r}, got {kind(text)}",
                         where.msg(i, f"content[{j}].{key}"), text)
            texts.append(text)
        elif ptype in _KEPT_PARTS:
            if ptype == "input_image":
                detail = part.get("detail", "auto")
                if detail not in ("auto", "low", "high"):
                    ctx.fail(f"image detail must be auto, low or high, got {short(detail)}",
                             where.msg(i, f"content[{j}].detail"), detail)
                images.append(ImageRef(None, None, detail))
        else:
            ctx.fail(f"unsupported content part type {short(ptype)} (expected one of "
                     f"{', '.join(_TEXT_PARTS + ('refusal',) + _KEPT_PARTS)})",
                     where.msg(i, f"content[{j}].type"), ptype)
    return "\n".join(texts), images


def _str(ctx: Context, item: dict[str, Any], key: str, where: Where, i: int,
         empty_ok: bool = False) -> str:
    value = item.get(key)
    if not isinstance(value, str) or (not value and not empty_ok):
        wanted = "string" if empty_ok else "non-empty string"
        ctx.fail(f"a {item.get('type')} item needs a {wanted} {key!r}, got {short(value)}",
                 where.msg(i, key), value)
    return value


def add_items(ctx: Context, b: Builder, items: list[Any]) -> None:
    where = b.where
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            ctx.fail(f"an item must be an object, got {kind(item)}", where.msg(i), item)
        itype = item.get("type", "message" if "role" in item else None)
        own = item.get("id")
        if itype == "message":
            role = item.get("role")
            if role not in _ROLES or not isinstance(role, str):
                ctx.fail(f"unknown role {short(role)} (expected one of {', '.join(_ROLES)})",
                         where.msg(i, "role"), role)
            if "content" not in item:
                ctx.fail("missing 'content'", where.msg(i, "content"))
            text, images = _content(ctx, item["content"], where, i)
            b.add(i, ROLE_MAP[role], role, text, item, own_id=own, images=images)
        elif itype in ("function_call", "custom_tool_call"):
            call_id = _str(ctx, item, "call_id", where, i)
            name = _str(ctx, item, "name", where, i)
            args = _str(ctx, item, "arguments" if itype == "function_call" else "input", where, i,
                        empty_ok=True)
            b.add(i, "assistant", "assistant", None, item, own_id=own,
                  calls=[(call_id, name, args)])
        elif itype in ("function_call_output", "custom_tool_call_output"):
            call_id = _str(ctx, item, "call_id", where, i)
            output = item.get("output")
            images: list[Any] = []
            if isinstance(output, list):
                output, images = _content(ctx, output, where, i)
            elif not isinstance(output, str):
                ctx.fail(f"'output' must be a string or a list of parts, got {kind(output)}",
                         where.msg(i, "output"), output)
            b.add(i, "tool", "tool", output, item, own_id=own, answers=call_id,
                  answer_field="call_id", images=images)
        elif itype == "reasoning":
            summary = item.get("summary", [])
            if not isinstance(summary, list):
                ctx.fail(f"'summary' must be a list, got {kind(summary)}",
                         where.msg(i, "summary"), summary)
            texts = [s.get("text") for s in summary if isinstance(s, dict)]
            if not all(isinstance(t, str) for t in texts) or len(texts) != len(summary):
                ctx.fail("a reasoning summary holds objects with a string 'text'",
                         where.msg(i, "summary"), summary)
            b.add(i, "assistant", "assistant", "\n".join(texts), item, own_id=own)
        else:
            ctx.fail(f"unsupported item type {short(itype)} (expected one of "
                     f"{', '.join(_ITEM_TYPES)})", where.msg(i, "type"), itype)


def parse(record: Any, ctx: Context, where: Where) -> Conversation:
    if isinstance(record, list):
        b = Builder(ctx, ctx.conv_id(None, where.conv(None)), where)
        add_items(ctx, b, record)
        return b.build(None, NAME)
    if not isinstance(record, dict) or not isinstance(record.get("input"), list):
        ctx.fail("a Responses conversation is a list of items or an object with an 'input' list",
                 where.conv("input"), record)
    cid = ctx.conv_id(record.get("id"), where.conv("id"))
    uid = ctx.user_id(record.get("user_id"), where.conv("user_id"))
    b = Builder(ctx, cid, where.under("input"))
    add_items(ctx, b, record["input"])
    return b.build(uid, NAME, envelope=record)


def _normalized(c: Conversation) -> list[dict[str, Any]]:
    calls = {(tc.message_id, tc.id): tc for tc in c.tool_calls}
    proles = c.provider_roles
    items: list[dict[str, Any]] = []
    for k, m in enumerate(c.messages):
        if m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id or "",
                          "output": m.content or ""})
            continue
        if m.role == "assistant" and m.tool_call_ids:
            if m.content:
                items.append({"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": m.content}]})
            for cid in m.tool_call_ids:
                tc = calls.get((m.id, cid))
                items.append({"type": "function_call", "call_id": cid,
                              "name": tc.name if tc else "unknown",
                              "arguments": tc.arguments if tc else "{}"})
            continue
        role = "developer" if proles and proles[k] == "developer" else m.role
        part = "output_text" if m.role == "assistant" else "input_text"
        items.append({"type": "message", "role": role,
                      "content": [{"type": part, "text": m.content or ""}]})
    return items


def dump(conversations: Sequence[Conversation]) -> str:
    lines = []
    for c in conversations:
        if same_format(c, NAME):
            value: Any = (list(c.records) if c.envelope is None
                          else {**c.envelope, "input": list(c.records)})
        else:
            value = {"id": c.id, **({"user_id": c.user_id} if c.user_id else {}),
                     "input": _normalized(c)}
        lines.append(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


FORMAT = Format(
    name=NAME,
    description="OpenAI Responses API items (message, function_call, function_call_output, "
                "reasoning), a list or {input: [...]}",
    detect=detect,
    parse=parse,
    dump=dump,
)
