"""Any LangChain ``Embeddings`` as an agentmem embedder (extra ``[langchain]``).

:class:`LangChainEmbedder` moved here from ``agentmem.embeddings`` so that the core package
imports no framework (the old paths in agentmem are gone: see CHANGELOG.md).

Async methods call the model's own async methods. When no ``dimension`` is given it is
learnt from the first vectors returned, or probed once by embedding a short text. Every
vector returned is checked against the dimension
(:class:`~agentmem.errors.DimensionMismatchError` if the model changed under us).

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_agentmem import LangChainEmbedder
    >>> emb = LangChainEmbedder(DeterministicFakeEmbedding(size=8))
    >>> emb.model_name, emb.dimension
    ('langchain:DeterministicFakeEmbedding', 8)
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.embeddings import Embeddings

from agentmem.errors import ConfigurationError
from agentmem.integration import WrapperEmbedder, model_label

__all__ = ["LangChainEmbedder"]


class LangChainEmbedder(WrapperEmbedder):
    """Adapts a LangChain ``Embeddings`` (OpenAI, HuggingFace, Ollama, ...) to agentmem.

    Args:
        embeddings: Any ``langchain_core.embeddings.Embeddings``.
        dimension: Its vector length; learnt or probed once if not given.
        model_name: Cache-key name; default ``langchain:<class>[:<model>]``.

    Raises:
        ConfigurationError: ``embeddings`` is not a LangChain ``Embeddings``, or
            ``dimension`` is not an int >= 1.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> emb = LangChainEmbedder(DeterministicFakeEmbedding(size=8))
        >>> emb.dimension, len(emb.embed_query("tabs, not spaces"))
        (8, 8)
    """

    def __init__(
        self, embeddings: Embeddings, *, dimension: int | None = None, model_name: str | None = None
    ) -> None:
        if not isinstance(embeddings, Embeddings):
            msg = (
                "embeddings must be a langchain_core.embeddings.Embeddings, got "
                f"{type(embeddings).__name__}; for LlamaIndex models use "
                "llamaindex_agentmem.LlamaIndexEmbedder"
            )
            raise ConfigurationError(msg)
        super().__init__(model_name or model_label(embeddings, "langchain"), dimension)
        self.embeddings = embeddings

    def _documents(self, texts: list[str]) -> Sequence[Sequence[float]]:
        return self.embeddings.embed_documents(texts)

    def _query(self, text: str) -> Sequence[float]:
        return self.embeddings.embed_query(text)

    async def _adocuments(self, texts: list[str]) -> Sequence[Sequence[float]]:
        return await self.embeddings.aembed_documents(texts)

    async def _aquery(self, text: str) -> Sequence[float]:
        return await self.embeddings.aembed_query(text)
