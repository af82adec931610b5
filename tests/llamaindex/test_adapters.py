"""LlamaIndex LLM and embedding adapters."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, ToolCallBlock
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from pydantic import BaseModel

from agentmem import ChatModel, StructuredChatModel, complete_json
from agentmem.errors import ConfigurationError, LLMOutputError
from llamaindex_agentmem import LlamaIndexChatModel
from llamaindex_agentmem.adapters import as_chat_model, as_embedder
from tests.fakes import HashingEmbedder


class Fact(BaseModel):
    subject: str
    fact: str


class ScriptedLLM(MockLLM):
    """A non-function-calling LLM replaying scripted chat replies; records prompts."""

    def __init__(self, replies: Sequence[str]) -> None:
        super().__init__()
        self._replies = list(replies)
        self._prompts: list[list[ChatMessage]] = []

    def chat(self, messages: Sequence[ChatMessage], **_: Any) -> ChatResponse:
        self._prompts.append(list(messages))
        return ChatResponse(message=ChatMessage(role="assistant", content=self._replies.pop(0)))

    async def achat(self, messages: Sequence[ChatMessage], **kw: Any) -> ChatResponse:
        return self.chat(messages, **kw)


def test_wraps_any_llm_as_a_structured_chat_model() -> None:
    model = LlamaIndexChatModel(ScriptedLLM(["hello back"]))
    assert isinstance(model, ChatModel)
    assert isinstance(model, StructuredChatModel)
    assert model.complete([{"role": "user", "content": "hello"}]) == "hello back"


async def test_async_completion_goes_through_achat() -> None:
    llm = ScriptedLLM(["async reply"])
    reply = await LlamaIndexChatModel(llm).acomplete(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    )
    assert reply == "async reply"
    assert [m.role.value for m in llm._prompts[0]] == ["system", "user"]


def test_json_loop_retries_invalid_output_for_plain_llms() -> None:
    llm = ScriptedLLM(["not json", '{"subject": "alice", "fact": "writes Python"}'])
    model = LlamaIndexChatModel(llm)
    assert model.structured is False
    result = complete_json(model, [{"role": "user", "content": "extract"}], Fact)
    assert result == Fact(subject="alice", fact="writes Python")
    assert len(llm._prompts) == 2  # the error was sent back once


def test_json_loop_gives_up_after_bounded_retries() -> None:
    model = LlamaIndexChatModel(ScriptedLLM(["nope", "nope", "nope"]))
    with pytest.raises(LLMOutputError):
        complete_json(model, [{"role": "user", "content": "extract"}], Fact, max_retries=2)


def _fact_tool_caller(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    tool = kwargs["tools"][0]
    call = ToolCallBlock(
        tool_call_id="c1",
        tool_name=tool.metadata.name,
        tool_kwargs={"subject": "bob", "fact": "likes {braces}"},
    )
    return ChatMessage(role="assistant", blocks=[call])


def test_function_calling_llms_use_structured_predict() -> None:
    llm = MockFunctionCallingLLM(response_generator=_fact_tool_caller)
    model = LlamaIndexChatModel(llm)
    assert model.structured is True
    messages = [{"role": "user", "content": 'Extract from {"json": "like text"}'}]
    assert model.complete_json(messages, Fact) == Fact(subject="bob", fact="likes {braces}")


async def test_async_structured_predict() -> None:
    model = LlamaIndexChatModel(MockFunctionCallingLLM(response_generator=_fact_tool_caller))
    result = await model.acomplete_json([{"role": "user", "content": "extract"}], Fact)
    assert result.subject == "bob"


def test_structured_failure_falls_back_to_the_json_loop() -> None:
    def no_tool_call(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
        return ChatMessage(role="assistant", content=json.dumps({"subject": "c", "fact": "d"}))

    model = LlamaIndexChatModel(MockFunctionCallingLLM(response_generator=no_tool_call))
    assert model.complete_json([{"role": "user", "content": "x"}], Fact) == Fact(
        subject="c", fact="d"
    )


def test_rejects_what_is_not_an_llm() -> None:
    with pytest.raises(ConfigurationError, match="llama_index LLM"):
        LlamaIndexChatModel(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="ChatModel"):
        as_chat_model(42)  # type: ignore[arg-type]


def test_embedders_are_adapted_or_passed_through() -> None:
    wrapped = as_embedder(MockEmbedding(embed_dim=8))
    assert wrapped is not None
    assert wrapped.dimension == 8
    assert len(wrapped.embed_query("hello")) == 8
    ours = HashingEmbedder(16)
    assert as_embedder(ours) is ours
