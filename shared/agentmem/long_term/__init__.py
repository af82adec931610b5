"""Long-term memory: memories that outlive sessions, on Qdrant.

Names are imported on first use (PEP 562): ``from agentmem.long_term import RecordFilter``
loads the record models, not the tier, its embedders or its ranking.

Example:
    >>> from agentmem.long_term import RecordFilter
    >>> RecordFilter(memory_types=("semantic",)).include_history
    False
"""

from typing import TYPE_CHECKING

from agentmem._lazy import lazy_exports

if TYPE_CHECKING:  # the static names, for type checkers and IDEs
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "agentmem.long_term.episodic": ("Episode", "EpisodicMemory"),
        "agentmem.long_term.memory": ("MAX_CONTENT_CHARS", "LongTermMemory"),
        "agentmem.long_term.ranking": ("RankingConfig", "SearchMode"),
        "agentmem.long_term.records": (
            "MEMORY_TYPES",
            "MemoryRecord",
            "MemoryType",
            "RecordFilter",
            "Relation",
            "Scope",
            "content_hash",
        ),
        "agentmem.long_term.semantic": ("RelatedConcept", "SemanticMemory"),
        "agentmem.long_term.store": ("Boost", "MemoryStore", "ScoredRecord", "SparseVector"),
    },
    # The Qdrant stores moved to agentmem.stores.qdrant (the tier reaches them only
    # through the MemoryStore protocol); the old names warn for one release.
    moved={
        "QdrantEdgeStore": "agentmem.stores.qdrant.edge",
        "QdrantClientStore": "agentmem.stores.qdrant.client",
    },
)
