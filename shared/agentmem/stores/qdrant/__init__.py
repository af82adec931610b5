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

from agentmem._util.lazy import lazy_exports

if TYPE_CHECKING:  # the static names, for type checkers and IDEs
    from agentmem.stores.qdrant.client import QdrantClientStore
    from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore

__all__ = ["AutoIndex", "QdrantClientStore", "QdrantEdgeStore"]

# Imported on first use: the Qdrant Edge engine, or the optional ``qdrant-client`` package.
_EXPORTS = {  # each name -> the module the TYPE_CHECKING block imports it from
    "AutoIndex": "agentmem.stores.qdrant.edge",
    "QdrantClientStore": "agentmem.stores.qdrant.client",
    "QdrantEdgeStore": "agentmem.stores.qdrant.edge",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
