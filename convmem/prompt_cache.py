"""What a policy costs: input tokens sent per request and how many a provider's prompt cache serves.

One request is sent after every add of a replay (step ``s`` sends the context right after add
``s``: ``replay.totals[s]`` tokens). A provider's prompt cache serves the longest *prefix* of that
context which is unchanged since the previous request: the same messages, compared by id **and**
content (a summary that changed, or a message edited in place, breaks the prefix there), in the
same order. It serves it only when that prefix reaches the provider's minimum cacheable length, and
in the provider's granularity (OpenAI: 128-token increments). Everything after the served prefix is
written to the cache (when the request reaches the minimum) or sent uncached; a provider that
charges cache writes (Anthropic) bills them at its write price, one that does not (OpenAI) at the
plain input price.

>>> from convmem import Message, HistorySettings, replay
>>> msgs = [Message(f"m{i}", "user", 600) for i in range(6)]
>>> r = replay(msgs, HistorySettings(limit=2_400, target=1_200))
>>> r.totals
(600, 1200, 1800, 2400, 1200, 1800)
>>> unchanged_prefix_tokens(r)    # step 4 dropped m0..m2: nothing of step 3's prompt is reused
(0, 600, 1200, 1800, 0, 1200)
>>> p = CachePricing("demo", input_per_mtok=2.0, cached_per_mtok=0.2, write_per_mtok=2.5,
...                  min_cacheable=1024)
>>> c = prompt_cache(r, p)
>>> c.cached, c.written
((0, 0, 1200, 1800, 0, 1200), (0, 1200, 600, 600, 1200, 600))
>>> c.totals.sent, c.totals.cached, c.totals.written, c.totals.uncached
(9000, 4200, 4200, 600)
>>> round(c.totals.cost, 6)  # USD: 600 * 2 + 4200 * 0.2 + 4200 * 2.5 per 10^6 tokens
0.01254

The prefix is derived from the compaction records in O(n) over the replay (never by rebuilding
contexts): see :func:`unchanged_prefix_tokens`. :func:`prefix_tokens_of_contexts` computes the same
from explicit contexts (any policy, e.g. in-place clearing) in O(total context).

Provider defaults (:data:`PROVIDERS`, every number overridable) were read on 2026-11-30 from the
providers' own pages, as stored by the search index:

* Anthropic, Claude Sonnet 5.5: https://platform.claude.com/docs/en/models/sonnet-5-5/overview
  (input $2 / MTok, 5-minute cache write $2.50 / MTok = 1.25x, cache read $0.20 / MTok = 0.1x) and
  https://platform.claude.com/docs/en/docs/build-with-claude/prompt-caching (minimum cacheable
  prompt 1,024 tokens for the Sonnet models; caching at content-block boundaries, so granularity 1).
* OpenAI, GPT-5.4: https://developers.openai.com/api/docs/pricing (input $2.50 / MTok, cached input
  $0.25 / MTok; no cache-write fee) and https://developers.openai.com/api/docs/guides/prompt-caching
  (automatic for prompts of 1,024 tokens or more, cache hits in 128-token increments).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from .history import OVER_LIMIT, START_ON_USER, TOO_BIG
from .message import Message
from .replay import CompactionLog, HistorySettings, Replay, ReplayStats, SummaryLog, _check_messages, replay

__all__ = [
    "CachePricing",
    "CacheTotals",
    "PromptCache",
    "CostSweepRow",
    "PROVIDERS",
    "ANTHROPIC_SONNET",
    "OPENAI_GPT",
    "unchanged_prefix_tokens",
    "prefix_tokens_of_contexts",
    "common_prefix_tokens",
    "cache_accounting",
    "prompt_cache",
    "sweep_limit_costs",
    "ClearingSweepRow",
    "sweep_clearing_costs",
]

#: Drop reasons of messages popped from the oldest end of the run (they move History's frontier,
#: after which the summary sits); tool results dropped with their call and pin moves do not.
_UNIT_REASONS = frozenset((OVER_LIMIT, TOO_BIG, START_ON_USER))


@dataclass(frozen=True, slots=True)
class CachePricing:
    """A provider's prompt-cache rules and prices (prices in USD per million tokens).

    Attributes:
        provider: a display name.
        input_per_mtok: uncached input tokens.
        cached_per_mtok: input tokens served from the cache (a cache read / hit).
        write_per_mtok: input tokens written to the cache; equal to ``input_per_mtok`` for a
            provider that does not charge writes (OpenAI).
        min_cacheable: the shortest prefix (tokens) a provider caches; shorter prefixes are not
            served and a prompt shorter than it is not written.
        increment: cache hits are whole multiples of this many tokens (OpenAI 128; 1 = any length).
        source: where the numbers come from (a URL and the date read).

    Raises ValueError naming the field when a price is negative or not finite, ``min_cacheable``
    is negative or ``increment`` is below 1; TypeError when a count is not an int or ``provider`` /
    ``source`` is not a str.
    """

    provider: str
    input_per_mtok: float
    cached_per_mtok: float
    write_per_mtok: float
    min_cacheable: int
    increment: int = 1
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("provider", "source"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"CachePricing.{name} must be a str, got {value!r:.200}")
        for name in ("input_per_mtok", "cached_per_mtok", "write_per_mtok"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"CachePricing.{name} must be a number (USD per million tokens), got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"CachePricing.{name} must be a finite price >= 0 USD per million tokens, got {value!r}")
        for name, low in (("min_cacheable", 0), ("increment", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"CachePricing.{name} must be an int (tokens), got {value!r}")
            if value < low:
                raise ValueError(f"CachePricing.{name} must be at least {low} tokens, got {value}")

    def served(self, prefix: int) -> int:
        """Tokens of an unchanged ``prefix`` (tokens) the cache serves: 0 below ``min_cacheable``,
        else rounded down to a multiple of ``increment``.

        >>> OPENAI_GPT.served(1_000), OPENAI_GPT.served(1_300), ANTHROPIC_SONNET.served(1_300)
        (0, 1280, 1300)
        """
        if prefix < self.min_cacheable or prefix <= 0:
            return 0
        return prefix - prefix % self.increment


#: Claude Sonnet 5.5, 5-minute cache (see the module docstring for the pages and date).
ANTHROPIC_SONNET = CachePricing(
    provider="Anthropic (Claude Sonnet 5.5)",
    input_per_mtok=2.0,
    cached_per_mtok=0.2,
    write_per_mtok=2.5,
    min_cacheable=1024,
    increment=1,
    source="platform.claude.com/docs/en/models/sonnet-5-5/overview and "
    "/docs/build-with-claude/prompt-caching, read 2026-11-30",
)
#: GPT-5.4, automatic caching (see the module docstring for the pages and date).
OPENAI_GPT = CachePricing(
    provider="OpenAI (GPT-5.4)",
    input_per_mtok=2.5,
    cached_per_mtok=0.25,
    write_per_mtok=2.5,
    min_cacheable=1024,
    increment=128,
    source="developers.openai.com/api/docs/pricing and /docs/guides/prompt-caching, read 2026-11-30",
)
#: The named presets, by key (what the dashboard offers).
PROVIDERS: dict[str, CachePricing] = {"anthropic": ANTHROPIC_SONNET, "openai": OPENAI_GPT}


@dataclass(frozen=True, slots=True)
class CacheTotals:
    """Sums over a conversation's requests (tokens) and their price (USD).

    ``sent = cached + written + uncached``. ``cost`` prices them with the pricing used.
    """

    requests: int
    sent: int
    cached: int
    written: int
    uncached: int
    cost: float

    @property
    def cached_share(self) -> float:
        """cached / sent (0.0 when nothing was sent)."""
        return self.cached / self.sent if self.sent else 0.0


@dataclass(frozen=True, slots=True)
class PromptCache:
    """Per request (index = replay step): tokens ``sent``, the ``prefix`` unchanged since the
    previous request, of it ``cached`` (served), ``written`` to the cache, ``uncached``; all tokens.
    ``totals`` sums them and prices them with ``pricing``."""

    pricing: CachePricing
    sent: tuple[int, ...]
    prefix: tuple[int, ...]
    cached: tuple[int, ...]
    written: tuple[int, ...]
    uncached: tuple[int, ...]
    totals: CacheTotals

    @property
    def cost_without_cache(self) -> float:
        """USD if every token were billed as uncached input (what the cache saves against)."""
        return self.totals.sent * self.pricing.input_per_mtok / 1e6


def cache_accounting(sent: Sequence[int], prefix: Sequence[int], pricing: CachePricing) -> PromptCache:
    """Split each request into cached / written / uncached tokens and price the totals. O(n).

    ``sent[s]`` is what request ``s`` sends, ``prefix[s]`` the tokens of its longest prefix
    unchanged since request ``s - 1`` (0 for the first). A request of at least
    ``pricing.min_cacheable`` tokens writes everything after its served prefix to the cache (the
    breakpoint at the end of the prompt, the usual way to cache a growing conversation); a shorter
    one is sent uncached. Raises ValueError when the lengths differ or a prefix exceeds its request,
    TypeError (naming the field and the position) when pricing is not a CachePricing or a count is
    not an int.
    """
    if not isinstance(pricing, CachePricing):
        raise TypeError(f"cache_accounting pricing must be a CachePricing, got {pricing!r:.200}")
    for name, values in (("sent", sent), ("prefix", prefix)):
        if not isinstance(values, Sequence) or isinstance(values, (str, bytes)):
            raise TypeError(f"cache_accounting {name} must be a sequence of int tokens, got {values!r:.200}")
        for s, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"cache_accounting {name}[{s}] must be an int (tokens), got {value!r:.200}")
    if len(sent) != len(prefix):
        raise ValueError(f"cache_accounting sent and prefix must have the same length, got {len(sent)} and {len(prefix)}")
    served = pricing.served
    low = pricing.min_cacheable
    cached = []
    written = []
    uncached = []
    for s, (total, p) in enumerate(zip(sent, prefix)):
        if p > total or p < 0:
            raise ValueError(f"cache_accounting prefix[{s}] = {p} must be in [0, sent[{s}] = {total}]")
        c = served(p)
        w = total - c if total >= low and total > 0 else 0
        cached.append(c)
        written.append(w)
        uncached.append(total - c - w)
    tc, tw, tu = sum(cached), sum(written), sum(uncached)
    cost = (tc * pricing.cached_per_mtok + tw * pricing.write_per_mtok + tu * pricing.input_per_mtok) / 1e6
    totals = CacheTotals(len(sent), tc + tw + tu, tc, tw, tu, cost)
    return PromptCache(pricing, tuple(sent), tuple(prefix), tuple(cached), tuple(written), tuple(uncached), totals)


def prompt_cache(result: Replay, pricing: CachePricing) -> PromptCache:
    """The per-request cache accounting of a replay (:func:`unchanged_prefix_tokens` +
    :func:`cache_accounting`). O(n)."""
    if not isinstance(result, Replay):
        raise TypeError(f"prompt_cache result must be a Replay (convmem.replay), got {result!r:.200}")
    return cache_accounting(result.totals, unchanged_prefix_tokens(result), pricing)


def common_prefix_tokens(previous: Sequence[Message], current: Sequence[Message]) -> int:
    """Tokens of the longest common prefix of two contexts, messages compared whole (id, role,
    content, tokens, tool ids: a message edited in place differs). O(prefix)."""
    total = 0
    for a, b in zip(previous, current):
        if a is not b and a != b:
            break
        total += a.tokens
    return total


def prefix_tokens_of_contexts(contexts: Iterable[Sequence[Message]]) -> tuple[int, ...]:
    """``unchanged prefix`` per request from explicit contexts (one per request, in order).

    Works for any policy (including ones that edit messages in place); O(total context size).
    The reference :func:`unchanged_prefix_tokens` is checked against.
    """
    out = []
    previous: Sequence[Message] = ()
    for ctx in contexts:
        out.append(common_prefix_tokens(previous, ctx))
        previous = ctx
    return tuple(out)


def _drop_columns(log: CompactionLog) -> tuple[tuple, tuple, array, array, Sequence[str | None]]:
    """The drops of a replay's log without building its records (no message or pair per drop):
    ``(steps, events, starts, seqs, reasons)``, record ``i`` dropping the add steps
    ``seqs[starts[i]:starts[i + 1]]`` for ``reasons[starts[i]:starts[i + 1]]``. O(drops), at C
    level."""
    seqs = log._seqs  # noqa: SLF001 - same package: the log's own columns
    reasons = log._reasons  # noqa: SLF001
    if log._by_step:  # noqa: SLF001 - the policy walk's log: reasons are per add step
        reasons = list(map(reasons.__getitem__, seqs))
    return log.steps, log._events, log._starts, seqs, reasons  # noqa: SLF001


def unchanged_prefix_tokens(
    result: Replay, edits: Mapping[int, Sequence[Message]] | None = None
) -> tuple[int, ...]:
    """Per step, the tokens of the context before step ``s`` that step ``s`` still sends first,
    unchanged (0 at step 0). Equal to :func:`prefix_tokens_of_contexts` over every
    :func:`~convmem.replay.context_at`, in O(n + pinned messages crossed) instead of O(n * context).

    How: the context is kept messages in add order with the summary placed after every message at
    or before History's *frontier* (the last message popped from the oldest end). A step changes
    the previous context at its first dropped message still in it, or at the summary when the
    summary was replaced, removed, or moved past a kept (pinned) message because the frontier
    moved. The tokens before that point come from a pointer over a linked list of kept messages
    holding the running sum of kept tokens before it; the pointer only crosses kept messages near
    the oldest end (pins), and each message is unlinked once.

    Messages edited in place break the prefix at the first one still in the context, like a drop:
    the replay's own clearings (``result.clearings``, History's context editing) always, and
    ``edits``: step -> new versions of messages changed at that step (same ids as messages of the
    replay), for edits History does not record. ``result.totals`` must be the totals *with* the
    edits. An edit of a message no longer kept is ignored; KeyError names an id that is no message
    of the replay.
    """
    n = len(result.messages)
    if n == 0:
        return ()
    tokens = [m.tokens for m in result.messages]
    totals = result.totals
    log_steps, log_events, starts, drop_seqs, drop_reasons = _drop_columns(result.compactions)
    # Each summary's id, role and tokens (its text is not needed: ids of one summarizer differ).
    summaries = iter(result.summaries._stubs() if isinstance(result.summaries, SummaryLog) else result.summaries)
    # Linked list over nodes k = seq + 1; node 0 is the head sentinel, n + 1 the end. Messages not
    # added yet sit after the tail and are never crossed (queries stay below the current step).
    nxt = list(range(1, n + 2)) + [n + 1]
    prv = [0] + list(range(0, n + 1))
    p = 1  # the pointer's node; below = kept tokens / count of linked nodes before it
    below = 0
    count_below = 0
    summary: Message | None = None
    frontier = -1
    # A step without a record only appended: it reuses the whole previous prompt.
    out = [0, *totals[:-1]]
    alive = [True] * n
    # The new token counts of messages edited in place, per step: the replay's own clearings
    # (History's context editing, issue 11) plus the caller's ``edits``.
    changes: dict[int, list[tuple[str, int]]] = {}
    for clearing in getattr(result, "clearings", ()):
        changes.setdefault(clearing.step, []).extend((c.id, c.tokens_after) for c in clearing.cleared)
    if edits is not None and not isinstance(edits, Mapping):
        raise TypeError(f"unchanged_prefix_tokens edits must be a mapping step -> messages, got {edits!r:.200}")
    for step, edited_messages in (edits or {}).items():
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < n:
            raise ValueError(f"unchanged_prefix_tokens edits has step {step!r:.200}, not a step in [0, {n})")
        if isinstance(edited_messages, (str, bytes)) or not isinstance(edited_messages, Sequence):
            raise TypeError(f"unchanged_prefix_tokens edits[{step}] must be a list of Message, got {edited_messages!r:.200}")
        for m in edited_messages:
            if not isinstance(m, Message):
                raise TypeError(f"unchanged_prefix_tokens edits[{step}] holds {m!r:.200}, not a Message")
        changes.setdefault(step, []).extend((m.id, m.tokens) for m in edited_messages)
    edits = changes
    index = {m.id: i for i, m in enumerate(result.messages)} if edits else {}
    no_drop: tuple = (0, 0, None)
    # step -> (first, stop, event): its drops are drop_seqs[first:stop] / drop_reasons[first:stop].
    steps = dict(zip(log_steps, zip(starts, starts[1:], log_events)))

    def seek(t: int) -> None:
        """Move the pointer to the first linked node with seq >= t."""
        nonlocal p, below, count_below
        k = p
        while k - 1 < t:  # the end node's seq (n) is never < t
            below += tokens[k - 1]
            count_below += 1
            k = nxt[k]
        while prv[k] - 1 >= t:  # the head node's seq (-1) is never >= t
            k = prv[k]
            below -= tokens[k - 1]
            count_below -= 1
        p = k

    for s in sorted(steps.keys() | edits.keys()) if edits else list(steps):
        lo, hi, event = steps.get(s, no_drop)
        dropped = drop_seqs[lo:hi]
        edited = []
        for mid, new_tokens in edits.get(s, ()):
            if mid not in index:
                raise KeyError(f"unchanged_prefix_tokens edits[{s}] names id {mid!r}, no message of the replay")
            edited.append((index[mid], new_tokens))
        removed = [seq for seq in dropped if seq < s]
        removed += [seq for seq, _t in edited if seq < s and alive[seq]]
        unit = [seq for seq, why in zip(dropped, drop_reasons[lo:hi]) if why in _UNIT_REASONS]
        new_frontier = max(frontier, max(unit)) if unit else frontier
        new_summary = summary
        if event is not None:
            if event.accepted:
                new_summary = next(summaries)
            elif event.removed_id is not None:
                new_summary = None
        # The first change, as a position key: message seq x -> 2x + 1, the summary -> 2f + 2.
        first = 2 * min(removed) + 1 if removed else None
        if summary is not None:
            changed = new_summary is None or (new_summary is not summary and new_summary != summary)
            if not changed and new_frontier != frontier:
                # Moved when a message in (frontier, new_frontier] stays kept after this step.
                seek(new_frontier + 1)
                hi = count_below
                seek(frontier + 1)
                gone = sum(1 for x in dropped if frontier < x <= new_frontier)
                changed = hi - count_below - gone > 0
            if changed:
                key = 2 * frontier + 2
                first = key if first is None else min(first, key)
        if first is None:
            out[s] = totals[s - 1] if s else 0
        else:
            seek(first // 2)  # messages with 2x + 1 < first, i.e. x < first // 2
            prefix = below
            if summary is not None and 2 * frontier + 2 < first:
                prefix += summary.tokens
            out[s] = prefix
        for seq in dropped:
            k = seq + 1
            if k == p:
                p = nxt[k]
            elif k < p:
                below -= tokens[seq]
                count_below -= 1
            nxt[prv[k]] = nxt[k]
            prv[nxt[k]] = prv[k]
            alive[seq] = False
        for seq, new_tokens in edited:
            if alive[seq] and seq + 1 < p:
                below += new_tokens - tokens[seq]
            tokens[seq] = new_tokens
        summary = new_summary
        frontier = new_frontier
    return tuple(out)


@dataclass(frozen=True, slots=True)
class CostSweepRow:
    """One limit of :func:`sweep_limit_costs`: the replay's stats and its cache totals (priced)."""

    limit: int
    target: int | None
    stats: ReplayStats
    cache: CacheTotals


def sweep_limit_costs(
    messages: Sequence[Message],
    settings: HistorySettings,
    limits: Sequence[int],
    pricing: CachePricing,
    *,
    count_tokens=None,
    tool_names=None,
    thinking=None,
) -> list[CostSweepRow]:
    """:func:`~convmem.replay.sweep_limits` with the prompt-cache totals of each limit.

    The same settings per limit (:meth:`~convmem.HistorySettings.at_limit`: a target and a clearing
    trigger keep their ratio to the limit, a summary budget is clipped to the cut, clearing's keep
    and minimum kept as they are), one :func:`~convmem.replay.replay` plus
    :func:`prompt_cache` per limit: O(len(limits) * n) plus History's cost. ``tool_names`` and
    ``thinking`` are passed to replay.
    """
    _check_messages(messages)
    if not isinstance(pricing, CachePricing):
        raise TypeError(f"sweep_limit_costs pricing must be a CachePricing, got {pricing!r:.200}")
    if isinstance(limits, (str, bytes)) or not isinstance(limits, Sequence):
        raise TypeError(f"sweep_limit_costs limits must be a sequence of int token limits, got {limits!r:.200}")
    rows = []
    for limit in limits:
        s = settings.at_limit(limit)
        result = replay(messages, s, count_tokens=count_tokens, tool_names=tool_names, thinking=thinking)
        rows.append(CostSweepRow(limit, s.target, result.stats, prompt_cache(result, pricing).totals))
    return rows


@dataclass(frozen=True, slots=True)
class ClearingSweepRow:
    """One (trigger, keep) pair of :func:`sweep_clearing_costs`: the replay's stats (tokens sent,
    clearings, cache breaks as ``prefix_changes``) and its cache totals (priced)."""

    trigger: int
    keep: int
    stats: ReplayStats
    cache: CacheTotals


def _check_int_grid(name: str, values: object) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"sweep_clearing_costs {name} must be a sequence of ints, got {values!r:.200}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"sweep_clearing_costs {name} must hold ints >= 0, got {v!r:.200} in {values!r:.200}")
    return list(values)


def sweep_clearing_costs(
    messages: Sequence[Message],
    settings: HistorySettings,
    triggers: Sequence[int],
    keeps: Sequence[int],
    pricing: CachePricing,
    *,
    count_tokens=None,
    tool_names=None,
    thinking=None,
) -> list[ClearingSweepRow]:
    """Clearing's two knobs swept (issue 11): every ``trigger`` (tokens) x ``keep`` (newest tool
    results kept) pair, the rest of ``settings`` as given (limit, target, policies,
    ``clear_at_least``), one :func:`~convmem.replay.replay` plus :func:`prompt_cache` each.

    Rows in ``triggers``-major order. O(len(triggers) * len(keeps) * n) plus History's cost.
    A lower trigger or a smaller keep clears more: fewer tokens sent, more cache breaks; the priced
    total says which wins. Raises TypeError/ValueError naming the argument for a bad grid/pricing.

    >>> msgs = [Message("u", "user", 5)]
    >>> for i in range(3):
    ...     msgs += [Message(f"a{i}", "assistant", 5, tool_call_ids=(f"c{i}",)),
    ...              Message(f"t{i}", "tool", 50, tool_call_id=f"c{i}")]
    >>> rows = sweep_clearing_costs(msgs, HistorySettings(1000), [60, 1000], [0, 3], ANTHROPIC_SONNET)
    >>> [(r.trigger, r.keep, r.stats.clearings, r.stats.tokens_sent) for r in rows]
    [(60, 0, 3, 177), (60, 3, 0, 545), (1000, 0, 0, 545), (1000, 3, 0, 545)]
    """
    _check_messages(messages)
    if not isinstance(settings, HistorySettings):
        raise TypeError(f"sweep_clearing_costs settings must be a HistorySettings, got {settings!r:.200}")
    if not isinstance(pricing, CachePricing):
        raise TypeError(f"sweep_clearing_costs pricing must be a CachePricing, got {pricing!r:.200}")
    trigger_grid = _check_int_grid("triggers", triggers)
    keep_grid = _check_int_grid("keeps", keeps)
    rows = []
    for trigger in trigger_grid:
        for keep in keep_grid:
            s = replace(settings, clear_trigger=trigger, clear_keep=keep)
            result = replay(messages, s, count_tokens=count_tokens, tool_names=tool_names, thinking=thinking)
            rows.append(ClearingSweepRow(trigger, keep, result.stats, prompt_cache(result, pricing).totals))
    return rows
