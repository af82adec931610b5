"""The memory controller: one user's tiers managed together.

* :mod:`~agentmem.controller.manager`: :class:`MemoryManager`, the facade over the tiers;
* :mod:`~agentmem.controller.config`: :class:`ManagerConfig`, the settings managers share;
* :mod:`~agentmem.controller.builder`: :class:`ManagerBuilder`, how managers are assembled;
* :mod:`~agentmem.controller.consolidation`: short-term into long-term;
* :mod:`~agentmem.controller.conflicts`: new memories against old ones;
* :mod:`~agentmem.controller.forgetting`: what goes, by policy;
* :mod:`~agentmem.controller.retrieval`: recall by several strategies;
* :mod:`~agentmem.controller.scheduler`: when consolidation runs (threshold, background
  worker pool, one run per session at a time).

Names are imported on first use (PEP 562): ``from agentmem.controller.forgetting import
ForgettingPolicy`` does not build the manager's imports.

Example:
    >>> from agentmem.controller import ForgettingPolicy
    >>> ForgettingPolicy(max_age_days=30.0).max_age_days
    30.0
"""

from typing import TYPE_CHECKING

from agentmem._util.lazy import lazy_exports

if TYPE_CHECKING:  # the static names, for type checkers and IDEs
    from agentmem.controller.builder import ManagerBuilder
    from agentmem.controller.config import DEFAULT_MODEL, ManagerConfig, ManagerSettings
    from agentmem.controller.conflicts import ConflictDecision, ConflictResolver
    from agentmem.controller.consolidation import ConsolidationReport, MemoryConsolidator
    from agentmem.controller.forgetting import ForgettingPolicy, ForgettingReport
    from agentmem.controller.manager import MemoryManager
    from agentmem.controller.retrieval import MemoryRetriever
    from agentmem.controller.scheduler import ConsolidationQueue, ConsolidationScheduler

__all__ = [
    "DEFAULT_MODEL",
    "ConflictDecision",
    "ConflictResolver",
    "ConsolidationQueue",
    "ConsolidationReport",
    "ConsolidationScheduler",
    "ForgettingPolicy",
    "ForgettingReport",
    "ManagerBuilder",
    "ManagerConfig",
    "ManagerSettings",
    "MemoryConsolidator",
    "MemoryManager",
    "MemoryRetriever",
]

_EXPORTS = {  # each name -> the module the TYPE_CHECKING block imports it from
    "DEFAULT_MODEL": "agentmem.controller.config",
    "ConflictDecision": "agentmem.controller.conflicts",
    "ConflictResolver": "agentmem.controller.conflicts",
    "ConsolidationQueue": "agentmem.controller.scheduler",
    "ConsolidationReport": "agentmem.controller.consolidation",
    "ConsolidationScheduler": "agentmem.controller.scheduler",
    "ForgettingPolicy": "agentmem.controller.forgetting",
    "ForgettingReport": "agentmem.controller.forgetting",
    "ManagerBuilder": "agentmem.controller.builder",
    "ManagerConfig": "agentmem.controller.config",
    "ManagerSettings": "agentmem.controller.config",
    "MemoryConsolidator": "agentmem.controller.consolidation",
    "MemoryManager": "agentmem.controller.manager",
    "MemoryRetriever": "agentmem.controller.retrieval",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
