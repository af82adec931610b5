"""The one ranker on every backend: through ``LongTermMemory``, in every search mode and
both fusion modes, a hit's ``explain=True`` components add up to its score, and a memory
dated decades ahead ranks with a bounded recency boost.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from agentmem.long_term import LongTermMemory
from agentmem.long_term.ranking import SCORE_PARTS, Fusion, RankingConfig, SearchMode
from agentmem.long_term.store import MemoryStore, ScoredRecord
from tests.conformance.long_term.memory_store_backends import DIM, AsyncFace
from tests.fake_embedder import HashingEmbedder

NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)
FACTS = [
    ("Alice cooked a mushroom risotto for her sister", 0.9, 3),
    ("Alice cooked pasta with her climbing club", 0.2, 20),
    ("Alice bought a new climbing rope", 0.5, 40),
    ("Bob cooked risotto at the lake house", 0.7, 70),
    ("Alice read a book about risotto and rice", 0.4, 120),
    ("The climbing gym opened a bouldering wall", 0.6, 9),
]
WEIGHTS = {"importance_weight": 0.05, "recency_weight": 0.1, "half_life_days": 30.0}


def _memory(memory_store: MemoryStore, ranking: RankingConfig) -> LongTermMemory:
    store = memory_store.store if isinstance(memory_store, AsyncFace) else memory_store
    return LongTermMemory(
        store=store,
        embedder=HashingEmbedder(DIM),
        user_id="alice",
        ranking=ranking,
        clock=lambda: NOW,
        on_close=lambda: None,  # the fixture closes the store
    )


async def _recall(
    memory: LongTermMemory, store_mode: str, query: str, mode: SearchMode
) -> list[ScoredRecord]:
    if store_mode == "async":
        return await memory.aretrieve_memories(query, top_k=4, mode=mode, explain=True)
    return memory.retrieve_memories(query, top_k=4, mode=mode, explain=True)


@pytest.mark.parametrize("fusion", ["score", "rrf"])
@pytest.mark.parametrize("mode", ["hybrid", "dense", "bm25"])
async def test_explain_components_add_up_to_the_score(
    memory_store: MemoryStore, store_mode: str, fusion: Fusion, mode: SearchMode
) -> None:
    ranking = RankingConfig(fusion=fusion, relative_floor=None, min_similarity=None, **WEIGHTS)
    memory = _memory(memory_store, ranking)
    for content, importance, days in FACTS:
        created = NOW - timedelta(days=days)
        memory.store_memory(content, "episodic", importance=importance, created_at=created)

    hits = await _recall(memory, store_mode, "what risotto did Alice cook in May 2025?", mode)

    assert hits
    # Score fusion adds in float64; the rankings by the lists' own scores round the sum to
    # float32 (half an ulp: 2**-24 of it), as the engines' scores are.
    rel = 1e-12 if (mode, fusion) == ("hybrid", "score") else 2**-24
    for hit in hits:
        parts = hit.components
        assert parts["final"] == hit.score
        total = sum(parts[k] for k in SCORE_PARTS if k in parts)
        assert total == pytest.approx(hit.score, rel=rel, abs=1e-12)
        assert parts["importance_boost"] == pytest.approx(0.05 * hit.record.importance)
        assert 0 < parts["recency_boost"] <= 0.1
        if mode == "hybrid" and fusion == "score":
            assert "temporal_boost" in parts
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.parametrize("fusion", ["score", "rrf"])
async def test_a_memory_dated_decades_ahead_has_a_bounded_recency_boost(
    memory_store: MemoryStore, store_mode: str, fusion: Fusion
) -> None:
    # 0.5 ** (-85 years / 30 days) overflows a float: such a memory counts as brand new.
    memory = _memory(memory_store, RankingConfig(fusion=fusion, **WEIGHTS))
    ahead = NOW + timedelta(days=85 * 365)
    memory.store_memory("Alice will retire to a lighthouse", "semantic", created_at=ahead)
    hits = await _recall(memory, store_mode, "where will Alice retire?", "hybrid")
    assert [h.record.content for h in hits] == ["Alice will retire to a lighthouse"]
    assert hits[0].components["recency_boost"] == 0.1
