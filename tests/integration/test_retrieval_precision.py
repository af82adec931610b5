"""Precision of recall with the real local embedder: no padding, nothing for unrelated questions.

Six unrelated facts are stored; each question about one of them must return that fact first
and at most one other memory, and questions about nothing stored must return nothing (the
relevance floor of :mod:`agentmem.long_term.ranking`). The same holds through
``MemoryManager.recall`` and ``build_context``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmem import MemoryManager
from agentmem.embeddings import default_embedder
from agentmem.long_term import LongTermMemory, RankingConfig
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from agentmem.stores.sqlite import SQLiteSessionStore

pytestmark = pytest.mark.integration

#: fact -> a question about it that a user would ask
FACTS = {
    "I always indent my Python code with tabs, never spaces.": "Tabs or spaces for this Python snippet?",
    "I drink my coffee black, no sugar.": "How do I take my coffee?",
    "My cat is called Miso and she is three years old.": "What's my cat's name?",
    "I moved to Lisbon last spring.": "Which city do I live in now?",
    "I am allergic to peanuts.": "Any food allergies I should watch out for?",
    "My sister Ana's birthday is on March 3.": "When is my sister's birthday?",
}
UNRELATED = (
    "What is the capital of Australia?",
    "How do I reverse a linked list?",
    "Recommend a good sci-fi movie.",
    "What's the weather like on Mars?",
)


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LongTermMemory]:
    embedder = default_embedder()
    store = QdrantEdgeStore(tmp_path_factory.mktemp("precision"), dimension=embedder.dimension)
    memory = LongTermMemory(store=store, embedder=embedder, user_id="alice")
    for fact in FACTS:
        memory.store_memory(fact, "semantic")
    yield memory
    memory.close()


@pytest.mark.parametrize(("fact", "question"), list(FACTS.items()))
def test_a_question_about_one_fact_returns_it_first_without_padding(
    memory: LongTermMemory, fact: str, question: str
) -> None:
    hits = memory.retrieve_memories(question, top_k=5, touch=False)
    assert hits, question
    assert hits[0].record.content == fact
    assert len(hits) <= 2, [h.record.content for h in hits]


@pytest.mark.parametrize("question", UNRELATED)
def test_an_unrelated_question_returns_nothing(memory: LongTermMemory, question: str) -> None:
    assert memory.retrieve_memories(question, top_k=5, touch=False) == []


def test_without_the_floor_recall_pads(memory: LongTermMemory) -> None:
    # What the floor removes: the old behaviour returned top_k memories whatever they were.
    loose = LongTermMemory(
        store=memory.store,
        embedder=memory.embedder,
        user_id="alice",
        ranking=RankingConfig(relative_floor=None, min_similarity=None),
        on_close=lambda: None,
    )
    assert len(loose.retrieve_memories(UNRELATED[0], top_k=5, touch=False)) == 5


def test_recall_and_build_context_apply_the_floor(tmp_path: Path) -> None:
    embedder = default_embedder()
    store = QdrantEdgeStore(tmp_path / "long_term", dimension=embedder.dimension)
    long_term = LongTermMemory(store=store, embedder=embedder, user_id="bob")
    sessions = SQLiteSessionStore(tmp_path / "sessions.db")
    manager = MemoryManager.from_parts(
        user_id="bob", sessions=sessions, long_term=long_term, consolidate_every_tokens=None
    )
    try:
        for fact in FACTS:
            manager.remember(fact, "semantic")
        hits = manager.recall("Tabs or spaces for this Python snippet?", 5)
        assert [h.record.content for h in hits][:1] == [next(iter(FACTS))]
        assert len(hits) <= 2
        assert manager.recall("What is the capital of Australia?", 5) == []
        built = manager.build_context("What is the capital of Australia?", max_tokens=1000)
        assert built.recalled == []
        assert "recalled_memories" not in built.text
    finally:
        manager.close()
        long_term.close()
        sessions.close()
