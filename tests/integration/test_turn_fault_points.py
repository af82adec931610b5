"""Exactly-once turns at every step: a fault injected at each session-store call of
``process_interaction(..., turn_id=...)``, then a retry, stores the turn once, counts it once
in working memory and consolidates it once.

Each store call of the turn (the turn record, the append, the working-memory count, the
settle mark, the consolidation's reads and watermarks) fails in turn: before it ran, or after
it did (the reply was lost). The turn is then retried with the same ``turn_id``, from the
same handle (an error the caller retries) or from a new service over the same stores (the
process died and was started again), and retried once more. A child process killed between
counting the turn and marking it settled is the real crash; two child processes recording
the same turns at the same moment on one SQLite file are the race across processes.

On the real stores: the in-memory store, SQLite, a real ``redis-server`` and a local Redis
Cluster for sessions, Qdrant Edge for memories.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmem import MemoryManager, MemoryService
from agentmem.controller.ownership import SESSION_OPERATIONS
from agentmem.stores.base import SessionStore, StoredMessage
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from agentmem.stores.sqlite import SQLiteSessionStore
from tests.fakes import HashingEmbedder
from tests.processes import child_env, run_python
from tests.session_stores import open_session_store

pytestmark = pytest.mark.integration

DIM = 64
FIRST = ("first turn", "ok")
SAID = ("I keep my bike in the blue shed", "Noted: the blue shed.")
CALLS = tuple(sorted(SESSION_OPERATIONS - {"clear"}))  # every call a turn makes on its session


class Fault(ConnectionError):
    """A store call that failed (before it ran) or whose reply was lost (after it ran)."""


class FaultAt:
    """Make the ``at``-th call to ``store`` (sync or async, counted from now) fail, before
    or after it ran; :meth:`undo` puts the store back."""

    def __init__(self, store: SessionStore, at: int, *, after: bool) -> None:
        self.store, self.at, self.after = store, at, after
        self.calls: list[str] = []
        for name in CALLS:
            setattr(store, name, self._sync(name, getattr(store, name)))
            setattr(store, f"a{name}", self._async(f"a{name}", getattr(store, f"a{name}")))

    def _tick(self, name: str) -> bool:
        self.calls.append(name)
        return len(self.calls) == self.at

    def _sync(self, name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            hit = self._tick(name)
            if hit and not self.after:
                raise Fault(f"{name} failed")
            result = real(*args, **kwargs)
            if hit:
                raise Fault(f"the reply of {name} was lost")
            return result

        return call

    def _async(self, name: str, real: Any) -> Any:
        async def call(*args: Any, **kwargs: Any) -> Any:
            hit = self._tick(name)
            if hit and not self.after:
                raise Fault(f"{name} failed")
            result = await real(*args, **kwargs)
            if hit:
                raise Fault(f"the reply of {name} was lost")
            return result

        return call

    @property
    def hit(self) -> bool:
        return len(self.calls) >= self.at

    def undo(self) -> None:
        for name in CALLS:
            for attr in (name, f"a{name}"):
                vars(self.store).pop(attr, None)


@pytest.fixture(params=["memory", "sqlite", "redis", "redis-cluster"])
def stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[SessionStore, QdrantEdgeStore]]:
    sessions = open_session_store(request, str(request.param), tmp_path)
    memories = QdrantEdgeStore(tmp_path / "long_term", dimension=DIM)
    try:
        yield sessions, memories
    finally:
        memories.close()
        sessions.close()


def new_service(stores: tuple[SessionStore, QdrantEdgeStore]) -> MemoryService:
    """A service over the stores (closing it leaves them open): consolidation runs in the
    turn, so its steps are among those that fail."""
    sessions, memories = stores
    return MemoryService(
        sessions=sessions, memory_store=memories, embedder=HashingEmbedder(DIM), background=False
    )


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for all the async calls of a test (the Redis client is bound to it)."""
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        loop.close()


def interact(
    mem: MemoryManager, loop: asyncio.AbstractEventLoop | None, said: tuple[str, str], turn: str
) -> None:
    """The turn, in sync code (no ``loop``) or async code."""
    if loop is None:
        mem.process_interaction(*said, turn_id=turn)
    else:
        loop.run_until_complete(mem.aprocess_interaction(*said, turn_id=turn))


def check_once(mem: MemoryManager) -> None:
    """The session holds each turn once, working memory counted each once (in the store,
    too), and long-term memory holds each once with nothing left pending."""
    assert [m.content for m in mem.get_log()] == [*FIRST, *SAID]
    assert mem.working.turn == 2
    mem.working.reload()
    assert mem.working.turn == 2
    mem.consolidate()
    assert not mem.scheduler.due()
    assert sorted(r.content for r in mem.long_term.all_records()) == sorted(
        [f"user: {FIRST[0]}\nassistant: {FIRST[1]}", f"user: {SAID[0]}\nassistant: {SAID[1]}"]
    )


@pytest.mark.parametrize("restart", [False, True], ids=["same-handle", "restarted"])
@pytest.mark.parametrize("after", [False, True], ids=["failed", "reply-lost"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_fault_at_any_step_then_a_retry_records_the_turn_once(
    stores: tuple[SessionStore, QdrantEdgeStore],
    loop: asyncio.AbstractEventLoop,
    mode: str,
    after: bool,
    restart: bool,
) -> None:
    sessions, run = stores[0], (None if mode == "sync" else loop)
    at = 0
    while True:
        at += 1
        user, session = f"user-{at}", f"session-{at}"
        with new_service(stores) as service:
            mem = service.manager(user, session)
            interact(mem, run, FIRST, "t-0")
            fault = FaultAt(sessions, at, after=after)
            try:
                interact(mem, run, SAID, "t-1")
            except Fault:
                pass
            finally:
                fault.undo()
            if not fault.hit:
                assert at > 5  # the turn record, the append, the count and the mark failed
                return
            where = f"fault at call {at} ({fault.calls[-1]})"
            if not restart:
                interact(mem, run, SAID, "t-1")
                interact(mem, run, SAID, "t-1")
                check_once(mem)
                continue
        with new_service(stores) as service:
            mem = service.manager(user, session)
            interact(mem, run, SAID, "t-1")
            interact(mem, run, SAID, "t-1")
            try:
                check_once(mem)
            except AssertionError as exc:
                raise AssertionError(where) from exc


CHILD = textwrap.dedent(
    """
    import os, sys
    from agentmem import MemoryService
    from agentmem.working.models import STATE_KEY
    from tests.fakes import HashingEmbedder

    home, turn_id, said, die = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "die"
    with MemoryService.open(home, embedder=HashingEmbedder(64)) as service:
        mem = service.manager("alice", "s1")
        mem.process_interaction("first turn", "ok", turn_id="t-0")
        store = service.sessions
        real = store.set_state

        def set_state(session_id, key, value):
            real(session_id, key, value)
            if die and key == STATE_KEY:
                os._exit(17)  # counted in working memory, not yet marked settled

        store.set_state = set_state
        mem.process_interaction(said, "Noted.", turn_id=turn_id)
        assert service.wait_for_consolidation(timeout=60)
        print(mem.working.turn, len(mem.get_log()), len(mem.long_term.all_records()))
    """
)


def test_a_process_killed_between_counting_and_settling_a_turn_counts_it_once(
    tmp_path: Path,
) -> None:
    home = str(tmp_path / "home")
    first = run_python("-c", CHILD, home, "t-1", "I keep my bike in the blue shed", "live")
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["2", "4", "2"]
    # The next turn is counted in working memory, and the process dies before marking it.
    killed = run_python("-c", CHILD, home, "t-2", "My car is red", "die")
    assert killed.returncode == 17, killed.stderr
    retried = run_python("-c", CHILD, home, "t-2", "My car is red", "live")  # the retry
    assert retried.returncode == 0, retried.stderr
    assert retried.stdout.split() == ["3", "6", "3"]


RACER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from agentmem import MemoryManager
    from agentmem.errors import TurnConflictError

    db, here = sys.argv[1], Path(sys.argv[2])
    mem = MemoryManager.open(
        user_id="alice", session_id="s1", memory_url="memory://",
        session_url=f"sqlite:///{db}", consolidate_every_tokens=None,
    )
    (here / f"ready-{sys.argv[3]}").touch()
    while not (here / "go").exists():
        time.sleep(0.005)
    start = float((here / "go").read_text())
    answer = sys.argv[4]  # "ok", or each racer's own answer ("ok from 0")
    replies = int(sys.argv[5])  # assistant messages per turn (1: process_interaction)
    refused = []
    for t in range(60):  # both processes record each turn in the same instant
        while time.time() < start + t * 0.02:
            pass
        try:
            if replies == 1:
                mem.process_interaction(f"fact {t}", answer, turn_id=f"t{t}")
            else:
                turn = [{"role": "user", "content": f"fact {t}"}]
                turn += [{"role": "assistant", "content": answer}] * replies
                mem.record_messages(turn, turn_id=f"t{t}")
        except TurnConflictError:
            refused.append(t)
    mem.close()
    print(" ".join(map(str, refused)))
    """
)


def race(
    tmp_path: Path, answers: list[str], replies: tuple[int, int] = (1, 1)
) -> tuple[list[set[int]], list[StoredMessage]]:
    """Two workers on one SQLite file record turns ``t0``..``t59`` at the same moments, the
    worker ``i`` answering ``answers[i]`` in ``replies[i]`` messages: the turns each was
    refused, and the log."""
    db = tmp_path / "sessions.db"
    SQLiteSessionStore(db).close()
    racers = [
        subprocess.Popen(
            [
                *(sys.executable, "-c", RACER, str(db), str(tmp_path)),
                *(str(i), answers[i], str(replies[i])),
            ],
            env=child_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    try:
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"ready-{i}").exists() for i in range(2)):
            assert time.monotonic() < deadline, "the workers did not start"
            assert all(r.poll() is None for r in racers)
            time.sleep(0.01)
        # Written whole, then renamed: a worker polling for the file never reads it empty.
        (tmp_path / "go.tmp").write_text(str(time.time() + 0.2))
        (tmp_path / "go.tmp").replace(tmp_path / "go")
        outs = [r.communicate(timeout=120)[0] for r in racers]
        assert [r.returncode for r in racers] == [0, 0]
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
    with SQLiteSessionStore(db) as store:
        log = store.read("s1")
    return [{int(t) for t in out.split()} for out in outs], log


def test_two_processes_recording_one_turn_at_once_on_sqlite_store_it_once(
    tmp_path: Path,
) -> None:
    """Two workers on one SQLite file get the same turns at the same moment (a client's
    retry sent to the other worker): each turn is stored once."""
    refused, log = race(tmp_path, ["ok", "ok"])
    assert refused == [set(), set()]  # the same exchange twice is a retry
    said = Counter(m.message.content for m in log)
    assert said == Counter({**{f"fact {t}": 1 for t in range(60)}, "ok": 60})


def test_two_processes_recording_one_turn_with_other_answers_store_one_and_refuse_one(
    tmp_path: Path,
) -> None:
    """The same race where each worker's model answered anew: each turn is stored once,
    with the answer of the one worker that was not refused (the other hears
    ``TurnConflictError``, never a success for an answer the log does not hold)."""
    refused, log = race(tmp_path, ["ok from 0", "ok from 1"])
    answers = {m.message.content: m.seq for m in log}
    assert len(log) == 120
    for t in range(60):
        kept = [i for i in range(2) if t not in refused[i]]
        assert len(kept) == 1, f"turn {t}: refused to {[t in r for r in refused]}"
        question = answers[f"fact {t}"]
        reply = next(m.message.content for m in log if m.seq == question + 1)
        assert reply == f"ok from {kept[0]}", f"turn {t}"


def test_two_processes_recording_one_turn_at_two_lengths_store_one_attempt_whole(
    tmp_path: Path,
) -> None:
    """The same race where the workers' answers differ in length too (one in one message,
    the other in two): each turn's log holds one worker's messages, whole, never a mix of
    both, and the other worker is refused."""
    refused, log = race(tmp_path, ["ok from 0", "ok from 1"], replies=(1, 2))
    turns: dict[int, list[str]] = {}
    current = -1
    for stored in log:
        content = stored.message.content
        if content.startswith("fact "):
            current = int(content.split()[1])
            turns[current] = []
        else:
            turns[current].append(content)
    assert sorted(turns) == list(range(60))
    for t, replies in turns.items():
        kept = [i for i in range(2) if t not in refused[i]]
        assert len(kept) == 1, f"turn {t}: refused to {[t in r for r in refused]}"
        assert replies == [f"ok from {kept[0]}"] * (kept[0] + 1), f"turn {t}: {replies}"
