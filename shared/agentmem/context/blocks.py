"""The blocks a prompt is assembled from (see :mod:`agentmem.context`).

Each block is a small immutable value naming one part of the prompt; the assembler
(:func:`~agentmem.context.assemble_context`) decides what fits, renders each part once and
counts it once. Where a block goes does not depend on the order it is given in:

* the **system message**, in this order: :class:`InstructionsBlock`, :class:`SummaryBlock`,
  :class:`WorkingBlock`, :class:`RecalledBlock` (joined by a blank line);
* the **history**: a :class:`ViewBlock` (a short-term memory's budgeted view: its summary
  message and the recent turns) or a :class:`MessagesBlock` (a given list of messages,
  e.g. an agent framework's request);
* the :class:`QueryBlock`, sent last as a user message.

Example:
    >>> blocks = [InstructionsBlock("Be brief."), QueryBlock("tabs or spaces?")]
    >>> [b.key for b in blocks]
    ['system', 'query']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, TypeAlias

from agentmem.long_term.store import ScoredRecord
from agentmem.short_term.view import ShortTermView
from agentmem.types import Message

__all__ = [
    "Block",
    "InstructionsBlock",
    "MessagesBlock",
    "QueryBlock",
    "RecalledBlock",
    "SummaryBlock",
    "ViewBlock",
    "WorkingBlock",
]


@dataclass(frozen=True)
class _TextBlock:
    """A block that is one text, rendered as its kind says."""

    text: str


@dataclass(frozen=True)
class InstructionsBlock(_TextBlock):
    """The system prompt: first in the system message; never dropped.

    Example:
        >>> InstructionsBlock("Be brief.").key
        'system'
    """

    key: ClassVar[str] = "system"


@dataclass(frozen=True)
class SummaryBlock(_TextBlock):
    """A rolling conversation summary as a section of the system message, rendered as a
    ``<conversation_summary>`` block with its text escaped
    (:func:`agentmem.short_term.summary.render_summary`). Use it when the history is a
    :class:`MessagesBlock`; a :class:`ViewBlock` brings its own summary message.

    Example:
        >>> SummaryBlock("They talked about tabs.").key
        'summary'
    """

    key: ClassVar[str] = "summary"


@dataclass(frozen=True)
class WorkingBlock:
    """The session's working memory.

    Args:
        render: ``(max_tokens) -> str``: the working memory rendered within ``max_tokens``
            (``""`` when nothing fits), e.g. ``WorkingMemory.get_context_for_llm`` once its
            state is loaded. Called with the room left.
        share: Most of the budget it may take.
        rendered: ``(max_tokens, text)``: a render already made (typically for
            :meth:`room`, with the I/O that loads the state); used instead of calling
            ``render`` again for the same room, so a budget that is not tight renders
            working memory once.

    Example:
        >>> block = WorkingBlock(lambda n: "", rendered=(400, "<working_memory>..."))
        >>> block.room(2000), block.text_for(400)
        (400, '<working_memory>...')
    """

    render: Callable[[int], str]
    share: float = 0.2
    rendered: tuple[int, str] | None = None
    key: ClassVar[str] = "working_memory"

    @staticmethod
    def room(max_tokens: int, share: float = 0.2) -> int:
        """The room working memory gets in a ``max_tokens`` prompt that is not tight."""
        return max(int(max_tokens * share), 0)

    def text_for(self, max_tokens: int) -> str:
        """The working memory within ``max_tokens`` (the earlier render when it was for
        that room)."""
        if self.rendered is not None and self.rendered[0] == max_tokens:
            return self.rendered[1]
        return self.render(max_tokens)


@dataclass(frozen=True)
class RecalledBlock:
    """Recalled long-term memories, best first: one ``<recalled_memories>`` block labelled
    as data, one escaped line per memory (whole lines only).

    Args:
        hits: The memories, best first.
        share: Most of the budget they may take.

    Example:
        >>> RecalledBlock([]).key
        'long_term'
    """

    hits: Sequence[ScoredRecord]
    share: float = 0.3
    key: ClassVar[str] = "long_term"


@dataclass(frozen=True)
class ViewBlock:
    """A short-term memory's budgeted view (its system messages, summary message and the
    newest turns), asked for with the room left: ``view_for(max_tokens)``, e.g.
    ``lambda n: short_term.get_view(max_tokens=n, refresh=False)``. O(view), never
    O(history): the short-term memory tokenizes each message once.

    Args:
        view_for: ``(max_tokens) -> ShortTermView``.
        latest: The memory's newest unit (:meth:`ShortTermMemory.newest_unit
            <agentmem.ShortTermMemory.newest_unit>`), required as a
            :class:`MessagesBlock`'s latest unit is: its room is kept before anything else
            is packed, it is always sent whole (alone, if the view's own summary or cap
            would crowd it out), and :class:`~agentmem.errors.ContextBudgetError` is raised
            when it does not fit. Empty (the default): the view fits what it can.

    Example:
        >>> from agentmem import ConversationBufferMemory
        >>> memory = ConversationBufferMemory()
        >>> block = ViewBlock(lambda n: memory.get_view(max_tokens=n))
        >>> block.key, block.view_for(100).messages
        ('recent', [])
    """

    view_for: Callable[[int], ShortTermView]
    latest: Sequence[Message] = ()
    key: ClassVar[str] = "recent"


@dataclass(frozen=True)
class MessagesBlock:
    """A given conversation (an agent framework's request): kept newest first in whole
    units (an assistant tool call with its results), never starting on an orphan tool
    result.

    Args:
        messages: The conversation, oldest first.
        keep_latest: The latest unit is required (an error when it cannot fit), as the
            message the model must answer.

    Example:
        >>> MessagesBlock([Message(role="user", content="hi")]).keep_latest
        True
    """

    messages: Sequence[Message]
    keep_latest: bool = True
    key: ClassVar[str] = "recent"
    units: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        units: list[list[int]] = []
        for i, message in enumerate(self.messages):
            if message.role == "tool" and units and self.messages[units[-1][0]].tool_calls:
                units[-1].append(i)
            else:
                units.append([i])
        object.__setattr__(self, "units", tuple(tuple(u) for u in units))


@dataclass(frozen=True)
class QueryBlock(_TextBlock):
    """The user's new message, sent last (wherever it stands in the blocks); never dropped.

    Example:
        >>> from agentmem.context import assemble_context
        >>> from agentmem.tokens import TokenCounter
        >>> blocks = [QueryBlock("tabs?"), InstructionsBlock("Be brief.")]
        >>> assemble_context(blocks, counter=TokenCounter(), max_tokens=100).messages
        [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'tabs?'}]
    """

    key: ClassVar[str] = "query"


Block: TypeAlias = (
    InstructionsBlock
    | SummaryBlock
    | WorkingBlock
    | RecalledBlock
    | ViewBlock
    | MessagesBlock
    | QueryBlock
)
"""Any block :func:`~agentmem.context.assemble_context` takes."""
