"""Unit (offline): model adapter, RunnableWithMessageHistory, store filters, tool options."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core._api.deprecation import LangChainDeprecationWarning
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from langgraph.store.base import MatchCondition
from pydantic import BaseModel, Field

from agentmem.errors import ConfigurationError, InvalidValueError, LLMOutputError
from agentmem.llm import complete_json
from agentmem.stores.memory import InMemorySessionStore
from langchain_agentmem import AgentMemoryChatHistory, LangChainChatModel, create_memory_tools
from langchain_agentmem._store_filters import matches_filter, matches_namespace


class Fact(BaseModel):
    subject: str
    fact: str


def fake(*replies: str) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(r) for r in replies]))


def test_chat_adapter_completes_and_prompts_for_json_without_structured_output() -> None:
    llm = LangChainChatModel(fake("not json", '{"subject": "alice", "fact": "tabs"}'))
    assert not llm.supports_structured_output
    assert complete_json(llm, [{"role": "user", "content": "extract"}], Fact) == Fact(
        subject="alice", fact="tabs"
    )


class StructuredFake(GenericFakeChatModel):
    """A fake whose with_structured_output returns scripted objects (like a tool-calling model)."""

    outputs: list[Any] = Field(default_factory=list)

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        outputs = self.outputs
        return RunnableLambda(lambda _: outputs.pop(0))


def test_chat_adapter_uses_structured_output_and_retries_then_reports() -> None:
    model = StructuredFake(messages=iter([]), outputs=[None, {"subject": "a", "fact": "b"}])
    llm = LangChainChatModel(model)
    assert llm.supports_structured_output
    assert llm.complete_json([{"role": "user", "content": "x"}], Fact) == Fact(
        subject="a", fact="b"
    )
    bad = LangChainChatModel(StructuredFake(messages=iter([]), outputs=[{"x": 1}] * 3))
    with pytest.raises(LLMOutputError) as info:
        bad.complete_json([{"role": "user", "content": "x"}], Fact, max_retries=2)
    assert info.value.attempts == 3


async def test_chat_adapter_async() -> None:
    llm = LangChainChatModel(fake("pong"))
    assert await llm.acomplete([{"role": "user", "content": "ping"}]) == "pong"


def test_chat_adapter_rejects_non_models() -> None:
    with pytest.raises(ConfigurationError, match="BaseChatModel"):
        LangChainChatModel(object())  # type: ignore[arg-type]


def test_works_in_runnable_with_message_history() -> None:
    seen: list[list[BaseMessage]] = []
    model = fake("Hi Alice.", "Your name is Alice.")

    def record(messages: Any) -> Any:
        seen.append(messages.to_messages())
        return messages

    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    store = InMemorySessionStore()
    with pytest.warns(LangChainDeprecationWarning, match="RunnableWithMessageHistory"):
        chain = RunnableWithMessageHistory(
            prompt | RunnableLambda(record) | model,
            AgentMemoryChatHistory.factory(store=store),
            input_messages_key="question",
            history_messages_key="history",
        )
    config = {"configurable": {"session_id": "s1"}}
    chain.invoke({"question": "I am Alice."}, config)  # type: ignore[arg-type]
    chain.invoke({"question": "What is my name?"}, config)  # type: ignore[arg-type]
    assert [m.text for m in seen[1]] == ["I am Alice.", "Hi Alice.", "What is my name?"]
    full = AgentMemoryChatHistory("s1", store=store).get_full_messages()
    assert [m.type for m in full] == ["human", "ai", "human", "ai"]


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"n": 3}, True),
        ({"n": {"$gt": 2, "$lte": 3}}, True),
        ({"n": {"$ne": 3}}, False),
        ({"tags": ["a", "b"]}, True),
        ({"tags": ["a"]}, False),
        ({"meta": {"k": "v"}}, True),
        ({"meta": {"k": "w"}}, False),
        ({"missing": {"$gt": 1}}, False),
        ({"s": {"$gt": 1}}, False),
    ],
)
def test_value_filters_follow_langgraph_semantics(flt: dict[str, Any], expected: bool) -> None:
    value = {"n": 3, "tags": ["a", "b"], "meta": {"k": "v"}, "s": "text"}
    assert matches_filter(value, flt) is expected


def test_namespace_conditions_treat_star_as_wildcard_only_in_conditions() -> None:
    assert matches_namespace(MatchCondition("prefix", ("*", "b")), ("a", "b", "c"))
    assert matches_namespace(MatchCondition("suffix", ("c",)), ("a", "b", "c"))
    assert not matches_namespace(MatchCondition("prefix", ("a", "b")), ("a", "*"))
    assert not matches_namespace(MatchCondition("prefix", ("a", "b", "c", "d")), ("a", "b"))
    with pytest.raises(InvalidValueError, match="match type"):
        matches_namespace(MatchCondition("infix", ("a",)), ("a",))  # type: ignore[arg-type]


def test_tool_options_are_validated() -> None:
    with pytest.raises(ConfigurationError, match="permissions"):
        create_memory_tools(object(), permissions="admin")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="write memory"):
        create_memory_tools(object(), permissions="read_only", include=["save_memory"])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="unknown memory tool"):
        create_memory_tools(object(), include=["drop_everything"])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="MemoryService"):
        create_memory_tools(object(), permissions="read_only")  # type: ignore[arg-type]
