"""Bulk writes of random records to a Qdrant Edge store, for the tests that fill a store past
its auto-index threshold.

Example:
    >>> import tempfile
    >>> from agentmem.stores.qdrant.edge import QdrantEdgeStore
    >>> with QdrantEdgeStore(tempfile.mkdtemp(), dimension=4) as store:
    ...     records = write_random(store, 3, dimension=4, tag="note", seed=0, batch=2)
    ...     len(store.get(ALICE, [r.id for r in records])), records[2].content
    (3, 'note 2')
"""

from __future__ import annotations

import numpy as np

from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.store import SparseVector
from agentmem.stores.qdrant.edge import QdrantEdgeStore

__all__ = ["ALICE", "write_random"]

ALICE = Scope(user_id="alice")


def write_random(
    store: QdrantEdgeStore,
    n: int,
    *,
    dimension: int,
    tag: str,
    seed: int,
    batch: int,
    scope: Scope = ALICE,
) -> list[MemoryRecord]:
    """Upsert ``n`` semantic records ``"<tag> <i>"`` of ``scope``, ``batch`` per upsert, with
    normal random dense vectors (seeded) and a one-term sparse vector each; returns them."""
    rng = np.random.default_rng(seed)
    records = [MemoryRecord.new(f"{tag} {i}", "semantic", scope=scope) for i in range(n)]
    for start in range(0, n, batch):
        chunk = records[start : start + batch]
        store.upsert(
            chunk,
            rng.normal(size=(len(chunk), dimension)).tolist(),
            [SparseVector([i], [1.0]) for i in range(len(chunk))],
        )
    return records
