"""Re-embed every memory of a store with another model of the same dimension.

A store records the identity of the embedder that made its vectors
(:mod:`agentmem.long_term.embedder_record`) and refuses another model
(:class:`~agentmem.errors.EmbedderMismatchError`). :func:`reembed` (``agentmem reembed`` on
the command line) is the way to move it to a new model:

1. the store's record gets a re-embed journal (source, target, cursor) before any vector
   changes; from then on, until the end, opening the store with either model raises
   :class:`~agentmem.errors.EmbedderMismatchError` naming the command that finishes it;
2. the memories of each user (``memories`` space, history included; users in sorted order,
   memories in id order) are read in batches of ``batch_size``, embedded with the new model
   and written back with their records unchanged; after each batch the cursor moves past it;
3. at the end the record holds the new identity and no journal.

Crash-safe and resumable: a batch is written before the cursor moves past it, and writing a
batch again writes the same vectors (a model is deterministic, and a resumed run embeds
exactly the batches an uninterrupted one would: the embedding cache is bypassed). So a run
killed at any point (``kill -9``) and run again with the same model ends with the same
store as a run never interrupted. Starting a re-embedding to a third model while one is
unfinished is refused.

Only the ``memories`` space is re-embedded: items of the LangGraph store adapter are
embedded by that store's own ``index`` embedder, and agentmem's internal records carry no
meaningful vectors. The BM25 side is re-encoded with ``sparse`` (the default encoder, as
:class:`~agentmem.long_term.LongTermMemory` uses). A store of another dimension cannot be
re-embedded in place (its vector size is fixed): export the memories and import them into a
new home instead.

Example:
    >>> from agentmem.stores.in_memory import InMemoryMemoryStore
    >>> from agentmem.long_term import LongTermMemory
    >>> class Model:  # any two embedders of one dimension
    ...     def __init__(self, name, v): self.model_name, self.dimension, self.v = name, 2, v
    ...     def embed_documents(self, texts): return [self.v for _ in texts]
    ...     def embed_query(self, text): return self.v
    ...     async def aembed_documents(self, texts): return self.embed_documents(texts)
    ...     async def aembed_query(self, text): return self.v
    >>> store = InMemoryMemoryStore(dimension=2)
    >>> old, new = Model("old", [1.0, 0.0]), Model("new", [0.0, 1.0])
    >>> _ = LongTermMemory(store=store, embedder=old, user_id="ann").store_memory("hi", "semantic")
    >>> reembed(store, new).memories
    1
    >>> LongTermMemory(store=store, embedder=new, user_id="ann").count_memories()
    1
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from typing_extensions import TypedDict, Unpack, runtime_checkable

from agentmem._sansio import Program, adrive, blocking, call, drive
from agentmem._util.checks import check_int
from agentmem.embeddings.base import Embedder, check_store_dimension
from agentmem.embeddings.identity import EmbedderIdentity, embedder_identity
from agentmem.errors import ConfigurationError, EmbedderMismatchError, InvalidValueError
from agentmem.long_term.embedder_record import (
    EmbedderRecord,
    RecordsEmbedder,
    ReembedState,
    read_record,
    write_record,
)
from agentmem.long_term.memory import index_text
from agentmem.long_term.records import RecordFilter, Scope
from agentmem.long_term.store import MemoryStore
from agentmem.sparse import Bm25Encoder, SparseEncoder

__all__ = ["ReembedOptions", "ReembedReport", "areembed", "reembed"]

#: ``on_progress(done, total)``: memories re-embedded so far (earlier runs included) and in all.
Progress = Callable[[int, int], None]
_SPACE = "memories"
_ALL = RecordFilter(include_history=True)


@runtime_checkable
class _ListsUsers(Protocol):
    def user_ids(self, space: str = "memories", limit: int = 100_000) -> list[str]: ...


@dataclass(frozen=True)
class ReembedReport:
    """What :func:`reembed` did.

    Attributes:
        source: The identity the store had before (``None``: it recorded none).
        target: The identity it has now.
        memories: Memories re-embedded by this call.
        total: Memories re-embedded in all (with those of an interrupted earlier run).
        resumed: Whether this call finished a re-embedding an earlier run started.
    """

    source: EmbedderIdentity | None
    target: EmbedderIdentity
    memories: int
    total: int
    resumed: bool


def _direct(embedder: Embedder) -> Embedder:
    """The embedder without its cache (see the module docstring: exact resumption)."""
    from agentmem.embeddings.cache import CachedEmbedder

    return embedder.inner if isinstance(embedder, CachedEmbedder) else embedder


def _check_store(store: object) -> RecordsEmbedder:
    if not isinstance(store, MemoryStore) or not isinstance(store, RecordsEmbedder):
        msg = (
            f"{type(store).__name__} keeps no embedder record; only agentmem's Qdrant and "
            "in-memory stores can be re-embedded"
        )
        raise ConfigurationError(msg)
    if not isinstance(store, _ListsUsers):
        msg = f"{type(store).__name__} cannot list its users, so it cannot be re-embedded"
        raise ConfigurationError(msg)
    return store


def _start(store: RecordsEmbedder, target: EmbedderIdentity) -> EmbedderRecord | None:
    """The record with the journal to follow (written when new); ``None``: nothing to do."""
    record = read_record(store, repr(store))
    state = record.reembed
    if state is not None:
        if not state.target.same_as(target):
            msg = (
                f"a re-embedding to {state.target.describe()} is unfinished; finish it with "
                f"that model first (not {target.describe()}), then re-embed again"
            )
            raise EmbedderMismatchError(
                msg, stored=state.target.to_json(), given=target.to_json(), reembedding=True
            )
        return record
    if record.identity is not None and record.identity.same_as(target):
        return None
    record = EmbedderRecord(record.identity, ReembedState(record.identity, target))
    write_record(store, record)
    return record


def _program(
    store: Any,
    embedder: Embedder,
    batch_size: int,
    sparse: SparseEncoder,
    on_progress: Progress | None,
) -> Program[ReembedReport]:
    target = embedder_identity(embedder)
    started = yield from blocking(_start, store, target)
    if started is None or started.reembed is None:
        return ReembedReport(target, target, 0, 0, resumed=False)
    state, source = started.reembed, started.identity
    resumed, before = state.user is not None, state.done
    users = sorted((yield from blocking(store.user_ids, _SPACE)))
    total = 0
    for user in users:
        total += yield from call(store.count, store.acount, Scope(user_id=user), filter=_ALL)
    total = max(total, state.done)
    if on_progress is not None:
        on_progress(state.done, total)
    model = _direct(embedder)
    for user in users:
        if state.user is not None and (
            user < state.user or (user == state.user and not state.offset)
        ):
            continue  # done by an earlier run
        offset = state.offset if user == state.user else None
        while True:
            records, following = yield from call(
                store.scroll,
                store.ascroll,
                Scope(user_id=user),
                filter=_ALL,
                limit=batch_size,
                offset=offset,
            )
            if records:
                texts = [r.content for r in records]
                dense = yield from call(model.embed_documents, model.aembed_documents, texts)
                encoded = sparse.encode_documents([index_text(r) for r in records])
                yield from call(store.upsert, store.aupsert, records, dense, encoded)
            # Only now past this batch: a crash before here writes it again, identically.
            state = replace(state, user=user, offset=following, done=state.done + len(records))
            yield from blocking(write_record, store, EmbedderRecord(source, state))
            if on_progress is not None:
                on_progress(state.done, total)
            if following is None:
                break
            offset = following
    yield from blocking(write_record, store, EmbedderRecord(target, None))
    return ReembedReport(source, target, state.done - before, state.done, resumed=resumed)


class ReembedOptions(TypedDict, total=False):
    """The keyword options of :func:`reembed` and :func:`areembed`.

    Attributes:
        batch_size: Memories embedded and written per batch (and per cursor step; 64).
        sparse: The BM25 encoder the memories were written with (default: agentmem's).
        on_progress: Called with ``(done, total)`` at the start and after each batch.
    """

    batch_size: int
    sparse: SparseEncoder | None
    on_progress: Progress | None


def _reembedding(
    store: MemoryStore, embedder: Embedder, options: ReembedOptions
) -> Program[ReembedReport]:
    """Check the arguments (before anything is written) and return the re-embedding."""
    batch_size = check_int(
        options.get("batch_size", 64),
        "batch_size",
        error=InvalidValueError,
        expected="must be a positive integer",
    )
    checked, encoder = _prepare(store, embedder, options.get("sparse"))
    return _program(checked, embedder, batch_size, encoder, options.get("on_progress"))


def _prepare(
    store: MemoryStore, embedder: Embedder, sparse: SparseEncoder | None
) -> tuple[Any, SparseEncoder]:
    checked = _check_store(store)
    check_store_dimension(
        embedder.dimension,
        store.dimension,
        otherwise="export the memories (`agentmem export`) and import them into a new home "
        "with the new model: a store's vector size is fixed",
    )
    return checked, sparse if sparse is not None else Bm25Encoder()


def reembed(
    store: MemoryStore, embedder: Embedder, **options: Unpack[ReembedOptions]
) -> ReembedReport:
    """Re-embed every memory of ``store`` with ``embedder``, or finish a re-embedding an
    earlier run started (see the module docstring). Nothing to do when the store already
    holds ``embedder``'s vectors.

    Args:
        store: An agentmem long-term store (Qdrant Edge, qdrant-client, in-memory), opened
            with the new model's dimension and not used by anything else meanwhile.
        embedder: The new model (same dimension as the store's).
        options: ``batch_size``, ``sparse``, ``on_progress`` (:class:`ReembedOptions`).

    Raises:
        DimensionMismatchError: ``embedder`` makes vectors of another size.
        EmbedderMismatchError: A re-embedding to a third model is unfinished.
        ConfigurationError: The store keeps no embedder record or cannot list its users.

    Example:
        >>> report = reembed(store, new_embedder, on_progress=print)  # doctest: +SKIP
        0 120
        64 120
        120 120
    """
    return drive(_reembedding(store, embedder, options))


async def areembed(
    store: MemoryStore, embedder: Embedder, **options: Unpack[ReembedOptions]
) -> ReembedReport:
    """Async twin of :func:`reembed`."""
    return await adrive(_reembedding(store, embedder, options))
