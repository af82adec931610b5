"""One session store of each kind, for tests parametrized over the kinds."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from agentmem.stores.base import SessionStore
from agentmem.stores.memory import InMemorySessionStore
from agentmem.stores.redis import RedisSessionStore
from agentmem.stores.sqlite import SQLiteSessionStore

__all__ = ["open_session_store"]


def open_session_store(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> SessionStore:
    """A new store of ``kind``: ``memory``, ``sqlite`` (under ``tmp_path``), ``redis`` or
    ``redis-cluster`` (the session's server fixtures, under a key prefix of its own)."""
    if kind == "memory":
        return InMemorySessionStore()
    if kind == "sqlite":
        return SQLiteSessionStore(tmp_path / "sessions.db")
    url = request.getfixturevalue("redis_url" if kind == "redis" else "redis_cluster_url")
    return RedisSessionStore.from_url(url, prefix=f"t{uuid.uuid4().hex[:12]}")
