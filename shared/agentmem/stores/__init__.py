"""Storage backends, below the tiers: session stores (messages, summaries, watermarks and
working memory) and the long-term stores: the Qdrant ones (:mod:`agentmem.stores.qdrant`)
and :class:`~agentmem.stores.in_memory.InMemoryMemoryStore` (tests, throwaway agents).

Names are imported on first use (PEP 562), so ``RedisSessionStore`` (the optional
``redis`` package) and the Qdrant stores cost nothing until they are used.

Example:
    >>> from agentmem.stores import InMemorySessionStore, SessionStore
    >>> isinstance(InMemorySessionStore(), SessionStore)
    True
"""

from typing import TYPE_CHECKING

from agentmem._util.lazy import lazy_exports

if TYPE_CHECKING:  # the static names, for type checkers and IDEs
    from agentmem.stores.base import (
        MAX_SESSION_ID_LENGTH,
        ExclusiveAppends,
        SessionStore,
        StoredMessage,
        SyncSessionStore,
        check_messages,
        check_state_key,
        dump_state,
        validate_session_id,
    )
    from agentmem.stores.in_memory import InMemoryMemoryStore
    from agentmem.stores.memory import InMemorySessionStore
    from agentmem.stores.qdrant import QdrantClientStore, QdrantEdgeStore
    from agentmem.stores.redis import RedisSessionStore
    from agentmem.stores.sqlite import SQLiteSessionStore

__all__ = [
    "MAX_SESSION_ID_LENGTH",
    "ExclusiveAppends",
    "InMemoryMemoryStore",
    "InMemorySessionStore",
    "QdrantClientStore",
    "QdrantEdgeStore",
    "RedisSessionStore",
    "SQLiteSessionStore",
    "SessionStore",
    "StoredMessage",
    "SyncSessionStore",
    "check_messages",
    "check_state_key",
    "dump_state",
    "validate_session_id",
]

_EXPORTS = {  # each name -> the module the TYPE_CHECKING block imports it from
    "MAX_SESSION_ID_LENGTH": "agentmem.stores.base",
    "ExclusiveAppends": "agentmem.stores.base",
    "InMemoryMemoryStore": "agentmem.stores.in_memory",
    "InMemorySessionStore": "agentmem.stores.memory",
    "QdrantClientStore": "agentmem.stores.qdrant",
    "QdrantEdgeStore": "agentmem.stores.qdrant",
    "RedisSessionStore": "agentmem.stores.redis",
    "SQLiteSessionStore": "agentmem.stores.sqlite",
    "SessionStore": "agentmem.stores.base",
    "StoredMessage": "agentmem.stores.base",
    "SyncSessionStore": "agentmem.stores.base",
    "check_messages": "agentmem.stores.base",
    "check_state_key": "agentmem.stores.base",
    "dump_state": "agentmem.stores.base",
    "validate_session_id": "agentmem.stores.base",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
