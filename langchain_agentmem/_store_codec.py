"""How LangGraph store items map onto agentmem long-term records (private helpers).

* Items live in the store's ``langgraph`` space and the store's own registry in its
  ``internal`` space (:data:`agentmem.long_term.records.SPACES`): the space is a payload
  field in every filter, so no conversational user id, however it is spelled, reaches an
  item, and no namespace reaches a memory or the registry.
* Namespace ``(first, *rest)`` -> ``Scope(user_id="lg." + first, space="langgraph")`` when
  that is a valid id, else ``user_id="lg.h-<sha256 of first>"``; the exact namespace is kept
  in record metadata, so the scope only narrows the search and never decides a match.
* The namespace is stored as JSON text (``lg_ns``), and every prefix of it on whole segments
  as a list (``lg_prefixes``): a prefix filter is an exact match on one element of that list,
  so wildcard characters (``*``, ``%``, ``?``) in labels are data and match only themselves.
* ``Item.key`` -> record id ``uuid5(namespace JSON + NUL + key)``; the key is kept too.
* ``value`` -> ``lg_value`` (JSON text); TTL -> ``lg_expires`` (epoch seconds) and
  ``lg_ttl`` (minutes).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import Item, SearchItem, get_text_at_path, tokenize_path

from agentmem import MemoryRecord, RecordFilter, Scope
from agentmem.errors import InvalidSessionIdError, InvalidValueError
from agentmem.integration import validate_session_id

__all__ = [
    "ITEM_FLAG",
    "REGISTRY_SCOPE",
    "REGISTRY_USER",
    "USER_PREFIX",
    "expired",
    "index_texts",
    "item_filter",
    "item_id",
    "item_metadata",
    "ns_text",
    "record_item",
    "root_scope",
    "scope_for",
    "user_for",
]

ITEM_FLAG = "lg_item"
REGISTRY_USER = "agentmem.langgraph-store.registry"
USER_PREFIX = "lg."
_NS_UUID = uuid.UUID("7f1b3c52-4e0a-5d8e-9a61-2b9d1c4e8f30")


def ns_text(namespace: Sequence[str]) -> str:
    """The exact, unambiguous text form of a namespace (a JSON array)."""
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


def user_for(first: str) -> str:
    """The scope user id of a namespace's first label: ``lg.<label>``, or a hash of it.

    The prefix is kept for the data of earlier versions; isolation comes from the space.
    """
    try:
        return validate_session_id(USER_PREFIX + first, what="namespace root")
    except InvalidSessionIdError:
        return USER_PREFIX + "h-" + hashlib.sha256(first.encode("utf-8")).hexdigest()[:40]


def scope_for(namespace: Sequence[str]) -> Scope:
    """The scope items of ``namespace`` live in."""
    return root_scope(namespace[0])


def root_scope(first: str) -> Scope:
    """The scope of the items whose namespace starts with ``first``."""
    return Scope(user_id=user_for(first), space="langgraph")


REGISTRY_SCOPE = Scope(user_id=REGISTRY_USER, space="internal")
"""Where the store keeps its registry of namespace roots."""


def item_id(namespace: Sequence[str], key: str) -> str:
    """Deterministic record id of ``(namespace, key)``."""
    return str(uuid.uuid5(_NS_UUID, ns_text(namespace) + "\x00" + key))


def item_filter(prefix: Sequence[str], *, indexed: bool | None = None) -> RecordFilter:
    """Records that are store items under ``prefix`` (whole-segment prefix, exact labels)."""
    meta: dict[str, str | int | bool] = {ITEM_FLAG: True}
    if prefix:
        meta["lg_prefixes"] = ns_text(prefix)
    if indexed is not None:
        meta["lg_indexed"] = indexed
    return RecordFilter(metadata=meta, include_history=True)


def index_texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[str]:
    """The texts to embed: each field path of ``value`` (``"$"`` is the whole value)."""
    texts: list[str] = []
    for field in fields:
        if field == "$":
            texts.append(json.dumps(value, ensure_ascii=False, sort_keys=True))
            continue
        texts.extend(t for t in get_text_at_path(value, tokenize_path(field)) if t)
    return texts


def item_metadata(
    namespace: Sequence[str],
    key: str,
    value: Mapping[str, Any],
    *,
    indexed: bool,
    now: datetime,
    ttl: float | None,
) -> dict[str, Any]:
    """The record metadata of an item."""
    try:
        text = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        msg = f"store values must be JSON-serializable dicts (no NaN/Infinity): {exc}"
        raise InvalidValueError(msg) from None
    return {
        ITEM_FLAG: True,
        "lg_ns": ns_text(namespace),
        "lg_prefixes": [ns_text(namespace[: i + 1]) for i in range(len(namespace))],
        "lg_key": key,
        "lg_value": text,
        "lg_indexed": indexed,
        "lg_updated": now.isoformat(),
        "lg_ttl": ttl,
        "lg_expires": None if ttl is None else now.timestamp() + ttl * 60.0,
    }


def expired(record: MemoryRecord, now: datetime) -> bool:
    """Whether the item's TTL has run out."""
    expires = record.metadata.get("lg_expires")
    return expires is not None and float(expires) <= now.timestamp()


def record_item(record: MemoryRecord, score: float | None = None, *, search: bool = False) -> Item:
    """The LangGraph item a record holds."""
    meta = record.metadata
    namespace = tuple(json.loads(meta["lg_ns"]))
    updated = datetime.fromisoformat(meta["lg_updated"])
    if updated.tzinfo is None:
        updated = updated.replace(tzinfo=timezone.utc)
    fields: dict[str, Any] = {
        "namespace": namespace,
        "key": meta["lg_key"],
        "value": json.loads(meta["lg_value"]),
        "created_at": record.created_at,
        "updated_at": updated,
    }
    if search:
        return SearchItem(score=score, **fields)
    return Item(**fields)
