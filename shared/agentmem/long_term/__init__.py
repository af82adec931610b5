"""Long-term memory: memories that outlive sessions, on Qdrant.

Example:
    >>> from agentmem.long_term import RecordFilter
    >>> RecordFilter(memory_types=("semantic",)).include_history
    False
"""

from agentmem.long_term.episodic import Episode, EpisodicMemory
from agentmem.long_term.memory import MAX_CONTENT_CHARS, LongTermMemory
from agentmem.long_term.qdrant_edge import QdrantEdgeStore
from agentmem.long_term.ranking import RankingConfig, SearchMode
from agentmem.long_term.records import (
    MEMORY_TYPES,
    MemoryRecord,
    MemoryType,
    RecordFilter,
    Relation,
    Scope,
    content_hash,
)
from agentmem.long_term.semantic import RelatedConcept, SemanticMemory
from agentmem.long_term.store import Boost, MemoryStore, ScoredRecord, SparseVector

__all__ = [
    "MAX_CONTENT_CHARS",
    "MEMORY_TYPES",
    "Boost",
    "Episode",
    "EpisodicMemory",
    "LongTermMemory",
    "MemoryRecord",
    "MemoryStore",
    "MemoryType",
    "QdrantClientStore",
    "QdrantEdgeStore",
    "RankingConfig",
    "RecordFilter",
    "RelatedConcept",
    "Relation",
    "Scope",
    "ScoredRecord",
    "SearchMode",
    "SemanticMemory",
    "SparseVector",
    "content_hash",
]


def __getattr__(name: str) -> object:
    # QdrantClientStore needs the optional ``qdrant-client`` package: import it on first use.
    if name == "QdrantClientStore":
        from agentmem.long_term.qdrant_client import QdrantClientStore

        return QdrantClientStore
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
