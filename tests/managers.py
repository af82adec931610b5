"""A :class:`MemoryManager` on real local stores for the tests: SQLite sessions and a Qdrant
Edge long-term store under one directory, with the deterministic hashing embedder.

Example:
    >>> import tempfile
    >>> with edge_manager(Path(tempfile.mkdtemp()), consolidate_every_tokens=None) as mem:
    ...     mem.user_id, mem.session_id
    ('alice', 's1')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentmem import LongTermMemory, MemoryManager
from agentmem.stores import QdrantEdgeStore, SQLiteSessionStore
from tests.fake_embedder import HashingEmbedder

__all__ = ["edge_manager"]


def edge_manager(
    root: Path,
    *,
    user_id: str = "alice",
    session_id: str = "s1",
    dimension: int = 32,
    **options: Any,
) -> MemoryManager:
    """``MemoryManager.from_parts`` over ``root/sessions.db`` and ``root/long_term``;
    closing the manager closes both stores (like ``MemoryManager.open``). ``options`` go to
    ``from_parts``."""
    sessions = SQLiteSessionStore(root / "sessions.db")
    store = QdrantEdgeStore(root / "long_term", dimension=dimension)
    long_term = LongTermMemory(store=store, embedder=HashingEmbedder(dimension), user_id=user_id)
    return MemoryManager.from_parts(
        user_id=user_id,
        session_id=session_id,
        sessions=sessions,
        long_term=long_term,
        on_close=[store.close, sessions.close],
        **options,
    )
