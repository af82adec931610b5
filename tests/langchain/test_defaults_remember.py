"""Integration: the README's agent, with its own settings and nothing else, remembers.

``MemoryService.open(home)`` and ``AgentMemoryMiddleware(service, max_tokens=4000)`` as the
README writes them, the real local embedder, a real ``create_agent`` and LangChain's
``GenericFakeChatModel``: what a user says in one thread is recalled in that user's next
thread. By default every turn is consolidated in the background, so the test waits with
``service.wait_for_consolidation()``, as a script would; the old default (a 2,000-token
threshold) recalled nothing there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from agentmem import MemoryService
from langchain_agentmem import AgentMemoryMiddleware, AgentMemoryStore, create_memory_tools

pytestmark = pytest.mark.integration

SAID = "I indent Python with tabs, never spaces."
ASKED = "How should I indent my Python code?"


@dataclass
class Ctx:
    user_id: str


class StandInModel(GenericFakeChatModel):
    """The README's stand-in (tool calling accepted), recording every request it gets."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> StandInModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def readme_agent(service: MemoryService) -> tuple[Any, StandInModel]:
    """The README's agent, settings included."""
    model = StandInModel(messages=iter([AIMessage("Noted: tabs.")] * 10))
    agent = create_agent(
        model,
        tools=create_memory_tools(service),
        middleware=[AgentMemoryMiddleware(service, max_tokens=4000)],
        store=AgentMemoryStore.from_service(service, fields=["text"]),
        context_schema=Ctx,
        checkpointer=InMemorySaver(),
    )
    return agent, model


def ask(agent: Any, user: str, thread: str, text: str) -> dict[str, Any]:
    report: dict[str, Any] = agent.invoke(
        {"messages": [{"role": "user", "content": text}]},
        context=Ctx(user_id=user),
        config={"configurable": {"thread_id": thread}},
    )["messages"][-1].response_metadata["agentmem"]
    return report


def system_text(request: list[BaseMessage]) -> str:
    first = request[0]
    return first.text if isinstance(first, SystemMessage) else ""


def test_the_next_thread_recalls_what_the_user_said(tmp_path: Path) -> None:
    with MemoryService.open(tmp_path) as service:
        agent, model = readme_agent(service)
        assert ask(agent, "alice", "alice-1", SAID)["recalled"] == 0
        assert service.wait_for_consolidation(timeout=120)
        report = ask(agent, "alice", "alice-2", ASKED)
        assert report["session_id"] == "alice-2"
        assert report["recalled"] >= 1
        assert SAID in system_text(model.seen[-1])  # in the request the model saw
        # The same question from another user recalls none of alice's memories.
        assert ask(agent, "bob", "bob-1", ASKED)["recalled"] == 0
        assert SAID not in system_text(model.seen[-1])


async def test_the_async_agent_remembers_too(tmp_path: Path) -> None:
    async with MemoryService.open(tmp_path) as service:
        agent, model = readme_agent(service)
        for thread, text in (("alice-1", SAID), ("alice-2", ASKED)):
            await agent.ainvoke(
                {"messages": [{"role": "user", "content": text}]},
                context=Ctx(user_id="alice"),
                config={"configurable": {"thread_id": thread}},
            )
            assert await service.await_consolidation(timeout=120)
        assert SAID in system_text(model.seen[-1])


def test_the_old_default_threshold_did_not_remember(tmp_path: Path) -> None:
    # What the README's settings did before: a 2,000-token threshold, never reached by a
    # short conversation, so the next thread recalled nothing.
    with MemoryService.open(tmp_path, consolidate_every_tokens=2000) as service:
        agent, model = readme_agent(service)
        ask(agent, "alice", "alice-1", SAID)
        assert service.wait_for_consolidation(timeout=120)
        assert ask(agent, "alice", "alice-2", ASKED)["recalled"] == 0
        assert SAID not in system_text(model.seen[-1])
