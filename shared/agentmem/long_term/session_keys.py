"""Session keys: lift the memories of the session a query is about.

A conversation's evidence tends to sit together: the session whose memories match a query
best is likely the one it asks about, and its weaker matches are likely relevant too. The
key of a session is read off the first-stage ranking itself (no extra store call): the
sum of the relevance ``score / best score`` of its memories among the hits. Each hit then
gets its session's key over the best session's key as its ``lift`` in [0, 1]
(:func:`session_lift`); :func:`agentmem.long_term.expansion.expand` weighs it with
``session_weight`` and shows it as the ``session`` component.

A memory's session is its provenance, ``source_session_id`` (the LoCoMo ingest and the
consolidation of a chat session both set it); memories without one get no lift.

Example:
    >>> from agentmem.long_term.records import MemoryRecord, Scope
    >>> from agentmem.long_term.store import ScoredRecord
    >>> def hit(text, session, score):
    ...     record = MemoryRecord.new(text, "episodic", scope=Scope(user_id="u"),
    ...                               source_session_id=session)
    ...     return ScoredRecord(record, score)
    >>> hits = [hit("a", "s1", 2.0), hit("b", "s2", 1.6), hit("c", "s2", 1.0)]
    >>> [round(v, 2) for v in session_lift(hits).values()]
    [0.77, 1.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence

from agentmem.long_term.store import ScoredRecord

__all__ = ["session_keys", "session_lift"]


def session_keys(hits: Sequence[ScoredRecord]) -> dict[str, float]:
    """``{session id: key score}``: the summed relevance of each session's hits."""
    if not hits or hits[0].score <= 0:
        return {}
    top = hits[0].score
    keys: dict[str, float] = {}
    for hit in hits:
        session = hit.record.source_session_id
        if session is not None and hit.score > 0:
            keys[session] = keys.get(session, 0.0) + hit.score / top
    return keys


def session_lift(hits: Sequence[ScoredRecord]) -> dict[str, float]:
    """``{memory id: lift}``: each hit's session key over the best session's key."""
    keys = session_keys(hits)
    best = max(keys.values(), default=0.0)
    if best <= 0:
        return {}
    return {
        hit.record.id: keys[hit.record.source_session_id] / best
        for hit in hits
        if hit.record.source_session_id in keys
    }
