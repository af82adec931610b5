"""Integration: no duplicate from concurrent writes, no cross-tenant read, no spoofed memory.

* The same fact remembered at once from threads or asyncio tasks is stored once and
  reinforced by every other write, each counted.
* Crafted user ids (prefixes, separators, reserved names, look-alikes) never reach LangGraph
  store items or the store's registry, and namespaces never reach conversational memories:
  the space is a field in every filter, not a prefix of the id.
* Records written as given (imports) are validated like new ones: their content hash is
  derived, never trusted, and the size limit holds.
* A replayed reinforcement (a crash between applying it and saving progress) counts once.

``AGENTMEM_FAULT_TRIALS`` (default 3) sets how many trials each race runs.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient, models

from agentmem import ForgettingPolicy, MemoryService
from agentmem.controller.conflicts import ConflictResolver
from agentmem.errors import InvalidSessionIdError, InvalidValueError
from agentmem.long_term import LongTermMemory
from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.store import SparseVector
from agentmem.stores.qdrant.client import QdrantClientStore
from langchain_agentmem import AgentMemoryStore
from tests.fakes import HashingEmbedder

pytestmark = pytest.mark.integration

DIM = 64
TRIALS = int(os.environ.get("AGENTMEM_FAULT_TRIALS", "3"))
WRITERS = 8
FACT = "Alice indents Python code with tabs"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    with MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM), background=False) as svc:
        yield svc


# -- one fact, many writers -------------------------------------------------------------


@pytest.mark.parametrize("trial", range(TRIALS))
def test_concurrent_remember_from_threads_stores_one_memory(
    service: MemoryService, trial: int
) -> None:
    user = f"alice{trial}"
    barrier = threading.Barrier(WRITERS)
    actions: list[str] = []

    def write(i: int) -> None:
        manager = service.manager(user, f"{user}-s{i}")  # a handle per writer, one scope
        barrier.wait()
        actions.append(manager.remember(FACT).action)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = service.long_term(user).all_records()
    assert [r.content for r in records] == [FACT]
    assert sorted(actions) == ["add"] + ["reinforce"] * (WRITERS - 1)
    assert records[0].access_count == WRITERS - 1


@pytest.mark.parametrize("trial", range(TRIALS))
async def test_concurrent_aremember_from_tasks_stores_one_memory(
    service: MemoryService, trial: int
) -> None:
    user = f"bob{trial}"
    managers = [service.manager(user, f"{user}-s{i}") for i in range(WRITERS)]
    decisions = await asyncio.gather(*(m.aremember(FACT) for m in managers))
    records = service.long_term(user).all_records()
    assert [r.content for r in records] == [FACT]
    assert sorted(d.action for d in decisions) == ["add"] + ["reinforce"] * (WRITERS - 1)
    assert records[0].access_count == WRITERS - 1


def test_threads_and_tasks_at_once_store_one_memory(service: MemoryService) -> None:
    user = "carol"

    async def tasks() -> None:
        await asyncio.gather(*(service.manager(user, f"t{i}").aremember(FACT) for i in range(4)))

    threads = [
        threading.Thread(target=lambda i=i: service.manager(user, f"s{i}").remember(FACT))
        for i in range(4)
    ]
    for t in threads:
        t.start()
    asyncio.run(tasks())
    for t in threads:
        t.join()
    records = service.long_term(user).all_records()
    assert len(records) == 1
    assert records[0].access_count == 7


def test_a_replayed_reinforcement_counts_once(service: MemoryService) -> None:
    memory = service.long_term("dave")
    resolver = ConflictResolver()
    resolver.write(memory, memory.new_record(FACT, "semantic"))
    candidate = memory.new_record(FACT, "semantic")  # a consolidation item: a fixed id
    assert resolver.write(memory, candidate).action == "reinforce"
    # The process died before saving its progress; the replay decides the same item again.
    assert resolver.write(memory, candidate).action == "reinforce"
    (record,) = memory.all_records()
    assert record.access_count == 1
    assert resolver.write(memory, memory.new_record(FACT, "semantic")).action == "reinforce"
    assert memory.all_records()[0].access_count == 2


# -- tenants and spaces -----------------------------------------------------------------

CRAFTED = [
    "lg.alice",  # the LangGraph scope of namespace ("alice",) in agentmem 0.1
    "lg.h-" + "0" * 40,
    "lg.ALICE",
    "lg.registry",
    "h-" + "0" * 40,
    "agentmem.langgraph-store.registry",  # the store's registry user
    "alice",
    "ALICE",
    "alice.",
    "alice:prefs",
    "alice@lg",
    "lg..alice",
    "lg.alice.prefs",
]
INVALID = [
    "аlice",  # Cyrillic a: refused, never mapped onto "alice"
    "alice\u200b",  # zero-width space
    "alice/prefs",
    "lg alice",
    "",
    "x" * 300,
]
SECRET = "the vault code is 7-4-1-9"
ROOTS = ("alice", "ALICE", "registry", "h-" + "0" * 40)  # LangGraph labels hold no "."


def test_crafted_user_ids_never_reach_langgraph_items_or_the_registry(
    service: MemoryService,
) -> None:
    store = AgentMemoryStore.from_service(service, fields=["text"])
    for root in ROOTS:
        store.put((root, "secrets"), "k", {"text": SECRET})
    service.manager("zoe", "zoe-s1").remember("zoe likes green tea")
    for index, user in enumerate(CRAFTED):
        manager = service.manager(user, f"probe-{index}")  # a session is one user's
        hits = manager.recall("vault code secrets namespace root", top_k=50)
        assert all(SECRET not in h.record.content for h in hits), user
        assert all(h.record.scope.space == "memories" for h in hits), user
        assert all(h.record.scope.user_id == user for h in hits), user
        text = manager.build_context("what is the vault code?", max_tokens=2000).text
        assert SECRET not in text
        assert "namespace root" not in text
        manager.forget(policy=ForgettingPolicy(max_memories=0))  # forget all it can reach
    for root in ROOTS:
        item = store.get((root, "secrets"), "k")
        assert item is not None
        assert item.value == {"text": SECRET}  # no conversational forget touched it
    assert store.list_namespaces() == sorted((root, "secrets") for root in ROOTS)
    # ... and namespaces never reach conversational memories.
    for root in [*(u for u in CRAFTED if "." not in u), *ROOTS]:
        found = store.search((root,), query="green tea", limit=50)
        assert all("green tea" not in str(i.value) for i in found), root
    assert [h.record.content for h in service.manager("zoe", "z2").recall("tea")] == [
        "zoe likes green tea"
    ]


@pytest.mark.parametrize("user", INVALID)
def test_invalid_user_ids_are_refused_not_normalized(service: MemoryService, user: str) -> None:
    with pytest.raises((InvalidValueError, InvalidSessionIdError)):
        service.manager(user, "probe")


def test_points_of_earlier_versions_get_their_space_at_open() -> None:
    client = QdrantClient(":memory:")
    QdrantClientStore(client=client, dimension=DIM).close()
    embedder = HashingEmbedder(DIM)
    item = MemoryRecord.new(
        SECRET, "semantic", scope=Scope(user_id="lg.alice"), metadata={"lg_item": True}
    )
    memory = MemoryRecord.new("alice likes green tea", "semantic", scope=Scope(user_id="alice"))
    points = []
    for record in (item, memory):
        payload = record.to_payload()
        del payload["space"]  # written by agentmem 0.1, before spaces existed
        points.append(
            models.PointStruct(
                id=record.id,
                vector={
                    "dense": embedder.vector(record.content),
                    "bm25": models.SparseVector(indices=[1], values=[1.0]),
                },
                payload=payload,
            )
        )
    client.upsert("agentmem_memories", points)
    store = QdrantClientStore(client=client, dimension=DIM)
    crafted = LongTermMemory(store=store, embedder=embedder, user_id="lg.alice")
    assert crafted.all_records() == []
    alice = LongTermMemory(store=store, embedder=embedder, user_id="alice")
    assert [r.content for r in alice.all_records()] == ["alice likes green tea"]
    items = store.get(Scope(user_id="lg.alice", space="langgraph"), [item.id])
    assert [r.content for r in items] == [SECRET]


# -- records written as given -------------------------------------------------------------


def test_an_imported_record_cannot_spoof_a_content_hash(service: MemoryService) -> None:
    memory = service.long_term("erin")
    forged = memory.new_record("Erin's password hint is 'blue'", "semantic")
    forged = MemoryRecord.model_validate(
        {**forged.model_dump(), "content_hash": memory.new_record(FACT, "semantic").content_hash}
    )
    memory.store_records([forged])
    (stored,) = memory.all_records()
    assert stored.content_hash != memory.new_record(FACT, "semantic").content_hash
    decision = service.manager("erin", "e1").remember(FACT)
    assert decision.action == "add"
    assert sorted(r.content for r in memory.all_records()) == sorted(
        [FACT, "Erin's password hint is 'blue'"]
    )


def test_an_oversized_imported_record_is_refused(service: MemoryService) -> None:
    memory = service.long_term("frank")
    record = MemoryRecord.new("x" * 4_000_000, "semantic", scope=memory.scope)
    with pytest.raises(InvalidValueError, match="32000"):
        memory.store_records([record])
    with pytest.raises(InvalidValueError, match="space"):
        memory.store_records(
            [MemoryRecord.new("ok", "semantic", scope=Scope(user_id="frank", space="langgraph"))]
        )
    assert memory.all_records() == []


def test_a_raw_upsert_keeps_ids_in_their_space(service: MemoryService) -> None:
    store = service.memory_store
    record = MemoryRecord.new(FACT, "semantic", scope=Scope(user_id="gina"))
    vector = HashingEmbedder(DIM).vector(FACT)
    store.upsert([record], [vector], [SparseVector([1], [1.0])])
    moved = MemoryRecord.model_validate(
        {**record.model_dump(), "scope": {"user_id": "gina", "space": "langgraph"}}
    )
    with pytest.raises(InvalidValueError, match="another scope"):
        store.upsert([moved], [vector], [SparseVector([1], [1.0])])
    assert store.get(Scope(user_id="gina", space="langgraph"), [record.id]) == []
    assert uuid.UUID(store.get(Scope(user_id="gina"), [record.id])[0].id)
