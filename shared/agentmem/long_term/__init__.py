"""Long-term memory: memories that outlive sessions, on Qdrant.

Names are imported on first use (PEP 562): ``from agentmem.long_term import RecordFilter``
loads the record models, not the tier, its embedders or its ranking.

Example:
    >>> from agentmem.long_term import RecordFilter
    >>> RecordFilter(memory_types=("semantic",)).include_history
    False
"""

from typing import TYPE_CHECKING

from agentmem._util.lazy import lazy_exports

if TYPE_CHECKING:  # the static names, for type checkers and IDEs
    from agentmem.long_term.episodic import Episode, EpisodicMemory
    from agentmem.long_term.expansion import ExpansionConfig
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
    "ExpansionConfig",
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

_EXPORTS = {  # each name -> the module the TYPE_CHECKING block imports it from
    "MAX_CONTENT_CHARS": "agentmem.long_term.memory",
    "MEMORY_TYPES": "agentmem.long_term.records",
    "Boost": "agentmem.long_term.store",
    "Episode": "agentmem.long_term.episodic",
    "EpisodicMemory": "agentmem.long_term.episodic",
    "ExpansionConfig": "agentmem.long_term.expansion",
    "LongTermMemory": "agentmem.long_term.memory",
    "MemoryRecord": "agentmem.long_term.records",
    "MemoryStore": "agentmem.long_term.store",
    "MemoryType": "agentmem.long_term.records",
    "RankingConfig": "agentmem.long_term.ranking",
    "RecordFilter": "agentmem.long_term.records",
    "RelatedConcept": "agentmem.long_term.semantic",
    "Relation": "agentmem.long_term.records",
    "Scope": "agentmem.long_term.records",
    "ScoredRecord": "agentmem.long_term.store",
    "SearchMode": "agentmem.long_term.ranking",
    "SemanticMemory": "agentmem.long_term.semantic",
    "SparseVector": "agentmem.long_term.store",
    "content_hash": "agentmem.long_term.records",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
