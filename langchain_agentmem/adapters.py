"""Adapters from LangChain models to agentmem's protocols.

* :class:`LangChainChatModel` makes any ``BaseChatModel`` an agentmem
  :class:`~agentmem.llm.StructuredChatModel` (summaries, consolidation, conflict judging).
  JSON completions use the model's ``with_structured_output`` when it supports it, and
  agentmem's validated JSON prompting with bounded retries otherwise.
* Embeddings: :class:`~langchain_agentmem.embeddings.LangChainEmbedder` (also built by
  :func:`embedder_from_langchain`, for discoverability).

Example:
    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> from langchain_core.messages import AIMessage
    >>> llm = LangChainChatModel(GenericFakeChatModel(messages=iter([AIMessage("hi")])))
    >>> llm.complete([{"role": "user", "content": "hello"}])
    'hi'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ValidationError

from agentmem import acomplete_json, complete_json
from agentmem.errors import ConfigurationError, LLMOutputError
from agentmem.integration import PlainChatModel
from agentmem.types import Message
from langchain_agentmem._convert import to_langchain
from langchain_agentmem.embeddings import LangChainEmbedder

__all__ = ["LangChainChatModel", "embedder_from_langchain", "to_langchain_messages"]

ModelT = TypeVar("ModelT", bound=BaseModel)


def to_langchain_messages(messages: Sequence[Mapping[str, Any]]) -> list[BaseMessage]:
    """OpenAI-style message dicts (or :class:`Message` objects) as LangChain messages."""
    out: list[BaseMessage] = []
    for item in messages:
        msg = item if isinstance(item, Message) else Message.from_dict(item)
        out.append(to_langchain(msg))
    return out


def embedder_from_langchain(embeddings: Embeddings, *, dimension: int | None = None) -> Any:
    """An agentmem ``Embedder`` over a LangChain ``Embeddings`` (a ``LangChainEmbedder``)."""
    return LangChainEmbedder(embeddings, dimension=dimension)


class LangChainChatModel:
    """Any LangChain ``BaseChatModel`` as an agentmem chat model.

    Args:
        model: The LangChain chat model.
        structured_output: ``"auto"`` uses ``with_structured_output`` when the model class
            implements it (tool calling or JSON mode), ``"never"`` always prompts for JSON.
    """

    def __init__(
        self, model: BaseChatModel, *, structured_output: Literal["auto", "never"] = "auto"
    ) -> None:
        if not isinstance(model, BaseChatModel):
            msg = f"model must be a langchain BaseChatModel, got {type(model).__name__}"
            raise ConfigurationError(msg)
        if structured_output not in ("auto", "never"):
            msg = f"structured_output must be 'auto' or 'never', got {structured_output!r}"
            raise ConfigurationError(msg)
        self.model = model
        self.structured_output = structured_output

    def __repr__(self) -> str:
        return f"LangChainChatModel({type(self.model).__name__})"

    @property
    def supports_structured_output(self) -> bool:
        """Whether the model class overrides ``with_structured_output`` or ``bind_tools``."""
        if self.structured_output == "never":
            return False
        cls = type(self.model)
        return (
            cls.with_structured_output is not BaseChatModel.with_structured_output
            or cls.bind_tools is not BaseChatModel.bind_tools
        )

    def complete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The model's reply text to OpenAI-style ``messages``."""
        return self.model.invoke(to_langchain_messages(messages)).text

    async def acomplete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """Async twin of :meth:`complete` (the model's own ``ainvoke``)."""
        return (await self.model.ainvoke(to_langchain_messages(messages))).text

    def complete_json(
        self, messages: Sequence[Mapping[str, Any]], schema: type[ModelT], *, max_retries: int = 2
    ) -> ModelT:
        """The reply validated as ``schema`` (structured output when supported)."""
        runnable = self._structured(schema)
        if runnable is None:
            return complete_json(PlainChatModel(self), messages, schema, max_retries=max_retries)
        prompt = to_langchain_messages(messages)
        last: Exception | None = None
        for _ in range(max_retries + 1):
            try:
                return _validated(runnable.invoke(prompt), schema)
            except (ValidationError, ValueError) as exc:
                last = exc
        raise _output_error(schema, max_retries, last)

    async def acomplete_json(
        self, messages: Sequence[Mapping[str, Any]], schema: type[ModelT], *, max_retries: int = 2
    ) -> ModelT:
        """Async twin of :meth:`complete_json`."""
        runnable = self._structured(schema)
        if runnable is None:
            return await acomplete_json(
                PlainChatModel(self), messages, schema, max_retries=max_retries
            )
        prompt = to_langchain_messages(messages)
        last: Exception | None = None
        for _ in range(max_retries + 1):
            try:
                return _validated(await runnable.ainvoke(prompt), schema)
            except (ValidationError, ValueError) as exc:
                last = exc
        raise _output_error(schema, max_retries, last)

    def _structured(self, schema: type[BaseModel]) -> Any:
        if not self.supports_structured_output:
            return None
        try:
            return self.model.with_structured_output(schema)
        except NotImplementedError:
            return None


def _validated(result: object, schema: type[ModelT]) -> ModelT:
    if isinstance(result, schema):
        return result
    if result is None:
        msg = "the model returned no structured output"
        raise ValueError(msg)
    return schema.model_validate(result)


def _output_error(schema: type[BaseModel], retries: int, last: Exception | None) -> LLMOutputError:
    msg = (
        f"structured output for {schema.__name__} was invalid after {retries + 1} attempts: {last}"
    )
    return LLMOutputError(msg, raw_output=repr(last)[:2000], attempts=retries + 1)
