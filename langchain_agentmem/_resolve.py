"""Which user's and session's memory a LangChain / LangGraph call uses (private helpers).

A :class:`~agentmem.MemoryService` serves many users: the user comes from the run's
runtime context (``create_agent(..., context_schema=Ctx)`` then
``agent.invoke(..., context=Ctx(user_id=...))``), the session from the LangGraph
``thread_id`` (``config={"configurable": {"thread_id": ...}}``). A single
:class:`~agentmem.MemoryManager` serves its own user and session, whatever the call says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from agentmem import MemoryManager, MemoryService
from agentmem.errors import ConfigurationError

__all__ = ["MemorySource", "check_source", "resolve_manager", "thread_id_of", "user_id_of"]

MemorySource: TypeAlias = "MemoryService | MemoryManager"


def check_source(memory: object, who: str) -> MemoryService | MemoryManager:
    """``memory`` if it is a service or a manager, else a clear error."""
    if not isinstance(memory, (MemoryService, MemoryManager)):
        msg = (
            f"{who} takes an agentmem MemoryService (many users) or MemoryManager (one user "
            f"and session), got {type(memory).__name__}"
        )
        raise ConfigurationError(msg)
    return memory


def user_id_of(context: object, key: str) -> str:
    """The user id in a runtime context: attribute or mapping key ``key``.

    Raises:
        ConfigurationError: No context, no such key, or an empty / non-string value.
    """
    value = context.get(key) if isinstance(context, Mapping) else getattr(context, key, None)
    if value is None:
        msg = (
            f"the agent's runtime context has no {key!r}: build the agent with "
            f"create_agent(..., context_schema=Ctx) and call it with "
            f"context=Ctx({key}=...), or pass a single MemoryManager for one user"
        )
        raise ConfigurationError(msg)
    if not isinstance(value, str) or not value.strip():
        msg = f"the runtime context's {key!r} must be a non-empty string, got {value!r}"
        raise ConfigurationError(msg)
    return value


def thread_id_of(config: Mapping[str, Any] | None) -> str | None:
    """The LangGraph ``thread_id`` of a run's config, if any."""
    configurable = (config or {}).get("configurable") or {}
    value = configurable.get("thread_id")
    return None if value is None else str(value)


def resolve_manager(
    memory: MemoryService | MemoryManager,
    *,
    context: object,
    thread_id: str | None,
    user_key: str,
) -> MemoryManager:
    """The manager of the call's user and thread (the manager itself in one-user mode).

    Raises:
        ConfigurationError: The user is missing from the context, or there is no thread.
        InvalidSessionIdError: The ``thread_id`` is not a valid session id.
        InvalidValueError: The user id is not a valid id.
    """
    if isinstance(memory, MemoryManager):
        return memory
    user_id = user_id_of(context, user_key)
    if thread_id is None:
        msg = (
            "no LangGraph thread_id for this run: call the agent with "
            "config={'configurable': {'thread_id': ...}} so each conversation has its session"
        )
        raise ConfigurationError(msg)
    return memory.manager(user_id, thread_id)
