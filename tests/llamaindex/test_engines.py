"""AgentMemory and AgentMemoryRetriever inside LlamaIndex engines and agents."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.agent.workflow import ReActAgent
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.chat_engine import CondensePlusContextChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from llamaindex_agentmem import AgentMemoryRetriever
from tests.llamaindex._helpers import open_memory, weather

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
    # ReActAgent's own step reads ctx.is_running (deprecated inside llama-index).
    pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning"),
]


class ReActScript(MockLLM):
    """A ReAct-format LLM: acts once with the weather tool, then answers from the
    observation; records the chats it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: list[list[ChatMessage]] = []

    def chat(self, messages: Sequence[ChatMessage], **_: Any) -> ChatResponse:
        self._seen.append(list(messages))
        last = messages[-1].content or ""
        if "Observation:" in last:
            text = "Thought: I can answer now.\nAnswer: " + last.split("Observation:")[-1].strip()
        else:
            text = 'Thought: I need the tool.\nAction: weather\nAction Input: {"city": "Oslo"}'
        return ChatResponse(message=ChatMessage(role="assistant", content=text))

    async def achat(self, messages: Sequence[ChatMessage], **kw: Any) -> ChatResponse:
        return self.chat(messages, **kw)


async def test_react_agent_runs_on_agent_memory(home: Path) -> None:
    memory = open_memory(home)
    agent = ReActAgent(tools=[weather], llm=ReActScript(), streaming=False)
    result = await agent.run("Weather in Oslo?", memory=memory)
    assert "Sunny" in str(result)
    second = await agent.run("Again please", memory=memory)
    assert "Sunny" in str(second)
    history = await memory.aget_all()
    users = [m.content for m in history if m.role == MessageRole.USER]
    assert users[:1] == ["Weather in Oslo?"]
    assert "Again please" in users
    assert history[-1].role == MessageRole.ASSISTANT
    await memory.aclose()


def test_retriever_returns_scored_nodes_with_memory_metadata(home: Path) -> None:
    with open_memory(home) as memory:
        memory.manager.remember("Alice's cat is called Miso", importance=0.9, subtype="fact")
        memory.manager.remember("Alice deploys on Fridays", importance=0.4)
        nodes = AgentMemoryRetriever(memory.manager, top_k=2).retrieve("what is the cat called?")
        assert nodes[0].node.get_content() == "Alice's cat is called Miso"
        assert nodes[0].score is not None
        # The unrelated memory is below the relevance floor: not padded in.
        assert [n.node.get_content() for n in nodes] == ["Alice's cat is called Miso"]
        meta = nodes[0].node.metadata
        assert (meta["memory_type"], meta["subtype"], meta["importance"]) == (
            "semantic",
            "fact",
            0.9,
        )
        assert meta["user_id"] == "alice"
        assert meta["source_session_id"] == "s1"
        assert nodes[0].node.node_id == meta["memory_id"]
        # Ids and score parts are hidden from the LLM; the type and date are shown.
        shown = nodes[0].node.get_metadata_str(mode="llm")  # type: ignore[attr-defined]
        assert "memory_type" in shown
        assert "memory_id" not in shown


async def test_retriever_async_and_filters(home: Path) -> None:
    memory = open_memory(home)
    await memory.manager.aremember("Bob likes green tea", memory_type="semantic")
    await memory.manager.aremember("Bob went to Oslo in May", memory_type="episodic")
    retriever = AgentMemoryRetriever(memory.manager.long_term, memory_type="episodic")
    nodes = await retriever.aretrieve("Bob")
    assert [n.node.get_content() for n in nodes] == ["Bob went to Oslo in May"]
    assert await retriever.aretrieve("   ") == []
    await memory.aclose()


def test_retriever_in_a_query_engine(home: Path) -> None:
    with open_memory(home) as memory:
        memory.manager.remember("The staging database is Postgres 16")
        engine = RetrieverQueryEngine.from_args(AgentMemoryRetriever(memory.manager), llm=MockLLM())
        response = engine.query("which database runs staging?")
        assert [n.node.get_content() for n in response.source_nodes] == [
            "The staging database is Postgres 16"
        ]
        assert "Postgres 16" in str(response)  # MockLLM echoes the prompt with the context


def test_condense_plus_context_chat_engine_multi_turn(home: Path) -> None:
    with open_memory(home, session_id="old") as memory:
        memory.manager.remember("Alice's project is called Falcon")
    with open_memory(home, session_id="new") as memory:
        engine = CondensePlusContextChatEngine.from_defaults(
            retriever=AgentMemoryRetriever(memory.manager),
            memory=memory,
            llm=MockLLM(),
        )
        first = engine.chat("What is my project called?")
        assert "Falcon" in str(first)
        engine.chat("Thanks")
        assert [m.role for m in memory.get_all()] == [
            MessageRole.USER,
            MessageRole.ASSISTANT,
        ] * 2
        assert engine.chat_history[0].content == "What is my project called?"
        engine.reset()
        assert memory.get_all() == []
