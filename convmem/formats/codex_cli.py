"""Codex CLI rollouts (``"codex-cli"``): ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``.

OpenAI does not document this file as a format; its shape is the ``RolloutItem`` enum of
openai/codex (codex-rs/protocol/src/protocol.rs: ``#[serde(tag = "type", content = "payload")]``
over ``SessionMeta``, ``ResponseItem``, ``Compacted``, ``TurnContext``, ``EventMsg``) as the
community wrote it down (ryoppippi/ccusage apps/codex/CLAUDE.md for ``token_count``;
littlebearapps/token-audit docs/codex-cli-setup.md). Sources: docs/decisions.md, "Coding-agent
sessions".

One JSON object a line, ``{"timestamp", "type", "payload"}``:

* ``session_meta``: ``id`` (the conversation id), ``cli_version``, ``cwd``: not a message.
* ``response_item``: a Responses API item, one message each: ``message`` (roles system,
  developer, user, assistant; text parts as :mod:`~convmem.formats.openai_responses`),
  ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` (an assistant message with one
  call, id ``call_id``), ``function_call_output`` / ``custom_tool_call_output`` (a tool message
  answering the call with its ``call_id``; an output object's ``content`` is the text),
  ``reasoning`` (an assistant message whose content is the summary text). ``ghost_snapshot``,
  ``web_search_call`` and encrypted ``compaction`` items are not messages (``ignored``); any other
  item type is skipped with its line and reason.
* ``event_msg`` with ``payload.type == "token_count"``: the usage of the last model call,
  ``info.last_token_usage`` (else the difference of ``info.total_token_usage`` from the previous
  event; events repeating the previous total are duplicates and ``info: null`` has none):
  ``input_tokens`` (cached included, as OpenAI counts), ``cached_input_tokens``,
  ``output_tokens``, ``reasoning_output_tokens``. Other ``event_msg`` types repeat the items for
  the terminal UI: counted in ``ignored``.
* ``turn_context``: the turn's ``model``: not a message.
* ``compacted``: the agent compacted; ``message`` is the summary. It becomes a ``user`` message
  (what Codex puts in the new history) and an :class:`~convmem.agent_sessions.AgentCompaction`
  whose ``pre_tokens`` is the last reported prompt plus output (Codex records no count) and whose
  trigger is the payload's ``trigger`` when present, else None.

Older rollouts (before the ``payload`` wrapper): the first line is the session meta itself
(``{"id", "timestamp", "instructions", "git"?}``), items are written bare, ``{"record_type":
"state"}`` lines are ignored, and ``token_count`` carries the usage fields flat in the payload.

Message ids: ``"<session id>:<line>"``. Dump (same format): the records unchanged, one a line;
from another format: a ``session_meta`` line and one ``response_item`` per Responses item.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..agent_sessions import AgentCompaction, AgentSession, ReportedUsage
from ..conversations import Conversation, Skipped
from ._base import ROLE_MAP, Builder, Context, Fault, Format, Where, compact_json, kind, short
from ._sessions import as_int, first_line_prefix, read_lines, usage_faults

__all__ = ["FORMAT", "detect", "dump", "parse"]

NAME = "codex-cli"
_DETECT = re.compile(
    r'"type"\s*:\s*"(?:session_meta|response_item|turn_context|event_msg|compacted)"'
    r'\s*,\s*"payload"'
    r'|^\s*\{\s*"id"\s*:\s*"[^"]*"\s*,\s*"timestamp"\s*:')
_ITEMS = ("message", "function_call", "function_call_output", "reasoning", "custom_tool_call",
          "custom_tool_call_output", "local_shell_call")
_NOT_MESSAGES = ("ghost_snapshot", "web_search_call", "compaction", "compaction_summary")
_ROLES = ("system", "developer", "user", "assistant")
_USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")


def detect(first_line: Any) -> bool:
    """The first line is a rollout line (``{"timestamp", "type", "payload"}`` with a rollout
    type) or an older rollout's session meta (``{"id", "timestamp", ...}``); 4 KiB read."""
    prefix = first_line_prefix(first_line)
    if not prefix or not prefix.lstrip().startswith("{"):
        return False
    m = _DETECT.search(prefix)
    if m is None:
        return False
    return not m.group().lstrip().startswith("{") or '"instructions"' in prefix


class _Rollout:
    def __init__(self, ctx: Context, conv_id: str) -> None:
        self.ctx = ctx
        self.b = Builder(ctx, conv_id, Where(None, None, False))
        self.skipped: list[Skipped] = []
        self.ignored: Counter[str] = Counter()
        self.compactions: list[AgentCompaction] = []
        self.usage: list[ReportedUsage] = []
        self.out_start: int | None = None  # first output message of the current model call
        self.total: tuple[int, ...] | None = None
        self.model: str | None = None

    def note(self, line: int, field: str | None, value: Any, reason: str) -> None:
        self.skipped.append(Skipped(self.b.conv_id, line, field,
                                    None if value is None else short(value), reason))

    def record(self, line: int, rec: dict[str, Any]) -> None:
        rtype = rec.get("type")
        payload = rec.get("payload")
        if "payload" not in rec:  # an older rollout: bare items and state lines
            if rec.get("record_type") == "state":
                self.ignored["state"] += 1
            elif rtype in _ITEMS or rtype in _NOT_MESSAGES:
                self.item(line, rec, "")
            elif rtype is None and "id" in rec and "timestamp" in rec:
                self.ignored["session_meta"] += 1
            else:
                self.note(line, "type", rtype, f"unknown record type {short(rtype)}: kept out of "
                          "the messages")
            return
        if not isinstance(payload, dict):
            self.note(line, "payload", payload, f"payload must be an object, got {kind(payload)}"
                      ": left out")
            return
        if rtype == "response_item":
            self.item(line, payload, "payload.")
        elif rtype == "event_msg":
            etype = payload.get("type")
            if etype == "token_count":
                self.token_count(line, payload)
            else:
                self.ignored[f"event_msg:{etype}"] += 1
        elif rtype == "turn_context":
            if isinstance(payload.get("model"), str):
                self.model = payload["model"]
            self.ignored["turn_context"] += 1
        elif rtype == "session_meta":
            self.ignored["session_meta"] += 1
        elif rtype == "compacted":
            self.compacted(line, rec, payload)
        else:
            self.note(line, "type", rtype, f"unknown record type {short(rtype)}: kept out of the "
                      "messages")

    # -- items -----------------------------------------------------------------------------

    def _add(self, line: int, role: str, provider_role: str, content: str | None, rec: Any,
             **kw: Any) -> None:
        b = self.b
        index = len(b.messages)
        b.add(0, role, provider_role, content, rec, own_id=f"{b.conv_id}:{line}", **kw)
        if role == "assistant":
            if self.out_start is None:
                self.out_start = index
        # a message that is not output ends the call's output (the next call's prompt holds it)

    def item(self, line: int, item: dict[str, Any], at: str) -> None:
        from .openai_responses import _content

        itype = item.get("type", "message" if "role" in item else None)
        try:
            if itype == "message":
                role = item.get("role")
                if role not in _ROLES or not isinstance(role, str):
                    raise Fault(f"unknown role {short(role)} (expected one of "
                                f"{', '.join(_ROLES)})", source=self.ctx.source, line=line,
                                field=f"{at}role", value=short(role))
                text, images = _content(self.ctx, item.get("content", ""),
                                        Where(line, None, False), 0)
                if role != "assistant":
                    self.out_start = None
                self._add(line, ROLE_MAP[role], role, text, item, images=images)
            elif itype in ("function_call", "custom_tool_call", "local_shell_call"):
                call_id = item.get("call_id") or item.get("id")
                if itype == "local_shell_call":
                    name, args = "local_shell", compact_json(item.get("action", {}))
                else:
                    name = item.get("name")
                    args = item.get("arguments" if itype == "function_call" else "input", "")
                    if not isinstance(args, str):
                        args = compact_json(args)
                if not isinstance(name, str) or not name:
                    raise Fault(f"a {itype} item needs a non-empty string 'name'",
                                source=self.ctx.source, line=line, field=f"{at}name",
                                value=short(name))
                self._add(line, "assistant", "assistant", None, item,
                          calls=[(call_id if isinstance(call_id, str) and call_id else None,
                                  name, args)])
            elif itype in ("function_call_output", "custom_tool_call_output",
                           "local_shell_call_output"):
                call_id = item.get("call_id")
                output = item.get("output")
                images: list[Any] = []
                if isinstance(output, dict):
                    output = output.get("content", "")
                if isinstance(output, list):
                    output, images = _content(self.ctx, output, Where(line, None, False), 0)
                elif not isinstance(output, str):
                    output = "" if output is None else compact_json(output)
                linked = isinstance(call_id, str) and bool(self.b.pending.get(call_id))
                if not linked:
                    self.note(line, f"{at}call_id", call_id, "this output answers no earlier "
                              "call: kept unlinked")
                self.out_start = None
                self._add(line, "tool", "tool", output, item,
                          answers=call_id if linked else None, link=False, images=images)
            elif itype == "reasoning":
                summary = item.get("summary")
                texts = [s.get("text") for s in summary if isinstance(s, dict)
                         and isinstance(s.get("text"), str)] if isinstance(summary, list) else []
                self._add(line, "assistant", "assistant", "\n".join(texts), item)
            elif itype in _NOT_MESSAGES:
                self.ignored[f"response_item:{itype}"] += 1
            else:
                self.note(line, f"{at}type", itype, f"unknown item type {short(itype)}: kept out "
                          "of the messages")
        except Fault as exc:
            self.note(line, exc.field, getattr(exc, "value", None), f"{exc.reason}: record left "
                      "out")

    # -- usage and compactions -------------------------------------------------------------

    def token_count(self, line: int, payload: dict[str, Any]) -> None:
        info = payload.get("info")
        usage: Any = None
        if isinstance(info, dict):
            total = info.get("total_token_usage")
            key = (tuple(as_int(total.get(k)) for k in _USAGE_KEYS)
                   if isinstance(total, dict) else None)
            if key is not None and key == self.total:
                self.ignored["event_msg:token_count (repeated)"] += 1
                return
            last = info.get("last_token_usage")
            if isinstance(last, dict):
                usage = last
            elif key is not None:
                prev = self.total or (0,) * len(_USAGE_KEYS)
                usage = dict(zip(_USAGE_KEYS, (max(a - b, 0) for a, b in zip(key, prev))))
            if key is not None:
                self.total = key
        elif any(k in payload for k in _USAGE_KEYS):  # older rollouts: the fields flat
            usage = payload
        if not isinstance(usage, dict):
            self.ignored["event_msg:token_count (no info)"] += 1
            return
        for key, value in usage_faults(usage, ("input_tokens", "cached_input_tokens",
                                               "output_tokens", "reasoning_output_tokens")):
            self.note(line, f"payload.info.last_token_usage.{key}", value,
                      "usage must be an int of tokens in [0, MAX_TOKENS]: read as 0")
        inp, cached = as_int(usage.get("input_tokens")), as_int(usage.get("cached_input_tokens"))
        cached = min(cached, inp)
        messages = self.b.messages
        index = self.out_start if self.out_start is not None else len(messages)
        mid = messages[index].id if index < len(messages) else ""
        self.usage.append(ReportedUsage(index, mid, inp - cached, 0, cached,
                                        as_int(usage.get("output_tokens")),
                                        as_int(usage.get("reasoning_output_tokens")), line))
        self.out_start = None

    def compacted(self, line: int, rec: dict[str, Any], payload: dict[str, Any]) -> None:
        summary = payload.get("message")
        summary = summary if isinstance(summary, str) else ""
        trigger = payload.get("trigger")
        last = self.usage[-1] if self.usage else None
        pre = last.prompt_tokens + last.output_tokens if last else None
        index = len(self.b.messages)
        self.out_start = None
        try:
            self._add(line, "user", "user", summary, rec)
        except Fault as exc:
            self.note(line, "payload.message", None, f"{exc.reason}: summary left out")
        mid = self.b.messages[index].id if index < len(self.b.messages) else None
        self.compactions.append(AgentCompaction(index, mid, pre,
                                                trigger if isinstance(trigger, str) else None,
                                                summary, line))


def parse(text: str, ctx: Context, where: Where) -> None:
    """Add the rollout's conversation to ``ctx``."""
    lines = read_lines(text)
    meta: dict[str, Any] = {}
    for _line, rec in lines.records[:8]:
        if rec.get("type") == "session_meta" and isinstance(rec.get("payload"), dict):
            meta = rec["payload"]
            break
        if "payload" not in rec and "type" not in rec and "id" in rec and "timestamp" in rec:
            meta = rec
            break
    sid = meta.get("id") if isinstance(meta.get("id"), str) and meta.get("id") else None
    version = meta.get("cli_version")
    try:
        conv_id = ctx.conv_id(sid, (None, None))
        r = _Rollout(ctx, conv_id)
        for line, rec in lines.records:
            r.record(line, rec)
        if not r.b.messages:
            ctx.fail("no Codex CLI messages (response items) in the file", (None, None))
        skipped = tuple(sorted([*lines.skipped, *r.skipped], key=lambda s: s.line or 0))
        session = AgentSession(NAME, sid, None, None, version if isinstance(version, str)
                               else None, r.model, tuple(r.compactions), tuple(r.usage), skipped,
                               tuple(sorted(r.ignored.items())), lines.truncated, 0)
        ctx.conversations.append(r.b.build(None, NAME, envelope=session))
    except Fault as exc:
        ctx.skip(exc, sid)


def _normalized(c: Conversation) -> list[dict[str, Any]]:
    from .openai_responses import _normalized as items_of

    out: list[dict[str, Any]] = [{"timestamp": "", "type": "session_meta",
                                  "payload": {"id": c.id}}]
    out.extend({"timestamp": "", "type": "response_item", "payload": item}
               for item in items_of(c))
    return out


def dump(conversations: Sequence[Conversation]) -> str:
    lines = []
    for c in conversations:
        if c.source_format == NAME and len(c.records) == len(c.messages):
            recs: list[Any] = [{"timestamp": "", "type": "session_meta", "payload": {"id": c.id}}]
            recs.extend(r if "payload" in r else
                        {"timestamp": "", "type": "response_item", "payload": r}
                        for r in c.records)
        else:
            recs = _normalized(c)
        for r in recs:
            lines.append(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


FORMAT = Format(
    name=NAME,
    description="Codex CLI rollout JSONL (~/.codex/sessions/**/rollout-*.jsonl: session_meta, "
                "response_item, event_msg token_count, compacted)",
    detect=detect,
    parse=parse,
    dump=dump,
    text=True,
)
