"""The memory-store engine: the logic every long-term store shares, whatever its backend.

:class:`MemoryStoreEngine` implements the whole :class:`~agentmem.long_term.store.MemoryStore`
protocol (validation, scoping, pagination, the one-owner rule of ids, the search plans of
:mod:`agentmem.long_term.ranking`) on top of a few typed I/O *steps*. A backend is a
subclass that implements the steps, and nothing else of the protocol:

============================  ===============================================================
step                          what it does
============================  ===============================================================
``_write_points(points)``     insert or replace :class:`~agentmem.stores.points.PointData`
                              (id, dense vector, sparse vector, payload)
``_delete_points(ids)``       delete points
``_set_payload(patches,       set and delete payload keys (:class:`~.points.Patch`); with
where)``                      ``where``, only on the patched points that match it
``_retrieve(ids)``            the points of ``ids`` that exist, with payload
                              (:class:`~.points.Hit`)
``_retrieve_dense(ids)``      the same with each point's dense vector
``_query(spec)``              one nearest-neighbour search on one side, dense (cosine) or
                              sparse (BM25 with IDF over the collection)
                              (:class:`~.points.QuerySpec`): ids and raw scores, best first,
                              no payload
``_query_batch(specs)``       several ``_query`` at once (default: one after the other)
``_scroll(spec)``             a page of points matching conditions, in id order or ordered
                              by a payload field (:class:`~.points.ScrollSpec`)
``_count(conditions)``        how many points match, exactly
``_facet(key, conditions,     the distinct values of a keyword field among matching points,
limit)``                      each with how many match it (exactly), most first
``close()``                   flush and release the backend
============================  ===============================================================

Conditions are the neutral values of :mod:`agentmem.stores.points` (``Match``, ``Range``,
``HasIds``, ``IsEmpty``), always ANDed, and always carry the caller's :class:`Scope` (built
by :func:`~agentmem.stores.points.build_conditions`): a step never decides who may see what.
Steps never rank: a search returns raw scores, and every score a store returns is computed
by the one ranker (:mod:`agentmem.long_term.ranking`).

Each step is a program (:mod:`agentmem._sansio`): a backend writes it once, as blocking
calls (``blocking(...)``: Qdrant Edge, the in-memory store) or as ``call(client.x,
async_client.x, ...)`` (qdrant-client), and the sync and async twins of every operation
run the same logic. All validation happens before the first write: bad input leaves the
store as it was. How an operation runs is :meth:`MemoryStoreEngine._session`: natively on an
async client when the backend has one (``_native_async``), else whole on a worker thread
under the backend's guard (:meth:`MemoryStoreEngine._drive`: Edge's mutex, the local-mode
lock); a backend whose steps are CPU work of microseconds (the in-memory store) runs them
inline.

Adding a backend: one module with a subclass implementing the steps, a registry line, and a
parameter of the conformance suite (``tests/conformance/long_term``).
"""

from __future__ import annotations

import functools
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from agentmem._sansio import Program, async_twin, blocking, drive, offload, twin
from agentmem._util.checks import check_int
from agentmem._util.closing import ClosesOnExit
from agentmem.errors import InvalidValueError, MemoryNotFoundError, StoreClosedError
from agentmem.long_term._fusion import run_plan
from agentmem.long_term.ranking import list_plan
from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.store import (
    COUNTABLE_FIELDS,
    Boost,
    FusionPlan,
    RecordRequest,
    ScoredRecord,
    ScoreRequest,
    SparseVector,
)
from agentmem.stores import points as pt

__all__ = ["MemoryStoreEngine"]

logger = logging.getLogger("agentmem.long_term")

T = TypeVar("T")
S = TypeVar("S", bound="MemoryStoreEngine")
Side = Literal["dense", "sparse"]
P = ParamSpec("P")
OrderKey = Literal["created_ts", "last_accessed_ts"]


def _operation(steps: Callable[Concatenate[S, P], Program[T]]) -> twin[S, P, T]:
    """A public operation of a store: ``steps`` run as one session (see
    `MemoryStoreEngine._session`), exposed with :class:`~agentmem._sansio.twin`."""

    @functools.wraps(steps)
    def program(self: S, /, *args: P.args, **kwargs: P.kwargs) -> Program[T]:
        return (yield from self._session(steps(self, *args, **kwargs)))

    return twin(program)


class MemoryStoreEngine(ClosesOnExit, ABC):
    """A :class:`~agentmem.long_term.store.MemoryStore` over a backend's I/O steps (see the
    module); ``with store:`` closes it.

    Example:
        >>> from agentmem.stores.in_memory import InMemoryMemoryStore
        >>> issubclass(InMemoryMemoryStore, MemoryStoreEngine)
        True
    """

    _dimension: int
    _closed: bool = False
    _native_async: bool = False

    @property
    def dimension(self) -> int:
        """Size of the dense vectors of the collection."""
        return self._dimension

    @abstractmethod
    def close(self) -> None:
        """Flush and release the store. Further use raises ``StoreClosedError``."""

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

    # -- the steps: typed I/O each backend implements (see the module) ----------------

    @abstractmethod
    def _retrieve(self, ids: list[str]) -> Program[list[pt.Hit]]:
        """The points of ``ids`` that exist, with payload."""

    @abstractmethod
    def _retrieve_dense(self, ids: list[str]) -> Program[list[tuple[pt.Hit, list[float]]]]:
        """The points of ``ids`` that exist, with payload and dense vector."""

    @abstractmethod
    def _query(self, spec: pt.QuerySpec) -> Program[list[pt.Hit]]:
        """One search on one side (see :class:`~agentmem.stores.points.QuerySpec`): ids and
        raw scores, best first, without payload."""

    def _query_batch(self, specs: list[pt.QuerySpec]) -> Program[list[list[pt.Hit]]]:
        """Several searches, answered in order (one call where the backend batches)."""
        found = []
        for spec in specs:
            found.append((yield from self._query(spec)))
        return found

    @abstractmethod
    def _scroll(self, spec: pt.ScrollSpec) -> Program[tuple[list[pt.Hit], str | None]]:
        """A page of points (see :class:`~agentmem.stores.points.ScrollSpec`) and
        the id the next page starts at (or None)."""

    @abstractmethod
    def _count(self, conds: tuple[pt.Condition, ...]) -> Program[int]:
        """How many points match ``conds`` (exactly)."""

    @abstractmethod
    def _facet(
        self, key: str, conds: tuple[pt.Condition, ...], limit: int
    ) -> Program[dict[str, int]]:
        """The distinct values of the keyword ``key`` among the points matching ``conds``
        (at most ``limit``, the most frequent first), each with how many points match it
        (exactly)."""

    @abstractmethod
    def _write_points(self, points: list[pt.PointData]) -> Program[None]:
        """Insert or replace these points."""

    @abstractmethod
    def _delete_points(self, ids: list[str]) -> Program[None]:
        """Delete these points."""

    @abstractmethod
    def _set_payload(
        self, patches: list[pt.Patch], where: tuple[pt.Condition, ...] = ()
    ) -> Program[None]:
        """Set and delete payload keys of points; with ``where``, only on those of the
        patched points that match it (a conditional write: no point is read)."""

    def _backfill_spaces(self) -> int:
        """Give points written by an older agentmem the keys it did not write, at open:
        the space (before spaces existed, agentmem 0.1) and, on current points,
        :data:`~agentmem.stores.points.CURRENT_SCOPE_FIELD`. Only such points are
        read, so once done it costs two empty scrolls."""
        return drive(self._session(self._backfill_steps()))

    def _backfill_steps(self) -> Program[int]:
        done = 0
        for missing, patch in (
            ((pt.IsEmpty(pt.SPACE_FIELD),), _legacy_space_patch),
            (
                (pt.IsEmpty(pt.CURRENT_SCOPE_FIELD), pt.Match("is_current", (True,))),
                _current_scope_patch,
            ),
        ):
            while True:
                page = yield from self._scroll(pt.ScrollSpec(missing, 1024))
                if not page[0]:
                    break
                patches = [pt.Patch(h.id, patch(h.payload), []) for h in page[0]]
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
        ids = pt.validate_ids([r.id for r in records])
        if len(ids) != len(records):
            msg = "upsert got the same memory id twice in one batch; ids must be unique"
            raise InvalidValueError(msg)
        points = []
        for record, vec, sp in zip(records, dense, sparse, strict=True):
            if not isinstance(record, MemoryRecord):
                msg = f"upsert takes MemoryRecord objects, got {type(record).__name__}"
                raise InvalidValueError(msg)
            points.append(
                pt.PointData(
                    record.id,
                    pt.validate_dense(vec, self._dimension),
                    pt.validate_sparse(sp),
                    pt.record_payload(record),
                )
            )
        if points:
            # An id is owned by one scope forever: never let a write move it to another.
            existing = yield from self._retrieve(ids)
            by_id = {r.id: r for r in records}
            foreign = [h.id for h in existing if not pt.in_scope(h.payload, by_id[h.id].scope)]
            if foreign:
                msg = (
                    f"memory ids {foreign} already belong to another scope; nothing was "
                    "written (use new ids)"
                )
                raise InvalidValueError(msg)
            yield from self._write_points(points)

    def _in_scope_steps(self, scope: Scope, ids: Sequence[str]) -> Program[list[pt.Hit]]:
        pt.build_conditions(scope, None)  # validates the scope
        wanted = pt.validate_ids(ids)
        if not wanted:
            return []
        hits = yield from self._retrieve(wanted)
        found = {h.id: h for h in hits if pt.in_scope(h.payload, scope)}
        return [found[i] for i in wanted if i in found]

    @_operation
    def get(self, scope: Scope, ids: Sequence[str]) -> Program[list[MemoryRecord]]:
        """Records with these ids inside ``scope``, in the order of ``ids``; others skipped."""
        hits = yield from self._in_scope_steps(scope, ids)
        return [pt.record_from_payload(h.id, h.payload) for h in hits]

    @_operation
    def get_vectors(self, scope: Scope, ids: Sequence[str]) -> Program[dict[str, list[float]]]:
        """Dense vectors of the records with these ids inside ``scope`` (see
        ``MemoryStore.get_vectors``)."""
        pt.build_conditions(scope, None)  # validates the scope
        wanted = pt.validate_ids(ids)
        if not wanted:
            return {}
        rows = yield from self._retrieve_dense(wanted)
        return {hit.id: dense for hit, dense in rows if pt.in_scope(hit.payload, scope)}

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
        missing = [i for i in pt.validate_ids(ids) if i not in found]
        if missing:
            msg = f"no memories with ids {missing} in scope {scope!r}; nothing was changed"
            raise MemoryNotFoundError(msg)
        if hits and fields:
            # The keys a patch sets depend on the values and the scope only (the same for
            # every record here): validate them on one record, write them to all at once.
            first = pt.make_patch(pt.record_from_payload(hits[0].id, hits[0].payload), fields)
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
        where = pt.build_conditions(scope, RecordFilter(include_history=True))
        ids = pt.validate_ids([memory_id for memory_id, _ in changes])
        # The keys a patch sets depend on the values and the scope only (see set_fields):
        # each distinct `fields` is validated once, on a record of the scope.
        template = MemoryRecord.new("(a record of the scope)", "semantic", scope=scope)
        made: dict[str, pt.Patch] = {}
        patches = []
        for memory_id, (_, fields) in sorted(zip(ids, changes, strict=True), key=_by_fields):
            if not fields:
                continue
            key = repr(sorted(fields.items()))
            if key not in made:
                made[key] = pt.make_patch(template, fields)
            patches.append(made[key]._replace(id=memory_id))
        if patches:
            yield from self._write_accesses(scope, patches, where)

    def _write_accesses(
        self, scope: Scope, patches: list[pt.Patch], where: tuple[pt.Condition, ...]
    ) -> Program[None]:
        """The conditional write of :meth:`set_fields_each` (``where``: ``scope``'s
        conditions); the Edge store keeps access statistics beside its points instead (a
        backend may override this step)."""
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
            check_int(value, name, error=InvalidValueError, expected="must be a positive integer")
        sides: list[Side] = []
        if dense is not None:
            sides.append("dense")
        if sparse is not None:
            sides.append("sparse")
        plan = list_plan(
            sides,
            limit=limit,
            candidates=max(candidates, limit),
            boost=boost,
            explain=explain,
            exact=exact,
        )
        return (yield from self._answer(scope, filter, dense, sparse, plan))

    def _answer(
        self,
        scope: Scope,
        flt: RecordFilter | None,
        dense: Sequence[float] | None,
        sparse: SparseVector | None,
        plan: FusionPlan,
    ) -> Program[list[ScoredRecord]]:
        """Answer a ranking ``plan`` with the steps: score requests are searches without
        payload (those asked together, one batch), the record request one retrieve (with
        the dense vectors when asked)."""
        conditions = pt.build_conditions(scope, flt)
        vectors: dict[Side, list[float] | SparseVector] = {}
        if dense is not None:
            vectors["dense"] = pt.validate_dense(dense, self._dimension)
        if sparse is not None:
            vectors["sparse"] = pt.validate_sparse(sparse)

        def spec(request: ScoreRequest) -> pt.QuerySpec:
            conds = conditions
            if request.ids is not None:
                conds = (*conds, pt.HasIds(request.ids))
            if request.window is not None:
                start, end = request.window
                conds = (*conds, pt.Range("created_ts", start.timestamp(), end.timestamp()))
            if request.side not in vectors:
                msg = f"the search plan asks for {request.side} scores but has no such vector"
                raise InvalidValueError(msg)
            exact = request.exact or request.ids is not None
            return pt.QuerySpec(conds, request.limit, vectors[request.side], exact)

        scores = functools.partial(self._scores, spec)
        records = functools.partial(self._records, scope)
        return (yield from run_plan(plan, scores, records))

    def _scores(
        self, spec: Callable[[ScoreRequest], pt.QuerySpec], batch: list[ScoreRequest]
    ) -> Program[list[dict[str, float]]]:
        """The raw scores of a plan's score requests (one batch of searches)."""
        found = yield from self._query_batch([spec(one) for one in batch])
        return [{h.id: h.score for h in hits} for hits in found]

    def _records(self, scope: Scope, request: RecordRequest) -> Program[dict[str, Any]]:
        """The records a plan asks for that are in ``scope``, by id; with ``vectors``, each
        with its dense vector."""
        ids = list(request.ids)
        if request.vectors:
            pairs = yield from self._retrieve_dense(ids)
            return {
                h.id: (pt.record_from_payload(h.id, h.payload), vector)
                for h, vector in pairs
                if pt.in_scope(h.payload, scope)
            }
        rows = yield from self._retrieve(ids)
        return {
            h.id: pt.record_from_payload(h.id, h.payload)
            for h in rows
            if pt.in_scope(h.payload, scope)
        }

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
        conds = pt.build_conditions(scope, filter)
        check_int(limit, "limit", error=InvalidValueError, expected="must be a positive integer")
        if order_by is None:
            start = None if offset is None else pt.validate_ids([offset])[0]
            hits, nxt = yield from self._scroll(pt.ScrollSpec(conds, limit, start))
            records = [pt.record_from_payload(h.id, h.payload) for h in hits]
            return records, None if nxt is None else str(nxt)
        if order_by not in ("created_ts", "last_accessed_ts"):
            msg = f"order_by must be 'created_ts' or 'last_accessed_ts', got {order_by!r}"
            raise InvalidValueError(msg)
        value, skip = (None, 0) if offset is None else pt.decode_cursor(offset, order_by)
        order = pt.OrderSpec(order_by, value)
        rows, _ = yield from self._scroll(pt.ScrollSpec(conds, limit + skip + 1, None, order))
        rows = rows[skip:]
        page = rows[:limit]
        records = [pt.record_from_payload(h.id, h.payload) for h in page]
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
        return records, pt.encode_cursor(order_by, last, same)

    @_operation
    def user_ids(self, space: str = "memories", limit: int = 100_000) -> Program[list[str]]:
        """The ids of the users with records in ``space`` (at most ``limit``), sorted: read
        from the tenant index (a facet), not from the records. For tools that list users
        (the inspector); every other operation stays inside one scope."""
        where = (pt.Match(pt.SPACE_FIELD, (space,)),)
        return sorted((yield from self._facet(pt.TENANT_FIELD, where, limit)))

    @_operation
    def count_by(
        self,
        scope: Scope,
        field: str,
        *,
        filter: RecordFilter | None = None,
        limit: int = 1_000,
    ) -> Program[dict[str, int]]:
        """How many records in ``scope`` matching ``filter`` have each value of ``field``
        (one of :data:`COUNTABLE_FIELDS`): one indexed pass (a facet) instead of a
        :meth:`count` per value. At most ``limit`` values, the most frequent first; records
        without the field are in no entry.

        Raises:
            InvalidValueError: ``field`` is not countable, or ``limit`` not a positive int.
        """
        if field not in COUNTABLE_FIELDS:
            msg = f"count_by counts one of {', '.join(COUNTABLE_FIELDS)}; got {field!r}"
            raise InvalidValueError(msg)
        check_int(limit, "limit", error=InvalidValueError, expected="must be a positive integer")
        return (yield from self._facet(field, pt.build_conditions(scope, filter), limit))

    @_operation
    def count(self, scope: Scope, *, filter: RecordFilter | None = None) -> Program[int]:
        """How many records in ``scope`` match ``filter``."""
        return (yield from self._count(pt.build_conditions(scope, filter)))

    @_operation
    def fused_search(
        self,
        scope: Scope,
        filter: RecordFilter,
        dense: Sequence[float] | None,
        sparse: SparseVector | None,
        plan: FusionPlan,
    ) -> Program[list[ScoredRecord]]:
        """Run a search plan with payload-free searches (see ``MemoryStore.fused_search``)."""
        return (yield from self._answer(scope, filter, dense, sparse, plan))

    aupsert = async_twin(upsert)
    aget = async_twin(get)
    aget_vectors = async_twin(get_vectors)
    adelete = async_twin(delete)
    aset_fields = async_twin(set_fields)
    aset_fields_each = async_twin(set_fields_each)
    asearch = async_twin(search)
    ascroll = async_twin(scroll)
    acount = async_twin(count)
    acount_by = async_twin(count_by)
    afused_search = async_twin(fused_search)


def _by_fields(pair: tuple[str, tuple[str, Mapping[str, Any]]]) -> str:
    return repr(sorted(pair[1][1].items()))  # equal patches side by side: one call each


def _legacy_space_patch(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {pt.SPACE_FIELD: pt.legacy_space(payload)}


def _current_scope_patch(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {pt.CURRENT_SCOPE_FIELD: pt.current_scope(payload["user_id"], payload[pt.SPACE_FIELD])}
