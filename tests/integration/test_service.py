"""Integration: one process serves many users and sessions at once.

``MemoryService`` and ``MemoryManager.open`` on one home, used from threads and asyncio tasks
at the same time, on the embedded stores (SQLite + Qdrant Edge) and on the server stores
(qdrant-client local mode + a real redis-server), chosen by arguments or by environment.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentmem import LongTermMemory, MemoryManager, MemoryService
from agentmem.backends import QDRANT_URL_ENV, REDIS_URL_ENV
from agentmem.errors import (
    DimensionMismatchError,
    InvalidSessionIdError,
    InvalidValueError,
    StoreClosedError,
    StoreLockedError,
)
from agentmem.stores.qdrant.client import QdrantClientStore
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from agentmem.stores.redis import RedisSessionStore
from agentmem.stores.sqlite import SQLiteSessionStore
from tests.fakes import HashingEmbedder

pytestmark = pytest.mark.integration

DIM = 64
USERS = [f"user{i:02d}" for i in range(20)]
SESSIONS = 3
TURNS = 4


def fact(user: str) -> str:
    return f"{user} keeps a pet called {user[::-1]}zorp"


def turn_text(user: str, session: str, turn: int) -> str:
    return f"{user} in {session} says turn {turn}"


@pytest.fixture(params=["embedded", "server"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    if request.param == "embedded":
        svc = MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM), background=False)
    else:
        redis_url = request.getfixturevalue("redis_url")
        svc = MemoryService.open(
            tmp_path,
            embedder=HashingEmbedder(DIM),
            qdrant_url=":memory:",
            redis_url=redis_url,
            background=False,
        )
        prefix_cleanup(svc)
    yield svc
    svc.close()


def prefix_cleanup(svc: MemoryService) -> None:
    """The session-wide Redis is shared by tests: start from no sessions of ours."""
    for session in svc.sessions.sessions():
        svc.sessions.clear(session)


def check_isolated(get_manager: object, users: list[str]) -> None:
    for user in users:
        manager = get_manager(user, f"{user}-s0")  # type: ignore[operator]
        hits = manager.recall("pet called zorp", top_k=50)
        assert hits, user
        assert {h.record.scope.user_id for h in hits} == {user}
        assert [h.record.content for h in hits] == [fact(user)]
        text = manager.build_context("which pet do I have?", max_tokens=2000).text
        for other in users:
            if other != user:
                assert fact(other) not in text
                assert f"{other} in" not in text
        assert fact(user) in text


def check_logs(get_manager: object, users: list[str]) -> None:
    for user in users:
        for s in range(SESSIONS):
            session = f"{user}-s{s}"
            log = get_manager(user, session).short_term.get_log()  # type: ignore[operator]
            texts = [m.content for m in log if m.role == "user"]
            assert sorted(texts) == sorted(turn_text(user, session, t) for t in range(TURNS))
            assert len(log) == 2 * TURNS


def work(manager: MemoryManager, user: str, session: str) -> None:
    for t in range(TURNS):
        manager.process_interaction(turn_text(user, session, t), f"ok {t}")
    if session.endswith("s0"):
        manager.remember(fact(user))


async def awork(manager: MemoryManager, user: str, session: str) -> None:
    for t in range(TURNS):
        await manager.aprocess_interaction(turn_text(user, session, t), f"ok {t}")
    if session.endswith("s0"):
        await manager.aremember(fact(user))


def test_twenty_users_three_sessions_from_threads_and_tasks_at_once(
    service: MemoryService,
) -> None:
    jobs = [(u, f"{u}-s{s}") for u in USERS for s in range(SESSIONS)]
    threaded, tasked = jobs[::2], jobs[1::2]

    async def run_tasks() -> None:
        await asyncio.gather(*(awork(service.manager(u, s), u, s) for u, s in tasked))

    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(work, service.manager(u, s), u, s) for u, s in threaded]
        asyncio.run(run_tasks())  # the event loop runs while the 8 threads write
        for f in futures:
            f.result()
    check_isolated(service.manager, USERS)
    check_logs(service.manager, USERS)


def test_manager_open_serves_many_users_on_one_home(tmp_path: Path) -> None:
    embedder = HashingEmbedder(DIM)
    opened: dict[tuple[str, str], MemoryManager] = {}
    lock = threading.Lock()

    def get(user: str, session: str) -> MemoryManager:
        with lock:
            if (user, session) not in opened:
                opened[user, session] = MemoryManager.open(
                    user_id=user,
                    session_id=session,
                    home=tmp_path,
                    embedder=embedder,
                    consolidate_every_tokens=None,
                )
            return opened[user, session]

    jobs = [(u, f"{u}-s{s}") for u in USERS for s in range(SESSIONS)]
    managers = {job: get(*job) for job in jobs}

    async def run_tasks() -> None:
        await asyncio.gather(*(awork(managers[u, s], u, s) for u, s in jobs[1::2]))

    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(work, managers[u, s], u, s) for u, s in jobs[::2]]
        asyncio.run(run_tasks())
        for f in futures:
            f.result()
    check_isolated(get, USERS)
    check_logs(get, USERS)
    # Closing handles one by one never closes a store another handle still uses.
    items = list(opened.values())
    for manager in items[:-1]:
        manager.close()
    last = items[-1]
    assert last.recall("pet called zorp", top_k=5)
    last.process_interaction("still open", "yes")
    last.close()
    # The last close released the home: a store object of its own can lock it again.
    QdrantEdgeStore(tmp_path / "long_term", dimension=DIM).close()


def test_long_term_open_twice_shares_one_store(tmp_path: Path) -> None:
    embedder = HashingEmbedder(DIM)
    alice = LongTermMemory.open(user_id="alice", home=tmp_path, embedder=embedder)
    bob = LongTermMemory.open(user_id="bob", home=tmp_path, embedder=embedder)
    assert alice.store is bob.store
    alice.store_memory("alice likes tea", "semantic")
    alice.close()
    bob.store_memory("bob likes coffee", "semantic")
    assert [h.record.content for h in bob.retrieve_memories("likes", 5)] == ["bob likes coffee"]
    bob.close()
    with pytest.raises(StoreClosedError):
        bob.store.count(bob.scope)


def test_a_second_embedder_size_on_a_shared_home_is_refused(tmp_path: Path) -> None:
    first = LongTermMemory.open(user_id="alice", home=tmp_path, embedder=HashingEmbedder(DIM))
    try:
        with pytest.raises(DimensionMismatchError):
            LongTermMemory.open(user_id="bob", home=tmp_path, embedder=HashingEmbedder(32))
        with pytest.raises(DimensionMismatchError):
            MemoryService.open(tmp_path, embedder=HashingEmbedder(32))
        first.store_memory("still usable", "semantic")
    finally:
        first.close()


def test_a_second_process_gets_a_clear_error_naming_the_server_settings(tmp_path: Path) -> None:
    with MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM)):
        code = (
            "import sys; from agentmem import MemoryService; from tests.fakes import "
            "HashingEmbedder\ntry:\n    MemoryService.open(sys.argv[1], embedder="
            f"HashingEmbedder({DIM}))\nexcept Exception as e:\n    print(type(e).__name__, e)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parents[2],
        ).stdout
    assert out.startswith(StoreLockedError.__name__)
    assert "AGENTMEM_QDRANT_URL" in out
    assert "AGENTMEM_REDIS_URL" in out


def test_environment_selects_the_server_stores_with_no_code_change(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(QDRANT_URL_ENV, ":memory:")
    monkeypatch.setenv(REDIS_URL_ENV, redis_url)
    with MemoryService.open(tmp_path / "unused", embedder=HashingEmbedder(DIM)) as service:
        assert isinstance(service.memory_store, QdrantClientStore)
        assert isinstance(service.sessions, RedisSessionStore)
        service.manager("alice", "env-s1").remember("alice reads at night")
        assert service.manager("bob", "env-s2").recall("reads at night") == []
    assert not (tmp_path / "unused" / "sessions.db").exists()
    monkeypatch.delenv(QDRANT_URL_ENV)
    monkeypatch.delenv(REDIS_URL_ENV)
    with MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM)) as service:
        assert isinstance(service.memory_store, QdrantEdgeStore)
        assert isinstance(service.sessions, SQLiteSessionStore)


def test_handles_are_cheap_and_shared(tmp_path: Path) -> None:
    with MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM)) as service:
        one = service.manager("alice", "a1")
        assert service.manager("alice", "a1") is one
        other = service.manager("bob", "b1")
        assert other.long_term.store is one.long_term.store
        assert other.short_term.store is one.short_term.store
        assert other.token_counter is one.token_counter
        one.close()  # a service handle owns nothing: the service stays usable
        one.process_interaction("hello", "hi")
        new = service.manager("alice")
        assert new.session_id != "a1"
    with pytest.raises(StoreClosedError):
        service.manager("alice", "a1")
    service.close()  # idempotent


@pytest.mark.parametrize(
    ("user", "session", "error"),
    [
        ("", "s1", InvalidValueError),
        ("alice", "", InvalidSessionIdError),
        ("alice", "a b/c", InvalidSessionIdError),
        ("alice", "x" * 300, InvalidSessionIdError),
    ],
)
def test_bad_ids_are_refused_before_anything_is_written(
    tmp_path: Path, user: str, session: str, error: type[Exception]
) -> None:
    with MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM)) as service:
        with pytest.raises(error):
            service.manager(user, session)
        assert service.sessions.sessions() == []


def test_background_consolidation_runs_once_per_session_across_users(tmp_path: Path) -> None:
    with MemoryService.open(
        tmp_path, embedder=HashingEmbedder(DIM), consolidate_every_tokens=30, workers=2
    ) as service:
        users = USERS[:6]

        def chat(user: str) -> None:
            manager = service.manager(user, f"{user}-bg")
            for t in range(6):
                manager.process_interaction(f"{user} fact number {t} about boats", "noted")

        with ThreadPoolExecutor(6) as pool:
            list(pool.map(chat, users))
        for user in users:
            service.manager(user, f"{user}-bg").wait_for_background()
    # close() finished what was queued; a new run takes only what was never consolidated.
    with MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM), background=False) as again:
        for user in users:
            manager = again.manager(user, f"{user}-bg")
            manager.consolidate()
            assert manager.consolidate().written == 0
            records = manager.long_term.all_records()
            rounds = [
                f"user: {user} fact number {t} about boats\nassistant: noted" for t in range(6)
            ]
            assert sorted(r.content for r in records) == rounds, user  # each round once
            assert {r.scope.user_id for r in records} == {user}


def test_a_full_queue_loses_nothing(tmp_path: Path) -> None:
    gate = threading.Event()
    with MemoryService.open(
        tmp_path, embedder=HashingEmbedder(DIM), consolidate_every_tokens=1, max_pending=1
    ) as service:
        queue = service.consolidation
        assert queue.submit("blocker", gate.wait) is not None
        while queue.pending:  # the worker takes the blocker; the queue is empty again
            time.sleep(0.01)
        first = service.manager("alice", "q1")
        first.process_interaction("alice owns a red kayak", "ok")  # queued
        second = service.manager("bob", "q2")
        second.process_interaction("bob owns a blue canoe", "ok")  # refused: queue full
        assert queue.dropped == 1
        gate.set()
        first.wait_for_background(10)
        assert first.long_term.all_records()
        assert second.long_term.all_records() == []
        # Still pending in the session store: an explicit run (or the next turn) takes it.
        assert second.consolidate().written >= 1


async def test_async_service_lifecycle(tmp_path: Path) -> None:
    async with MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM)) as service:
        manager = service.manager("alice", "async-1")
        await manager.aprocess_interaction("I sail on weekends", "nice")
        assert (await manager.aremember("alice sails")).action == "add"
    assert service.closed


def test_settings_reach_the_config_the_queue_and_the_handles(tmp_path: Path) -> None:
    with MemoryService.open(
        tmp_path,
        embedder=HashingEmbedder(DIM),
        model="gpt-4o-mini",
        consolidate_every_tokens=None,
        system_prompt="Be brief.",
        max_pending=7,
        max_handles=1,
    ) as service:
        assert service.config.model == "gpt-4o-mini"
        assert service.config.background is True  # the service's default, not the manager's
        assert service.consolidation.max_pending == 7
        first = service.manager("alice", "s1")
        assert first.consolidate_every_tokens is None
        assert first.system_prompt == "Be brief."
        service.manager("alice", "s2")  # max_handles=1: the first handle is let go
        assert service.manager("alice", "s1") is not first
    with pytest.raises(TypeError, match="bogus"):
        MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM), bogus=1)  # type: ignore[call-arg]
    with MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM)) as again:
        assert again.sessions is not None  # the failed open released the home's stores
