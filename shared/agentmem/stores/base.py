"""The session store protocol: an append-only message log plus small JSON state per session.

A session store holds, per session id:

* the **message log**: append-only; each appended message gets a ``seq``, a positive integer
  that strictly increases within the session (not necessarily contiguous). Nothing but
  :meth:`SessionStore.clear` ever removes a message;
* **state**: named JSON documents (summaries and their watermarks, working memory, ...),
  each replaced whole by ``set_state``;
* the **ownership record**: one JSON document naming who owns the session and whom it is
  shared with (see :mod:`agentmem.controller.ownership`). It is written once, atomically,
  by :meth:`SessionStore.claim_owner`, replaced only by :meth:`SessionStore.set_owner`, and
  survives :meth:`SessionStore.clear`, so clearing a conversation never frees its id for
  another user.

Backends: :class:`~agentmem.stores.memory.InMemorySessionStore`,
:class:`~agentmem.stores.sqlite.SQLiteSessionStore` (the embedded default) and
:class:`~agentmem.stores.redis.RedisSessionStore`. All pass ``tests/conformance``.

Example:
    >>> from agentmem.stores import InMemorySessionStore
    >>> from agentmem.types import Message
    >>> store = InMemorySessionStore()
    >>> store.append("s1", [Message(role="user", content="hi")])
    [1]
    >>> [m.message.content for m in store.read("s1")]
    ['hi']
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Sequence
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

from agentmem._sansio import offload
from agentmem._util.closing import ClosesOnExit
from agentmem._util.session_ids import MAX_SESSION_ID_LENGTH, validate_session_id
from agentmem.errors import InvalidMessageError, InvalidValueError
from agentmem.storable import MAX_DOCUMENT_DEPTH, check_storable_text, json_text
from agentmem.types import Message

__all__ = [
    "MAX_SESSION_ID_LENGTH",
    "ExclusiveAppends",
    "SessionStore",
    "StoredMessage",
    "SyncSessionStore",
    "check_messages",
    "check_state_key",
    "dump_state",
    "validate_session_id",
]


def check_state_key(key: object) -> str:
    """Return ``key`` if it is a usable state key (a non-empty string), else raise."""
    if not isinstance(key, str) or not key:
        msg = f"state key must be a non-empty string, got {key!r}"
        raise InvalidValueError(msg)
    return check_storable_text(key, what="state key")


def check_messages(messages: Sequence[object]) -> list[Message]:
    """Return ``messages`` as a list if every item is a :class:`Message`, else raise.

    Stores take validated messages only; convert dicts with ``agentmem.types.to_message``.
    """
    for index, message in enumerate(messages):
        if not isinstance(message, Message):
            msg = (
                f"messages[{index}] is a {type(message).__name__}, not a Message; convert dicts "
                "with agentmem.types.to_message first"
            )
            raise InvalidMessageError(msg)
    return list(messages)  # type: ignore[arg-type]


def dump_state(value: dict[str, Any]) -> str:
    """Serialize a state document to JSON text, refusing what JSON cannot hold losslessly.

    Raises:
        InvalidValueError: ``value`` is not a dict, or holds non-JSON values, NaN or Infinity,
            lone surrogates, or lists/dicts nested more than 128 levels deep.
    """
    if not isinstance(value, dict):
        msg = f"session state must be a dict, got {type(value).__name__}"
        raise InvalidValueError(msg)
    # State documents wrap checked values (a working-memory variable sits 3 levels down).
    return json_text(value, what="session state", max_depth=MAX_DOCUMENT_DEPTH)


class StoredMessage(NamedTuple):
    """A message and its position in the session log."""

    seq: int
    message: Message


@runtime_checkable
class SessionStore(Protocol):
    """Per-session append-only message log and JSON state, with async twins."""

    def append(self, session_id: str, messages: Sequence[Message]) -> list[int]:
        """Append atomically (all or nothing), in order; return the new seqs.

        A store that also appends exclusively declares it (:class:`ExclusiveAppends`).
        """
        ...

    def read(
        self, session_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[StoredMessage]:
        """Messages with ``seq > after`` in log order, at most ``limit`` of them."""
        ...

    def read_last(self, session_id: str, n: int) -> list[StoredMessage]:
        """The last ``n`` messages of the log, in log order."""
        ...

    def count(self, session_id: str) -> int:
        """Number of messages in the log."""
        ...

    def last_seq(self, session_id: str) -> int:
        """The highest seq in the log, 0 when it is empty."""
        ...

    def get_state(self, session_id: str, key: str) -> dict[str, Any] | None:
        """The JSON state ``key`` of the session, or ``None``."""
        ...

    def set_state(self, session_id: str, key: str, value: dict[str, Any]) -> None:
        """Replace the JSON state ``key`` of the session."""
        ...

    def state_keys(self, session_id: str) -> list[str]:
        """The keys of the session's JSON state, sorted."""
        ...

    def delete_state(self, session_id: str, key: str) -> None:
        """Remove the JSON state ``key`` (no error if absent)."""
        ...

    def clear(self, session_id: str) -> None:
        """Delete the session's messages and state (its ownership record stays)."""
        ...

    def get_owner(self, session_id: str) -> dict[str, Any] | None:
        """The session's ownership record, or ``None`` when nobody claimed it yet."""
        ...

    def claim_owner(self, session_id: str, record: dict[str, Any]) -> dict[str, Any]:
        """Store ``record`` as the ownership record unless the session has one, atomically
        (of two racing claims exactly one wins); return the record in force."""
        ...

    def set_owner(self, session_id: str, record: dict[str, Any]) -> None:
        """Replace the ownership record (the owner's own decision, e.g. sharing)."""
        ...

    def sessions(self) -> list[str]:
        """Ids of sessions that have messages or state, sorted."""
        ...

    def close(self) -> None:
        """Release connections and files. Further use raises ``StoreClosedError``."""
        ...

    # The async twins return awaitables (not necessarily coroutines): backends build them
    # with agentmem._sansio's async_twin / offload.
    def aappend(self, session_id: str, messages: Sequence[Message]) -> Awaitable[list[int]]: ...
    def aread(
        self, session_id: str, *, after: int = 0, limit: int | None = None
    ) -> Awaitable[list[StoredMessage]]: ...
    def aread_last(self, session_id: str, n: int) -> Awaitable[list[StoredMessage]]: ...
    def acount(self, session_id: str) -> Awaitable[int]: ...
    def alast_seq(self, session_id: str) -> Awaitable[int]: ...
    def aget_state(self, session_id: str, key: str) -> Awaitable[dict[str, Any] | None]: ...
    def aset_state(self, session_id: str, key: str, value: dict[str, Any]) -> Awaitable[None]: ...
    def astate_keys(self, session_id: str) -> Awaitable[list[str]]: ...
    def adelete_state(self, session_id: str, key: str) -> Awaitable[None]: ...
    def aclear(self, session_id: str) -> Awaitable[None]: ...
    def aget_owner(self, session_id: str) -> Awaitable[dict[str, Any] | None]: ...
    def aclaim_owner(
        self, session_id: str, record: dict[str, Any]
    ) -> Awaitable[dict[str, Any]]: ...
    def aset_owner(self, session_id: str, record: dict[str, Any]) -> Awaitable[None]: ...
    def asessions(self) -> Awaitable[list[str]]: ...
    def aclose(self) -> Awaitable[None]: ...


@runtime_checkable
class ExclusiveAppends(Protocol):
    """A session store that can append a batch only if the session holds none of it:
    ``exclusive_appends = True`` on its class, and ``append`` / ``aappend`` take
    ``exclusive``. The SQLite, Redis and in-memory stores are such stores; a store of your
    own need not be (a turn is then appended idempotently per message, as before).

    ``append(..., exclusive=True)`` stores nothing if the session holds any of the
    messages' ids, and returns each message's seq, or 0 for one it does not hold: two
    attempts of one turn (the same ids by position) recorded at the same moment in two
    processes, with other messages and of other lengths, then never leave parts of both
    in the log.

    Example:
        >>> from agentmem.stores import InMemorySessionStore
        >>> store = InMemorySessionStore()
        >>> first = [Message(role="user", content="a"), Message(role="assistant", content="b")]
        >>> store.append("s1", first)
        [1, 2]
        >>> longer = [first[0], *(Message(role="assistant", content=c) for c in "cd")]
        >>> store.append("s1", longer, exclusive=True), store.count("s1")
        ([1, 0, 0], 2)
    """

    exclusive_appends: ClassVar[bool]

    def append(
        self, session_id: str, messages: Sequence[Message], *, exclusive: bool = False
    ) -> list[int]: ...

    def aappend(
        self, session_id: str, messages: Sequence[Message], *, exclusive: bool = False
    ) -> Awaitable[list[int]]: ...


class SyncSessionStore(ClosesOnExit, ABC):
    """Base for blocking backends: write the sync methods; each async twin runs its sync
    method in the default thread pool (:class:`~agentmem._sansio.offload`, looked up by
    name, so the subclass's method is the one that runs). ``with store:`` closes it.

    Example:
        >>> import asyncio
        >>> from agentmem.stores import InMemorySessionStore
        >>> store = InMemorySessionStore()
        >>> asyncio.run(store.aset_state("s1", "k", {"v": 1}))
        >>> store.get_state("s1", "k")
        {'v': 1}
    """

    @abstractmethod
    def append(self, session_id: str, messages: Sequence[Message]) -> list[int]: ...

    @abstractmethod
    def read(
        self, session_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[StoredMessage]: ...

    @abstractmethod
    def read_last(self, session_id: str, n: int) -> list[StoredMessage]: ...

    @abstractmethod
    def count(self, session_id: str) -> int: ...

    @abstractmethod
    def last_seq(self, session_id: str) -> int: ...

    @abstractmethod
    def get_state(self, session_id: str, key: str) -> dict[str, Any] | None: ...

    @abstractmethod
    def set_state(self, session_id: str, key: str, value: dict[str, Any]) -> None: ...

    @abstractmethod
    def state_keys(self, session_id: str) -> list[str]: ...

    @abstractmethod
    def delete_state(self, session_id: str, key: str) -> None: ...

    @abstractmethod
    def clear(self, session_id: str) -> None: ...

    @abstractmethod
    def get_owner(self, session_id: str) -> dict[str, Any] | None: ...

    @abstractmethod
    def claim_owner(self, session_id: str, record: dict[str, Any]) -> dict[str, Any]: ...

    @abstractmethod
    def set_owner(self, session_id: str, record: dict[str, Any]) -> None: ...

    @abstractmethod
    def sessions(self) -> list[str]: ...

    @abstractmethod
    def close(self) -> None: ...

    aappend = offload(append)
    aread = offload(read)
    aread_last = offload(read_last)
    acount = offload(count)
    alast_seq = offload(last_seq)
    aget_state = offload(get_state)
    aset_state = offload(set_state)
    astate_keys = offload(state_keys)
    adelete_state = offload(delete_state)
    aclear = offload(clear)
    aget_owner = offload(get_owner)
    aclaim_owner = offload(claim_owner)
    aset_owner = offload(set_owner)
    asessions = offload(sessions)
    aclose = offload(close)
