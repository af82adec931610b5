"""Integration: ``AgentMemory.put`` of a message with an id is idempotent.

A LlamaIndex ``ChatMessage`` carries no id of its own; one set in
``additional_kwargs["id"]`` names the message, so putting it again (a retried workflow
step, a replay) stores nothing twice, sync and async, one message or a batch. The same id
with other content is refused and nothing is written. On SQLite sessions and Qdrant Edge
memories.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage

from agentmem import MemoryService
from agentmem.errors import TurnConflictError
from llamaindex_agentmem import AgentMemory
from tests.fakes import HashingEmbedder
from tests.llamaindex._helpers import DIM

pytestmark = pytest.mark.integration


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    with MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM)) as service:
        yield service


def said(role: str, text: str, message_id: str | None) -> ChatMessage:
    extra = {} if message_id is None else {"id": message_id}
    return ChatMessage(role=role, content=text, additional_kwargs=extra)


def texts(memory: AgentMemory) -> list[str]:
    return [str(m.content) for m in memory.get_all()]


def test_a_message_put_again_is_stored_once(service: MemoryService) -> None:
    memory = AgentMemory.from_service(service, user_id="alice", session_id="put-sync")
    question = said("user", "I sail a blue canoe", "m-1")
    answer = said("assistant", "Nice canoe.", "m-2")
    for message in (question, question, answer, answer):  # every put retried once
        memory.put(message)
    # A copy with the same id and content (a step replayed from a saved context) too.
    memory.put(said("assistant", "Nice canoe.", "m-2"))
    assert texts(memory) == ["I sail a blue canoe", "Nice canoe."]
    assert memory.get_all()[0].additional_kwargs == {"id": "m-1"}  # the id round-trips
    assert memory.wait_for_consolidation(timeout=60)
    assert len(memory.manager.long_term.all_records()) == 1


async def test_an_async_put_again_is_stored_once(service: MemoryService) -> None:
    memory = AgentMemory.from_service(service, user_id="alice", session_id="put-async")
    batch = [said("user", "I row at dawn", "a-1"), said("assistant", "Early!", "a-2")]
    await memory.aput_messages(batch)
    await memory.aput_messages(batch)  # the retried batch
    assert [str(m.content) for m in await memory.aget_all()] == ["I row at dawn", "Early!"]
    await memory.aput(said("user", "And at dusk", "a-3"))
    await memory.aput(said("user", "And at dusk", "a-3"))
    assert len(await memory.aget_all()) == 3
    assert await memory.await_consolidation(timeout=60)


def test_an_id_put_again_with_other_content_is_refused(service: MemoryService) -> None:
    memory = AgentMemory.from_service(service, user_id="alice", session_id="put-conflict")
    memory.put(said("user", "I sail a blue canoe", "m-1"))
    with pytest.raises(TurnConflictError, match="already used"):
        memory.put(said("user", "I sail a red kayak", "m-1"))
    with pytest.raises(TurnConflictError):
        asyncio.run(memory.aput(said("user", "I sail a red kayak", "m-1")))
    assert texts(memory) == ["I sail a blue canoe"]


def test_messages_without_an_id_are_appended_each_time(service: MemoryService) -> None:
    memory = AgentMemory.from_service(service, user_id="alice", session_id="put-no-id")
    message = said("user", "yes", None)
    memory.put(message)
    memory.put(message)  # no id: two answers "yes" are two messages
    assert texts(memory) == ["yes", "yes"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_put_retried_after_its_turn_was_counted_counts_it_once(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The put's turn was counted in working memory, then marking it done failed: the
    retried put stores the message once and counts the turn once."""
    memory = AgentMemory.from_service(service, user_id="alice", session_id=f"put-count-{mode}")
    store = service.sessions
    real = store.set_state
    lost: list[str] = []

    def set_state(session_id: str, key: str, value: dict[str, Any]) -> None:
        if key.startswith("turn:") and value.get("settled") and not lost:
            lost.append(key)
            raise ConnectionError("the store went away")
        real(session_id, key, value)

    async def aset_state(session_id: str, key: str, value: dict[str, Any]) -> None:
        await asyncio.to_thread(set_state, session_id, key, value)

    monkeypatch.setattr(store, "set_state", set_state)
    monkeypatch.setattr(store, "aset_state", aset_state)
    question = said("user", "I sail a blue canoe", "m-1")
    put = memory.put if mode == "sync" else (lambda m: asyncio.run(memory.aput(m)))
    with pytest.raises(ConnectionError):
        put(question)
    put(question)  # the retry
    put(question)
    assert texts(memory) == ["I sail a blue canoe"]
    memory.manager.working.reload()
    assert memory.manager.working.turn == 1
