"""Chat model adapter for the OpenAI SDK and any OpenAI-compatible server.

Works with OpenAI and with servers that speak the chat-completions API (vLLM, llama.cpp
server, Ollama, LiteLLM, ...) through ``base_url``. Needs the optional dependency:
``pip install 'tiered-agentmem[openai]'``.

Example:
    >>> from agentmem.llm.openai import OpenAIChatModel
    >>> llm = OpenAIChatModel("qwen2.5:7b", base_url="http://localhost:11434/v1", api_key="unused")
    >>> llm  # no client is built (and nothing is sent) until the first call
    OpenAIChatModel(model='qwen2.5:7b', base_url='http://localhost:11434/v1')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel

from agentmem._sansio import Program, async_twin, twin
from agentmem._util.checks import check_optional_int
from agentmem._util.openai_common import OpenAIClientOwner, check_number
from agentmem.errors import LLMResponseError
from agentmem.llm.base import _as_dicts, complete_json_program

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIChatModel"]

ModelT = TypeVar("ModelT", bound=BaseModel)


class OpenAIChatModel(OpenAIClientOwner):
    """A :class:`~agentmem.llm.ChatModel` backed by the OpenAI chat-completions API.

    Clients are built on first use from the options below (and, as the SDK does, from
    ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``), or injected. ``base_url``, ``api_key``,
    ``timeout`` and ``max_retries`` configure only clients built here; an injected client
    keeps its own settings. With only ``client`` injected, async calls run it in a thread.

    Args:
        model: The model name the server knows.
        client: An ``openai.OpenAI`` to use for sync calls.
        async_client: An ``openai.AsyncOpenAI`` to use for async calls.
        base_url: Endpoint of an OpenAI-compatible server, e.g. ``http://localhost:8000/v1``.
        api_key: API key; local servers accept any placeholder (``"unused"``).
        timeout: Seconds per HTTP request before :class:`~agentmem.errors.LLMTimeoutError`.
        max_retries: Transport retries the SDK makes (429, 5xx, connection errors, timeouts).
        temperature: Sampling temperature; ``None`` leaves it to the server.
        max_tokens: Cap on generated tokens; ``None`` leaves it to the server.
        json_mode: Send ``response_format={"type": "json_object"}`` from :meth:`complete_json`.
        extra_body: Extra JSON fields for every request (server-specific options).

    Example:
        >>> llm = OpenAIChatModel("gpt-4o-mini", api_key="sk-...", timeout=30.0)
        >>> llm.model, llm.json_mode
        ('gpt-4o-mini', True)
    """

    _name: ClassVar[str] = "OpenAIChatModel"

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        client: openai.OpenAI | None = None,
        async_client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        json_mode: bool = True,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        check_number("timeout", timeout, minimum=0.0, strict=True)
        if temperature is not None:
            check_number("temperature", temperature, minimum=0.0, strict=False)
        check_optional_int(max_tokens, "max_tokens", expected="must be a positive int or None")
        super().__init__(model, client, async_client, base_url, api_key, timeout, max_retries)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.json_mode = json_mode
        self.extra_body: dict[str, Any] = dict(extra_body or {})

    # -- ChatModel -------------------------------------------------------------------------

    @twin
    def complete(self, messages: Sequence[Mapping[str, Any]]) -> Program[str]:
        """The first choice's text ("" when the model returned no content).

        Raises:
            LLMTimeoutError: No answer within ``timeout`` (after the SDK's retries).
            LLMConnectionError: The endpoint could not be reached.
            LLMResponseError: The server answered an error status or a malformed body.
        """
        return (yield from self._completion(messages, json_mode=False))

    acomplete = async_twin(complete)

    @twin
    def complete_json(
        self, messages: Sequence[Mapping[str, Any]], schema: type[ModelT], *, max_retries: int = 2
    ) -> Program[ModelT]:
        """Validated JSON completion (see :func:`agentmem.llm.complete_json`), in JSON mode.

        Example:
            >>> from pydantic import BaseModel
            >>> class Title(BaseModel):
            ...     title: str
            >>> ask = [{"role": "user", "content": "Title this chat"}]
            >>> llm.complete_json(ask, Title)  # doctest: +SKIP
            Title(title='...')
        """
        json_mode = _JSONMode(self)
        return (
            yield from complete_json_program(json_mode, messages, schema, max_retries=max_retries)
        )

    acomplete_json = async_twin(complete_json)

    # -- internals -------------------------------------------------------------------------

    def _completion(
        self, messages: Sequence[Mapping[str, Any]], *, json_mode: bool
    ) -> Program[str]:
        request = self._request(messages, json_mode=json_mode)
        response = yield from self._send(_chat_completions, request)
        return self._content(response)

    def _request(self, messages: Sequence[Mapping[str, Any]], *, json_mode: bool) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": _as_dicts(messages)}
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        if json_mode:
            request["response_format"] = {"type": "json_object"}
        if self.extra_body:
            request["extra_body"] = dict(self.extra_body)
        return request

    def _content(self, response: Any) -> str:
        choices = getattr(response, "choices", None)
        if not choices:
            msg = f"{self._where()} returned a response without choices; is it OpenAI-compatible?"
            raise LLMResponseError(msg)
        content = choices[0].message.content
        return content if isinstance(content, str) else ""


class _JSONMode:
    """A view of an :class:`OpenAIChatModel` whose completions request JSON mode."""

    def __init__(self, llm: OpenAIChatModel) -> None:
        self._llm = llm

    @twin
    def complete(self, messages: Sequence[Mapping[str, Any]]) -> Program[str]:
        return (yield from self._llm._completion(messages, json_mode=self._llm.json_mode))

    acomplete = async_twin(complete)


def _chat_completions(client: Any) -> Any:
    return client.chat.completions.create
