"""How the conformance suite opens each backend, in this process or in a spawned child.

Everything here is importable by name and picklable, because ``multiprocessing`` with the
``spawn`` context re-imports it in each child.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentmem.stores.base import SessionStore, StoredMessage
from agentmem.stores.memory import InMemorySessionStore
from agentmem.stores.sqlite import SQLiteSessionStore
from agentmem.types import Message

__all__ = [
    "BACKENDS",
    "StoreSpec",
    "append_worker",
    "assert_writers_intact",
    "open_redis_store",
    "tagged",
]

BACKENDS = ("memory", "sqlite", "redis")


def open_redis_store(url: str, prefix: str) -> SessionStore:
    """The one place that builds a Redis store; adjust here if its constructor changes."""
    from agentmem.stores.redis import RedisSessionStore

    store: SessionStore = RedisSessionStore.from_url(url, prefix=prefix)
    return store


@dataclass(frozen=True)
class StoreSpec:
    """Where a backend's data lives, so another handle (or process) can open the same store.

    ``target`` is the SQLite path or the Redis URL; ``prefix`` the Redis key prefix.
    """

    backend: str
    target: str = ""
    prefix: str = ""

    @property
    def reopenable(self) -> bool:
        return self.backend != "memory"

    def open(self) -> SessionStore:
        if self.backend == "memory":
            return InMemorySessionStore()
        if self.backend == "sqlite":
            return SQLiteSessionStore(self.target)
        if self.backend == "redis":
            return open_redis_store(self.target, self.prefix)
        msg = f"unknown backend {self.backend!r}"
        raise ValueError(msg)


def tagged(writer: int, index: int) -> Message:
    """The message writer ``writer`` appends as its ``index``-th."""
    return Message(
        role="user", content=f"w{writer}-{index}", metadata={"writer": writer, "i": index}
    )


def append_worker(
    spec: StoreSpec, session_id: str, writer: int, n: int, barrier: Any, results: Any
) -> None:
    """Child-process body: open the store, wait for the others, append ``n`` tagged messages."""
    store = spec.open()
    try:
        barrier.wait(timeout=120)
        seqs = [store.append(session_id, [tagged(writer, i)])[0] for i in range(n)]
        results.put((writer, seqs))
    finally:
        store.close()


def assert_writers_intact(
    log: Sequence[StoredMessage], writers: int, n: int, returned: dict[int, list[int]]
) -> None:
    """No message lost or duplicated, each writer's order kept, seqs strictly increasing."""
    assert len(log) == writers * n
    seqs = [m.seq for m in log]
    assert all(a < b for a, b in itertools.pairwise(seqs)), "seqs are not strictly increasing"
    tags = [(m.message.metadata["writer"], m.message.metadata["i"]) for m in log]
    assert sorted(tags) == [(w, i) for w in range(writers) for i in range(n)]
    for w in range(writers):
        assert [i for tw, i in tags if tw == w] == list(range(n)), f"writer {w} out of order"
    # The seq append() returned for each message is the seq it is stored under.
    by_tag = {tag: m.seq for tag, m in zip(tags, log, strict=True)}
    for w, got in returned.items():
        assert got == [by_tag[(w, i)] for i in range(n)]
