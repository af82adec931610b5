"""The store logic both Qdrant backends share, written once (private).

Each public operation is a generator that validates its input, then yields :class:`Op`
requests ("retrieve these ids", "run this query", ...) and receives their results. A backend
implements the requests as ``_op_<name>`` methods (and, when it has a native async client,
``_aop_<name>`` coroutines); :meth:`QdrantStoreBase._run` and :meth:`QdrantStoreBase._arun`
drive the generator with one or the other. So sync and async twins run the same logic, and
all validation happens before the first write is yielded: bad input leaves the store as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Literal, NamedTuple, TypeVar

from agentmem._async import run_in_executor
from agentmem.errors import InvalidValueError, MemoryNotFoundError, StoreClosedError
from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.store import Boost, FusionPlan, ScoredRecord, SparseVector
from agentmem.stores.qdrant import _common as qc

__all__ = ["Op", "QdrantStoreBase", "Steps"]

logger = logging.getLogger("agentmem.long_term")

T = TypeVar("T")
OrderKey = Literal["created_ts", "last_accessed_ts"]


class Op(NamedTuple):
    """A request to the backend: method ``_op_<name>`` called with ``args``."""

    name: str
    args: tuple[Any, ...]


Steps = Generator[Op, Any, T]


class QdrantStoreBase:
    """Validation, scoping, explain and pagination shared by the Qdrant stores."""

    _dimension: int
    _closed: bool = False
    _native_async: bool = False

    @property
    def dimension(self) -> int:
        """Size of the dense vectors of the collection."""
        return self._dimension

    # -- drivers -----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            msg = f"{type(self).__name__} is closed; open a new store to use it again"
            raise StoreClosedError(msg)

    def _run(self, steps: Steps[T]) -> T:
        self._check_open()
        try:
            op = next(steps)
            while True:
                op = steps.send(getattr(self, f"_op_{op.name}")(*op.args))
        except StopIteration as stop:
            result: T = stop.value
            return result

    async def _arun(self, steps: Steps[T]) -> T:
        self._check_open()
        if not self._native_async:
            return await run_in_executor(self._run, steps)
        try:
            op = next(steps)
            while True:
                op = steps.send(await getattr(self, f"_aop_{op.name}")(*op.args))
        except StopIteration as stop:
            result: T = stop.value
            return result

    def _backfill_spaces(self) -> int:
        """Give points written before spaces existed (agentmem 0.1) their space; run at
        open. Only such points are read, so once done it costs one empty scroll."""
        return self._run(self._backfill_steps())

    def _backfill_steps(self) -> Steps[int]:
        missing = (qc.IsEmpty(qc.SPACE_FIELD),)
        done = 0
        while True:
            page: tuple[list[qc.Hit], str | None] = yield Op("scroll", (missing, 256, None, None))
            if not page[0]:
                return done
            patches = [
                qc.Patch(h.id, {qc.SPACE_FIELD: qc.legacy_space(h.payload)}, []) for h in page[0]
            ]
            yield Op("set_payload", (patches,))
            done += len(patches)

    # -- operations (generators) -------------------------------------------------------

    def _upsert_steps(
        self,
        records: Sequence[MemoryRecord],
        dense: Sequence[Sequence[float]],
        sparse: Sequence[SparseVector],
    ) -> Steps[None]:
        if not len(records) == len(dense) == len(sparse):
            msg = (
                f"upsert needs one dense and one sparse vector per record; got "
                f"{len(records)} records, {len(dense)} dense, {len(sparse)} sparse"
            )
            raise InvalidValueError(msg)
        ids = qc.validate_ids([r.id for r in records])
        if len(ids) != len(records):
            msg = "upsert got the same memory id twice in one batch; ids must be unique"
            raise InvalidValueError(msg)
        points = []
        for record, vec, sp in zip(records, dense, sparse, strict=True):
            if not isinstance(record, MemoryRecord):
                msg = f"upsert takes MemoryRecord objects, got {type(record).__name__}"
                raise InvalidValueError(msg)
            points.append(
                qc.PointData(
                    record.id,
                    qc.validate_dense(vec, self._dimension),
                    qc.validate_sparse(sp),
                    qc.record_payload(record),
                )
            )
        if points:
            # An id is owned by one scope forever: never let a write move it to another.
            existing: list[qc.Hit] = yield Op("retrieve", (ids,))
            by_id = {r.id: r for r in records}
            foreign = [h.id for h in existing if not qc.in_scope(h.payload, by_id[h.id].scope)]
            if foreign:
                msg = (
                    f"memory ids {foreign} already belong to another scope; nothing was "
                    "written (use new ids)"
                )
                raise InvalidValueError(msg)
            yield Op("upsert", (points,))

    def _in_scope_steps(self, scope: Scope, ids: Sequence[str]) -> Steps[list[qc.Hit]]:
        qc.build_conditions(scope, None)  # validates the scope
        wanted = qc.validate_ids(ids)
        if not wanted:
            return []
        hits: list[qc.Hit] = yield Op("retrieve", (wanted,))
        found = {h.id: h for h in hits if qc.in_scope(h.payload, scope)}
        return [found[i] for i in wanted if i in found]

    def _get_steps(self, scope: Scope, ids: Sequence[str]) -> Steps[list[MemoryRecord]]:
        hits = yield from self._in_scope_steps(scope, ids)
        return [qc.record_from_payload(h.id, h.payload) for h in hits]

    def _delete_steps(self, scope: Scope, ids: Sequence[str]) -> Steps[int]:
        hits = yield from self._in_scope_steps(scope, ids)
        if hits:
            yield Op("delete", ([h.id for h in hits],))
        return len(hits)

    def _set_fields_steps(
        self, scope: Scope, ids: Sequence[str], fields: Mapping[str, Any]
    ) -> Steps[None]:
        hits = yield from self._in_scope_steps(scope, ids)
        found = {h.id for h in hits}
        missing = [i for i in qc.validate_ids(ids) if i not in found]
        if missing:
            msg = f"no memories with ids {missing} in scope {scope!r}; nothing was changed"
            raise MemoryNotFoundError(msg)
        patches = [qc.make_patch(qc.record_from_payload(h.id, h.payload), fields) for h in hits]
        if patches and fields:
            yield Op("set_payload", (patches,))

    def _search_steps(
        self,
        scope: Scope,
        *,
        dense: Sequence[float] | None,
        sparse: SparseVector | None,
        filter: RecordFilter | None,
        limit: int,
        candidates: int,
        boost: Boost | None,
        exact: bool,
        explain: bool,
    ) -> Steps[list[ScoredRecord]]:
        if dense is None and sparse is None:
            msg = "search needs a query vector: pass dense=, sparse= or both"
            raise InvalidValueError(msg)
        for name, value in (("limit", limit), ("candidates", candidates)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"{name} must be a positive integer, got {value!r}"
                raise InvalidValueError(msg)
        spec = qc.QuerySpec(
            conditions=qc.build_conditions(scope, filter),
            limit=limit,
            candidates=max(candidates, limit),
            dense=None if dense is None else qc.validate_dense(dense, self._dimension),
            sparse=None if sparse is None else qc.validate_sparse(sparse),
            boost=qc.validate_boost(boost),
            exact=exact,
        )
        hits: list[qc.Hit] = yield Op("query", (spec,))
        parts: dict[str, dict[str, float]] = {}
        if explain and hits:
            parts = yield from self._explain_steps(spec, hits)
        return [
            ScoredRecord(qc.record_from_payload(h.id, h.payload), h.score, parts.get(h.id, {}))
            for h in hits
        ]

    def _explain_steps(
        self, spec: qc.QuerySpec, hits: list[qc.Hit]
    ) -> Steps[dict[str, dict[str, float]]]:
        ids = tuple(h.id for h in hits)
        parts: dict[str, dict[str, float]] = {i: {} for i in ids}
        for name, dense, sparse in (("dense", spec.dense, None), ("sparse", None, spec.sparse)):
            if dense is None and sparse is None:
                continue
            single = qc.QuerySpec(
                conditions=spec.conditions,
                limit=spec.candidates,
                candidates=spec.candidates,
                dense=dense,
                sparse=sparse,
                exact=spec.exact,
                with_payload=False,
            )
            ranked: list[qc.Hit] = yield Op("query", (single,))
            ranks = {h.id: n for n, h in enumerate(ranked, start=1)}
            raw: list[qc.Hit] = yield Op(
                "query",
                (
                    qc.QuerySpec(
                        conditions=(*spec.conditions, qc.HasIds(ids)),
                        limit=len(ids),
                        candidates=len(ids),
                        dense=dense,
                        sparse=sparse,
                        exact=True,
                        with_payload=False,
                    ),
                ),
            )
            for h in raw:
                parts[h.id][name] = h.score
            for i in ids:
                if i in ranks:
                    parts[i][f"{name}_rank"] = float(ranks[i])
        hybrid = spec.dense is not None and spec.sparse is not None
        for h in hits:
            comp = parts[h.id]
            if hybrid:
                comp["fused"] = sum(
                    qc.rrf_term(int(comp[k])) for k in ("dense_rank", "sparse_rank") if k in comp
                )
                base = comp["fused"]
            else:
                base = comp.get("dense", comp.get("sparse", 0.0))
            comp["base"] = base
            if spec.boost is not None:
                imp, rec = qc.boost_terms(h.payload, spec.boost)
                comp["importance_boost"] = imp
                comp["recency_boost"] = rec
                comp["boosted_in_qdrant"] = 1.0
            comp["final"] = h.score
        return parts

    def _scroll_steps(
        self,
        scope: Scope,
        *,
        filter: RecordFilter | None,
        limit: int,
        offset: str | None,
        order_by: OrderKey | None,
    ) -> Steps[tuple[list[MemoryRecord], str | None]]:
        conds = qc.build_conditions(scope, filter)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            msg = f"limit must be a positive integer, got {limit!r}"
            raise InvalidValueError(msg)
        if order_by is None:
            start = None if offset is None else qc.validate_ids([offset])[0]
            hits, nxt = yield Op("scroll", (conds, limit, start, None))
            records = [qc.record_from_payload(h.id, h.payload) for h in hits]
            return records, None if nxt is None else str(nxt)
        if order_by not in ("created_ts", "last_accessed_ts"):
            msg = f"order_by must be 'created_ts' or 'last_accessed_ts', got {order_by!r}"
            raise InvalidValueError(msg)
        value, skip = (None, 0) if offset is None else qc.decode_cursor(offset, order_by)
        rows, _ = yield Op("scroll", (conds, limit + skip + 1, None, qc.OrderSpec(order_by, value)))
        rows = rows[skip:]
        page = rows[:limit]
        records = [qc.record_from_payload(h.id, h.payload) for h in page]
        if len(rows) <= limit:
            return records, None
        last = page[-1].score
        same = 0
        for h in reversed(page):
            if h.score != last:
                break
            same += 1
        if same == len(page) and last == value:
            same += skip
        return records, qc.encode_cursor(order_by, last, same)

    def _count_steps(self, scope: Scope, filter: RecordFilter | None) -> Steps[int]:
        count: int = yield Op("count", (qc.build_conditions(scope, filter),))
        return count

    # -- public API --------------------------------------------------------------------

    def upsert(
        self,
        records: Sequence[MemoryRecord],
        dense: Sequence[Sequence[float]],
        sparse: Sequence[SparseVector],
    ) -> None:
        """Insert or replace records with their vectors (all three sequences aligned)."""
        self._run(self._upsert_steps(records, dense, sparse))

    def get(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]:
        """Records with these ids inside ``scope``, in the order of ``ids``; others skipped."""
        return self._run(self._get_steps(scope, ids))

    def delete(self, scope: Scope, ids: Sequence[str]) -> int:
        """Delete records with these ids inside ``scope``; returns how many existed."""
        return self._run(self._delete_steps(scope, ids))

    def set_fields(self, scope: Scope, ids: Sequence[str], fields: Mapping[str, Any]) -> None:
        """Patch record fields of records inside ``scope`` (see ``MemoryStore.set_fields``)."""
        self._run(self._set_fields_steps(scope, ids, fields))

    def search(
        self,
        scope: Scope,
        *,
        dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
        filter: RecordFilter | None = None,
        limit: int = 10,
        candidates: int = 50,
        boost: Boost | None = None,
        exact: bool = False,
        explain: bool = False,
    ) -> list[ScoredRecord]:
        """Top ``limit`` records in ``scope`` matching ``filter``, best first."""
        return self._run(
            self._search_steps(
                scope,
                dense=dense,
                sparse=sparse,
                filter=filter,
                limit=limit,
                candidates=candidates,
                boost=boost,
                exact=exact,
                explain=explain,
            )
        )

    def scroll(
        self,
        scope: Scope,
        *,
        filter: RecordFilter | None = None,
        limit: int = 256,
        offset: str | None = None,
        order_by: OrderKey | None = None,
    ) -> tuple[list[MemoryRecord], str | None]:
        """A page of records in ``scope`` and the next offset (or None)."""
        return self._run(
            self._scroll_steps(scope, filter=filter, limit=limit, offset=offset, order_by=order_by)
        )

    def count(self, scope: Scope, *, filter: RecordFilter | None = None) -> int:
        """How many records in ``scope`` match ``filter``."""
        return self._run(self._count_steps(scope, filter))

    def fused_search(
        self,
        scope: Scope,
        filter: RecordFilter,
        dense: Sequence[float],
        sparse: SparseVector | None,
        plan: FusionPlan,
    ) -> list[ScoredRecord]:
        """Run a hybrid-search plan with payload-free Qdrant queries (see
        ``MemoryStore.fused_search``)."""
        from agentmem.stores.qdrant._fused import qdrant_fused_steps

        return self._run(qdrant_fused_steps(scope, filter, dense, sparse, self._dimension, plan))

    async def afused_search(
        self,
        scope: Scope,
        filter: RecordFilter,
        dense: Sequence[float],
        sparse: SparseVector | None,
        plan: FusionPlan,
    ) -> list[ScoredRecord]:
        """Async twin of :meth:`fused_search`."""
        from agentmem.stores.qdrant._fused import qdrant_fused_steps

        steps = qdrant_fused_steps(scope, filter, dense, sparse, self._dimension, plan)
        return await self._arun(steps)

    async def aupsert(
        self,
        records: Sequence[MemoryRecord],
        dense: Sequence[Sequence[float]],
        sparse: Sequence[SparseVector],
    ) -> None:
        """Async twin of :meth:`upsert`."""
        await self._arun(self._upsert_steps(records, dense, sparse))

    async def aget(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]:
        """Async twin of :meth:`get`."""
        return await self._arun(self._get_steps(scope, ids))

    async def adelete(self, scope: Scope, ids: Sequence[str]) -> int:
        """Async twin of :meth:`delete`."""
        return await self._arun(self._delete_steps(scope, ids))

    async def aset_fields(
        self, scope: Scope, ids: Sequence[str], fields: Mapping[str, Any]
    ) -> None:
        """Async twin of :meth:`set_fields`."""
        await self._arun(self._set_fields_steps(scope, ids, fields))

    async def asearch(
        self,
        scope: Scope,
        *,
        dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
        filter: RecordFilter | None = None,
        limit: int = 10,
        candidates: int = 50,
        boost: Boost | None = None,
        exact: bool = False,
        explain: bool = False,
    ) -> list[ScoredRecord]:
        """Async twin of :meth:`search`."""
        return await self._arun(
            self._search_steps(
                scope,
                dense=dense,
                sparse=sparse,
                filter=filter,
                limit=limit,
                candidates=candidates,
                boost=boost,
                exact=exact,
                explain=explain,
            )
        )

    async def ascroll(
        self,
        scope: Scope,
        *,
        filter: RecordFilter | None = None,
        limit: int = 256,
        offset: str | None = None,
        order_by: OrderKey | None = None,
    ) -> tuple[list[MemoryRecord], str | None]:
        """Async twin of :meth:`scroll`."""
        return await self._arun(
            self._scroll_steps(scope, filter=filter, limit=limit, offset=offset, order_by=order_by)
        )

    async def acount(self, scope: Scope, *, filter: RecordFilter | None = None) -> int:
        """Async twin of :meth:`count`."""
        return await self._arun(self._count_steps(scope, filter))
