"""Any LlamaIndex ``BaseEmbedding`` as an agentmem embedder (extra ``[llamaindex]``).

:class:`LlamaIndexEmbedder` moved here from ``agentmem.embeddings`` so that the core package
imports no framework (the old paths in agentmem are gone: see CHANGELOG.md).

Async methods call the model's own async methods. When no ``dimension`` is given it is
learnt from the first vectors returned, or probed once by embedding a short text. Every
vector returned is checked against the dimension
(:class:`~agentmem.errors.DimensionMismatchError` if the model changed under us).

Example:
    >>> from llama_index.core.embeddings import MockEmbedding
    >>> from llamaindex_agentmem import LlamaIndexEmbedder
    >>> emb = LlamaIndexEmbedder(MockEmbedding(embed_dim=8))
    >>> emb.model_name, emb.dimension
    ('llamaindex:MockEmbedding:unknown', 8)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding

from agentmem.errors import ConfigurationError
from agentmem.integration import WrapperEmbedder, model_label

__all__ = ["LlamaIndexEmbedder"]


class LlamaIndexEmbedder(WrapperEmbedder):
    """Adapts a LlamaIndex ``BaseEmbedding`` (``Settings.embed_model`` and friends).

    Documents go through ``get_text_embedding_batch`` (which batches by the model's
    ``embed_batch_size``), queries through ``get_query_embedding``; async through
    ``aget_text_embedding_batch`` / ``aget_query_embedding``.

    Args:
        embed_model: Any ``llama_index.core.base.embeddings.base.BaseEmbedding``.
        dimension: Its vector length; learnt or probed once if not given.
        model_name: Cache-key name; default ``llamaindex:<class>:<model_name>``.

    Raises:
        ConfigurationError: ``embed_model`` is not a LlamaIndex ``BaseEmbedding``, or
            ``dimension`` is not an int >= 1.

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
        if not isinstance(embed_model, BaseEmbedding):
            msg = (
                "embed_model must be a llama_index BaseEmbedding, got "
                f"{type(embed_model).__name__}; for LangChain models use "
                "langchain_agentmem.LangChainEmbedder"
            )
            raise ConfigurationError(msg)
        super().__init__(model_name or model_label(embed_model, "llamaindex"), dimension)
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
