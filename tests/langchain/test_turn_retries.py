"""Integration: the middleware records a retried or replayed turn once.

A real ``create_agent`` with LangChain's ``ModelRetryMiddleware``, a LangGraph checkpointer
(``InMemorySaver``) and a LangChain fake chat model, over SQLite sessions and Qdrant Edge
memories. The middleware names each turn by the LangGraph id of its user message, so:

* a model call that is retried after the middleware recorded the turn (a failure between
  the answer and the caller) records it once;
* a turn replayed from a checkpoint (time travel) records it once, keeping the first
  answer, even when the replay answers differently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    ModelRetryMiddleware,
)
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from agentmem import MemoryService
from langchain_agentmem import AgentMemoryMiddleware
from tests.fakes import HashingEmbedder
from tests.langchain.test_defaults_remember import Ctx, StandInModel

pytestmark = pytest.mark.integration

DIM = 64
SAID = "I indent Python with tabs, never spaces."


class LostReply(AgentMiddleware):
    """Outside the memory middleware: its first call fails after the model answered (and
    the memory middleware recorded the turn), as a dropped connection would."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = 0

    def loses(self, response: ModelResponse[Any]) -> bool:
        """Whether this reply is the one lost."""
        return not self.failed

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        response = handler(request)
        if self.loses(response):
            self.failed += 1
            raise ConnectionError("the reply was lost")
        return response

    async def awrap_model_call(self, request: ModelRequest[Any], handler: Any) -> Any:
        response = await handler(request)
        if self.loses(response):
            self.failed += 1
            raise ConnectionError("the reply was lost")
        return response


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    with MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM)) as service:
        yield service


def agent_with(service: MemoryService, *answers: str, outer: list[Any] | None = None) -> Any:
    model = StandInModel(messages=iter([AIMessage(a) for a in answers]))
    return create_agent(
        model,
        middleware=[*(outer or []), AgentMemoryMiddleware(service, max_tokens=2000)],
        context_schema=Ctx,
        checkpointer=InMemorySaver(),
    )


def config(thread: str, **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, **extra}}


def logged(service: MemoryService, thread: str) -> list[tuple[str, str]]:
    return [(m.message.role, m.message.content) for m in service.sessions.read(thread)]


def retrying() -> list[Any]:
    lost = LostReply()
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False)
    return [retry, lost]


def test_a_retried_model_call_records_the_turn_once(service: MemoryService) -> None:
    outer = retrying()
    agent = agent_with(service, "Noted: tabs.", "Noted: tabs.", outer=outer)
    result = agent.invoke(
        {"messages": [{"role": "user", "content": SAID}]},
        context=Ctx(user_id="alice"),
        config=config("alice-1"),
    )
    assert outer[1].failed == 1  # the first call failed after the turn was recorded
    assert result["messages"][-1].text == "Noted: tabs."
    assert logged(service, "alice-1") == [("user", SAID), ("assistant", "Noted: tabs.")]
    assert service.wait_for_consolidation(timeout=60)
    assert len(service.long_term("alice").all_records()) == 1


async def test_a_retried_async_model_call_records_the_turn_once(service: MemoryService) -> None:
    agent = agent_with(service, "Noted: tabs.", "Noted: tabs.", outer=retrying())
    await agent.ainvoke(
        {"messages": [{"role": "user", "content": SAID}]},
        context=Ctx(user_id="alice"),
        config=config("alice-async"),
    )
    assert logged(service, "alice-async") == [("user", SAID), ("assistant", "Noted: tabs.")]
    assert await service.await_consolidation(timeout=60)
    assert len(service.long_term("alice").all_records()) == 1


def test_a_turn_replayed_from_a_checkpoint_is_recorded_once(service: MemoryService) -> None:
    agent = agent_with(service, "Noted: tabs.", "Tabs it is.", "Tabs, then.")
    agent.invoke(
        {"messages": [{"role": "user", "content": SAID}]},
        context=Ctx(user_id="alice"),
        config=config("alice-2"),
    )
    # The checkpoint taken before the model answered: replaying from it runs the model
    # again on the same user message (same LangGraph id), and it answers differently.
    before_model = next(
        s for s in agent.get_state_history(config("alice-2")) if s.next == ("model",)
    )
    replayed = agent.invoke(None, context=Ctx(user_id="alice"), config=before_model.config)
    assert replayed["messages"][-1].text == "Tabs it is."
    assert logged(service, "alice-2") == [("user", SAID), ("assistant", "Noted: tabs.")]
    # A new turn (a new user message) is recorded as usual.
    agent.invoke(
        {"messages": [{"role": "user", "content": "And for YAML?"}]},
        context=Ctx(user_id="alice"),
        config=config("alice-2"),
    )
    assert logged(service, "alice-2")[2:] == [
        ("user", "And for YAML?"),
        ("assistant", "Tabs, then."),
    ]


def test_a_user_message_with_a_long_id_is_recorded_once_too(service: MemoryService) -> None:
    # Ids are the caller's to choose: one too long for a turn_id is hashed, not refused.
    agent = agent_with(service, "Noted: tabs.", "Noted: tabs.", outer=retrying())
    agent.invoke(
        {"messages": [HumanMessage(SAID, id="x" * 1000)]},
        context=Ctx(user_id="alice"),
        config=config("alice-3"),
    )
    assert logged(service, "alice-3") == [("user", SAID), ("assistant", "Noted: tabs.")]


def test_a_model_call_retried_after_recording_failed_records_the_new_answer(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recording the turn failed before its messages were stored (the store went away);
    the retried model call answers differently: the turn is recorded with that answer,
    not refused as a replay and lost."""
    store = service.sessions
    real = store.append
    failed: list[bool] = []

    def append(session_id: str, messages: Any, **kw: Any) -> Any:
        if not failed:
            failed.append(True)
            raise ConnectionError("the store went away")
        return real(session_id, messages, **kw)

    monkeypatch.setattr(store, "append", append)
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False)
    agent = agent_with(service, "Noted: tabs.", "Tabs it is.", outer=[retry])
    result = agent.invoke(
        {"messages": [{"role": "user", "content": SAID}]},
        context=Ctx(user_id="alice"),
        config=config("alice-4"),
    )
    assert failed == [True]
    assert result["messages"][-1].text == "Tabs it is."
    assert logged(service, "alice-4") == [("user", SAID), ("assistant", "Tabs it is.")]


class LostFinalReply(LostReply):
    """Loses the reply of the first model call that answers (not a tool call)."""

    def loses(self, response: ModelResponse[Any]) -> bool:
        final = response.result[-1]
        return not self.failed and isinstance(final, AIMessage) and not final.tool_calls


def test_a_streamed_tool_calling_turn_retried_and_replayed_is_recorded_once(
    service: MemoryService,
) -> None:
    """A turn of several model calls (a tool call, then the answer), streamed: the answer's
    call retried after the turn was recorded, then the answer replayed from its checkpoint,
    record the turn once."""

    @tool
    def shed_color() -> str:
        """The color of the user's shed."""
        return "blue"

    calls = AIMessage("", tool_calls=[{"name": "shed_color", "args": {}, "id": "call-1"}])
    model = StandInModel(
        messages=iter([calls, AIMessage("Blue."), AIMessage("Blue."), AIMessage("Navy.")])
    )
    lost = LostFinalReply()
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False)
    agent = create_agent(
        model,
        tools=[shed_color],
        middleware=[retry, lost, AgentMemoryMiddleware(service, max_tokens=2000)],
        context_schema=Ctx,
        checkpointer=InMemorySaver(),
    )
    ask = {"messages": [{"role": "user", "content": "What color is my shed?"}]}
    chunks = list(
        agent.stream(
            ask, context=Ctx(user_id="alice"), config=config("alice-5"), stream_mode="updates"
        )
    )
    assert chunks
    assert lost.failed == 1  # the answer's call failed after the turn was recorded
    said = [("user", "What color is my shed?"), ("assistant", "Blue.")]
    assert logged(service, "alice-5") == said
    answer_call = next(  # the checkpoint before the answer's model call (after the tool)
        s
        for s in agent.get_state_history(config("alice-5"))
        if s.next == ("model",) and len(s.values["messages"]) > 1
    )
    agent.invoke(None, context=Ctx(user_id="alice"), config=answer_call.config)  # "Navy."
    assert logged(service, "alice-5") == said
    assert service.wait_for_consolidation(timeout=60)
    assert len(service.long_term("alice").all_records()) == 1
