"""Exactly-once turns: ``process_interaction(..., turn_id=...)`` retried after any error stores
the turn once, in every session store; a ``turn_id`` reused for another exchange is refused.

On the real stores: the in-memory store, SQLite and a real ``redis-server`` for sessions,
Qdrant Edge for memories. Failures are injected around the store's real ``append``: after
it committed (the caller never heard back), or before it ran; on Redis, by pausing the
server (SIGSTOP) while the append is in flight, which yields a
:class:`~agentmem.errors.StoreUnavailableError` with outcome ``"unknown"`` and an append
the server applies once resumed.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentmem import MemoryManager, MemoryService
from agentmem._sansio import Program, call
from agentmem.controller.turns import MAX_TURN_ID_LENGTH
from agentmem.errors import InvalidValueError, StoreUnavailableError, TurnConflictError
from agentmem.stores.base import SessionStore
from agentmem.stores.memory import InMemorySessionStore
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from agentmem.stores.redis import RedisSessionStore
from agentmem.stores.sqlite import SQLiteSessionStore
from agentmem.types import Message
from tests.fakes import HashingEmbedder
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration

DIM = 64
SAID = ("I keep my bike in the blue shed", "Noted: the blue shed.")


class Lost(ConnectionError):
    """The reply of a store call that never came back."""


def sessions_of(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> SessionStore:
    if kind == "memory":
        return InMemorySessionStore()
    if kind == "sqlite":
        return SQLiteSessionStore(tmp_path / "sessions.db")
    url = request.getfixturevalue("redis_url")
    return RedisSessionStore.from_url(url, prefix=f"once{uuid.uuid4().hex[:10]}")


def open_service(sessions: SessionStore, tmp_path: Path, **settings: Any) -> MemoryService:
    memories = QdrantEdgeStore(tmp_path / "long_term", dimension=DIM)
    return MemoryService(
        sessions=sessions,
        memory_store=memories,
        embedder=HashingEmbedder(DIM),
        on_close=[memories.close, sessions.close],
        **settings,
    )


@pytest.fixture(params=["memory", "sqlite", "redis"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    with open_service(sessions_of(str(request.param), tmp_path, request), tmp_path) as service:
        yield service


def contents(mem: MemoryManager) -> list[str]:
    return [m["content"] for m in mem.short_term.get_all_messages()]


def memories(mem: MemoryManager) -> list[str]:
    return sorted(r.content for r in mem.long_term.all_records())


def fail_append(
    monkeypatch: pytest.MonkeyPatch, store: SessionStore, *, after_commit: bool
) -> list[int]:
    """Make the store's next append fail once: after it committed (the reply was lost) or
    before it ran. Returns the list the attempts are counted in."""
    real = store.append
    attempts: list[int] = []

    def append(session_id: str, messages: Sequence[Message], **kw: Any) -> list[int]:
        attempts.append(len(messages))
        if len(attempts) > 1:
            return real(session_id, messages, **kw)
        if after_commit:
            real(session_id, messages, **kw)
        raise Lost("the reply of the append never came")

    async def aappend(session_id: str, messages: Sequence[Message], **kw: Any) -> list[int]:
        return await asyncio.to_thread(append, session_id, messages, **kw)

    monkeypatch.setattr(store, "append", append)
    monkeypatch.setattr(store, "aappend", aappend)
    return attempts


def interact(mem: MemoryManager, mode: str, *args: Any, **kwargs: Any) -> Any:
    if mode == "sync":
        return mem.process_interaction(*args, **kwargs)
    return asyncio.run(mem.aprocess_interaction(*args, **kwargs))


def check_stored_once(service: MemoryService, alice: MemoryManager) -> None:
    assert contents(alice) == ["first turn", "ok", *SAID]
    assert service.wait_for_consolidation(timeout=60)
    assert memories(alice) == sorted(
        ["user: first turn\nassistant: ok", f"user: {SAID[0]}\nassistant: {SAID[1]}"]
    )
    assert alice.working.turn == 2  # the retries did not count the turn again


@pytest.mark.parametrize("after_commit", [True, False], ids=["reply-lost", "not-written"])
def test_a_retried_turn_is_stored_once(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch, after_commit: bool
) -> None:
    alice = service.manager("alice", "retry-sync")
    alice.process_interaction("first turn", "ok", turn_id="t-0")
    attempts = fail_append(monkeypatch, service.sessions, after_commit=after_commit)
    with pytest.raises(Lost):
        alice.process_interaction(*SAID, turn_id="t-1")
    alice.process_interaction(*SAID, turn_id="t-1")  # the retry
    alice.process_interaction(*SAID, turn_id="t-1")  # and one more, for good measure
    # The retry appended only when the first attempt had not.
    assert len(attempts) == (1 if after_commit else 2)
    check_stored_once(service, alice)


@pytest.mark.parametrize("after_commit", [True, False], ids=["reply-lost", "not-written"])
async def test_a_retried_async_turn_is_stored_once(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch, after_commit: bool
) -> None:
    alice = service.manager("alice", "retry-async")
    await alice.aprocess_interaction("first turn", "ok", turn_id="t-0")
    attempts = fail_append(monkeypatch, service.sessions, after_commit=after_commit)
    with pytest.raises(Lost):
        await alice.aprocess_interaction(*SAID, turn_id="t-1")
    await alice.aprocess_interaction(*SAID, turn_id="t-1")
    await alice.aprocess_interaction(*SAID, turn_id="t-1")
    assert len(attempts) == (1 if after_commit else 2)
    assert await service.await_consolidation(timeout=60)
    await asyncio.to_thread(check_stored_once, service, alice)


def test_without_a_turn_id_a_retry_stores_the_turn_twice(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Why turn_id exists: the old way duplicates.
    alice = service.manager("alice", "no-turn-id")
    fail_append(monkeypatch, service.sessions, after_commit=True)
    with pytest.raises(Lost):
        alice.process_interaction(*SAID)
    alice.process_interaction(*SAID)
    assert contents(alice) == [*SAID, *SAID]


def test_a_turn_id_reused_for_another_exchange_is_refused(service: MemoryService) -> None:
    alice = service.manager("alice", "reuse")
    alice.process_interaction(*SAID, turn_id="t-1")
    assert service.wait_for_consolidation(timeout=60)  # its watermark written, then compare
    store = service.sessions
    before = (store.read(alice.session_id), store.state_keys(alice.session_id))
    for other in [
        ("I keep my bike in the red shed", SAID[1]),
        (SAID[0], "Noted: the red shed."),
    ]:
        with pytest.raises(TurnConflictError, match="turn_id 't-1' was already used") as info:
            alice.process_interaction(*other, turn_id="t-1")
        assert isinstance(info.value, InvalidValueError)
        assert "\n" not in str(info.value)
    with pytest.raises(TurnConflictError):  # other metadata is another exchange too
        alice.process_interaction(*SAID, {"channel": "sms"}, turn_id="t-1")
    assert (store.read(alice.session_id), store.state_keys(alice.session_id)) == before
    # The same id in another session is another turn.
    bob = service.manager("bob", "reuse-bob")
    bob.process_interaction("I keep my bike in the red shed", "ok", turn_id="t-1")
    assert contents(bob) == ["I keep my bike in the red shed", "ok"]


def test_a_retry_that_says_something_else_is_recorded_when_no_attempt_stored_the_turn(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first attempt failed before its messages were stored (its turn record was
    written); the retry answers differently (an agent's model call made anew): the turn is
    recorded as the retry says, once, and counted once, not refused and lost."""
    alice = service.manager("alice", "unstored-sync")
    alice.process_interaction("first turn", "ok", turn_id="t-0")
    fail_append(monkeypatch, service.sessions, after_commit=False)
    with pytest.raises(Lost):
        alice.process_interaction(SAID[0], "Noted.", turn_id="t-1")
    alice.process_interaction(*SAID, turn_id="t-1")  # the retry, with another answer
    alice.process_interaction(*SAID, turn_id="t-1")
    with pytest.raises(TurnConflictError):  # stored now: the first answer is another turn
        alice.process_interaction(SAID[0], "Noted.", turn_id="t-1")
    check_stored_once(service, alice)


async def test_an_async_retry_that_says_something_else_is_recorded_too(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = service.manager("alice", "unstored-async")
    await alice.aprocess_interaction("first turn", "ok", turn_id="t-0")
    fail_append(monkeypatch, service.sessions, after_commit=False)
    with pytest.raises(Lost):
        await alice.aprocess_interaction(SAID[0], "Noted.", turn_id="t-1")
    await alice.aprocess_interaction(*SAID, turn_id="t-1")
    await alice.aprocess_interaction(*SAID, turn_id="t-1")
    with pytest.raises(TurnConflictError):
        await alice.aprocess_interaction(SAID[0], "Noted.", turn_id="t-1")
    assert await service.await_consolidation(timeout=60)
    await asyncio.to_thread(check_stored_once, service, alice)


async def test_a_reused_turn_id_is_refused_in_async_code_too(service: MemoryService) -> None:
    alice = service.manager("alice", "reuse-async")
    await alice.aprocess_interaction(*SAID, turn_id="t-1")
    with pytest.raises(TurnConflictError):
        await alice.aprocess_interaction("something else", "ok", turn_id="t-1")
    assert await asyncio.to_thread(contents, alice) == list(SAID)


@pytest.mark.parametrize(
    "turn_id", ["", "   ", 42, "x" * (MAX_TURN_ID_LENGTH + 1), "bad\ud800"], ids=repr
)
def test_an_unusable_turn_id_is_refused_and_nothing_is_written(
    service: MemoryService, turn_id: Any
) -> None:
    alice = service.manager("alice", "bad-ids")
    with pytest.raises(InvalidValueError, match="turn_id"):
        alice.process_interaction(*SAID, turn_id=turn_id)
    assert service.sessions.read(alice.session_id) == []
    assert service.sessions.state_keys(alice.session_id) == []


def test_turn_ids_keep_many_threads_exactly_once(service: MemoryService) -> None:
    """Eight threads record the same 20 turns of one session, each retrying every turn:
    each turn is stored once."""
    alice = service.manager("alice", "threads")
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for t in range(20):
                alice.process_interaction(f"fact {t} about kayaks", "noted", turn_id=f"t{t}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    counts = Counter(contents(alice))
    assert counts == Counter({**{f"fact {t} about kayaks": 1 for t in range(20)}, "noted": 20})


# -- a retry that overlaps the attempt it retries --------------------------------------------


class PausedCount:
    """Pauses the first count of a turn in ``mem``'s working memory until :meth:`release`
    (the first attempt stalls between storing the turn and counting it); later counts pass.
    Works for threads (a blocking wait) and asyncio tasks (an awaited event)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, mem: MemoryManager) -> None:
        self.reached, self.go = threading.Event(), threading.Event()
        self.counts = 0
        real = mem.working._advance_turn

        def wait() -> None:
            self.reached.set()
            assert self.go.wait(timeout=30)

        async def await_go() -> None:
            self.reached.set()
            assert await asyncio.to_thread(self.go.wait, 30)

        def advance_turn(n: int = 1, *, turn_id: str | None = None) -> Program[int]:
            self.counts += 1
            if self.counts == 1:
                yield from call(wait, await_go)
            return (yield from real(n, turn_id=turn_id))

        monkeypatch.setattr(mem.working, "_advance_turn", advance_turn)

    def release(self) -> None:
        self.go.set()


def test_a_retry_overlapping_its_first_attempt_counts_the_turn_once(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client retries a turn (same turn_id) while the first attempt is still running,
    paused after storing the messages and before counting the turn: the turn is stored
    once and counted once."""
    alice = service.manager("alice", "overlap-sync")
    pause = PausedCount(monkeypatch, alice)
    errors: list[BaseException] = []

    def attempt() -> None:
        try:
            alice.process_interaction(*SAID, turn_id="req-1")
        except BaseException as exc:  # reported below
            errors.append(exc)

    first, retry = threading.Thread(target=attempt), threading.Thread(target=attempt)
    first.start()
    assert pause.reached.wait(timeout=30)
    retry.start()
    retry.join(timeout=0.5)  # the retry runs (or waits for the first attempt) meanwhile
    pause.release()
    first.join(timeout=30)
    retry.join(timeout=30)
    assert errors == []
    assert contents(alice) == list(SAID)
    assert alice.working.turn == 1
    assert pause.counts == 1
    alice.working.reload()  # and so says the stored document
    assert alice.working.turn == 1


async def test_an_async_retry_overlapping_its_first_attempt_counts_the_turn_once(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = service.manager("alice", "overlap-async")
    pause = PausedCount(monkeypatch, alice)
    first = asyncio.create_task(alice.aprocess_interaction(*SAID, turn_id="req-1"))
    assert await asyncio.to_thread(pause.reached.wait, 30)
    retry = asyncio.create_task(alice.aprocess_interaction(*SAID, turn_id="req-1"))
    await asyncio.wait([retry], timeout=0.5)  # it runs (or waits for the first) meanwhile
    pause.release()
    await asyncio.wait_for(asyncio.gather(first, retry), timeout=30)
    assert await asyncio.to_thread(contents, alice) == list(SAID)
    assert alice.working.turn == 1
    assert pause.counts == 1
    await alice.working.areload()
    assert alice.working.turn == 1


# -- Redis: a retry after an "unknown" outcome ------------------------------------------------


def pause_during_append(server: RedisServer, store: RedisSessionStore) -> Callable[[], None]:
    """Pause the server while the next append is on the wire (it is sent, never answered),
    then resume it; returns what undoes the patch."""
    real = store.append

    def append(session_id: str, messages: Sequence[Message], **kw: Any) -> list[int]:
        store.append = real  # type: ignore[method-assign]
        server.pause()
        try:
            return real(session_id, messages, **kw)
        finally:
            server.resume()

    store.append = append  # type: ignore[method-assign]
    return lambda: setattr(store, "append", real)


def test_a_turn_retried_after_an_unknown_redis_outcome_is_stored_once(
    private_redis: RedisServer, tmp_path: Path
) -> None:
    sessions = RedisSessionStore.from_url(
        private_redis.url, prefix=f"once{uuid.uuid4().hex[:10]}", timeout=0.5, deadline=1.0
    )
    with open_service(sessions, tmp_path) as service:
        alice = service.manager("alice", "unknown-outcome")
        alice.process_interaction("first turn", "ok", turn_id="t-0")  # the scripts loaded
        undo = pause_during_append(private_redis, sessions)
        try:
            with pytest.raises(StoreUnavailableError) as info:
                alice.process_interaction(*SAID, turn_id="req-17")
        finally:
            undo()
        assert info.value.outcome == "unknown"
        assert "turn_id" in str(info.value)  # the advice names the way to retry
        # Resumed, the server runs the append it had received: wait until it has, so the
        # retry meets an append that was applied (as in test_redis_faults).
        for _ in range(300):
            if sessions.count(alice.session_id) == 4:
                break
            time.sleep(0.01)
        assert sessions.count(alice.session_id) == 4
        alice.process_interaction(*SAID, turn_id="req-17")  # the retry the error advises
        assert contents(alice) == ["first turn", "ok", *SAID]
        assert service.wait_for_consolidation(timeout=60)
        assert memories(alice) == sorted(
            ["user: first turn\nassistant: ok", f"user: {SAID[0]}\nassistant: {SAID[1]}"]
        )


def _twin_stores(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> list[SessionStore]:
    """Two store objects on one session database: two processes' views of it."""
    if kind == "sqlite":
        return [SQLiteSessionStore(tmp_path / "sessions.db") for _ in range(2)]
    url = request.getfixturevalue("redis_url")
    prefix = f"race{uuid.uuid4().hex[:10]}"
    return [RedisSessionStore.from_url(url, prefix=prefix) for _ in range(2)]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("theirs_did", ["whole attempt", "append only"])
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_two_processes_recording_one_turn_with_other_answers_keep_one_and_tell_the_other(
    kind: str,
    theirs_did: str,
    mode: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two processes retry one turn at the same moment, each with its model's new answer;
    both find the turn unrecorded. The other process's messages land first (its whole
    attempt, or only its append after our record overwrote its record): ours, with the same
    message ids, is a no-op in the log. We must hear it (``TurnConflictError``), not return
    as if our answer were stored, and the turn record must describe what the log holds."""
    from agentmem.controller.turns import aappend_turn, append_turn, turn_messages
    from agentmem.short_term import ConversationBufferMemory

    ours_store, theirs_store = _twin_stores(kind, tmp_path, request)
    try:
        ours = ConversationBufferMemory(session_id="s1", store=ours_store)
        theirs = ConversationBufferMemory(session_id="s1", store=theirs_store)

        def said(answer: str) -> list[Message]:
            return [
                Message.create("user", "where is my bike?"),
                Message.create("assistant", answer),
            ]

        real = ours_store.append

        def append(session_id: str, messages: Sequence[Message], **kw: Any) -> list[int]:
            if theirs_did == "whole attempt":
                append_turn(theirs, said("In the red shed."), "t-1")
            else:  # their record was overwritten by ours; their append comes first
                theirs_store.append("s1", turn_messages("s1", "t-1", said("In the red shed.")))
            monkeypatch.setattr(ours_store, "append", real)
            return real(session_id, messages, **kw)

        async def aappend(session_id: str, messages: Sequence[Message], **kw: Any) -> list[int]:
            return await asyncio.to_thread(append, session_id, messages, **kw)

        monkeypatch.setattr(ours_store, "append", append)
        monkeypatch.setattr(ours_store, "aappend", aappend)

        def record_ours() -> object:
            if mode == "sync":
                return append_turn(ours, said("In the blue shed."), "t-1")
            return asyncio.run(aappend_turn(ours, said("In the blue shed."), "t-1"))

        with pytest.raises(TurnConflictError, match="at the same moment"):
            record_ours()
        log = [m.message.content for m in theirs_store.read("s1")]
        assert log == ["where is my bike?", "In the red shed."]
        # The turn record describes what landed: their retry is a retry, ours a conflict.
        append_turn(theirs, said("In the red shed."), "t-1")
        with pytest.raises(TurnConflictError, match="already used"):
            append_turn(ours, said("In the blue shed."), "t-1")
        assert [m.message.content for m in ours_store.read("s1")] == log
    finally:
        ours_store.close()
        theirs_store.close()


def _every_field() -> list[Message]:
    """A turn using every field a message has, with values a store's round trip could
    change (non-ASCII text, floats, tuples, nested metadata, tool calls)."""
    from agentmem.types import ToolCall

    call = ToolCall(id="call-1", name="weather", arguments='{"city": "Zürich", "days": 2}')
    return [
        Message.create(
            "user",
            "Wie wird das Wetter? 天気 🌦\n\ttabs and  spaces ",
            name="alice",
            metadata={"lang": "de", "score": 1.0, "big": 2**62, "tags": ("a", "b"), "n": None},
        ),
        Message.create("assistant", "", tool_calls=(call,), metadata={"nested": {"x": [1.5]}}),
        Message.create(
            "tool", '{"temp": -3.5}', tool_call_id="call-1", metadata={"k": [True, False]}
        ),
        Message.create("assistant", "Kalt: −3,5 °C.", metadata={}),
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_turn_of_every_field_records_and_retries_without_a_conflict(
    service: MemoryService, mode: str
) -> None:
    """Each attempt reads its messages back and compares what they say: what every store
    gives back must say the same as what was appended, or every such turn is refused."""
    from agentmem.controller.turns import aappend_turn, append_turn

    chat = service.manager("alice", "s-fields").short_term

    async def twice() -> list[list[Message]]:  # one loop: the Redis client's
        return [await aappend_turn(chat, _every_field(), "t-every-field") for _ in range(2)]

    if mode == "sync":  # the first attempt, then a retry
        attempts = [append_turn(chat, _every_field(), "t-every-field") for _ in range(2)]
    else:
        attempts = asyncio.run(twice())
    for stored in attempts:
        assert [m.content for m in stored] == [m.content for m in _every_field()]
    assert chat.store.count("s-fields") == 4


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
@pytest.mark.parametrize("door", ["direct", "nested guest"])
@pytest.mark.parametrize(
    ("theirs_n", "ours_n"),
    [(3, 2), (4, 2), (2, 3), (2, 4), (1, 3), (24, 2)],
    ids=lambda n: str(n),
)
def test_racing_attempts_of_different_lengths_keep_the_first_and_its_retries(
    kind: str,
    door: str,
    theirs_n: int,
    ours_n: int,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race above where the two attempts differ in length (one model answered with a
    tool call, the other in plain text), whichever landed first: ours hears
    ``TurnConflictError``, the log holds the first attempt's messages and none of ours (the
    append is exclusive: when the shorter landed first, the longer one's extra positions are
    not stored either), and the attempt whose messages landed can still retry its turn (the
    turn record describes all of them, not the first ``len(ours)``; a landed turn far
    longer than ours is read whole). Our memory may sit on another memory's store (a door
    on a door: the exclusive append must reach the store behind both)."""
    from agentmem.controller.turns import append_turn
    from agentmem.short_term import ConversationBufferMemory

    ours_store, theirs_store = _twin_stores(kind, tmp_path, request)
    try:
        ours_door: Any = ours_store
        if door == "nested guest":
            ours_door = ConversationBufferMemory(session_id="other", store=ours_store).store
        ours = ConversationBufferMemory(session_id="s1", store=ours_door)
        theirs = ConversationBufferMemory(session_id="s1", store=theirs_store)

        def said(answer: str, n: int) -> list[Message]:
            turn = [Message.create("user", "where is my bike?")]
            turn += [Message.create("assistant", f"{answer} ({i})") for i in range(n - 1)]
            return turn

        real = ours_store.append

        def append(session_id: str, messages: Sequence[Message], **kw: Any) -> list[int]:
            append_turn(theirs, said("In the red shed.", theirs_n), "t-1")
            monkeypatch.setattr(ours_store, "append", real)
            return real(session_id, messages, **kw)

        monkeypatch.setattr(ours_store, "append", append)
        with pytest.raises(TurnConflictError, match="at the same moment"):
            append_turn(ours, said("In the blue shed.", ours_n), "t-1")
        log = [m.message.content for m in theirs_store.read("s1")]
        assert log == [m.content for m in said("In the red shed.", theirs_n)]
        with pytest.raises(TurnConflictError, match="already used"):  # ours, retried
            append_turn(ours, said("In the blue shed.", ours_n), "t-1")
        append_turn(theirs, said("In the red shed.", theirs_n), "t-1")  # a retry
        assert [m.message.content for m in theirs_store.read("s1")] == log
    finally:
        ours_store.close()
        theirs_store.close()


class _OldStyleStore(InMemorySessionStore):
    """A store of a user's own, written before ``exclusive`` existed."""

    exclusive_appends = False

    def append(self, session_id: str, messages: Sequence[Message]) -> list[int]:  # type: ignore[override]
        return super().append(session_id, messages)


class _Logged:
    """A forwarding proxy a user might put around any store."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.appends = 0

    def append(self, *args: Any, **kwargs: Any) -> Any:
        self.appends += 1
        return self.store.append(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.mark.parametrize("wrapping", ["old-style store", "proxy", "instance wrapper"])
def test_stores_that_take_no_exclusive_still_record_turns(wrapping: str, tmp_path: Path) -> None:
    """A store of one's own without ``exclusive`` (or one behind a proxy that forwards to
    it, or one whose ``append`` a caller replaced with a wrapper of the old signature) is
    appended to as before: no ``TypeError`` from the keyword."""
    from agentmem.controller.turns import append_turn
    from agentmem.short_term import ConversationBufferMemory

    store: Any
    if wrapping == "old-style store":
        store = _OldStyleStore()
    elif wrapping == "proxy":
        store = _Logged(_OldStyleStore())
    else:
        store = SQLiteSessionStore(tmp_path / "sessions.db")
        real = store.append

        def traced(session_id: str, messages: Sequence[Message]) -> list[int]:
            return real(session_id, messages)

        store.append = traced
    chat = ConversationBufferMemory(session_id="s1", store=store)
    turn = [Message.create("user", "hi"), Message.create("assistant", "hello")]
    for _ in range(2):  # and its retry
        stored = append_turn(chat, turn, "t-1")
        assert [m.content for m in stored] == ["hi", "hello"]
    assert store.count("s1") == 2
