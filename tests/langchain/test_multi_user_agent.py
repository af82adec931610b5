"""Integration: one ``create_agent`` agent, one ``AgentMemoryMiddleware(service)``, many users.

The LangChain docs' own pattern: ``create_agent(..., context_schema=Ctx)``, then
``agent.invoke(..., context=Ctx(user_id=...), config={"configurable": {"thread_id": ...}})``.
A scripted, tool-capable chat model records every request it receives, so the tests check
what the model really saw: each request holds its own user's memories and no one else's,
tool results come from the calling user's memories, and every turn lands once in its own
``thread_id`` session.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from agentmem import MemoryService
from agentmem.errors import ConfigurationError, InvalidSessionIdError
from langchain_agentmem import AgentMemoryMiddleware, AgentMemoryStore, create_memory_tools
from tests.fakes import HashingEmbedder

pytestmark = pytest.mark.integration

USERS = [f"u{i}x" for i in range(10)]


@dataclass
class Ctx:
    user_id: str


class ToolScriptModel(BaseChatModel):
    """Replies by rule, never by shared script, so concurrent runs cannot take each
    other's replies: "remember: X" -> save_memory(X); another question -> search_memory;
    a tool result -> a final answer. Records every request (thread-safe)."""

    requests: list[list[BaseMessage]] = Field(default_factory=list)
    lock: Any = Field(default_factory=threading.Lock, exclude=True)

    @property
    def _llm_type(self) -> str:
        return "tool-script"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolScriptModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        with self.lock:
            self.requests.append(list(messages))
        last = messages[-1]
        if isinstance(last, HumanMessage):
            text = last.text
            if text.startswith("remember: "):
                call = ("save_memory", {"content": text.removeprefix("remember: ")})
            else:
                call = ("search_memory", {"query": text})
            reply = AIMessage(
                "",
                tool_calls=[
                    {"id": f"call_{uuid.uuid4().hex[:8]}", "name": call[0], "args": call[1]}
                ],
            )
        else:
            reply = AIMessage(f"done: {last.text[:40]}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def pet(user: str) -> str:
    return f"{user} keeps a pet called {user[::-1]}zorp"


def city(user: str) -> str:
    return f"{user} lives in the city of {user.upper()}burg"


def turns(user: str) -> list[tuple[str, str]]:
    """(thread_id, text) of each turn: two in one thread, one in another."""
    return [
        (f"{user}-t1", f"remember: {pet(user)}"),
        (f"{user}-t1", f"where do I live and which pet do I keep? I am {user}"),
        (f"{user}-t2", f"what is my city? I am {user}"),
    ]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    with MemoryService.open(
        tmp_path, embedder=HashingEmbedder(256), consolidate_every_tokens=None
    ) as svc:  # long-term memory holds only what the tools save
        for user in USERS:
            svc.manager(user, f"{user}-seed").remember(city(user))
        yield svc


def build_agent(service: MemoryService, model: ToolScriptModel, *, saver: bool = True) -> Any:
    return create_agent(
        model,
        tools=create_memory_tools(service),
        system_prompt="You are a helpful assistant with long-term memory.",
        middleware=[AgentMemoryMiddleware(service, max_tokens=2000, consolidate="never")],
        context_schema=Ctx,
        checkpointer=InMemorySaver() if saver else None,
    )


def owner_of(request: list[BaseMessage]) -> str:
    first = next(m for m in request if isinstance(m, HumanMessage))
    return next(u for u in USERS if u in first.text)


def check(service: MemoryService, model: ToolScriptModel) -> None:
    assert len(model.requests) == 2 * 3 * len(USERS)  # tool call + answer per turn
    for request in model.requests:
        user = owner_of(request)
        others = [u for u in USERS if u != user]
        system = request[0]
        assert isinstance(system, SystemMessage)
        seen = "\n".join(m.text for m in request)
        assert not any(o in seen for o in others), (user, seen)
        if any("where do I live" in m.text for m in request if isinstance(m, HumanMessage)):
            assert city(user) in system.text  # recalled by the middleware
    for user in USERS:
        for thread in (f"{user}-t1", f"{user}-t2"):
            log = service.manager(user, thread).short_term.get_log()
            asked = [m.content for m in log if m.role == "user"]
            assert asked == [text for t, text in turns(user) if t == thread]
            assert len(log) == 2 * len(asked)  # question and final answer, once each
        contents = {r.content for r in service.long_term(user).all_records()}
        assert contents == {city(user), pet(user)}  # the tool saved in the caller's scope


def test_one_agent_serves_ten_users_from_threads(service: MemoryService) -> None:
    model = ToolScriptModel()
    agent = build_agent(service, model)

    def run(user: str) -> None:
        for thread, text in turns(user):
            out = agent.invoke(
                {"messages": [{"role": "user", "content": text}]},
                context=Ctx(user_id=user),
                config={"configurable": {"thread_id": thread}},
            )
            report = out["messages"][-1].response_metadata["agentmem"]
            assert (report["user_id"], report["session_id"]) == (user, thread)
            assert report["prompt_tokens"] <= 2000

    with ThreadPoolExecutor(10) as pool:
        list(pool.map(run, USERS))
    check(service, model)


async def test_one_agent_serves_ten_users_from_asyncio(service: MemoryService) -> None:
    model = ToolScriptModel()
    agent = build_agent(service, model)

    async def run(user: str) -> None:
        for thread, text in turns(user):
            await agent.ainvoke(
                {"messages": [{"role": "user", "content": text}]},
                context=Ctx(user_id=user),
                config={"configurable": {"thread_id": thread}},
            )

    await asyncio.gather(*(run(u) for u in USERS))
    check(service, model)


@pytest.mark.parametrize(
    ("context", "thread", "error", "names"),
    [
        (None, "t-1", ConfigurationError, "user_id"),
        ({"user_id": None}, "t-1", ConfigurationError, "user_id"),
        (Ctx(user_id=42), "t-1", ConfigurationError, "user_id"),  # type: ignore[arg-type]
        (Ctx(user_id=""), "t-1", ConfigurationError, "user_id"),
        (Ctx(user_id="alice"), "not a session id!", InvalidSessionIdError, "thread_id"),
        (Ctx(user_id="alice"), None, ConfigurationError, "thread_id"),
    ],
)
def test_bad_user_or_thread_is_a_clear_error_and_writes_nothing(
    service: MemoryService, context: Any, thread: str | None, error: type[Exception], names: str
) -> None:
    model = ToolScriptModel()
    # Without a thread_id LangGraph's checkpointer refuses the run itself; without a
    # checkpointer the middleware is the one that must refuse it.
    agent = build_agent(service, model, saver=thread is not None)
    before = {s: service.sessions.count(s) for s in service.sessions.sessions()}
    config = {"configurable": {"thread_id": thread}} if thread is not None else {}
    with pytest.raises(error) as info:
        agent.invoke(
            {"messages": [{"role": "user", "content": "remember: I like tea"}]},
            context=context,
            config=config,
        )
    assert names in str(info.value) or names == "thread_id"
    assert model.requests == []  # the model was never called
    after = {s: service.sessions.count(s) for s in service.sessions.sessions()}
    assert after == before


def test_a_single_manager_still_serves_a_script(tmp_path: Path) -> None:
    with MemoryService.open(
        tmp_path, embedder=HashingEmbedder(256), consolidate_every_tokens=None
    ) as svc:  # long-term memory holds only what the tools save
        manager = svc.manager("solo", "solo-1")
        manager.remember(city("solo"))
        model = ToolScriptModel()
        agent = create_agent(
            model,
            tools=create_memory_tools(manager),
            middleware=[AgentMemoryMiddleware(manager, max_tokens=2000, consolidate="never")],
        )
        agent.invoke({"messages": [{"role": "user", "content": "where do I live? solo"}]})
        assert city("solo") in model.requests[0][0].text
        assert [m.role for m in manager.short_term.get_log()] == ["user", "assistant"]


def test_langgraph_store_from_the_service_shares_its_store(service: MemoryService) -> None:
    store = AgentMemoryStore.from_service(service, fields=["text"])
    assert store.store is service.memory_store
    store.put(("u1x", "notes"), "n1", {"text": "the deploy runs on Fridays"})
    store.put(("u2x", "notes"), "n1", {"text": "the deploy runs on Mondays"})
    hits = store.search(("u1x",), query="when does the deploy run?")
    assert [h.value["text"] for h in hits] == ["the deploy runs on Fridays"]
    service.close()  # the service owns the store; the LangGraph store is only a view
