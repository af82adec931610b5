"""Integration: AgentMemoryRetriever passes langchain-tests' RetrieversIntegrationTests,
and returns scored, typed, timestamped documents with filters, sync and async."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from agentmem.errors import InvalidValueError
from agentmem.long_term import LongTermMemory, RecordFilter
from langchain_agentmem import AgentMemoryRetriever
from tests.langchain.conftest import Home

pytestmark = pytest.mark.integration

FACTS = [
    ("Alice writes Python with tabs", "semantic", 0.9, {"topic": "code"}),
    ("Alice deploys Python services on Fridays", "episodic", 0.4, {"topic": "ops"}),
    ("Alice reviews Python pull requests every morning", "procedural", 0.6, {"topic": "code"}),
    ("Alice likes green tea", "semantic", 0.2, {"topic": "food"}),
]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LongTermMemory]:
    home = Home(tmp_path_factory.mktemp("retriever"))
    memory = home.manager("s1").long_term
    for content, kind, importance, meta in FACTS:
        memory.store_memory(content, kind, importance=importance, metadata=meta)
    yield memory
    home.close()


class TestAgentMemoryRetrieverStandard(RetrieversIntegrationTests):
    _memory: LongTermMemory

    @pytest.fixture(autouse=True)
    def _bind(self, memory: LongTermMemory) -> None:
        type(self)._memory = memory

    @property
    def retriever_constructor(self) -> type[AgentMemoryRetriever]:
        return AgentMemoryRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self._memory}

    @property
    def retriever_query_example(self) -> str:
        return "what does Alice do with Python?"


def test_documents_carry_score_type_importance_and_timestamps(memory: LongTermMemory) -> None:
    # Two memories above the relevance floor: the tabs one, then another about Python.
    docs = AgentMemoryRetriever(memory=memory, k=2).invoke("what does Alice do with Python, tabs?")
    assert docs[0].page_content == "Alice writes Python with tabs"
    meta = docs[0].metadata
    assert meta["memory_type"] == "semantic"
    assert meta["importance"] == 0.9
    assert isinstance(meta["score"], float)
    assert meta["score"] >= docs[1].metadata["score"]
    assert meta["created_at"].endswith("+00:00")
    assert meta["user_id"] == "alice"
    assert meta["metadata"] == {"topic": "code"}
    assert docs[0].id == meta["id"]


def test_filters_narrow_results(memory: LongTermMemory) -> None:
    retriever = AgentMemoryRetriever(memory=memory, k=4)
    kinds = {
        d.metadata["memory_type"] for d in retriever.invoke("Alice Python", memory_type="episodic")
    }
    assert kinds == {"episodic"}
    topics = retriever.invoke("Alice", filter=RecordFilter(metadata={"topic": "code"}))
    assert {d.metadata["metadata"]["topic"] for d in topics} == {"code"}
    assert all(
        d.metadata["importance"] >= 0.5 for d in retriever.invoke("Alice", min_importance=0.5)
    )
    as_dict = retriever.invoke("Alice", filter={"metadata": {"topic": "food"}})
    assert [d.page_content for d in as_dict] == ["Alice likes green tea"]


async def test_async_matches_sync(memory: LongTermMemory) -> None:
    retriever = AgentMemoryRetriever(memory=memory, k=3, touch=False)
    sync_docs = retriever.invoke("Python tabs")
    async_docs = await retriever.ainvoke("Python tabs")
    assert [d.page_content for d in async_docs] == [d.page_content for d in sync_docs]
    assert all(isinstance(d, Document) for d in async_docs)


def test_unknown_options_and_bad_queries_are_clear_errors(memory: LongTermMemory) -> None:
    retriever = AgentMemoryRetriever(memory=memory)
    with pytest.raises(InvalidValueError, match="unknown retriever option"):
        retriever.invoke("x", top=3)
    with pytest.raises(InvalidValueError, match="non-empty"):
        retriever.invoke("   ")
