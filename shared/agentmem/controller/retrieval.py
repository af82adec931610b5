"""Retrieval strategies over the three tiers, and how recalled memories are rendered.

Strategies of :meth:`MemoryRetriever.retrieve_relevant_context`:

* ``recent``: the newest turns of the conversation (short-term view);
* ``working``: the working memory (variables, tasks, hypotheses, reasoning steps);
* ``semantic``: long-term memories by dense similarity;
* ``hybrid``: long-term memories by dense + BM25 (score fusion, temporal, importance and
  recency boosts, relevance floor: see :mod:`agentmem.long_term.ranking`), plus working
  memory and the recent turns. A memory drawn only from messages among those recent
  turns is left out: it would show the same thing twice.

:meth:`MemoryRetriever.recall` returns only the long-term hits of a strategy: it is what
``MemoryManager.build_context`` asks for; the context assembler (:mod:`agentmem.context`)
renders working memory, the history and the memories once, and leaves out the memories
the history it sends already shows.

Recalled memories are data, not instructions: :func:`agentmem.context.render_memory_block`
wraps them in a labelled block and neutralizes markup inside them, so a stored "ignore
previous instructions" reaches the model as a quoted memory, never as part of the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Literal

from agentmem._sansio import Program, async_twin, call, twin
from agentmem.errors import ConfigurationError
from agentmem.long_term.memory import LongTermMemory
from agentmem.long_term.ranking import SearchMode
from agentmem.long_term.render import MEMORY_BLOCK_CLOSE, MEMORY_BLOCK_OPEN, render_memory_line
from agentmem.long_term.store import ScoredRecord
from agentmem.short_term.base import ShortTermMemory
from agentmem.types import Message
from agentmem.working import WorkingMemory

__all__ = [
    "MEMORY_BLOCK_CLOSE",
    "MEMORY_BLOCK_OPEN",
    "ContextItem",
    "MemoryRetriever",
    "RetrievedContext",
    "Strategy",
    "render_memory_line",
]

Strategy = Literal["recent", "working", "semantic", "hybrid"]
STRATEGIES: tuple[str, ...] = ("recent", "working", "semantic", "hybrid")


@dataclass(frozen=True)
class ContextItem:
    """One piece of retrieved context.

    Attributes:
        source: ``recent``, ``working`` or ``long_term``.
        content: The text.
        score: Relevance (long-term items) or ``None``.
        hit: The long-term search hit, with its score components.
    """

    source: Literal["recent", "working", "long_term"]
    content: str
    score: float | None = None
    hit: ScoredRecord | None = None


@dataclass
class RetrievedContext:
    """What a strategy retrieved, in priority order."""

    strategy: Strategy
    items: list[ContextItem] = field(default_factory=list)

    @property
    def memories(self) -> list[ScoredRecord]:
        """The long-term hits among the items."""
        return [i.hit for i in self.items if i.hit is not None]


@dataclass(eq=False)
class MemoryRetriever:
    """Retrieves context for a query from the short-term, working and long-term tiers.

    Attributes:
        long_term: Long-term memory (scoped).
        working: Working memory of the session, if any (keyword-only, like the rest).
        short_term: Short-term memory of the session, if any.
        recent_turns: How many recent messages the ``recent``/``hybrid`` strategies return.

    Example:
        >>> retriever = MemoryRetriever(long_term, working=wm)  # doctest: +SKIP
        >>> retriever.retrieve_relevant_context("tabs?", strategy="hybrid")  # doctest: +SKIP
    """

    long_term: LongTermMemory
    _: KW_ONLY
    working: WorkingMemory | None = None
    short_term: ShortTermMemory | None = None
    recent_turns: int = 6

    @staticmethod
    def check_strategy(strategy: str) -> Strategy:
        """``strategy`` if it is one of :data:`Strategy`, else :class:`ConfigurationError`.

        Example:
            >>> MemoryRetriever.check_strategy("hybrid")
            'hybrid'
        """
        if strategy not in STRATEGIES:
            msg = f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}"
            raise ConfigurationError(msg)
        return strategy  # type: ignore[return-value]

    @twin
    def recall(
        self, query: str, strategy: Strategy = "hybrid", top_k: int = 5
    ) -> Program[list[ScoredRecord]]:
        """The long-term memories ``strategy`` recalls for ``query``, best first, with their
        score components: dense search for ``semantic``, hybrid ranking for ``hybrid``, none
        for ``recent`` and ``working``. Nothing else is read or rendered: this is what
        ``MemoryManager.build_context`` asks for, the context assembler does the rest (and
        leaves out the memories the history it sends already shows).

        Example:
            >>> retriever.recall("tabs?", "hybrid", top_k=3)  # doctest: +SKIP
            [ScoredRecord(...), ...]
        """
        return self._recall(query, self.check_strategy(strategy), top_k)

    arecall = async_twin(recall)

    def _recall(self, query: str, strategy: Strategy, top_k: int) -> Program[list[ScoredRecord]]:
        if strategy not in ("semantic", "hybrid"):
            return []
        mode: SearchMode = "dense" if strategy == "semantic" else "hybrid"
        long_term = self.long_term
        return (
            yield from call(
                long_term.retrieve_memories,
                long_term.aretrieve_memories,
                query,
                top_k,
                mode=mode,
                explain=True,
            )
        )

    @twin
    def retrieve_relevant_context(
        self, query: str, strategy: Strategy = "hybrid", top_k: int = 5
    ) -> Program[RetrievedContext]:
        """Context for ``query`` by ``strategy`` (see the module docstring).

        The recent turns are the newest ``recent_turns`` messages of the short-term view
        (O(view), never O(history)); working memory is rendered once.

        Example:
            >>> retriever.retrieve_relevant_context("tabs?", "hybrid").memories  # doctest: +SKIP
            [ScoredRecord(...), ...]
        """
        strategy = self.check_strategy(strategy)
        out = RetrievedContext(strategy)
        recent: list[Message] = []
        short_term = self.short_term
        if strategy in ("recent", "hybrid") and short_term is not None and self.recent_turns > 0:
            view = yield from call(short_term.get_view, short_term.aget_view)
            turns = [m for m in view.messages if not m.metadata.get("agentmem_summary")]
            recent = turns[-self.recent_turns :]
        hits = yield from self._recall(query, strategy, top_k)
        out.items += _memory_items(_not_in(hits, recent))
        working = self.working
        if strategy in ("working", "hybrid") and working is not None:
            text = yield from call(working.get_context_for_llm, working.aget_context_for_llm)
            out.items += _working_items(text)
        out.items += self._recent_items(recent)
        return out

    aretrieve_relevant_context = async_twin(retrieve_relevant_context)

    @staticmethod
    def _recent_items(messages: Sequence[Message]) -> list[ContextItem]:
        return [ContextItem("recent", f"{m.role}: {m.content}") for m in messages]


def _not_in(hits: Sequence[ScoredRecord], recent: Sequence[Message]) -> list[ScoredRecord]:
    """The hits not drawn entirely from ``recent`` messages (those are shown already)."""
    shown = {m.id for m in recent}
    return [
        h
        for h in hits
        if not h.record.source_message_ids
        or not all(i in shown for i in h.record.source_message_ids)
    ]


def _memory_items(hits: Sequence[ScoredRecord]) -> list[ContextItem]:
    return [ContextItem("long_term", h.record.content, h.score, h) for h in hits]


def _working_items(text: str) -> list[ContextItem]:
    return [ContextItem("working", text)] if text else []
