"""LangChain messages as ``messages_to_dict`` writes them (``"langchain"``).

A conversation record is a list of ``{"type": ..., "data": {...}}`` (or an object ``{"messages":
[...], "id"?, "user_id"?}`` holding such a list). Types: ``system``, ``human``, ``ai``, ``tool``,
``function`` (legacy), ``chat`` (``data.role`` names the role). ``data`` fields read:

* ``content``: a string or a list of strings / ``{"type": "text", "text"}`` parts (other part
  types, such as images, are kept in the record and passed to the counter as :class:`ImageRef`
  when ``image_url``);
* ``tool_calls`` on ``ai`` (``[{"name", "args", "id"}]``; an empty or missing id pairs by
  position), else ``additional_kwargs.tool_calls`` (OpenAI shape) or
  ``additional_kwargs.function_call`` (legacy);
* ``tool_call_id`` on ``tool``; ``name`` on any message (a ``function`` result pairs with the
  earlier unanswered function call of that name); ``id`` (the message id when a string).

Provider roles: the LangChain type (``human``, ``ai``...). Dump (same format): each record
unchanged; from another format, ``{"type", "data": {"content", "tool_calls", "tool_call_id",
...}}`` with the fields ``messages_from_dict`` needs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..conversations import Conversation
from ._base import (
    ROLE_MAP,
    Builder,
    Context,
    Format,
    ImageRef,
    Where,
    compact_json,
    kind,
    same_format,
    short,
)

__all__ = ["FORMAT", "detect", "dump", "parse"]

NAME = "langchain"
_TYPES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool",
          "function": "tool", "chat": None}


def _is_message(m: Any) -> bool:
    return (isinstance(m, dict) and isinstance(m.get("type"), str) and m["type"] in _TYPES
            and isinstance(m.get("data"), dict))


def detect(record: Any) -> bool:
    """A list (or ``{"messages": list}``) whose first item is ``{"type": <LangChain type>,
    "data": {...}}``."""
    if isinstance(record, dict):
        record = record.get("messages")
    return isinstance(record, list) and bool(record) and _is_message(record[0])


def _content(ctx: Context, content: Any, at: Any) -> tuple[str, list[Any]]:
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        ctx.fail(f"content must be a string or a list, got {kind(content)}", at("content"),
                 content)
    texts, images = [], []
    for j, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if part.get("type") == "text":
                text = part.get("text")
                if not isinstance(text, str):
                    ctx.fail(f"a text part needs a string 'text', got {kind(text)}",
                             at(f"content[{j}].text"), text)
                texts.append(text)
            elif part.get("type") == "image_url":
                image = part.get("image_url")
                detail = image.get("detail", "auto") if isinstance(image, dict) else "auto"
                images.append(ImageRef(None, None, detail if detail in ("low", "high")
                                       else "auto"))
        else:
            ctx.fail(f"a content part must be a string or an object, got {kind(part)}",
                     at(f"content[{j}]"), part)
    return "\n".join(texts), images


def _calls(ctx: Context, data: dict[str, Any], at: Any) -> list[tuple[str | None, str, str]]:
    calls: list[tuple[str | None, str, str]] = []
    raw = data.get("tool_calls")
    kwargs = data.get("additional_kwargs")
    if not isinstance(kwargs, dict):
        kwargs = {}
    if raw:
        if not isinstance(raw, list):
            ctx.fail(f"'tool_calls' must be a list, got {kind(raw)}", at("tool_calls"), raw)
        for j, call in enumerate(raw):
            if not isinstance(call, dict):
                ctx.fail(f"a tool call must be an object, got {kind(call)}",
                         at(f"tool_calls[{j}]"), call)
            name, cid = call.get("name"), call.get("id")
            if not isinstance(name, str) or not name:
                ctx.fail(f"a tool call needs a non-empty string 'name', got {short(name)}",
                         at(f"tool_calls[{j}].name"), name)
            if cid is not None and not isinstance(cid, str):
                ctx.fail(f"a tool call 'id' must be a string, got {short(cid)}",
                         at(f"tool_calls[{j}].id"), cid)
            if cid and any(cid == c[0] for c in calls):
                ctx.fail(f"duplicate tool call id {cid!r} in one message",
                         at(f"tool_calls[{j}].id"), cid)
            args = call.get("args", {})
            text = args if isinstance(args, str) else compact_json(args)
            calls.append((cid or None, name, text))
        return calls
    kw_calls = kwargs.get("tool_calls")
    if isinstance(kw_calls, list):
        for j, call in enumerate(kw_calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
                ctx.fail("additional_kwargs.tool_calls holds OpenAI tool calls with a function "
                         "name", at(f"additional_kwargs.tool_calls[{j}]"), call)
            cid = call.get("id")
            args = fn.get("arguments", "")
            calls.append((cid if isinstance(cid, str) and cid else None, fn["name"],
                          args if isinstance(args, str) else compact_json(args)))
    fcall = kwargs.get("function_call")
    if isinstance(fcall, dict):
        name = fcall.get("name")
        if not isinstance(name, str) or not name:
            ctx.fail("additional_kwargs.function_call needs a non-empty string 'name'",
                     at("additional_kwargs.function_call.name"), name)
        args = fcall.get("arguments", "")
        calls.append((None, name, args if isinstance(args, str) else compact_json(args)))
    return calls


def add_messages(ctx: Context, b: Builder, messages: list[Any]) -> None:
    where = b.where
    for i, raw in enumerate(messages):
        def at(sub: str | None = None, _i: int = i) -> tuple[int | None, str | None]:
            return where.msg(_i, sub)

        if not isinstance(raw, dict):
            ctx.fail(f"a message must be an object, got {kind(raw)}", at(), raw)
        mtype = raw.get("type")
        if not isinstance(mtype, str) or mtype not in _TYPES:
            ctx.fail(f"unknown message type {short(mtype)} (expected one of {', '.join(_TYPES)})",
                     at("type"), mtype)
        data = raw.get("data")
        if not isinstance(data, dict):
            ctx.fail(f"'data' must be an object, got {kind(data)}", at("data"), data)

        def dat(sub: str | None = None) -> tuple[int | None, str | None]:
            return at(f"data.{sub}" if sub else "data")

        role = _TYPES[mtype]
        prole = mtype
        if role is None:  # ChatMessage: data.role
            prole = data.get("role")
            role = ROLE_MAP.get(prole) if isinstance(prole, str) else None
            if role is None:
                ctx.fail(f"unknown chat role {short(prole)}", dat("role"), prole)
        text, images = _content(ctx, data.get("content", ""), dat)
        name = data.get("name")
        if name is not None and not isinstance(name, str):
            ctx.fail(f"'name' must be a string, got {short(name)}", dat("name"), name)
        calls = _calls(ctx, data, dat) if role == "assistant" else []
        answers = None
        by_name = None
        if role == "tool":
            answers = data.get("tool_call_id")
            if answers is not None and not isinstance(answers, str):
                ctx.fail(f"tool_call_id must be a string, got {short(answers)}",
                         dat("tool_call_id"), answers)
            if mtype == "function":
                if not name:
                    ctx.fail("a function message needs a non-empty string 'name'", dat("name"),
                             name)
                by_name = name
        own = data.get("id")
        b.add(i, role, prole, text if (text or not calls) else None, raw,
              own_id=own if isinstance(own, str) and own else None, calls=calls,
              answers=answers, answer_field="data.tool_call_id", by_name=by_name, name=name,
              images=images)


def parse(record: Any, ctx: Context, where: Where) -> Conversation:
    if isinstance(record, list):
        b = Builder(ctx, ctx.conv_id(None, where.conv(None)), where)
        add_messages(ctx, b, record)
        return b.build(None, NAME)
    if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
        ctx.fail("a LangChain conversation is a list of message dicts or an object with a "
                 "'messages' list", where.conv("messages"), record)
    cid = ctx.conv_id(record.get("id"), where.conv("id"))
    uid = ctx.user_id(record.get("user_id"), where.conv("user_id"))
    b = Builder(ctx, cid, where.under("messages"))
    add_messages(ctx, b, record["messages"])
    return b.build(uid, NAME, envelope=record)


_OUT_TYPE = {"system": "system", "user": "human", "assistant": "ai", "tool": "tool"}


def _normalized(c: Conversation) -> list[dict[str, Any]]:
    calls = {(tc.message_id, tc.id): tc for tc in c.tool_calls}
    out = []
    for m in c.messages:
        data: dict[str, Any] = {"content": m.content or "", "additional_kwargs": {},
                                "response_metadata": {}, "type": _OUT_TYPE[m.role],
                                "name": None, "id": None}
        if m.role == "assistant":
            tcs = []
            for cid in m.tool_call_ids:
                tc = calls.get((m.id, cid))
                args: Any = {}
                if tc is not None:
                    try:
                        args = json.loads(tc.arguments) if tc.arguments else {}
                    except ValueError:
                        args = {"arguments": tc.arguments}
                tcs.append({"name": tc.name if tc else "unknown", "args": args, "id": cid,
                            "type": "tool_call"})
            data["tool_calls"] = tcs
            data["invalid_tool_calls"] = []
        if m.role == "tool":
            data["tool_call_id"] = m.tool_call_id or ""
        out.append({"type": _OUT_TYPE[m.role], "data": data})
    return out


def dump(conversations: Sequence[Conversation]) -> str:
    lines = []
    for c in conversations:
        if same_format(c, NAME):
            value: Any = (list(c.records) if c.envelope is None
                          else {**c.envelope, "messages": list(c.records)})
        else:
            value = {"id": c.id, **({"user_id": c.user_id} if c.user_id else {}),
                     "messages": _normalized(c)}
        lines.append(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


FORMAT = Format(
    name=NAME,
    description="LangChain messages_to_dict output ({type: human|ai|system|tool, data: {...}})",
    detect=detect,
    parse=parse,
    dump=dump,
)
