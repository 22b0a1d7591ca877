"""convmem: an agent's conversation memory.

Three parts (SPEC §3-§5), each usable alone:

* :func:`load_history` loads a conversation page by page from a store that fails now and then
  (:func:`iter_pages` streams it; :func:`load_tail` fetches only the newest messages History keeps).
* :class:`History` keeps what goes to the model under its token limit, with the policies real
  agents need (pins, tool-call groups, trigger/target compaction, budgeted summaries).
* :func:`evict_conversations` forgets whole past conversations that mention too many listings.

Conversations live in a :class:`~convmem.stores.SQLStore` (SQLite, PostgreSQL); the test doubles
(fake stores, fault injection, a virtual clock) are in :mod:`convmem.testing`.

Everything public is exported here; ``convmem`` never imports streamlit.
"""

from .errors import ConvmemError, FormatError, PageLoadError, SummarizerError, TransientError
from .limits import MAX_TOKENS, UPLOAD_MAX_BYTES
from .message import ROLES, Message, check_text

from .conversations import (
    DEFAULT_MAX_BYTES,
    FORMATS,
    LISTING_ID_PATTERN,
    Conversation,
    LoadResult,
    Skipped,
    ToolCall,
    dump_conversations,
    extract_listing_ids,
    group_by_user,
    load_conversations,
    make_listing_extractor,
    parse_conversations,
    to_openai_jsonl,
)
from .agent_sessions import (
    AgentCompaction,
    AgentSession,
    ReportedUsage,
    UsageComparison,
    session_of,
    usage_comparison,
)
from .calibration import CalibratedCounter, Calibration, calibrate, fit_calibration
from .redaction import redact_conversation, redact_conversations, redact_text
from .eviction import EvictionStep, evict_conversations, eviction_curve, explain_eviction, kept_from
from .history import (
    DROP_REASONS,
    ClearedMessage,
    Clearing,
    ClearThinking,
    ClearToolUses,
    Compaction,
    DroppedMessage,
    History,
    Summarizer,
    SummaryEvent,
    as_cleared,
)
from .loading import (
    STOP_REASONS,
    CallRecord,
    LoadedPage,
    LoadReport,
    iter_messages,
    iter_pages,
    load_history,
    load_history_with_report,
)
from .prompt_cache import (
    ANTHROPIC_SONNET,
    OPENAI_GPT,
    PROVIDERS,
    CachePricing,
    CacheTotals,
    ClearingSweepRow,
    CostSweepRow,
    PromptCache,
    cache_accounting,
    common_prefix_tokens,
    prefix_tokens_of_contexts,
    prompt_cache,
    sweep_clearing_costs,
    sweep_limit_costs,
    unchanged_prefix_tokens,
)
from .tail import TailLoad, load_tail
from .replay import (
    CompactionLog,
    SummaryLog,
    HistorySettings,
    Replay,
    ReplayStats,
    SlicedReplay,
    SweepRow,
    context_at,
    replay,
    sweep_limits,
)
from .outcomes import CallOutcome, DropReason, LoadFailure, StopReason
from .safe_limit import SafeLimit, explain_safe_limit, smallest_safe_limit
from .summarizers import ExtractiveSummarizer, LLMSummarizer
from .synthetic import generate_conversation, generate_shoppers
from .tokens import (
    ApproxCounter,
    EncodingUnavailableError,
    ImageRef,
    TiktokenCounter,
    TokenCounter,
    count_prompt,
    default_counter,
    make_counter,
)

__all__ = [
    "AgentCompaction",
    "AgentSession",
    "ApproxCounter",
    "CalibratedCounter",
    "Calibration",
    "ReportedUsage",
    "UsageComparison",
    "calibrate",
    "fit_calibration",
    "redact_conversation",
    "redact_conversations",
    "redact_text",
    "session_of",
    "usage_comparison",
    "CallOutcome",
    "CallRecord",
    "check_text",
    "ClearedMessage",
    "as_cleared",
    "Clearing",
    "ClearThinking",
    "ClearToolUses",
    "Compaction",
    "CompactionLog",
    "SummaryLog",
    "context_at",
    "Conversation",
    "ConvmemError",
    "count_prompt",
    "default_counter",
    "DEFAULT_MAX_BYTES",
    "DROP_REASONS",
    "DroppedMessage",
    "DropReason",
    "EncodingUnavailableError",
    "dump_conversations",
    "evict_conversations",
    "eviction_curve",
    "EvictionStep",
    "explain_eviction",
    "explain_safe_limit",
    "extract_listing_ids",
    "ExtractiveSummarizer",
    "FormatError",
    "FORMATS",
    "generate_conversation",
    "generate_shoppers",
    "group_by_user",
    "History",
    "HistorySettings",
    "ImageRef",
    "iter_messages",
    "iter_pages",
    "kept_from",
    "LISTING_ID_PATTERN",
    "LLMSummarizer",
    "load_conversations",
    "load_history",
    "load_history_with_report",
    "load_tail",
    "LoadedPage",
    "LoadFailure",
    "LoadReport",
    "LoadResult",
    "make_counter",
    "make_listing_extractor",
    "MAX_TOKENS",
    "Message",
    "PageLoadError",
    "parse_conversations",
    "Replay",
    "replay",
    "ReplayStats",
    "ROLES",
    "SlicedReplay",
    "SafeLimit",
    "smallest_safe_limit",
    "SQLStore",
    "Skipped",
    "STOP_REASONS",
    "StopReason",
    "Summarizer",
    "SummarizerError",
    "SummaryEvent",
    "sweep_limits",
    "SweepRow",
    "TailLoad",
    "TiktokenCounter",
    "to_openai_jsonl",
    "TokenCounter",
    "ToolCall",
    "TransientError",
    "UPLOAD_MAX_BYTES",
    # prompt-cache cost accounting (issue 10 item 7)
    "ANTHROPIC_SONNET",
    "OPENAI_GPT",
    "PROVIDERS",
    "CachePricing",
    "CacheTotals",
    "ClearingSweepRow",
    "CostSweepRow",
    "PromptCache",
    "cache_accounting",
    "common_prefix_tokens",
    "prefix_tokens_of_contexts",
    "prompt_cache",
    "sweep_clearing_costs",
    "sweep_limit_costs",
    "unchanged_prefix_tokens",
]


def __getattr__(name: str):
    # SQLStore is imported on first use: it pulls in SQLAlchemy (~0.4 s), which History and the
    # dashboard's pages never need.
    if name == "SQLStore":
        from .stores import SQLStore

        return SQLStore
    # The test doubles moved to convmem.testing (issue 12); the old names still resolve, with a
    # DeprecationWarning, until every caller imports them from there.
    from .testing import _moved

    return _moved.resolve(__name__, name)
