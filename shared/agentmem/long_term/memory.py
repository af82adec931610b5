"""``LongTermMemory``: scoped storage and hybrid retrieval of memories that outlive sessions.

Writes validate first, embed (dense, cached by content) and encode (BM25), then upsert;
nothing reaches the store unless all of that succeeded. Reads embed the query, search the
store inside the scope, drop near-duplicates, and record the access (``last_accessed_at``,
``access_count``) on what they return.

Content longer than the embedding model's input limit (all-MiniLM-L6-v2: 256 word pieces,
about 180 English words) is embedded from its beginning only, as the model truncates; the
BM25 side indexes the whole text. Content over :data:`MAX_CONTENT_CHARS` is refused: split
it into several memories.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError
from typing_extensions import Unpack

from agentmem._sansio import Program, async_twin, call, twin
from agentmem._util.pydantic_errors import describe
from agentmem.embeddings import Embedder
from agentmem.errors import (
    DimensionMismatchError,
    InvalidValueError,
    MemoryNotFoundError,
)
from agentmem.long_term._validate import (
    MAX_CONTENT_CHARS,
    build_record,
    check_record,
    memory_id_of,
    query_filter,
    with_changes,
)
from agentmem.long_term.embedder_record import bind_embedder
from agentmem.long_term.expansion import EntityCounts, ExpansionConfig, expand
from agentmem.long_term.links import link_records
from agentmem.long_term.ranking import RankingConfig, SearchMode, ranking_plan
from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.results import RecallResults
from agentmem.long_term.store import FusionPlan, MemoryStore, ScoredRecord, SparseVector
from agentmem.long_term.temporal import date_terms
from agentmem.sparse import Bm25Encoder, SparseEncoder
from agentmem.types import utcnow

if TYPE_CHECKING:
    from agentmem.backends import BackendOptions

__all__ = ["CONTEXT_KEY", "MAX_CONTENT_CHARS", "LongTermMemory", "index_text"]

logger = logging.getLogger(__name__)

#: Metadata key of a memory's context: text indexed lexically with the memory (what it
#: answers, e.g. the previous turns of a conversation) but never shown as its content.
CONTEXT_KEY = "agentmem_context"


def index_text(record: MemoryRecord) -> str:
    """What the BM25 side indexes for ``record``: its context (``metadata[CONTEXT_KEY]``),
    its content, and the month and year it was formed (:func:`date_terms`).

    Example:
        >>> from datetime import datetime, timezone
        >>> from agentmem.long_term.records import MemoryRecord, Scope
        >>> r = MemoryRecord.new("Yes, twice!", "episodic", scope=Scope(user_id="u"),
        ...     created_at=datetime(2023, 5, 8, tzinfo=timezone.utc),
        ...     metadata={CONTEXT_KEY: "Did you go to Paris?"})
        >>> index_text(r).splitlines()
        ['Did you go to Paris?', 'Yes, twice!', 'May 2023']
    """
    parts = [record.content, date_terms(record.created_at)]
    context = record.metadata.get(CONTEXT_KEY)
    if isinstance(context, str) and context.strip():
        parts.insert(0, context)
    return "\n".join(parts)


def _index_texts(records: Sequence[MemoryRecord]) -> list[str]:
    return [index_text(r) for r in records]


class LongTermMemory:
    """Memories that outlive sessions, scoped to a user (and optionally agent and session).

    Args:
        store: Where memories live (:class:`~agentmem.stores.qdrant.edge.QdrantEdgeStore`
            on disk by default through :meth:`open`).
        embedder: Dense embedder; its dimension must match the store's.
        user_id: Owner of the memories (required).
        agent_id: Narrow the scope to one agent.
        session_id: Narrow the scope to one session (reads see only that session's
            memories; leave unset for memory that spans sessions).
        sparse: BM25 encoder (default :class:`~agentmem.sparse.Bm25Encoder`).
        ranking: How search ranks results.
        expansion: Entity links at write time and the second search stage (link hops,
            feedback query, session lift); all off by default
            (:mod:`agentmem.long_term.expansion`).
        clock: Zero-argument callable returning an aware ``datetime`` (default: UTC now).
        on_close: What :meth:`close` does with the store. Default: close it. A store shared
            by several memories (a :class:`~agentmem.MemoryService`'s, or a home's opened by
            :meth:`open`) passes the release of its share instead.

    Example:
        >>> from agentmem.long_term import LongTermMemory
        >>> memory = LongTermMemory.open(user_id="alice", home=tmp_home)  # doctest: +SKIP
        >>> _ = memory.store_memory("Alice indents with tabs", "semantic")  # doctest: +SKIP
        >>> memory.retrieve_memories("indentation?")[0].record.content  # doctest: +SKIP
        'Alice indents with tabs'
    """

    def __init__(
        self,
        *,
        store: MemoryStore,
        embedder: Embedder,
        user_id: str,
        agent_id: str | None = None,
        session_id: str | None = None,
        sparse: SparseEncoder | None = None,
        ranking: RankingConfig | None = None,
        expansion: ExpansionConfig | None = None,
        clock: Callable[[], datetime] | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        try:
            self.scope = Scope(user_id=user_id, agent_id=agent_id, session_id=session_id)
        except ValidationError as exc:
            raise InvalidValueError(describe(exc, "memory")) from None
        if embedder.dimension != store.dimension:
            msg = (
                f"the embedder makes {embedder.dimension}-dimensional vectors but the store "
                f"holds {store.dimension}-dimensional ones; use the embedder the store was "
                "created with, or a new store path / collection"
            )
            raise DimensionMismatchError(msg)
        bind_embedder(store, embedder)  # EmbedderMismatchError: another model made them
        self.store = store
        self.embedder = embedder
        self.sparse: SparseEncoder = sparse if sparse is not None else Bm25Encoder()
        self.ranking = ranking if ranking is not None else RankingConfig()
        self.expansion = expansion if expansion is not None else ExpansionConfig()
        self._entity_counts = EntityCounts()
        self._clock = clock if clock is not None else utcnow
        self._on_close: Callable[[], None] | None = on_close if on_close else store.close

    @classmethod
    def open(
        cls,
        *,
        user_id: str,
        agent_id: str | None = None,
        session_id: str | None = None,
        home: str | Path | None = None,
        embedder: Embedder | None = None,
        ranking: RankingConfig | None = None,
        expansion: ExpansionConfig | None = None,
        **backend: Unpack[BackendOptions],
    ) -> LongTermMemory:
        """Long-term memory on the embedded defaults: Qdrant Edge under ``home`` and the
        local all-MiniLM-L6-v2 embedder (loaded once per process). ``home`` defaults to
        ``AGENTMEM_HOME``; ``memory_url=`` (or ``AGENTMEM_MEMORY_URL``) names another store
        (:class:`~agentmem.backends.BackendOptions`).

        Any number of memories (users) can be open at once in one process on one home:
        they share its store, which closes with the last of them.

        Example:
            >>> memory = LongTermMemory.open(  # doctest: +SKIP
            ...     user_id="alice", memory_url="qdrant+http://localhost:6333"
            ... )
        """
        from agentmem.backends import BackendConfig, acquire_memory_store
        from agentmem.embeddings import default_embedder

        config = BackendConfig.resolve(home, **backend)
        embedder = embedder if embedder is not None else default_embedder()
        lease = acquire_memory_store(config, dimension=embedder.dimension)
        try:
            return cls(
                store=lease.value,
                embedder=embedder,
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id,
                ranking=ranking,
                expansion=expansion,
                on_close=lease.release,
            )
        except BaseException:
            lease.release()
            raise

    def _repr_html_(self) -> str:
        """Counts by type, the newest memories and the forgetting candidates (notebooks)."""
        from agentmem.inspector.reprs import long_term_repr

        return long_term_repr(self)

    def close(self) -> None:
        """Close the store, or release this memory's share of a shared one (idempotent)."""
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()

    # -- writing ---------------------------------------------------------------------------

    def new_record(
        self,
        content: str,
        memory_type: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        importance: float = 1.0,
        **fields: Any,
    ) -> MemoryRecord:
        """Validate and build a record in this memory's scope (not stored yet).

        Raises:
            InvalidValueError: Empty or oversized content, unknown type, a subtype that is
                not a short token (``a-z 0-9 _ -``), importance outside [0, 1] or NaN,
                non-JSON metadata, bad ids or timestamps.
        """
        fields.setdefault("created_at", self._clock())
        return build_record(self.scope, content, memory_type, metadata, importance, fields)

    @twin
    def store_memory(
        self,
        /,
        content: str,
        memory_type: str,
        metadata: Mapping[str, Any] | None = None,
        importance: float = 1.0,
        **fields: Any,
    ) -> Program[MemoryRecord]:
        """Store one memory; returns the stored record.

        ``fields`` sets other :class:`MemoryRecord` fields (``subtype``, ``created_at``,
        ``source_session_id``, ``source_message_ids``, ``concept``, ``relations``,
        ``pinned``, ...).
        """
        record = self.new_record(
            content, memory_type, metadata=metadata, importance=importance, **fields
        )
        stored = yield from self._store_records([record])
        return stored[0]

    astore_memory = async_twin(store_memory)

    @twin
    def store_records(self, records: Sequence[MemoryRecord]) -> Program[None]:
        """Embed and upsert records in one batch (all in this memory's scope)."""
        yield from self._store_records(records)

    astore_records = async_twin(store_records)

    def _store_records(self, records: Sequence[MemoryRecord]) -> Program[list[MemoryRecord]]:
        records = self._own(records)
        if not records:
            return []
        if self.expansion.link:
            records = link_records(records)
        self._entity_counts.clear()
        texts = [r.content for r in records]
        dense = yield from call(
            self.embedder.embed_documents, self.embedder.aembed_documents, texts
        )
        sparse = self.sparse.encode_documents(_index_texts(records))
        yield from call(self.store.upsert, self.store.aupsert, records, dense, sparse)
        return records

    def _own(self, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """Check records written as given (imports, replays) exactly like new ones: scope,
        size and JSON; their content hash is always derived from their content."""
        for record in records:
            if not isinstance(record, MemoryRecord):
                msg = f"store_records takes MemoryRecord objects, got {type(record).__name__}"
                raise InvalidValueError(msg)
            if record.scope.user_id != self.scope.user_id:
                msg = (
                    f"record {record.id} belongs to user {record.scope.user_id!r}, not "
                    f"{self.scope.user_id!r}; write it through that user's LongTermMemory"
                )
                raise InvalidValueError(msg)
            if record.scope.space != self.scope.space:
                msg = (
                    f"record {record.id} belongs to the {record.scope.space!r} space, not "
                    f"{self.scope.space!r}; memories cannot be written into another space"
                )
                raise InvalidValueError(msg)
            check_record(record)
        return list(records)

    # -- reading ---------------------------------------------------------------------------

    def _plan(
        self,
        query: str,
        top_k: int,
        memory_type: str | None,
        min_importance: float,
        mode: SearchMode | None,
        filter: RecordFilter | None,
        include_history: bool,
    ) -> tuple[SearchMode, RecordFilter, SparseVector | None]:
        mode, merged = query_filter(
            query,
            top_k,
            memory_type,
            min_importance,
            mode or self.ranking.mode,
            filter,
            include_history,
        )
        sparse = self.sparse.encode_query(query) if mode in ("hybrid", "bm25") else None
        return mode, merged, sparse

    @twin
    def retrieve_memories(
        self,
        query: str,
        top_k: int = 5,
        memory_type: str | None = None,
        min_importance: float = 0.0,
        *,
        mode: SearchMode | None = None,
        filter: RecordFilter | None = None,
        include_history: bool = False,
        explain: bool = False,
        touch: bool = True,
        query_vector: Sequence[float] | None = None,
    ) -> Program[list[ScoredRecord]]:
        """The ``top_k`` memories most relevant to ``query`` in this scope, best first.

        Args:
            query: What to look for.
            top_k: How many results.
            memory_type: Only this type.
            min_importance: Only memories at least this important.
            mode: ``hybrid``, ``dense`` or ``bm25`` (default: the ranking config's).
            filter: More conditions (see :class:`RecordFilter`).
            include_history: Also return superseded memories.
            explain: Fill ``components`` with each part of the score.
            touch: Record the access on the returned memories.
            query_vector: The dense vector to search with, already embedded (say, a batch
                of texts embedded in one call); ``query`` is then not embedded.

        Raises:
            DimensionMismatchError: ``query_vector`` does not have the embedder's dimension.
        """
        mode, flt, sparse = self._plan(
            query, top_k, memory_type, min_importance, mode, filter, include_history
        )
        dense: list[float] | None = None
        if mode in ("hybrid", "dense") and query_vector is not None:
            if len(query_vector) != self.embedder.dimension:
                msg = (
                    f"query_vector has {len(query_vector)} values; this memory's embedder "
                    f"makes {self.embedder.dimension}-dimensional vectors"
                )
                raise DimensionMismatchError(msg)
            dense = [float(x) for x in query_vector]
        elif mode in ("hybrid", "dense"):
            embedder = self.embedder
            dense = yield from call(embedder.embed_query, embedder.aembed_query, query)
        # One plan for every mode: it reads the records (with their vectors when the
        # ranking diversifies) and returns the final top_k.
        plan = self._ranking_plan(query, mode, self.expansion.first_stage(top_k), sparse, explain)
        store = self.store
        results = yield from call(
            store.fused_search, store.afused_search, self.scope, flt, dense, sparse, plan
        )
        if self.expansion.active:
            results = yield from expand(
                store,
                self.scope,
                flt,
                results,
                self.expansion,
                top_k=top_k,
                explain=explain,
                encode=lambda records: self.sparse.encode_documents(_index_texts(records)),
                counts=self._entity_counts,
            )
        if touch and results:
            yield from self._record_access(results)
        return RecallResults(results)

    aretrieve_memories = async_twin(retrieve_memories)

    def _record_access(self, results: Sequence[ScoredRecord]) -> Program[None]:
        now = self._clock()
        store = self.store
        each = getattr(store, "set_fields_each", None)
        if each is not None:  # one read and one write for all hits (the Qdrant stores)
            changes = [
                (h.record.id, {"last_accessed_at": now, "access_count": h.record.access_count + 1})
                for h in results
            ]
            yield from call(each, store.aset_fields_each, self.scope, changes)  # type: ignore[attr-defined]
            return
        # Any MemoryStore: one write per distinct access count, not one per hit.
        by_count: dict[int, list[str]] = {}
        for hit in results:
            by_count.setdefault(hit.record.access_count, []).append(hit.record.id)
        for count, ids in by_count.items():
            yield from self._set_fields(ids, {"last_accessed_at": now, "access_count": count + 1})

    def _ranking_plan(
        self, query: str, mode: SearchMode, top_k: int, sparse: SparseVector | None, explain: bool
    ) -> FusionPlan:
        return ranking_plan(
            self.ranking,
            query=query,
            mode=mode,
            has_sparse=sparse is not None and bool(sparse.indices),
            top_k=top_k,
            now=self._clock(),
            explain=explain,
        )

    @twin
    def get_memory(self, memory_id: str) -> Program[MemoryRecord]:
        """The memory with this id in this scope.

        Raises:
            MemoryNotFoundError: No such memory in this scope.
            InvalidValueError: ``memory_id`` is not a UUID.
        """
        return (yield from self._get_memory(memory_id))

    aget_memory = async_twin(get_memory)

    def _get_memory(self, memory_id: str) -> Program[MemoryRecord]:
        ids = [memory_id_of(memory_id)]
        found = yield from call(self.store.get, self.store.aget, self.scope, ids)
        if not found:
            msg = f"no memory {memory_id!r} for user {self.scope.user_id!r}"
            raise MemoryNotFoundError(msg)
        return found[0]

    @twin
    def get_records(self, memory_ids: Sequence[str]) -> Program[list[MemoryRecord]]:
        """The memories with these ids in this scope, in the order given; ids not in this
        scope are skipped.

        Raises:
            InvalidValueError: An id is not a UUID.
        """
        ids = [memory_id_of(i) for i in memory_ids]
        if not ids:
            return []
        return (yield from call(self.store.get, self.store.aget, self.scope, ids))

    aget_records = async_twin(get_records)

    @twin
    def count_memories(self, filter: RecordFilter | None = None) -> Program[int]:
        """How many memories in this scope match ``filter`` (default: current ones only;
        ``RecordFilter(include_history=True)`` counts superseded ones too)."""
        return (yield from call(self.store.count, self.store.acount, self.scope, filter=filter))

    acount_memories = async_twin(count_memories)

    @twin
    def scroll_records(
        self,
        filter: RecordFilter | None = None,
        *,
        limit: int = 256,
        offset: str | None = None,
        order_by: Literal["created_ts", "last_accessed_ts"] | None = None,
    ) -> Program[tuple[list[MemoryRecord], str | None]]:
        """A page of this scope's memories matching ``filter``, and the offset of the next
        page (``None`` at the end); see ``MemoryStore.scroll`` for ``order_by``."""
        return (
            yield from call(
                self.store.scroll,
                self.store.ascroll,
                self.scope,
                filter=filter,
                limit=limit,
                offset=offset,
                order_by=order_by,
            )
        )

    ascroll_records = async_twin(scroll_records)

    # -- updating and forgetting ------------------------------------------------------------

    @twin
    def update_fields(self, memory_ids: Sequence[str], fields: Mapping[str, Any]) -> Program[None]:
        """Patch fields (``importance``, ``access_count``, ``last_accessed_at``,
        ``valid_to``, ``superseded_by``, ``pinned``, ``metadata``) of these memories in
        this scope; vectors and content are unchanged.

        Raises:
            MemoryNotFoundError: An id is not in this scope (nothing is changed).
            InvalidValueError: A bad id, field or value (nothing is changed).
        """
        return (yield from self._set_fields([memory_id_of(i) for i in memory_ids], fields))

    aupdate_fields = async_twin(update_fields)

    def _set_fields(self, ids: list[str], fields: Mapping[str, Any]) -> Program[None]:
        if ids:
            yield from call(self.store.set_fields, self.store.aset_fields, self.scope, ids, fields)

    @twin
    def supersede_memory(self, memory_id: str, by: MemoryRecord) -> Program[None]:
        """End the memory ``memory_id``: ``by`` replaces it from ``by.created_at`` on
        (``valid_to``, ``superseded_by``). It stays readable with ``include_history``.

        Raises:
            MemoryNotFoundError: No such memory in this scope.
        """
        fields = {"valid_to": by.created_at, "superseded_by": by.id}
        return (yield from self._set_fields([memory_id_of(memory_id)], fields))

    asupersede_memory = async_twin(supersede_memory)

    @twin
    def update_memory_importance(
        self, memory_id: str, new_importance: float
    ) -> Program[MemoryRecord]:
        """Set a memory's importance; returns the updated record."""
        record = yield from self._get_memory(memory_id)
        updated = with_changes(record, importance=new_importance)
        yield from self._set_fields([record.id], {"importance": updated.importance})
        return updated

    aupdate_memory_importance = async_twin(update_memory_importance)

    @twin
    def delete_memory(self, memory_id: str) -> Program[bool]:
        """Delete one memory; returns whether it existed in this scope."""
        return (yield from self._delete([memory_id])) > 0

    adelete_memory = async_twin(delete_memory)

    @twin
    def delete_memories(self, memory_ids: Sequence[str]) -> Program[int]:
        """Delete these memories in this scope; returns how many existed."""
        return (yield from self._delete(memory_ids))

    adelete_memories = async_twin(delete_memories)

    def _delete(self, memory_ids: Sequence[str]) -> Program[int]:
        ids = [memory_id_of(i) for i in memory_ids]
        if not ids:
            return 0
        self._entity_counts.clear()
        return (yield from call(self.store.delete, self.store.adelete, self.scope, ids))

    @twin
    def forget_old_memories(
        self, days_threshold: float = 90, min_importance: float = 0.3
    ) -> Program[int]:
        """Delete unpinned memories unused for ``days_threshold`` days and less important
        than ``min_importance``; returns how many were deleted (each one is logged).

        Age runs from the last access, else from creation. For retention scores,
        capacity limits and dry runs, use :class:`agentmem.controller.ForgettingPolicy`.
        """
        records = yield from self._all_records(None)
        doomed = self._unused(records, days_threshold, min_importance)
        return (yield from self._delete([r.id for r in doomed]))

    aforget_old_memories = async_twin(forget_old_memories)

    def _unused(
        self, records: Sequence[MemoryRecord], days: float, min_importance: float
    ) -> list[MemoryRecord]:
        if not (math.isfinite(days) and days >= 0) or not 0 <= min_importance <= 1:
            msg = (
                "days_threshold must be >= 0 and min_importance in [0, 1], got "
                f"{days!r} and {min_importance!r}"
            )
            raise InvalidValueError(msg)
        cutoff = self._clock() - timedelta(days=days)
        doomed = [
            r
            for r in records
            if not r.pinned
            and r.importance < min_importance
            and (r.last_accessed_at or r.created_at) < cutoff
        ]
        for r in doomed:
            logger.info(
                "forgot memory %s of user %r (unused since %s, importance %.2f): %.80r",
                r.id,
                r.scope.user_id,
                (r.last_accessed_at or r.created_at).isoformat(),
                r.importance,
                r.content,
            )
        return doomed

    @twin
    def all_records(self, filter: RecordFilter | None = None) -> Program[list[MemoryRecord]]:
        """Every record in this scope matching ``filter`` (default: history included)."""
        return (yield from self._all_records(filter))

    aall_records = async_twin(all_records)

    def _all_records(self, filter: RecordFilter | None) -> Program[list[MemoryRecord]]:
        flt = filter if filter is not None else RecordFilter(include_history=True)
        records: list[MemoryRecord] = []
        offset: str | None = None
        while True:
            page, offset = yield from call(
                self.store.scroll,
                self.store.ascroll,
                self.scope,
                filter=flt,
                limit=512,
                offset=offset,
            )
            records.extend(page)
            if offset is None:
                return records
