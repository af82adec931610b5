"""agentmem: tiered memory for LLM agents.

Every public name is imported on first use (PEP 562), so ``import agentmem`` loads only
the error hierarchy; ``agentmem.MemoryManager`` then imports what the manager needs.

Example:
    >>> from agentmem import ConversationBufferMemory
    >>> memory = ConversationBufferMemory(max_tokens=1000)
    >>> _ = memory.add_message("user", "I only write Python, tabs not spaces")
    >>> memory.get_messages()
    [{'role': 'user', 'content': 'I only write Python, tabs not spaces'}]
"""

from typing import TYPE_CHECKING

from agentmem import errors
from agentmem._util.lazy import lazy_exports
from agentmem.errors import *

if TYPE_CHECKING:  # the static names, for type checkers and IDEs
    from agentmem.context import BuiltContext
    from agentmem.controller import (
        ConflictDecision,
        ConflictResolver,
        ConsolidationQueue,
        ConsolidationReport,
        ForgettingPolicy,
        ForgettingReport,
        MemoryConsolidator,
        MemoryManager,
        MemoryRetriever,
    )
    from agentmem.embeddings import (
        CachedEmbedder,
        Embedder,
        OpenAIEmbedder,
        SentenceTransformerEmbedder,
        default_embedder,
    )
    from agentmem.llm import ChatModel, StructuredChatModel, acomplete_json, complete_json
    from agentmem.long_term import (
        EpisodicMemory,
        LongTermMemory,
        MemoryRecord,
        RecordFilter,
        Scope,
        ScoredRecord,
        SemanticMemory,
    )
    from agentmem.service import MemoryService
    from agentmem.short_term import (
        ConversationBufferMemory,
        ShortTermMemory,
        ShortTermView,
        SlidingWindowMemory,
        SummaryBufferMemory,
    )
    from agentmem.sparse import Bm25Encoder, SparseEncoder
    from agentmem.tokens import TokenCounter
    from agentmem.types import Message, ToolCall
    from agentmem.working import Hypothesis, ScratchpadEntry, Task, TaskStatus, WorkingMemory

__all__ = [
    "Bm25Encoder",
    "BuiltContext",
    "CachedEmbedder",
    "ChatModel",
    "ConflictDecision",
    "ConflictResolver",
    "ConsolidationQueue",
    "ConsolidationReport",
    "ConversationBufferMemory",
    "Embedder",
    "EpisodicMemory",
    "ForgettingPolicy",
    "ForgettingReport",
    "Hypothesis",
    "LongTermMemory",
    "MemoryConsolidator",
    "MemoryManager",
    "MemoryRecord",
    "MemoryRetriever",
    "MemoryService",
    "Message",
    "OpenAIEmbedder",
    "RecordFilter",
    "Scope",
    "ScoredRecord",
    "ScratchpadEntry",
    "SemanticMemory",
    "SentenceTransformerEmbedder",
    "ShortTermMemory",
    "ShortTermView",
    "SlidingWindowMemory",
    "SparseEncoder",
    "StructuredChatModel",
    "SummaryBufferMemory",
    "Task",
    "TaskStatus",
    "TokenCounter",
    "ToolCall",
    "WorkingMemory",
    "acomplete_json",
    "complete_json",
    "default_embedder",
    *errors.__all__,  # the whole error hierarchy
]

_EXPORTS = {  # each name -> the module the TYPE_CHECKING block imports it from
    "Bm25Encoder": "agentmem.sparse",
    "BuiltContext": "agentmem.context",
    "CachedEmbedder": "agentmem.embeddings",
    "ChatModel": "agentmem.llm",
    "ConflictDecision": "agentmem.controller",
    "ConflictResolver": "agentmem.controller",
    "ConsolidationQueue": "agentmem.controller",
    "ConsolidationReport": "agentmem.controller",
    "ConversationBufferMemory": "agentmem.short_term",
    "Embedder": "agentmem.embeddings",
    "EpisodicMemory": "agentmem.long_term",
    "ForgettingPolicy": "agentmem.controller",
    "ForgettingReport": "agentmem.controller",
    "Hypothesis": "agentmem.working",
    "LongTermMemory": "agentmem.long_term",
    "MemoryConsolidator": "agentmem.controller",
    "MemoryManager": "agentmem.controller",
    "MemoryRecord": "agentmem.long_term",
    "MemoryRetriever": "agentmem.controller",
    "MemoryService": "agentmem.service",
    "Message": "agentmem.types",
    "OpenAIEmbedder": "agentmem.embeddings",
    "RecordFilter": "agentmem.long_term",
    "Scope": "agentmem.long_term",
    "ScoredRecord": "agentmem.long_term",
    "ScratchpadEntry": "agentmem.working",
    "SemanticMemory": "agentmem.long_term",
    "SentenceTransformerEmbedder": "agentmem.embeddings",
    "ShortTermMemory": "agentmem.short_term",
    "ShortTermView": "agentmem.short_term",
    "SlidingWindowMemory": "agentmem.short_term",
    "SparseEncoder": "agentmem.sparse",
    "StructuredChatModel": "agentmem.llm",
    "SummaryBufferMemory": "agentmem.short_term",
    "Task": "agentmem.working",
    "TaskStatus": "agentmem.working",
    "TokenCounter": "agentmem.tokens",
    "ToolCall": "agentmem.types",
    "WorkingMemory": "agentmem.working",
    "acomplete_json": "agentmem.llm",
    "complete_json": "agentmem.llm",
    "default_embedder": "agentmem.embeddings",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
