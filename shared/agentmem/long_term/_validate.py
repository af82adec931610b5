"""Input checks of the long-term API (private): records, queries and ids.

Each check raises :class:`~agentmem.errors.InvalidValueError` (or ``ConfigurationError`` for
a bad search mode) before anything is embedded or written.

A record is checked once: :func:`build_record` checks what it builds, and
:func:`check_record` (every write) checks only records that did not come from it (an
import, a replay, a ``model_copy``, which skips the record's own validation). Records are
frozen, so one that passed stays valid.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from agentmem._util.checks import check_int
from agentmem._util.identifiers import check_identifier
from agentmem._util.pydantic_errors import describe
from agentmem.errors import ConfigurationError, InvalidValueError
from agentmem.long_term.ranking import SearchMode
from agentmem.long_term.records import MEMORY_TYPES, MemoryRecord, RecordFilter, Scope
from agentmem.storable import check_storable_text, json_text

__all__ = [
    "MAX_CONTENT_CHARS",
    "build_record",
    "check_record",
    "memory_id_of",
    "query_filter",
    "with_changes",
]

MAX_CONTENT_CHARS = 32_000

#: The records that passed the checks, by ``id()`` (weakly: a record gone is forgotten).
_CHECKED: weakref.WeakValueDictionary[int, MemoryRecord] = weakref.WeakValueDictionary()


def _check_type(memory_type: object) -> None:
    if memory_type not in MEMORY_TYPES:
        msg = f"unknown memory_type {memory_type!r}; expected one of {', '.join(MEMORY_TYPES)}"
        raise InvalidValueError(msg)


def check_record(record: MemoryRecord) -> None:
    """The checks :func:`build_record` makes, for a record built elsewhere (an import, a
    replay): content within :data:`MAX_CONTENT_CHARS`, metadata JSON without NaN, a known
    type and an identifier as subtype (again: ``model_copy`` and ``model_construct``
    skip the record's own validation). A record that passed them (or came from
    :func:`build_record`) is not checked again."""
    if _CHECKED.get(id(record)) is record:
        return
    _check_content(record.content)
    _check_type(record.memory_type)
    if record.subtype is not None:
        check_identifier(record.subtype, "subtype")
    _check_metadata(record.metadata)
    _CHECKED[id(record)] = record


def _check_content(content: object) -> str:
    if not isinstance(content, str) or not content.strip():
        msg = "memory content must be a non-empty string"
        raise InvalidValueError(msg)
    if len(content) > MAX_CONTENT_CHARS:
        msg = (
            f"memory content is {len(content)} characters, over the {MAX_CONTENT_CHARS} "
            "limit; split it into several memories"
        )
        raise InvalidValueError(msg)
    return check_storable_text(content, what="memory content")


def _check_metadata(metadata: Mapping[str, Any] | None) -> None:
    json_text(metadata or {}, what="memory metadata")


def build_record(
    scope: Scope,
    content: object,
    memory_type: str,
    metadata: Mapping[str, Any] | None,
    importance: object,
    fields: Mapping[str, Any],
) -> MemoryRecord:
    """A validated record in ``scope`` (see ``LongTermMemory.new_record``)."""
    content = _check_content(content)
    _check_type(memory_type)
    if isinstance(importance, bool) or not isinstance(importance, (int, float)):
        msg = f"importance must be a number in [0, 1], got {importance!r}"
        raise InvalidValueError(msg)
    _check_metadata(metadata)
    try:
        record = MemoryRecord(
            content=content,
            memory_type=memory_type,  # type: ignore[arg-type]
            scope=scope,
            importance=importance,
            metadata=dict(metadata or {}),
            **fields,
        )
    except ValidationError as exc:
        raise InvalidValueError(describe(exc, "memory")) from None
    _CHECKED[id(record)] = record  # checked above and by its own validators: not again
    return record


def query_filter(
    query: object,
    top_k: object,
    memory_type: str | None,
    min_importance: float,
    mode: SearchMode,
    filter: RecordFilter | None,
    include_history: bool,
) -> tuple[SearchMode, RecordFilter]:
    """Check a search's arguments and merge them into one :class:`RecordFilter`."""
    if not isinstance(query, str) or not query.strip():
        msg = "query must be a non-empty string"
        raise InvalidValueError(msg)
    check_storable_text(query, what="query")
    check_int(top_k, "top_k", maximum=1000, error=InvalidValueError)
    if memory_type is not None:
        _check_type(memory_type)
    if mode not in ("hybrid", "dense", "bm25"):
        msg = f"mode must be 'hybrid', 'dense' or 'bm25', got {mode!r}"
        raise ConfigurationError(msg)
    updates: dict[str, Any] = {}
    if memory_type is not None:
        updates["memory_types"] = (memory_type,)
    if min_importance:
        updates["min_importance"] = min_importance
    if include_history:
        updates["include_history"] = True
    try:
        merged = (filter or RecordFilter()).model_copy(update=updates)
        return mode, RecordFilter.model_validate(merged.model_dump())
    except ValidationError as exc:
        raise InvalidValueError(describe(exc, "memory")) from None


def memory_id_of(memory_id: object) -> str:
    """``memory_id`` as a canonical UUID string."""
    try:
        return RecordFilter(ids=(memory_id,)).ids[0]  # type: ignore[arg-type]
    except ValidationError:
        msg = f"memory id must be a UUID, got {memory_id!r}"
        raise InvalidValueError(msg) from None


def with_changes(record: MemoryRecord, **changes: Any) -> MemoryRecord:
    """A validated copy of ``record`` with ``changes``."""
    try:
        return record.replace(**changes)
    except ValidationError as exc:
        raise InvalidValueError(describe(exc, "memory")) from None
