"""The backend-neutral values a memory-store engine reads and writes.

Every backend (Qdrant Edge, qdrant-client, the in-memory store) speaks its own type system,
so the shared logic (:mod:`agentmem.stores.engine`) works on the small values defined here
and each backend translates them in its I/O steps:

* filter conditions (:class:`Match`, :class:`Range`, :class:`HasIds`, :class:`IsEmpty`)
  built from a :class:`Scope` and a :class:`RecordFilter` (:func:`build_conditions`);
* the requests of the steps (:class:`QuerySpec`, :class:`ScrollSpec`), what they write
  (:class:`PointData`, :class:`Patch`) and what they read back (:class:`Hit`);
* validation of ids, vectors and field patches (before anything is written);
* payload <-> record conversion, and the payload fields a backend indexes;
* the cursor of ordered scrolls.

Nothing here knows a backend; nothing here ranks (that is
:mod:`agentmem.long_term.ranking`).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from pydantic import ValidationError

from agentmem.errors import DimensionMismatchError, InvalidValueError
from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.store import SparseVector

__all__ = [
    "CURRENT_SCOPE_FIELD",
    "FLOAT_FIELDS",
    "KEYWORD_FIELDS",
    "PATCHABLE_FIELDS",
    "SPACE_FIELD",
    "Condition",
    "HasIds",
    "Hit",
    "IsEmpty",
    "Match",
    "OrderSpec",
    "Patch",
    "PointData",
    "QuerySpec",
    "Range",
    "ScrollSpec",
    "build_conditions",
    "check_dimension",
    "decode_cursor",
    "encode_cursor",
    "group_patches",
    "in_scope",
    "legacy_space",
    "make_patch",
    "record_from_payload",
    "record_payload",
    "validate_dense",
    "validate_ids",
    "validate_sparse",
]

TENANT_FIELD = "user_id"
SPACE_FIELD = "space"
CURRENT_SCOPE_FIELD = "current_scope"
"""Keyword set on current points only: their ``[user_id, space]`` as JSON. A search for the
current memories of a scope (nearly every search) then checks one indexed condition per
visited point instead of three (tenant, space, ``is_current``): about half the filtered
HNSW search's cost."""
KEYWORD_FIELDS = (
    SPACE_FIELD,
    CURRENT_SCOPE_FIELD,
    "agent_id",
    "session_id",
    "memory_type",
    "subtype",
    "concept",
    "related_concepts",
    "content_hash",
)
BOOL_FIELDS = ("is_current", "pinned")
FLOAT_FIELDS = ("importance", "created_ts", "last_accessed_ts")

#: Record fields ``set_fields`` may change, and the payload keys each one owns.
PATCHABLE_FIELDS: Mapping[str, tuple[str, ...]] = {
    "importance": ("importance",),
    "access_count": ("access_count",),
    "last_accessed_at": ("last_accessed_at", "last_accessed_ts"),
    "valid_to": ("valid_to", "valid_to_ts", "is_current", CURRENT_SCOPE_FIELD),
    "superseded_by": ("superseded_by",),
    "pinned": ("pinned",),
    "metadata": ("metadata",),
}
_TS_KEYS = ("created_ts", "last_accessed_ts", "valid_from_ts", "valid_to_ts")


@dataclass(frozen=True)
class Match:
    """``key`` equals one of ``values``."""

    key: str
    values: tuple[str | int | bool, ...]


@dataclass(frozen=True)
class Range:
    """``gte <= key < lt`` (either bound optional)."""

    key: str
    gte: float | None = None
    lt: float | None = None


@dataclass(frozen=True)
class HasIds:
    """The point id is one of ``ids``."""

    ids: tuple[str, ...]


@dataclass(frozen=True)
class IsEmpty:
    """The payload has no value for ``key`` (missing, null or an empty list)."""

    key: str


Condition = Match | Range | HasIds | IsEmpty


@dataclass(frozen=True)
class QuerySpec:
    """One nearest-neighbour search on one side: the ``limit`` points matching
    ``conditions`` that score highest against ``vector``, a dense vector (cosine) or a
    :class:`SparseVector` (BM25, IDF over the collection), exactly (every point) when
    ``exact``. Answered with payload-free :class:`Hit` values holding the raw scores, best
    first: the ranking is :mod:`agentmem.long_term.ranking`'s."""

    conditions: tuple[Condition, ...]
    limit: int
    vector: list[float] | SparseVector
    exact: bool = False


@dataclass(frozen=True)
class OrderSpec:
    """Scroll ordered by ``key`` (newest first), starting at ``start`` (inclusive)."""

    key: str
    start: float | None = None


@dataclass(frozen=True)
class ScrollSpec:
    """One page of a scroll: points matching ``conditions``, at most ``limit``, from id
    ``offset`` (inclusive) in id order, or ordered as ``order`` says."""

    conditions: tuple[Condition, ...]
    limit: int
    offset: str | None = None
    order: OrderSpec | None = None


class PointData(NamedTuple):
    """One point to write."""

    id: str
    dense: list[float]
    sparse: SparseVector
    payload: dict[str, Any]


class Patch(NamedTuple):
    """Payload keys to set and to delete on one point."""

    id: str
    set: dict[str, Any]
    unset: list[str]


def group_patches(patches: Sequence[Patch]) -> list[tuple[list[str], dict[str, Any], list[str]]]:
    """``(ids, set, unset)`` groups of patches that change the same keys to the same values,
    in order: one backend call per group instead of one per point (a touch of ten hits
    that share an access count is one write).

    Example:
        >>> one = {"k": 1}
        >>> group_patches([Patch("a", one, []), Patch("b", one, []), Patch("c", {}, ["k"])])
        [(['a', 'b'], {'k': 1}, []), (['c'], {}, ['k'])]
    """
    groups: list[tuple[list[str], dict[str, Any], list[str]]] = []
    for patch in patches:
        if groups and groups[-1][1] == patch.set and groups[-1][2] == patch.unset:
            groups[-1][0].append(patch.id)
        else:
            groups.append(([patch.id], patch.set, patch.unset))
    return groups


class Hit(NamedTuple):
    """A point returned by a backend: id, score (raw cosine or BM25 for a search, the order
    value for an ordered scroll, else 0) and payload (empty for a search)."""

    id: str
    score: float
    payload: dict[str, Any]


def validate_ids(ids: Sequence[str] | str) -> list[str]:
    """Canonical UUID strings of ``ids``; raises listing every id that is not a UUID."""
    if isinstance(ids, str):
        msg = f"ids must be a list of UUID strings, got the single string {ids!r}; wrap it: [id]"
        raise InvalidValueError(msg)
    out: list[str] = []
    bad: list[object] = []
    for item in ids:
        if isinstance(item, uuid.UUID):
            out.append(str(item))
            continue
        try:
            out.append(str(uuid.UUID(item)))
        except (ValueError, TypeError, AttributeError):
            bad.append(item)
    if bad:
        msg = f"memory ids must be UUIDs; not UUIDs: {bad!r}"
        raise InvalidValueError(msg)
    return list(dict.fromkeys(out))


def check_dimension(stored: int, wanted: int, where: str) -> None:
    """Raise :class:`DimensionMismatchError` when the collection's size differs."""
    if stored != wanted:
        msg = (
            f"{where} holds {stored}-dimensional dense vectors, but dimension={wanted} was "
            f"requested (the embedder's size). Use the embedder the memories were made with "
            f"(dimension {stored}), or a new path/collection for the new embedder."
        )
        raise DimensionMismatchError(msg)


def validate_dense(vector: Sequence[float], dimension: int) -> list[float]:
    """The vector as a list of floats; wrong size, non-finite or zero vectors are refused."""
    import numpy as np  # here: counting and listing memories never need it (stats starts faster)

    try:
        array = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError):
        msg = f"a dense vector must be a sequence of numbers, got {type(vector).__name__}"
        raise InvalidValueError(msg) from None
    if array.ndim != 1 or array.shape[0] != dimension:
        size = array.shape[0] if array.ndim == 1 else array.shape
        msg = (
            f"dense vector has {size} dimensions but the store holds {dimension}; "
            f"embed with the model the store was created with"
        )
        raise DimensionMismatchError(msg)
    if not np.isfinite(array).all():
        msg = "dense vector contains NaN or infinity; check the embedder's output"
        raise InvalidValueError(msg)
    if not array.any():
        msg = "dense vector is all zeros, which has no cosine similarity; check the embedder"
        raise InvalidValueError(msg)
    values: list[float] = array.tolist()
    return values


def validate_sparse(vector: SparseVector) -> SparseVector:
    """A checked copy: non-negative unique 32-bit indices, finite values."""
    if not isinstance(vector, SparseVector):
        msg = f"sparse vectors must be agentmem SparseVector objects, got {type(vector).__name__}"
        raise InvalidValueError(msg)
    indices = [int(i) for i in vector.indices]
    values = [float(v) for v in vector.values]
    if any(i < 0 or i >= 2**32 for i in indices) or len(set(indices)) != len(indices):
        msg = "sparse vector indices must be unique integers in [0, 2**32)"
        raise InvalidValueError(msg)
    if not all(math.isfinite(v) for v in values):
        msg = "sparse vector values must be finite numbers"
        raise InvalidValueError(msg)
    return SparseVector(indices, values)


def record_payload(record: MemoryRecord) -> dict[str, Any]:
    """The stored payload: :meth:`MemoryRecord.to_payload` without null ``*_ts`` keys.

    Absent (not null) timestamps leave a point out of scrolls ordered by that field.
    """
    payload = record.to_payload()
    for key in _TS_KEYS:
        if payload.get(key) is None:
            payload.pop(key, None)
    if payload["is_current"]:
        payload[CURRENT_SCOPE_FIELD] = current_scope(payload["user_id"], payload[SPACE_FIELD])
    return payload


def current_scope(user_id: str, space: str) -> str:
    """The :data:`CURRENT_SCOPE_FIELD` value of a current point of ``user_id`` in ``space``
    (JSON, so no pair of ids can collide with another).

    Example:
        >>> current_scope("alice", "memories")
        '["alice", "memories"]'
    """
    return json.dumps([user_id, space], ensure_ascii=False)


def record_from_payload(point_id: object, payload: Mapping[str, Any]) -> MemoryRecord:
    """Rebuild the record of a stored point."""
    return MemoryRecord.from_payload(str(point_id), payload)


def in_scope(payload: Mapping[str, Any], scope: Scope) -> bool:
    """Whether a stored payload belongs to ``scope``."""
    if payload.get("user_id") != scope.user_id:
        return False
    if (payload.get(SPACE_FIELD) or "memories") != scope.space:
        return False
    if scope.agent_id is not None and payload.get("agent_id") != scope.agent_id:
        return False
    return scope.session_id is None or payload.get("session_id") == scope.session_id


def build_conditions(scope: Scope, flt: RecordFilter | None) -> tuple[Condition, ...]:
    """All conditions (AND) selecting ``flt``'s records inside ``scope``."""
    if not isinstance(scope, Scope):
        msg = f"scope must be an agentmem Scope, got {type(scope).__name__}"
        raise InvalidValueError(msg)
    flt = flt or RecordFilter()
    conds: list[Condition]
    if flt.include_history:
        conds = [Match(TENANT_FIELD, (scope.user_id,)), Match(SPACE_FIELD, (scope.space,))]
    else:  # one condition for the three (see CURRENT_SCOPE_FIELD)
        conds = [Match(CURRENT_SCOPE_FIELD, (current_scope(scope.user_id, scope.space),))]
    if scope.agent_id is not None:
        conds.append(Match("agent_id", (scope.agent_id,)))
    if scope.session_id is not None:
        conds.append(Match("session_id", (scope.session_id,)))
    for key, values in (
        ("memory_type", flt.memory_types),
        ("subtype", flt.subtypes),
        ("concept", flt.concepts),
        ("related_concepts", flt.related_to),
    ):
        if values:
            conds.append(Match(key, tuple(values)))
    if flt.min_importance is not None:
        conds.append(Range("importance", gte=flt.min_importance))
    if flt.created_after is not None or flt.created_before is not None:
        conds.append(
            Range(
                "created_ts",
                gte=_ts(flt.created_after),
                lt=_ts(flt.created_before),
            )
        )
    if flt.ids:
        conds.append(HasIds(flt.ids))
    if flt.superseded_by:
        # A superseded memory has ended: the indexed is_current narrows the points whose
        # (unindexed) superseded_by is checked to the scope's history.
        conds.append(Match("is_current", (False,)))
        conds.append(Match("superseded_by", flt.superseded_by))
    if flt.pinned is not None:
        conds.append(Match("pinned", (flt.pinned,)))
    for key, value in flt.metadata.items():
        conds.append(Match(f"metadata.{key}", (value,)))
    return tuple(conds)


def _ts(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def make_patch(record: MemoryRecord, fields: Mapping[str, Any]) -> Patch:
    """Validate ``fields`` against the record and return the payload patch they make."""
    unknown = sorted(set(fields) - set(PATCHABLE_FIELDS))
    if unknown:
        msg = f"set_fields cannot change {unknown}; patchable fields: {sorted(PATCHABLE_FIELDS)}"
        raise InvalidValueError(msg)
    try:
        updated = record.replace(**fields)
    except ValidationError as exc:
        msg = f"invalid field values for memory {record.id}: {exc.errors()[0]['msg']}"
        raise InvalidValueError(msg) from None
    full = record_payload(updated)
    keys = [key for name in fields for key in PATCHABLE_FIELDS[name]]
    return Patch(
        record.id,
        {key: full[key] for key in keys if key in full},
        [key for key in keys if key not in full],
    )


def encode_cursor(key: str, value: float, skip: int) -> str:
    """Offset of an ordered scroll: last order value seen and how many hits had it."""
    return f"{key}:{value!r}:{skip}"


def decode_cursor(token: str, key: str) -> tuple[float, int]:
    """Inverse of :func:`encode_cursor`; refuses a cursor of another ordering."""
    parts = token.split(":")
    try:
        if len(parts) != 3 or parts[0] != key:
            raise ValueError(token)
        return float(parts[1]), int(parts[2])
    except ValueError:
        msg = (
            f"offset {token!r} is not a cursor of a scroll ordered by {key!r}; pass the "
            f"offset returned by the previous page with the same order_by"
        )
        raise InvalidValueError(msg) from None


def legacy_space(payload: Mapping[str, Any]) -> str:
    """The space of a point written before spaces existed (agentmem 0.1), for the one-time
    backfill at open: LangGraph store items carried an ``lg_item`` or ``lg_root`` mark in
    their metadata; everything else was a memory."""
    metadata = payload.get("metadata") or {}
    if isinstance(metadata, Mapping) and (metadata.get("lg_item") or metadata.get("lg_root")):
        return "langgraph" if metadata.get("lg_item") else "internal"
    return "memories"
