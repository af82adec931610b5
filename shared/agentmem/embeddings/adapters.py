"""Use any LangChain ``Embeddings`` or LlamaIndex ``BaseEmbedding`` as an agentmem embedder.

The frameworks are imported only when an adapter is built (extras ``[langchain]`` and
``[llamaindex]``). Async methods call the framework's own async methods. When no
``dimension`` is given it is probed once, by embedding a short text, on first access.
Every vector returned is checked against the dimension
(:class:`~agentmem.errors.DimensionMismatchError` if the model changed under us).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentmem.embeddings.base import check_dimension, validate_text, validate_texts
from agentmem.errors import ConfigurationError

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from llama_index.core.base.embeddings.base import BaseEmbedding

__all__ = ["LangChainEmbedder", "LlamaIndexEmbedder"]

_PROBE = "dimension probe"


class _FrameworkEmbedder:
    """Validation, dimension probing and checks around a framework's embedding calls."""

    def __init__(self, model_name: str, dimension: int | None) -> None:
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
        ):
            msg = f"dimension must be an int >= 1 or None (probe it), got {dimension!r}"
            raise ConfigurationError(msg)
        self.model_name = model_name
        self._dimension = dimension
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_name!r})"

    @property
    def dimension(self) -> int:
        """Vector length: given, learnt from the first embedding, or probed with a short text."""
        if self._dimension is None:
            size = len(self._query(_PROBE))
            with self._lock:
                if self._dimension is None:
                    self._dimension = size
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text (``[]`` for an empty list, without calling the model)."""
        items = validate_texts(texts)
        return self._checked(self._documents(items) if items else [], len(items))

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query."""
        return self._checked([self._query(validate_text(text))], 1)[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (the framework's async method)."""
        items = validate_texts(texts)
        return self._checked(await self._adocuments(items) if items else [], len(items))

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query` (the framework's async method)."""
        return self._checked([await self._aquery(validate_text(text))], 1)[0]

    def _checked(self, vectors: Sequence[Sequence[float]], expected: int) -> list[list[float]]:
        if len(vectors) != expected:
            msg = (
                f"{self!r} returned {len(vectors)} vectors for {expected} texts; the wrapped "
                "model must return one vector per text"
            )
            raise ConfigurationError(msg)
        out = [[float(x) for x in vector] for vector in vectors]
        if out and self._dimension is None:  # learn it from real output, no probe call
            with self._lock:
                if self._dimension is None:
                    self._dimension = len(out[0])
        check_dimension(out, self.dimension, source=repr(self))
        return out

    # Implemented per framework.
    def _documents(self, texts: list[str]) -> Sequence[Sequence[float]]:
        raise NotImplementedError

    def _query(self, text: str) -> Sequence[float]:
        raise NotImplementedError

    async def _adocuments(self, texts: list[str]) -> Sequence[Sequence[float]]:
        raise NotImplementedError

    async def _aquery(self, text: str) -> Sequence[float]:
        raise NotImplementedError


def _name_of(obj: object, prefix: str) -> str:
    model = getattr(obj, "model", None) or getattr(obj, "model_name", None)
    name = f"{prefix}:{type(obj).__name__}"
    return f"{name}:{model}" if isinstance(model, str) and model else name


class LangChainEmbedder(_FrameworkEmbedder):
    """Adapts a LangChain ``Embeddings`` (OpenAI, HuggingFace, Ollama, ...) to agentmem.

    Args:
        embeddings: Any ``langchain_core.embeddings.Embeddings``.
        dimension: Its vector length; probed once if not given.
        model_name: Cache-key name; default ``langchain:<class>[:<model>]``.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> emb = LangChainEmbedder(DeterministicFakeEmbedding(size=8))
        >>> emb.dimension, len(emb.embed_query("tabs, not spaces"))
        (8, 8)
    """

    def __init__(
        self, embeddings: Embeddings, *, dimension: int | None = None, model_name: str | None = None
    ) -> None:
        try:
            from langchain_core.embeddings import Embeddings
        except ImportError as exc:
            msg = "LangChainEmbedder needs langchain-core: pip install 'agentmem[langchain]'"
            raise ConfigurationError(msg) from exc
        if not isinstance(embeddings, Embeddings):
            msg = (
                "embeddings must be a langchain_core.embeddings.Embeddings, got "
                f"{type(embeddings).__name__}; for LlamaIndex models use LlamaIndexEmbedder"
            )
            raise ConfigurationError(msg)
        super().__init__(model_name or _name_of(embeddings, "langchain"), dimension)
        self.embeddings = embeddings

    def _documents(self, texts: list[str]) -> Sequence[Sequence[float]]:
        return self.embeddings.embed_documents(texts)

    def _query(self, text: str) -> Sequence[float]:
        return self.embeddings.embed_query(text)

    async def _adocuments(self, texts: list[str]) -> Sequence[Sequence[float]]:
        return await self.embeddings.aembed_documents(texts)

    async def _aquery(self, text: str) -> Sequence[float]:
        return await self.embeddings.aembed_query(text)


class LlamaIndexEmbedder(_FrameworkEmbedder):
    """Adapts a LlamaIndex ``BaseEmbedding`` (``Settings.embed_model`` and friends).

    Documents go through ``get_text_embedding_batch`` (which batches by the model's
    ``embed_batch_size``), queries through ``get_query_embedding``; async through
    ``aget_text_embedding_batch`` / ``aget_query_embedding``.

    Args:
        embed_model: Any ``llama_index.core.base.embeddings.base.BaseEmbedding``.
        dimension: Its vector length; probed once if not given.
        model_name: Cache-key name; default ``llamaindex:<class>:<model_name>``.

    Example:
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> emb = LlamaIndexEmbedder(MockEmbedding(embed_dim=8))
        >>> emb.dimension
        8
    """

    def __init__(
        self,
        embed_model: BaseEmbedding,
        *,
        dimension: int | None = None,
        model_name: str | None = None,
    ) -> None:
        try:
            from llama_index.core.base.embeddings.base import BaseEmbedding
        except ImportError as exc:
            msg = "LlamaIndexEmbedder needs llama-index-core: pip install 'agentmem[llamaindex]'"
            raise ConfigurationError(msg) from exc
        if not isinstance(embed_model, BaseEmbedding):
            msg = (
                "embed_model must be a llama_index BaseEmbedding, got "
                f"{type(embed_model).__name__}; for LangChain models use LangChainEmbedder"
            )
            raise ConfigurationError(msg)
        super().__init__(model_name or _name_of(embed_model, "llamaindex"), dimension)
        self.embed_model = embed_model

    def _documents(self, texts: list[str]) -> Sequence[Sequence[float]]:
        result: Any = self.embed_model.get_text_embedding_batch(texts)
        return result  # type: ignore[no-any-return]

    def _query(self, text: str) -> Sequence[float]:
        return self.embed_model.get_query_embedding(text)

    async def _adocuments(self, texts: list[str]) -> Sequence[Sequence[float]]:
        return await self.embed_model.aget_text_embedding_batch(texts)

    async def _aquery(self, text: str) -> Sequence[float]:
        return await self.embed_model.aget_query_embedding(text)
