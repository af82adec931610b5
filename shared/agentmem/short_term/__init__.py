"""Short-term memory: the conversation, budgeted with exact token counts.

Example:
    >>> from agentmem.short_term import SlidingWindowMemory
    >>> memory = SlidingWindowMemory(window_size=1)
    >>> _ = memory.add_message("user", "first")
    >>> _ = memory.add_message("user", "second")
    >>> memory.get_messages()
    [{'role': 'user', 'content': 'second'}]
"""

from agentmem.short_term.base import ShortTermMemory
from agentmem.short_term.buffer import ConversationBufferMemory
from agentmem.short_term.summary import SUMMARY_STATE_KEY, Summarizer, SummaryBufferMemory
from agentmem.short_term.view import ShortTermView
from agentmem.short_term.window import SlidingWindowMemory

__all__ = [
    "SUMMARY_STATE_KEY",
    "ConversationBufferMemory",
    "ShortTermMemory",
    "ShortTermView",
    "SlidingWindowMemory",
    "Summarizer",
    "SummaryBufferMemory",
]
