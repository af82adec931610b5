"""Retrieval strategies over the three tiers, and how recalled memories are rendered.

Strategies of :meth:`MemoryRetriever.retrieve_relevant_context`:

* ``recent``: the newest turns of the conversation (short-term view);
* ``working``: the working memory (variables, tasks, hypotheses, reasoning steps);
* ``semantic``: long-term memories by dense similarity;
* ``hybrid``: long-term memories by dense + BM25 (score fusion, temporal, importance and
  recency boosts, relevance floor: see :mod:`agentmem.long_term.ranking`), plus working
  memory and the recent turns. A memory drawn only from messages among those recent
  turns is left out: it would show the same thing twice.

Recalled memories are data, not instructions: :func:`render_memories` wraps them in a
labelled block and neutralizes markup inside them, so a stored "ignore previous
instructions" reaches the model as a quoted memory, never as part of the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

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


class MemoryRetriever:
    """Retrieves context for a query from the short-term, working and long-term tiers.

    Args:
        long_term: Long-term memory (scoped).
        working: Working memory of the session, if any.
        short_term: Short-term memory of the session, if any.
        recent_turns: How many recent messages the ``recent``/``hybrid`` strategies return.

    Example:
        >>> retriever = MemoryRetriever(long_term, working=wm)  # doctest: +SKIP
        >>> retriever.retrieve_relevant_context("tabs?", strategy="hybrid")  # doctest: +SKIP
    """

    def __init__(
        self,
        long_term: LongTermMemory,
        *,
        working: WorkingMemory | None = None,
        short_term: ShortTermMemory | None = None,
        recent_turns: int = 6,
    ) -> None:
        self.long_term = long_term
        self.working = working
        self.short_term = short_term
        self.recent_turns = recent_turns

    @staticmethod
    def _check(strategy: str) -> Strategy:
        if strategy not in STRATEGIES:
            msg = f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}"
            raise ConfigurationError(msg)
        return strategy  # type: ignore[return-value]

    def retrieve_relevant_context(
        self, query: str, strategy: Strategy = "hybrid", top_k: int = 5
    ) -> RetrievedContext:
        """Context for ``query`` by ``strategy`` (see the module docstring)."""
        strategy = self._check(strategy)
        out = RetrievedContext(strategy)
        recent: list[Message] = []
        if strategy in ("recent", "hybrid") and self.short_term is not None:
            recent = self.short_term.get_log()[-self.recent_turns :]
        if strategy in ("semantic", "hybrid"):
            mode: SearchMode = "dense" if strategy == "semantic" else "hybrid"
            hits = self.long_term.retrieve_memories(query, top_k, mode=mode, explain=True)
            out.items += _memory_items(_not_in(hits, recent))
        if strategy in ("working", "hybrid") and self.working is not None:
            out.items += _working_items(self.working.get_context_for_llm())
        out.items += self._recent_items(recent)
        return out

    async def aretrieve_relevant_context(
        self, query: str, strategy: Strategy = "hybrid", top_k: int = 5
    ) -> RetrievedContext:
        """Async twin of :meth:`retrieve_relevant_context`."""
        strategy = self._check(strategy)
        out = RetrievedContext(strategy)
        recent: list[Message] = []
        if strategy in ("recent", "hybrid") and self.short_term is not None:
            recent = (await self.short_term.aget_log())[-self.recent_turns :]
        if strategy in ("semantic", "hybrid"):
            mode: SearchMode = "dense" if strategy == "semantic" else "hybrid"
            hits = await self.long_term.aretrieve_memories(query, top_k, mode=mode, explain=True)
            out.items += _memory_items(_not_in(hits, recent))
        if strategy in ("working", "hybrid") and self.working is not None:
            out.items += _working_items(await self.working.aget_context_for_llm())
        out.items += self._recent_items(recent)
        return out

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
