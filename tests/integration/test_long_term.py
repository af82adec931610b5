"""LongTermMemory, EpisodicMemory and SemanticMemory on a real Qdrant Edge store."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from agentmem.errors import (
    DimensionMismatchError,
    InvalidValueError,
    MemoryNotFoundError,
)
from agentmem.long_term import (
    EpisodicMemory,
    LongTermMemory,
    RankingConfig,
    RecordFilter,
    SemanticMemory,
)
from agentmem.stores.in_memory import InMemoryMemoryStore
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from tests.fakes import HashingEmbedder

pytestmark = pytest.mark.integration

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[QdrantEdgeStore]:
    s = QdrantEdgeStore(tmp_path / "lt", dimension=64)
    yield s
    s.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make(
    store: QdrantEdgeStore, user: str = "alice", clock: Clock | None = None, **kw: object
) -> LongTermMemory:
    return LongTermMemory(
        store=store,
        embedder=HashingEmbedder(64),
        user_id=user,
        clock=clock,
        **kw,  # type: ignore[arg-type]
    )


def test_store_and_retrieve_in_every_mode(store: QdrantEdgeStore) -> None:
    memory = make(store)
    memory.store_memory("Alice indents Python code with tabs", "semantic", importance=0.9)
    memory.store_memory("The weather in Oslo is rainy in autumn", "episodic")
    memory.store_memory("Alice's daughter has her birthday on 14 March", "semantic")
    for mode in ("dense", "bm25", "hybrid"):
        hits = memory.retrieve_memories("how does alice indent python code", top_k=2, mode=mode)
        assert hits[0].record.content == "Alice indents Python code with tabs", mode


def test_memories_are_scoped_by_user(store: QdrantEdgeStore) -> None:
    alice, bob = make(store, "alice"), make(store, "bob")
    alice.store_memory("secret: alice likes tabs", "semantic")
    bob.store_memory("bob likes spaces", "semantic")
    assert all(
        h.record.scope.user_id == "bob" for h in bob.retrieve_memories("likes tabs", top_k=5)
    )
    record = alice.retrieve_memories("tabs")[0].record
    with pytest.raises(MemoryNotFoundError):
        bob.get_memory(record.id)
    assert bob.delete_memory(record.id) is False
    assert alice.get_memory(record.id).content == "secret: alice likes tabs"


def test_filters_by_type_and_importance(store: QdrantEdgeStore) -> None:
    memory = make(store)
    memory.store_memory("tabs are preferred", "semantic", importance=0.2)
    memory.store_memory("tabs were used yesterday", "episodic", importance=0.9)
    hits = memory.retrieve_memories("tabs", top_k=5, memory_type="episodic")
    assert [h.record.memory_type for h in hits] == ["episodic"]
    hits = memory.retrieve_memories("tabs", top_k=5, min_importance=0.5)
    assert [h.record.importance for h in hits] == [0.9]


def test_access_is_recorded(store: QdrantEdgeStore, clock: Clock) -> None:
    memory = make(store, clock=clock)
    record = memory.store_memory("alice likes tabs", "semantic")
    clock.now = T0 + timedelta(days=3)
    memory.retrieve_memories("tabs")
    memory.retrieve_memories("tabs")
    again = memory.get_memory(record.id)
    assert again.access_count == 2
    assert again.last_accessed_at == T0 + timedelta(days=3)
    memory.retrieve_memories("tabs", touch=False)
    assert memory.get_memory(record.id).access_count == 2


def test_near_duplicates_are_dropped(store: QdrantEdgeStore) -> None:
    memory = make(store)
    memory.store_memory("Alice likes tabs", "semantic")
    memory.store_memory("alice likes TABS!", "semantic")  # same words: identical vector
    memory.store_memory("Alice likes green tea", "semantic")
    hits = memory.retrieve_memories("alice likes tabs", top_k=3)
    assert len(hits) == 2
    assert {h.record.content for h in hits} >= {"Alice likes green tea"}


def test_explain_shows_every_component(store: QdrantEdgeStore) -> None:
    memory = make(store, ranking=RankingConfig(importance_weight=0.01, recency_weight=0.01))
    memory.store_memory("alice likes tabs", "semantic", importance=0.8)
    memory.store_memory("bob likes spaces", "semantic", importance=0.1)
    hits = memory.retrieve_memories("alice tabs", top_k=2, explain=True)
    parts = hits[0].components
    for key in ("dense", "sparse", "fused", "importance_boost", "recency_boost", "final"):
        assert key in parts, key
    assert parts["final"] == pytest.approx(hits[0].score)
    assert parts["importance_boost"] == pytest.approx(0.01 * 0.8)


def test_update_importance_and_forget(store: QdrantEdgeStore, clock: Clock) -> None:
    memory = make(store, clock=clock)
    old = memory.store_memory("an unimportant old fact", "semantic", importance=0.1)
    pinned = memory.store_memory("a pinned old fact", "semantic", importance=0.1, pinned=True)
    kept = memory.store_memory("an important old fact", "semantic", importance=0.9)
    clock.now = T0 + timedelta(days=100)
    fresh = memory.store_memory("an unimportant new fact", "semantic", importance=0.1)
    assert memory.forget_old_memories(days_threshold=90, min_importance=0.3) == 1
    with pytest.raises(MemoryNotFoundError):
        memory.get_memory(old.id)
    for record in (pinned, kept, fresh):
        assert memory.get_memory(record.id).content == record.content
    assert memory.update_memory_importance(kept.id, 0.2).importance == 0.2
    assert memory.get_memory(kept.id).importance == 0.2


@pytest.mark.parametrize(
    ("content", "memory_type", "importance"),
    [
        ("", "semantic", 0.5),
        ("   ", "semantic", 0.5),
        ("x" * 40_000, "semantic", 0.5),
        ("fine", "dreams", 0.5),
        ("fine", "semantic", float("nan")),
        ("fine", "semantic", 1.5),
        ("fine", "semantic", -0.1),
    ],
)
def test_bad_input_is_rejected_and_nothing_is_stored(
    store: QdrantEdgeStore, content: str, memory_type: str, importance: float
) -> None:
    memory = make(store)
    with pytest.raises(InvalidValueError):
        memory.store_memory(content, memory_type, importance=importance)
    assert store.count(memory.scope, filter=RecordFilter(include_history=True)) == 0


def test_invalid_ids_are_rejected(store: QdrantEdgeStore) -> None:
    memory = make(store)
    for bad in ("not-a-uuid", "123", ""):
        with pytest.raises(InvalidValueError, match="UUID"):
            memory.get_memory(bad)
        with pytest.raises(InvalidValueError, match="UUID"):
            memory.update_memory_importance(bad, 0.5)


def test_embedder_dimension_must_match_the_store(store: QdrantEdgeStore) -> None:
    with pytest.raises(DimensionMismatchError, match="64"):
        LongTermMemory(store=store, embedder=HashingEmbedder(32), user_id="alice")


async def test_async_twins(store: QdrantEdgeStore) -> None:
    memory = make(store)
    record = await memory.astore_memory("alice likes tabs", "semantic")
    hits = await memory.aretrieve_memories("tabs")
    assert hits[0].record.id == record.id
    assert (await memory.aget_memory(record.id)).access_count == 1
    assert (await memory.aupdate_memory_importance(record.id, 0.3)).importance == 0.3
    assert await memory.adelete_memory(record.id) is True


def test_episodes(store: QdrantEdgeStore) -> None:
    episodes = EpisodicMemory(make(store))
    episodes.store_episode(
        "the CI build failed on a flaky network test",
        "re-ran the build",
        "it passed the second time",
        lesson="quarantine flaky network tests",
    )
    episodes.store_episode("user asked for a poem", "wrote a haiku", "user was happy")
    recalled = episodes.recall_similar_episodes("CI build failed again on a network test", top_k=1)
    assert recalled[0].lesson == "quarantine flaky network tests"
    with pytest.raises(InvalidValueError):
        episodes.store_episode("", "x", "y")


def test_concept_graph_persists_and_traverses(tmp_path: Path) -> None:
    store = QdrantEdgeStore(tmp_path / "kg", dimension=64)
    knowledge = SemanticMemory(make(store))
    knowledge.store_knowledge(
        "Python", ["uses indentation for blocks"], {"is_a": "programming language"}
    )
    knowledge.store_knowledge("programming language", "a formal language", {"used_for": "software"})
    knowledge.store_knowledge("Rust", "memory safe", [("is_a", "programming language")])
    store.close()

    reopened = QdrantEdgeStore(tmp_path / "kg", dimension=64)
    knowledge = SemanticMemory(make(reopened))
    one = {c.concept for c in knowledge.get_related_concepts("Python", depth=1)}
    assert one == {"programming language"}
    two = {c.concept: c for c in knowledge.get_related_concepts("Python", depth=2)}
    assert set(two) == {"programming language", "software", "Rust"}
    assert two["software"].depth == 2
    assert two["Rust"].path[-1] == ("Rust", "is_a", "programming language")
    assert (
        knowledge.query_knowledge("which language uses indentation")[0].record.concept == "Python"
    )
    reopened.close()


def test_a_memory_id_can_never_move_to_another_user(store: QdrantEdgeStore) -> None:
    alice, bob = make(store, "alice"), make(store, "bob")
    secret = alice.store_memory("Alice's PIN is 1234", "semantic")
    with pytest.raises(InvalidValueError, match="another scope"):
        bob.store_memory("bob's note", "semantic", id=secret.id)
    assert alice.get_memory(secret.id).content == "Alice's PIN is 1234"
    with pytest.raises(MemoryNotFoundError):
        bob.get_memory(secret.id)


@pytest.mark.parametrize("backend", ["edge", "memory"])
async def test_tier_api_for_the_controller(store: QdrantEdgeStore, backend: str) -> None:
    # Everything the controller needs goes through the tier, in both modes.
    memory = make(store if backend == "edge" else InMemoryMemoryStore(dimension=64))
    bob = make(memory.store, "bob")
    old = memory.store_memory("Alice lives in Paris", "semantic")
    new = await memory.astore_memory("Alice lives in Berlin", "semantic")
    theirs = bob.store_memory("Bob lives in Rome", "semantic")
    assert memory.get_records([new.id, theirs.id, old.id]) == [new, old]
    assert await memory.aget_records([old.id]) == [old]
    assert memory.get_records([]) == []

    memory.update_fields([old.id], {"access_count": 3})
    await memory.aupdate_fields([new.id], {"pinned": True})
    with pytest.raises(MemoryNotFoundError):
        memory.update_fields([theirs.id], {"pinned": True})
    assert (memory.get_memory(old.id).access_count, memory.get_memory(new.id).pinned) == (3, True)

    memory.supersede_memory(old.id, new)
    ended = memory.get_memory(old.id)
    assert (ended.valid_to, ended.superseded_by, ended.is_current) == (
        new.created_at,
        new.id,
        False,
    )
    assert memory.count_memories() == await memory.acount_memories() == 1
    assert memory.count_memories(RecordFilter(include_history=True)) == 2

    page, offset = memory.scroll_records(RecordFilter(include_history=True), limit=1)
    rest, end = await memory.ascroll_records(RecordFilter(include_history=True), offset=offset)
    assert {r.id for r in page + rest} == {old.id, new.id}
    assert end is None
    with pytest.raises(InvalidValueError):
        memory.get_records(["not-a-uuid"])
