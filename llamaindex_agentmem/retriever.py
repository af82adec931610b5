"""``AgentMemoryRetriever``: long-term memories as a LlamaIndex ``BaseRetriever``.

Each hit becomes a ``NodeWithScore`` whose ``TextNode`` has the memory's id and content,
and agentmem's metadata (type, subtype, importance, timestamps, provenance, score parts);
the ids and score parts are hidden from the LLM and the embedder. Use it wherever
LlamaIndex takes a retriever: ``RetrieverQueryEngine``, ``CondensePlusContextChatEngine``,
``QueryFusionRetriever``, a ``RetrieverTool``.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from agentmem import LongTermMemory, MemoryManager, MemoryService, RecordFilter, ScoredRecord
from agentmem.integration import SearchMode
from llamaindex_agentmem._sources import long_term_of

__all__ = ["AgentMemoryRetriever", "to_node"]

_HIDDEN = (
    "memory_id",
    "user_id",
    "agent_id",
    "session_id",
    "source_session_id",
    "source_message_ids",
    "content_hash",
    "access_count",
    "last_accessed_at",
    "score_components",
)


def to_node(hit: ScoredRecord) -> NodeWithScore:
    """One search hit as a scored LlamaIndex node."""
    r = hit.record
    metadata: dict[str, Any] = {
        "memory_id": r.id,
        "memory_type": r.memory_type,
        "subtype": r.subtype,
        "importance": r.importance,
        "created_at": r.created_at.isoformat(),
        "last_accessed_at": r.last_accessed_at.isoformat() if r.last_accessed_at else None,
        "access_count": r.access_count,
        "user_id": r.scope.user_id,
        "agent_id": r.scope.agent_id,
        "session_id": r.scope.session_id,
        "source_session_id": r.source_session_id,
        "source_message_ids": list(r.source_message_ids),
        "content_hash": r.content_hash,
        "concept": r.concept,
        "pinned": r.pinned,
        "score_components": dict(hit.components),
        **{f"meta_{k}": v for k, v in r.metadata.items()},
    }
    node = TextNode(
        id_=r.id,
        text=r.content,
        metadata=metadata,
        excluded_llm_metadata_keys=list(_HIDDEN),
        excluded_embed_metadata_keys=list(metadata),
    )
    return NodeWithScore(node=node, score=hit.score)


class AgentMemoryRetriever(BaseRetriever):
    """Retrieves a user's long-term memories for LlamaIndex.

    Args:
        memory: A :class:`~agentmem.LongTermMemory`, a :class:`~agentmem.MemoryManager`
            (its long-term memory is used) or a :class:`~agentmem.MemoryService` with
            ``user_id``.
        user_id: Whose memories, when ``memory`` is a service.
        top_k: How many memories per query.
        memory_type: Only ``episodic``, ``semantic`` or ``procedural`` memories.
        min_importance: Only memories at least this important.
        mode: ``hybrid`` (dense + BM25), ``dense`` or ``bm25`` (default: the memory's).
        filter: More conditions (:class:`~agentmem.long_term.RecordFilter`).
        **kwargs: ``callback_manager``, ``verbose`` (``BaseRetriever``'s).

    Example:
        >>> retriever = AgentMemoryRetriever(memory.manager, top_k=3)  # doctest: +SKIP
        >>> [n.node.get_content() for n in retriever.retrieve("indentation?")]  # doctest: +SKIP
        ['The user prefers tabs for indentation']
    """

    def __init__(
        self,
        memory: LongTermMemory | MemoryManager | MemoryService,
        *,
        user_id: str | None = None,
        top_k: int = 5,
        memory_type: str | None = None,
        min_importance: float = 0.0,
        mode: SearchMode | None = None,
        filter: RecordFilter | None = None,
        **kwargs: Any,
    ) -> None:
        long_term = long_term_of(memory, user_id, "AgentMemoryRetriever")
        super().__init__(**kwargs)
        self.memory = long_term
        self.top_k = top_k
        self.memory_type = memory_type
        self.min_importance = min_importance
        self.mode = mode
        self.filter = filter

    def _options(self) -> dict[str, Any]:
        return {
            "memory_type": self.memory_type,
            "min_importance": self.min_importance,
            "mode": self.mode,
            "filter": self.filter,
            "explain": True,
        }

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if not query_bundle.query_str.strip():
            return []
        hits = self.memory.retrieve_memories(query_bundle.query_str, self.top_k, **self._options())
        return [to_node(h) for h in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if not query_bundle.query_str.strip():
            return []
        hits = await self.memory.aretrieve_memories(
            query_bundle.query_str, self.top_k, **self._options()
        )
        return [to_node(h) for h in hits]
