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

from functools import partial
from typing import TYPE_CHECKING

from agentmem import errors
from agentmem._lazy import lazy_exports
from agentmem.embeddings.adapters import warn_moved
from agentmem.errors import *

if TYPE_CHECKING:  # the static names, for type checkers and IDEs
    from agentmem.context import BuiltContext
    from agentmem.controller.conflicts import ConflictDecision, ConflictResolver
    from agentmem.controller.consolidation import ConsolidationReport, MemoryConsolidator
    from agentmem.controller.forgetting import ForgettingPolicy, ForgettingReport
    from agentmem.controller.manager import MemoryManager
    from agentmem.controller.retrieval import MemoryRetriever
    from agentmem.controller.scheduler import ConsolidationQueue
    from agentmem.embeddings import (
        CachedEmbedder,
        Embedder,
        OpenAIEmbedder,
        SentenceTransformerEmbedder,
        default_embedder,
    )
    from agentmem.llm import ChatModel, StructuredChatModel, acomplete_json, complete_json
    from agentmem.long_term import EpisodicMemory, LongTermMemory, MemoryRecord, SemanticMemory
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "agentmem.context.assembler": ("BuiltContext",),
        "agentmem.controller.conflicts": ("ConflictDecision", "ConflictResolver"),
        "agentmem.controller.consolidation": ("ConsolidationReport", "MemoryConsolidator"),
        "agentmem.controller.forgetting": ("ForgettingPolicy", "ForgettingReport"),
        "agentmem.controller.manager": ("MemoryManager",),
        "agentmem.controller.retrieval": ("MemoryRetriever",),
        "agentmem.controller.scheduler": ("ConsolidationQueue",),
        "agentmem.embeddings.base": ("Embedder",),
        "agentmem.embeddings.cache": ("CachedEmbedder",),
        "agentmem.embeddings.local": ("SentenceTransformerEmbedder", "default_embedder"),
        "agentmem.embeddings.openai": ("OpenAIEmbedder",),
        "agentmem.llm.base": (
            "ChatModel",
            "StructuredChatModel",
            "acomplete_json",
            "complete_json",
        ),
        "agentmem.long_term.episodic": ("EpisodicMemory",),
        "agentmem.long_term.memory": ("LongTermMemory",),
        "agentmem.long_term.records": ("MemoryRecord",),
        "agentmem.long_term.semantic": ("SemanticMemory",),
        "agentmem.service": ("MemoryService",),
        "agentmem.short_term.base": ("ShortTermMemory",),
        "agentmem.short_term.buffer": ("ConversationBufferMemory",),
        "agentmem.short_term.summary": ("SummaryBufferMemory",),
        "agentmem.short_term.view": ("ShortTermView",),
        "agentmem.short_term.window": ("SlidingWindowMemory",),
        "agentmem.sparse": ("Bm25Encoder", "SparseEncoder"),
        "agentmem.tokens": ("TokenCounter",),
        "agentmem.types": ("Message", "ToolCall"),
        "agentmem.working.memory": ("WorkingMemory",),
        "agentmem.working.models": ("Hypothesis", "ScratchpadEntry", "Task", "TaskStatus"),
    },
    # LangChainEmbedder / LlamaIndexEmbedder moved to langchain_agentmem /
    # llamaindex_agentmem; the old names warn and import them lazily until agentmem 0.3.
    fallback=partial(warn_moved, __name__),
)
