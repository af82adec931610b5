"""Session stores: where messages, summaries, watermarks and working memory live.

Example:
    >>> from agentmem.stores import InMemorySessionStore, SessionStore
    >>> isinstance(InMemorySessionStore(), SessionStore)
    True
"""

from agentmem.stores.base import (
    SessionStore,
    StoredMessage,
    SyncSessionStore,
    dump_state,
    validate_session_id,
)
from agentmem.stores.memory import InMemorySessionStore

__all__ = [
    "InMemorySessionStore",
    "SessionStore",
    "StoredMessage",
    "SyncSessionStore",
    "dump_state",
    "validate_session_id",
]
