"""Long-term memories in a Python object: a :class:`~agentmem.long_term.store.MemoryStore`
for tests and throwaway agents, with no engine and no files.

It behaves like the other memory stores, with the same validation, scoping (users, agents,
sessions, spaces), filters, pagination, ranking and explanations, because it shares that
logic with them (:class:`~agentmem.stores.engine.MemoryStoreEngine`). Only its I/O steps
are its own, and its searches are exact:

* dense search: cosine similarity over every matching record (numpy), best first;
* BM25: the dot product of the document's term-frequency weights with the query's,
  each query weight multiplied by the IDF modifier Qdrant uses
  ``ln(1 + (N - n + 0.5) / (n + 0.5))`` (``N`` records in the store, ``n`` of them with the
  term); only records sharing a term with the query are hits.

Fusion, boosts and explanations are the one ranker's (:mod:`agentmem.long_term.ranking`).

Everything lives in the object and is gone when it is: nothing to reopen. Calls are
serialized by a lock and run inline, for async callers too (they are CPU work of
microseconds to milliseconds).

Example:
    >>> from agentmem.long_term.records import MemoryRecord, Scope
    >>> from agentmem.sparse import SparseVector
    >>> store = InMemoryMemoryStore(dimension=2)
    >>> alice = Scope(user_id="alice")
    >>> tea = MemoryRecord.new("likes green tea", "semantic", scope=alice)
    >>> jazz = MemoryRecord.new("plays jazz piano", "semantic", scope=alice)
    >>> store.upsert([tea, jazz], [[1.0, 0.0], [0.0, 1.0]],
    ...              [SparseVector([1, 2], [1.0, 1.0]), SparseVector([3], [1.0])])
    >>> [h.record.content for h in store.search(alice, dense=[0.9, 0.1], limit=1)]
    ['likes green tea']
    >>> store.count(Scope(user_id="bob"))
    0
"""

from __future__ import annotations

import copy
import math
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np

from agentmem._sansio import Program, blocking, drive
from agentmem._util.checks import check_int
from agentmem.long_term.store import SparseVector
from agentmem.stores import points as pt
from agentmem.stores.engine import MemoryStoreEngine

__all__ = ["InMemoryMemoryStore"]

T = TypeVar("T")


class _Point:
    __slots__ = ("dense", "payload", "sparse")

    def __init__(self, dense: np.ndarray, sparse: dict[int, float], payload: dict[str, Any]):
        self.dense, self.sparse, self.payload = dense, sparse, payload


class InMemoryMemoryStore(MemoryStoreEngine):
    """A :class:`~agentmem.long_term.store.MemoryStore` held in memory (see the module).

    Args:
        dimension: Size of the dense vectors (the embedder's dimension).

    Example:
        >>> store = InMemoryMemoryStore(dimension=384)
        >>> store.dimension
        384
        >>> store.close()
    """

    def __init__(self, *, dimension: int) -> None:
        check_int(dimension, "dimension", expected="must be a positive integer")
        self._dimension = dimension
        self._points: dict[str, _Point] = {}
        self._df: Counter[int] = Counter()  # how many points hold each sparse term
        self._lock = threading.RLock()
        self._embedder_record: dict[str, Any] | None = None

    def read_embedder_record(self) -> dict[str, Any] | None:
        """Whose vectors the store holds (see :mod:`agentmem.long_term.embedder_record`)."""
        with self._lock:
            self._check_open()
            return copy.deepcopy(self._embedder_record)

    def write_embedder_record(self, record: Mapping[str, Any]) -> None:
        """Replace the embedder record."""
        with self._lock:
            self._check_open()
            self._embedder_record = copy.deepcopy(dict(record))

    def close(self) -> None:
        """Drop the memories. Further use raises ``StoreClosedError`` (idempotent)."""
        with self._lock:
            self._closed = True
            self._points.clear()
            self._df.clear()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"InMemoryMemoryStore(dimension={self._dimension}, {len(self._points)} points, {state})"
        )

    # -- how operations run: inline, under the lock, for sync and async callers ---------

    def _session(self, program: Program[T]) -> Program[T]:
        return self._drive(program)
        yield from ()  # a program that asks for nothing: it runs whole, without a thread hop

    def _drive(self, program: Program[T]) -> T:
        with self._lock:
            self._check_open()
            return drive(program)

    # -- the steps (their blocking requests run inline: see _session) --------------------

    def _write_points(self, points: list[pt.PointData]) -> Program[None]:
        yield from blocking(self._put, points)

    def _put(self, points: list[pt.PointData]) -> None:
        for p in points:
            dense = np.asarray(p.dense, dtype=np.float64)
            sparse = dict(zip(p.sparse.indices, p.sparse.values, strict=True))
            self._drop([p.id])
            self._points[p.id] = _Point(
                dense / np.linalg.norm(dense), sparse, copy.deepcopy(p.payload)
            )
            self._df.update(sparse.keys())

    def _delete_points(self, ids: list[str]) -> Program[None]:
        yield from blocking(self._drop, ids)

    def _drop(self, ids: list[str]) -> None:
        for i in ids:
            point = self._points.pop(i, None)
            if point is not None:
                self._df.subtract(point.sparse.keys())

    def _set_payload(
        self, patches: list[pt.Patch], where: tuple[pt.Condition, ...] = ()
    ) -> Program[None]:
        yield from blocking(self._patch, patches, where)

    def _patch(self, patches: list[pt.Patch], where: tuple[pt.Condition, ...]) -> None:
        for p in patches:
            point = self._points.get(p.id)
            if point is None or not _matches(p.id, point.payload, where):
                continue
            point.payload.update(copy.deepcopy(p.set))
            for key in p.unset:
                point.payload.pop(key, None)

    def _retrieve(self, ids: list[str]) -> Program[list[pt.Hit]]:
        return (yield from blocking(self._get_hits, ids))

    def _get_hits(self, ids: list[str]) -> list[pt.Hit]:
        return [self._hit(i, 0.0) for i in ids if i in self._points]

    def _retrieve_dense(self, ids: list[str]) -> Program[list[tuple[pt.Hit, list[float]]]]:
        return (yield from blocking(self._get_dense, ids))

    def _get_dense(self, ids: list[str]) -> list[tuple[pt.Hit, list[float]]]:
        return [
            (self._hit(i, 0.0), self._points[i].dense.tolist()) for i in ids if i in self._points
        ]

    def _query(self, spec: pt.QuerySpec) -> Program[list[pt.Hit]]:
        return (yield from blocking(self._search, spec))

    def _scroll(self, spec: pt.ScrollSpec) -> Program[tuple[list[pt.Hit], str | None]]:
        return (yield from blocking(self._page, spec))

    def _count(self, conds: tuple[pt.Condition, ...]) -> Program[int]:
        return len((yield from blocking(self._matching, conds)))

    def _facet(
        self, key: str, conds: tuple[pt.Condition, ...], limit: int
    ) -> Program[dict[str, int]]:
        ids = yield from blocking(self._matching, conds)
        counts: Counter[str] = Counter()
        for i in ids:
            value = self._points[i].payload.get(key)
            values = value if isinstance(value, list) else [value]
            # A list counts the point under each distinct value, as Qdrant's facets do.
            counts.update({str(v) for v in values if v is not None})
        # The most frequent first (as Qdrant answers a facet), ties by value.
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit])

    # -- search, pages ------------------------------------------------------------------

    def _hit(self, point_id: str, score: float, payload: bool = True) -> pt.Hit:
        data = copy.deepcopy(self._points[point_id].payload) if payload else {}
        return pt.Hit(point_id, score, data)

    def _matching(self, conds: tuple[pt.Condition, ...]) -> list[str]:
        return sorted(i for i, p in self._points.items() if _matches(i, p.payload, conds))

    def _search(self, spec: pt.QuerySpec) -> list[pt.Hit]:
        ids = self._matching(spec.conditions)
        if isinstance(spec.vector, SparseVector):
            ranked = self._sparse_scores(ids, spec.vector)
        else:
            ranked = self._dense_scores(ids, spec.vector)
        return [self._hit(i, s, payload=False) for i, s in ranked[: spec.limit]]

    def _dense_scores(self, ids: list[str], query: list[float]) -> list[tuple[str, float]]:
        if not ids:
            return []
        q = np.asarray(query, dtype=np.float64)
        matrix = np.stack([self._points[i].dense for i in ids])
        scores = matrix @ (q / np.linalg.norm(q))
        return _best(zip(ids, (float(s) for s in scores), strict=True))

    def _sparse_scores(self, ids: list[str], query: SparseVector) -> list[tuple[str, float]]:
        total = len(self._points)
        weights: dict[int, float] = {}
        for term, value in zip(query.indices, query.values, strict=True):
            df = self._df[term]
            weights[term] = value * math.log((total - df + 0.5) / (df + 0.5) + 1)
        scored = []
        for i in ids:
            doc = self._points[i].sparse
            shared = [t for t in weights if t in doc]
            if shared:
                scored.append((i, sum(weights[t] * doc[t] for t in shared)))
        return _best(scored)

    def _page(self, spec: pt.ScrollSpec) -> tuple[list[pt.Hit], str | None]:
        ids = self._matching(spec.conditions)
        limit, offset, order = spec.limit, spec.offset, spec.order
        if order is None:
            start = 0 if offset is None else sum(1 for i in ids if i < offset)
            page = ids[start : start + limit]
            rest = ids[start + limit : start + limit + 1]
            return [self._hit(i, 0.0) for i in page], rest[0] if rest else None
        valued: list[tuple[str, float]] = []
        for i in ids:
            value = self._points[i].payload.get(order.key)
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue  # points without the field are left out of ordered scrolls
            if order.start is None or value <= order.start:
                valued.append((i, float(value)))
        return [self._hit(i, v) for i, v in _best(valued)[:limit]], None


def _best(scored: Any) -> list[tuple[str, float]]:
    """Highest score first; ties by id, so every call orders them alike."""
    return sorted(scored, key=lambda item: (-item[1], item[0]))


def _matches(point_id: str, payload: Mapping[str, Any], conds: tuple[pt.Condition, ...]) -> bool:
    return all(_condition(point_id, payload, c) for c in conds)


def _condition(point_id: str, payload: Mapping[str, Any], cond: pt.Condition) -> bool:
    if isinstance(cond, pt.HasIds):
        return point_id in cond.ids
    value = _lookup(payload, cond.key)
    if isinstance(cond, pt.IsEmpty):
        return value is None or value == []
    if isinstance(cond, pt.Range):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return (cond.gte is None or value >= cond.gte) and (cond.lt is None or value < cond.lt)
    values = value if isinstance(value, list) else [value]
    # Qdrant matches by type too: True is not 1, 2.0 is not the keyword or integer 2.
    return any(type(v) is type(c) and v == c for v in values for c in cond.values)


def _lookup(payload: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted payload path (``metadata.lang``), or None."""
    value: Any = payload
    for part in key.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value
