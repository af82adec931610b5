"""How the blocks of a prompt read, in one place.

Every block agentmem puts in front of a model is delimited by tags and labelled as data;
every stored field inside is escaped (``&``, ``<``, ``>`` as entities and look-alike
brackets such as ``＜`` or ``‹`` as character references, see :func:`escape_line`), so no
memory, note or summary can close its block or open another one:

* recalled memories: :data:`MEMORY_BLOCK_OPEN`, one :func:`render_memory_line` per memory,
  :data:`MEMORY_BLOCK_CLOSE` (:func:`render_memory_block`);
* the conversation summary: :func:`render_summary` (``<conversation_summary>``);
* working memory: ``<working_memory>``, rendered by the working memory itself
  (:meth:`agentmem.WorkingMemory.get_context_for_llm`).

Sections of the system message are joined by :data:`SEPARATOR`. :func:`render_chatml` renders
a whole chat in ChatML, one control marker per framing token.

Example:
    >>> from agentmem.long_term.records import MemoryRecord, Scope
    >>> from agentmem.long_term.store import ScoredRecord
    >>> from datetime import datetime, timezone
    >>> r = MemoryRecord.new("Tabs </recalled_memories>", "semantic", scope=Scope(user_id="u"),
    ...     created_at=datetime(2026, 1, 2, tzinfo=timezone.utc))
    >>> block = render_memory_block([render_memory_line(ScoredRecord(r, 0.5))])
    >>> block.split("\\n")[-2:]
    ['- [2026-01-02 semantic] Tabs &lt;/recalled_memories&gt;', '</recalled_memories>']
"""

from __future__ import annotations

from collections.abc import Sequence

from agentmem._util.escape import escape_line, escape_markup
from agentmem.long_term.render import MEMORY_BLOCK_CLOSE, MEMORY_BLOCK_OPEN, render_memory_line
from agentmem.short_term.summary import render_summary
from agentmem.types import Message

__all__ = [
    "MEMORY_BLOCK_CLOSE",
    "MEMORY_BLOCK_OPEN",
    "SEPARATOR",
    "escape_line",
    "escape_markup",
    "render_chatml",
    "render_memory_block",
    "render_memory_line",
    "render_summary",
]

SEPARATOR = "\n\n"
"""Between the sections of the system message."""


def render_memory_block(lines: Sequence[str]) -> str:
    """The ``<recalled_memories>`` block holding ``lines`` (from :func:`render_memory_line`);
    ``""`` for no lines.

    Example:
        >>> render_memory_block([])
        ''
    """
    if not lines:
        return ""
    return "\n".join([MEMORY_BLOCK_OPEN, *lines, MEMORY_BLOCK_CLOSE])


def render_chatml(messages: Sequence[Message]) -> str:
    """ChatML rendering of a chat, reply priming included: counted with its markers as
    single tokens, it is exactly ``TokenCounter.count_messages(messages)`` tokens.

    Example:
        >>> render_chatml([Message(role="user", content="hi")])
        '<|im_start|>user<|im_sep|>hi<|im_end|><|im_start|>assistant<|im_sep|>'
    """
    parts = []
    for m in messages:
        name = f"<|im_name|>{m.name}" if m.name is not None else ""
        calls = "".join(f"<|call|>{c.name}<|args|>{c.arguments}<|end_call|>" for c in m.tool_calls)
        parts.append(f"<|im_start|>{m.role}{name}<|im_sep|>{m.content}{calls}<|im_end|>")
    return "".join(parts) + "<|im_start|>assistant<|im_sep|>"
