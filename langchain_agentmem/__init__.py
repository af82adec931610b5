"""LangChain and LangGraph integration of agentmem (``pip install 'tiered-agentmem[langchain]'``).

Example:
    >>> from langchain_agentmem import AgentMemoryChatHistory, AgentMemoryRetriever
    >>> AgentMemoryRetriever.__name__
    'AgentMemoryRetriever'

``AgentMemoryStore`` and ``AgentMemoryMiddleware`` need ``langgraph`` / ``langchain``
(both in the ``[langchain]`` extra); they are imported on first use, so the chat history, the
retriever, the tools, the model adapter and :class:`LangChainEmbedder` (any LangChain
``Embeddings`` as an agentmem embedder) work with ``langchain-core`` alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_agentmem.adapters import LangChainChatModel, embedder_from_langchain
from langchain_agentmem.embeddings import LangChainEmbedder
from langchain_agentmem.history import AgentMemoryChatHistory
from langchain_agentmem.retriever import AgentMemoryRetriever
from langchain_agentmem.tools import create_memory_tools

if TYPE_CHECKING:
    from langchain_agentmem.middleware import AgentMemoryMiddleware
    from langchain_agentmem.store import AgentMemoryStore

__all__ = [
    "AgentMemoryChatHistory",
    "AgentMemoryMiddleware",
    "AgentMemoryRetriever",
    "AgentMemoryStore",
    "LangChainChatModel",
    "LangChainEmbedder",
    "create_memory_tools",
    "embedder_from_langchain",
]

_LAZY = {
    "AgentMemoryStore": "langchain_agentmem.store",
    "AgentMemoryMiddleware": "langchain_agentmem.middleware",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'langchain_agentmem' has no attribute {name!r}"
        raise AttributeError(msg)
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        msg = f"{name} needs langgraph and langchain: pip install 'tiered-agentmem[langchain]'"
        raise ImportError(msg) from exc
