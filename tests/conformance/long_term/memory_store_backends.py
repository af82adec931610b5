"""Backends of the long-term store conformance suite, and the data its tests build.

:class:`MemorySpec` says where a backend keeps its memories (``memory`` =
:class:`~agentmem.stores.in_memory.InMemoryMemoryStore`, ``edge`` on a temp dir, ``local`` =
``QdrantClient(":memory:")``, ``native`` = the same with its async twins run natively on an
async client (:class:`AsyncOverSync`), ``server`` = ``QDRANT_URL``, one collection per test)
and in
which mode the test calls it: ``sync`` gives the store itself, ``async`` an
:class:`AsyncFace` whose sync names await the store's async twins (``store.search(...)`` is
``await store.asearch(...)``) on a background event loop. The fixtures in ``conftest.py``
build one per backend and mode, so every test is written once.

Vectors are small random unit vectors and hand-made sparse vectors, so the suite does not
depend on any embedder.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from qdrant_client import QdrantClient

from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.store import MemoryStore, SparseVector
from agentmem.stores.qdrant.client import QdrantClientStore
from agentmem.stores.registry import open_memory_store
from tests.conformance._async_face import AsyncFace as _AsyncFace

__all__ = [
    "DIM",
    "MODES",
    "URLS",
    "AsyncFace",
    "AsyncOverSync",
    "MemorySpec",
    "mem",
    "put",
    "sparse_of",
    "unit",
]

DIM = 8
MODES = ("sync", "async")

#: The backends opened by URL, through the store registry (:mod:`agentmem.stores.registry`):
#: adding one to the suite is one line here (``{path}``: a temp dir of the test). ``local``
#: and ``native`` share one qdrant-client object between opens, so they are built below.
URLS = {
    "memory": "memory://",
    "edge": "edge://{path}",
    "server": "qdrant+{url}",  # QDRANT_URL (http://...)
}


class AsyncFace(_AsyncFace):
    """A memory store called through its async twins (see ``tests/conformance/_async_face.py``)."""

    TWINNED = frozenset(
        {"upsert", "get", "get_vectors", "delete", "set_fields", "search", "scroll", "count"}
        | {"set_fields_each", "fused_search", "close", "count_by"}
    )


class AsyncOverSync:
    """An async qdrant client over a sync one (local mode has no shared async client): each
    method awaits the sync client's, so a store given it runs its native async path."""

    def __init__(self, client: QdrantClient) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        async def run(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return run


@dataclass
class MemorySpec:
    """How to open (and reopen) one backend's store."""

    backend: str
    path: Path | None = None
    url: str | None = None
    collection: str = field(default_factory=lambda: f"conf_{uuid.uuid4().hex[:12]}")
    client: Any = None
    mode: str = "sync"

    @property
    def reopenable(self) -> bool:
        if self.backend == "memory":
            return False
        return self.backend not in ("local", "native") or self.client is not None

    def open(self, dimension: int = DIM) -> MemoryStore:
        """A store on this spec, called in its mode."""
        store = self._open(dimension)
        return cast("MemoryStore", AsyncFace(store)) if self.mode == "async" else store

    def _open(self, dimension: int) -> MemoryStore:
        if self.backend in URLS:  # through the store registry, as every opener does
            url = URLS[self.backend].format(path=self.path, url=self.url)
            options = {"collection": self.collection} if self.backend == "server" else {}
            return open_memory_store(url, dimension=dimension, **options)
        if self.backend in ("local", "native"):
            if self.client is None:
                self.client = QdrantClient(":memory:")
            store = QdrantClientStore(self.client, collection=self.collection, dimension=dimension)
            if self.backend == "native":
                store._async = cast("Any", AsyncOverSync(self.client))
                store._native_async = True
            return store
        msg = f"unknown backend {self.backend!r}"
        raise ValueError(msg)

    def drop(self) -> None:
        if self.backend == "server":
            client = QdrantClient(url=self.url)
            client.delete_collection(self.collection)
            client.close()
        elif self.client is not None:
            self.client.close()


def unit(rng: np.random.Generator, dim: int = DIM) -> list[float]:
    """A random unit vector."""
    v = rng.normal(size=dim)
    return [float(x) for x in v / np.linalg.norm(v)]


def sparse_of(*terms: int) -> SparseVector:
    """A sparse vector with term frequency 1 for each term index."""
    return SparseVector(list(terms), [1.0] * len(terms))


def put(
    store: MemoryStore,
    records: list[MemoryRecord],
    dense: list[list[float]] | None = None,
    sparse: list[SparseVector] | None = None,
    *,
    seed: int = 0,
) -> list[MemoryRecord]:
    """Upsert ``records`` with given or random vectors; returns them."""
    rng = np.random.default_rng(seed)
    dense = dense if dense is not None else [unit(rng) for _ in records]
    sparse = sparse if sparse is not None else [sparse_of(1000 + i) for i in range(len(records))]
    store.upsert(records, dense, sparse)
    return records


def mem(content: str, user: str = "alice", **fields: Any) -> MemoryRecord:
    """A semantic memory of ``user`` (scope fields and record fields as keywords)."""
    scope = Scope(
        user_id=user,
        agent_id=fields.pop("agent_id", None),
        session_id=fields.pop("session_id", None),
    )
    return MemoryRecord.new(content, fields.pop("memory_type", "semantic"), scope=scope, **fields)
