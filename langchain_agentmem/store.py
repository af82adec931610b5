"""``AgentMemoryStore``: a LangGraph ``BaseStore`` on agentmem's long-term store (Qdrant).

Use it wherever LangGraph takes a store: ``create_agent(..., store=AgentMemoryStore(...))``,
``graph.compile(store=...)``, LangMem's memory tools. Items live as long-term records (see
:mod:`langchain_agentmem._store_codec` for the mapping): namespaces map to scopes (the first
label is the scope's user), semantic search runs in Qdrant (cosine over the fields named by
the ``index`` config), value filters support ``$eq $ne $gt $gte $lt $lte`` and nested dicts,
and items with a TTL disappear when it runs out (``sweep_ttl`` deletes them for good).

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from agentmem.stores.qdrant.edge import QdrantEdgeStore
    >>> edge = QdrantEdgeStore(tmp_path / "lt", dimension=16)  # doctest: +SKIP
    >>> store = AgentMemoryStore(edge, index={"dims": 16,  # doctest: +SKIP
    ...     "embed": DeterministicFakeEmbedding(size=16), "fields": ["text"]})
    >>> store.put(("alice", "prefs"), "indent", {"text": "tabs, not spaces"})  # doctest: +SKIP
    >>> store.search(("alice",), query="indentation")[0].key  # doctest: +SKIP
    'indent'
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import cast

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    validate_op_namespace,
)

from agentmem import Bm25Encoder, Embedder, MemoryRecord, MemoryService, RecordFilter, Scope
from agentmem.errors import ConfigurationError, InvalidValueError
from agentmem.integration import MemoryStore
from agentmem.types import utcnow
from langchain_agentmem._store_checks import check_op
from langchain_agentmem._store_codec import (
    REGISTRY_SCOPE,
    expired,
    index_texts,
    item_filter,
    item_id,
    item_metadata,
    record_item,
    root_scope,
    scope_for,
)
from langchain_agentmem._store_filters import matches_filter, matches_namespace
from langchain_agentmem.embeddings import LangChainEmbedder

__all__ = ["AgentMemoryStore"]

_PAGE = 512


class AgentMemoryStore(BaseStore):
    """LangGraph long-term store backed by an agentmem :class:`MemoryStore`.

    Bad arguments are refused before anything is read or written (see :meth:`batch`):
    ``search(limit=-1)``, a negative ``offset`` or ``list_namespaces(max_depth=-1)`` raise
    :class:`~agentmem.errors.ConfigurationError`, unstorable text or values
    :class:`~agentmem.errors.InvalidValueError`. Namespaces LangGraph itself refuses (an
    empty label, a label with a dot, ``put`` into ``()``) raise LangGraph's
    ``InvalidNamespaceError`` from ``BaseStore`` first, as in every LangGraph store.

    Args:
        store: The long-term store (``QdrantEdgeStore`` on disk, ``QdrantClientStore``).
        index: LangGraph index config: ``dims``, ``embed`` (an ``Embeddings``, a function
            or a provider string) and ``fields`` (JSON paths to embed; default ``["$"]``,
            the whole value). Without it, ``query`` is ignored, as in LangGraph's stores.
        embedder: An agentmem embedder to use instead of ``index["embed"]``.
        ttl: LangGraph TTL config (``default_ttl`` minutes, ``refresh_on_read``).
        clock: Zero-argument callable returning an aware ``datetime`` (default: UTC now).

    Raises:
        ConfigurationError: ``dims`` differs from the store's dimension, or no embedder.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        store: MemoryStore,
        *,
        index: IndexConfig | None = None,
        embedder: Embedder | None = None,
        ttl: TTLConfig | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.store = store
        self.index_config = index
        self.ttl_config = ttl
        self._clock = clock if clock is not None else utcnow
        self._fields: list[str] = list((index or {}).get("fields") or ["$"])
        if embedder is None and index is not None:
            embed = index.get("embed")
            if embed is None:
                msg = "index config needs 'embed' (an Embeddings or a function), or pass embedder="
                raise ConfigurationError(msg)
            lc: Embeddings = ensure_embeddings(embed)
            embedder = LangChainEmbedder(lc, dimension=index.get("dims"))
        self.embedder = embedder
        dims = (index or {}).get("dims")
        if dims is not None and dims != store.dimension:
            msg = f"index dims is {dims} but the store holds {store.dimension}-dimensional vectors"
            raise ConfigurationError(msg)
        self._sparse = Bm25Encoder()
        self._known_roots: set[str] = set()

    @classmethod
    def from_service(
        cls,
        service: MemoryService,
        *,
        fields: Sequence[str] | None = None,
        ttl: TTLConfig | None = None,
    ) -> AgentMemoryStore:
        """A LangGraph store on a :class:`~agentmem.MemoryService`'s long-term store, with
        semantic search by the service's embedder (the model is not loaded twice).

        Args:
            service: The process's memory service (it keeps owning the store).
            fields: JSON paths of each value to embed (default ``["$"]``, the whole value).
            ttl: LangGraph TTL config.

        Example:
            >>> store = AgentMemoryStore.from_service(service, fields=["text"])  # doctest: +SKIP
            >>> agent = create_agent(model, store=store, ...)  # doctest: +SKIP
        """
        index = cast(
            IndexConfig,
            {"dims": service.embedder.dimension, "fields": list(fields or ["$"])},
        )
        return cls(
            service.memory_store,
            index=index,
            embedder=service.embedder,
            ttl=ttl,
            clock=service.clock,
        )

    # -- batch API -------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run get/put/search/list operations in order; results align with ``ops``.

        Every op is checked before any runs (a get or search can write too: it deletes
        expired items and refreshes TTLs), so a refused op leaves the store as it was.

        Raises:
            InvalidNamespaceError: LangGraph's own check, not an agentmem error: a label
                empty, not a string, or holding ``.`` or a NUL byte; for ``put``, also an
                empty namespace or the root ``langgraph``. ``BaseStore``'s public methods
                (``put``, ``search``, ``list_namespaces``, ...) make it before they build
                the op, so it comes first. A ``ValueError``, like every agentmem error
                here.
            InvalidValueError: An op holds text or a value that cannot be stored.
            ConfigurationError: ``limit`` or ``offset`` is not an integer >= 0, or
                ``max_depth`` is neither ``None`` nor an integer >= 1.
        """
        checked = list(ops)
        for op in checked:
            validate_op_namespace(op)
            check_op(op)  # before _put: registering a root writes, and labels are hashed
        results: list[Result] = []
        for op in checked:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list(op))
            else:
                msg = f"unknown store operation {type(op).__name__}"
                raise InvalidValueError(msg)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch` (runs it in the executor; the Edge engine is blocking)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations ------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        if not op.namespace:
            return None
        scope = scope_for(op.namespace)
        found = self.store.get(scope, [item_id(op.namespace, op.key)])
        if not found:
            return None
        record = found[0]
        now = self._clock()
        if expired(record, now):
            self.store.delete(scope, [record.id])
            return None
        if op.refresh_ttl:
            record = self._refresh(scope, record, now)
        item = record_item(record)
        return item if item.namespace == op.namespace and item.key == op.key else None

    def _refresh(self, scope: Scope, record: MemoryRecord, now: datetime) -> MemoryRecord:
        ttl = record.metadata.get("lg_ttl")
        if ttl is None:
            return record
        meta = {**record.metadata, "lg_expires": now.timestamp() + float(ttl) * 60.0}
        self.store.set_fields(scope, [record.id], {"metadata": meta})
        return record.replace(metadata=meta)

    def _put(self, op: PutOp) -> None:
        if not op.namespace:
            msg = "a store namespace needs at least one label, for example ('alice', 'memories')"
            raise InvalidValueError(msg)
        if op.namespace[0] == "langgraph":
            msg = "the namespace root 'langgraph' is reserved by LangGraph; use another label"
            raise InvalidValueError(msg)
        scope = scope_for(op.namespace)
        rid = item_id(op.namespace, op.key)
        if op.value is None:
            self.store.delete(scope, [rid])
            return
        if not isinstance(op.value, dict):
            msg = f"store values must be dicts, got {type(op.value).__name__}"
            raise InvalidValueError(msg)
        self._register(op.namespace[0])
        now = self._clock()
        existing = self.store.get(scope, [rid])
        texts = self._texts(op)
        ttl = op.ttl if isinstance(op.ttl, (int, float)) else None
        meta = item_metadata(op.namespace, op.key, op.value, indexed=bool(texts), now=now, ttl=ttl)
        content = "\n".join(texts) if texts else f"{op.key}"
        record = MemoryRecord(
            id=rid,
            content=content if content.strip() else "(empty key)",
            memory_type="semantic",
            subtype="langgraph_item",
            scope=scope,
            created_at=existing[0].created_at if existing else now,
            metadata=meta,
        )
        dense = self._dense([record.content])[0] if texts else self._unit()
        self.store.upsert([record], [dense], self._sparse.encode_documents([record.content]))

    def _texts(self, op: PutOp) -> list[str]:
        if op.index is False or self.index_config is None or op.value is None:
            return []
        fields = self._fields if op.index is None else list(op.index)
        return index_texts(op.value, fields)

    def _dense(self, texts: list[str]) -> list[list[float]]:
        if self.embedder is None:
            msg = "this store has no embedder; pass index={'dims': ..., 'embed': ...}"
            raise ConfigurationError(msg)
        return self.embedder.embed_documents(texts)

    def _unit(self) -> list[float]:
        # Not-indexed items never take part in vector search; any valid vector will do.
        return [1.0] + [0.0] * (self.store.dimension - 1)

    def _register(self, root: str) -> None:
        if root in self._known_roots:
            return
        scope = REGISTRY_SCOPE
        rid = item_id(("__root__",), root)
        if not self.store.get(scope, [rid]):
            record = MemoryRecord(
                id=rid,
                content="namespace root",
                memory_type="semantic",
                scope=scope,
                metadata={"lg_root": root},
            )
            self.store.upsert([record], [self._unit()], self._sparse.encode_documents(["root"]))
        self._known_roots.add(root)

    def _roots(self) -> list[str]:
        records = _scroll_all(self.store, REGISTRY_SCOPE, RecordFilter(include_history=True))
        return sorted({str(r.metadata["lg_root"]) for r in records})

    def _scopes(self, prefix: Sequence[str]) -> list[Scope]:
        if prefix:
            return [scope_for(prefix)]
        return sorted({root_scope(r) for r in self._roots()}, key=lambda s: s.user_id)

    def _live(
        self, scope: Scope, records: Iterable[MemoryRecord], now: datetime
    ) -> list[MemoryRecord]:
        alive: list[MemoryRecord] = []
        dead: list[MemoryRecord] = []
        for record in records:
            (dead if expired(record, now) else alive).append(record)
        if dead:
            self.store.delete(scope, [r.id for r in dead])
        return alive

    def _search(self, op: SearchOp) -> list[SearchItem]:
        now = self._clock()
        prefix = op.namespace_prefix
        want = max(op.offset, 0) + max(op.limit, 0)
        scored: list[tuple[float | None, MemoryRecord, Scope]] = []
        seen: set[str] = set()
        if op.query and self.index_config is not None and self.embedder is not None:
            query = self.embedder.embed_query(op.query)
            for scope in self._scopes(prefix):
                total = self.store.count(scope, filter=item_filter(prefix, indexed=True))
                limit = total if op.filter else min(total, want)
                if limit <= 0:
                    continue
                hits = self.store.search(
                    scope,
                    dense=query,
                    filter=item_filter(prefix, indexed=True),
                    limit=limit,
                    exact=True,
                )
                live = {r.id for r in self._live(scope, [h.record for h in hits], now)}
                scored.extend((h.score, h.record, scope) for h in hits if h.record.id in live)
            scored.sort(key=lambda t: -(t[0] or 0.0))
            seen = {r.id for _, r, _ in scored}
        plain: list[tuple[float | None, MemoryRecord, Scope]] = []
        for scope in self._scopes(prefix):
            records = self._live(scope, _scroll_all(self.store, scope, item_filter(prefix)), now)
            plain.extend((None, r, scope) for r in records if r.id not in seen)
        plain.sort(key=lambda t: t[1].metadata["lg_updated"], reverse=True)
        chosen = [
            (score, record, scope)
            for score, record, scope in scored + plain
            if matches_filter(json.loads(record.metadata["lg_value"]), op.filter)
        ][op.offset : op.offset + op.limit]
        out = []
        for score, record, scope in chosen:
            if op.refresh_ttl:
                record = self._refresh(scope, record, now)
            out.append(record_item(record, score, search=True))
        return [i for i in out if isinstance(i, SearchItem)]

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        now = self._clock()
        roots: list[Scope] = []
        fixed = [
            c
            for c in op.match_conditions or ()
            if c.match_type == "prefix" and c.path and c.path[0] != "*"
        ]
        roots = [scope_for(fixed[0].path)] if fixed else self._scopes(())
        found: set[tuple[str, ...]] = set()
        for scope in roots:
            for record in self._live(scope, _scroll_all(self.store, scope, item_filter(())), now):
                found.add(tuple(json.loads(record.metadata["lg_ns"])))
        conditions: Sequence[MatchCondition] = op.match_conditions or ()
        names = [ns for ns in found if all(matches_namespace(c, ns) for c in conditions)]
        if op.max_depth is not None:
            names = list({ns[: op.max_depth] for ns in names})
        return sorted(names)[op.offset : op.offset + op.limit]

    # -- TTL -------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired item now; returns how many were deleted."""
        now = self._clock()
        deleted = 0
        for scope in self._scopes(()):
            records = _scroll_all(self.store, scope, item_filter(()))
            dead = [r.id for r in records if expired(r, now)]
            if dead:
                deleted += self.store.delete(scope, dead)
        return deleted

    async def asweep_ttl(self) -> int:
        """Async twin of :meth:`sweep_ttl`."""
        return await asyncio.to_thread(self.sweep_ttl)


def _scroll_all(store: MemoryStore, scope: Scope, flt: RecordFilter) -> list[MemoryRecord]:
    records: list[MemoryRecord] = []
    offset: str | None = None
    while True:
        page, offset = store.scroll(scope, filter=flt, limit=_PAGE, offset=offset)
        records.extend(page)
        if offset is None:
            return records
