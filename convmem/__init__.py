"""convmem: an agent's conversation memory.

Three parts (SPEC §3-§5), each usable alone:

* :func:`load_history` loads a conversation page by page from a store that fails now and then.
* :class:`History` keeps what goes to the model under its token limit, with the policies real
  agents need (pins, tool-call groups, trigger/target compaction, budgeted summaries).
* :func:`evict_conversations` forgets whole past conversations that mention too many listings.

Everything public is exported here; ``convmem`` never imports streamlit.
"""

from .errors import ConvmemError, FormatError, PageLoadError, TransientError
from .message import ROLES, Message

# -- exports added per module (keep one block per module, sorted by module name) --
from .eviction import EvictionStep, evict_conversations, eviction_curve, explain_eviction, kept_from
from .history import (
    DROP_REASONS,
    Compaction,
    DroppedMessage,
    History,
    Summarizer,
    SummaryEvent,
)
from .replay import HistorySettings, Replay, ReplayStats, SweepRow, context_at, replay, sweep_limits
from .summarizers import ExtractiveSummarizer, LLMSummarizer

__all__ = [
    "Compaction",
    "ExtractiveSummarizer",
    "HistorySettings",
    "LLMSummarizer",
    "Replay",
    "ReplayStats",
    "SweepRow",
    "context_at",
    "replay",
    "sweep_limits",
    "DROP_REASONS",
    "DroppedMessage",
    "EvictionStep",
    "History",
    "Summarizer",
    "SummaryEvent",
    "evict_conversations",
    "eviction_curve",
    "explain_eviction",
    "kept_from",
    "ConvmemError",
    "FormatError",
    "Message",
    "PageLoadError",
    "ROLES",
    "TransientError",
]
