"""Claude Code session files (``"claude-code"``): ``~/.claude/projects/<project>/<session>.jsonl``.

Anthropic does not document this file; its shape here is what the community wrote down from real
files (docs/decisions.md, "Coding-agent sessions", lists the sources: chrisguillory/
claude-session-mcp CLAUDE.md "Quick Reference: Record Types"; microsoft/amplifier
ai_working/claude_code_logging/; dagster-io/erk docs/agent/claude-code-session-layout.md).

One JSON object a line. Records read:

* ``user`` / ``assistant``: ``uuid``, ``parentUuid`` (the thread), ``isSidechain`` (a sub-agent),
  ``sessionId``, ``version``, and ``message`` (Anthropic Messages: ``role`` and ``content``, a
  string or blocks ``text``, ``image``, ``document``, ``thinking`` / ``redacted_thinking`` (kept,
  not counted, as in :mod:`~convmem.formats.anthropic`), ``tool_use``, ``tool_result`` (its
  content a string or text / image blocks)). An assistant response is often written as several
  records (one per content block) sharing ``message.id``; each record is a message, and the
  response's ``message.usage`` (``input_tokens``, ``cache_creation_input_tokens``,
  ``cache_read_input_tokens``, ``output_tokens``; the last record's counts) is one
  :class:`~convmem.agent_sessions.ReportedUsage` row. Older files put ``usage`` on the record
  itself: read too.
* ``system`` with ``subtype: "compact_boundary"`` and ``compactMetadata: {trigger, preTokens}``:
  where the agent compacted; its ``parentUuid`` is null and ``logicalParentUuid`` names the last
  message before it (the thread is followed through it). The next user record
  (``isCompactSummary: true``; older files: its text starts "This session is being continued")
  holds the summary: an :class:`~convmem.agent_sessions.AgentCompaction`. Other ``system``
  subtypes are not messages (counted in ``AgentSession.ignored``).
* ``summary`` (session titles), ``file-history-snapshot``, ``queue-operation``: not messages,
  counted in ``ignored``. Any other record type is skipped with its line and reason
  (``AgentSession.skipped``); it never fails the session.

Threads: records form a tree through ``parentUuid`` (edits and retries make branches). The
conversation follows the thread that ends at the **last leaf in file order** back to its root;
records on other branches are counted in ``branches_dropped``. Records of a sub-agent
(``isSidechain: true``) form their own conversations (id: the record's ``agentId``, else
``"<session>:sidechain:<k>"``), linked to the parent (``parent_id``, and ``parent_message_id``: the
message whose ``Task`` tool call's ``prompt`` is the sidechain's first user text). A file with
several unconnected roots (sessions concatenated) gives one conversation per root.

Message ids are the record's ``uuid`` (``":k"`` appended when a user record with tool results
splits into several messages). A ``tool_result`` whose ``tool_use`` is not on the thread is kept
as an unlinked tool message (noted in ``skipped``).

Dump (same format): the message records unchanged, in thread order (boundaries and other
non-message records are not written). From another format: one ``user`` / ``assistant`` record
per Anthropic turn (:mod:`~convmem.formats.anthropic`), chained by ``parentUuid``; system text
becomes a ``user`` record with ``isMeta: true``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..agent_sessions import AgentCompaction, AgentSession, ReportedUsage
from ..conversations import Conversation, Skipped
from ..errors import FormatError
from ._base import Builder, Context, Fault, Format, ImageRef, Where, compact_json, kind, short
from ._sessions import SessionLines, as_int, first_line_prefix, read_lines, usage_faults

_CC_USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                  "output_tokens")

__all__ = ["FORMAT", "detect", "dump", "parse"]

NAME = "claude-code"
_IGNORED = ("summary", "file-history-snapshot", "queue-operation")
_DETECT = re.compile(
    r'"(?:parentUuid|isSidechain|leafUuid)"\s*:'
    r'|"type"\s*:\s*"(?:summary|file-history-snapshot|queue-operation)"')
#: The opening of a compaction summary in files that do not mark it (``isCompactSummary``).
SUMMARY_OPENING = "This session is being continued from a previous conversation"
_TASK_TOOLS = ("Task", "Agent")


def detect(first_line: Any) -> bool:
    """The first line is a JSON object with Claude Code's threading keys (``parentUuid``,
    ``isSidechain``) or one of its non-message record types; only its first 4 KiB are read."""
    prefix = first_line_prefix(first_line)
    return bool(prefix) and prefix.lstrip().startswith("{") and bool(_DETECT.search(prefix))


def _parent(rec: dict[str, Any]) -> Any:
    p = rec.get("parentUuid")
    return p if p is not None else rec.get("logicalParentUuid")


class _Thread:
    """Builds one conversation from the records of one thread."""

    def __init__(self, ctx: Context, lines: SessionLines, conv_id: str) -> None:
        self.ctx = ctx
        self.lines = lines
        self.b = Builder(ctx, conv_id, Where(None, None, False))
        self.compactions: list[AgentCompaction] = []
        self.usage: dict[str, list[Any]] = {}  # api id -> [index, message id, usage, line]
        self.skipped: list[Any] = []
        self.ignored: Counter[str] = Counter()
        # (line, trigger, preTokens, message index at the boundary) until its summary is seen
        self.boundary: tuple[int, str | None, int | None, int] | None = None
        self.version: str | None = None
        self.model: str | None = None
        self.session_id: str | None = None

    def note(self, line: int, field: str | None, value: Any, reason: str) -> None:
        self.skipped.append(Skipped(self.b.conv_id, line, field,
                                    None if value is None else short(value), reason))

    # -- one record ------------------------------------------------------------------------

    def record(self, line: int, rec: dict[str, Any]) -> None:
        rtype = rec.get("type")
        if isinstance(rec.get("version"), str):
            self.version = rec["version"]
        if self.session_id is None and isinstance(rec.get("sessionId"), str):
            self.session_id = rec["sessionId"]
        if rtype == "system":
            subtype = rec.get("subtype")
            if subtype == "compact_boundary" or isinstance(rec.get("compactMetadata"), dict):
                meta = rec.get("compactMetadata")
                meta = meta if isinstance(meta, dict) else {}
                trigger = meta.get("trigger")
                pre = meta.get("preTokens")
                self._close_boundary()
                self.boundary = (line, trigger if isinstance(trigger, str) else None,
                                 pre if isinstance(pre, int) and not isinstance(pre, bool)
                                 and pre >= 0 else None, len(self.b.messages))
            else:
                self.ignored[f"system:{subtype}" if isinstance(subtype, str) else "system"] += 1
            return
        if rtype not in ("user", "assistant"):
            if rtype in _IGNORED:
                self.ignored[rtype] += 1
            else:
                self.note(line, "type", rtype, f"unknown record type {short(rtype)}: kept out of "
                          "the messages")
            return
        msg = rec.get("message")
        if not isinstance(msg, dict):
            self.note(line, "message", msg, f"a {rtype} record needs a 'message' object, got "
                      f"{kind(msg)}: left out")
            return
        uuid = rec.get("uuid")
        own = uuid if isinstance(uuid, str) and uuid else f"{self.b.conv_id}:line{line}"
        try:
            if rtype == "user":
                self._user(line, rec, msg, own)
            else:
                self._assistant(line, rec, msg, own)
        except Fault as exc:
            self.note(line, exc.field, exc.value, f"{exc.reason}: record left out")
        self._close_boundary()  # a boundary not followed by its summary: no summary

    def _fail(self, line: int, field: str, value: Any, reason: str) -> Any:
        raise Fault(reason, source=self.ctx.source, line=line, field=field, value=short(value))

    def _user(self, line: int, rec: dict[str, Any], msg: dict[str, Any], own: str) -> None:
        b = self.b
        content = msg.get("content")
        texts: list[str] = []
        own_blocks: list[int] = []
        images: list[Any] = []
        results: list[tuple[int, Any, str, list[Any]]] = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for j, block in enumerate(content):
                btype = block.get("type") if isinstance(block, dict) else None
                if btype == "text" and isinstance(block.get("text"), str):
                    texts.append(block["text"])
                    own_blocks.append(j)
                elif btype in ("image", "document"):
                    if btype == "image":
                        images.append(ImageRef(None, None, "auto"))
                    own_blocks.append(j)
                elif btype == "tool_result":
                    results.append((j, block.get("tool_use_id"),
                                    *self._result(line, j, block.get("content"))))
                else:
                    self.note(line, f"message.content[{j}]", btype if btype else block,
                              f"unknown content block {short(btype if btype else block)}: kept "
                              "in the record, not counted")
        else:
            self._fail(line, "message.content", content, "message.content must be a string or "
                       f"a list of blocks, got {kind(content)}")
        first = len(b.messages)
        n_out = len(results) + (1 if (own_blocks or texts or not results) else 0)
        split = n_out > 1
        for k, (j, use_id, text, rimages) in enumerate(results):
            linked = isinstance(use_id, str) and bool(b.pending.get(use_id))
            if not linked:
                self.note(line, f"message.content[{j}].tool_use_id", use_id,
                          "this tool_result answers no tool_use on this thread: kept unlinked")
            b.add(0, "tool", "user", text, rec, own_id=own, id_suffix=f":{k}" if split else "",
                  answers=use_id if linked else None, images=rimages,
                  part=(j,) if split else None, link=False)
        if n_out > len(results):
            text = "\n".join(texts)
            b.add(0, "user", "user", text, rec, own_id=own,
                  id_suffix=f":{len(results)}" if split else "", images=images,
                  part=tuple(own_blocks) if split else None)
            if self.boundary is not None and (rec.get("isCompactSummary") is True
                                              or text.startswith(SUMMARY_OPENING)):
                self._close_boundary(len(b.messages) - 1, text)
        elif self.boundary is not None and rec.get("isCompactSummary") is True:
            self._close_boundary(first, "")

    def _result(self, line: int, j: int, rc: Any) -> tuple[str, list[Any]]:
        if rc is None:
            return "", []
        if isinstance(rc, str):
            return rc, []
        if not isinstance(rc, list):
            self._fail(line, f"message.content[{j}].content", rc, "tool_result content must be "
                       f"a string or a list of blocks, got {kind(rc)}")
        texts, images = [], []
        for x in rc:
            if isinstance(x, dict) and x.get("type") == "text" and isinstance(x.get("text"), str):
                texts.append(x["text"])
            elif isinstance(x, dict) and x.get("type") == "image":
                images.append(ImageRef(None, None, "auto"))
        return "\n".join(texts), images

    def _assistant(self, line: int, rec: dict[str, Any], msg: dict[str, Any], own: str) -> None:
        b = self.b
        content = msg.get("content")
        texts: list[str] = []
        calls: list[tuple[str | None, str, str]] = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for j, block in enumerate(content):
                btype = block.get("type") if isinstance(block, dict) else None
                if btype == "text" and isinstance(block.get("text"), str):
                    texts.append(block["text"])
                elif btype in ("thinking", "redacted_thinking"):
                    pass  # kept in the record, not counted (as the anthropic format)
                elif btype == "tool_use":
                    cid, name = block.get("id"), block.get("name")
                    if not isinstance(name, str) or not name:
                        self._fail(line, f"message.content[{j}].name", name,
                                   "tool_use needs a non-empty string 'name'")
                    calls.append((cid if isinstance(cid, str) and cid else None, name,
                                  compact_json(block.get("input", {}))))
                else:
                    self.note(line, f"message.content[{j}]", btype if btype else block,
                              f"unknown content block {short(btype if btype else block)}: kept "
                              "in the record, not counted")
        elif content is not None:
            self._fail(line, "message.content", content, "message.content must be a string or "
                       f"a list of blocks, got {kind(content)}")
        index = len(b.messages)
        message = b.add(0, "assistant", "assistant",
                        "\n".join(texts) if texts else (None if calls else ""), rec, own_id=own,
                        calls=calls)
        model = msg.get("model")
        if isinstance(model, str) and model and not model.startswith("<"):
            self.model = model
        usage = msg.get("usage")
        if not isinstance(usage, dict):
            usage = rec.get("usage")
        if isinstance(usage, dict):
            api = msg.get("id") or rec.get("requestId") or own
            key = api if isinstance(api, str) else own
            row = self.usage.get(key)
            if row is None:
                self.usage[key] = [index, message.id, usage, line]
            else:  # a later record of the same response: its counts are the final ones
                row[2], row[3] = usage, line

    def _close_boundary(self, index: int | None = None, summary: str = "") -> None:
        if self.boundary is None:
            return
        line, trigger, pre, at = self.boundary
        self.boundary = None
        if index is None:  # a boundary with no summary after it
            index = at
        messages = self.b.messages
        mid = messages[index].id if index < len(messages) else None
        self.compactions.append(AgentCompaction(index, mid, pre, trigger, summary, line))

    def build(self, parent_id: str | None = None, parent_message_id: str | None = None,
              extra_skipped: Sequence[Any] = (), ignored: Counter[str] | None = None,
              truncated: bool = False, dropped: int = 0) -> Conversation:
        self._close_boundary()
        rows = []
        for index, mid, usage, line in self.usage.values():
            for key, value in usage_faults(usage, _CC_USAGE_KEYS):
                self.note(line, f"message.usage.{key}", value,
                          "usage must be an int of tokens in [0, MAX_TOKENS]: read as 0")
            u = ReportedUsage(index, mid, as_int(usage.get("input_tokens")),
                              as_int(usage.get("cache_creation_input_tokens")),
                              as_int(usage.get("cache_read_input_tokens")),
                              as_int(usage.get("output_tokens")), 0, line)
            if u.prompt_tokens or u.output_tokens:  # synthetic records report all zeros
                rows.append(u)
        all_ignored = Counter(self.ignored)
        if ignored:
            all_ignored.update(ignored)
        session = AgentSession(
            NAME, self.session_id, parent_id, parent_message_id, self.version, self.model,
            tuple(self.compactions), tuple(rows),
            tuple(sorted([*self.skipped, *extra_skipped], key=lambda s: s.line or 0)),
            tuple(sorted(all_ignored.items())), truncated, dropped,
        )
        return self.b.build(None, NAME, envelope=session)


def _threads(records: list[tuple[int, dict[str, Any]]]) -> list[tuple[bool, list[int], int]]:
    """(is sidechain, the thread's record indices root first, records dropped) per thread, in
    order of their roots. O(records)."""
    by_uuid: dict[str, int] = {}
    members: list[int] = []
    for k, (_line, rec) in enumerate(records):
        uuid = rec.get("uuid")
        if isinstance(uuid, str) and uuid and ("parentUuid" in rec or "logicalParentUuid" in rec
                                               or rec.get("type") in ("user", "assistant")):
            by_uuid[uuid] = k
            members.append(k)
    if not members:  # no threading at all (simplified or very old files): file order
        plain = [k for k, (_l, r) in enumerate(records) if r.get("type") != "system"]
        side = [k for k in plain if records[k][1].get("isSidechain") is True]
        main = [k for k in plain if records[k][1].get("isSidechain") is not True]
        return [(False, main, 0)] * bool(main) + [(True, side, 0)] * bool(side)
    has_child: set[int] = set()
    root: dict[int, int] = {}
    for k in members:
        rec = records[k][1]
        side = rec.get("isSidechain") is True
        p = _parent(rec)
        pk = by_uuid.get(p) if isinstance(p, str) else None
        if pk is not None and pk != k:
            has_child.add(pk)
        if (pk is not None and pk < k and pk in root
                and (records[pk][1].get("isSidechain") is True) == side):
            root[k] = root[pk]
        else:
            root[k] = k
    groups: dict[int, list[int]] = {}
    for k in members:
        groups.setdefault(root[k], []).append(k)
    out = []
    for r, group in groups.items():
        leaves = [k for k in group if k not in has_child]
        leaf = leaves[-1] if leaves else group[-1]
        chain: list[int] = []
        seen: set[int] = set()
        cur: int | None = leaf
        while cur is not None and cur not in seen and root.get(cur) == r:
            seen.add(cur)
            chain.append(cur)
            p = _parent(records[cur][1])
            cur = by_uuid.get(p) if isinstance(p, str) else None
        chain.reverse()
        out.append((records[r][1].get("isSidechain") is True, chain, len(group) - len(chain)))
    return out


def _task_prompts(conv: Conversation) -> dict[str, str]:
    """prompt text -> message id of each ``Task`` / ``Agent`` tool call in ``conv``."""
    out: dict[str, str] = {}
    for tc in conv.tool_calls:
        if tc.name in _TASK_TOOLS:
            try:
                args = json.loads(tc.arguments)
            except ValueError:
                continue
            if isinstance(args, dict) and isinstance(args.get("prompt"), str):
                out.setdefault(args["prompt"], tc.message_id)
    return out


def parse(text: str, ctx: Context, where: Where) -> None:
    """Add the session's conversations (main threads, then sidechains) to ``ctx``."""
    lines = read_lines(text)
    records = lines.records
    threads = [t for t in _threads(records)  # a thread of no message is no conversation
               if any(records[k][1].get("type") in ("user", "assistant") for k in t[1])]
    outside = {k for _s, chain, _d in threads for k in chain}
    ignored: Counter[str] = Counter()
    extra = list(lines.skipped)
    for k, (line, rec) in enumerate(records):  # records on no thread (no uuid)
        if k in outside:
            continue
        rtype = rec.get("type")
        if rtype in _IGNORED or rtype == "system":
            ignored[rtype if rtype in _IGNORED else "system"] += 1
        elif rtype not in ("user", "assistant"):
            lines.skip(line, "type", rtype, f"unknown record type {short(rtype)}: kept out of "
                       "the messages")
            extra.append(lines.skipped[-1])
    if not threads:
        ctx.fail("no Claude Code user or assistant records in the file", (None, None))
    mains = [(chain, d) for s, chain, d in threads if not s and chain]
    sides = [(chain, d) for s, chain, d in threads if s and chain]
    built: list[Conversation] = []
    main_ids: list[str] = []
    first_extra = True
    for n, (chain, dropped) in enumerate(mains):
        sid = next((records[k][1]["sessionId"] for k in chain
                    if isinstance(records[k][1].get("sessionId"), str)), None)
        cid = sid if sid and (len(mains) == 1 or sid not in main_ids) else None
        try:
            conv_id = ctx.conv_id(cid or (f"{sid}:{n + 1}" if sid else None),
                                 (records[chain[0]][0], None))
            t = _Thread(ctx, lines, conv_id)
            for k in chain:
                t.record(*records[k])
            conv = t.build(extra_skipped=extra if first_extra else (),
                           ignored=ignored if first_extra else None,
                           truncated=lines.truncated, dropped=dropped)
        except FormatError as exc:
            ctx.skip(exc, cid)
            continue
        first_extra = False
        main_ids.append(conv_id)
        built.append(conv)
        ctx.conversations.append(conv)
    prompts: dict[str, tuple[str, str]] = {}
    for conv in built:
        for prompt, mid in _task_prompts(conv).items():
            prompts.setdefault(prompt, (conv.id, mid))
    for n, (chain, dropped) in enumerate(sides):
        first = records[chain[0]][1]
        sid = first.get("sessionId") if isinstance(first.get("sessionId"), str) else None
        agent = first.get("agentId")
        cid = agent if isinstance(agent, str) and agent else f"{sid or 'session'}:sidechain:{n + 1}"
        try:
            conv_id = ctx.conv_id(cid, (records[chain[0]][0], None))
            t = _Thread(ctx, lines, conv_id)
            for k in chain:
                t.record(*records[k])
            opening = next((m.content for m in t.b.messages if m.role == "user" and m.content),
                           None)
            parent = prompts.get(opening) if opening else None
            parent_id = parent[0] if parent else (main_ids[0] if len(main_ids) == 1 else sid)
            conv = t.build(parent_id, parent[1] if parent else None,
                           extra_skipped=extra if first_extra else (),
                           ignored=ignored if first_extra else None,
                           truncated=lines.truncated, dropped=dropped)
        except FormatError as exc:
            ctx.skip(exc, cid)
            continue
        first_extra = False
        ctx.conversations.append(conv)


def _normalized(c: Conversation) -> list[dict[str, Any]]:
    from .anthropic import _normalized as turns_of

    record = turns_of(c)
    out: list[dict[str, Any]] = []
    parent: str | None = None
    turns = list(record["messages"])
    if "system" in record:
        turns.insert(0, {"role": "user", "content": record["system"], "_meta": True})
    for k, turn in enumerate(turns):
        uuid = f"{c.id}:{k}"
        rec: dict[str, Any] = {"parentUuid": parent, "isSidechain": False, "sessionId": c.id,
                               "type": turn["role"], "uuid": uuid}
        if turn.pop("_meta", False):
            rec["isMeta"] = True
        rec["message"] = turn
        out.append(rec)
        parent = uuid
    return out


def _boundary(mark: AgentCompaction, uuid: Any, prev: Any) -> dict[str, Any]:
    """A ``compact_boundary`` record for a compaction (written back by :func:`dump`)."""
    meta: dict[str, Any] = {"trigger": mark.trigger, "preTokens": mark.pre_tokens}
    return {"parentUuid": None,
            "logicalParentUuid": prev.get("uuid") if isinstance(prev, dict) else None,
            "isSidechain": False, "type": "system", "subtype": "compact_boundary",
            "uuid": uuid if isinstance(uuid, str) else f"boundary:{mark.line}",
            "compactMetadata": {k: v for k, v in meta.items() if v is not None}}


def dump(conversations: Sequence[Conversation]) -> str:
    lines = []
    for c in conversations:
        if c.source_format == NAME and len(c.records) == len(c.messages):
            session = c.envelope if isinstance(c.envelope, AgentSession) else None
            marks = {x.index: x for x in session.compactions} if session else {}
            prev: Any = None
            recs = []
            for i, r in enumerate(c.records):
                if r is prev:
                    continue
                mark = marks.pop(i, None)
                if mark is not None and isinstance(r, dict):  # the boundary before its summary
                    recs.append(_boundary(mark, r.get("parentUuid"), prev))
                recs.append(r)
                prev = r
        else:
            recs = _normalized(c)
        for r in recs:
            lines.append(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


FORMAT = Format(
    name=NAME,
    description="Claude Code session JSONL (~/.claude/projects/*/*.jsonl: user / assistant / "
                "system records threaded by parentUuid)",
    detect=detect,
    parse=parse,
    dump=dump,
    text=True,
)
