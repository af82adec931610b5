"""agentmem: tiered memory for LLM agents.

Example:
    >>> from agentmem import ConversationBufferMemory
    >>> memory = ConversationBufferMemory(max_tokens=1000)
    >>> _ = memory.add_message("user", "I only write Python, tabs not spaces")
    >>> memory.get_messages()
    [{'role': 'user', 'content': 'I only write Python, tabs not spaces'}]
"""

from agentmem import errors
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
from agentmem.errors import *
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


def __getattr__(name: str) -> type:
    # PEP 562: LangChainEmbedder / LlamaIndexEmbedder moved to langchain_agentmem /
    # llamaindex_agentmem; the old names warn and import them lazily until agentmem 0.3.
    from agentmem.embeddings.adapters import warn_moved

    return warn_moved(__name__, name)
