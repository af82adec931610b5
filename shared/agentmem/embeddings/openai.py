"""Embeddings from the OpenAI API or any OpenAI-compatible server (``/v1/embeddings``).

Needs the optional dependency: ``pip install 'tiered-agentmem[openai]'``. Errors are those of
:class:`~agentmem.llm.openai.OpenAIChatModel` (:class:`~agentmem.errors.LLMTimeoutError`,
:class:`~agentmem.errors.LLMConnectionError`, :class:`~agentmem.errors.LLMResponseError`).
OpenAI's models read at most 8,191 tokens per input; the API rejects longer inputs
(HTTP 400) rather than truncating them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from agentmem._sansio import Program, async_twin, drive, twin
from agentmem._util.openai_common import STATUS_HINTS, OpenAIClientOwner, check_positive_int
from agentmem.embeddings.base import check_dimension, validate_text, validate_texts
from agentmem.errors import ConfigurationError, LLMResponseError

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIEmbedder"]

_KNOWN_DIMENSIONS: Mapping[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_HINTS: Mapping[int, str] = {
    **STATUS_HINTS,
    400: "the server rejected the request; an input may exceed the model's token limit "
    "(8,191 for OpenAI models), or the model may not support dimensions=",
}
_PROBE = "dimension probe"


class OpenAIEmbedder(OpenAIClientOwner):
    """An :class:`~agentmem.embeddings.Embedder` backed by the OpenAI embeddings API.

    Clients are built on first use (the SDK reads ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``
    when ``api_key`` / ``base_url`` are not given), or injected. With only ``client``
    injected, async calls run it in a thread.

    Args:
        model: Embedding model name.
        client: An ``openai.OpenAI`` for sync calls.
        async_client: An ``openai.AsyncOpenAI`` for async calls.
        base_url: Endpoint of an OpenAI-compatible server (``.../v1``).
        api_key: API key; local servers accept any placeholder.
        dimensions: Ask the model for shorter vectors (``text-embedding-3-*`` only).
        batch_size: Texts per request (the API takes at most 2,048).
        timeout: Seconds per request before :class:`~agentmem.errors.LLMTimeoutError`.
        max_retries: Transport retries the SDK makes.

    Example:
        >>> emb = OpenAIEmbedder("text-embedding-3-small", api_key="sk-...")
        >>> emb.dimension  # known for OpenAI's models; probed once (one request) otherwise
        1536
        >>> emb.embed_query("tabs, not spaces")  # doctest: +SKIP
        [-0.0123, ...]
    """

    _name: ClassVar[str] = "OpenAIEmbedder"
    _hints: ClassVar[Mapping[int, str]] = _HINTS

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        client: openai.OpenAI | None = None,
        async_client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 256,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        if dimensions is not None:
            check_positive_int("dimensions", dimensions)
        check_positive_int("batch_size", batch_size, maximum=2048)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            msg = f"timeout must be a number > 0, got {timeout!r}"
            raise ConfigurationError(msg)
        super().__init__(model, client, async_client, base_url, api_key, timeout, max_retries)
        self.dimensions = dimensions
        self.batch_size = batch_size
        self._dimension = dimensions or _KNOWN_DIMENSIONS.get(model)

    @property
    def model_name(self) -> str:
        """``openai:<model>`` plus ``@<dimensions>`` when shortened (the cache key part)."""
        suffix = f"@{self.dimensions}" if self.dimensions else ""
        return f"openai:{self.model}{suffix}"

    @property
    def dimension(self) -> int:
        """Vector length: ``dimensions``, the known size of an OpenAI model, or probed."""
        if self._dimension is None:
            vector = drive(self._embed([_PROBE]))[0]
            with self._lock:
                self._dimension = len(vector)
        return self._dimension

    # -- Embedder --------------------------------------------------------------------------

    @twin
    def embed_documents(self, texts: Sequence[str]) -> Program[list[list[float]]]:
        """One vector per text, ``batch_size`` texts per request.

        Raises:
            InvalidValueError: A text is not a non-blank string.
            LLMTimeoutError, LLMConnectionError, LLMResponseError: The request failed.
        """
        items = validate_texts(texts)
        out: list[list[float]] = []
        for start in range(0, len(items), self.batch_size):
            out.extend((yield from self._embed(items[start : start + self.batch_size])))
        return out

    aembed_documents = async_twin(embed_documents)

    @twin
    def embed_query(self, text: str) -> Program[list[float]]:
        """The vector of a query."""
        return (yield from self._embed([validate_text(text)]))[0]

    aembed_query = async_twin(embed_query)

    # -- internals -------------------------------------------------------------------------

    def _kwargs(self, batch: list[str]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.dimensions is not None:
            kwargs["dimensions"] = self.dimensions
        return kwargs

    def _embed(self, batch: list[str]) -> Program[list[list[float]]]:
        response = yield from self._send(_embeddings, self._kwargs(batch))
        return self._vectors(response, len(batch))

    def _vectors(self, response: Any, expected: int) -> list[list[float]]:
        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != expected:
            got = len(data) if isinstance(data, list) else "no"
            msg = f"{self._where()} returned {got} embeddings for {expected} inputs"
            raise LLMResponseError(msg)
        ordered = sorted(data, key=lambda item: int(getattr(item, "index", 0)))
        vectors = [[float(x) for x in item.embedding] for item in ordered]
        if self._dimension is not None:
            check_dimension(vectors, self._dimension, source=self._where())
        return vectors


def _embeddings(client: Any) -> Any:
    return client.embeddings.create
