"""``agentmem stats``: counts from the long-term store alone (private).

Counting needs neither an embedder nor the long-term tier: the command reads the census of
the home's embedded store, or opens the store of the home (or server) with the default
model's dimension and asks it for indexed counts. It builds no embedder and no manager,
imports no tier, and loads no model.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

from agentmem.cli import common

if TYPE_CHECKING:
    from agentmem.backends import BackendConfig
    from agentmem.long_term.records import Scope

__all__ = ["KNOWN_SUBTYPES", "stats_command"]

#: Subtypes ``stats`` counts one by one (those agentmem writes); any other is "(other)".
KNOWN_SUBTYPES = (
    "preference",
    "fact",
    "event",
    "skill",
    "goal",
    "relationship",
    "concept",
    "episode",
    "procedure",
    "other",
)


def stats_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem stats --user U``: memories by type and subtype, and the home's disk use
    (allocated blocks, as ``du`` reports; the apparent size of sparse files in brackets).

    On the home's embedded store, the counts come from the census its last clean close
    wrote (no load of the store; see :func:`~agentmem.stores.qdrant.edge.read_scope_counts`).
    Otherwise, and whenever the census cannot vouch for the store, the store counts them
    (indexed counts, no scan of the records: one count of the current memories, one
    ``count_by`` of the types and one of the subtypes of each type found), opened without
    reading its files ahead and without starting an index rebuild: counting reads only the
    payload indexes. Both give the same lines.
    """
    from agentmem.long_term.records import Scope

    user = common.check_user(args)
    config = common.resolve_config(args)
    common.require_memories_home(config, user)
    scope = Scope(user_id=user)
    counted = None
    if config.memory_path is not None:
        from agentmem.stores.qdrant.edge import read_scope_counts

        found = read_scope_counts(config.memory_path, scope, dimension=common.DEFAULT_DIMENSION)
        if found is not None:
            counted = found.total, found.current, _by_type(found.kinds)
    if counted is None:
        counted = _count_in_store(config, scope)
    total, current, by_type = counted
    common.check_user_memories(total, user, config.describe_memories())
    out.write(f"user {user}: {total} memories ({current} current)\n")
    for key, n in _rows(by_type):
        out.write(f"  {key:<24} {n}\n")
    allocated, apparent = common.disk_usage(config.home)
    out.write(
        f"home {config.home}: {common.format_bytes(allocated)} on disk "
        f"(allocated; apparent size {common.format_bytes(apparent)})\n"
    )
    return 0


#: Memories of one type: how many in all, and how many of each known subtype.
_TypeCounts = tuple[int, dict[str, int]]


def _by_type(kinds: Mapping[tuple[str, str | None], int]) -> dict[str, _TypeCounts]:
    """A census's ``(type, subtype) -> n`` as :func:`_rows` takes it."""
    out: dict[str, _TypeCounts] = {}
    for (memory_type, subtype), n in kinds.items():
        of_type, known = out.get(memory_type, (0, {}))
        if subtype in KNOWN_SUBTYPES:
            known[subtype] = known.get(subtype, 0) + n
        out[memory_type] = (of_type + n, known)
    return out


def _count_in_store(config: BackendConfig, scope: Scope) -> tuple[int, int, dict[str, _TypeCounts]]:
    """Total, current and per-type counts, asked of the store itself (opened for it)."""
    from agentmem.backends import acquire_memory_store
    from agentmem.long_term.records import MEMORY_TYPES, RecordFilter
    from agentmem.stores.qdrant.edge import AutoIndex

    # A count needs neither the files read ahead nor an index rebuild started (and killed
    # at close): the next session that searches does both.
    lease = acquire_memory_store(
        config,
        dimension=common.DEFAULT_DIMENSION,
        preload=False,
        auto_index=AutoIndex(enabled=False),
    )
    by_type: dict[str, _TypeCounts] = {}
    try:
        store = lease.value
        everything = RecordFilter(include_history=True)
        # Each count is one indexed pass: by type, then by subtype within each type found.
        types = store.count_by(scope, "memory_type", filter=everything)
        total = sum(types.values())  # every record has a type
        if not total:
            return 0, 0, {}
        current = store.count(scope, filter=RecordFilter())
        for memory_type in MEMORY_TYPES:
            of_type = types.get(memory_type, 0)
            if not of_type:
                continue
            known_of_type = RecordFilter.model_validate(
                {
                    "include_history": True,
                    "memory_types": (memory_type,),
                    "subtypes": KNOWN_SUBTYPES,
                }
            )
            by_subtype = store.count_by(scope, "subtype", filter=known_of_type)
            by_type[memory_type] = (of_type, by_subtype)
    finally:
        lease.release()
    return total, current, by_type


def _rows(by_type: Mapping[str, _TypeCounts]) -> list[tuple[str, int]]:
    """The lines under the total: each known subtype of each type (in the order of
    ``MEMORY_TYPES`` and :data:`KNOWN_SUBTYPES`), then the rest of the type as
    ``(other)``."""
    from agentmem.long_term.records import MEMORY_TYPES

    rows: list[tuple[str, int]] = []
    for memory_type in MEMORY_TYPES:
        of_type, by_subtype = by_type.get(memory_type, (0, {}))
        if not of_type:
            continue
        known = 0
        for subtype in KNOWN_SUBTYPES:
            if n := by_subtype.get(subtype, 0):
                rows.append((f"{memory_type}/{subtype}", n))
                known += n
        if of_type > known:
            rows.append((f"{memory_type}/(other)", of_type - known))
    return rows
