"""convmem: an agent's conversation memory.

Three parts (SPEC §3-§5), each usable alone:

* :func:`load_history` loads a conversation page by page from a store that fails now and then.
* :class:`History` keeps what goes to the model under its token limit, with the policies real
  agents need (pins, tool-call groups, trigger/target compaction, budgeted summaries).
* :func:`evict_conversations` forgets whole past conversations that mention too many listings.

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
    ToolCall,
    extract_listing_ids,
    group_by_user,
    load_conversations,
    make_listing_extractor,
    parse_conversations,
    to_openai_jsonl,
)
from .eviction import EvictionStep, evict_conversations, eviction_curve, explain_eviction, kept_from
from .history import (
    DROP_REASONS,
    Compaction,
    DroppedMessage,
    History,
    Summarizer,
    SummaryEvent,
)
from .loading import (
    STOP_REASONS,
    CallRecord,
    LoadReport,
    load_history,
    load_history_with_report,
)
from .replay import (
    CompactionLog,
    HistorySettings,
    Replay,
    ReplayStats,
    SweepRow,
    context_at,
    replay,
    sweep_limits,
)
from .stores import (
    FaultConfig,
    FlakyStore,
    PagedStore,
    ScriptedStore,
    TruthDiff,
    VirtualClock,
    compare_to_truth,
)
from .summarizers import ExtractiveSummarizer, LLMSummarizer
from .synthetic import generate_conversation, generate_shoppers
from .tokens import ApproxCounter, TiktokenCounter, TokenCounter, default_counter, make_counter

__all__ = [
    "ApproxCounter",
    "CallRecord",
    "check_text",
    "Compaction",
    "CompactionLog",
    "compare_to_truth",
    "context_at",
    "Conversation",
    "ConvmemError",
    "default_counter",
    "DEFAULT_MAX_BYTES",
    "DROP_REASONS",
    "DroppedMessage",
    "evict_conversations",
    "eviction_curve",
    "EvictionStep",
    "explain_eviction",
    "extract_listing_ids",
    "ExtractiveSummarizer",
    "FaultConfig",
    "FlakyStore",
    "FormatError",
    "FORMATS",
    "generate_conversation",
    "generate_shoppers",
    "group_by_user",
    "History",
    "HistorySettings",
    "kept_from",
    "LISTING_ID_PATTERN",
    "LLMSummarizer",
    "load_conversations",
    "load_history",
    "load_history_with_report",
    "LoadReport",
    "make_counter",
    "make_listing_extractor",
    "MAX_TOKENS",
    "Message",
    "PagedStore",
    "PageLoadError",
    "parse_conversations",
    "Replay",
    "replay",
    "ReplayStats",
    "ROLES",
    "ScriptedStore",
    "STOP_REASONS",
    "Summarizer",
    "SummarizerError",
    "SummaryEvent",
    "sweep_limits",
    "SweepRow",
    "TiktokenCounter",
    "to_openai_jsonl",
    "TokenCounter",
    "ToolCall",
    "TransientError",
    "TruthDiff",
    "UPLOAD_MAX_BYTES",
    "VirtualClock",
]
