"""OpenAI Chat Completions messages (``"openai-chat"``), JSON or JSONL.

A conversation record is a list of messages, or an object ``{"messages": [...], "id"?,
"user_id"?, ...}``; a file is one record, a JSON list of records, or JSONL (one record a line).

Messages as the Chat Completions API documents them:

* roles ``system``, ``developer`` (system-type: ``pin_system`` keeps it), ``user``, ``assistant``,
  ``tool`` and the legacy ``function``; the provider role is kept for export and counting;
* ``content``: a string, null (an assistant message that calls tools or refuses), or a list of
  parts: ``text``, ``refusal``, ``image_url``, ``input_audio``, ``file``. Text and refusal parts
  are joined with ``"\\n"`` into the message's content; image parts are passed to the counter as
  :class:`ImageRef` (size unknown, the part's ``detail``); audio and file parts are kept in the
  record (and so exported) but not counted: OpenAI documents no token formula for them here;
* ``tool_calls`` (``{"id", "type": "function", "function": {"name", "arguments"}}``) and the
  legacy ``function_call {"name", "arguments"}`` (no id: paired with the next ``function`` result
  of that name by position);
* ``tool_call_id`` on a tool result (missing or empty: paired by position); ``name`` on any
  message (counted by the counter where the provider counts it);
* convmem extensions: ``"id"`` (the message id) and ``"tokens"`` (a given count, not recounted).

Dump (same format): each kept message's record unchanged, inside its conversation's own envelope
(the object around ``messages``, or a bare list), one conversation per line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..conversations import Conversation
from ..limits import MAX_TOKENS
from ._base import (
    ROLE_MAP,
    Builder,
    Context,
    Format,
    ImageRef,
    Where,
    check_tokens,
    compact_json,
    kind,
    same_format,
    short,
)

__all__ = ["FORMAT", "add_messages", "detect", "dump", "normalized_messages", "parse"]

NAME = "openai-chat"
_ROLES = {r: ROLE_MAP[r] for r in ("system", "developer", "user", "assistant", "tool",
                                   "function")}
_ROLE_LIST = ", ".join(_ROLES)
_PART_TYPES = ("text", "refusal", "image_url", "input_audio", "file")
_MISSING = object()


def detect(record: Any) -> bool:
    """A message list whose first message has a ``role`` (no Responses ``type``, no Gemini
    ``parts``), or an object with a ``messages`` list (no Anthropic top-level ``system``)."""
    if isinstance(record, dict):
        return "messages" in record and "system" not in record
    if isinstance(record, list) and record:
        first = record[0]
        return isinstance(first, dict) and "role" in first and "parts" not in first \
            and "type" not in first
    return False


def _parts(ctx: Context, parts: list[Any], where: Where, i: int
           ) -> tuple[str, list[Any]]:
    texts: list[str] = []
    images: list[Any] = []
    for j, part in enumerate(parts):
        if not isinstance(part, dict):
            ctx.fail(f"a content part must be an object, got {kind(part)}",
                     where.msg(i, f"content[{j}]"), part)
        ptype = part.get("type")
        if ptype == "text":
            text = part.get("text")
            if not isinstance(text, str):
                ctx.fail(f"a text part needs a string 'text', got {kind(text)}",
                         where.msg(i, f"content[{j}].text"), text)
            texts.append(text)
        elif ptype == "refusal":
            text = part.get("refusal")
            if not isinstance(text, str):
                ctx.fail(f"a refusal part needs a string 'refusal', got {kind(text)}",
                         where.msg(i, f"content[{j}].refusal"), text)
            texts.append(text)
        elif ptype == "image_url":
            image = part.get("image_url")
            if not isinstance(image, dict) or not isinstance(image.get("url"), str):
                ctx.fail("an image_url part needs an object 'image_url' with a string 'url'",
                         where.msg(i, f"content[{j}].image_url"), image)
            detail = image.get("detail", "auto")
            if detail not in ("auto", "low", "high"):
                ctx.fail(f"image detail must be auto, low or high, got {short(detail)}",
                         where.msg(i, f"content[{j}].image_url.detail"), detail)
            images.append(ImageRef(None, None, detail))
        elif ptype == "input_audio":
            if not isinstance(part.get("input_audio"), dict):
                ctx.fail("an input_audio part needs an object 'input_audio'",
                         where.msg(i, f"content[{j}].input_audio"), part.get("input_audio"))
        elif ptype == "file":
            if not isinstance(part.get("file"), dict):
                ctx.fail("a file part needs an object 'file'", where.msg(i, f"content[{j}].file"),
                         part.get("file"))
        else:
            ctx.fail(
                f"unsupported content part type {short(ptype)} (expected one of "
                f"{', '.join(_PART_TYPES)})",
                where.msg(i, f"content[{j}].type"), ptype,
            )
    return "\n".join(texts), images


def _arguments(ctx: Context, fn: dict[str, Any], where: Where, i: int, at: str) -> str:
    if "arguments" not in fn:
        ctx.fail("missing 'arguments'", where.msg(i, f"{at}.arguments"))
    args = fn["arguments"]
    if isinstance(args, str):
        return args
    if isinstance(args, (dict, list)):
        return compact_json(args)
    return ctx.fail(f"'arguments' must be a JSON string or object, got {kind(args)}",
                    where.msg(i, f"{at}.arguments"), args)


def _tool_calls(ctx: Context, raw_calls: Any, role: str, where: Where, i: int
                ) -> list[tuple[str | None, str, str]]:
    if not isinstance(raw_calls, list):
        ctx.fail(f"'tool_calls' must be a list, got {kind(raw_calls)}",
                 where.msg(i, "tool_calls"), raw_calls)
    if raw_calls and role != "assistant":
        ctx.fail(f"only assistant messages may have tool_calls, not {role!r}",
                 where.msg(i, "tool_calls"), role)
    calls: list[tuple[str | None, str, str]] = []
    seen: set[str] = set()
    for j, call in enumerate(raw_calls):
        at = f"tool_calls[{j}]"
        if not isinstance(call, dict):
            ctx.fail(f"a tool call must be an object, got {kind(call)}", where.msg(i, at), call)
        call_id = call.get("id")
        if call_id is not None and not isinstance(call_id, str):
            ctx.fail(f"a tool call 'id' must be a string, got {short(call_id)}",
                     where.msg(i, f"{at}.id"), call_id)
        if call_id:
            if call_id in seen:
                ctx.fail(f"duplicate tool call id {call_id!r} in one message",
                         where.msg(i, f"{at}.id"), call_id)
            seen.add(call_id)
        fn = call.get("function")
        if not isinstance(fn, dict):
            ctx.fail(f"a tool call needs an object 'function', got {kind(fn)}",
                     where.msg(i, f"{at}.function"), fn)
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            ctx.fail(f"a function needs a non-empty string 'name', got {short(name)}",
                     where.msg(i, f"{at}.function.name"), name)
        calls.append((call_id or None, name, _arguments(ctx, fn, where, i, f"{at}.function")))
    return calls


def add_messages(ctx: Context, b: Builder, messages: list[Any]) -> None:
    """Feed a list of OpenAI chat messages to the builder (shared with tau-bench and wrappers)."""
    where = b.where
    roles = _ROLES
    for i, raw in enumerate(messages):
        if type(raw) is not dict:
            ctx.fail(f"a message must be an object, got {kind(raw)}", where.msg(i), raw)
        prole = raw.get("role", _MISSING)
        role = roles.get(prole) if type(prole) is str else None
        if role is None:
            if prole is _MISSING:
                ctx.fail("missing 'role'", where.msg(i, "role"))
            shown = repr(prole) if isinstance(prole, str) else f"{short(prole)} ({kind(prole)})"
            ctx.fail(f"unknown role {shown} (expected one of {_ROLE_LIST})", where.msg(i, "role"),
                     prole)
        calls: Any = ()
        raw_calls = raw.get("tool_calls")
        if raw_calls is not None:
            calls = _tool_calls(ctx, raw_calls, role, where, i)
        fcall = raw.get("function_call")
        if fcall is not None:
            if role != "assistant":
                ctx.fail(f"only assistant messages may have function_call, not {prole!r}",
                         where.msg(i, "function_call"), prole)
            if not isinstance(fcall, dict):
                ctx.fail(f"'function_call' must be an object, got {kind(fcall)}",
                         where.msg(i, "function_call"), fcall)
            fname = fcall.get("name")
            if not isinstance(fname, str) or not fname:
                ctx.fail(f"a function_call needs a non-empty string 'name', got {short(fname)}",
                         where.msg(i, "function_call.name"), fname)
            calls = list(calls) + [(None, fname, _arguments(ctx, fcall, where, i,
                                                            "function_call"))]
        images: Any = ()
        content = raw.get("content", _MISSING)
        if type(content) is str:
            pass
        elif content is None or content is _MISSING:
            refusal = raw.get("refusal")
            if role == "assistant" and (calls or isinstance(refusal, str)):
                content = refusal if isinstance(refusal, str) else None
            elif content is _MISSING:
                ctx.fail("missing 'content'", where.msg(i, "content"))
            else:
                ctx.fail("content is null (only an assistant message with tool_calls, a "
                         "function_call or a refusal may omit it)", where.msg(i, "content"))
        elif isinstance(content, list):
            content, images = _parts(ctx, content, where, i)
        else:
            ctx.fail(f"content must be a string or a list of content parts, got {kind(content)}",
                     where.msg(i, "content"), content)
        name = raw.get("name")
        if name is not None and not isinstance(name, str):
            ctx.fail(f"'name' must be a string, got {short(name)}", where.msg(i, "name"), name)
        answers = raw.get("tool_call_id")
        by_name = None
        if answers is not None:
            if role != "tool":
                ctx.fail(f"only tool messages may have tool_call_id, not {prole!r}",
                         where.msg(i, "tool_call_id"), answers)
            if not isinstance(answers, str):
                ctx.fail(f"tool_call_id must be a string, got {short(answers)}",
                         where.msg(i, "tool_call_id"), answers)
        if prole == "function":
            if not name:
                ctx.fail("a function message needs a non-empty string 'name'",
                         where.msg(i, "name"), name)
            by_name = name
        tokens = raw.get("tokens")
        if tokens is not None and (tokens.__class__ is not int or not 0 <= tokens <= MAX_TOKENS):
            tokens = check_tokens(ctx, tokens, where.msg(i, "tokens"))  # a count maybe at fault
        own = raw.get("id")
        if not calls and role != "tool":
            b.add_plain(i, role, prole, content, raw, name, images, tokens, own)
            continue
        b.add(i, role, prole, content, raw, own_id=own, calls=calls, answers=answers,
              answer_field="tool_call_id", by_name=by_name, name=name, images=images,
              tokens=tokens)


def parse(record: Any, ctx: Context, where: Where) -> Conversation:
    """One conversation record: a message list or an object with ``messages``."""
    if isinstance(record, list):
        cid = ctx.conv_id(None, where.conv(None))
        b = Builder(ctx, cid, where)
        add_messages(ctx, b, record)
        return b.build(None, NAME)
    if not isinstance(record, dict):
        ctx.fail(f"a conversation must be a list of messages or an object with 'messages', got "
                 f"{kind(record)}", where.conv(None), record)
    if "messages" not in record:
        if "role" in record:
            ctx.fail("this is a single message, not a conversation: JSONL holds one conversation "
                     "per line (a list of messages or an object with 'messages')",
                     where.conv(None))
        ctx.fail("missing 'messages'", where.conv("messages"))
    messages = record["messages"]
    if not isinstance(messages, list):
        ctx.fail(f"'messages' must be a list, got {kind(messages)}", where.conv("messages"),
                 messages)
    if "system" in record:
        ctx.fail("a top-level 'system' is Anthropic's format (use format='anthropic'); OpenAI puts "
                 "the system prompt in a message with role 'system' or 'developer'",
                 where.conv("system"))
    cid = ctx.conv_id(record.get("id"), where.conv("id"))
    uid = ctx.user_id(record.get("user_id"), where.conv("user_id"))
    b = Builder(ctx, cid, where.under("messages"))
    add_messages(ctx, b, messages)
    return b.build(uid, NAME, envelope=record)


def normalized_messages(conv: Conversation) -> list[dict[str, Any]]:
    """The conversation's messages as OpenAI chat dicts built from the convmem fields (for a
    conversation read from another format). Provider roles that OpenAI has (``developer``,
    ``function`` is written as ``tool``) are kept; others map to the convmem role."""
    calls: dict[tuple[str, str], Any] = {(tc.message_id, tc.id): tc for tc in conv.tool_calls}
    proles = conv.provider_roles
    out = []
    for k, m in enumerate(conv.messages):
        role = m.role
        if proles and proles[k] == "developer":
            role = "developer"
        d: dict[str, Any] = {"role": role}
        if m.content is None and not (m.role == "assistant" and m.tool_call_ids):
            d["content"] = ""
        else:
            d["content"] = m.content
        if m.tool_call_ids:
            out_calls = []
            for cid in m.tool_call_ids:
                tc = calls.get((m.id, cid))
                name, args = (tc.name, tc.arguments) if tc is not None else ("unknown", "{}")
                out_calls.append({"id": cid, "type": "function",
                                  "function": {"name": name, "arguments": args}})
            d["tool_calls"] = out_calls
        if m.tool_call_id is not None:
            d["tool_call_id"] = m.tool_call_id
        out.append(d)
    return out


def _line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def dump(conversations: Sequence[Conversation]) -> str:
    """JSONL, one conversation a line (see the module docstring)."""
    lines = []
    for c in conversations:
        if same_format(c, NAME):
            messages: list[Any] = list(c.records)
            if c.envelope is None:
                lines.append(_line(messages))
            else:
                lines.append(_line({**c.envelope, "messages": messages}))
            continue
        record: dict[str, Any] = {"id": c.id}
        if c.user_id is not None:
            record["user_id"] = c.user_id
        record["messages"] = normalized_messages(c)
        lines.append(_line(record))
    return "".join(lines)


FORMAT = Format(
    name=NAME,
    description="OpenAI Chat Completions messages (JSON list, {messages: [...]}, or JSONL)",
    detect=detect,
    parse=parse,
    dump=dump,
)
