"""OpenAI SDK helpers shared by the chat and embedding adapters (private).

One place maps SDK exceptions to agentmem errors and redacts API keys from messages, so
:mod:`agentmem.llm_openai` and :mod:`agentmem.embeddings.openai` fail the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from types import ModuleType

from agentmem.errors import (
    ConfigurationError,
    LLMConnectionError,
    LLMError,
    LLMResponseError,
    LLMTimeoutError,
)

__all__ = ["KEY_PATTERN", "STATUS_HINTS", "import_openai", "map_openai_error", "redact"]

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
        msg = f"{feature} needs the openai package: pip install 'agentmem[openai]'"
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
