"""Adapters from LlamaIndex models to agentmem's protocols.

* :class:`LlamaIndexChatModel` wraps any LlamaIndex ``LLM`` as an agentmem
  :class:`~agentmem.llm.StructuredChatModel` (summaries, memory extraction, conflict
  judging). JSON extraction uses the LLM's own ``structured_predict`` (function calling)
  when the model supports function calling, and agentmem's validated JSON loop with bounded
  retries otherwise, or when structured prediction fails.
* :func:`as_embedder` wraps any LlamaIndex ``BaseEmbedding`` (in a
  :class:`~llamaindex_agentmem.embeddings.LlamaIndexEmbedder`) and passes agentmem embedders
  through.

Example:
    >>> from llama_index.core.llms import MockLLM
    >>> model = LlamaIndexChatModel(MockLLM())
    >>> model.complete([{"role": "user", "content": "hello"}])  # MockLLM echoes the prompt
    'user: hello\\nassistant: '
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM, ChatMessage
from llama_index.core.prompts import ChatPromptTemplate
from pydantic import BaseModel, ValidationError

from agentmem import ChatModel, Embedder, acomplete_json, complete_json
from agentmem.errors import ConfigurationError
from agentmem.integration import PlainChatModel
from agentmem.types import Message
from llamaindex_agentmem._convert import from_agentmem
from llamaindex_agentmem.embeddings import LlamaIndexEmbedder

__all__ = ["LlamaIndexChatModel", "as_chat_model", "as_embedder"]

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)


def _chat_messages(messages: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    return [from_agentmem(Message.from_dict(m)) for m in messages]


class LlamaIndexChatModel:
    """Any LlamaIndex ``LLM`` as an agentmem chat model.

    Args:
        llm: The LlamaIndex LLM (``OpenAI``, ``Ollama``, ``MockLLM``, ...).
        structured: Use ``llm.structured_predict`` for JSON extraction: ``None`` (default)
            when the model supports function calling, ``True`` always, ``False`` never.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> LlamaIndexChatModel(MockLLM()).structured
        False
    """

    def __init__(self, llm: LLM, *, structured: bool | None = None) -> None:
        if not isinstance(llm, LLM):
            msg = f"llm must be a llama_index LLM, got {type(llm).__name__}"
            raise ConfigurationError(msg)
        self.llm = llm
        if structured is None:
            structured = bool(llm.metadata.is_function_calling_model)
        self.structured = structured

    def __repr__(self) -> str:
        return f"LlamaIndexChatModel({type(self.llm).__name__})"

    def complete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The LLM's reply to OpenAI-style ``messages`` (through ``llm.chat``)."""
        response = self.llm.chat(_chat_messages(messages))
        return response.message.content or ""

    async def acomplete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """Async twin of :meth:`complete` (through ``llm.achat``)."""
        response = await self.llm.achat(_chat_messages(messages))
        return response.message.content or ""

    def complete_json(
        self, messages: Sequence[Mapping[str, Any]], schema: type[ModelT], *, max_retries: int = 2
    ) -> ModelT:
        """The reply as a validated ``schema`` (structured prediction, else a JSON loop)."""
        if self.structured:
            try:
                prompt = ChatPromptTemplate(message_templates=_chat_messages(messages))
                return _checked(self.llm.structured_predict(schema, prompt), schema)
            except (ValidationError, ValueError, TypeError) as exc:
                logger.info("structured_predict failed (%s); using the JSON loop", exc)
        return complete_json(PlainChatModel(self), messages, schema, max_retries=max_retries)

    async def acomplete_json(
        self, messages: Sequence[Mapping[str, Any]], schema: type[ModelT], *, max_retries: int = 2
    ) -> ModelT:
        """Async twin of :meth:`complete_json`."""
        if self.structured:
            try:
                prompt = ChatPromptTemplate(message_templates=_chat_messages(messages))
                return _checked(await self.llm.astructured_predict(schema, prompt), schema)
            except (ValidationError, ValueError, TypeError) as exc:
                logger.info("astructured_predict failed (%s); using the JSON loop", exc)
        return await acomplete_json(PlainChatModel(self), messages, schema, max_retries=max_retries)


def _checked(result: object, schema: type[ModelT]) -> ModelT:
    if isinstance(result, schema):
        return result
    return schema.model_validate(result)


def as_chat_model(llm: LLM | ChatModel | None) -> ChatModel | None:
    """A LlamaIndex ``LLM`` wrapped in :class:`LlamaIndexChatModel`; agentmem models as is.

    Example:
        >>> as_chat_model(None) is None
        True
    """
    if llm is None or isinstance(llm, LlamaIndexChatModel):
        return llm
    if isinstance(llm, LLM):
        return LlamaIndexChatModel(llm)
    if isinstance(llm, ChatModel):
        return llm
    msg = f"llm must be a llama_index LLM or an agentmem ChatModel, got {type(llm).__name__}"
    raise ConfigurationError(msg)


def as_embedder(embed_model: BaseEmbedding | Embedder | None) -> Embedder | None:
    """A LlamaIndex ``BaseEmbedding`` wrapped for agentmem; agentmem embedders as is.

    Example:
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> as_embedder(MockEmbedding(embed_dim=8)).dimension
        8
    """
    if embed_model is None or not isinstance(embed_model, BaseEmbedding):
        return embed_model
    return LlamaIndexEmbedder(embed_model)
