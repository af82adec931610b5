"""Shared builders for the LlamaIndex tests: memories on a temp home, scripted LLMs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM

from agentmem import TokenCounter
from llamaindex_agentmem import AgentMemory
from llamaindex_agentmem._convert import to_agentmem_many
from tests.fakes import HashingEmbedder

DIM = 64


def open_memory(home: Path, session_id: str = "s1", **options: Any) -> AgentMemory:
    """An AgentMemory on ``home`` with the deterministic hashing embedder."""
    options.setdefault("consolidate_every_tokens", None)
    return AgentMemory.from_defaults(
        user_id="alice",
        session_id=session_id,
        home=home,
        embed_model=HashingEmbedder(DIM),
        **options,
    )


def chat_tokens(messages: Sequence[ChatMessage], model: str = "gpt-4o") -> int:
    """Exact chat-format tokens of LlamaIndex messages (tool calls included)."""
    return TokenCounter(model).count_messages(to_agentmem_many(messages))


def weather(city: str) -> str:
    """The weather of a city."""
    return f"Sunny and 21 degrees in {city}"


def weather_llm() -> MockFunctionCallingLLM:
    """A function-calling LLM: calls ``weather`` for the city in the question, then answers
    with the tool result."""

    def respond(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
        last = messages[-1]
        if last.role == MessageRole.TOOL:
            return ChatMessage(role="assistant", content=f"Forecast: {last.content}.")
        question = last.content or ""
        city = question.rstrip("?").split()[-1]
        call = ToolCallBlock(
            tool_call_id=f"call-{city}", tool_name="weather", tool_kwargs={"city": city}
        )
        return ChatMessage(role="assistant", blocks=[call])

    return MockFunctionCallingLLM(response_generator=respond)


def extraction(*contents: str) -> str:
    """An agentmem extraction reply storing ``contents`` as semantic facts."""
    items = [
        {"content": c, "memory_type": "semantic", "subtype": "fact", "importance": 0.8}
        for c in contents
    ]
    return json.dumps({"memories": items})
