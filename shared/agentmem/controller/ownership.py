"""Who a session belongs to, checked by every door that names a session.

A session belongs to the user (and agent, where one is used) who first used it: the first
door that names the session for that user records an ownership record in the session store,
atomically (:meth:`~agentmem.stores.base.SessionStore.claim_owner`), before anything is read
or written. From then on every door checks it: another user (or the same user through
another agent) gets :class:`~agentmem.errors.SessionOwnershipError`, whose message names the
session but never its owner, and nothing is read, written, consolidated or reset.

**Sharing** is the owner's explicit decision: :meth:`SessionOwners.share` (and
:meth:`agentmem.MemoryService.share_session`) lists the members who may use the session
besides the owner, for example a group chat. Each member's consolidation keeps its own
watermark and writes only that member's long-term memory.

**Sessions written by earlier versions** have no ownership record. The first user who names
one gets it, unless the session holds a consolidation watermark (earlier versions kept one
per user who consolidated it): then only a user with a watermark there may claim it, and any
other user is refused. A session never consolidated goes to the first user who names it.
A session whose watermark key cannot say whose it is (an owner id with ``:``, see
:func:`legacy_watermark_key`) is claimed by nobody that way; whoever runs the stores, knowing
its owner, gives it with :meth:`SessionOwners.assign` (``MemoryService.assign_session``, or
``agentmem assign-session``), which takes only a session holding that owner's earlier key.

**Doors without a user** (a chat history or a tier — ``WorkingMemory``,
``SummaryBufferMemory``, ... — built on a session store without ``user_id=``, for
single-tenant apps) may use sessions nobody owns, and are refused on owned ones. A tier
built with ``user_id=`` is that user's door. A door that is not the owner's (a member's,
or one without a user) checks the owner record before every operation
(:meth:`SessionOwners.door`, :class:`GuestStore`): a dropped member, or a door without a
user on a session someone has since claimed, is refused even through a handle it holds.

Owner keys are structural: ``owner_key("a:b", None)`` and ``owner_key("a", "b:-")`` differ,
as every pair of (user, agent) does, because they are JSON arrays, never joined strings.

Example:
    >>> from agentmem.stores import InMemorySessionStore
    >>> owners = SessionOwners(InMemorySessionStore())
    >>> owners.check("chat-1", ("alice", None))  # alice's first use claims it
    SessionOwner(owner=('alice', None), members=())
    >>> owners.check("chat-1", ("bob", None))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentmem.errors.SessionOwnershipError: session 'chat-1' belongs to another user ...
    >>> owners.share("chat-1", owner=("alice", None), members=["bob"]).members
    (('bob', None),)
    >>> owners.check("chat-1", ("bob", None)).members  # a member now
    (('bob', None),)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from agentmem._sansio import Program, async_twin, call, twin
from agentmem.errors import InvalidValueError, SessionOwnershipError
from agentmem.stores.base import SessionStore

__all__ = [
    "CONSOLIDATION_STATE_KEY",
    "SESSION_OPERATIONS",
    "GuestStore",
    "Principal",
    "SessionOwner",
    "SessionOwners",
    "joined_watermark_key",
    "legacy_watermark_key",
    "owner_key",
    "principal",
    "user_principal",
    "valid_principal",
    "watermark_key",
    "watermark_keys",
]

#: Who uses a session: ``(user_id, agent_id)``, ``agent_id`` ``None`` where none is used.
Principal: TypeAlias = tuple[str, str | None]

#: Prefix of the session-state keys that hold each owner's consolidation watermark.
CONSOLIDATION_STATE_KEY = "consolidation"

_RECORD_VERSION = 1


def principal(who: str | Sequence[str | None]) -> Principal:
    """``who`` as a :data:`Principal`: a user id alone, or a ``(user_id, agent_id)`` pair.

    Raises:
        InvalidValueError: ``who`` is neither.

    Example:
        >>> principal("bob"), principal(("bob", "planner"))
        (('bob', None), ('bob', 'planner'))
    """
    if isinstance(who, str) and who:
        return (who, None)
    if not isinstance(who, str) and isinstance(who, Sequence) and len(who) == 2:
        user, agent = who
        if isinstance(user, str) and user and (agent is None or isinstance(agent, str)):
            return (user, agent)
    msg = f"expected a user id or a (user_id, agent_id) pair, got {who!r}"
    raise InvalidValueError(msg)


def valid_principal(who: str | Sequence[str | None]) -> Principal:
    """:func:`principal`, its ids checked as every scope's are (the ids a manager accepts).

    Raises:
        InvalidValueError: ``who`` is not a user id or a pair, or an id is not valid.

    Example:
        >>> valid_principal(("bob", "planner"))
        ('bob', 'planner')
    """
    from pydantic import ValidationError

    from agentmem._util.pydantic_errors import describe
    from agentmem.long_term.records import Scope

    user, agent = principal(who)
    try:
        Scope(user_id=user, agent_id=agent)
    except ValidationError as exc:
        raise InvalidValueError(describe(exc, "principal")) from None
    return (user, agent)


def user_principal(user_id: str | None, agent_id: str | None = None) -> Principal | None:
    """The principal a door was given as ``user_id`` / ``agent_id`` (``None`` for neither:
    a door without a user, which may use only the sessions nobody owns).

    Raises:
        InvalidValueError: ``agent_id`` without ``user_id``, or an empty user id.

    Example:
        >>> user_principal("bob"), user_principal("bob", "planner"), user_principal(None)
        (('bob', None), ('bob', 'planner'), None)
    """
    if user_id is None and agent_id is None:
        return None
    return principal((user_id, agent_id))


def owner_key(who: Principal) -> str:
    """The text that names ``who`` in keys and ids: a JSON array, so no two principals share
    one however their ids are spelled.

    Example:
        >>> owner_key(("a:b", None)) != owner_key(("a", "b:-"))
        True
        >>> owner_key(("alice", None))
        '["alice",null]'
    """
    return json.dumps(list(who), separators=(",", ":"), ensure_ascii=False)


def watermark_key(who: Principal) -> str:
    """The session-state key of ``who``'s consolidation watermark."""
    return f"{CONSOLIDATION_STATE_KEY}:{owner_key(who)}"


def legacy_watermark_key(who: Principal) -> str | None:
    """The key earlier versions kept ``who``'s watermark under, or ``None`` when that key
    could also be another principal's.

    Earlier versions joined the ids (``consolidation:USER:AGENT``, ``-`` for no agent), so
    ``("a:b", None)`` and ``("a", "b:-")`` shared ``consolidation:a:b:-``, and
    ``("alice", "-")`` had ``("alice", None)``'s. Such a key cannot say whose it is: it is
    read for nobody (a session of an earlier version whose only watermark is one of them
    is claimed by nobody, rather than by the wrong principal). Read only to migrate.

    Example:
        >>> legacy_watermark_key(("alice", None)), legacy_watermark_key(("alice", "planner"))
        ('consolidation:alice:-', 'consolidation:alice:planner')
        >>> legacy_watermark_key(("a:b", None)) is None, legacy_watermark_key(("a", "b:-"))
        (True, None)
    """
    user, agent = who
    if ":" in user or (agent is not None and (":" in agent or agent == "-")):
        return None
    return joined_watermark_key(who)


def joined_watermark_key(who: Principal) -> str:
    """The key earlier versions kept ``who``'s watermark under, whoever else's it could be
    (see :func:`legacy_watermark_key`): only :meth:`SessionOwners.assign` reads it, on an
    operator's word.

    Example:
        >>> joined_watermark_key(("a:b", None)) == joined_watermark_key(("a", "b:-"))
        True
    """
    user, agent = who
    return f"{CONSOLIDATION_STATE_KEY}:{user}:{agent or '-'}"


def watermark_keys(who: Principal) -> frozenset[str]:
    """The session-state keys that hold ``who``'s consolidation watermark: its own key and
    the unambiguous key of an earlier version (see :func:`legacy_watermark_key`)."""
    legacy = legacy_watermark_key(who)
    return frozenset({watermark_key(who)} if legacy is None else {watermark_key(who), legacy})


@dataclass(frozen=True)
class SessionOwner:
    """A session's ownership record.

    Attributes:
        owner: The principal who owns the session.
        members: The principals the owner shared it with (empty: not shared).
    """

    owner: Principal
    members: tuple[Principal, ...] = ()

    def admits(self, who: Principal) -> bool:
        """Whether ``who`` may use the session."""
        return who == self.owner or who in self.members

    def users(self) -> set[str]:
        """The user ids of the owner and the members (whatever their agents)."""
        return {self.owner[0], *(user for user, _ in self.members)}

    def to_json(self) -> dict[str, Any]:
        """The record as stored."""
        return {
            "version": _RECORD_VERSION,
            "owner": list(self.owner),
            "members": [list(m) for m in self.members],
        }

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> SessionOwner:
        """A stored record back (refusing one that is not a record)."""
        try:
            return cls(
                owner=principal(record["owner"]),
                members=tuple(principal(m) for m in record.get("members", ())),
            )
        except (KeyError, TypeError, InvalidValueError) as exc:
            msg = f"not a session ownership record: {record!r}"
            raise InvalidValueError(msg) from exc


class SessionOwners:
    """The ownership records of one session store (see the module docstring).

    Args:
        store: The session store whose sessions are checked.
    """

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def _check(self, session_id: str, who: Principal | None) -> Program[SessionOwner | None]:
        """Let ``who`` use ``session_id``, claiming it when nobody owns it yet; ``who`` None
        is a door that knows no user (it may use only sessions nobody owns). Returns the
        session's ownership record (``None``: nobody owns it, and ``who`` is None).

        Raises:
            SessionOwnershipError: The session is another user's and not shared with ``who``.
        """
        store = self.store
        found = yield from call(store.get_owner, store.aget_owner, session_id)
        if found is None:
            if who is None:
                return None
            yield from self._check_legacy(session_id, who)
            claim = SessionOwner(owner=who).to_json()
            found = yield from call(store.claim_owner, store.aclaim_owner, session_id, claim)
        record = SessionOwner.from_json(found)
        if who is None or not record.admits(who):
            raise _refused(session_id)
        return record

    check = twin(_check)
    acheck = async_twin(check)

    def door(self, session_id: str, who: Principal | None) -> SessionStore:
        """Check ``who`` as :meth:`check` does, and return the store ``who``'s door on
        ``session_id`` is to use: the store itself for the session's owner, and for anyone
        else (a member of a shared session, a door without a user on a session nobody owns
        yet) a :class:`GuestStore` that checks the owner record again before every
        operation on the session: a member the owner drops (:meth:`share`, from any
        process), or a door without a user once a user has claimed the session, is refused
        from its next operation on, even through a handle it already holds.

        Raises:
            SessionOwnershipError: The session is another user's and not shared with ``who``.
        """
        record = self.check(session_id, who)
        return self._door(session_id, who, record)

    async def adoor(self, session_id: str, who: Principal | None) -> SessionStore:
        """Async twin of :meth:`door`."""
        record = await self.acheck(session_id, who)
        return self._door(session_id, who, record)

    def _door(
        self, session_id: str, who: Principal | None, record: SessionOwner | None
    ) -> SessionStore:
        store = self.store
        if record is not None and record.owner == who:
            return store
        if isinstance(store, GuestStore) and store.guest == (session_id, who):
            return store
        return cast(SessionStore, GuestStore(store, session_id, who))

    @twin
    def share(
        self,
        session_id: str,
        *,
        owner: str | Principal,
        members: Sequence[str | Principal],
    ) -> Program[SessionOwner]:
        """Let ``members`` use ``owner``'s session (replacing earlier members: ``[]`` stops
        sharing). A session nobody owns yet is claimed for ``owner`` first.

        Raises:
            SessionOwnershipError: ``owner`` does not own the session.
            InvalidValueError: ``owner`` or a member is not a user id or a (user, agent) pair.
        """
        who = valid_principal(owner)
        guests = tuple(dict.fromkeys(g for g in map(valid_principal, members) if g != who))
        yield from self._check(session_id, who)
        store = self.store
        found = yield from call(store.get_owner, store.aget_owner, session_id)
        if found is None or SessionOwner.from_json(found).owner != who:
            raise _refused(session_id)
        record = SessionOwner(owner=who, members=guests)
        yield from call(store.set_owner, store.aset_owner, session_id, record.to_json())
        return record

    ashare = async_twin(share)

    @twin
    def assign(self, session_id: str, *, owner: str | Principal) -> Program[SessionOwner]:
        """An operator's decision: ``owner`` owns ``session_id``, a session of an earlier
        version that nobody owns yet and that holds ``owner``'s watermark under an earlier
        version's key (:func:`joined_watermark_key`), even when that key could also be
        another principal's, so no user may claim the session by naming it (see the module
        docs). Never drive it with a request's input: it is the way back for whoever runs
        the stores. The earlier watermark becomes ``owner``'s own (written before the owner
        record, so no consolidation can start from nothing), and consolidation goes on where
        it stopped. Assigning the session to its owner again returns its record.

        Raises:
            SessionOwnershipError: The session already belongs to another principal, or
                holds no earlier watermark that could be ``owner``'s (a session never
                consolidated goes to the first user who names it).
            InvalidValueError: ``owner`` is not a valid user id or (user, agent) pair.
        """
        who = valid_principal(owner)
        store = self.store
        found = yield from call(store.get_owner, store.aget_owner, session_id)
        if found is None:
            keys = yield from call(store.state_keys, store.astate_keys, session_id)
            joined, own = joined_watermark_key(who), watermark_key(who)
            if joined not in keys:
                msg = (
                    f"session {session_id!r} holds no watermark of an earlier version that "
                    "could be this principal's; assign gives only such a session (check "
                    "the session id, user and agent; a session never consolidated goes to "
                    "the first user who names it)"
                )
                raise SessionOwnershipError(msg)
            mark = yield from call(store.get_state, store.aget_state, session_id, joined)
            if own not in keys and mark is not None:  # before the owner record: nobody
                # can consolidate the session (and move its watermark) until it has one
                yield from call(store.set_state, store.aset_state, session_id, own, mark)
            claim = SessionOwner(owner=who).to_json()
            found = yield from call(store.claim_owner, store.aclaim_owner, session_id, claim)
        record = SessionOwner.from_json(found)
        if record.owner != who:
            msg = (
                f"session {session_id!r} already has an owner; assign gives only a session "
                "nobody owns (its owner can share it: MemoryService.share_session)"
            )
            raise SessionOwnershipError(msg)
        return record

    aassign = async_twin(assign)

    def _check_legacy(self, session_id: str, who: Principal) -> Program[None]:
        """A session of an earlier version with watermarks goes only to a user who has one."""
        store = self.store
        keys = yield from call(store.state_keys, store.astate_keys, session_id)
        marks = {k for k in keys if k.startswith(f"{CONSOLIDATION_STATE_KEY}:")}
        if marks and not marks & watermark_keys(who):
            raise _refused(session_id)


def _refused(session_id: str) -> SessionOwnershipError:
    msg = (
        f"session {session_id!r} belongs to another user and is not shared with this one; "
        "use a session id of your own, or ask its owner to share it "
        "(MemoryService.share_session)"
    )
    return SessionOwnershipError(msg)


#: The store operations that act on one session (their first argument), checked by
#: :class:`GuestStore`; the others (owner records, listing, closing) pass through.
SESSION_OPERATIONS = frozenset(
    {
        "append",
        "read",
        "read_last",
        "count",
        "last_seq",
        "get_state",
        "set_state",
        "state_keys",
        "delete_state",
        "clear",
    }
)


class GuestStore:
    """A session store as a guest of one session uses it (see :meth:`SessionOwners.door`):
    a member of a shared session, or a door without a user on a session nobody owned when
    it was opened. Every operation on that session first reads the owner record again and
    raises :class:`~agentmem.errors.SessionOwnershipError` once the guest is no longer
    admitted. Everything else is the store's own; it compares and hashes as the store, so
    locks keyed by the store are the owner's handles' locks too.

    It also serves as a door checked at its first operation rather than when opened (a
    tier built on an async-only store must not read at construction): once a check finds
    ``who`` is the session's owner (the first check claims a session nobody owns), the
    operations that follow go straight to the store.

    Args:
        store: The session store.
        session_id: The session.
        who: The guest (``None``: a door without a user).
    """

    def __init__(self, store: SessionStore, session_id: str, who: Principal | None) -> None:
        self.store = store
        self.guest = (session_id, who)
        self._owners = SessionOwners(store)
        self._owner = False  # a check found ``who`` owns the session: no more checks

    def _admitted(self, record: SessionOwner | None) -> None:
        if record is not None and record.owner == self.guest[1]:
            self._owner = True

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.store, name)
        asynchronous = name.startswith("a") and name[1:] in SESSION_OPERATIONS
        if not (asynchronous or name in SESSION_OPERATIONS):
            return found
        session_id, who = self.guest
        owners = self._owners

        if asynchronous:

            async def checked_async(target: str, /, *args: Any, **kwargs: Any) -> Any:
                if target == session_id and not self._owner:
                    self._admitted(await owners.acheck(session_id, who))
                return await found(target, *args, **kwargs)

            return checked_async

        def checked(target: str, /, *args: Any, **kwargs: Any) -> Any:
            if target == session_id and not self._owner:
                self._admitted(owners.check(session_id, who))
            return found(target, *args, **kwargs)

        return checked

    def __eq__(self, other: object) -> bool:
        return self.store == (other.store if isinstance(other, GuestStore) else other)

    def __hash__(self) -> int:
        return hash(self.store)

    def __repr__(self) -> str:
        return f"GuestStore({self.store!r}, session={self.guest[0]!r})"
