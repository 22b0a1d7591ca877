"""A brute-force reference for History, written from the words of SPEC §4 and docs/decisions.md.

It is deliberately slow and plain: a Python list of kept entries in conversation order, flags on each
entry, and every rule recomputed by scanning (the total is re-summed, "the oldest kept unpinned
message" is a scan, the frontier is a plain int). It shares no code with convmem/history.py; the
tests compare the two after every add.

Readings taken where docs/decisions.md leaves room (each is checked by the tests, so a change in the
contract shows up as a disagreement):

* Frontier (rules 5/6): only the message a rule *chooses* (the oldest kept unpinned message in the
  cut; the leading non-user message, or an unpinned system message before it, in start_on_user)
  moves the frontier. Tool results dropped together with their call ("wherever they sit") do not:
  otherwise kept messages between the call and a late result would sit below the frontier and the
  "suffix plus pins" consequence would fail.
* Tool results dropped with their call in rule 6 get reason ``tool_group`` (as in rule 5), the call
  itself ``start_on_user``.
* Rule 6's "an unpinned system message that sits before a message this rule drops" means before one
  of the leading messages the rule drops itself, not before a late tool result that went with its
  call (that would cut a hole in the suffix).
* A call id declared by more than one assistant message names the most recent declaration. A
  result that names an id joins by that id only: when the declaring message is gone, or no message
  declared it, the result is refused on arrival (no positional fallback; History forgets the call
  ids of dropped messages so its memory stays bounded by what is kept). Only a result without a
  ``tool_call_id`` pairs by position.
* Trigger: when rule 1 dropped a moved pin the trigger is ``pin_moved`` (rule 1 says so), even if
  the total is also above the limit.
* ``total_before`` is the total before the add plus the new message's tokens, for every record:
  rule 1's moved pin is counted (it is "before any drop"), and for a tool result refused on arrival
  it is what the total would have been (History's Compaction docstring says both; decisions.md only
  says "total before and after"). total_after of a refusal is the total before the add.
* The summary sits right before the first kept message newer than the *current* frontier (placement
  is recomputed, so a kept summary follows the frontier when a later summary is rejected), or at
  the end when no kept message is newer than the frontier.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from convmem.message import Message

OVER_LIMIT = "over_limit"
TOOL_GROUP = "tool_group"
START_ON_USER = "start_on_user"
TOO_BIG = "too_big"
PIN_MOVED = "pin_moved"

TRIGGER_LIMIT = "limit"
TRIGGER_PIN_MOVED = "pin_moved"
TRIGGER_ARRIVAL = "arrival"

#: A reading docs/decisions.md leaves open (see the module docstring): when rule 1 dropped a moved
#: pin AND the total is above the limit, the trigger is "pin_moved" (rule 1 names it). The switch
#: exists so a probe can flip it; the tests run with the value below.
PIN_MOVED_TRIGGER_WINS = False


@dataclass
class RefEntry:
    seq: int
    msg: Message
    dropped: bool = False
    group: RefEntry | None = None  # for a tool result in a group: the assistant entry
    original: Message | None = None  # set when cleared: msg is then the placeholder


@dataclass(frozen=True)
class RefDropped:
    id: str
    role: str
    tokens: int
    reason: str
    added_step: int
    summarized: bool


@dataclass(frozen=True)
class RefSummary:
    accepted: bool
    id: str
    tokens: int
    budget: int
    replaced_id: str | None
    rejected: bool  # History reports a reason string exactly when rejected or removed
    removed_id: str | None = None


@dataclass(frozen=True)
class RefCompaction:
    step: int
    message_id: str
    trigger: str
    total_before: int
    total_after: int
    dropped: tuple[RefDropped, ...]
    summary: RefSummary | None


@dataclass(frozen=True)
class RefCleared:
    id: str
    role: str
    tokens_before: int
    tokens_after: int
    added_step: int


@dataclass(frozen=True)
class RefClearing:
    step: int
    message_id: str
    trigger: int
    total_before: int
    total_after: int
    cleared: tuple[RefCleared, ...]


@dataclass
class ReferenceHistory:
    limit: int
    pin_system: bool = False
    pin_latest_user: bool = False
    keep_tool_groups: bool = False
    start_on_user: bool = False
    target: int | None = None
    summarizer: object = None
    summary_budget: int | None = None
    entries: list[RefEntry] = field(default_factory=list)  # every message ever added
    kept: list[RefEntry] = field(default_factory=list)  # kept messages, conversation order
    summary: Message | None = None
    frontier: int = -1
    latest_user: RefEntry | None = None
    records: list[RefCompaction] = field(default_factory=list)
    summarizer_calls: list[tuple[str | None, list[str]]] = field(default_factory=list)
    # Clearing (docs/decisions.md "Clearing"): a ClearToolUses-like object, call id -> tool name.
    clear: object = None
    tool_names: dict | None = None
    clearings: list[RefClearing] = field(default_factory=list)
    clear_thinking: object = None  # a ClearThinking-like object (keep)
    thinking: dict | None = None  # message id -> thinking tokens

    # ----------------------------------------------------------------- derived values, re-computed

    @property
    def goal(self) -> int:
        target = self.limit if self.target is None else self.target
        return target - (self.summary_budget or 0)

    def live_total(self) -> int:
        return sum(e.msg.tokens for e in self.kept)

    def total(self) -> int:
        return self.live_total() + (self.summary.tokens if self.summary is not None else 0)

    @property
    def over_limit(self) -> bool:
        return self.total() > self.limit

    def is_pinned(self, e: RefEntry) -> bool:
        if self.pin_system and e.msg.role == "system":
            return True
        return self.pin_latest_user and self.latest_user is e

    def context(self) -> list[Message]:
        out = [e.msg for e in self.kept]
        if self.summary is not None:
            pos = len(self.kept)
            for i, e in enumerate(self.kept):
                if e.seq > self.frontier:
                    pos = i
                    break
            out.insert(pos, self.summary)
        return out

    def messages(self) -> list[str]:
        return [m.id for m in self.context()]

    # ----------------------------------------------------------------- helpers

    def _find_group(self, tool: RefEntry) -> RefEntry | None:
        earlier = self.entries[: tool.seq]
        cid = tool.msg.tool_call_id
        if cid is not None:
            # By id only: the latest declaration (refused when it is dropped or there is none).
            for e in reversed(earlier):
                if e.msg.role == "assistant" and cid in e.msg.tool_call_ids:
                    return e
            return None
        for e in reversed(earlier):
            if e.msg.role == "assistant":
                return e
        return None

    def _drop(self, e: RefEntry, reason: str, dropped: list[tuple[RefEntry, str]]) -> None:
        assert not e.dropped and e in self.kept
        e.dropped = True
        self.kept.remove(e)
        dropped.append((e, reason))

    def _drop_group_results(self, call: RefEntry, dropped: list[tuple[RefEntry, str]]) -> None:
        if not self.keep_tool_groups or call.msg.role != "assistant":
            return
        for k in list(self.kept):
            if k.group is call:
                self._drop(k, TOOL_GROUP, dropped)

    # ----------------------------------------------------------------- add

    def add(self, m: Message) -> list[str]:
        if any(k.msg.id == m.id for k in self.kept) or (self.summary is not None and self.summary.id == m.id):
            raise ValueError(f"duplicate id {m.id!r}")  # ids unique among kept (and the summary)
        total_at_start = self.total()
        e = RefEntry(len(self.entries), m)
        self.entries.append(e)
        dropped: list[tuple[RefEntry, str]] = []
        trigger: str | None = None

        # Rule 1: pins.
        if self.pin_latest_user and m.role == "user":
            old = self.latest_user
            self.latest_user = e
            if old is not None and old.seq < self.frontier:
                self._drop(old, PIN_MOVED, dropped)
                trigger = TRIGGER_PIN_MOVED

        # Rule 2: tool groups.
        if self.keep_tool_groups and m.role == "tool":
            g = self._find_group(e)
            if g is None or g.dropped:
                e.dropped = True
                self.records.append(
                    RefCompaction(
                        e.seq,
                        m.id,
                        TRIGGER_ARRIVAL,
                        total_at_start + m.tokens,
                        total_at_start,
                        (RefDropped(m.id, m.role, m.tokens, TOOL_GROUP, e.seq, False),),
                        None,
                    )
                )
                return [m.id]
            e.group = g

        # Rule 3: append.
        self.kept.append(e)
        total_before = total_at_start + m.tokens

        # Rule 3a: thinking (context editing). When an assistant message with thinking arrives, every
        # kept thinking turn not yet cleared but the newest `keep` loses its thinking tokens
        # (content "" when the message was all thinking). No trigger, no minimum.
        think = self.thinking or {}
        if self.clear_thinking is not None and m.role == "assistant" and min(think.get(m.id, 0), m.tokens) > 0:
            turns = [k for k in self.kept if k.msg.role == "assistant" and k.original is None
                     and min(think.get(k.msg.id, 0), k.msg.tokens) > 0]
            old = turns[: max(0, len(turns) - self.clear_thinking.keep)]
            if old:
                before = self.total()
                for k in old:
                    t = min(think[k.msg.id], k.msg.tokens)
                    k.original = k.msg
                    k.msg = Message(k.msg.id, "assistant", k.msg.tokens - t,
                                    content="" if t == k.msg.tokens else k.msg.content,
                                    tool_call_ids=k.msg.tool_call_ids)
                self.clearings.append(RefClearing(
                    e.seq, m.id, 0, before, self.total(),
                    tuple(RefCleared(k.msg.id, "assistant", k.original.tokens, k.msg.tokens, k.seq) for k in old),
                ))
                total_before -= before - self.total()

        # Rule 3b: clearing (context editing), before any drop. Over the clearing trigger, every kept
        # tool result not yet cleared except the newest `keep` of them (excluded tools' results
        # count among those) and except excluded tools' results is a candidate; all candidates are
        # cleared when that frees more than 0 and at least clear_at_least tokens, else none.
        if self.clear is not None and self.total() > self.clear.trigger:
            c = self.clear
            tools = [k for k in self.kept if k.msg.role == "tool" and k.original is None]
            older = tools[: max(0, len(tools) - c.keep)]
            names = self.tool_names or {}
            cands = [
                k for k in older
                if not (k.msg.tool_call_id is not None and names.get(k.msg.tool_call_id) in c.exclude_tools)
            ]
            gain = sum(k.msg.tokens - c.placeholder_tokens for k in cands)
            if cands and gain > 0 and gain >= c.clear_at_least:
                before = self.total()
                for k in cands:
                    k.original = k.msg
                    k.msg = Message(k.msg.id, "tool", c.placeholder_tokens, content=c.placeholder,
                                    tool_call_id=k.msg.tool_call_id)
                self.clearings.append(RefClearing(
                    e.seq, m.id, c.trigger, before, self.total(),
                    tuple(RefCleared(k.msg.id, "tool", k.original.tokens, k.msg.tokens, k.seq) for k in cands),
                ))
                total_before -= before - self.total()

        # Rule 4: trigger.
        if (trigger is None or not PIN_MOVED_TRIGGER_WINS) and self.total() > self.limit:
            trigger = TRIGGER_LIMIT

        if trigger is not None:
            # Rule 5: cut.
            goal = self.goal
            while self.live_total() > goal:
                unpinned = [k for k in self.kept if not self.is_pinned(k)]
                if not unpinned:
                    break
                o = unpinned[0]
                self._drop(o, TOO_BIG if o.msg.tokens > goal else OVER_LIMIT, dropped)
                self.frontier = max(self.frontier, o.seq)
                self._drop_group_results(o, dropped)

            # Rule 6: start on a user turn.
            if self.start_on_user:
                last_primary = None
                while True:
                    first = next((k for k in self.kept if k.msg.role != "system"), None)
                    if first is None or first.msg.role == "user":
                        break
                    assert not self.is_pinned(first)
                    self._drop(first, START_ON_USER, dropped)
                    self.frontier = max(self.frontier, first.seq)
                    last_primary = first.seq
                    self._drop_group_results(first, dropped)
                if last_primary is not None:
                    for k in list(self.kept):
                        if (
                            k.msg.role == "system"
                            and not self.is_pinned(k)
                            and k.seq < last_primary
                        ):
                            self._drop(k, START_ON_USER, dropped)

        dropped.sort(key=lambda d: d[0].seq)

        # Rule 7: summary. A new one is accepted when it fits its budget and, beside the pinned
        # messages, the limit; then a summary in place that alone pushes the total over the
        # limit (pinned messages leave no room for it) is removed.
        event = None
        summarized = False
        if self.summarizer is not None and trigger is not None:
            budget = self.summary_budget or 0
            if dropped:
                prev = self.summary
                msgs = [d[0].msg for d in dropped]
                self.summarizer_calls.append((prev.id if prev else None, [x.id for x in msgs]))
                new = self.summarizer(prev, msgs)
                blank = new.content is not None and new.content.strip() == ""
                clash = any(k.msg.id == new.id for k in self.kept)
                if blank or clash or new.tokens > budget or self.live_total() + new.tokens > self.limit:
                    event = RefSummary(False, new.id, new.tokens, budget, None, True)
                else:
                    event = RefSummary(True, new.id, new.tokens, budget, prev.id if prev else None, False)
                    self.summary = new
                    summarized = True
            if self.summary is not None and self.total() > self.limit:
                removed = self.summary
                self.summary = None
                if event is None:
                    event = RefSummary(False, removed.id, removed.tokens, budget, None, True, removed.id)
                else:
                    event = RefSummary(event.accepted, event.id, event.tokens, event.budget,
                                       event.replaced_id, True, removed.id)
        if not dropped and event is None:
            return []

        # Rule 8: record.
        self.records.append(
            RefCompaction(
                e.seq,
                m.id,
                trigger,  # type: ignore[arg-type]
                total_before,
                self.total(),
                tuple(
                    RefDropped(d.msg.id, d.msg.role, d.msg.tokens, r, d.seq, summarized)
                    for d, r in dropped
                ),
                event,
            )
        )
        return [d.msg.id for d, _ in dropped]


def clearing_of(c) -> RefClearing:
    """A convmem Clearing as a RefClearing."""
    return RefClearing(
        c.step, c.message_id, c.trigger, c.total_before, c.total_after,
        tuple(RefCleared(x.id, x.role, x.tokens_before, x.tokens_after, x.added_step) for x in c.cleared),
    )


def record_of(c) -> RefCompaction:
    """A convmem Compaction as a RefCompaction, for equality with the reference's records."""
    s = c.summary
    summary = None
    if s is not None:
        summary = RefSummary(
            s.accepted, s.id, s.tokens, s.budget, s.replaced_id, s.reason is not None, s.removed_id
        )
    return RefCompaction(
        c.step,
        c.message_id,
        c.trigger,
        c.total_before,
        c.total_after,
        tuple(
            RefDropped(d.id, d.role, d.tokens, d.reason, d.added_step, d.summarized) for d in c.dropped
        ),
        summary,
    )


# --------------------------------------------------------------------------------------------
# Shared checks for the tests: invariants read off History's public surface, and a lockstep run.

FRONTIER_REASONS = (OVER_LIMIT, TOO_BIG, START_ON_USER)


def group_of(added: list[Message], i: int) -> int | None:
    """The position of the assistant message whose group the tool message ``added[i]`` joins per
    rule 2 (its declared id, latest declaration first; else the most recent assistant), or None."""
    m = added[i]
    if m.tool_call_id is not None:
        for j in range(i - 1, -1, -1):
            if added[j].role == "assistant" and m.tool_call_id in added[j].tool_call_ids:
                return j
        return None
    for j in range(i - 1, -1, -1):
        if added[j].role == "assistant":
            return j
    return None


def static_groups(added: list[Message]) -> dict[int, int | None]:
    """group_of for every tool message of ``added``."""
    return {i: group_of(added, i) for i, m in enumerate(added) if m.role == "tool"}


def check_invariants(
    h,
    added: list[Message],
    *,
    pin_system: bool = False,
    pin_latest_user: bool = False,
    keep_tool_groups: bool = False,
    groups: dict[int, int | None] | None = None,
    records: list | None = None,
) -> None:
    """Invariants of SPEC §4 / docs/decisions.md, checked on History directly (no reference).

    ``records`` is every Compaction so far (from on_compaction); default ``h.compactions``, which
    holds only the latest ones when History caps its records."""
    ctx = h.context()
    summ = h.summary
    assert [m.id for m in ctx] == h.messages()
    assert h.total() == sum(m.tokens for m in ctx), "total() is not the sum of context() tokens"
    assert h.over_limit == (h.total() > h.limit)
    live = [m for m in ctx if m is not summ]
    assert len(live) == len(ctx) - (summ is not None), "the summary is not in context() exactly once"
    pos = {m.id: i for i, m in enumerate(added)}
    seqs = [pos[m.id] for m in live]
    for s, m in zip(seqs, live):
        if h.is_cleared(m.id) and m.role == "assistant":
            # Its thinking cleared: fewer tokens, the calls stay, the original stays reachable.
            o = h.original(m.id)
            assert o is added[s] or o == added[s]
            assert m.tool_call_ids == o.tool_call_ids and m.tokens < o.tokens
        elif h.is_cleared(m.id):
            # A cleared tool result: its placeholder is sent, the original stays reachable.
            c = h.clear
            assert (m.role, m.tokens, m.content) == ("tool", c.placeholder_tokens, c.placeholder), m
            assert m.tool_call_id == added[s].tool_call_id
            assert h.original(m.id) is added[s] or h.original(m.id) == added[s]
        else:
            assert added[s] is m or added[s] == m
            assert h.original(m.id) == m
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), f"kept order {seqs} not conversation order"
    kept = set(seqs)

    latest_user = max((i for i, m in enumerate(added) if m.role == "user"), default=None)

    def pinned(i: int) -> bool:
        return (pin_system and added[i].role == "system") or (pin_latest_user and i == latest_user)

    if pin_system:
        for i, m in enumerate(added):
            if m.role == "system":
                assert i in kept, f"pinned system message {m.id} is not kept"
    if pin_latest_user and latest_user is not None:
        assert latest_user in kept, f"pinned latest user {added[latest_user].id} is not kept"
    if keep_tool_groups:
        if groups is None:
            groups = static_groups(added)
        for i in kept:
            if added[i].role == "tool":
                g = groups[i]
                assert g is not None and g in kept, f"tool result {added[i].id} kept without its call"
    if h.total() > h.limit:
        assert h.over_limit
        assert all(pinned(i) for i in kept), "over the limit with unpinned messages kept"
        assert summ is None, "over the limit with a summary in place"
        assert sum(added[i].tokens for i in kept) > h.limit, "over the limit though the pins fit"
    else:
        assert not h.over_limit

    # Suffix plus pins: the frontier is the newest message dropped from the oldest end.
    frontier = -1
    tool_group_dropped: set[int] = set()
    for c in h.compactions if records is None else records:
        for d in c.dropped:
            if d.reason in FRONTIER_REASONS:
                frontier = max(frontier, d.added_step)
            if d.reason == TOOL_GROUP:
                tool_group_dropped.add(d.added_step)
    for i in range(frontier + 1, len(added)):
        assert i in kept or i in tool_group_dropped, (
            f"{added[i].id} is newer than the last oldest-end drop but neither kept nor dropped with "
            "its call: kept is not a suffix"
        )
    for i in kept:
        if i < frontier:
            assert pinned(i), f"unpinned {added[i].id} kept although older than a dropped message"


class FakeSummarizer:
    """Deterministic: the k-th call returns ``Message(f"sum{k}", role, sizes[k % len(sizes)])``.

    ``kinds`` (cycled like ``sizes``) makes some summaries hostile: ``"blank"`` gives whitespace-only
    content, ``"clash"`` takes the id of the message being added (``current``, set by the caller),
    which is kept unless that add dropped it. Both must be rejected like an oversize summary.
    """

    def __init__(self, sizes: list[int], role: str = "system", kinds: list[str] | None = None) -> None:
        self.sizes = list(sizes) or [0]
        self.role = role
        self.kinds = list(kinds or ["ok"])
        self.current: Message | None = None
        self.calls: list[tuple[str | None, list[str]]] = []

    def __call__(self, prev: Message | None, dropped: list[Message]) -> Message:
        assert dropped, "summarizer called with nothing"
        k = len(self.calls)
        self.calls.append((prev.id if prev is not None else None, [m.id for m in dropped]))
        kind = self.kinds[k % len(self.kinds)]
        tokens = self.sizes[k % len(self.sizes)]
        if kind == "blank":
            return Message(f"sum{k}", self.role, tokens, content=" \n\t ")
        if kind == "clash" and self.current is not None:
            return Message(self.current.id, self.role, tokens, content="a summary")
        return Message(f"sum{k}", self.role, tokens)


POLICY_FLAGS = ("pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user")


def run_lockstep(
    messages,
    *,
    compare: bool = True,
    invariants: bool = True,
    summary_sizes: list[int] | None = None,
    summary_role: str = "system",
    summary_kinds: list[str] | None = None,
    **policy,
) -> tuple[object, ReferenceHistory | None]:
    """Add ``messages`` one by one to a History (and the reference when ``compare``), checking after
    every add: the returned ids, messages(), total(), over_limit, the new compaction records (dropped
    ids, reasons, summary outcome), the summarizer's arguments, and the invariants."""
    from convmem.history import History

    seen = []
    kw = dict(policy)
    ref_kw = {k: v for k, v in policy.items() if k != "records"}
    h_sum = r_sum = None
    if summary_sizes is not None:
        h_sum = FakeSummarizer(summary_sizes, summary_role, summary_kinds)
        r_sum = FakeSummarizer(summary_sizes, summary_role, summary_kinds)
        kw["summarizer"] = h_sum
        ref_kw["summarizer"] = r_sum
    clearings: list = []
    h = History(**kw, on_compaction=seen.append, on_clearing=clearings.append)
    ref = ReferenceHistory(**ref_kw) if compare else None
    added: list[Message] = []
    flags = {k: policy.get(k, False) for k in POLICY_FLAGS if k != "start_on_user"}
    groups: dict[int, int | None] = {}
    n_records = 0
    for m in messages:
        if h_sum is not None:
            h_sum.current = r_sum.current = m
        try:
            got = h.add(m)
        except ValueError as error:
            # A message whose id is kept (or is the summary's): refused, nothing changes.
            assert "already" in str(error) and repr(m.id) in str(error)
            assert len(seen) == n_records
            if compare:
                before = (ref.messages(), ref.total(), len(ref.records))
                try:
                    ref.add(m)
                except ValueError:
                    pass
                else:
                    raise AssertionError(f"History refused {m!r}, the reference took it") from None
                assert (h.messages(), h.total()) == before[:2] and len(ref.records) == before[2]
            continue
        added.append(m)
        if m.role == "tool" and policy.get("keep_tool_groups"):
            groups[len(added) - 1] = group_of(added, len(added) - 1)
        where = f"after add #{len(added) - 1} ({m!r}), conversation so far {[x.id for x in added]}"
        assert isinstance(got, list)
        # on_compaction sees every record; History.compactions keeps the latest `records` of them.
        new_record = len(seen) == n_records + 1
        if got:
            assert new_record, where
            assert seen[-1].dropped_ids == got, where
        elif new_record:  # a summary removed with nothing dropped (rule 7)
            assert seen[-1].dropped == () and seen[-1].summary is not None, where
            assert seen[-1].summary.removed_id is not None, where
        else:
            assert len(seen) == n_records, where
        if new_record:
            assert seen[-1].step == len(added) - 1 and seen[-1].message_id == m.id, where
        n_records = len(seen)
        recs = seen
        if compare:
            want = ref.add(m)  # raises ValueError when History took a message it refuses
            assert got == want, f"dropped ids differ {where}"
            assert h.messages() == ref.messages(), f"messages() differ {where}"
            assert h.total() == ref.total(), f"total() differs {where}"
            assert h.over_limit == ref.over_limit, f"over_limit differs {where}"
            assert len(recs) == len(ref.records), f"record count differs {where}"
            assert [clearing_of(c) for c in clearings] == ref.clearings, f"clearings differ {where}"
            assert [m.tokens for m in h.context()] == [m.tokens for m in ref.context()], where
            if new_record:
                assert record_of(recs[-1]) == ref.records[-1], f"compaction record differs {where}"
            if h_sum is not None:
                assert h_sum.calls == r_sum.calls, f"summarizer calls differ {where}"
                assert (h.summary.id if h.summary else None) == (
                    ref.summary.id if ref.summary else None
                ), f"summary in place differs {where}"
        if invariants:
            check_invariants(h, added, groups=groups, records=seen, **flags)
    cap = policy.get("records", 1024)
    kept_records = seen if cap is None else seen[len(seen) - cap :] if cap else []
    assert [record_of(c) for c in h.compactions] == [record_of(c) for c in kept_records]
    kept_clearings = clearings if cap is None else clearings[len(clearings) - cap :] if cap else []
    assert h.clearings == kept_clearings
    return h, ref
