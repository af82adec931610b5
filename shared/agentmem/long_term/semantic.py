"""Semantic memory: facts about concepts, and a concept graph stored with them.

Each ``store_knowledge`` call writes one memory about a concept: its facts as the content,
the concept in the indexed ``concept`` payload field, and its relations as
``(predicate, target)`` pairs (targets also in the indexed ``related_concepts`` field). The
graph therefore persists with the memories and is traversed with payload-filtered scrolls,
outgoing (``concept == c``) and incoming (``related_concepts`` contains ``c``) edges alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agentmem._sansio import Program, async_twin, twin
from agentmem._util.checks import check_int
from agentmem._util.pydantic_errors import describe
from agentmem.errors import InvalidValueError
from agentmem.long_term._view import MemoryView
from agentmem.long_term.records import MemoryRecord, RecordFilter, Relation
from agentmem.long_term.store import ScoredRecord

__all__ = ["RelatedConcept", "SemanticMemory"]

RelationsLike = Mapping[str, str | Sequence[str]] | Sequence[tuple[str, str]] | None
MAX_DEPTH = 5


@dataclass(frozen=True)
class RelatedConcept:
    """A concept reached from the start concept.

    Attributes:
        concept: The concept reached.
        depth: Number of edges from the start concept.
        path: ``(from, predicate, to)`` edges from the start concept to this one;
            an incoming edge is shown in its stored direction.
    """

    concept: str
    depth: int
    path: tuple[tuple[str, str, str], ...]


class SemanticMemory(MemoryView):
    """Facts and concepts on a :class:`LongTermMemory` (type ``semantic``).

    Example:
        >>> knowledge = SemanticMemory(long_term)  # doctest: +SKIP
        >>> knowledge.store_knowledge("Python", ["uses indentation for blocks"],
        ...                           {"is_a": "programming language"})  # doctest: +SKIP
        >>> [c.concept for c in knowledge.get_related_concepts("Python")]  # doctest: +SKIP
        ['programming language']
    """

    @twin
    def store_knowledge(
        self,
        /,
        concept: str,
        facts: str | Sequence[str],
        relations: RelationsLike = None,
        *,
        importance: float = 0.7,
        **fields: Any,
    ) -> Program[str]:
        """Store facts about ``concept`` with its relations; returns the memory id."""
        content, edges = _knowledge(concept, facts, relations)
        record = yield from self._store(
            content,
            "semantic",
            None,
            importance,
            subtype=fields.pop("subtype", "concept"),
            concept=concept.strip(),
            relations=edges,
            **fields,
        )
        return record.id

    astore_knowledge = async_twin(store_knowledge)

    @twin
    def query_knowledge(self, query: str, top_k: int = 5) -> Program[list[ScoredRecord]]:
        """Semantic memories most relevant to ``query``."""
        return (yield from self._retrieve(query, top_k, "semantic"))

    aquery_knowledge = async_twin(query_knowledge)

    def get_related_concepts(self, concept: str, depth: int = 1) -> list[RelatedConcept]:
        """Concepts within ``depth`` edges of ``concept`` (both directions), nearest first."""
        return _traverse(self._edges, concept, depth)

    def _edges(self, concept: str) -> list[MemoryRecord]:
        out: list[MemoryRecord] = []
        for flt in (RecordFilter(concepts=(concept,)), RecordFilter(related_to=(concept,))):
            offset: str | None = None
            while True:
                page, offset = self.memory.scroll_records(flt, limit=256, offset=offset)
                out.extend(page)
                if offset is None:
                    break
        return out


def _traverse(edges_of: Any, start: str, depth: int) -> list[RelatedConcept]:
    check_int(depth, "depth", maximum=MAX_DEPTH, error=InvalidValueError)
    start = start.strip()
    seen = {start}
    frontier: list[tuple[str, tuple[tuple[str, str, str], ...]]] = [(start, ())]
    found: list[RelatedConcept] = []
    for level in range(1, depth + 1):
        next_frontier: list[tuple[str, tuple[tuple[str, str, str], ...]]] = []
        for concept, path in frontier:
            for record in edges_of(concept):
                for rel in record.relations:
                    source = record.concept or ""
                    if source == concept:
                        neighbour = rel.target
                    elif rel.target == concept:
                        neighbour = source
                    else:
                        continue
                    if not neighbour or neighbour in seen:
                        continue
                    seen.add(neighbour)
                    step = (*path, (source, rel.predicate, rel.target))
                    found.append(RelatedConcept(neighbour, level, step))
                    next_frontier.append((neighbour, step))
        frontier = next_frontier
    return found


def _knowledge(
    concept: str, facts: str | Sequence[str], relations: RelationsLike
) -> tuple[str, list[Relation]]:
    if not isinstance(concept, str) or not concept.strip():
        msg = "concept must be a non-empty string"
        raise InvalidValueError(msg)
    fact_list = [facts] if isinstance(facts, str) else list(facts)
    if not fact_list or not all(isinstance(f, str) and f.strip() for f in fact_list):
        msg = "facts must be a non-empty string or a non-empty list of non-empty strings"
        raise InvalidValueError(msg)
    pairs: list[tuple[str, str]] = []
    if isinstance(relations, Mapping):
        for predicate, targets in relations.items():
            for target in [targets] if isinstance(targets, str) else targets:
                pairs.append((predicate, target))
    elif relations is not None:
        pairs = [tuple(pair) for pair in relations]  # type: ignore[misc]
    try:
        edges = [Relation(predicate=p, target=t.strip()) for p, t in pairs]
    except (ValidationError, AttributeError, ValueError) as exc:
        detail = describe(exc, "relation") if isinstance(exc, ValidationError) else str(exc)
        msg = f"relations must be (predicate, target) strings: {detail}"
        raise InvalidValueError(msg) from None
    content = f"{concept.strip()}: " + "; ".join(f.strip() for f in fact_list)
    return content, edges
