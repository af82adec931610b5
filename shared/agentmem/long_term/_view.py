"""What the typed views on a long-term memory share (private): the memory they write to,
and its store and retrieve programs, composed into the views' own twins.

Example:
    >>> from agentmem.long_term.episodic import EpisodicMemory
    >>> issubclass(EpisodicMemory, MemoryView)
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentmem._sansio import Program, call
from agentmem.long_term.memory import LongTermMemory
from agentmem.long_term.records import MemoryRecord
from agentmem.long_term.store import ScoredRecord

__all__ = ["MemoryView"]


class MemoryView:
    """Base of :class:`~agentmem.long_term.episodic.EpisodicMemory` and
    :class:`~agentmem.long_term.semantic.SemanticMemory`: one kind of memory on a
    :class:`LongTermMemory`.

    The helpers run the memory's own programs (looked up on its class, so a subclass of
    :class:`LongTermMemory` that overrides ``store_memory`` or ``retrieve_memories`` is
    honoured), so a view's twin stays one program in sync and async mode.

    Example:
        >>> MemoryView(long_term).memory is long_term  # doctest: +SKIP
        True
    """

    def __init__(self, memory: LongTermMemory) -> None:
        self.memory = memory

    def _store(
        self,
        content: str,
        memory_type: str,
        metadata: Mapping[str, Any] | None,
        importance: float,
        **fields: Any,
    ) -> Program[MemoryRecord]:
        """``memory.store_memory`` as a request (an override or wrapper of it is honoured)."""
        m = self.memory
        return (
            yield from call(
                m.store_memory,
                m.astore_memory,
                content,
                memory_type,
                metadata,
                importance,
                **fields,
            )
        )

    def _retrieve(self, query: str, top_k: int, memory_type: str) -> Program[list[ScoredRecord]]:
        """``memory.retrieve_memories`` of one memory type, as a request."""
        m = self.memory
        return (
            yield from call(
                m.retrieve_memories, m.aretrieve_memories, query, top_k, memory_type=memory_type
            )
        )
