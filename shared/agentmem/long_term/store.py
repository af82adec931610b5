"""The long-term store protocol, implemented by the Qdrant Edge and qdrant-client backends
(:mod:`agentmem.stores.qdrant`) and by :class:`~agentmem.stores.in_memory.InMemoryMemoryStore`.

One collection schema for every backend:

* named dense vector ``"dense"`` (cosine, the embedder's dimension);
* named sparse vector ``"bm25"`` with the IDF modifier (Qdrant computes IDF over the
  collection, so clients send term frequencies only);
* payload :meth:`MemoryRecord.to_payload`, with indexes on ``user_id`` (tenant),
  ``agent_id``, ``session_id``, ``memory_type``, ``subtype``, ``concept``,
  ``related_concepts``, ``content_hash``, ``is_current``, ``pinned`` (keyword/bool) and
  ``importance``, ``created_ts``, ``last_accessed_ts`` (float).

Every read and write takes a :class:`Scope`; no method can touch memories outside it.

Ranking (``search``): dense-only is cosine similarity; sparse-only is BM25; with both, the
two candidate lists (``candidates`` each) are fused with Reciprocal Rank Fusion. A
:class:`Boost` then adds ``importance_weight * importance`` and
``recency_weight * 0.5 ** (age_days / half_life_days)`` (age since the later of last access
and creation). RRF uses Qdrant's constant: a hit at 1-based rank ``r`` in a list adds
``1 / (r + 1)``. Every score is computed by the one ranker,
:mod:`agentmem.long_term.ranking`, from the raw scores a store finds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple, Protocol, TypeAlias, TypeVar

from typing_extensions import runtime_checkable

from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.temporal import Window
from agentmem.sparse import SparseVector

__all__ = [
    "COUNTABLE_FIELDS",
    "DENSE_VECTOR",
    "SPARSE_VECTOR",
    "Boost",
    "FusionPlan",
    "FusionRequest",
    "MemoryStore",
    "RecordRequest",
    "ScoreRequest",
    "ScoredRecord",
    "SparseVector",
]

DENSE_VECTOR = "dense"
SPARSE_VECTOR = "bm25"

#: The record fields :meth:`MemoryStore.count_by` counts by (indexed keywords; a list field
#: such as ``related_concepts`` counts a record under each of its values).
COUNTABLE_FIELDS = (
    "memory_type",
    "subtype",
    "agent_id",
    "session_id",
    "concept",
    "related_concepts",
)


@dataclass(frozen=True)
class Boost:
    """Score boosts added after retrieval (see the module docstring for the formula).

    Attributes:
        importance_weight: Weight of the memory's importance in [0, 1].
        recency_weight: Weight of the recency decay in [0, 1].
        half_life_days: Age at which the recency term halves.
        now: Reference time for ages (default: now).
    """

    importance_weight: float = 0.0
    recency_weight: float = 0.0
    half_life_days: float = 30.0
    now: datetime | None = None


class ScoredRecord(NamedTuple):
    """A search hit: the record, its final score and, when asked, the score's parts.

    ``components`` (with ``explain=True``) may hold ``dense`` (cosine), ``sparse`` (BM25),
    ``dense_rank``/``sparse_rank`` (1-based ranks in each candidate list), ``fused``
    (the fused score), ``base`` (the score before boosts), ``temporal_boost``,
    ``importance_boost``, ``recency_boost`` and ``final`` (equal to ``score``, and to the
    sum of ``base`` and the boosts: see :data:`agentmem.long_term.ranking.SCORE_PARTS`).
    """

    record: MemoryRecord
    score: float
    components: Mapping[str, float] = {}


class ScoreRequest(NamedTuple):
    """A fusion plan's request for raw scores on one side (``"dense"`` or ``"sparse"``):
    the top ``limit`` in scope, or exactly those of ``ids``; with ``window``, only memories
    formed inside it; with ``exact``, searched exhaustively (always so with ``ids``).
    Answered with ``{id: score}``, best first.

    Example:
        >>> ScoreRequest("dense", 50).ids is None
        True
    """

    side: Literal["dense", "sparse"]
    limit: int
    ids: tuple[str, ...] | None = None
    window: Window | None = None
    exact: bool = False


class RecordRequest(NamedTuple):
    """A fusion plan's request for the records of ``ids`` and, with ``vectors``, their
    dense vectors. Answered with ``{id: MemoryRecord}``, or with ``vectors``
    ``{id: (MemoryRecord, vector)}`` (ids no longer in scope left out).

    Example:
        >>> RecordRequest(("a",)).ids, RecordRequest(("a",)).vectors
        (('a',), False)
    """

    ids: tuple[str, ...]
    vectors: bool = False


#: What a fusion plan asks its store for. A tuple of score requests is answered with the
#: list of their answers, in order (a store may run them as one batch).
FusionRequest: TypeAlias = ScoreRequest | tuple[ScoreRequest, ...] | RecordRequest

#: A search plan (:func:`agentmem.long_term.ranking.ranking_plan`): yields
#: :data:`FusionRequest` values, receives their answers, returns the ranked hits.
FusionPlan: TypeAlias = Generator[FusionRequest, Any, list[ScoredRecord]]


R_co = TypeVar("R_co", covariant=True)
OrderBy = Literal["created_ts", "last_accessed_ts"]

# One signature per operation: a store's ``x`` is a callable of this shape returning the
# result, its twin ``ax`` the same shape returning an awaitable of it.


class _Upsert(Protocol[R_co]):
    def __call__(
        self,
        records: Sequence[MemoryRecord],
        dense: Sequence[Sequence[float]],
        sparse: Sequence[SparseVector],
    ) -> R_co: ...


class _ByIds(Protocol[R_co]):
    def __call__(self, scope: Scope, ids: Sequence[str]) -> R_co: ...


class _SetFields(Protocol[R_co]):
    def __call__(self, scope: Scope, ids: Sequence[str], fields: Mapping[str, Any]) -> R_co: ...


class _Search(Protocol[R_co]):
    def __call__(
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
    ) -> R_co: ...


class _Scroll(Protocol[R_co]):
    def __call__(
        self,
        scope: Scope,
        *,
        filter: RecordFilter | None = None,
        limit: int = 256,
        offset: str | None = None,
        order_by: OrderBy | None = None,
    ) -> R_co: ...


class _Count(Protocol[R_co]):
    def __call__(self, scope: Scope, *, filter: RecordFilter | None = None) -> R_co: ...


class _CountBy(Protocol[R_co]):
    def __call__(
        self, scope: Scope, field: str, *, filter: RecordFilter | None = None, limit: int = 1_000
    ) -> R_co: ...


class _FusedSearch(Protocol[R_co]):
    def __call__(
        self,
        scope: Scope,
        filter: RecordFilter,
        dense: Sequence[float] | None,
        sparse: SparseVector | None,
        plan: FusionPlan,
    ) -> R_co: ...


class _Close(Protocol[R_co]):
    def __call__(self) -> R_co: ...


Page = tuple[list[MemoryRecord], str | None]


# typing_extensions' runtime_checkable does not evaluate properties (``dimension``, the
# operations) in isinstance() checks, which typing's does on Python < 3.12.
@runtime_checkable
class MemoryStore(Protocol):
    """Scoped storage and search of long-term memories, with async twins.

    Each operation ``x`` is a method (any callable of the signature shown in its type) and
    has a twin ``ax`` taking the same arguments and returning an awaitable of the same
    result: a coroutine method, or the ``agentmem._sansio`` ``async_twin`` / ``offload`` of
    ``x``. Tiers reach a store only through this protocol.

    Example:
        >>> from agentmem.stores.in_memory import InMemoryMemoryStore
        >>> isinstance(InMemoryMemoryStore(dimension=4), MemoryStore)
        True
    """

    @property
    def dimension(self) -> int:
        """Size of the dense vectors of the collection."""

    @property
    def upsert(self) -> _Upsert[None]:
        """``upsert(records, dense, sparse)``: insert or replace records with their vectors
        (all three sequences aligned)."""

    @property
    def get(self) -> _ByIds[list[MemoryRecord]]:
        """``get(scope, ids)``: records with these ids inside ``scope``, in the order of
        ``ids``; others skipped."""

    @property
    def get_vectors(self) -> _ByIds[dict[str, list[float]]]:
        """``get_vectors(scope, ids)``: the dense vectors of records with these ids inside
        ``scope``, by id; others skipped (diversification reads them instead of
        embedding the contents again)."""

    @property
    def delete(self) -> _ByIds[int]:
        """``delete(scope, ids)``: delete records with these ids inside ``scope``; returns
        how many existed."""

    @property
    def set_fields(self) -> _SetFields[None]:
        """``set_fields(scope, ids, fields)``: patch record fields (importance,
        access_count, last_accessed_at, valid_to, superseded_by, pinned, metadata) of
        records inside ``scope``; vectors unchanged.

        Setting ``valid_to`` makes the record non-current. Raises ``MemoryNotFoundError`` if
        any id is not in ``scope`` and ``InvalidValueError`` for a bad value or field; in
        both cases nothing is changed."""

    @property
    def search(self) -> _Search[list[ScoredRecord]]:
        """``search(scope, *, dense=None, sparse=None, filter=None, limit=10,
        candidates=50, boost=None, exact=False, explain=False)``: top ``limit`` records in
        ``scope`` matching ``filter``, best first."""

    @property
    def scroll(self) -> _Scroll[Page]:
        """``scroll(scope, *, filter=None, limit=256, offset=None, order_by=None)``: a page
        of records in ``scope``; returns the page and the next offset (or None).

        Without ``order_by`` pages follow id order; with it, newest first. Records without
        the field (never accessed, for ``last_accessed_ts``) are left out of ordered scrolls.
        Pass the returned offset, with the same ``order_by``, to get the next page."""

    @property
    def count(self) -> _Count[int]:
        """``count(scope, *, filter=None)``: how many records in ``scope`` match
        ``filter``."""

    @property
    def count_by(self) -> _CountBy[dict[str, int]]:
        """``count_by(scope, field, *, filter=None, limit=1000)``: how many records in
        ``scope`` matching ``filter`` have each value of ``field`` (one of
        :data:`COUNTABLE_FIELDS`), in one indexed pass; at most ``limit`` values, the most
        frequent first."""

    @property
    def fused_search(self) -> _FusedSearch[list[ScoredRecord]]:
        """``fused_search(scope, filter, dense, sparse, plan)``: run a search ``plan``
        (:mod:`agentmem.long_term.ranking`) in ``scope`` (restricted by ``filter``) with
        these query vectors (``None`` for a side the plan does not ask); returns the
        plan's hits. A store without a faster way reuses
        :func:`agentmem.long_term._fusion.fused_search_program` (its ``search`` and
        ``get``)."""

    @property
    def close(self) -> _Close[None]:
        """``close()``: flush and release the store. Further use raises
        ``StoreClosedError``."""

    @property
    def aupsert(self) -> _Upsert[Awaitable[None]]: ...
    @property
    def aget(self) -> _ByIds[Awaitable[list[MemoryRecord]]]: ...
    @property
    def aget_vectors(self) -> _ByIds[Awaitable[dict[str, list[float]]]]: ...
    @property
    def adelete(self) -> _ByIds[Awaitable[int]]: ...
    @property
    def aset_fields(self) -> _SetFields[Awaitable[None]]: ...
    @property
    def asearch(self) -> _Search[Awaitable[list[ScoredRecord]]]: ...
    @property
    def ascroll(self) -> _Scroll[Awaitable[Page]]: ...
    @property
    def acount(self) -> _Count[Awaitable[int]]: ...
    @property
    def acount_by(self) -> _CountBy[Awaitable[dict[str, int]]]: ...
    @property
    def afused_search(self) -> _FusedSearch[Awaitable[list[ScoredRecord]]]: ...
    @property
    def aclose(self) -> _Close[Awaitable[None]]: ...
