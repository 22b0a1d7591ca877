"""Gemini ``contents`` (``"gemini"``): ``{"contents": [...], "systemInstruction"?}`` or a list.

Each content is ``{"role": "user" | "model" | "function", "parts": [...]}``; parts (camelCase or
snake_case keys, as the REST API and the Python SDK write them):

* ``text`` (joined with ``"\\n"``; a part with ``thought: true`` is kept, not shown or counted);
* ``functionCall {name, args, id?}`` (model turns): a tool call; no id pairs by position and name;
* ``functionResponse {name, response, id?}`` (user or function turns): each becomes its own
  ``"tool"`` message answering the nearest earlier unanswered call with its id, else the earliest
  unanswered call of that name; the turn's other parts become one ``"user"`` message after them
  (the split keeps block indices in ``parts``, as for Anthropic);
* ``inlineData`` / ``fileData`` (images, files): kept; images go to the counter as
  :class:`ImageRef` with unknown size.

``systemInstruction`` (``{"parts": [{"text"}]}`` or a string) becomes a leading system message.
Provider roles: ``user``, ``model``, ``function``, ``system``. Dump (same format): the envelope
with the kept turns (split turns keep only their kept parts), ``systemInstruction`` dropped with
its message. From another format: ``contents`` with ``functionCall`` / ``functionResponse`` parts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..conversations import Conversation
from ._base import (
    Builder,
    Context,
    Format,
    ImageRef,
    Where,
    compact_json,
    kind,
    regroup,
    same_format,
    short,
)

__all__ = ["FORMAT", "detect", "dump", "parse"]

NAME = "gemini"
_SYSTEM_KEYS = ("systemInstruction", "system_instruction")


def _get(part: dict[str, Any], camel: str, snake: str) -> Any:
    value = part.get(camel)
    return part.get(snake) if value is None else value


def detect(record: Any) -> bool:
    """An object with a ``contents`` list, or a list whose first item has ``parts``."""
    if isinstance(record, dict):
        return isinstance(record.get("contents"), list)
    return (isinstance(record, list) and bool(record) and isinstance(record[0], dict)
            and isinstance(record[0].get("parts"), list))


def _system_text(ctx: Context, value: Any, at: tuple[int | None, str | None]) -> str:
    if isinstance(value, str):
        return value
    parts = value.get("parts") if isinstance(value, dict) else None
    if not isinstance(parts, list) or not all(
            isinstance(p, dict) and isinstance(p.get("text"), str) for p in parts):
        ctx.fail("systemInstruction must be a string or {parts: [{text}]}", at, value)
    return "\n".join(p["text"] for p in parts)


def _turn(ctx: Context, b: Builder, raw: Any, i: int) -> None:
    where = b.where

    def at(sub: str | None = None) -> tuple[int | None, str | None]:
        return where.msg(i, sub)

    if not isinstance(raw, dict):
        ctx.fail(f"a content must be an object, got {kind(raw)}", at(), raw)
    role = raw.get("role", "user")
    if role not in ("user", "model", "function") or not isinstance(role, str):
        ctx.fail(f"unknown role {short(role)} (expected one of user, model, function)",
                 at("role"), role)
    parts = raw.get("parts")
    if not isinstance(parts, list):
        ctx.fail(f"'parts' must be a list, got {kind(parts)}", at("parts"), parts)
    texts: list[str] = []
    own_parts: list[int] = []
    images: list[Any] = []
    calls: list[tuple[str | None, str, str]] = []
    results: list[tuple[int, str | None, str, str]] = []  # (index, id, name, text)
    for j, part in enumerate(parts):
        pat = f"parts[{j}]"
        if not isinstance(part, dict):
            ctx.fail(f"a part must be an object, got {kind(part)}", at(pat), part)
        call = _get(part, "functionCall", "function_call")
        response = _get(part, "functionResponse", "function_response")
        data = _get(part, "inlineData", "inline_data") or _get(part, "fileData", "file_data")
        if "text" in part:
            if not isinstance(part["text"], str):
                ctx.fail(f"a text part needs a string 'text', got {kind(part['text'])}",
                         at(f"{pat}.text"), part["text"])
            if not part.get("thought"):
                texts.append(part["text"])
            own_parts.append(j)
        elif call is not None:
            if role != "model":
                ctx.fail("functionCall parts belong to model turns", at(pat), role)
            if not isinstance(call, dict) or not isinstance(call.get("name"), str) \
                    or not call["name"]:
                ctx.fail("a functionCall needs a non-empty string 'name'", at(f"{pat}.name"),
                         call)
            cid = call.get("id")
            if cid is not None and not isinstance(cid, str):
                ctx.fail(f"a functionCall 'id' must be a string, got {short(cid)}",
                         at(f"{pat}.id"), cid)
            args = call.get("args", {})
            calls.append((cid or None, call["name"],
                          compact_json(args)))
        elif response is not None:
            if role == "model":
                ctx.fail("functionResponse parts belong to user or function turns", at(pat),
                         role)
            if not isinstance(response, dict) or not isinstance(response.get("name"), str) \
                    or not response["name"]:
                ctx.fail("a functionResponse needs a non-empty string 'name'", at(f"{pat}.name"),
                         response)
            rid = response.get("id")
            if rid is not None and not isinstance(rid, str):
                ctx.fail(f"a functionResponse 'id' must be a string, got {short(rid)}",
                         at(f"{pat}.id"), rid)
            body = response.get("response", {})
            text = body if isinstance(body, str) else compact_json(body)
            results.append((j, rid or None, response["name"], text))
        elif isinstance(data, dict):
            mime = data.get("mimeType", data.get("mime_type", ""))
            if isinstance(mime, str) and mime.startswith("image/"):
                images.append(ImageRef(None, None, "auto"))
            own_parts.append(j)
        else:
            ctx.fail(f"unsupported part with keys {sorted(part)[:6]} (expected text, "
                     "functionCall, functionResponse, inlineData or fileData)", at(pat),
                     sorted(part)[:6])
    if role == "model":
        content = "\n".join(texts) if texts else (None if calls else "")
        b.add(i, "assistant", "model", content, raw, calls=calls, images=images)
        return
    n_out = len(results) + (1 if (own_parts or not results) else 0)
    split = n_out > 1
    for k, (j, rid, rname, text) in enumerate(results):
        b.add(i, "tool", role, text, raw, answers=rid, answer_field=f"parts[{j}].id",
              by_name=None if rid else rname, part=(j,) if split else None)
    if own_parts or not results:
        b.add(i, "user", role, "\n".join(texts), raw, images=images,
              part=tuple(own_parts) if split else None)


def parse(record: Any, ctx: Context, where: Where) -> Conversation:
    if isinstance(record, list):
        obj: dict[str, Any] = {}
        contents = record
        mwhere = where
        envelope = None
    else:
        if not isinstance(record, dict) or not isinstance(record.get("contents"), list):
            ctx.fail("a Gemini conversation is an object with a 'contents' list",
                     where.conv("contents"), record)
        obj, contents, envelope = record, record["contents"], record
        mwhere = where.under("contents")
    cid = ctx.conv_id(obj.get("id"), where.conv("id"))
    uid = ctx.user_id(obj.get("user_id"), where.conv("user_id"))
    b = Builder(ctx, cid, mwhere)
    for key in _SYSTEM_KEYS:
        if obj.get(key) is not None:
            b.add(-1, "system", "system", _system_text(ctx, obj[key], where.conv(key)), obj[key])
            break
    for i, raw in enumerate(contents):
        _turn(ctx, b, raw, i)
    return b.build(uid, NAME, envelope=envelope)


def _normalized(c: Conversation) -> dict[str, Any]:
    calls = {(tc.message_id, tc.id): tc for tc in c.tool_calls}
    names = {tc.id: tc.name for tc in c.tool_calls}
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    open_user: list[dict[str, Any]] | None = None
    for m in c.messages:
        if m.role == "system":
            system.append(m.content or "")
            continue
        if m.role == "assistant":
            parts: list[dict[str, Any]] = [{"text": m.content}] if m.content else []
            for cid in m.tool_call_ids:
                tc = calls.get((m.id, cid))
                try:
                    args = json.loads(tc.arguments) if tc and tc.arguments else {}
                except ValueError:
                    args = {"arguments": tc.arguments if tc else ""}
                parts.append({"functionCall": {"id": cid, "name": tc.name if tc else "unknown",
                                               "args": args}})
            contents.append({"role": "model", "parts": parts or [{"text": ""}]})
            open_user = None
            continue
        if m.role == "tool":
            try:
                body = json.loads(m.content or "{}")
            except ValueError:
                body = None
            part = {"functionResponse": {
                "id": m.tool_call_id, "name": names.get(m.tool_call_id or "", "unknown"),
                "response": body if isinstance(body, dict) else {"result": m.content or ""}}}
        else:
            part = {"text": m.content or ""}
        if open_user is None:
            open_user = [part]
            contents.append({"role": "user", "parts": open_user})
        else:
            open_user.append(part)
        if m.role == "user":
            open_user = None
    record: dict[str, Any] = {"id": c.id}
    if c.user_id is not None:
        record["user_id"] = c.user_id
    if system:
        record["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    record["contents"] = contents
    return record


def dump(conversations: Sequence[Conversation]) -> str:
    lines = []
    for c in conversations:
        if same_format(c, NAME):
            system, turns = regroup(c, "parts")
            if c.envelope is None:
                value: Any = turns
            else:
                value = {**c.envelope, "contents": turns}
                key = next((k for k in _SYSTEM_KEYS if k in c.envelope), None)
                if system is None and key is not None:
                    value.pop(key)
                elif system is not None:
                    value[key or "systemInstruction"] = system
        else:
            value = _normalized(c)
        lines.append(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


FORMAT = Format(
    name=NAME,
    description="Gemini contents ({contents: [{role, parts}]}, functionCall / functionResponse)",
    detect=detect,
    parse=parse,
    dump=dump,
)
