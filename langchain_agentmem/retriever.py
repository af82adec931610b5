"""``AgentMemoryRetriever``: long-term memories as LangChain ``Document``s.

Each document's ``page_content`` is the memory's content; its metadata holds ``id``,
``score``, ``memory_type``, ``subtype``, ``importance``, ``created_at``,
``last_accessed_at``, ``access_count``, ``user_id``, ``agent_id``, ``session_id``,
``concept``, ``is_current`` and the memory's own ``metadata``.

Example:
    >>> retriever = AgentMemoryRetriever(memory=manager.long_term, k=3)  # doctest: +SKIP
    >>> docs = retriever.invoke("how does alice indent?")  # doctest: +SKIP
    >>> docs[0].metadata["memory_type"], docs[0].metadata["score"]  # doctest: +SKIP
    ('semantic', 0.83)
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from agentmem import LongTermMemory, RecordFilter, ScoredRecord
from agentmem.errors import InvalidValueError
from agentmem.integration import MemoryType, SearchMode

__all__ = ["AgentMemoryRetriever", "record_to_document"]

_SEARCH_OPTIONS = frozenset({"k", "memory_type", "min_importance", "filter", "mode"})


def record_to_document(hit: ScoredRecord) -> Document:
    """One search hit as a ``Document`` (see the module docstring for the metadata)."""
    record = hit.record
    return Document(
        page_content=record.content,
        id=record.id,
        metadata={
            "id": record.id,
            "score": hit.score,
            "memory_type": record.memory_type,
            "subtype": record.subtype,
            "importance": record.importance,
            "created_at": record.created_at.isoformat(),
            "last_accessed_at": (
                None if record.last_accessed_at is None else record.last_accessed_at.isoformat()
            ),
            "access_count": record.access_count,
            "user_id": record.scope.user_id,
            "agent_id": record.scope.agent_id,
            "session_id": record.scope.session_id,
            "concept": record.concept,
            "is_current": record.is_current,
            "metadata": dict(record.metadata),
        },
    )


class AgentMemoryRetriever(BaseRetriever):
    """Search a user's long-term memory (hybrid dense + BM25 by default).

    Attributes:
        memory: The user's :class:`~agentmem.long_term.LongTermMemory` (scope included).
        k: How many documents to return (overridable per call: ``invoke(q, k=2)``).
        memory_type: Only this type (``episodic``, ``semantic``, ``procedural``).
        min_importance: Only memories at least this important.
        filter: More conditions (:class:`~agentmem.long_term.records.RecordFilter`),
            for example ``RecordFilter(subtypes=("preference",), metadata={"topic": "code"})``.
        mode: ``hybrid``, ``dense`` or ``bm25`` (default: the memory's ranking config).
        touch: Record the access on returned memories (feeds recency and forgetting).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: LongTermMemory
    k: int = Field(default=4, ge=1, le=1000)
    memory_type: MemoryType | None = None
    min_importance: float = Field(default=0.0, ge=0.0, le=1.0)
    filter: RecordFilter | None = None
    mode: SearchMode | None = None
    touch: bool = True

    def _options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        unknown = set(kwargs) - _SEARCH_OPTIONS
        if unknown:
            msg = (
                f"unknown retriever option(s) {sorted(unknown)!r}; "
                f"expected some of {sorted(_SEARCH_OPTIONS)!r}"
            )
            raise InvalidValueError(msg)
        filt = kwargs.get("filter", self.filter)
        if isinstance(filt, dict):
            filt = RecordFilter.model_validate(filt)
        return {
            "top_k": kwargs.get("k", self.k),
            "memory_type": kwargs.get("memory_type", self.memory_type),
            "min_importance": kwargs.get("min_importance", self.min_importance),
            "filter": filt,
            "mode": kwargs.get("mode", self.mode),
            "touch": self.touch,
        }

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        hits = self.memory.retrieve_memories(query, **self._options(kwargs))
        return [record_to_document(hit) for hit in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        hits = await self.memory.aretrieve_memories(query, **self._options(kwargs))
        return [record_to_document(hit) for hit in hits]
