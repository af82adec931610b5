"""What the inspector reads, scoped by user: the users, a user's sessions, pages of
memories, a memory's history chain (private).

Every read of long-term memory goes through ``service.long_term(user_id)``, whose scope
the store applies to every operation; sessions go through :func:`sessions_of_user`. So a
user's pages are built from that user's data only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from agentmem.controller.ownership import SessionOwner, watermark_keys
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

    A session is the user's when its ownership record names the user as its owner or as a
    member it was shared with (under any agent; see :mod:`agentmem.controller.ownership`).
    A session of an earlier version that nobody has claimed yet counts when it holds the
    user's consolidation watermark, as the ownership rule for such sessions says.
    """
    store = service.sessions
    marks = watermark_keys((user_id, None))
    found = []
    for session in store.sessions():
        record = store.get_owner(session)
        if record is None:
            if marks & set(store.state_keys(session)):
                found.append(session)
        elif user_id in SessionOwner.from_json(record).users():
            found.append(session)
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
