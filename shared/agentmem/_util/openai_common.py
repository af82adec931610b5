"""OpenAI SDK plumbing shared by the chat and embedding adapters (private).

:class:`OpenAIClientOwner` holds, builds and closes the SDK clients; one place maps SDK
exceptions to agentmem errors and redacts API keys from messages, so
:mod:`agentmem.llm.openai` and :mod:`agentmem.embeddings.openai` behave and fail the same way.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from agentmem._sansio import Program, async_twin, blocking, call, twin
from agentmem._util.checks import check_int
from agentmem._util.executor import run_in_executor
from agentmem.errors import (
    ConfigurationError,
    LLMConnectionError,
    LLMError,
    LLMResponseError,
    LLMTimeoutError,
)

if TYPE_CHECKING:
    import openai

__all__ = [
    "DEFAULT_BASE_URL",
    "KEY_PATTERN",
    "STATUS_HINTS",
    "OpenAIClientOwner",
    "check_non_negative_int",
    "check_number",
    "check_positive_int",
    "import_openai",
    "map_openai_error",
    "redact",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_*\-]{3,}")
STATUS_HINTS: Mapping[int, str] = {
    400: "the server rejected the request; if it does not support response_format, "
    "pass json_mode=False",
    401: "check the API key (api_key=... or OPENAI_API_KEY)",
    403: "the API key may not access this model; check the key and the model name",
    404: "check the model name and that base_url ends in /v1",
    429: "rate limited or out of quota; retry later or raise max_retries",
}


def import_openai(feature: str) -> ModuleType:
    """The ``openai`` module, or a :class:`ConfigurationError` naming ``feature``."""
    try:
        import openai
    except ImportError as exc:
        msg = f"{feature} needs the openai package: pip install 'tiered-agentmem[openai]'"
        raise ConfigurationError(msg) from exc
    return openai


def redact(text: object, keys: Iterable[object]) -> str:
    """``str(text)`` with every key in ``keys`` (and anything shaped like ``sk-...``) masked."""
    out = str(text)
    for key in keys:
        if isinstance(key, str) and len(key) >= 4:
            out = out.replace(key, "***")
    return KEY_PATTERN.sub("sk-***", out)


def map_openai_error(
    sdk: ModuleType,
    exc: Exception,
    *,
    where: str,
    timeout: object,
    keys: Iterable[object],
    hints: Mapping[int, str] = STATUS_HINTS,
) -> LLMError:
    """Translate an SDK (or JSON decoding) exception into the agentmem error to raise.

    Args:
        sdk: The imported ``openai`` module.
        exc: The exception the SDK raised.
        where: Human description of the endpoint and model, e.g.
            ``"OpenAI-compatible endpoint https://... (model 'gpt-4o-mini')"``.
        timeout: The timeout in effect, quoted in timeout errors.
        keys: API keys to mask in the message.
        hints: What to tell the user per HTTP status.
    """
    keys = tuple(keys)
    if isinstance(exc, sdk.APITimeoutError):
        msg = (
            f"{where} did not answer within {timeout}s; raise timeout=..., or check that "
            "the server is up and not overloaded"
        )
        return LLMTimeoutError(msg)
    if isinstance(exc, sdk.APIConnectionError):
        cause = f": {redact(exc.__cause__, keys)}" if exc.__cause__ else ""
        msg = f"could not connect to {where}{cause}; check base_url and that the server runs"
        return LLMConnectionError(msg)
    if isinstance(exc, (sdk.APIStatusError, sdk.APIResponseValidationError)):
        code = int(exc.status_code)
        detail = redact(getattr(exc, "message", exc), keys)
        hint = hints.get(code, "the server failed; retry later")
        msg = f"{where} answered HTTP {code}: {detail}; {hint}"
        return LLMResponseError(msg, status_code=code)
    if isinstance(exc, json.JSONDecodeError):
        msg = f"{where} returned a body that is not JSON ({exc}); is it OpenAI-compatible?"
        return LLMResponseError(msg)
    return LLMError(f"{where} failed: {redact(exc, keys)}")


def check_number(name: str, value: object, *, minimum: float, strict: bool) -> None:
    """Raise :class:`ConfigurationError` unless ``value`` is a finite number above ``minimum``.

    ``strict`` means ``> minimum``; otherwise ``>= minimum``.
    """
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


def check_positive_int(name: str, value: object, *, maximum: int = 2**31) -> None:
    """Raise :class:`ConfigurationError` unless ``value`` is an int from 1 to ``maximum``."""
    check_int(value, name, maximum=maximum, expected=f"must be an int from 1 to {maximum}")


def check_non_negative_int(name: str, value: object) -> None:
    """Raise :class:`ConfigurationError` unless ``value`` is an int >= 0."""
    check_int(value, name, minimum=0, expected="must be an int >= 0")


class OpenAIClientOwner:
    """The OpenAI client lifecycle of an adapter: build on first use, close what it built.

    Subclasses set :attr:`_name` (quoted in messages and ``repr``) and, if their endpoint
    needs other advice per HTTP status, :attr:`_hints`; they validate their own options
    and the ``timeout`` before calling ``super().__init__`` with the connection options
    their signatures share, in the same order.
    """

    _name: ClassVar[str] = "OpenAIClientOwner"
    _hints: ClassVar[Mapping[int, str]] = STATUS_HINTS

    def __init__(
        self,
        model: str,
        client: openai.OpenAI | None,
        async_client: openai.AsyncOpenAI | None,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        max_retries: int,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            msg = f"model must be a non-empty string, got {model!r}"
            raise ConfigurationError(msg)
        if (client is not None or async_client is not None) and (base_url or api_key):
            msg = f"pass base_url/api_key to the injected client, not to {self._name} as well"
            raise ConfigurationError(msg)
        check_non_negative_int("max_retries", max_retries)
        self._openai: ModuleType = import_openai(self._name)
        # What a request may raise that :meth:`_map_error` translates.
        self._sdk_errors: tuple[type[Exception], ...] = (
            self._openai.OpenAIError,
            json.JSONDecodeError,
        )
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self._base_url = base_url
        self._api_key = api_key
        self._client = client
        self._async_client = async_client
        self._owned: list[Any] = []  # clients built here, closed by close()/aclose()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{self._name}(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def base_url(self) -> str:
        """The endpoint requests go to (never includes credentials)."""
        client = self._client or self._async_client
        if client is not None:
            return str(client.base_url)
        return self._base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL

    @twin
    def close(self) -> Program[None]:
        """Close the HTTP clients this object built (injected clients are left open).

        An async client built here can only be closed by :meth:`aclose`; ``close`` leaves
        it open.
        """
        with self._lock:
            owned = list(self._owned)
        for client in owned:
            if not isinstance(client, self._openai.AsyncOpenAI):
                self._forget(client)
                yield from blocking(client.close)
            elif (yield from call(_cannot_await, _aclose_client, client)):
                self._forget(client)

    aclose = async_twin(close)
    """Close every HTTP client this object built, sync and async."""

    # -- internals -------------------------------------------------------------------------

    def _send(self, endpoint: Callable[[Any], Any], kwargs: dict[str, Any]) -> Program[Any]:
        """One API request, ``endpoint(client)(**kwargs)``, as a program: on the sync client,
        or awaited on the async one (the injected sync client in a worker thread when it is
        the only one). SDK errors come back as agentmem errors."""
        return (yield from call(self._create, self._acreate, endpoint, kwargs))

    def _create(self, endpoint: Callable[[Any], Any], kwargs: dict[str, Any]) -> Any:
        client = self._sync_client()
        try:
            return endpoint(client)(**kwargs)
        except self._sdk_errors as exc:
            raise self._map_error(exc, client) from exc

    async def _acreate(self, endpoint: Callable[[Any], Any], kwargs: dict[str, Any]) -> Any:
        if self._async_client is None and self._client is not None:
            return await run_in_executor(self._create, endpoint, kwargs)
        client = self._get_async_client()
        try:
            return await endpoint(client)(**kwargs)
        except self._sdk_errors as exc:
            raise self._map_error(exc, client) from exc

    def _forget(self, client: Any) -> None:
        """Drop a client built here from the owned ones (before closing it)."""
        with self._lock:
            if client in self._owned:
                self._owned.remove(client)
            if self._client is client:
                self._client = None
            if self._async_client is client:
                self._async_client = None

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
            self._openai,
            exc,
            where=self._where(),
            timeout=timeout,
            keys=(*self._keys(), getattr(client, "api_key", None)),
            hints=self._hints,
        )


def _cannot_await(client: Any) -> bool:
    """Sync face of closing an async client: it cannot be awaited here, so it stays open."""
    return False


async def _aclose_client(client: Any) -> bool:
    await client.close()
    return True
