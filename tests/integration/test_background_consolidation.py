"""Integration: the default consolidation (every turn, in the background) on the real stores.

A burst of turns of one session while it waits in the queue is one consolidation, not one per
turn; a question without its answer is never consolidated alone; and
``MemoryService.wait_for_consolidation`` waits until nothing is queued or running, or says
``False`` when its timeout passes first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmem import MemoryManager, MemoryService
from agentmem.controller.config import ManagerConfig
from agentmem.controller.scheduler import ConsolidationQueue
from tests.fakes import HashingEmbedder

pytestmark = pytest.mark.integration

DIM = 64


GATES: list[threading.Event] = []


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    with MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM)) as service:
        try:
            yield service
        finally:  # a failed test must not leave close() waiting on a held worker
            while GATES:
                GATES.pop().set()


def hold_the_worker(queue: ConsolidationQueue) -> threading.Event:
    """Occupy the queue's only worker until the returned event is set."""
    gate = threading.Event()
    GATES.append(gate)
    assert queue.submit("blocker", gate.wait) is not None
    while queue.pending:  # the worker took the blocker
        time.sleep(0.01)
    return gate


def test_the_defaults_consolidate_every_turn_in_the_background() -> None:
    config = ManagerConfig()
    assert (config.consolidate_every_tokens, config.background) == (1, True)


def test_a_burst_of_turns_is_one_queued_consolidation(service: MemoryService) -> None:
    queue = service.consolidation
    gate = hold_the_worker(queue)
    alice = service.manager("alice", "burst")
    for t in range(10):
        assert alice.process_interaction(f"alice fact {t} about kayaks", "noted") is None
    assert queue.pending == 1  # ten turns, one job waiting
    assert alice.long_term.all_records() == []  # nothing ran in the caller
    assert service.wait_for_consolidation(timeout=0.05) is False  # still held
    gate.set()
    assert service.wait_for_consolidation(timeout=60) is True
    assert (queue.pending, queue.running) == (0, 0)
    contents = sorted(r.content for r in alice.long_term.all_records())
    assert contents == sorted(
        f"user: alice fact {t} about kayaks\nassistant: noted" for t in range(10)
    )
    assert alice.consolidate().messages == 0  # the one run took every turn


def test_turns_through_two_handles_on_one_session_are_one_queued_consolidation(
    service: MemoryService,
) -> None:
    """A with_settings copy hands out its own handle on the session: both handles' turns
    queue one job (the key names the session's store, not the handle's door on it)."""
    queue = service.consolidation
    gate = hold_the_worker(queue)
    one = service.manager("alice", "two-doors")
    other = service.with_settings(max_short_term_tokens=4000).manager("alice", "two-doors")
    assert one is not other
    one.process_interaction("alice likes kayaks", "noted")
    other.process_interaction("alice likes canoes", "noted")
    assert queue.pending == 1
    gate.set()
    assert service.wait_for_consolidation(timeout=60) is True


def test_a_question_waits_for_its_answer(service: MemoryService) -> None:
    queue = service.consolidation
    gate = hold_the_worker(queue)
    bob = service.manager("bob", "one-by-one")  # as LlamaIndex puts messages: one at a time
    bob.record_messages([{"role": "user", "content": "I sail a blue canoe"}])
    assert queue.pending == 0  # a question alone is not consolidated
    bob.record_messages([{"role": "assistant", "content": "Nice canoe."}])
    assert queue.pending == 1
    gate.set()
    assert service.wait_for_consolidation(timeout=60)
    records = bob.long_term.all_records()
    assert [r.content for r in records] == ["user: I sail a blue canoe\nassistant: Nice canoe."]


async def test_the_async_twin_waits_without_blocking_the_loop(service: MemoryService) -> None:
    gate = hold_the_worker(service.consolidation)
    carol = service.manager("carol", "async")
    await carol.aprocess_interaction("carol keeps bees", "sweet")
    assert await service.await_consolidation(timeout=0.05) is False
    gate.set()
    assert await service.await_consolidation(timeout=60) is True
    assert len(await carol.long_term.aall_records()) == 1


def test_a_manager_opened_alone_remembers_by_default(tmp_path: Path) -> None:
    embedder = HashingEmbedder(DIM)
    with MemoryManager.open(user_id="dan", home=tmp_path, embedder=embedder) as one:
        assert one.process_interaction("dan grows tomatoes", "good") is None  # not here
        assert one.wait_for_background(timeout=60) is True
        assert one.long_term.count_memories() == 1
    with MemoryManager.open(user_id="dan", home=tmp_path, embedder=embedder) as two:
        assert [h.record.content for h in two.recall("tomatoes")] == [
            "user: dan grows tomatoes\nassistant: good"
        ]
