"""Memory blocks for llama_index.core.memory.Memory on agentmem's stores."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from agentmem import TokenCounter, WorkingMemory
from agentmem.context import MEMORY_BLOCK_CLOSE, MEMORY_BLOCK_OPEN
from agentmem.long_term import LongTermMemory
from llamaindex_agentmem import FactMemoryBlock, LongTermMemoryBlock, WorkingMemoryBlock
from tests.fakes import HashingEmbedder
from tests.llamaindex._helpers import DIM

pytestmark = pytest.mark.integration


@pytest.fixture
async def engine() -> AsyncIterator[AsyncEngine]:
    """The SQL engine of LlamaIndex's Memory FIFO queue (in-memory SQLite)."""
    eng = create_async_engine("sqlite+aiosqlite:///:memory:")
    yield eng
    await eng.dispose()


def open_long_term(home: Path) -> LongTermMemory:
    return LongTermMemory.open(user_id="alice", home=home, embedder=HashingEmbedder(DIM))


class FactLLM(MockLLM):
    """Answers LlamaIndex's fact-extraction prompt with scripted facts."""

    def __init__(self, facts: Sequence[str]) -> None:
        super().__init__()
        self._facts = list(facts)

    async def achat(self, messages: Sequence[ChatMessage], **_: Any) -> ChatResponse:
        body = "".join(f"<fact>{f}</fact>" for f in self._facts)
        return ChatResponse(message=ChatMessage(role="assistant", content=f"<facts>{body}</facts>"))


async def test_long_term_block_writes_flushed_messages_and_recalls_them(
    home: Path, engine: AsyncEngine
) -> None:
    long_term = open_long_term(home)
    block = LongTermMemoryBlock(long_term=long_term, priority=1)
    memory = Memory.from_defaults(
        session_id="s1",
        token_limit=300,
        chat_history_token_ratio=0.5,
        token_flush_size=60,
        memory_blocks=[block],
        async_engine=engine,
    )
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="My sister Ana lives in Lisbon"),
            ChatMessage(role="assistant", content="Lisbon is lovely."),
        ]
    )
    for i in range(12):
        await memory.aput_messages(
            [
                ChatMessage(role="user", content=f"Unrelated question {i} about gardening soil"),
                ChatMessage(role="assistant", content=f"Answer {i}: compost helps the soil."),
            ]
        )
    stored = [r.content for r in long_term.all_records()]
    assert any("Ana lives in Lisbon" in c for c in stored)  # flushed, then consolidated
    messages = await memory.aget(input="Where does my sister live?")
    system = messages[0].content or ""
    assert "<long_term_memory>" in system
    assert MEMORY_BLOCK_OPEN.split("\n")[0] in system
    assert "Ana lives in Lisbon" in system
    long_term.close()


async def test_long_term_block_truncates_by_dropping_its_weakest_lines(home: Path) -> None:
    long_term = open_long_term(home)
    for i in range(6):
        long_term.store_memory(f"Alice fact number {i} about tea and biscuits", "semantic")
    block = LongTermMemoryBlock(long_term=long_term, top_k=6)
    content = await block.aget([ChatMessage(role="user", content="tea and biscuits")])
    assert content.count("\n- [") == 6
    counter = TokenCounter()
    smaller = await block.atruncate(content, 20)
    assert smaller is not None
    assert smaller.startswith(MEMORY_BLOCK_OPEN)
    assert smaller.endswith(MEMORY_BLOCK_CLOSE)
    assert counter.count_text(smaller) <= counter.count_text(content) - 20
    assert content.split("\n")[len(MEMORY_BLOCK_OPEN.split("\n"))] in smaller  # best kept
    assert await block.atruncate(content, 10_000) is None
    assert await block.aget([ChatMessage(role="assistant", content="no user turn")]) == ""
    long_term.close()


async def test_priority_zero_blocks_are_never_truncated(home: Path, engine: AsyncEngine) -> None:
    long_term = open_long_term(home)
    for i in range(8):
        long_term.store_memory(f"Alice travel note {i}: trains over planes in Europe", "semantic")
    working = WorkingMemory()
    working.push_task("Plan Alice's trip to Vienna")
    blocks = [
        WorkingMemoryBlock(working=working, priority=0),
        LongTermMemoryBlock(long_term=long_term, priority=1, top_k=8),
    ]
    memory = Memory.from_defaults(
        session_id="s1", token_limit=170, memory_blocks=blocks, async_engine=engine
    )
    await memory.aput(ChatMessage(role="user", content="How should Alice travel to Vienna?"))
    system = (await memory.aget(input="trains or planes in Europe?"))[0].content or ""
    assert "Plan Alice's trip to Vienna" in system  # priority 0 kept whole
    kept = system.count("travel note")
    assert 0 < kept < 8  # the long-term block shrank instead of disappearing
    long_term.close()


async def test_working_memory_block_renders_and_shrinks() -> None:
    working = WorkingMemory()
    working.push_task("Book the flight")
    working.set_variable("budget", "under 300 EUR")
    working.add_scratchpad_entry("Compared three airlines")
    block = WorkingMemoryBlock(working=working)
    assert block.accept_short_term_memory is False
    full = await block.aget()
    assert "Book the flight" in full
    assert "under 300 EUR" in full
    counter = TokenCounter()
    smaller = await block.atruncate(full, counter.count_text(full) // 3)
    assert smaller is not None
    assert "Book the flight" in smaller
    assert counter.count_text(smaller) < counter.count_text(full)
    turn = working.turn
    await block.aput([ChatMessage(role="user", content="next")])
    assert working.turn == turn + 1


async def test_fact_block_facts_persist_across_instances(home: Path) -> None:
    long_term = open_long_term(home)
    block = FactMemoryBlock(long_term=long_term, llm=FactLLM(["Alice has a dog named Rex"]))
    await block.aput([ChatMessage(role="user", content="My dog Rex is a beagle")])
    assert await block.aget() == "<fact>Alice has a dog named Rex</fact>"
    long_term.close()

    reopened = open_long_term(home)  # as after a restart: a new process, a new block
    fresh = FactMemoryBlock(long_term=reopened, llm=FactLLM(["Alice is vegetarian"]))
    assert await fresh.aget() == "<fact>Alice has a dog named Rex</fact>"
    await fresh.aput([ChatMessage(role="user", content="I stopped eating meat")])
    assert fresh.facts == ["Alice has a dog named Rex", "Alice is vegetarian"]
    stored = sorted(r.content for r in reopened.all_records())
    assert stored == ["Alice has a dog named Rex", "Alice is vegetarian"]
    truncated = await fresh.atruncate(await fresh.aget(), 5)
    assert truncated == "<fact>Alice has a dog named Rex</fact>"
    reopened.close()
