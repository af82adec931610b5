"""Chat model adapter for the OpenAI SDK and any OpenAI-compatible server.

Works with OpenAI and with servers that speak the chat-completions API (vLLM, llama.cpp
server, Ollama, LiteLLM, ...) through ``base_url``. Needs the optional dependency:
``pip install 'agentmem[openai]'``.

Example:
    >>> from agentmem.llm_openai import OpenAIChatModel
    >>> llm = OpenAIChatModel("qwen2.5:7b", base_url="http://localhost:11434/v1", api_key="unused")
    >>> llm  # no client is built (and nothing is sent) until the first call
    OpenAIChatModel(model='qwen2.5:7b', base_url='http://localhost:11434/v1')
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agentmem._async import run_in_executor
from agentmem._openai_errors import import_openai, map_openai_error, redact
from agentmem.errors import ConfigurationError, LLMError, LLMResponseError
from agentmem.llm import _as_dicts, acomplete_json, complete_json

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIChatModel"]

ModelT = TypeVar("ModelT", bound=BaseModel)

_DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIChatModel:
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
        if not isinstance(model, str) or not model.strip():
            msg = f"model must be a non-empty string, got {model!r}"
            raise ConfigurationError(msg)
        if (client is not None or async_client is not None) and (base_url or api_key):
            msg = "pass base_url/api_key to the injected client, not to OpenAIChatModel as well"
            raise ConfigurationError(msg)
        _check_number("timeout", timeout, minimum=0.0, strict=True)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            msg = f"max_retries must be an int >= 0, got {max_retries!r}"
            raise ConfigurationError(msg)
        if temperature is not None:
            _check_number("temperature", temperature, minimum=0.0, strict=False)
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            msg = f"max_tokens must be a positive int or None, got {max_tokens!r}"
            raise ConfigurationError(msg)
        self._openai: ModuleType = import_openai("OpenAIChatModel")
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.json_mode = json_mode
        self.extra_body: dict[str, Any] = dict(extra_body or {})
        self._base_url = base_url
        self._api_key = api_key
        self._client = client
        self._async_client = async_client
        self._owned: list[Any] = []  # clients built here, closed by close()/aclose()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def base_url(self) -> str:
        """The endpoint requests go to (never includes credentials)."""
        client = self._client or self._async_client
        if client is not None:
            return str(client.base_url)
        return self._base_url or os.environ.get("OPENAI_BASE_URL") or _DEFAULT_BASE_URL

    # -- ChatModel -------------------------------------------------------------------------

    def complete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The first choice's text ("" when the model returned no content).

        Raises:
            LLMTimeoutError: No answer within ``timeout`` (after the SDK's retries).
            LLMConnectionError: The endpoint could not be reached.
            LLMResponseError: The server answered an error status or a malformed body.
        """
        return self._complete(messages, json_mode=False)

    async def acomplete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """Async twin of :meth:`complete`."""
        return await self._acomplete(messages, json_mode=False)

    def complete_json(
        self, messages: Sequence[Mapping[str, Any]], schema: type[ModelT], *, max_retries: int = 2
    ) -> ModelT:
        """Validated JSON completion (see :func:`agentmem.llm.complete_json`), in JSON mode.

        Example:
            >>> from pydantic import BaseModel
            >>> class Title(BaseModel):
            ...     title: str
            >>> ask = [{"role": "user", "content": "Title this chat"}]
            >>> llm.complete_json(ask, Title)  # doctest: +SKIP
            Title(title='...')
        """
        return complete_json(_JSONMode(self), messages, schema, max_retries=max_retries)

    async def acomplete_json(
        self, messages: Sequence[Mapping[str, Any]], schema: type[ModelT], *, max_retries: int = 2
    ) -> ModelT:
        """Async twin of :meth:`complete_json`."""
        return await acomplete_json(_JSONMode(self), messages, schema, max_retries=max_retries)

    def close(self) -> None:
        """Close the sync HTTP client this object built (injected clients are left open).

        An async client built here needs :meth:`aclose`.
        """
        with self._lock:
            client = self._client if self._client in self._owned else None
            if client is not None:
                self._owned.remove(client)
                self._client = None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close every HTTP client this object built, sync and async."""
        with self._lock:
            owned, self._owned = self._owned, []
            self._client = None if self._client in owned else self._client
            self._async_client = None if self._async_client in owned else self._async_client
        for client in owned:
            if isinstance(client, self._openai.AsyncOpenAI):
                await client.close()
            else:
                client.close()

    # -- internals -------------------------------------------------------------------------

    def _complete(self, messages: Sequence[Mapping[str, Any]], *, json_mode: bool) -> str:
        request = self._request(messages, json_mode=json_mode)
        client = self._sync_client()
        try:
            response = client.chat.completions.create(**request)
        except (self._openai.OpenAIError, json.JSONDecodeError) as exc:
            raise self._map_error(exc, client) from exc
        return self._content(response)

    async def _acomplete(self, messages: Sequence[Mapping[str, Any]], *, json_mode: bool) -> str:
        if self._async_client is None and self._client is not None:
            return await run_in_executor(self._complete, messages, json_mode=json_mode)
        request = self._request(messages, json_mode=json_mode)
        client = self._get_async_client()
        try:
            response = await client.chat.completions.create(**request)
        except (self._openai.OpenAIError, json.JSONDecodeError) as exc:
            raise self._map_error(exc, client) from exc
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

    def _sync_client(self) -> openai.OpenAI:
        with self._lock:
            if self._client is None:
                if self._async_client is not None:
                    msg = "only async_client was injected; pass client= too for sync calls"
                    raise ConfigurationError(msg)
                self._client = self._build(self._openai.OpenAI)
            return self._client

    def _get_async_client(self) -> openai.AsyncOpenAI:
        with self._lock:
            if self._async_client is None:
                self._async_client = self._build(self._openai.AsyncOpenAI)
            return self._async_client

    def _build(self, factory: Any) -> Any:
        """Build a client (lock held); the SDK reads OPENAI_API_KEY/OPENAI_BASE_URL if unset."""
        try:
            client = factory(
                api_key=self._api_key,
                base_url=self._base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
        except self._openai.OpenAIError as exc:
            msg = (
                f"could not create an OpenAI client for {self._where()}: {self._redact(exc)}. "
                "Pass api_key=... or set OPENAI_API_KEY (local OpenAI-compatible servers "
                "accept any placeholder, e.g. api_key='unused')"
            )
            raise ConfigurationError(msg) from exc
        self._owned.append(client)
        return client

    def _content(self, response: Any) -> str:
        choices = getattr(response, "choices", None)
        if not choices:
            msg = f"{self._where()} returned a response without choices; is it OpenAI-compatible?"
            raise LLMResponseError(msg)
        content = choices[0].message.content
        return content if isinstance(content, str) else ""

    def _clients(self) -> tuple[Any, ...]:
        return tuple(c for c in (self._client, self._async_client) if c is not None)

    def _where(self) -> str:
        return f"OpenAI-compatible endpoint {self.base_url} (model {self.model!r})"

    def _keys(self) -> tuple[object, ...]:
        return (self._api_key, *(getattr(c, "api_key", None) for c in self._clients()))

    def _redact(self, text: object) -> str:
        return redact(text, self._keys())

    def _map_error(self, exc: Exception, client: Any) -> LLMError:
        timeout = getattr(client, "timeout", self.timeout)
        return map_openai_error(
            self._openai, exc, where=self._where(), timeout=timeout, keys=self._keys()
        )


class _JSONMode:
    """A view of an :class:`OpenAIChatModel` whose completions request JSON mode."""

    def __init__(self, llm: OpenAIChatModel) -> None:
        self._llm = llm

    def complete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        return self._llm._complete(messages, json_mode=self._llm.json_mode)

    async def acomplete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        return await self._llm._acomplete(messages, json_mode=self._llm.json_mode)


def _check_number(name: str, value: object, *, minimum: float, strict: bool) -> None:
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (value > minimum if strict else value >= minimum)
    )
    if not ok:
        bound = f"> {minimum}" if strict else f">= {minimum}"
        msg = f"{name} must be a finite number {bound}, got {value!r}"
        raise ConfigurationError(msg)
