"""Pending consolidation survives backpressure and restarts: every turn reaches its user's
long-term memory exactly once.

Pending work is read from the session log past the consolidation watermark, so a full
queue, a job running while the session's next turn is dropped, or a close with work still
left over loses nothing: ``MemoryService.open`` resumes what is left, in the background, and
``wait_for_consolidation`` waits for it. On the real stores: SQLite sessions and Qdrant
Edge memories under one home, the hashing embedder.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentmem import MemoryService
from tests.fakes import HashingEmbedder
from tests.integration.test_background_consolidation import hold_the_worker

pytestmark = pytest.mark.integration

DIM = 256
USERS, SESSIONS_PER_USER, TURNS = 20, 5, 3  # 100 sessions, 300 turns


def open_home(
    home: Path, embedder: HashingEmbedder | None = None, **settings: Any
) -> MemoryService:
    return MemoryService.open(
        home, embedder=embedder or HashingEmbedder(DIM), workers=1, **settings
    )


def unconsolidated_turns(home: Path) -> int:
    """Turns in the home's sessions that no memory covers yet (read without resuming)."""
    with open_home(home, consolidate_every_tokens=None) as service:
        covered = {
            i
            for user in range(USERS)
            for record in service.long_term(f"user{user}").all_records()
            for i in record.source_message_ids
        }
        return sum(
            1
            for sid in service.sessions.sessions()
            for m in service.sessions.read(sid)
            if m.message.role == "user" and m.message.id not in covered
        )


def test_100_sessions_every_turn_reaches_long_term_memory_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(25)
    service = open_home(tmp_path, max_pending=2)
    sessions = [
        (f"user{u}", f"user{u}-chat{s}") for u in range(USERS) for s in range(SESSIONS_PER_USER)
    ]
    errors: list[BaseException] = []

    def talk(share: Sequence[tuple[str, str]]) -> None:
        try:
            for turn in range(TURNS):
                for user, session in share:
                    words = " ".join(f"w{rng.randrange(10**6)}" for _ in range(8))
                    handle = service.manager(user, session)
                    handle.process_interaction(words, f"ok {turn}", turn_id=f"{session}/{turn}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=talk, args=(sessions[i::8],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    dropped = service.consolidation.dropped
    assert dropped > 0  # the small queue refused jobs
    service.close()  # a clean close: finishes what is queued, not what was refused
    left_over = unconsolidated_turns(tmp_path)
    assert left_over > 0  # what the refused jobs left behind
    print(f"\n100 sessions: {dropped} jobs refused, {left_over} of 300 turns left at close")

    with open_home(tmp_path, max_pending=2) as service:  # reopen: resumes in the background
        assert service.wait_for_consolidation(timeout=600)
        check_exactly_once(service)
        counts = {u: len(service.long_term(f"user{u}").all_records()) for u in range(USERS)}
    with open_home(tmp_path, max_pending=2) as service:  # and again: nothing more to do
        assert service.wait_for_consolidation(timeout=600)
        assert {u: len(service.long_term(f"user{u}").all_records()) for u in range(USERS)} == (
            counts
        )
        check_exactly_once(service)


def check_exactly_once(service: MemoryService) -> None:
    """Each turn of each session is the source of exactly one memory, its user's."""
    for user in range(USERS):
        owner = f"user{user}"
        sources = Counter(
            i for r in service.long_term(owner).all_records() for i in r.source_message_ids
        )
        turns = [
            m.message.id
            for s in range(SESSIONS_PER_USER)
            for m in service.sessions.read(f"{owner}-chat{s}")
        ]
        assert len(turns) == SESSIONS_PER_USER * TURNS * 2  # stored once each
        assert {i: sources[i] for i in turns} == dict.fromkeys(turns, 1)
        assert set(sources) == set(turns)  # nothing from another user's sessions
        assert len(service.long_term(owner).all_records()) == SESSIONS_PER_USER * TURNS


class GatedEmbedder(HashingEmbedder):
    """Blocks its first ``embed_documents`` call until ``gate`` is set (a consolidation
    held mid-run), then behaves as the hashing embedder."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not self.entered.is_set():
            self.entered.set()
            assert self.gate.wait(timeout=60)
        return super().embed_documents(texts)


def test_a_turn_dropped_while_its_session_runs_is_not_lost(tmp_path: Path) -> None:
    """The reported case: a session's job is running when its next turn's job is refused
    (the queue is full). Once the running job ends, that turn is still pending (before, the
    job reset a pending counter and the turn never reached long-term memory)."""
    embedder = GatedEmbedder(DIM)
    service = open_home(tmp_path, embedder, max_pending=1)
    alice = service.manager("alice", "alice-chat")
    alice.process_interaction("I paint with oils", "ok", turn_id="1")
    assert embedder.entered.wait(timeout=60)  # alice's job runs, held in the embedder
    service.manager("bob", "bob-chat").process_interaction("I row at dawn", "ok")  # queued
    alice.process_interaction("I frame with oak", "ok", turn_id="2")  # refused: full
    assert service.consolidation.dropped == 1
    embedder.gate.set()
    assert service.wait_for_consolidation(timeout=60)
    assert [r.content for r in alice.long_term.all_records()] == [
        "user: I paint with oils\nassistant: ok"
    ]
    assert alice.scheduler.due()  # the second turn is still pending
    service.close()
    with open_home(tmp_path) as service:
        assert service.wait_for_consolidation(timeout=60)
        assert sorted(r.content for r in service.long_term("alice").all_records()) == [
            "user: I frame with oak\nassistant: ok",
            "user: I paint with oils\nassistant: ok",
        ]
        assert len(service.long_term("bob").all_records()) == 1


def test_wait_for_background_on_an_evicted_handle_waits_for_the_session(tmp_path: Path) -> None:
    with open_home(tmp_path, max_handles=1) as service:
        gate = hold_the_worker(service.consolidation)
        alice = service.manager("alice", "alice-chat")
        alice.process_interaction("I paint with oils", "ok")  # its job waits in the queue
        service.manager("bob", "bob-chat")  # evicts alice's handle
        again = service.manager("alice", "alice-chat")
        assert again is not alice
        assert again.wait_for_background(timeout=0.2) is False  # the session's job waits
        gate.set()
        assert again.wait_for_background(timeout=60) is True
        assert [r.content for r in again.long_term.all_records()] == [
            "user: I paint with oils\nassistant: ok"
        ]


async def test_await_background_on_an_evicted_handle_waits_too(tmp_path: Path) -> None:
    with open_home(tmp_path, max_handles=1) as service:
        gate = hold_the_worker(service.consolidation)
        await service.manager("alice", "alice-chat").aprocess_interaction("I row", "ok")
        service.manager("bob", "bob-chat")
        again = service.manager("alice", "alice-chat")
        assert await again.await_background(timeout=0.2) is False
        gate.set()
        assert await again.await_background(timeout=60) is True


def test_open_resumes_nothing_without_a_threshold(tmp_path: Path) -> None:
    with open_home(tmp_path, consolidate_every_tokens=None) as service:
        service.manager("alice", "alice-chat").process_interaction("I paint with oils", "ok")
    with open_home(tmp_path, consolidate_every_tokens=None) as service:
        assert service.wait_for_consolidation(timeout=60)
        assert service.long_term("alice").all_records() == []
    with open_home(tmp_path) as service:  # with one, the turn is resumed
        assert service.wait_for_consolidation(timeout=60)
        assert len(service.long_term("alice").all_records()) == 1
