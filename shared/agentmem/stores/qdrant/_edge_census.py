"""The census of a Qdrant Edge store: how many points each scope holds, by type and subtype,
kept beside the manifest so that counting needs no load of the shard (private).

Every point carries :data:`CENSUS_FIELD`, its ``[user_id, space, memory_type, subtype]`` as
JSON, written with the point (those fields never change after a write: ``set_fields`` cannot
patch them) and indexed (memory-mapped, read only to count). At a clean flush or close the
store counts the points of each value and the current points of each scope
(:data:`~agentmem.stores.points.CURRENT_SCOPE_FIELD`), one facet each (about 20 ms each at
100,000 points here), and writes the counts to :data:`CENSUS_FILE`. The manifest names that
file's checksum, so the census holds exactly while the manifest does: a clean manifest,
whose files are as it lists them. ``agentmem stats`` reads it instead of loading the shard
(:func:`~agentmem.stores.qdrant.edge.read_scope_counts`); with no census that holds (after a
crash, a store opened elsewhere, points written before the field by an older agentmem), it
counts through the loaded store as before. An index rebuild gives older points the field.

Example:
    >>> census_kind({"user_id": "alice", "space": "memories", "memory_type": "semantic"})
    '["alice", "memories", "semantic", null]'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentmem._util.durable import replace_durably
from agentmem.stores.points import SPACE_FIELD, current_scope

__all__ = [
    "CENSUS_FIELD",
    "CENSUS_FILE",
    "Census",
    "ScopeCounts",
    "census_holds",
    "census_kind",
    "read_census",
    "write_census",
]

CENSUS_FIELD = "census_kind"
CENSUS_FILE = "agentmem-census.json"
_FORMAT = "agentmem-edge-census"


def census_kind(payload: Mapping[str, Any]) -> str:
    """The :data:`CENSUS_FIELD` value of a point with this payload (JSON, so no two scopes,
    types or subtypes can collide)."""
    space = payload.get(SPACE_FIELD) or "memories"
    kind = [payload["user_id"], space, payload["memory_type"], payload.get("subtype")]
    return json.dumps(kind, ensure_ascii=False)


@dataclass(frozen=True)
class ScopeCounts:
    """One scope's points: ``kinds`` maps ``(memory_type, subtype)`` (``None``: no subtype)
    to points, history included; ``current`` is how many are current."""

    kinds: Mapping[tuple[str, str | None], int] = field(default_factory=dict)
    current: int = 0

    @property
    def total(self) -> int:
        """Every point of the scope, history included."""
        return sum(self.kinds.values())


@dataclass(frozen=True)
class Census:
    """The counts of every scope of a store, as facets of :data:`CENSUS_FIELD` (``kinds``:
    value -> points) and of the current-scope field (``current``: value -> points) give
    them."""

    kinds: Mapping[str, int]
    current: Mapping[str, int]

    def scopes(self) -> dict[str, ScopeCounts]:
        """Each scope's counts, by its current-scope key (``current_scope(user, space)``)."""
        kinds: dict[str, dict[tuple[str, str | None], int]] = {}
        for value, n in self.kinds.items():
            user, space, memory_type, subtype = json.loads(value)
            by = kinds.setdefault(current_scope(user, space), {})
            by[(memory_type, subtype)] = by.get((memory_type, subtype), 0) + n
        keys = set(kinds) | set(self.current)
        return {k: ScopeCounts(kinds.get(k, {}), self.current.get(k, 0)) for k in keys}


def write_census(root: Path, census: Census) -> str:
    """Replace :data:`CENSUS_FILE` in ``root`` (atomically, durably); its checksum, for the
    manifest."""
    scopes = {
        key: {
            "current": counts.current,
            "kinds": [[t, s, n] for (t, s), n in sorted(counts.kinds.items(), key=_order)],
        }
        for key, counts in census.scopes().items()
    }
    text = json.dumps({"format": _FORMAT, "version": 1, "scopes": scopes}, sort_keys=True)
    replace_durably(root / CENSUS_FILE, text)
    return _checksum(text)


def read_census(root: Path, checksum: str, user_id: str, space: str) -> ScopeCounts | None:
    """The counts of one scope from :data:`CENSUS_FILE`, if its text has ``checksum`` (the
    manifest's); ``None`` if it is missing or does not match (counted the slow way then)."""
    try:
        text = (root / CENSUS_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if _checksum(text) != checksum:
        return None
    try:
        body = json.loads(text)
        if body.get("format") != _FORMAT:
            return None
        scope = body["scopes"].get(current_scope(user_id, space))
        if scope is None:
            return ScopeCounts()
        kinds = {(str(t), None if s is None else str(s)): int(n) for t, s, n in scope["kinds"]}
        return ScopeCounts(kinds, int(scope["current"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _order(item: tuple[tuple[str, str | None], int]) -> tuple[str, str]:
    (memory_type, subtype), _ = item
    return memory_type, "" if subtype is None else f"={subtype}"


def census_holds(root: Path, checksum: str) -> bool:
    """Whether :data:`CENSUS_FILE` in ``root`` is there with this checksum."""
    try:
        return _checksum((root / CENSUS_FILE).read_text(encoding="utf-8")) == checksum
    except (OSError, UnicodeDecodeError):
        return False


def _checksum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
