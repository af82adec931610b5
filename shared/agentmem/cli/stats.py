"""``agentmem stats``: counts from the long-term store alone (private).

Counting needs neither an embedder nor the long-term tier: the command opens the store of
the home (or server) with the default model's dimension and asks it for indexed counts.
It builds no embedder and no manager, imports no tier, and loads no model.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from agentmem.cli import common

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

    Everything is counted by the store (indexed counts, no scan of the records: one count
    of the current memories, one ``count_by`` of the types and one of the subtypes of each
    type found), opened without reading its files ahead and without starting an index
    rebuild: counting reads only the payload indexes.
    """
    from agentmem.backends import acquire_memory_store
    from agentmem.long_term.records import MEMORY_TYPES, RecordFilter, Scope

    user = common.check_user(args)
    config = common.resolve_config(args)
    common.require_memories_home(config, user)
    from agentmem.stores.qdrant.edge import AutoIndex

    # A count needs neither the files read ahead nor an index rebuild started (and killed
    # at close): the next session that searches does both.
    lease = acquire_memory_store(
        config,
        dimension=common.DEFAULT_DIMENSION,
        preload=False,
        auto_index=AutoIndex(enabled=False),
    )
    rows: list[tuple[str, int]] = []
    try:
        store, scope = lease.value, Scope(user_id=user)
        everything = RecordFilter(include_history=True)
        # Each count is one indexed pass: by type, then by subtype within each type found.
        by_type = store.count_by(scope, "memory_type", filter=everything)
        total = sum(by_type.values())  # every record has a type
        common.check_user_memories(total, user, config.describe_memories())
        current = store.count(scope, filter=RecordFilter())
        for memory_type in MEMORY_TYPES:
            of_type = by_type.get(memory_type, 0)
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
            known = 0
            for subtype in KNOWN_SUBTYPES:
                if n := by_subtype.get(subtype, 0):
                    rows.append((f"{memory_type}/{subtype}", n))
                    known += n
            if of_type > known:
                rows.append((f"{memory_type}/(other)", of_type - known))
    finally:
        lease.release()
    out.write(f"user {user}: {total} memories ({current} current)\n")
    for key, n in rows:
        out.write(f"  {key:<24} {n}\n")
    allocated, apparent = common.disk_usage(config.home)
    out.write(
        f"home {config.home}: {common.format_bytes(allocated)} on disk "
        f"(allocated; apparent size {common.format_bytes(apparent)})\n"
    )
    return 0
