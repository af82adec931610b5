"""The relevance floor keeps the memory the dense side ranks first by a clear margin.

A paraphrase shares no word with its memory (no BM25 score), and its cosine may stay under
``min_similarity``: the floor would drop it. When it leads the other candidates by a clear
margin (two standard deviations of their cosines) it is kept; a near-tie is not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agentmem.long_term import LongTermMemory
from agentmem.stores.in_memory import InMemoryMemoryStore
from tests.fake_embedder import BatchEmbedder

QUERY = "what do I eat"


class Table(BatchEmbedder):
    """An embedder that knows each text's cosine to QUERY (the first axis)."""

    model_name, dimension = "cosine-table", 3

    def __init__(self, cosines: dict[str, float]) -> None:
        self.cosines = cosines

    def _vector(self, text: str) -> list[float]:
        if text == QUERY:
            return [1.0, 0.0, 0.0]
        c = self.cosines[text]
        return [c, math.sqrt(1 - c * c), 0.0]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]


CROWD = {f"unrelated note number {i}": 0.08 + 0.01 * (i % 5) for i in range(12)}


def _recall(target_cosine: float) -> list[str]:
    cosines = {**CROWD, "I am vegetarian": target_cosine}
    memory = LongTermMemory(
        store=InMemoryMemoryStore(dimension=3), embedder=Table(cosines), user_id="ann"
    )
    memory.store_records([memory.new_record(text, "semantic") for text in cosines])
    return [h.record.content for h in memory.retrieve_memories(QUERY, top_k=5, touch=False)]


def test_a_clear_dense_winner_under_min_similarity_is_kept() -> None:
    assert _recall(0.25) == ["I am vegetarian"]


def test_a_near_tie_under_min_similarity_is_still_dropped() -> None:
    assert _recall(0.13) == []
