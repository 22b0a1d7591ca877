"""Anthropic Messages (``"anthropic"``): ``{"system"?, "messages": [...]}``, JSON or JSONL.

A user or assistant turn's ``content`` is a string or a list of blocks:

* ``text`` (joined with ``"\\n"``), ``image`` and ``document`` (user turns; images go to the
  counter as :class:`ImageRef` with unknown size), ``thinking`` / ``redacted_thinking``
  (assistant turns; kept in the record, not counted: Anthropic strips earlier turns' thinking
  from the context);
* ``tool_use`` (assistant): a tool call, ``input`` kept as compact JSON arguments;
* ``tool_result`` (user): each becomes its own ``"tool"`` message answering the nearest earlier
  unanswered ``tool_use`` with its ``tool_use_id`` (ids may be reused once answered). The turn's
  other blocks become one ``"user"`` message after them. Such split messages keep the turn as
  their record and the indices of their blocks as ``parts``.

The top-level ``system`` (a string or text blocks) becomes a leading system message whose record
is that value. Message ids: the turn's ``"id"`` (with ``":k"`` appended when the turn was split),
else ``conv:index``.

Dump (same format): the envelope unchanged but for ``messages`` (each kept turn's record; a split
turn with some messages dropped keeps only their blocks) and ``system`` (dropped when its message
was). From another format: system messages go to ``system``, tool results to ``tool_result``
blocks of one user turn, calls to ``tool_use`` blocks (arguments that are not a JSON object are
wrapped as ``{"arguments": text}``).
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

NAME = "anthropic"
_BLOCKS = ("text", "image", "document", "thinking", "redacted_thinking", "tool_use",
           "tool_result")


def detect(record: Any) -> bool:
    """An object with a top-level ``system`` and ``messages``, or whose turns (or, for a bare
    list, whose messages) use ``tool_use`` / ``tool_result`` blocks."""
    if isinstance(record, dict):
        messages = record.get("messages")
        if not isinstance(messages, list):
            return False
        if "system" in record:
            return True
    elif isinstance(record, list):
        messages = record
    else:
        return False
    for m in messages:
        if isinstance(m, dict):
            content = m.get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") in ("tool_use",
                                                                          "tool_result"):
                        return True
    return False


def _text_blocks(ctx: Context, blocks: list[Any], at: Any, key: str) -> str:
    texts = []
    for j, block in enumerate(blocks):
        if not isinstance(block, dict):
            ctx.fail(f"a content block must be an object, got {kind(block)}", at(f"{key}[{j}]"),
                     block)
        btype = block.get("type")
        if btype == "text":
            text = block.get("text")
            if not isinstance(text, str):
                ctx.fail(f"a text block needs a string 'text', got {kind(text)}",
                         at(f"{key}[{j}].text"), text)
            texts.append(text)
        elif btype not in ("image", "document"):
            ctx.fail(f"unsupported block type {short(btype)} here (expected text, image or "
                     "document)", at(f"{key}[{j}].type"), btype)
    return "\n".join(texts)


def _turn(ctx: Context, b: Builder, raw: Any, i: int) -> None:
    where = b.where

    def at(sub: str | None = None) -> tuple[int | None, str | None]:
        return where.msg(i, sub)

    if not isinstance(raw, dict):
        ctx.fail(f"a message must be an object, got {kind(raw)}", at(), raw)
    if "role" not in raw:
        ctx.fail("missing 'role'", at("role"))
    role = raw["role"]
    if role not in ("user", "assistant") or not isinstance(role, str):
        shown = repr(role) if isinstance(role, str) else f"{short(role)} ({kind(role)})"
        ctx.fail(f"unknown role {shown} (expected one of user, assistant) - an Anthropic system "
                 "prompt goes in the top-level 'system'", at("role"), role)
    if "content" not in raw:
        ctx.fail("missing 'content'", at("content"))
    content = raw["content"]
    own = raw.get("id")
    if isinstance(content, str):
        if own is None:
            b.add_plain(i, role, role, content, raw, None, (), None)
        else:
            b.add(i, role, role, content, raw, own_id=own)
        return
    if not isinstance(content, list):
        ctx.fail(f"content must be a string or a list of blocks, got {kind(content)}",
                 at("content"), content)
    texts: list[str] = []
    own_blocks: list[int] = []
    images: list[Any] = []
    calls: list[tuple[str | None, str, str]] = []
    results: list[tuple[int, str, str, list[Any]]] = []  # (block index, tool_use_id, text, images)
    for j, block in enumerate(content):
        bat = f"content[{j}]"
        if not isinstance(block, dict):
            ctx.fail(f"a content block must be an object, got {kind(block)}", at(bat), block)
        btype = block.get("type")
        if btype == "text":
            text = block.get("text")
            if not isinstance(text, str):
                ctx.fail(f"a text block needs a string 'text', got {kind(text)}",
                         at(f"{bat}.text"), text)
            texts.append(text)
            own_blocks.append(j)
        elif btype in ("image", "document"):
            if role != "user":
                ctx.fail(f"{btype!r} blocks belong to user messages", at(f"{bat}.type"), btype)
            if btype == "image":
                images.append(ImageRef(None, None, "auto"))
            own_blocks.append(j)
        elif btype in ("thinking", "redacted_thinking"):
            if role != "assistant":
                ctx.fail(f"{btype!r} blocks belong to assistant messages", at(f"{bat}.type"),
                         btype)
            own_blocks.append(j)
        elif btype == "tool_use":
            if role != "assistant":
                ctx.fail("tool_use blocks belong to assistant messages", at(f"{bat}.type"), btype)
            call_id, name = block.get("id"), block.get("name")
            if call_id is not None and not isinstance(call_id, str):
                ctx.fail(f"tool_use 'id' must be a string, got {short(call_id)}", at(f"{bat}.id"),
                         call_id)
            if call_id and any(call_id == c[0] for c in calls):
                ctx.fail(f"duplicate tool call id {call_id!r} in one message", at(f"{bat}.id"),
                         call_id)
            if not isinstance(name, str) or not name:
                ctx.fail(f"tool_use needs a non-empty string 'name', got {short(name)}",
                         at(f"{bat}.name"), name)
            if "input" not in block:
                ctx.fail("missing 'input'", at(f"{bat}.input"))
            args = compact_json(block["input"])
            calls.append((call_id or None, name, args))
        elif btype == "tool_result":
            if role != "user":
                ctx.fail("tool_result blocks belong to user messages", at(f"{bat}.type"), btype)
            use_id = block.get("tool_use_id")
            if use_id is not None and not isinstance(use_id, str):
                ctx.fail(f"tool_result 'tool_use_id' must be a string, got {short(use_id)}",
                         at(f"{bat}.tool_use_id"), use_id)
            rc = block.get("content")
            rimages: list[Any] = []
            if rc is None:
                text = ""
            elif isinstance(rc, str):
                text = rc
            elif isinstance(rc, list):
                text = _text_blocks(ctx, rc, lambda sub, _b=bat: at(f"{_b}.{sub}"), "content")
                rimages = [ImageRef(None, None, "auto") for x in rc
                           if isinstance(x, dict) and x.get("type") == "image"]
            else:
                ctx.fail(f"tool_result content must be a string or a list of blocks, got "
                         f"{kind(rc)}", at(f"{bat}.content"), rc)
            results.append((j, use_id, text, rimages))
        else:
            ctx.fail(f"unsupported content block type {short(btype)} (expected one of "
                     f"{', '.join(_BLOCKS)})", at(f"{bat}.type"), btype)
    if role == "assistant":
        b.add(i, "assistant", "assistant", "\n".join(texts) if texts else (None if calls else ""),
              raw, own_id=own, calls=calls)
        return
    n_out = len(results) + (1 if (own_blocks or not results) else 0)
    split = n_out > 1
    for k, (j, use_id, text, rimages) in enumerate(results):
        b.add(i, "tool", "user", text, raw, own_id=own, id_suffix=f":{k}" if split else "",
              answers=use_id, answer_field=f"content[{j}].tool_use_id", images=rimages,
              part=(j,) if split else None)
    if own_blocks or not results:
        b.add(i, "user", "user", "\n".join(texts), raw, own_id=own,
              id_suffix=f":{len(results)}" if split else "", images=images,
              part=tuple(own_blocks) if split else None)


def parse(record: Any, ctx: Context, where: Where) -> Conversation:
    if isinstance(record, list):
        obj: dict[str, Any] = {}
        messages = record
        envelope = None
        mwhere = where
    else:
        if not isinstance(record, dict):
            ctx.fail(f"a conversation must be an object with 'messages', got {kind(record)}",
                     where.conv(None), record)
        if "messages" not in record:
            ctx.fail("missing 'messages'", where.conv("messages"))
        obj = record
        messages = record["messages"]
        if not isinstance(messages, list):
            ctx.fail(f"'messages' must be a list, got {kind(messages)}", where.conv("messages"),
                     messages)
        envelope = record
        mwhere = where.under("messages")
    cid = ctx.conv_id(obj.get("id"), where.conv("id"))
    uid = ctx.user_id(obj.get("user_id"), where.conv("user_id"))
    b = Builder(ctx, cid, mwhere)
    system = obj.get("system")
    if system is not None:
        at_sys = where.conv("system")
        if isinstance(system, str):
            text = system
        elif isinstance(system, list):
            text = _text_blocks(ctx, system, where.conv, "system")
        else:
            text = ctx.fail(f"'system' must be a string or a list of text blocks, got "
                            f"{kind(system)}", at_sys, system)
        b.add(-1, "system", "system", text, system)  # no own id: it cannot fail on position
    for i, raw in enumerate(messages):
        _turn(ctx, b, raw, i)
    return b.build(uid, NAME, envelope=envelope)


def _call_input(arguments: str) -> Any:
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": arguments}


def _normalized(c: Conversation) -> dict[str, Any]:
    calls = {(tc.message_id, tc.id): tc for tc in c.tool_calls}
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    open_results: list[dict[str, Any]] | None = None
    for m in c.messages:
        if m.role == "system":
            system.append(m.content or "")
            open_results = None
        elif m.role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id or "",
                     "content": m.content or ""}
            if open_results is None:
                open_results = [block]
                turns.append({"role": "user", "content": open_results})
            else:
                open_results.append(block)
        elif m.role == "user":
            if open_results is not None:
                open_results.append({"type": "text", "text": m.content or ""})
            else:
                turns.append({"role": "user", "content": m.content or ""})
            open_results = None
        else:
            blocks: list[dict[str, Any]] = []
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            for cid in m.tool_call_ids:
                tc = calls.get((m.id, cid))
                blocks.append({"type": "tool_use", "id": cid,
                               "name": tc.name if tc else "unknown",
                               "input": _call_input(tc.arguments if tc else "")})
            turns.append({"role": "assistant",
                          "content": blocks if m.tool_call_ids else (m.content or "")})
            open_results = None
    record: dict[str, Any] = {"id": c.id}
    if c.user_id is not None:
        record["user_id"] = c.user_id
    if system:
        record["system"] = "\n\n".join(system)
    record["messages"] = turns
    return record


def _same(c: Conversation) -> Any:
    system, turns = regroup(c, "content")
    if c.envelope is None:
        return turns
    out = {**c.envelope, "messages": turns}
    if system is None:
        out.pop("system", None)
    else:
        out["system"] = system
    return out


def dump(conversations: Sequence[Conversation]) -> str:
    lines = []
    for c in conversations:
        value = _same(c) if same_format(c, NAME) else _normalized(c)
        lines.append(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


FORMAT = Format(
    name=NAME,
    description="Anthropic Messages ({system?, messages} with text / tool_use / tool_result "
                "blocks; JSON or JSONL)",
    detect=detect,
    parse=parse,
    dump=dump,
)
