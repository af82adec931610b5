"""Shared helpers of the LangChain integration tests.

Tests not marked ``integration`` run offline: network sockets are disabled for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_socket

from agentmem import MemoryManager
from agentmem.long_term import LongTermMemory
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from agentmem.stores.sqlite import SQLiteSessionStore
from tests.fakes import HashingEmbedder

DIM = 256


@pytest.fixture(autouse=True)
def _offline_unless_integration(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("integration") is not None:
        yield
        return
    pytest_socket.disable_socket(allow_unix_socket=True)
    yield
    pytest_socket.enable_socket()


class Home:
    """One on-disk agentmem home: SQLite sessions + one Qdrant Edge store (single-process)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sessions = SQLiteSessionStore(root / "sessions.db")
        self.edge = QdrantEdgeStore(root / "long_term", dimension=DIM)
        self.embedder = HashingEmbedder(DIM)

    def manager(self, session_id: str, user_id: str = "alice", **kw: object) -> MemoryManager:
        long_term = LongTermMemory(store=self.edge, embedder=self.embedder, user_id=user_id)
        return MemoryManager.from_parts(
            user_id=user_id,
            session_id=session_id,
            sessions=self.sessions,
            long_term=long_term,
            **kw,  # type: ignore[arg-type]
        )

    def close(self) -> None:
        self.edge.close()
        self.sessions.close()


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    h = Home(tmp_path)
    yield h
    h.close()
