"""Runnable examples, one per public class (docs/guides/langchain.md shows the same code).

Each ``example_*`` function is self-contained and runs offline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def example_chat_history(tmp_path: Path) -> list[str]:
    from langchain_core.messages import AIMessage, HumanMessage

    from agentmem.stores.sqlite import SQLiteSessionStore
    from langchain_agentmem import AgentMemoryChatHistory

    store = SQLiteSessionStore(tmp_path / "sessions.db")
    history = AgentMemoryChatHistory("alice-chat-1", store=store, max_tokens=1000)
    history.add_messages([HumanMessage("I write Python with tabs"), AIMessage("Noted.")])
    texts = [m.text for m in history.messages]  # budgeted view; get_full_messages() for all
    store.close()
    return texts


def example_retriever_tools_store_and_middleware(tmp_path: Path) -> tuple[str, str, str]:
    from langchain.agents import create_agent
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage

    from agentmem import MemoryManager
    from agentmem.long_term import LongTermMemory
    from agentmem.stores.qdrant.edge import QdrantEdgeStore
    from agentmem.stores.sqlite import SQLiteSessionStore
    from langchain_agentmem import (
        AgentMemoryMiddleware,
        AgentMemoryRetriever,
        AgentMemoryStore,
        LangChainEmbedder,
        create_memory_tools,
    )

    embeddings = DeterministicFakeEmbedding(size=64)  # any LangChain Embeddings
    edge = QdrantEdgeStore(tmp_path / "long_term", dimension=64)
    sessions = SQLiteSessionStore(tmp_path / "sessions.db")
    long_term = LongTermMemory(store=edge, embedder=LangChainEmbedder(embeddings), user_id="alice")
    manager = MemoryManager.from_parts(
        user_id="alice", session_id="s1", sessions=sessions, long_term=long_term
    )
    manager.remember("Alice indents Python with tabs")

    # Retriever: long-term memories as Documents.
    doc = AgentMemoryRetriever(memory=long_term, k=1).invoke("Alice indents Python with tabs")[0]

    # LangGraph store: namespaces, semantic search over the "text" field.
    store = AgentMemoryStore(edge, index={"dims": 64, "embed": embeddings, "fields": ["text"]})
    store.put(("alice", "prefs"), "editor", {"text": "vim"})
    item = store.search(("alice",), query="vim")[0]

    # Agent: tools + middleware (budget, recall, consolidation) + store.
    model = GenericFakeChatModel(messages=iter([AIMessage("Tabs.")]))
    agent = create_agent(
        model,
        tools=create_memory_tools(manager, permissions="read_only"),
        middleware=[AgentMemoryMiddleware(manager, max_tokens=2000)],
        store=store,
    )
    answer = agent.invoke({"messages": [HumanMessage("How do I indent?")]})["messages"][-1].text
    edge.close()
    sessions.close()
    return doc.page_content, item.key, answer


def test_chat_history_example(tmp_path: Path) -> None:
    assert example_chat_history(tmp_path) == ["I write Python with tabs", "Noted."]


def test_retriever_tools_store_and_middleware_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_core.language_models import GenericFakeChatModel

    # GenericFakeChatModel has no bind_tools; a real chat model does.
    monkeypatch.setattr(
        GenericFakeChatModel, "bind_tools", lambda self, tools, **kw: self, raising=False
    )
    assert example_retriever_tools_store_and_middleware(tmp_path) == (
        "Alice indents Python with tabs",
        "editor",
        "Tabs.",
    )
