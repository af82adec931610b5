"""Unit tests are offline: no network sockets (Unix sockets stay allowed for asyncio).

The controller's unit tests run :class:`LongTermMemory` on an in-process store with the
hashing embedder (``long_term``, ``memory_store``, ``embedder``, ``clock``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
import pytest_socket

from agentmem.long_term import LongTermMemory
from agentmem.long_term.store import MemoryStore
from agentmem.stores.in_memory import InMemoryMemoryStore
from tests.fake_embedder import HashingEmbedder


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    pytest_socket.disable_socket(allow_unix_socket=True)
    yield
    pytest_socket.enable_socket()


# -- long-term memory on an in-process store (controller unit tests) ------------------------

DIM = 512  # the hashing embedder's buckets: few collisions between unrelated words
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


class Clock:
    """A settable clock, aware UTC."""

    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memory_store() -> Iterator[MemoryStore]:
    """An empty in-process long-term store (no engine, no files)."""
    store = InMemoryMemoryStore(dimension=DIM)
    yield store
    store.close()


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(DIM)


@pytest.fixture
def long_term(memory_store: MemoryStore, embedder: HashingEmbedder, clock: Clock) -> LongTermMemory:
    """Alice's long-term memory on ``memory_store`` (closing it is the fixture's job)."""
    return LongTermMemory(
        store=memory_store, embedder=embedder, user_id="alice", clock=clock, on_close=lambda: None
    )
