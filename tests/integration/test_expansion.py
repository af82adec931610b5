"""Entity links and the second search stage with the real parts: the local embedding model on
Qdrant Edge finds a second hop only with expansion on, explain shows it, the parts add up to
the score; links persist and work after a reopen on every backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from agentmem.embeddings import default_embedder
from agentmem.long_term import LongTermMemory
from agentmem.long_term.expansion import COMPONENTS, ExpansionConfig
from agentmem.long_term.links import entities_of
from agentmem.stores.in_memory import InMemoryMemoryStore
from agentmem.stores.qdrant.client import QdrantClientStore
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from tests.fakes import HashingEmbedder

pytestmark = pytest.mark.integration

ADDITIVE = ("base", "temporal_boost", "importance_boost", "recency_boost", *COMPONENTS)
#: The question names the bowl; only the first memory says who made it, and only the
#: second (linked to it by the rare name "Oskar") says where he lives.
BOWL = "Caroline bought a handmade ceramic bowl from Oskar at the Saturday market."
WORKSHOP = "Oskar has his workshop in a fishing village near Tromso."
OTHERS = (
    "Caroline went swimming with her kids at the lake.",
    "Melanie is reading a mystery novel about a lighthouse.",
    "Caroline painted a sunset over the mountains.",
    "Melanie baked banana bread for the school fair.",
    "Caroline's cat knocked a glass off the kitchen table.",
    "Melanie took a pottery class on Tuesday evenings.",
)
QUESTION = "Where is the workplace of the man who sold Caroline her bowl?"


def _memory(store: Any, embedder: Any, expansion: ExpansionConfig) -> LongTermMemory:
    return LongTermMemory(
        store=store,
        embedder=embedder,
        user_id="caroline",
        expansion=expansion,
        on_close=lambda: None,
    )


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QdrantEdgeStore]:
    embedder = default_embedder()
    store = QdrantEdgeStore(tmp_path_factory.mktemp("links"), dimension=embedder.dimension)
    writer = _memory(store, embedder, ExpansionConfig(link=True))
    for text in (BOWL, WORKSHOP, *OTHERS):
        writer.store_memory(text, "episodic")
    yield store
    store.close()


def test_the_second_hop_is_found_only_with_expansion_on(edge: QdrantEdgeStore) -> None:
    embedder = default_embedder()
    plain = _memory(edge, embedder, ExpansionConfig())
    off = [h.record.content for h in plain.retrieve_memories(QUESTION, top_k=3, touch=False)]
    assert off[0] == BOWL
    assert WORKSHOP not in off
    hopping = _memory(edge, embedder, ExpansionConfig(hops=1, hop_weight=0.5))
    hits = hopping.retrieve_memories(QUESTION, top_k=3, touch=False, explain=True)
    on = [h.record.content for h in hits]
    assert on[0] == BOWL
    assert WORKSHOP in on
    reached = hits[on.index(WORKSHOP)]
    assert reached.components["expansion"] > 0
    assert hits[0].components["expansion"] == 0  # a seed is not its own neighbour


def test_the_parts_add_up_to_the_score_with_every_component_on(edge: QdrantEdgeStore) -> None:
    everything = ExpansionConfig(hops=2, hop_weight=0.5, feedback_weight=0.3, session_weight=0.1)
    hits = _memory(edge, default_embedder(), everything).retrieve_memories(
        QUESTION, top_k=5, touch=False, explain=True
    )
    assert hits
    for hit in hits:
        assert {"expansion", "feedback", "session", "final"} <= set(hit.components)
        total = sum(hit.components.get(name, 0.0) for name in ADDITIVE)
        assert total == pytest.approx(hit.score)
        assert hit.components["final"] == pytest.approx(hit.score)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_an_unrelated_question_still_returns_nothing(edge: QdrantEdgeStore) -> None:
    everything = ExpansionConfig(hops=2, hop_weight=0.5, feedback_weight=0.3, session_weight=0.1)
    memory = _memory(edge, default_embedder(), everything)
    assert memory.retrieve_memories("What is the capital of Australia?", touch=False) == []


# -- every backend, across a reopen ------------------------------------------------------------

DIM = 64


def _edge(path: Path) -> Callable[[], Any]:
    return lambda: QdrantEdgeStore(path / "edge", dimension=DIM)


class _ClientStore(QdrantClientStore):
    """qdrant-client local mode on a path; closing the store also closes its client, so
    the path can be opened again."""

    def __init__(self, path: Path) -> None:
        self._own_client = QdrantClient(path=str(path))
        super().__init__(self._own_client, dimension=DIM)

    def close(self) -> None:
        super().close()
        self._own_client.close()


def _client(path: Path) -> Callable[[], Any]:
    return lambda: _ClientStore(path / "client")


@pytest.mark.parametrize("backend", ["edge", "qdrant-client", "in-memory"])
def test_links_persist_and_hop_after_reopen(tmp_path: Path, backend: str) -> None:
    embedder = HashingEmbedder(DIM)
    shared = InMemoryMemoryStore(dimension=DIM)
    opener: Callable[[], Any] = {
        "edge": _edge(tmp_path),
        "qdrant-client": _client(tmp_path),
        "in-memory": lambda: shared,
    }[backend]
    store = opener()
    writer = _memory(store, embedder, ExpansionConfig(link=True))
    for text in (BOWL, WORKSHOP, *OTHERS):
        writer.store_memory(text, "episodic")
    if backend != "in-memory":
        store.close()
        store = opener()
    try:
        reader = _memory(store, embedder, ExpansionConfig(hops=1, hop_weight=0.5))
        records = {r.content: r for r in reader.all_records()}
        assert "oskar" in entities_of(records[BOWL])
        assert "oskar" in entities_of(records[WORKSHOP])
        hits = reader.retrieve_memories(
            "Caroline ceramic bowl Saturday market", top_k=2, mode="bm25", touch=False
        )
        assert [h.record.content for h in hits] == [BOWL, WORKSHOP]
        plain = _memory(store, embedder, ExpansionConfig()).retrieve_memories(
            "Caroline ceramic bowl Saturday market", top_k=2, mode="bm25", touch=False
        )
        assert WORKSHOP not in [h.record.content for h in plain]
    finally:
        if backend != "in-memory":
            store.close()
