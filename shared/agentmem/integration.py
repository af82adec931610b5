"""What a framework integration builds on, beyond the :mod:`agentmem` facade.

The LangChain and LlamaIndex adapters (``langchain_agentmem``, ``llamaindex_agentmem``)
import from :mod:`agentmem`, :mod:`agentmem.errors`, :mod:`agentmem.types` and this module
only (``tests/unit/test_architecture.py`` keeps it so). An adapter converts: it turns the
framework's messages into :class:`~agentmem.types.Message` objects, calls the manager (one
context pipeline, :meth:`MemoryManager.gather_context <agentmem.MemoryManager.gather_context>`,
and its remember / recall / record methods) and turns the results back. What it needs
for that and that users of the core do not, is here:

* **checking input as the core does**: :func:`check_positive_int`,
  :func:`check_non_negative_int`, :func:`check_max_tokens`, :func:`check_share`,
  :func:`check_storable_text`, :func:`text_problem`, :func:`json_problem`,
  :func:`find_json_problem`, :func:`json_text`, :func:`validate_session_id`,
  :data:`MAX_TURN_ID_LENGTH` (the longest ``turn_id``);
* **recording a framework's messages exactly once**: :func:`turn_id_of` (a ``turn_id``
  from the framework's message ids), :func:`append_turn` / :func:`aappend_turn` (a chat
  history's append as that turn: a retry stores nothing twice);
* **rendering memories as every agentmem prompt does** (delimited, escaped data):
  :data:`MEMORY_BLOCK_OPEN`, :data:`MEMORY_BLOCK_CLOSE`, :func:`render_memory_line`,
  :func:`render_memory_block`, :func:`escape_line`, and :func:`read_reply` (what a model
  wrote after reading escaped data, as plain text);
* **the types adapter signatures name**: :class:`SessionStore` and :class:`MemoryStore`
  (the store protocols), :class:`InMemorySessionStore`, :class:`SessionOwners` (who may
  use a session), :class:`ManagerConfig` (the managers' settings and defaults),
  :data:`SearchMode`, :data:`MemoryType`, :data:`DEFAULT_MODEL`;
* **wrapping a framework's models**: :class:`WrapperEmbedder`, :func:`model_label`, and
  :class:`PlainChatModel` (a structured chat model's fallback to agentmem's JSON prompting).

Example:
    >>> from agentmem.integration import MEMORY_BLOCK_CLOSE, check_share
    >>> check_share(0.3, "memory_share"), MEMORY_BLOCK_CLOSE
    (0.3, '</recalled_memories>')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentmem._util.escape import read_reply
from agentmem.checks import check_non_negative_int, check_positive_int
from agentmem.context import (
    MEMORY_BLOCK_CLOSE,
    MEMORY_BLOCK_OPEN,
    check_max_tokens,
    check_share,
    escape_line,
    render_memory_block,
    render_memory_line,
)
from agentmem.controller.config import ManagerConfig
from agentmem.controller.ownership import SessionOwners
from agentmem.controller.turns import MAX_TURN_ID_LENGTH, aappend_turn, append_turn, turn_id_of
from agentmem.embeddings.wrapper import WrapperEmbedder, model_label
from agentmem.llm import ChatModel
from agentmem.long_term.ranking import SearchMode
from agentmem.long_term.records import MemoryType
from agentmem.long_term.store import MemoryStore
from agentmem.storable import (
    check_storable_text,
    find_json_problem,
    json_problem,
    json_text,
    text_problem,
)
from agentmem.stores.base import SessionStore, validate_session_id
from agentmem.stores.memory import InMemorySessionStore
from agentmem.tokens import DEFAULT_MODEL

__all__ = [
    "DEFAULT_MODEL",
    "MAX_TURN_ID_LENGTH",
    "MEMORY_BLOCK_CLOSE",
    "MEMORY_BLOCK_OPEN",
    "InMemorySessionStore",
    "ManagerConfig",
    "MemoryStore",
    "MemoryType",
    "PlainChatModel",
    "SearchMode",
    "SessionOwners",
    "SessionStore",
    "WrapperEmbedder",
    "aappend_turn",
    "append_turn",
    "check_max_tokens",
    "check_non_negative_int",
    "check_positive_int",
    "check_share",
    "check_storable_text",
    "escape_line",
    "find_json_problem",
    "json_problem",
    "json_text",
    "model_label",
    "read_reply",
    "render_memory_block",
    "render_memory_line",
    "text_problem",
    "turn_id_of",
    "validate_session_id",
]


class PlainChatModel:
    """A chat model seen through ``complete`` / ``acomplete`` only.

    A wrapper whose ``complete_json`` falls back to :func:`agentmem.complete_json` (agentmem's
    validated JSON prompting) passes this view of itself: the prompted path then calls its
    ``complete``, never its ``complete_json`` again (no recursion).

    Example:
        >>> class Echo:
        ...     def complete(self, messages): return messages[-1]["content"]
        ...     async def acomplete(self, messages): return self.complete(messages)
        ...     def complete_json(self, messages, schema): raise AssertionError("recursion")
        >>> plain = PlainChatModel(Echo())
        >>> plain.complete([{"role": "user", "content": "hi"}]), hasattr(plain, "complete_json")
        ('hi', False)
    """

    def __init__(self, model: ChatModel) -> None:
        self._model = model

    def complete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The wrapped model's reply."""
        return self._model.complete(messages)

    async def acomplete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """Async twin of :meth:`complete`."""
        return await self._model.acomplete(messages)
