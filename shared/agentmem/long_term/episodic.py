"""Episodic memory: what happened — situation, action, outcome and the lesson drawn."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentmem._sansio import Program, async_twin, twin
from agentmem.errors import InvalidValueError
from agentmem.long_term._view import MemoryView
from agentmem.long_term.store import ScoredRecord

__all__ = ["Episode", "EpisodicMemory"]

_PARTS = ("situation", "action", "outcome", "lesson")


@dataclass(frozen=True)
class Episode:
    """One recalled episode.

    Attributes:
        id: Memory id.
        situation: What the agent faced.
        action: What it did.
        outcome: What came of it.
        lesson: What to do next time, if anything was learned.
        importance: Importance in [0, 1].
        score: Relevance to the query that recalled it.
    """

    id: str
    situation: str
    action: str
    outcome: str
    lesson: str | None
    importance: float
    score: float

    @classmethod
    def from_hit(cls, hit: ScoredRecord) -> Episode:
        parts = hit.record.metadata.get("episode") or {}
        return cls(
            id=hit.record.id,
            situation=str(parts.get("situation", hit.record.content)),
            action=str(parts.get("action", "")),
            outcome=str(parts.get("outcome", "")),
            lesson=parts.get("lesson"),
            importance=hit.record.importance,
            score=hit.score,
        )


class EpisodicMemory(MemoryView):
    """Episodes on a :class:`LongTermMemory` (type ``episodic``, subtype ``episode``).

    Example:
        >>> episodes = EpisodicMemory(long_term)  # doctest: +SKIP
        >>> episodes.store_episode("CI failed on a flaky test", "re-ran it", "it passed",
        ...                        lesson="quarantine flaky tests")  # doctest: +SKIP
    """

    @twin
    def store_episode(
        self,
        /,
        situation: str,
        action: str,
        outcome: str,
        lesson: str | None = None,
        *,
        importance: float = 0.5,
        metadata: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Program[str]:
        """Store an episode; returns its memory id."""
        content, meta = _episode(situation, action, outcome, lesson, metadata)
        record = yield from self._store(
            content, "episodic", meta, importance, subtype="episode", **fields
        )
        return record.id

    astore_episode = async_twin(store_episode)

    @twin
    def recall_similar_episodes(self, situation: str, top_k: int = 3) -> Program[list[Episode]]:
        """Episodes whose situation resembles ``situation``, most similar first."""
        hits = yield from self._retrieve(situation, top_k, "episodic")
        return [Episode.from_hit(h) for h in hits]

    arecall_similar_episodes = async_twin(recall_similar_episodes)


def _episode(
    situation: str,
    action: str,
    outcome: str,
    lesson: str | None,
    metadata: Mapping[str, Any] | None,
) -> tuple[str, dict[str, Any]]:
    parts = {"situation": situation, "action": action, "outcome": outcome, "lesson": lesson}
    for name in _PARTS[:3]:
        value = parts[name]
        if not isinstance(value, str) or not value.strip():
            msg = f"episode {name} must be a non-empty string"
            raise InvalidValueError(msg)
    if lesson is not None and not isinstance(lesson, str):
        msg = "episode lesson must be a string or None"
        raise InvalidValueError(msg)
    lines = [f"{name.capitalize()}: {parts[name]}" for name in _PARTS if parts[name]]
    return "\n".join(lines), {**(metadata or {}), "episode": parts}
