"""Hybrid search by score fusion on a real store: contextual indexing, dates, explain, and the
same results through the public store API (any MemoryStore) as through the Qdrant fast path."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from agentmem._sansio import adrive, drive
from agentmem.long_term import LongTermMemory, RankingConfig
from agentmem.long_term._fusion import fused_search_program
from agentmem.long_term.memory import CONTEXT_KEY, index_text
from agentmem.long_term.store import ScoredRecord
from agentmem.stores.in_memory import InMemoryMemoryStore
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from tests.fakes import HashingEmbedder

pytestmark = pytest.mark.integration


class PlainStore:
    """Any MemoryStore: delegates to another store, but runs fused search with the generic
    program over its public ``search`` and ``get``, as a store without a fast path would."""

    def __init__(self, inner: QdrantEdgeStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def fused_search(self, *args: Any) -> list[ScoredRecord]:
        return drive(fused_search_program(self, *args))

    async def afused_search(self, *args: Any) -> list[ScoredRecord]:
        return await adrive(fused_search_program(self, *args))


def _memory(store: Any, **ranking: Any) -> LongTermMemory:
    return LongTermMemory(
        store=store,
        embedder=HashingEmbedder(64),
        user_id="u",
        ranking=RankingConfig(**ranking),
        clock=lambda: datetime(2023, 11, 1, tzinfo=timezone.utc),
        on_close=lambda: None,
    )


@pytest.fixture
def store(tmp_path: Path) -> QdrantEdgeStore:
    return QdrantEdgeStore(tmp_path / "lt", dimension=64)


def _fill(memory: LongTermMemory) -> None:
    may = datetime(2023, 5, 8, tzinfo=timezone.utc)
    july = datetime(2023, 7, 2, tzinfo=timezone.utc)
    memory.store_memory("Did you ever go to Paris?", "episodic", created_at=may)
    memory.store_memory(
        "Yes, twice!",
        "episodic",
        created_at=may,
        metadata={CONTEXT_KEY: "Did you ever go to Paris?"},
    )
    memory.store_memory("We went hiking in the Alps", "episodic", created_at=july)
    memory.store_memory("We went hiking near the lake", "episodic", created_at=may)
    for i in range(30):
        memory.store_memory(f"Unrelated note number {i} about gardening", "semantic")


def test_context_is_indexed_but_not_shown(store: QdrantEdgeStore) -> None:
    memory = _memory(store)
    _fill(memory)
    hits = memory.retrieve_memories("Paris trips", top_k=5, touch=False)
    contents = [h.record.content for h in hits]
    assert "Yes, twice!" in contents
    assert all("Paris" not in c for c in contents if c != "Did you ever go to Paris?")
    record = next(h.record for h in hits if h.record.content == "Yes, twice!")
    assert index_text(record).splitlines() == [
        "Did you ever go to Paris?",
        "Yes, twice!",
        "May 2023",
    ]


def test_a_date_in_the_query_lifts_memories_of_that_period(store: QdrantEdgeStore) -> None:
    memory = _memory(store)
    _fill(memory)
    july = memory.retrieve_memories("Where did we go hiking in July 2023?", top_k=2, touch=False)
    assert july[0].record.content == "We went hiking in the Alps"
    may = memory.retrieve_memories("Where did we go hiking in May 2023?", top_k=2, touch=False)
    assert may[0].record.content == "We went hiking near the lake"


def test_explain_parts_add_up(store: QdrantEdgeStore) -> None:
    memory = _memory(store, importance_weight=0.01, recency_weight=0.01)
    _fill(memory)
    for hit in memory.retrieve_memories("hiking in July 2023", top_k=3, explain=True):
        c = hit.components
        total = c["base"] + c["temporal_boost"] + c["importance_boost"] + c["recency_boost"]
        assert c["final"] == pytest.approx(hit.score) == pytest.approx(total)
        assert c["base"] == pytest.approx(c["fused"])


@pytest.mark.parametrize("candidates", [3, 60])
def test_any_store_ranks_like_the_qdrant_fast_path(store: QdrantEdgeStore, candidates: int) -> None:
    fast = _memory(store, candidates=candidates)
    _fill(fast)
    plain = _memory(PlainStore(store), candidates=candidates)
    for query in ("Paris trips", "hiking in July 2023", "gardening note 7", "nothing at all xyz"):
        a = fast.retrieve_memories(query, top_k=5, touch=False, explain=True)
        b = plain.retrieve_memories(query, top_k=5, touch=False, explain=True)
        assert [h.record.id for h in a] == [h.record.id for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b])


async def test_async_search_matches_sync(store: QdrantEdgeStore) -> None:
    memory = _memory(store)
    _fill(memory)
    plain = _memory(PlainStore(store))
    for m in (memory, plain):
        sync = m.retrieve_memories("hiking in July 2023", top_k=3, touch=False)
        other = await m.aretrieve_memories("hiking in July 2023", top_k=3, touch=False)
        assert [h.record.id for h in sync] == [h.record.id for h in other]


def test_legacy_rrf_is_one_setting_away(store: QdrantEdgeStore) -> None:
    memory = _memory(store, fusion="rrf", relative_floor=None, min_similarity=None)
    _fill(memory)
    assert len(memory.retrieve_memories("gardening", top_k=5, touch=False)) == 5


def test_qdrant_client_store_ranks_like_edge(store: QdrantEdgeStore) -> None:
    from qdrant_client import QdrantClient

    from agentmem.stores.qdrant.client import QdrantClientStore

    other = QdrantClientStore(QdrantClient(":memory:"), dimension=64)
    edge, client = _memory(store), _memory(other)
    _fill(edge)
    for record in edge.all_records():
        client.store_records([record])
    for query in ("Paris trips", "hiking in July 2023", "gardening note 7"):
        a = edge.retrieve_memories(query, top_k=5, touch=False)
        b = client.retrieve_memories(query, top_k=5, touch=False)
        assert [h.record.id for h in a] == [h.record.id for h in b]
    other.close()


@pytest.mark.parametrize("candidates", [3, 60])
async def test_in_memory_store_ranks_like_edge(store: QdrantEdgeStore, candidates: int) -> None:
    edge = _memory(store, candidates=candidates)
    _fill(edge)
    fake = _memory(InMemoryMemoryStore(dimension=64), candidates=candidates)
    await fake.astore_records(edge.all_records())
    for query in ("Paris trips", "hiking in July 2023", "gardening note 7", "nothing at all xyz"):
        a = edge.retrieve_memories(query, top_k=5, touch=False, explain=True)
        b = await fake.aretrieve_memories(query, top_k=5, touch=False, explain=True)
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5), query
        unique = [h.record.id for h in a if [x.score for x in a].count(h.score) == 1]
        assert set(unique) <= {h.record.id for h in b}, query


@pytest.mark.parametrize("candidates", [2, 5, 12])
def test_short_candidate_lists_rank_like_complete_ones(
    store: QdrantEdgeStore, candidates: int
) -> None:
    # Scores missing from a cut list are looked up exactly when they could matter, so the
    # top results equal those of lists holding every memory.
    loose = {"relative_floor": None, "min_similarity": None, "duplicate_threshold": None}
    complete = _memory(store, candidates=1000, **loose)
    _fill(complete)
    short = _memory(store, candidates=candidates, **loose)
    for query in ("Paris trips", "hiking in July 2023", "gardening note 7", "went hiking"):
        # Memories that score 0 on both sides are left out: they all tie.
        a = complete.retrieve_memories(query, top_k=4, touch=False, explain=True)
        b = short.retrieve_memories(query, top_k=4, touch=False, explain=True)
        a = [h for h in a if h.components["base"] > 0]
        b = [h for h in b if h.components["base"] > 0]
        assert [h.score for h in a] == pytest.approx([h.score for h in b]), query
        # Equal scores tie (the hashing embedder makes many): which of them fill the list
        # depends on the candidates; memories with a score of their own must be the same.
        everything = complete.retrieve_memories(query, top_k=100, touch=False)
        scores = [round(h.score, 9) for h in everything]
        unique = {h.record.id for h in a if scores.count(round(h.score, 9)) == 1}
        assert unique, query
        assert unique <= {h.record.id for h in b}, query
