"""Long-term memories in Qdrant through ``qdrant-client``: a server, a cluster, or local mode.

Same collection schema as the Edge store (named dense ``"dense"``, sparse ``"bm25"`` with
``Modifier.IDF``, payload indexes with ``is_tenant`` on ``user_id``), so memories can move
between the two.

Async twins: pass ``async_client=`` (an :class:`~qdrant_client.AsyncQdrantClient` on the same
server) and they run natively on it. Otherwise they run the sync client in a worker thread
(``agentmem._sansio.blocking``). In local mode (``":memory:"`` or a path) a sync and an
async client never share data, so there the sync client serves both.

Example:
    >>> from qdrant_client import QdrantClient
    >>> from agentmem.long_term.records import MemoryRecord, Scope
    >>> from agentmem.long_term.store import SparseVector
    >>> store = QdrantClientStore(QdrantClient(":memory:"), dimension=2)
    >>> rec = MemoryRecord.new("likes tea", "semantic", scope=Scope(user_id="bob"))
    >>> store.upsert([rec], [[0.0, 1.0]], [SparseVector([3], [1.0])])
    >>> store.count(Scope(user_id="bob"))
    1
    >>> store.close()
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from qdrant_client import AsyncQdrantClient, QdrantClient
from qdrant_client import models as m

from agentmem._sansio import Program, call
from agentmem._util.checks import check_int
from agentmem.errors import ConfigurationError
from agentmem.long_term.store import DENSE_VECTOR, SPARSE_VECTOR, SparseVector
from agentmem.stores import points as pt
from agentmem.stores.engine import MemoryStoreEngine

__all__ = ["QdrantClientStore"]

T = TypeVar("T")

_EMBEDDER_KEY = "agentmem_embedder"  # the collection metadata key of the embedder record


class QdrantClientStore(MemoryStoreEngine):
    """A :class:`~agentmem.long_term.store.MemoryStore` on a Qdrant collection.

    Args:
        client: A ready :class:`QdrantClient` (the store does not close an injected client).
        async_client: A ready :class:`AsyncQdrantClient` on the same server, for native async.
        collection: Collection name; created with the schema when missing.
        dimension: Size of the dense vectors (the embedder's dimension). An existing
            collection of another size raises :class:`~agentmem.errors.DimensionMismatchError`.
        url: Server URL, when no client is given (``api_key`` goes with it).
        api_key: API key for ``url``.
        location: ``":memory:"`` (tests) or another qdrant-client location, when no client
            and no url is given.
    """

    def __init__(
        self,
        client: QdrantClient | None = None,
        *,
        async_client: AsyncQdrantClient | None = None,
        collection: str = "agentmem_memories",
        dimension: int,
        url: str | None = None,
        api_key: str | None = None,
        location: str | None = None,
    ) -> None:
        check_int(dimension, "dimension", expected="must be a positive integer")
        if client is not None and (url is not None or location is not None):
            msg = "pass either client= or url=/location=, not both"
            raise ConfigurationError(msg)
        self._owns_client = client is None
        self._owns_async = False
        if client is None:
            if url is None and location is None:
                msg = "QdrantClientStore needs client=, url= or location= (':memory:' for tests)"
                raise ConfigurationError(msg)
            client = QdrantClient(url=url, api_key=api_key) if url else QdrantClient(location)
            if url and async_client is None:
                async_client = AsyncQdrantClient(url=url, api_key=api_key)
                self._owns_async = True
        self._client = client
        self._async = async_client
        self._native_async = async_client is not None
        self._collection = collection
        self._dimension = dimension
        options: dict[str, Any] = getattr(client, "init_options", {}) or {}
        # Local mode has no payload indexes and always searches exactly; asking warns.
        self._local = options.get("location") == ":memory:" or options.get("path") is not None
        if self._local and async_client is not None:
            msg = (
                "a local-mode QdrantClient and an AsyncQdrantClient never share data; pass "
                "only client= (async methods then run it in a worker thread)"
            )
            raise ConfigurationError(msg)
        # qdrant-client's local mode is plain Python without locking: concurrent calls from
        # threads corrupt its in-memory indexes (an IndexError inside its payload filters was
        # seen with 8 writer threads), so this store serializes them. Servers need no lock.
        self._local_lock: threading.RLock | None = threading.RLock() if self._local else None
        self._ensure_collection()
        self._backfill_spaces()

    @property
    def collection(self) -> str:
        """Name of the Qdrant collection."""
        return self._collection

    def _ensure_collection(self) -> None:
        where = f"Qdrant collection {self._collection!r}"
        if self._client.collection_exists(self._collection):
            vectors = self._client.get_collection(self._collection).config.params.vectors
            if not isinstance(vectors, dict) or DENSE_VECTOR not in vectors:
                msg = f"{where} has no {DENSE_VECTOR!r} dense vector; it was not made by agentmem"
                raise ConfigurationError(msg)
            pt.check_dimension(vectors[DENSE_VECTOR].size, self._dimension, where)
        else:
            self._client.create_collection(
                self._collection,
                vectors_config={
                    DENSE_VECTOR: m.VectorParams(size=self._dimension, distance=m.Distance.COSINE)
                },
                sparse_vectors_config={
                    SPARSE_VECTOR: m.SparseVectorParams(modifier=m.Modifier.IDF)
                },
            )
        if self._local:
            return
        schemas: list[tuple[str, Any]] = [
            (pt.TENANT_FIELD, m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=True))
        ]
        schemas += [(k, m.PayloadSchemaType.KEYWORD) for k in pt.KEYWORD_FIELDS]
        schemas += [(k, m.PayloadSchemaType.BOOL) for k in pt.BOOL_FIELDS]
        schemas += [(k, m.PayloadSchemaType.FLOAT) for k in pt.FLOAT_FIELDS]
        existing = self._client.get_collection(self._collection).payload_schema
        for name, schema in schemas:
            if name not in existing:
                self._client.create_payload_index(self._collection, name, schema, wait=True)

    def read_embedder_record(self) -> dict[str, Any] | None:
        """Whose vectors the collection holds (see
        :mod:`agentmem.long_term.embedder_record`): the ``agentmem_embedder`` key of the
        collection's metadata (Qdrant >= 1.16; older servers keep none)."""
        self._check_open()
        with self._local_lock or contextlib.nullcontext():
            metadata = self._client.get_collection(self._collection).config.metadata
        record = (metadata or {}).get(_EMBEDDER_KEY)
        return dict(record) if isinstance(record, dict) else None

    def write_embedder_record(self, record: Mapping[str, Any]) -> None:
        """Replace the embedder record in the collection's metadata."""
        self._check_open()
        with self._local_lock or contextlib.nullcontext():
            self._client.update_collection(self._collection, metadata={_EMBEDDER_KEY: dict(record)})

    def close(self) -> None:
        """Release the store (closes clients it built; injected clients stay open)."""
        if self._closed:
            return
        self._closed = True
        if self._owns_client:
            self._client.close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        self.close()
        if self._owns_async and self._async is not None:
            await self._async.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        name, dim = self._collection, self._dimension
        return f"QdrantClientStore(collection={name!r}, dimension={dim}, {state})"

    # -- request building ----------------------------------------------------------------

    def _query_kwargs(self, spec: pt.QuerySpec) -> dict[str, Any]:
        params = m.SearchParams(exact=True) if spec.exact and not self._local else None
        query: Any = spec.vector
        using = DENSE_VECTOR
        if isinstance(spec.vector, SparseVector):
            query = m.SparseVector(indices=spec.vector.indices, values=spec.vector.values)
            using = SPARSE_VECTOR
        return {
            "query": query,
            "using": using,
            "query_filter": _filter(spec.conditions),
            "search_params": params,
            "limit": spec.limit,
        }

    def _scroll_kwargs(self, spec: pt.ScrollSpec) -> dict[str, Any]:
        order = spec.order
        return {
            "scroll_filter": _filter(spec.conditions),
            "limit": spec.limit,
            "offset": spec.offset,
            "with_payload": True,
            "with_vectors": False,
            "order_by": None
            if order is None
            else m.OrderBy(key=order.key, direction=m.Direction.DESC, start_from=order.start),
        }

    # -- the steps (one program each; sync client or async client) ----------------------

    def _drive(self, program: Program[T]) -> T:
        if self._local_lock is None:
            return super()._drive(program)
        with self._local_lock:
            return super()._drive(program)

    @property
    def _aclient(self) -> AsyncQdrantClient:
        # Without an async client, operations are driven blocking only (see _session), so
        # its methods are named in requests but never called.
        return self._async if self._async is not None else _NO_ASYNC_CLIENT

    def _write_points(self, points: list[pt.PointData]) -> Program[None]:
        c, ac = self._client, self._aclient
        yield from call(c.upsert, ac.upsert, self._collection, _points(points), wait=True)

    def _retrieve(self, ids: list[str]) -> Program[list[pt.Hit]]:
        c, ac = self._client, self._aclient
        rows = yield from call(
            c.retrieve, ac.retrieve, self._collection, ids, with_payload=True, with_vectors=False
        )
        return [pt.Hit(str(r.id), 0.0, dict(r.payload or {})) for r in rows]

    def _retrieve_dense(self, ids: list[str]) -> Program[list[tuple[pt.Hit, list[float]]]]:
        c, ac = self._client, self._aclient
        rows = yield from call(
            c.retrieve,
            ac.retrieve,
            self._collection,
            ids,
            with_payload=True,
            with_vectors=[DENSE_VECTOR],
        )
        out = []
        for r in rows:
            vectors = r.vector if isinstance(r.vector, dict) else {}
            dense = vectors.get(DENSE_VECTOR)
            if isinstance(dense, list) and dense and isinstance(dense[0], float | int):
                out.append(
                    (pt.Hit(str(r.id), 0.0, dict(r.payload or {})), [float(v) for v in dense])
                )
        return out

    def _delete_points(self, ids: list[str]) -> Program[None]:
        c, ac = self._client, self._aclient
        selector = m.PointIdsList(points=list(ids))
        yield from call(c.delete, ac.delete, self._collection, selector, wait=True)

    def _set_payload(
        self, patches: list[pt.Patch], where: tuple[pt.Condition, ...] = ()
    ) -> Program[None]:
        c, ac = self._client, self._aclient
        for ids, set_, unset in pt.group_patches(patches):
            points: m.PointsSelector = (
                m.FilterSelector(filter=_filter((pt.HasIds(tuple(ids)), *where)))
                if where
                else m.PointIdsList(points=[*ids])
            )
            if set_:
                yield from call(
                    c.set_payload, ac.set_payload, self._collection, set_, points=points, wait=True
                )
            if unset:
                yield from call(
                    c.delete_payload,
                    ac.delete_payload,
                    self._collection,
                    unset,
                    points=points,
                    wait=True,
                )

    def _query(self, spec: pt.QuerySpec) -> Program[list[pt.Hit]]:
        c, ac = self._client, self._aclient
        res = yield from call(
            c.query_points,
            ac.query_points,
            self._collection,
            with_payload=False,
            **self._query_kwargs(spec),
        )
        return _hits(res.points)

    def _scroll(self, spec: pt.ScrollSpec) -> Program[tuple[list[pt.Hit], str | None]]:
        c, ac = self._client, self._aclient
        kwargs = self._scroll_kwargs(spec)
        rows, nxt = yield from call(c.scroll, ac.scroll, self._collection, **kwargs)
        return _rows(rows), None if nxt is None else str(nxt)

    def _count(self, conds: tuple[pt.Condition, ...]) -> Program[int]:
        c, ac = self._client, self._aclient
        flt = _filter(conds)
        res = yield from call(c.count, ac.count, self._collection, count_filter=flt, exact=True)
        return int(res.count)

    def _facet(
        self, key: str, conds: tuple[pt.Condition, ...], limit: int
    ) -> Program[dict[str, int]]:
        c, ac = self._client, self._aclient
        flt = _filter(conds)
        res = yield from call(
            c.facet, ac.facet, self._collection, key, facet_filter=flt, limit=limit, exact=True
        )
        return {str(hit.value): int(hit.count) for hit in res.hits}


class _NoAsyncClient:
    def __getattr__(self, name: str) -> Any:
        async def missing(*args: Any, **kwargs: Any) -> Any:
            msg = "this QdrantClientStore has no async client"
            raise ConfigurationError(msg)

        return missing


_NO_ASYNC_CLIENT = cast(AsyncQdrantClient, _NoAsyncClient())


def _points(points: list[pt.PointData]) -> list[m.PointStruct]:
    return [
        m.PointStruct(
            id=p.id,
            vector={
                DENSE_VECTOR: p.dense,
                SPARSE_VECTOR: m.SparseVector(indices=p.sparse.indices, values=p.sparse.values),
            },
            payload=p.payload,
        )
        for p in points
    ]


def _hits(points: list[m.ScoredPoint]) -> list[pt.Hit]:
    return [pt.Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in points]


def _rows(rows: list[m.Record]) -> list[pt.Hit]:
    return [pt.Hit(str(r.id), float(r.order_value or 0.0), dict(r.payload or {})) for r in rows]


def _condition(cond: pt.Condition) -> m.Condition:
    if isinstance(cond, pt.HasIds):
        return m.HasIdCondition(has_id=list(cond.ids))
    if isinstance(cond, pt.Range):
        return m.FieldCondition(key=cond.key, range=m.Range(gte=cond.gte, lt=cond.lt))
    if isinstance(cond, pt.IsEmpty):
        return m.IsEmptyCondition(is_empty=m.PayloadField(key=cond.key))
    if len(cond.values) == 1:
        return m.FieldCondition(key=cond.key, match=m.MatchValue(value=cond.values[0]))
    return m.FieldCondition(key=cond.key, match=m.MatchAny(any=list(cond.values)))  # type: ignore[arg-type]


def _filter(conds: tuple[pt.Condition, ...]) -> m.Filter:
    return m.Filter(must=[_condition(c) for c in conds])
