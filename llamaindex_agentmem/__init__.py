"""LlamaIndex integration of agentmem (``pip install 'tiered-agentmem[llamaindex]'``).

* :class:`AgentMemory`: a ``BaseMemory`` for ``SimpleChatEngine``,
  ``CondensePlusContextChatEngine``, ``FunctionAgent`` and ``ReActAgent``: persistent,
  budgeted history plus recalled long-term memories.
* :class:`LongTermMemoryBlock`, :class:`WorkingMemoryBlock`, :class:`FactMemoryBlock`:
  blocks for ``llama_index.core.memory.Memory``.
* :class:`AgentMemoryRetriever`: long-term memories as a ``BaseRetriever``.
* :class:`LlamaIndexChatModel`: any LlamaIndex ``LLM`` as an agentmem chat model.
* :class:`LlamaIndexEmbedder`: any LlamaIndex ``BaseEmbedding`` as an agentmem embedder.

Example:
    >>> from llamaindex_agentmem import AgentMemory
    >>> memory = AgentMemory.from_defaults(user_id="alice", session_id="s1")  # doctest: +SKIP
    >>> SimpleChatEngine.from_defaults(llm=llm, memory=memory).chat("hi")  # doctest: +SKIP
"""

from llamaindex_agentmem.adapters import LlamaIndexChatModel
from llamaindex_agentmem.blocks import FactMemoryBlock, LongTermMemoryBlock, WorkingMemoryBlock
from llamaindex_agentmem.embeddings import LlamaIndexEmbedder
from llamaindex_agentmem.memory import AgentMemory
from llamaindex_agentmem.retriever import AgentMemoryRetriever

__all__ = [
    "AgentMemory",
    "AgentMemoryRetriever",
    "FactMemoryBlock",
    "LlamaIndexChatModel",
    "LlamaIndexEmbedder",
    "LongTermMemoryBlock",
    "WorkingMemoryBlock",
]
