"""Turns recorded exactly once: what a ``turn_id`` does.

``process_interaction(user, assistant, turn_id="...")`` (and ``record_messages(...,
turn_id=...)``) make recording a turn idempotent in every session store, so a retry after
any error (a timeout, a crash, a Redis :class:`~agentmem.errors.StoreUnavailableError` whose
``outcome`` is ``"unknown"``) stores nothing twice:

* the turn's message ids are derived from the session, the ``turn_id`` and each message's
  position (UUIDv5), so every attempt appends the *same* messages;
* before the first append, a *turn record* is written to the session state (key
  ``turn:<turn_id>``): a digest of the turn's messages (role, content, name, tool calls,
  metadata; not the ids or timestamps, which a retry makes anew) and the log position the
  turn was recorded after;
* an attempt that finds the record with the same digest is a retry: it reads the log past
  that position and appends only if the messages are not there yet (an earlier attempt
  failed between the record and the append). What follows the append (``then``: counting
  the turn in working memory) runs under the same lock as the record and the append, and is
  marked in the record once done (:func:`settle_turn`), so a retry does it only if no
  earlier attempt had, even when it overlaps an attempt still running. The Redis store's
  appends are idempotent by message id besides, so even two processes retrying at once
  store the turn once;
* an attempt that finds the record with a *different* digest, and the turn's messages in
  the log, is not a retry but a reused id: it raises
  :class:`~agentmem.errors.TurnConflictError` and writes nothing. When no earlier attempt
  stored its messages (it failed before its append), the turn was never recorded: the
  attempt records what it says, whatever the earlier one said (an agent whose model call
  is retried gets a new answer), so the turn is not lost.

Within one process the steps (record, append, ``then``, settle) run under the session's
process-wide lock (threads and asyncio tasks alike). Across processes, the Redis and SQLite
stores' appends are idempotent by message id, so two processes retrying one turn at the same
moment store its messages once too (each counts it in its own working memory, which one
process per session keeps). A turn's append is exclusive (``append(..., exclusive=True)``:
nothing is stored if the session holds any of its ids), and each attempt reads its messages
back after it: when two attempts with *different* messages (a model call retried in two
processes, each answering anew, at the same or another length) both found the turn
unrecorded, the log keeps the first append whole and nothing of the other, the turn record
is made to describe it, and the other attempt raises
:class:`~agentmem.errors.TurnConflictError` instead of returning as if its messages were
stored. Turn records stay with the session's
state (a few dozen bytes per turn) and go with :meth:`~agentmem.stores.base.SessionStore.clear`.

``then``'s write (the working-memory document) and the settle mark (the turn record) are two
writes of the session state, and the stores have no write of two keys at once: a crash, or a
failed reply, between the two leaves the turn counted but not marked, and the retry runs
``then`` again. So ``then`` must be idempotent by itself; the settle mark only spares a
retry the work. The manager's ``then`` counts the turn with
``WorkingMemory.advance_turn(turn_id=...)``, which keeps the ids of the latest counted turns
in the working-memory document, written with the count, so it counts a turn once.

Example:
    >>> from agentmem.stores import InMemorySessionStore
    >>> from agentmem.short_term import ConversationBufferMemory
    >>> from agentmem._sansio import drive
    >>> chat = ConversationBufferMemory(session_id="s1", store=InMemorySessionStore())
    >>> turn = [Message.create("user", "hi"), Message.create("assistant", "hello")]
    >>> drive(record_turn(chat, turn, "t-1")).new
    True
    >>> again = [Message.create("user", "hi"), Message.create("assistant", "hello")]
    >>> drive(record_turn(chat, again, "t-1")).new  # a retry: nothing is stored twice
    False
    >>> chat.store.count("s1")
    2
"""

from __future__ import annotations

import hashlib
import inspect
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from agentmem._sansio import Program, adrive, call, drive, locked
from agentmem.controller.ownership import GuestStore
from agentmem.errors import InvalidValueError, TurnConflictError
from agentmem.storable import check_storable_text, text_problem
from agentmem.types import Message

if TYPE_CHECKING:
    from agentmem.short_term.base import ShortTermMemory
    from agentmem.stores.base import ExclusiveAppends, SessionStore

__all__ = [
    "MAX_TURN_ID_LENGTH",
    "TURN_STATE_PREFIX",
    "RecordedTurn",
    "aappend_turn",
    "append_turn",
    "check_turn_id",
    "record_turn",
    "settle_turn",
    "turn_digest",
    "turn_id_of",
    "turn_messages",
]

#: Longest ``turn_id`` accepted (characters).
MAX_TURN_ID_LENGTH = 256

#: Prefix of the session-state keys of turn records.
TURN_STATE_PREFIX = "turn:"

_NAMESPACE = uuid.UUID("0b8d2f64-3c1e-4f5a-9d7b-6a2e8c4f1b93")


def check_turn_id(turn_id: object) -> str:
    """Return ``turn_id`` if it is usable: a non-empty string of at most
    :data:`MAX_TURN_ID_LENGTH` characters, storable as UTF-8.

    Raises:
        InvalidValueError: It is not.

    Example:
        >>> check_turn_id("run-42/turn-3")
        'run-42/turn-3'
    """
    if not isinstance(turn_id, str) or not turn_id.strip():
        msg = f"turn_id must be a non-empty string, got {turn_id!r}"
        raise InvalidValueError(msg)
    if len(turn_id) > MAX_TURN_ID_LENGTH:
        msg = f"turn_id is {len(turn_id)} characters long; at most {MAX_TURN_ID_LENGTH} allowed"
        raise InvalidValueError(msg)
    return check_storable_text(turn_id, what="turn_id")


def turn_id_of(source: str, ids: Sequence[object]) -> str | None:
    """A ``turn_id`` for a batch of messages named by ``ids`` (a framework's own message
    ids), or ``None`` unless every one is a non-empty string.

    One id gives ``"<source>:<id>"``; several, or one too long for a ``turn_id`` or not
    storable, give ``"<source>-batch:<sha256 of the ids>"``. The same ids always give the
    same ``turn_id``, so putting the same messages again is a retry; the batch is the unit
    (its messages put one by one are other turns).

    Example:
        >>> turn_id_of("llamaindex", ["m-1"])
        'llamaindex:m-1'
        >>> turn_id_of("llamaindex", ["m-1", "m-2"]).startswith("llamaindex-batch:")
        True
        >>> turn_id_of("llamaindex", ["m-1", None]) is None
        True
    """
    if not ids or not all(isinstance(i, str) and i for i in ids):
        return None
    if len(ids) == 1:
        name = f"{source}:{ids[0]}"
        if len(name) <= MAX_TURN_ID_LENGTH and text_problem(name, what="id") is None:
            return name
    joined = json.dumps(list(ids), ensure_ascii=False).encode("utf-8", "surrogatepass")
    return f"{source}-batch:{hashlib.sha256(joined).hexdigest()}"


def turn_messages(session_id: str, turn_id: str, messages: Sequence[Message]) -> list[Message]:
    """``messages`` with ids derived from the session, the turn and each position, so
    every attempt at recording the turn appends the same messages.

    Example:
        >>> one = turn_messages("s1", "t-1", [Message.create("user", "hi")])
        >>> two = turn_messages("s1", "t-1", [Message.create("user", "hi")])
        >>> one[0].id == two[0].id
        True
    """
    ids = _turn_ids(session_id, turn_id, len(messages))
    return [m.replace(id=i) for m, i in zip(messages, ids, strict=True)]


def _turn_ids(session_id: str, turn_id: str, n: int) -> list[str]:
    """The ids of the turn's first ``n`` messages."""
    return [str(uuid.uuid5(_NAMESPACE, json.dumps([session_id, turn_id, i]))) for i in range(n)]


def turn_digest(messages: Sequence[Message]) -> str:
    """A digest of what a turn says (ids and timestamps left out: a retry makes new ones).

    Example:
        >>> turn_digest([Message.create("user", "hi")]) == turn_digest(
        ...     [Message.create("user", "hi")]
        ... )
        True
    """
    content = [m.model_dump(mode="json", exclude={"id", "timestamp"}) for m in messages]
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class RecordedTurn:
    """What :func:`record_turn` did.

    Attributes:
        messages: The turn's messages as stored (on a retry: as an earlier attempt stored
            them).
        new: ``True`` when this call appended them, ``False`` when they were already there.
        settled: Whether an earlier attempt finished what follows the append (counting the
            turn in working memory): :func:`settle_turn` marks it. When ``False``, the
            ``then`` given to :func:`record_turn` ran (and the turn is settled now).
    """

    messages: list[Message]
    new: bool
    settled: bool
    turn_id: str
    record: dict[str, Any]


def settle_turn(short_term: ShortTermMemory, turn: RecordedTurn) -> Program[None]:
    """Mark ``turn`` as settled: what follows its append is done, so a retry skips it."""
    store, session_id = short_term.store, short_term.session_id
    record = {**turn.record, "settled": True}
    key = f"{TURN_STATE_PREFIX}{turn.turn_id}"
    yield from call(store.set_state, store.aset_state, session_id, key, record)


def record_turn(
    short_term: ShortTermMemory,
    messages: Sequence[Message],
    turn_id: str,
    then: Callable[[list[Message]], Program[None]] | None = None,
) -> Program[RecordedTurn]:
    """Append ``messages`` to ``short_term``'s session as the turn ``turn_id``, exactly once
    (see the module docstring).

    ``then`` is what follows the append (counting the turn in working memory): it gets the
    turn's messages as stored and runs once per turn, not on a retry of a turn an earlier
    attempt settled; it must be idempotent, since an attempt that fails (or dies) after it
    and before the settle mark leaves the retry to run it again. It runs, and the turn is
    settled (:func:`settle_turn`), under the same lock as the record and the append, so an
    attempt that overlaps another of the same turn (a client's retry after a timeout, while
    the first is still running) waits for it and then finds the turn settled.

    Raises:
        InvalidValueError: ``turn_id`` is not usable.
        TurnConflictError: ``turn_id`` was used in the session for other messages.
    """
    turn_id = check_turn_id(turn_id)
    batch = turn_messages(short_term.session_id, turn_id, messages)
    key = ("turn", short_term.store, short_term.session_id)
    return (yield from locked(key, _record_and_settle(short_term, batch, turn_id, then)))


def _record_and_settle(
    short_term: ShortTermMemory,
    batch: list[Message],
    turn_id: str,
    then: Callable[[list[Message]], Program[None]] | None,
) -> Program[RecordedTurn]:
    recorded = yield from _record(short_term, batch, turn_id)  # reads ``settled`` anew
    if then is not None and not recorded.settled:
        yield from then(recorded.messages)
        yield from settle_turn(short_term, recorded)
    return recorded


def _record(
    short_term: ShortTermMemory, batch: list[Message], turn_id: str
) -> Program[RecordedTurn]:
    store, session_id = short_term.store, short_term.session_id
    state_key = f"{TURN_STATE_PREFIX}{turn_id}"
    digest = turn_digest(batch)
    found = yield from call(store.get_state, store.aget_state, session_id, state_key)
    if found is not None:
        since = yield from call(store.read, store.aread, session_id, after=int(found["after"]))
        stored = {m.message.id: m.message for m in since}
        # The ids of every position either attempt may have stored (appends are atomic:
        # all of an attempt's messages landed, or none).
        width = max(len(batch), int(found.get("messages", 0)))
        landed = any(i in stored for i in _turn_ids(session_id, turn_id, width))
        if landed and found.get("digest") != digest:
            msg = (
                f"turn_id {turn_id!r} was already used in session {session_id!r} for other "
                "messages; a retry must repeat the same exchange. Nothing was written: give "
                "a new turn its own turn_id"
            )
            raise TurnConflictError(msg)
        if landed:
            settled = bool(found.get("settled"))
            return RecordedTurn([stored[m.id] for m in batch], False, settled, turn_id, found)
        record = found
        if found.get("digest") != digest:
            # The earlier attempt stored no message: it is not a turn to keep, and this
            # attempt (an agent's retried model call answers anew) is the turn.
            record = {**found, "digest": digest, "messages": len(batch), "settled": False}
            yield from call(store.set_state, store.aset_state, session_id, state_key, record)
    else:
        after = yield from call(store.last_seq, store.alast_seq, session_id)
        record = {"version": 1, "digest": digest, "after": after, "messages": len(batch)}
        yield from call(store.set_state, store.aset_state, session_id, state_key, record)
    # A first attempt, or one whose earlier attempt wrote the record but not the messages.
    # Exclusive: if another attempt's messages landed meanwhile, none of this one's are
    # stored beside them, whatever the two lengths.
    seqs = yield from _append_whole(store, session_id, batch)
    yield from _check_landed(store, session_id, turn_id, batch, seqs, int(record["after"]))
    yield from short_term._after_append()
    return RecordedTurn(batch, True, False, turn_id, record)


def _append_whole(store: SessionStore, session_id: str, batch: list[Message]) -> Program[list[int]]:
    """Append ``batch`` only if the session holds none of its messages, on a store that
    can (:class:`~agentmem.stores.base.ExclusiveAppends`); on another, a plain append
    (idempotent per message, if the store is)."""
    if _appends_exclusively(store):
        whole = cast("ExclusiveAppends", store)
        return (yield from call(whole.append, whole.aappend, session_id, batch, exclusive=True))
    return (yield from call(store.append, store.aappend, session_id, batch))


def _appends_exclusively(store: SessionStore) -> bool:
    """Whether ``store`` declares exclusive appends (a guest's door forwards the question
    to the store behind it), and no ``append`` / ``aappend`` set on the store object itself
    (a wrapper a caller installed) would refuse the keyword."""
    if not getattr(store, "exclusive_appends", False):
        return False
    inner: object = store
    while isinstance(inner, GuestStore):
        inner = inner.store
    own = getattr(inner, "__dict__", {})
    return all(_takes_exclusive(own[name]) for name in ("append", "aappend") if name in own)


def _takes_exclusive(method: Callable[..., Any]) -> bool:
    """Whether ``method`` accepts ``exclusive=`` (by name, or by ``**kwargs`` it passes on)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "exclusive" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


#: How many messages past its own an attempt reads back at first: a longer attempt of the
#: same turn that landed first (its messages are contiguous: one append) is read on from there.
_LONGER_BY = 16


def _check_landed(
    store: SessionStore,
    session_id: str,
    turn_id: str,
    batch: list[Message],
    seqs: list[int],
    after: int,
) -> Program[None]:
    """Raise :class:`~agentmem.errors.TurnConflictError` unless the turn's messages in the
    log say what ``batch`` says: another process recorded the same turn with other messages
    at the same moment (both found no messages of it, and the log, idempotent by message
    id, kept the first append). The turn record is then made to describe the turn as the
    log holds it (its digest, its length, a position before it), so the retries of the
    attempt that landed are retries.

    The turn's lock serializes attempts in one process only; this read-back is what tells
    an attempt in another process that its append was a no-op. The turn is read from its
    first message on, to its end (a longer attempt that landed first is one append, so its
    messages are contiguous; they are read :data:`_LONGER_BY` past this attempt's own at
    first, then on as long as the turn goes on).

    The append was exclusive (:func:`_append_whole`): when another attempt's messages had
    landed, none of this one's were stored, so the log holds one attempt's messages, never
    parts of two, whichever of two lengths landed first. A store whose ``append`` takes no
    ``exclusive`` is idempotent per message only: there, a longer attempt that lands
    second adds its extra positions (see :func:`_append_whole`).
    """
    held = [s for s in seqs if s > 0]
    if len(seqs) != len(batch) or not held:
        return  # a store that does not return one seq per message: nothing to compare
    low, high = min(held), max(held)
    width = max(len(batch), high - low + 1) + _LONGER_BY
    while True:  # the turn that landed is one append: contiguous from ``low``
        found = yield from call(store.read, store.aread, session_id, after=low - 1, limit=width)
        by_id = {m.message.id: m for m in found}
        landed = []
        for message_id in _turn_ids(session_id, turn_id, width):
            if message_id not in by_id:
                break
            landed.append(by_id[message_id].message)
        if len(landed) < width:
            break
        width *= 2  # the turn may go on past what was read
    common = min(len(landed), len(batch))
    if not common or [m.id for m in landed[:common]] != [m.id for m in batch[:common]]:
        return  # not this turn's messages there (the session cleared meanwhile): no verdict
    digest = turn_digest(landed)
    if digest == turn_digest(batch):
        return  # this attempt stored them, or another attempt the same exchange: a retry
    key = f"{TURN_STATE_PREFIX}{turn_id}"
    record = yield from call(store.get_state, store.aget_state, session_id, key)
    if record is not None and record.get("digest") != digest:
        first = min(by_id[m.id].seq for m in landed)
        fixed = {
            **record,
            "digest": digest,
            "messages": len(landed),
            "after": min(int(record.get("after", after)), first - 1),
        }
        yield from call(store.set_state, store.aset_state, session_id, key, fixed)
    msg = (
        f"turn {turn_id!r} of session {session_id!r} was recorded at the same moment by "
        "another attempt with other messages (a retry in another process); the session "
        "keeps the messages that landed first, not this attempt's"
    )
    raise TurnConflictError(msg)


def append_turn(
    short_term: ShortTermMemory, messages: Sequence[Message], turn_id: str
) -> list[Message]:
    """Append ``messages`` to ``short_term``'s session as the turn ``turn_id``, exactly once:
    :func:`record_turn` for callers with no working memory to count the turn in (a chat
    history). Returns the turn's messages as stored.

    Raises:
        InvalidValueError: ``turn_id`` is not usable.
        TurnConflictError: ``turn_id`` was used in the session for other messages.

    Example:
        >>> from agentmem.stores import InMemorySessionStore
        >>> from agentmem.short_term import ConversationBufferMemory
        >>> chat = ConversationBufferMemory(session_id="s1", store=InMemorySessionStore())
        >>> for _ in range(2):  # a retry stores nothing twice
        ...     _ = append_turn(chat, [Message.create("user", "hi")], "t-1")
        >>> chat.store.count("s1")
        1
    """
    return drive(record_turn(short_term, messages, turn_id)).messages


async def aappend_turn(
    short_term: ShortTermMemory, messages: Sequence[Message], turn_id: str
) -> list[Message]:
    """Async twin of :func:`append_turn` (the store's async methods)."""
    return (await adrive(record_turn(short_term, messages, turn_id))).messages
