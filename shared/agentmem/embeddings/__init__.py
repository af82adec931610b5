"""Dense text embeddings: the :class:`Embedder` protocol, a cache, and adapters.

=====================================  ==========================================
:class:`SentenceTransformerEmbedder`   local, offline; default all-MiniLM-L6-v2
:class:`OpenAIEmbedder`                OpenAI or any OpenAI-compatible server
:class:`LangChainEmbedder`             any LangChain ``Embeddings``
:class:`LlamaIndexEmbedder`            any LlamaIndex ``BaseEmbedding``
:class:`CachedEmbedder`                LRU cache by content hash around any of them
:func:`default_embedder`               ``CachedEmbedder(SentenceTransformerEmbedder())``
=====================================  ==========================================

Framework and model packages are imported only when the matching class is built.

Example:
    >>> from agentmem.embeddings import default_embedder
    >>> emb = default_embedder()
    >>> emb.dimension  # doctest: +SKIP
    384
"""

from __future__ import annotations

from agentmem.embeddings.adapters import LangChainEmbedder, LlamaIndexEmbedder
from agentmem.embeddings.base import Embedder
from agentmem.embeddings.cache import CachedEmbedder, CacheInfo
from agentmem.embeddings.local import (
    ALL_MINILM_L6_V2,
    ALL_MINILM_L6_V2_SHA256,
    SentenceTransformerEmbedder,
    default_embedder,
)
from agentmem.embeddings.openai import OpenAIEmbedder

__all__ = [
    "ALL_MINILM_L6_V2",
    "ALL_MINILM_L6_V2_SHA256",
    "CacheInfo",
    "CachedEmbedder",
    "Embedder",
    "LangChainEmbedder",
    "LlamaIndexEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "default_embedder",
]
