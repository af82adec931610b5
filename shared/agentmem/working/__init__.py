"""Working memory: the task at hand, per session.

Context variables with TTL (by clock and/or by turns), a bounded scratchpad of reasoning steps,
a task stack with statuses and hypotheses with confidence and evidence, rendered for the LLM
within an exact token budget and persisted with the session.

Example:
    >>> from agentmem.working import WorkingMemory
    >>> wm = WorkingMemory()
    >>> _ = wm.add_hypothesis("the cache is stale", 0.6)
    >>> wm.get_best_hypothesis().text
    'the cache is stale'
"""

from agentmem.working import models
from agentmem.working._validate import DEFAULT_MAX_VALUE_BYTES, MAX_KEY_LENGTH
from agentmem.working.memory import WorkingMemory, WorkingMemoryOptions
from agentmem.working.models import *
from agentmem.working.render import render_context

__all__ = [
    "DEFAULT_MAX_VALUE_BYTES",
    "MAX_KEY_LENGTH",
    "WorkingMemory",
    "WorkingMemoryOptions",
    "render_context",
    *models.__all__,
]
