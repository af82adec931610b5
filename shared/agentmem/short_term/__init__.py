"""Short-term memory: the conversation, budgeted with exact token counts.

Names are imported on first use (PEP 562): a module that needs the view alone does not
import the summarizer.

Example:
    >>> from agentmem.short_term import SlidingWindowMemory
    >>> memory = SlidingWindowMemory(window_size=1)
    >>> _ = memory.add_message("user", "first")
    >>> _ = memory.add_message("user", "second")
    >>> memory.get_messages()
    [{'role': 'user', 'content': 'second'}]
"""

from typing import TYPE_CHECKING

from agentmem._util.lazy import lazy_exports

if TYPE_CHECKING:  # the static names, for type checkers and IDEs
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

_EXPORTS = {  # each name -> the module the TYPE_CHECKING block imports it from
    "SUMMARY_STATE_KEY": "agentmem.short_term.summary",
    "ConversationBufferMemory": "agentmem.short_term.buffer",
    "ShortTermMemory": "agentmem.short_term.base",
    "ShortTermView": "agentmem.short_term.view",
    "SlidingWindowMemory": "agentmem.short_term.window",
    "Summarizer": "agentmem.short_term.summary",
    "SummaryBufferMemory": "agentmem.short_term.summary",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
