"""Long-term stores on Qdrant: one collection schema, two engines.

* :class:`QdrantEdgeStore`: Qdrant Edge in-process, on a directory (the embedded default),
  with background index builds (:class:`AutoIndex`);
* :class:`QdrantClientStore`: a Qdrant server, or qdrant-client's local mode (needs the
  ``qdrant`` extra; imported on first use).

Both implement :class:`agentmem.long_term.MemoryStore`; the tiers above reach them only
through it.

Example:
    >>> from agentmem.stores.qdrant import AutoIndex
    >>> AutoIndex().min_unindexed > 0
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore

if TYPE_CHECKING:
    from agentmem.stores.qdrant.client import QdrantClientStore

__all__ = ["AutoIndex", "QdrantClientStore", "QdrantEdgeStore"]


def __getattr__(name: str) -> object:
    # QdrantClientStore needs the optional ``qdrant-client`` package: import it on first use.
    if name == "QdrantClientStore":
        from agentmem.stores.qdrant.client import QdrantClientStore

        return QdrantClientStore
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
