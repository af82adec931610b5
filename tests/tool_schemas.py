"""An OpenAI tool schema for the tests that assemble or count a prompt with tools.

Example:
    >>> from agentmem import TokenCounter
    >>> TokenCounter("gpt-4o").count_tools(SEARCH_MEMORY_TOOLS, has_system=True) > 0
    True
"""

from __future__ import annotations

from typing import Any

__all__ = ["SEARCH_MEMORY_TOOLS"]

#: One function tool, ``search_memory(query)``, as an agent's model would be offered it.
SEARCH_MEMORY_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "search_memory",
            "description": "Search the user's long-term memories.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What to find."}},
                "required": ["query"],
            },
        },
    }
]
