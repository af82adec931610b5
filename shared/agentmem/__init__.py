"""agentmem: tiered memory for LLM agents.

Example:
    >>> from agentmem import ConversationBufferMemory
    >>> memory = ConversationBufferMemory(max_tokens=1000)
    >>> _ = memory.add_message("user", "I only write Python, tabs not spaces")
    >>> memory.get_messages()
    [{'role': 'user', 'content': 'I only write Python, tabs not spaces'}]
"""

from agentmem.errors import (
    AgentMemError,
    ConfigurationError,
    InvalidMessageError,
    InvalidSessionIdError,
    InvalidValueError,
    LLMConnectionError,
    LLMError,
    LLMOutputError,
    LLMResponseError,
    LLMTimeoutError,
    StoreError,
    TokenizerUnavailableError,
)
from agentmem.llm import ChatModel, StructuredChatModel, acomplete_json, complete_json
from agentmem.short_term import (
    ConversationBufferMemory,
    ShortTermMemory,
    ShortTermView,
    SlidingWindowMemory,
    SummaryBufferMemory,
)
from agentmem.tokens import TokenCounter
from agentmem.types import Message, ToolCall
from agentmem.working import Hypothesis, ScratchpadEntry, Task, TaskStatus, WorkingMemory

__all__ = [
    "AgentMemError",
    "ChatModel",
    "ConfigurationError",
    "ConversationBufferMemory",
    "Hypothesis",
    "InvalidMessageError",
    "InvalidSessionIdError",
    "InvalidValueError",
    "LLMConnectionError",
    "LLMError",
    "LLMOutputError",
    "LLMResponseError",
    "LLMTimeoutError",
    "Message",
    "ScratchpadEntry",
    "ShortTermMemory",
    "ShortTermView",
    "SlidingWindowMemory",
    "StoreError",
    "StructuredChatModel",
    "SummaryBufferMemory",
    "Task",
    "TaskStatus",
    "TokenCounter",
    "TokenizerUnavailableError",
    "ToolCall",
    "WorkingMemory",
    "acomplete_json",
    "complete_json",
]
