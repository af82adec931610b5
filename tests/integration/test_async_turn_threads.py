"""Where an async turn runs: whole on one of agentmem's worker threads when every part has
its own blocking face (SQLite or in-memory sessions, Qdrant Edge, the local model, no
language model), stepping on the event loop otherwise (a language model's async client may
be its only face)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentmem import MemoryService
from agentmem.types import Message
from tests.fakes import HashingEmbedder, ScriptedChatModel

pytestmark = pytest.mark.integration


def threads_of_a_turn(service: MemoryService) -> list[str]:
    """The threads the session store's appends ran on during one async turn."""
    seen: list[str] = []
    store = service.sessions
    real = store.append

    def append(session_id: str, messages: Sequence[Message]) -> list[int]:
        seen.append(threading.current_thread().name)
        return real(session_id, messages)

    store.append = append  # type: ignore[method-assign]
    mem = service.manager("alice", "s1")

    async def turn() -> None:
        await mem.agather_context("What do I keep in the shed?", 500)
        await mem.aprocess_interaction("What do I keep in the shed?", "Your bike.")
        await mem.aprocess_interaction("And the car?", "In the garage.", turn_id="t-2")

    asyncio.run(turn())
    return seen


def test_an_async_turn_on_blocking_parts_runs_on_one_worker_thread(tmp_path: Path) -> None:
    with MemoryService.open(tmp_path / "home", embedder=HashingEmbedder(64)) as service:
        seen = threads_of_a_turn(service)
        assert len(seen) == 2
        assert all(name.startswith("agentmem-op") for name in seen), seen
        assert [m.message.content for m in service.sessions.read("s1")] == [
            "What do I keep in the shed?",
            "Your bike.",
            "And the car?",
            "In the garage.",
        ]


def test_an_async_turn_with_a_language_model_steps_on_the_event_loop(tmp_path: Path) -> None:
    llm = ScriptedChatModel(default='{"memories": []}')
    with MemoryService.open(tmp_path / "home", embedder=HashingEmbedder(64), llm=llm) as service:
        seen = threads_of_a_turn(service)
        assert len(seen) == 2
        assert not any(name.startswith("agentmem-op") for name in seen), seen
