"""Storage backends, below the tiers: session stores (messages, summaries, watermarks and
working memory) and the long-term stores: the Qdrant ones (:mod:`agentmem.stores.qdrant`)
and :class:`~agentmem.stores.in_memory.InMemoryMemoryStore` (tests, throwaway agents).

Example:
    >>> from agentmem.stores import InMemorySessionStore, SessionStore
    >>> isinstance(InMemorySessionStore(), SessionStore)
    True
"""

from agentmem.stores import base
from agentmem.stores.base import *
from agentmem.stores.memory import InMemorySessionStore
from agentmem.stores.sqlite import SQLiteSessionStore

__all__ = [
    "InMemoryMemoryStore",
    "InMemorySessionStore",
    "QdrantClientStore",
    "QdrantEdgeStore",
    "RedisSessionStore",
    "SQLiteSessionStore",
    *base.__all__,
]


def __getattr__(name: str) -> object:
    # RedisSessionStore needs the optional ``redis`` package: import it on first use only.
    if name == "RedisSessionStore":
        from agentmem.stores.redis import RedisSessionStore

        return RedisSessionStore
    if name == "InMemoryMemoryStore":
        from agentmem.stores.in_memory import InMemoryMemoryStore

        return InMemoryMemoryStore
    if name in ("QdrantEdgeStore", "QdrantClientStore"):
        from agentmem.stores import qdrant

        return getattr(qdrant, name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
