"""Dense text embeddings: the :class:`Embedder` protocol, a cache, and embedders.

=====================================  ==========================================
:class:`SentenceTransformerEmbedder`   local, offline; default all-MiniLM-L6-v2
:class:`OpenAIEmbedder`                OpenAI or any OpenAI-compatible server
:class:`CachedEmbedder`                LRU cache by content hash around any of them
:func:`default_embedder`               ``CachedEmbedder(SentenceTransformerEmbedder())``
=====================================  ==========================================

Model packages are imported only when the matching class is built. The framework adapters
live with their framework: ``langchain_agentmem.LangChainEmbedder`` (any LangChain
``Embeddings``) and ``llamaindex_agentmem.LlamaIndexEmbedder`` (any LlamaIndex
``BaseEmbedding``). Their old names here still resolve until agentmem 0.3, with a
``DeprecationWarning``, through a module ``__getattr__`` that imports them lazily, so
``import agentmem.embeddings`` imports no framework.

Example:
    >>> from agentmem.embeddings import default_embedder
    >>> emb = default_embedder()
    >>> emb.dimension  # doctest: +SKIP
    384
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmem.embeddings import cache, local, openai
from agentmem.embeddings.base import Embedder
from agentmem.embeddings.cache import *
from agentmem.embeddings.local import *
from agentmem.embeddings.openai import *

if TYPE_CHECKING:  # the deprecated names, for type checkers only
    from langchain_agentmem.embeddings import LangChainEmbedder as LangChainEmbedder
    from llamaindex_agentmem.embeddings import LlamaIndexEmbedder as LlamaIndexEmbedder

__all__ = ["Embedder", *cache.__all__, *local.__all__, *openai.__all__]


def __getattr__(name: str) -> type:
    # PEP 562: LangChainEmbedder / LlamaIndexEmbedder moved to the adapter packages.
    from agentmem.embeddings.adapters import warn_moved

    return warn_moved(__name__, name)
