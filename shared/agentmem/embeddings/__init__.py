"""Dense text embeddings: the :class:`Embedder` protocol, a cache, and embedders.

=====================================  ==========================================
:class:`SentenceTransformerEmbedder`   local, offline; default all-MiniLM-L6-v2
:class:`OpenAIEmbedder`                OpenAI or any OpenAI-compatible server
:class:`CachedEmbedder`                LRU cache by content hash around any of them
:func:`default_embedder`               ``CachedEmbedder(SentenceTransformerEmbedder())``
=====================================  ==========================================

Every name is imported on first use (PEP 562), and model packages only when the matching
class is built. The framework adapters live with their framework:
``langchain_agentmem.LangChainEmbedder`` (any LangChain ``Embeddings``) and
``llamaindex_agentmem.LlamaIndexEmbedder`` (any LlamaIndex ``BaseEmbedding``), so
``import agentmem.embeddings`` imports no framework.

Example:
    >>> from agentmem.embeddings import default_embedder
    >>> emb = default_embedder()
    >>> emb.dimension  # doctest: +SKIP
    384
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmem._util.lazy import lazy_exports

if TYPE_CHECKING:  # the static names, for type checkers and IDEs
    from agentmem.embeddings.base import Embedder
    from agentmem.embeddings.cache import CachedEmbedder, CacheInfo
    from agentmem.embeddings.local import (
        ALL_MINILM_L6_V2,
        ALL_MINILM_L6_V2_SHA256,
        SentenceTransformerEmbedder,
        default_embedder,
        default_torch_threads,
        file_sha256,
    )
    from agentmem.embeddings.openai import OpenAIEmbedder

__all__ = [
    "ALL_MINILM_L6_V2",
    "ALL_MINILM_L6_V2_SHA256",
    "CacheInfo",
    "CachedEmbedder",
    "Embedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "default_torch_threads",
    "file_sha256",
]

_EXPORTS = {  # each name -> the module the TYPE_CHECKING block imports it from
    "ALL_MINILM_L6_V2": "agentmem.embeddings.local",
    "ALL_MINILM_L6_V2_SHA256": "agentmem.embeddings.local",
    "CacheInfo": "agentmem.embeddings.cache",
    "CachedEmbedder": "agentmem.embeddings.cache",
    "Embedder": "agentmem.embeddings.base",
    "OpenAIEmbedder": "agentmem.embeddings.openai",
    "SentenceTransformerEmbedder": "agentmem.embeddings.local",
    "default_embedder": "agentmem.embeddings.local",
    "default_torch_threads": "agentmem.embeddings.local",
    "file_sha256": "agentmem.embeddings.local",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
