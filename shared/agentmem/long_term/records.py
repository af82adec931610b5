"""Long-term memory records, scopes and filters: the vocabulary every backend speaks.

A :class:`MemoryRecord` is one memory that outlives a session. It is stored as one Qdrant
point: a named dense vector, a BM25 sparse vector, and the payload :meth:`to_payload` builds.
Timestamps are kept twice in the payload: ISO-8601 text (readable) and epoch seconds
(``*_ts`` floats, indexed, used by range filters and ordered scrolls).

Example:
    >>> from agentmem.long_term.records import MemoryRecord, Scope
    >>> record = MemoryRecord.new("Alice writes Python with tabs", "semantic",
    ...                          scope=Scope(user_id="alice"), subtype="preference")
    >>> MemoryRecord.from_payload(record.id, record.to_payload()) == record
    True
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentmem._util.clock import utcnow
from agentmem._util.identifiers import check_identifier, to_identifier
from agentmem._util.session_ids import validate_session_id

__all__ = [
    "MEMORY_TYPES",
    "SPACES",
    "MemoryRecord",
    "MemoryType",
    "RecordFilter",
    "Relation",
    "Scope",
    "content_hash",
]

MemoryType = Literal["episodic", "semantic", "procedural"]
MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)

Space = Literal["memories", "langgraph", "internal"]
SPACES: tuple[str, ...] = get_args(Space)
"""The separate spaces of one store: ``memories`` (what users and agents remember),
``langgraph`` (items of the LangGraph store) and ``internal`` (agentmem's own records).
A space is a payload field in every filter, never part of an id, so no user id, however it
is spelled, can reach another space."""


def content_hash(content: str) -> str:
    """SHA-256 of the NFKC-normalized, case-folded, whitespace-collapsed content.

    Two texts that differ only in case, spacing or Unicode form hash the same, so exact
    duplicates are caught before any embedding is compared.

    Example:
        >>> content_hash("Tabs,  not spaces") == content_hash("tabs, not SPACES")
        True
    """
    norm = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()


class Scope(BaseModel):
    """Who a memory belongs to. ``user_id`` is required: no memory is unscoped.

    ``agent_id`` and ``session_id`` narrow the scope when set; a scope with only
    ``user_id`` sees all of that user's memories. ``space`` (see :data:`SPACES`) keeps
    LangGraph store items and agentmem's internal records apart from memories; every read
    and write filters on it as on ``user_id``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    agent_id: str | None = None
    session_id: str | None = None
    space: Space = "memories"

    @field_validator("user_id", "agent_id", "session_id")
    @classmethod
    def _valid_id(cls, value: str | None, info: Any) -> str | None:
        if value is None:
            return None
        return validate_session_id(value, what=info.field_name)


class Relation(BaseModel):
    """A directed edge of the concept graph: ``(record's concept) --predicate--> target``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    predicate: str = Field(min_length=1, max_length=200)
    target: str = Field(min_length=1, max_length=500)


def _aware(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        msg = "timestamps must be timezone-aware (for example datetime.now(timezone.utc))"
        raise ValueError(msg)
    return value


class MemoryRecord(BaseModel):
    """One long-term memory.

    Attributes:
        id: UUID (string form); also the Qdrant point id.
        content: The remembered text.
        memory_type: ``episodic`` (what happened), ``semantic`` (facts, concepts) or
            ``procedural`` (how to do things).
        subtype: Finer kind: ``preference``, ``fact``, ``event``, ``concept``, ... A short
            token (1-64 characters from ``a-z 0-9 _ -``, starting with a letter or digit);
            anything else is refused. A record read from a store written by an earlier
            version shows an odd stored subtype as its nearest token (``User Preference``
            reads as ``user_preference``).
        scope: Owner of the memory.
        importance: In [0, 1]; drives ranking boosts and forgetting.
        created_at: When the memory was formed (or the event happened).
        last_accessed_at: Last time a search returned it.
        access_count: How many times searches returned it.
        valid_from: Start of the period the memory was true (bi-temporal history).
        valid_to: End of that period; ``None`` while it is current.
        superseded_by: Id of the memory that replaced it.
        source_session_id: Session the memory was drawn from (provenance).
        source_message_ids: Messages it was drawn from (provenance).
        content_hash: :func:`content_hash` of ``content``.
        concept: For semantic memories, the concept the facts are about.
        relations: Edges from ``concept`` to other concepts.
        pinned: Pinned memories are never forgotten.
        metadata: Free-form JSON data.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    content: str
    memory_type: MemoryType
    subtype: str | None = None
    scope: Scope
    importance: float = 0.5
    created_at: datetime = Field(default_factory=utcnow)
    last_accessed_at: datetime | None = None
    access_count: int = Field(default=0, ge=0)
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None
    source_session_id: str | None = None
    source_message_ids: tuple[str, ...] = ()
    content_hash: str = ""
    concept: str | None = None
    relations: tuple[Relation, ...] = ()
    pinned: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _uuid(cls, value: str) -> str:
        try:
            return str(uuid.UUID(value))
        except (ValueError, AttributeError, TypeError):
            msg = f"memory id must be a UUID, got {value!r}"
            raise ValueError(msg) from None

    @field_validator("subtype")
    @classmethod
    def _subtype(cls, value: str | None) -> str | None:
        return None if value is None else check_identifier(value, "subtype")

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        if not value.strip():
            msg = "memory content must not be empty"
            raise ValueError(msg)
        return value

    @field_validator("importance")
    @classmethod
    def _importance(cls, value: float) -> float:
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            msg = f"importance must be a number in [0, 1], got {value!r}"
            raise ValueError(msg)
        return float(value)

    @field_validator("created_at", "last_accessed_at", "valid_from", "valid_to")
    @classmethod
    def _timestamps(cls, value: datetime | None) -> datetime | None:
        return _aware(value)

    @model_validator(mode="after")
    def _derived(self) -> MemoryRecord:
        # Always derived, never taken from the caller: an imported record carrying another
        # text's hash would otherwise make a later write of that text "reinforce" it.
        object.__setattr__(self, "content_hash", content_hash(self.content))
        if self.valid_from is None:
            object.__setattr__(self, "valid_from", self.created_at)
        return self

    @classmethod
    def new(
        cls,
        content: str,
        memory_type: str,
        *,
        scope: Scope,
        **fields: Any,
    ) -> MemoryRecord:
        """Build and validate a new record (``id`` and timestamps filled in)."""
        return cls(content=content, memory_type=memory_type, scope=scope, **fields)  # type: ignore[arg-type]

    @property
    def is_current(self) -> bool:
        """Whether the memory is still valid (not superseded or ended)."""
        return self.valid_to is None

    def replace(self, **changes: Any) -> MemoryRecord:
        """A validated copy with ``changes`` applied."""
        data = self.model_dump()
        data.update(changes)
        if "content" in changes and "content_hash" not in changes:
            data["content_hash"] = ""
        return type(self).model_validate(data)

    def to_payload(self) -> dict[str, Any]:
        """The Qdrant payload of this record (JSON only; scope fields flattened and indexed)."""
        payload: dict[str, Any] = {
            "content": self.content,
            "memory_type": self.memory_type,
            "subtype": self.subtype,
            "user_id": self.scope.user_id,
            "agent_id": self.scope.agent_id,
            "session_id": self.scope.session_id,
            "space": self.scope.space,
            "importance": self.importance,
            "access_count": self.access_count,
            "superseded_by": self.superseded_by,
            "is_current": self.valid_to is None,
            "source_session_id": self.source_session_id,
            "source_message_ids": list(self.source_message_ids),
            "content_hash": self.content_hash,
            "concept": self.concept,
            "relations": [r.model_dump() for r in self.relations],
            "related_concepts": sorted({r.target for r in self.relations}),
            "pinned": self.pinned,
            "metadata": self.metadata,
        }
        for name in ("created_at", "last_accessed_at", "valid_from", "valid_to"):
            moment: datetime | None = getattr(self, name)
            payload[name] = None if moment is None else moment.isoformat()
            payload[f"{name.removesuffix('_at')}_ts"] = (
                None if moment is None else moment.timestamp()
            )
        return payload

    @classmethod
    def from_payload(cls, point_id: str | int, payload: Mapping[str, Any]) -> MemoryRecord:
        """Inverse of :meth:`to_payload`."""
        return cls(
            id=str(point_id),
            content=payload["content"],
            memory_type=payload["memory_type"],
            subtype=_stored_subtype(payload.get("subtype")),
            scope=Scope(
                user_id=payload["user_id"],
                agent_id=payload.get("agent_id"),
                session_id=payload.get("session_id"),
                space=payload.get("space") or "memories",
            ),
            importance=payload.get("importance", 0.5),
            created_at=_parse(payload.get("created_at")) or utcnow(),
            last_accessed_at=_parse(payload.get("last_accessed_at")),
            access_count=payload.get("access_count", 0),
            valid_from=_parse(payload.get("valid_from")),
            valid_to=_parse(payload.get("valid_to")),
            superseded_by=payload.get("superseded_by"),
            source_session_id=payload.get("source_session_id"),
            source_message_ids=tuple(payload.get("source_message_ids") or ()),
            content_hash=payload.get("content_hash") or "",
            concept=payload.get("concept"),
            relations=tuple(Relation(**r) for r in payload.get("relations") or ()),
            pinned=bool(payload.get("pinned", False)),
            metadata=dict(payload.get("metadata") or {}),
        )


def _stored_subtype(value: object) -> str | None:
    """A stored subtype as a record holds it: earlier versions stored any text, so one
    that is not an identifier reads as its nearest one (never as the raw text)."""
    if value is None:
        return None
    try:
        return check_identifier(value)
    except ValueError:
        return to_identifier(str(value))


def _parse(value: str | None) -> datetime | None:
    if value is None:
        return None
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class RecordFilter(BaseModel):
    """Conditions on memories, combined with AND (each list field is an OR of its values).

    The scope is not part of the filter: stores take it as a separate, required argument.

    Attributes:
        memory_types: Keep these types only.
        subtypes: Keep these subtypes only.
        min_importance: Keep memories with importance >= this.
        created_after: Keep memories created at or after this time.
        created_before: Keep memories created before this time.
        include_history: Also return superseded / ended memories (default: current only).
        concepts: Keep semantic memories about these concepts.
        related_to: Keep memories with a relation to one of these concepts.
        ids: Keep these ids only.
        superseded_by: Keep the memories these ids superseded (the earlier versions of a
            memory; combine with ``include_history=True``).
        pinned: Keep only pinned (True) or only unpinned (False) memories.
        metadata: Exact-match conditions on ``metadata.<key>`` payload fields.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_types: tuple[MemoryType, ...] = ()
    subtypes: tuple[str, ...] = ()
    min_importance: float | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    include_history: bool = False
    concepts: tuple[str, ...] = ()
    related_to: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    superseded_by: tuple[str, ...] = ()
    pinned: bool | None = None
    metadata: dict[str, str | int | bool] = Field(default_factory=dict)

    @field_validator("min_importance")
    @classmethod
    def _importance(cls, value: float | None) -> float | None:
        if value is not None and (not math.isfinite(value) or not 0.0 <= value <= 1.0):
            msg = f"min_importance must be in [0, 1], got {value!r}"
            raise ValueError(msg)
        return value

    @field_validator("created_after", "created_before")
    @classmethod
    def _timestamps(cls, value: datetime | None) -> datetime | None:
        return _aware(value)

    @field_validator("ids", "superseded_by")
    @classmethod
    def _uuids(cls, value: Sequence[str]) -> tuple[str, ...]:
        out = []
        for item in value:
            try:
                out.append(str(uuid.UUID(item)))
            except (ValueError, AttributeError, TypeError):
                msg = f"memory id must be a UUID, got {item!r}"
                raise ValueError(msg) from None
        return tuple(out)
