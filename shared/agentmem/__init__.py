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

_EXPORTS = {  # name -> the module that defines it, imported when the name is first used
    "Bm25Encoder": "agentmem.sparse",
    "BuiltContext": "agentmem.context.assembler",
    "CachedEmbedder": "agentmem.embeddings.cache",
    "ChatModel": "agentmem.llm.base",
    "ConflictDecision": "agentmem.controller.conflicts",
    "ConflictResolver": "agentmem.controller.conflicts",
    "ConsolidationQueue": "agentmem.controller.scheduler",
    "ConsolidationReport": "agentmem.controller.consolidation",
    "ConversationBufferMemory": "agentmem.short_term.buffer",
    "Embedder": "agentmem.embeddings.base",
    "EpisodicMemory": "agentmem.long_term.episodic",
    "ForgettingPolicy": "agentmem.controller.forgetting",
    "ForgettingReport": "agentmem.controller.forgetting",
    "Hypothesis": "agentmem.working.models",
    "LongTermMemory": "agentmem.long_term.memory",
    "MemoryConsolidator": "agentmem.controller.consolidation",
    "MemoryManager": "agentmem.controller.manager",
    "MemoryRecord": "agentmem.long_term.records",
    "MemoryRetriever": "agentmem.controller.retrieval",
    "MemoryService": "agentmem.service",
    "Message": "agentmem.types",
    "OpenAIEmbedder": "agentmem.embeddings.openai",
    "ScratchpadEntry": "agentmem.working.models",
    "SemanticMemory": "agentmem.long_term.semantic",
    "SentenceTransformerEmbedder": "agentmem.embeddings.local",
    "ShortTermMemory": "agentmem.short_term.base",
    "ShortTermView": "agentmem.short_term.view",
    "SlidingWindowMemory": "agentmem.short_term.window",
    "SparseEncoder": "agentmem.sparse",
    "StructuredChatModel": "agentmem.llm.base",
    "SummaryBufferMemory": "agentmem.short_term.summary",
    "Task": "agentmem.working.models",
    "TaskStatus": "agentmem.working.models",
    "TokenCounter": "agentmem.tokens",
    "ToolCall": "agentmem.types",
    "WorkingMemory": "agentmem.working.memory",
    "acomplete_json": "agentmem.llm.base",
    "complete_json": "agentmem.llm.base",
    "default_embedder": "agentmem.embeddings.local",
}
__getattr__, __dir__ = lazy_exports(
    __name__,
    _EXPORTS,
    # LangChainEmbedder / LlamaIndexEmbedder moved to langchain_agentmem /
    # llamaindex_agentmem; the old names warn and import them lazily until agentmem 0.3.
    fallback=partial(warn_moved, __name__),
)
