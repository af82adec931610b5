"""Recall results: the list of hits a search returns, which a notebook shows as HTML.

Example:
    >>> RecallResults([]) == [], repr(RecallResults([]))
    (True, '[]')
"""

from __future__ import annotations

from agentmem.long_term.store import ScoredRecord

__all__ = ["RecallResults"]


class RecallResults(list[ScoredRecord]):
    """Hits, best first: a plain ``list`` (same repr, equality and pickling) that displays
    in Jupyter as a table, each score drawn as a stacked bar of its parts."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        from agentmem.inspector.reprs import hits_repr

        return hits_repr(self)
