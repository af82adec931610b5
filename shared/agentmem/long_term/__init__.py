"""Long-term memory: memories that outlive sessions, on Qdrant.

Example:
    >>> from agentmem.long_term import RecordFilter
    >>> RecordFilter(memory_types=("semantic",)).include_history
    False
"""

from agentmem._moved import moved_names
from agentmem.long_term.episodic import Episode, EpisodicMemory
from agentmem.long_term.memory import MAX_CONTENT_CHARS, LongTermMemory
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


# The Qdrant stores moved to agentmem.stores.qdrant (the tier reaches them only through
# the MemoryStore protocol); the old names warn for one release.
__getattr__ = moved_names(
    __name__,
    {
        "QdrantEdgeStore": "agentmem.stores.qdrant.edge",
        "QdrantClientStore": "agentmem.stores.qdrant.client",
    },
)
