"""The last contexts a service built, kept for the inspector: a small bounded ring.

:class:`~agentmem.MemoryService` keeps one (``service.recent_contexts``); each of its
handles adds the context it builds, with who asked and for what. The oldest entries fall
out, so the ring costs a fixed amount of memory however long the service runs.

Example:
    >>> ring = RecentContexts(maxlen=2)
    >>> for query in ("a", "b", "c"):
    ...     ring.add("alice", "s1", query, None)  # a context would go where None is
    >>> [entry.query for entry in ring.of_user("alice")]
    ['c', 'b']
"""

from __future__ import annotations

import threading
from collections import deque
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from agentmem.types import utcnow

if TYPE_CHECKING:
    from agentmem.context import BuiltContext

__all__ = ["RecentContext", "RecentContexts"]


class RecentContext(NamedTuple):
    """One built context and who built it, for what, when."""

    built_at: datetime
    user_id: str
    session_id: str
    query: str
    context: BuiltContext | None


class RecentContexts:
    """The last ``maxlen`` contexts built (thread-safe)."""

    def __init__(self, maxlen: int = 50) -> None:
        self._ring: deque[RecentContext] = deque(maxlen=maxlen)
        self._lock = threading.Lock()

    def add(self, user_id: str, session_id: str, query: str, context: BuiltContext | None) -> None:
        """Keep this context (dropping the oldest when the ring is full)."""
        with self._lock:
            self._ring.append(RecentContext(utcnow(), user_id, session_id, query, context))

    def of_user(self, user_id: str) -> list[RecentContext]:
        """This user's contexts still in the ring, newest first."""
        with self._lock:
            return [entry for entry in reversed(self._ring) if entry.user_id == user_id]

    def users(self) -> set[str]:
        """The users with a context in the ring."""
        with self._lock:
            return {entry.user_id for entry in self._ring}

    def __len__(self) -> int:
        return len(self._ring)
