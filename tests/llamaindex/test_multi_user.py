"""Many users at once in one process: ``AgentMemory`` objects of different users and
sessions, each behind its own ``SimpleChatEngine``, run concurrently on one home.

A recording LLM keeps every chat it was sent, so the tests check what the model saw: each
chat holds its own user's recalled memories and no one else's, and each session's log has
each turn exactly once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM

from agentmem import MemoryService
from agentmem.errors import ConfigurationError
from llamaindex_agentmem import (
    AgentMemory,
    AgentMemoryRetriever,
    LongTermMemoryBlock,
    WorkingMemoryBlock,
)
from tests.fakes import HashingEmbedder
from tests.llamaindex._helpers import DIM

pytestmark = pytest.mark.integration

USERS = [f"li{i}q" for i in range(10)]
TURNS = 3


class RecordingLLM(MockLLM):
    """Answers "ok"; keeps every chat it was sent (thread-safe)."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: list[list[ChatMessage]] = []
        self._lock = threading.Lock()

    def chat(self, messages: Sequence[ChatMessage], **_: Any) -> ChatResponse:
        with self._lock:
            self._seen.append(list(messages))
        return ChatResponse(message=ChatMessage(role="assistant", content="ok"))

    async def achat(self, messages: Sequence[ChatMessage], **kw: Any) -> ChatResponse:
        return self.chat(messages, **kw)


def hobby(user: str) -> str:
    return f"{user} restores old {user[::-1]} clocks"


def question(user: str, turn: int) -> str:
    return f"what is my hobby? ({user}, turn {turn})"


def seed(home: Path) -> None:
    with MemoryService.open(home, embedder=HashingEmbedder(DIM), background=False) as service:
        for user in USERS:
            service.manager(user, f"{user}-seed").remember(hobby(user))


def check(llm: RecordingLLM, memories: dict[str, AgentMemory]) -> None:
    assert len(llm._seen) == TURNS * len(USERS)
    for chat in llm._seen:
        text = "\n".join(str(m.content) for m in chat)
        user = next(u for u in USERS if question(u, 0)[:-3] in text)
        assert hobby(user) in text
        assert not any(o in text for o in USERS if o != user), text
    for user, memory in memories.items():
        asked = [m.content for m in memory.get_all() if m.role.value == "user"]
        assert asked == [question(user, t) for t in range(TURNS)]
        assert len(memory.get_all()) == 2 * TURNS


def test_ten_chat_engines_of_different_users_in_threads(home: Path) -> None:
    seed(home)
    llm = RecordingLLM()
    memories = {
        u: AgentMemory.from_defaults(
            user_id=u,
            session_id=f"{u}-chat",
            home=home,
            embed_model=HashingEmbedder(DIM),
            consolidate_every_tokens=None,
        )
        for u in USERS
    }
    try:

        def run(user: str) -> None:
            engine = SimpleChatEngine.from_defaults(llm=llm, memory=memories[user])
            for t in range(TURNS):
                assert str(engine.chat(question(user, t))) == "ok"

        with ThreadPoolExecutor(10) as pool:
            list(pool.map(run, USERS))
        check(llm, memories)
    finally:
        for memory in memories.values():
            memory.close()


async def test_ten_chat_engines_on_one_service_in_asyncio(home: Path) -> None:
    seed(home)
    llm = RecordingLLM()
    # Only the seeded facts in long-term memory: the check looks for each user's own.
    async with MemoryService.open(
        home, embedder=HashingEmbedder(DIM), consolidate_every_tokens=None
    ) as service:
        memories = {
            u: AgentMemory.from_service(service, user_id=u, session_id=f"{u}-chat") for u in USERS
        }

        async def run(user: str) -> None:
            engine = SimpleChatEngine.from_defaults(llm=llm, memory=memories[user])
            for t in range(TURNS):
                assert str(await engine.achat(question(user, t))) == "ok"

        await asyncio.gather(*(run(u) for u in USERS))
        check(llm, memories)


async def test_blocks_and_retriever_take_a_service(home: Path) -> None:
    seed(home)
    async with MemoryService.open(home, embedder=HashingEmbedder(DIM)) as service:
        retriever = AgentMemoryRetriever(service, user_id=USERS[0], top_k=3)
        nodes = retriever.retrieve("which clocks do I restore")
        assert [n.node.get_content() for n in nodes] == [hobby(USERS[0])]
        block = LongTermMemoryBlock(long_term=service, user_id=USERS[1])
        text = await block.aget([ChatMessage(role="user", content="old clocks hobby")])
        assert hobby(USERS[1]) in text
        assert hobby(USERS[0]) not in text
        service.manager(USERS[2], "wm-1").working.push_task("wind the clocks")
        working = WorkingMemoryBlock(working=service, user_id=USERS[2], session_id="wm-1")
        assert "wind the clocks" in await working.aget()
        with pytest.raises(ConfigurationError, match="user_id"):
            AgentMemoryRetriever(service)
        with pytest.raises(ConfigurationError, match="session_id"):
            WorkingMemoryBlock(working=service, user_id=USERS[2])
