"""What a LlamaIndex block or retriever reads from: a service, a manager, or a tier (private).

A :class:`~agentmem.MemoryService` serves many users, so it needs the ``user_id`` (and, for
working memory, the ``session_id``); a :class:`~agentmem.MemoryManager` is one user's and
session's; a tier is used as it is.
"""

from __future__ import annotations

from typing import TypeVar

from agentmem import LongTermMemory, MemoryManager, MemoryService, WorkingMemory
from agentmem.errors import ConfigurationError

__all__ = ["long_term_of", "working_of"]

TierT = TypeVar("TierT", LongTermMemory, WorkingMemory)


def long_term_of(
    source: LongTermMemory | MemoryManager | MemoryService, user_id: str | None, who: str
) -> LongTermMemory:
    """The long-term memory ``source`` gives for ``user_id``."""
    if isinstance(source, MemoryService):
        if user_id is None:
            msg = f"{who} on a MemoryService needs user_id=: whose memories to use"
            raise ConfigurationError(msg)
        return source.long_term(user_id)
    if isinstance(source, MemoryManager):
        return source.long_term
    return _as_tier(source, LongTermMemory, who, "(with user_id=)")


def working_of(
    source: WorkingMemory | MemoryManager | MemoryService,
    user_id: str | None,
    session_id: str | None,
    who: str,
) -> WorkingMemory:
    """The working memory ``source`` gives for ``user_id``'s ``session_id``."""
    if isinstance(source, MemoryService):
        if user_id is None or session_id is None:
            msg = f"{who} on a MemoryService needs user_id= and session_id=: whose task state"
            raise ConfigurationError(msg)
        return source.manager(user_id, session_id).working
    if isinstance(source, MemoryManager):
        return source.working
    return _as_tier(source, WorkingMemory, who, "(with user_id= and session_id=)")


def _as_tier(source: object, tier: type[TierT], who: str, service_needs: str) -> TierT:
    """``source`` if it is a ``tier``, else a ConfigurationError listing what ``who`` takes."""
    if isinstance(source, tier):
        return source
    msg = (
        f"{who} takes an agentmem MemoryService {service_needs}, MemoryManager or "
        f"{tier.__name__}, got {type(source).__name__}"
    )
    raise ConfigurationError(msg)
