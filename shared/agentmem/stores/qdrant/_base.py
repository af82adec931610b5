"""The store logic both Qdrant backends share, written once (private).

Each operation is a program (:mod:`agentmem._sansio`): it validates its input, then asks
the backend's *engine* — typed programs such as :meth:`QdrantStoreBase._retrieve` and
:meth:`QdrantStoreBase._query` — for the I/O. A backend writes its engine once: the Edge
store as blocking calls (``blocking``), the qdrant-client store as ``call(client.x,
async_client.x, ...)``. So sync and async twins run the same logic, and all validation
happens before the first write: bad input leaves the store as it was.

:meth:`QdrantStoreBase._session` decides how an operation runs: natively on an async client
when the backend has one, else whole on a worker thread (``blocking``) under the backend's
guard (:meth:`QdrantStoreBase._drive`: Edge's mutex, the local-mode lock).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from agentmem._closing import ClosesOnExit
from agentmem._sansio import Program, async_twin, blocking, drive, offload, twin
from agentmem.errors import InvalidValueError, MemoryNotFoundError, StoreClosedError
from agentmem.long_term._fusion import fused_search_program
from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.store import Boost, FusionPlan, ScoredRecord, SparseVector
from agentmem.stores.qdrant import _common as qc
from agentmem.stores.qdrant._fused import qdrant_fused_program

__all__ = ["QdrantStoreBase"]

logger = logging.getLogger("agentmem.long_term")

T = TypeVar("T")
S = TypeVar("S", bound="QdrantStoreBase")
P = ParamSpec("P")
OrderKey = Literal["created_ts", "last_accessed_ts"]


def _operation(steps: Callable[Concatenate[S, P], Program[T]]) -> twin[S, P, T]:
    """A public operation of a store: ``steps`` run as one session (see
    :meth:`QdrantStoreBase._session`), exposed with :class:`~agentmem._sansio.twin`."""

    @functools.wraps(steps)
    def program(self: S, /, *args: P.args, **kwargs: P.kwargs) -> Program[T]:
        return (yield from self._session(steps(self, *args, **kwargs)))

    return twin(program)


class QdrantStoreBase(ClosesOnExit):
    """Validation, scoping, explain and pagination shared by the Qdrant stores (and the
    in-memory one); ``with store:`` closes it."""

    _dimension: int
    _closed: bool = False
    _native_async: bool = False
    #: Answer fusion plans with the generic program over search and get (stores whose
    #: engine has no cheaper payload-free queries) instead of compiling them.
    _generic_fusion: bool = False

    @property
    def dimension(self) -> int:
        """Size of the dense vectors of the collection."""
        return self._dimension

    def close(self) -> None:
        """Flush and release the store. Further use raises ``StoreClosedError``."""
        raise NotImplementedError

    aclose = offload(close)

    # -- how operations run ------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            msg = f"{type(self).__name__} is closed; open a new store to use it again"
            raise StoreClosedError(msg)

    def _session(self, program: Program[T]) -> Program[T]:
        """Run one operation: natively with an async client, else whole and blocking (in
        a worker thread for async callers) under :meth:`_drive`."""
        if self._native_async:
            self._check_open()
            return (yield from program)
        return (yield from blocking(self._drive, program))

    def _drive(self, program: Program[T]) -> T:
        """Run ``program`` blocking; backends add their guard (a lock, error translation)."""
        self._check_open()
        return drive(program)

    # -- the engine: typed I/O each backend implements ---------------------------------

    def _retrieve(self, ids: list[str]) -> Program[list[qc.Hit]]:
        """The points of ``ids`` that exist, with payload."""
        raise NotImplementedError

    def _retrieve_dense(self, ids: list[str]) -> Program[list[tuple[qc.Hit, list[float]]]]:
        """The points of ``ids`` that exist, with payload and dense vector."""
        raise NotImplementedError

    def _query(self, spec: qc.QuerySpec) -> Program[list[qc.Hit]]:
        """One search (see :class:`~agentmem.stores.qdrant._common.QuerySpec`)."""
        raise NotImplementedError

    def _query_batch(self, specs: list[qc.QuerySpec]) -> Program[list[list[qc.Hit]]]:
        """Several searches, answered in order (one call where the backend batches)."""
        found = []
        for spec in specs:
            found.append((yield from self._query(spec)))
        return found

    def _scroll(self, spec: qc.ScrollSpec) -> Program[tuple[list[qc.Hit], str | None]]:
        """A page of points (see :class:`~agentmem.stores.qdrant._common.ScrollSpec`) and
        the id the next page starts at (or None)."""
        raise NotImplementedError

    def _count(self, conds: tuple[qc.Condition, ...]) -> Program[int]:
        """How many points match ``conds`` (exactly)."""
        raise NotImplementedError

    def _facet(self, key: str, conds: tuple[qc.Condition, ...], limit: int) -> Program[list[str]]:
        """The distinct values of the keyword ``key`` among the points matching ``conds``
        (at most ``limit``)."""
        raise NotImplementedError

    def _write_points(self, points: list[qc.PointData]) -> Program[None]:
        """Insert or replace these points."""
        raise NotImplementedError

    def _delete_points(self, ids: list[str]) -> Program[None]:
        """Delete these points."""
        raise NotImplementedError

    def _set_payload(
        self, patches: list[qc.Patch], where: tuple[qc.Condition, ...] = ()
    ) -> Program[None]:
        """Set and delete payload keys of points; with ``where``, only on those of the
        patched points that match it (a conditional write: no point is read)."""
        raise NotImplementedError

    def _backfill_spaces(self) -> int:
        """Give points written by an older agentmem the keys it did not write, at open:
        the space (before spaces existed, agentmem 0.1) and, on current points,
        :data:`~agentmem.stores.qdrant._common.CURRENT_SCOPE_FIELD`. Only such points are
        read, so once done it costs two empty scrolls."""
        return drive(self._session(self._backfill_steps()))

    def _backfill_steps(self) -> Program[int]:
        done = 0
        for missing, patch in (
            ((qc.IsEmpty(qc.SPACE_FIELD),), _legacy_space_patch),
            (
                (qc.IsEmpty(qc.CURRENT_SCOPE_FIELD), qc.Match("is_current", (True,))),
                _current_scope_patch,
            ),
        ):
            while True:
                page = yield from self._scroll(qc.ScrollSpec(missing, 1024))
                if not page[0]:
                    break
                patches = [qc.Patch(h.id, patch(h.payload), []) for h in page[0]]
                yield from self._set_payload(patches)
                done += len(patches)
        if done:
            logger.info("gave %d points written by an older agentmem their new keys", done)
        return done

    # -- public API: each operation one program, run as one session ---------------------

    @_operation
    def upsert(
        self,
        records: Sequence[MemoryRecord],
        dense: Sequence[Sequence[float]],
        sparse: Sequence[SparseVector],
    ) -> Program[None]:
        """Insert or replace records with their vectors (all three sequences aligned)."""
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
            existing = yield from self._retrieve(ids)
            by_id = {r.id: r for r in records}
            foreign = [h.id for h in existing if not qc.in_scope(h.payload, by_id[h.id].scope)]
            if foreign:
                msg = (
                    f"memory ids {foreign} already belong to another scope; nothing was "
                    "written (use new ids)"
                )
                raise InvalidValueError(msg)
            yield from self._write_points(points)

    def _in_scope_steps(self, scope: Scope, ids: Sequence[str]) -> Program[list[qc.Hit]]:
        qc.build_conditions(scope, None)  # validates the scope
        wanted = qc.validate_ids(ids)
        if not wanted:
            return []
        hits = yield from self._retrieve(wanted)
        found = {h.id: h for h in hits if qc.in_scope(h.payload, scope)}
        return [found[i] for i in wanted if i in found]

    @_operation
    def get(self, scope: Scope, ids: Sequence[str]) -> Program[list[MemoryRecord]]:
        """Records with these ids inside ``scope``, in the order of ``ids``; others skipped."""
        hits = yield from self._in_scope_steps(scope, ids)
        return [qc.record_from_payload(h.id, h.payload) for h in hits]

    @_operation
    def get_vectors(self, scope: Scope, ids: Sequence[str]) -> Program[dict[str, list[float]]]:
        """Dense vectors of the records with these ids inside ``scope`` (see
        ``MemoryStore.get_vectors``)."""
        qc.build_conditions(scope, None)  # validates the scope
        wanted = qc.validate_ids(ids)
        if not wanted:
            return {}
        rows = yield from self._retrieve_dense(wanted)
        return {hit.id: dense for hit, dense in rows if qc.in_scope(hit.payload, scope)}

    @_operation
    def delete(self, scope: Scope, ids: Sequence[str]) -> Program[int]:
        """Delete records with these ids inside ``scope``; returns how many existed."""
        hits = yield from self._in_scope_steps(scope, ids)
        if hits:
            yield from self._delete_points([h.id for h in hits])
        return len(hits)

    @_operation
    def set_fields(
        self, scope: Scope, ids: Sequence[str], fields: Mapping[str, Any]
    ) -> Program[None]:
        """Patch record fields of records inside ``scope`` (see ``MemoryStore.set_fields``)."""
        hits = yield from self._in_scope_steps(scope, ids)
        found = {h.id for h in hits}
        missing = [i for i in qc.validate_ids(ids) if i not in found]
        if missing:
            msg = f"no memories with ids {missing} in scope {scope!r}; nothing was changed"
            raise MemoryNotFoundError(msg)
        if hits and fields:
            # The keys a patch sets depend on the values and the scope only (the same for
            # every record here): validate them on one record, write them to all at once.
            first = qc.make_patch(qc.record_from_payload(hits[0].id, hits[0].payload), fields)
            yield from self._set_payload([first._replace(id=h.id) for h in hits])

    @_operation
    def set_fields_each(
        self, scope: Scope, changes: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> Program[None]:
        """``set_fields`` of each ``(id, fields)`` pair, without reading them and in one
        conditional write per distinct ``fields``: what recording the accesses of a
        search's hits (each its own ``access_count``) needs. An id that is not in ``scope``
        (a memory deleted since the search found it) is skipped, not an error. Not part of
        ``MemoryStore``; callers fall back to ``set_fields`` without it.

        Raises:
            InvalidValueError: A bad id, field or value (nothing is changed).
        """
        where = qc.build_conditions(scope, RecordFilter(include_history=True))
        ids = qc.validate_ids([memory_id for memory_id, _ in changes])
        # The keys a patch sets depend on the values and the scope only (see set_fields):
        # each distinct `fields` is validated once, on a record of the scope.
        template = MemoryRecord.new("(a record of the scope)", "semantic", scope=scope)
        made: dict[str, qc.Patch] = {}
        patches = []
        for memory_id, (_, fields) in sorted(zip(ids, changes, strict=True), key=_by_fields):
            if not fields:
                continue
            key = repr(sorted(fields.items()))
            if key not in made:
                made[key] = qc.make_patch(template, fields)
            patches.append(made[key]._replace(id=memory_id))
        if patches:
            yield from self._write_accesses(scope, patches, where)

    def _write_accesses(
        self, scope: Scope, patches: list[qc.Patch], where: tuple[qc.Condition, ...]
    ) -> Program[None]:
        """The conditional write of :meth:`set_fields_each` (``where``: ``scope``'s
        conditions); the Edge store keeps access statistics beside its points instead."""
        yield from self._set_payload(patches, where)

    @_operation
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
    ) -> Program[list[ScoredRecord]]:
        """Top ``limit`` records in ``scope`` matching ``filter``, best first."""
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
        hits = yield from self._query(spec)
        parts: dict[str, dict[str, float]] = {}
        if explain and hits:
            parts = yield from self._explain_steps(spec, hits)
        return [
            ScoredRecord(qc.record_from_payload(h.id, h.payload), h.score, parts.get(h.id, {}))
            for h in hits
        ]

    def _explain_steps(
        self, spec: qc.QuerySpec, hits: list[qc.Hit]
    ) -> Program[dict[str, dict[str, float]]]:
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
            ranked = yield from self._query(single)
            ranks = {h.id: n for n, h in enumerate(ranked, start=1)}
            raw = yield from self._query(
                qc.QuerySpec(
                    conditions=(*spec.conditions, qc.HasIds(ids)),
                    limit=len(ids),
                    candidates=len(ids),
                    dense=dense,
                    sparse=sparse,
                    exact=True,
                    with_payload=False,
                )
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

    @_operation
    def scroll(
        self,
        scope: Scope,
        *,
        filter: RecordFilter | None = None,
        limit: int = 256,
        offset: str | None = None,
        order_by: OrderKey | None = None,
    ) -> Program[tuple[list[MemoryRecord], str | None]]:
        """A page of records in ``scope`` and the next offset (or None)."""
        conds = qc.build_conditions(scope, filter)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            msg = f"limit must be a positive integer, got {limit!r}"
            raise InvalidValueError(msg)
        if order_by is None:
            start = None if offset is None else qc.validate_ids([offset])[0]
            hits, nxt = yield from self._scroll(qc.ScrollSpec(conds, limit, start))
            records = [qc.record_from_payload(h.id, h.payload) for h in hits]
            return records, None if nxt is None else str(nxt)
        if order_by not in ("created_ts", "last_accessed_ts"):
            msg = f"order_by must be 'created_ts' or 'last_accessed_ts', got {order_by!r}"
            raise InvalidValueError(msg)
        value, skip = (None, 0) if offset is None else qc.decode_cursor(offset, order_by)
        order = qc.OrderSpec(order_by, value)
        rows, _ = yield from self._scroll(qc.ScrollSpec(conds, limit + skip + 1, None, order))
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

    @_operation
    def user_ids(self, space: str = "memories", limit: int = 100_000) -> Program[list[str]]:
        """The ids of the users with records in ``space`` (at most ``limit``), sorted: read
        from the tenant index (a facet), not from the records. For tools that list users
        (the inspector); every other operation stays inside one scope."""
        where = (qc.Match(qc.SPACE_FIELD, (space,)),)
        return sorted((yield from self._facet(qc.TENANT_FIELD, where, limit)))

    @_operation
    def count(self, scope: Scope, *, filter: RecordFilter | None = None) -> Program[int]:
        """How many records in ``scope`` match ``filter``."""
        return (yield from self._count(qc.build_conditions(scope, filter)))

    @_operation
    def fused_search(
        self,
        scope: Scope,
        filter: RecordFilter,
        dense: Sequence[float],
        sparse: SparseVector | None,
        plan: FusionPlan,
    ) -> Program[list[ScoredRecord]]:
        """Run a hybrid-search plan with payload-free Qdrant queries (see
        ``MemoryStore.fused_search``)."""
        if self._generic_fusion:
            return (yield from fused_search_program(self, scope, filter, dense, sparse, plan))
        return (
            yield from qdrant_fused_program(
                self._query_batch,
                self._retrieve,
                self._retrieve_dense,
                scope,
                filter,
                dense,
                sparse,
                self._dimension,
                plan,
            )
        )

    aupsert = async_twin(upsert)
    aget = async_twin(get)
    aget_vectors = async_twin(get_vectors)
    adelete = async_twin(delete)
    aset_fields = async_twin(set_fields)
    aset_fields_each = async_twin(set_fields_each)
    asearch = async_twin(search)
    ascroll = async_twin(scroll)
    acount = async_twin(count)
    afused_search = async_twin(fused_search)


def _by_fields(pair: tuple[str, tuple[str, Mapping[str, Any]]]) -> str:
    return repr(sorted(pair[1][1].items()))  # equal patches side by side: one call each


def _legacy_space_patch(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {qc.SPACE_FIELD: qc.legacy_space(payload)}


def _current_scope_patch(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {qc.CURRENT_SCOPE_FIELD: qc.current_scope(payload["user_id"], payload[qc.SPACE_FIELD])}
