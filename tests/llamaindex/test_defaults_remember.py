"""Integration: the README's ``AgentMemory`` settings, and nothing else, remember.

``AgentMemory.from_defaults(user_id=..., session_id=..., token_limit=3000, llm=None)`` as the
README writes it (the real local embedder), in a real ``SimpleChatEngine`` with LlamaIndex's
``MockLLM``: what the user says in one session is in the memory message of the user's next
session. Every turn is consolidated in the background by default; the test waits with
``wait_for_consolidation()``, as a script would, while the first session is still open.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM

from llamaindex_agentmem import AgentMemory

pytestmark = pytest.mark.integration

SAID = "I only write Python, and I indent with tabs."
ASKED = "how do I indent Python?"


def readme_memory(home: Path, session_id: str) -> AgentMemory:
    return AgentMemory.from_defaults(
        user_id="alice", session_id=session_id, home=home, token_limit=3000, llm=None
    )


def test_the_next_session_recalls_what_the_user_said(tmp_path: Path) -> None:
    first = readme_memory(tmp_path, "alice-chat-1")
    try:
        engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=8), memory=first)
        engine.chat(SAID)
        assert first.wait_for_consolidation(timeout=120) is True
        second = readme_memory(tmp_path, "alice-chat-2")
        try:
            head = second.get(input=ASKED)[0]
            assert head.role == MessageRole.SYSTEM
            assert SAID in str(head.content)
            assert second.get_all() == []  # recalled from long-term memory, not the history
        finally:
            second.close()
    finally:
        first.close()


async def test_the_async_chat_remembers_too(tmp_path: Path) -> None:
    first = readme_memory(tmp_path, "alice-chat-1")
    second = readme_memory(tmp_path, "alice-chat-2")
    try:
        engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=8), memory=first)
        await engine.achat(SAID)
        assert await first.await_consolidation(timeout=120) is True
        assert SAID in str((await second.aget(input=ASKED))[0].content)
    finally:
        await first.aclose()
        await second.aclose()


def test_a_question_without_its_answer_is_not_consolidated(tmp_path: Path) -> None:
    with readme_memory(tmp_path, "alice-chat-1") as memory:
        memory.put(ChatMessage(role="user", content=SAID))  # the engine puts this first
        assert memory.wait_for_consolidation(timeout=120) is True
        assert memory.manager.long_term.count_memories() == 0
        memory.put(ChatMessage(role="assistant", content="Tabs it is."))
        assert memory.wait_for_consolidation(timeout=120) is True
        assert [r.content for r in memory.manager.long_term.all_records()] == [
            f"user: {SAID}\nassistant: Tabs it is."
        ]
