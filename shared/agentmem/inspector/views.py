"""What the inspector reads, scoped by user: the users, a user's sessions, pages of
memories, a memory's history chain (private).

Every read of long-term memory goes through ``service.long_term(user_id)``, whose scope
the store applies to every operation; sessions go through :func:`sessions_of_user`. So a
user's pages are built from that user's data only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from agentmem.controller.consolidation import CONSOLIDATION_STATE_KEY
from agentmem.long_term.records import MemoryRecord, RecordFilter

if TYPE_CHECKING:
    from agentmem.long_term.memory import LongTermMemory
    from agentmem.service import MemoryService

__all__ = ["history_chain", "list_users", "memory_page", "sessions_of_user"]


@runtime_checkable
class _ListsUsers(Protocol):
    def user_ids(self) -> list[str]: ...


def list_users(service: MemoryService) -> list[str]:
    """The users with memories in the service's long-term store (when the store can list
    them: the Qdrant and in-memory stores can), and those with a recent context."""
    store = service.memory_store
    users = set(store.user_ids()) if isinstance(store, _ListsUsers) else set()
    users |= service.recent_contexts.users()
    return sorted(users)


def sessions_of_user(service: MemoryService, user_id: str) -> list[str]:
    """The sessions of ``user_id``, sorted: the one place the inspector decides whose a
    session is.

    Session stores record no owner yet, so a session counts as the user's when the user's
    consolidation state is in it (the watermark every consolidation of the user in that
    session writes, key ``consolidation:<user>:-``) or when the service built a context
    for the user in it (the recent-contexts ring). Sessions of the user that never
    consolidated and built no context since the service started are not listed; sessions
    consolidated under an ``agent_id`` neither. A session several users share (a group
    chat) is listed for each of them, with all its messages. When the stores record
    session owners, this function asks them instead.
    """
    store = service.sessions
    key = f"{CONSOLIDATION_STATE_KEY}:{user_id}:-"
    found = {s for s in store.sessions() if store.get_state(s, key) is not None}
    found |= {entry.session_id for entry in service.recent_contexts.of_user(user_id)}
    return sorted(found)


def memory_page(
    memory: LongTermMemory, flt: RecordFilter, cursor: str | None, size: int
) -> tuple[list[MemoryRecord], str | None, int]:
    """One page of the memories matching ``flt``, newest first: the records, the cursor of
    the next page (``None`` on the last) and how many match in all."""
    records, after = memory.scroll_records(flt, limit=size, offset=cursor, order_by="created_ts")
    return records, after, memory.count_memories(flt)


def history_chain(memory: LongTermMemory, record: MemoryRecord) -> list[MemoryRecord]:
    """The versions of ``record``, oldest first: the memories it superseded (found by
    their ``superseded_by``) and those that superseded it, following ``superseded_by``."""
    earlier: list[MemoryRecord] = []
    seen = {record.id}
    wanted = record.id
    while True:  # one filtered read per earlier version
        flt = RecordFilter(include_history=True, superseded_by=(wanted,))
        found, _ = memory.scroll_records(flt, limit=1)
        if not found or found[0].id in seen:
            break
        earlier.append(found[0])
        seen.add(found[0].id)
        wanted = found[0].id
    chain = [*reversed(earlier), record]
    current = record
    while current.superseded_by and current.superseded_by not in seen:
        found = memory.get_records([current.superseded_by])
        if not found:
            break
        current = found[0]
        seen.add(current.id)
        chain.append(current)
    return chain
