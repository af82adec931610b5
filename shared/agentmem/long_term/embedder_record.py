"""The embedder record of a long-term store: whose vectors it holds, and the check at open.

A store that implements :class:`RecordsEmbedder` (Qdrant Edge: a file beside the shard;
qdrant-client: the collection's metadata; the in-memory store: an attribute) keeps one small
JSON object::

    {"format": 1,
     "identity": {"model": ..., "dimension": ..., "fingerprint": ...},   # or null
     "reembed": null | {"source": ..., "target": ..., "user": ..., "offset": ..., "done": n}}

:func:`bind_embedder` runs whenever a :class:`~agentmem.long_term.LongTermMemory` or a
:class:`~agentmem.MemoryService` is built on a store:

* no identity yet (a new store, or one written by an agentmem that recorded only the
  dimension): the store adopts the identity of this first opener, silently;
* the same embedder (:meth:`EmbedderIdentity.same_as`): nothing happens;
* another embedder of the same dimension: :class:`~agentmem.errors.EmbedderMismatchError`;
* a re-embedding (:mod:`agentmem.long_term.reembed`) started and not finished:
  :class:`~agentmem.errors.EmbedderMismatchError` for either model, naming the command that
  finishes it. Memories half in one model and half in the other would rank as noise.

A store that does not implement :class:`RecordsEmbedder` (a third-party ``MemoryStore``) is
checked by dimension only, as before.

Example:
    >>> from agentmem.stores.in_memory import InMemoryMemoryStore
    >>> class Named:
    ...     def __init__(self, name): self.model_name, self.dimension = name, 4
    >>> store = InMemoryMemoryStore(dimension=4)
    >>> bind_embedder(store, Named("model-a")).model  # adopted
    'model-a'
    >>> bind_embedder(store, Named("model-b"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentmem.errors.EmbedderMismatchError: this store's vectors were made by 'model-a' ...
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from typing_extensions import Protocol, runtime_checkable

from agentmem.embeddings.identity import EmbedderIdentity, embedder_identity
from agentmem.errors import EmbedderMismatchError, InvalidValueError, StoreCorruptedError

__all__ = [
    "EmbedderRecord",
    "RecordsEmbedder",
    "ReembedState",
    "bind_embedder",
    "read_record",
    "write_record",
]

logger = logging.getLogger(__name__)

_FORMAT = 1
REEMBED_HINT = (
    "finish it with `agentmem reembed` (or agentmem.long_term.reembed.reembed(store, "
    "embedder)) and the new model"
)


@runtime_checkable
class RecordsEmbedder(Protocol):
    """A store that keeps an embedder record (see the module docstring)."""

    def read_embedder_record(self) -> dict[str, Any] | None:
        """The stored JSON object, or ``None`` when the store has none yet."""
        ...

    def write_embedder_record(self, record: Mapping[str, Any]) -> None:
        """Replace the stored object, durably, before returning."""
        ...


@dataclass(frozen=True)
class ReembedState:
    """An unfinished re-embedding: from ``source`` to ``target``; every memory of the users
    before ``user`` (in sorted order) is done, and of ``user`` those before the id
    ``offset`` (``user`` ``None``: none yet)."""

    source: EmbedderIdentity | None
    target: EmbedderIdentity
    user: str | None = None
    offset: str | None = None
    done: int = 0


@dataclass(frozen=True)
class EmbedderRecord:
    """What a store records about its embedder."""

    identity: EmbedderIdentity | None = None
    reembed: ReembedState | None = None

    def to_json(self) -> dict[str, Any]:
        """The stored JSON object."""
        state = self.reembed
        return {
            "format": _FORMAT,
            "identity": None if self.identity is None else self.identity.to_json(),
            "reembed": None
            if state is None
            else {
                "source": None if state.source is None else state.source.to_json(),
                "target": state.target.to_json(),
                "user": state.user,
                "offset": state.offset,
                "done": state.done,
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EmbedderRecord:
        """Read :meth:`to_json`'s output back (``InvalidValueError`` if malformed)."""
        if data.get("format") != _FORMAT:
            msg = f"unknown embedder record format {data.get('format')!r}"
            raise InvalidValueError(msg)
        raw_identity, raw_state = data.get("identity"), data.get("reembed")
        identity = None if raw_identity is None else EmbedderIdentity.from_json(raw_identity)
        state = None
        if raw_state is not None:
            if not isinstance(raw_state, Mapping):
                msg = "the re-embed state of an embedder record must be an object"
                raise InvalidValueError(msg)
            user, offset, done = raw_state.get("user"), raw_state.get("offset"), raw_state["done"]
            if not (user is None or isinstance(user, str)) or not (
                offset is None or isinstance(offset, str)
            ):
                msg = "the re-embed cursor of an embedder record must hold strings"
                raise InvalidValueError(msg)
            if isinstance(done, bool) or not isinstance(done, int) or done < 0:
                msg = f"the re-embed count must be a whole number >= 0, got {done!r}"
                raise InvalidValueError(msg)
            source = raw_state.get("source")
            state = ReembedState(
                None if source is None else EmbedderIdentity.from_json(source),
                EmbedderIdentity.from_json(raw_state.get("target")),
                user,
                offset,
                done,
            )
        return cls(identity, state)


def read_record(store: RecordsEmbedder, where: str = "the store") -> EmbedderRecord:
    """The store's embedder record (empty when it has none).

    Raises:
        StoreCorruptedError: The stored object is malformed.
    """
    data = store.read_embedder_record()
    if data is None:
        return EmbedderRecord()
    try:
        return EmbedderRecord.from_json(data)
    except (InvalidValueError, KeyError, TypeError) as exc:
        msg = (
            f"the embedder record of {where} is damaged ({exc}); restore the store from a "
            "backup, or remove the record to let the next opener's embedder be adopted"
        )
        raise StoreCorruptedError(msg) from None


def write_record(store: RecordsEmbedder, record: EmbedderRecord) -> None:
    """Replace the store's embedder record (durably)."""
    store.write_embedder_record(record.to_json())


def bind_embedder(store: object, embedder: Any) -> EmbedderIdentity | None:
    """Check that ``embedder`` made ``store``'s vectors, or let a store without a recorded
    identity adopt it (see the module docstring); the identity, or ``None`` for a store
    that keeps no record.

    Raises:
        EmbedderMismatchError: Another model of the same dimension made the vectors, or a
            re-embedding is unfinished.
    """
    if not isinstance(store, RecordsEmbedder):
        return None
    given = embedder_identity(embedder)
    where = repr(store)
    record = read_record(store, where)
    state = record.reembed
    if state is not None:
        source = "an unknown model" if state.source is None else state.source.describe()
        msg = (
            f"a re-embedding of {where} from {source} to {state.target.describe()} was "
            f"started and has not finished ({state.done} memories done): its vectors are "
            f"mixed, so no model can use it until then; {REEMBED_HINT}"
        )
        raise EmbedderMismatchError(
            msg, stored=state.target.to_json(), given=given.to_json(), reembedding=True
        )
    if record.identity is None:
        write_record(store, replace(record, identity=given))
        logger.debug("%s adopted the embedder identity %s", where, given.describe())
        return given
    if not record.identity.same_as(given):
        msg = (
            f"this store's vectors were made by {record.identity.describe()}, not by "
            f"{given.describe()}: the vectors would fit and mean nothing. Open it with the "
            f"model that made them, or re-embed it with the new one (`agentmem reembed`)"
        )
        raise EmbedderMismatchError(msg, stored=record.identity.to_json(), given=given.to_json())
    return record.identity
