"""Deprecated: moved to :mod:`agentmem.stores.qdrant.client` (this path is removed in 0.3)."""

from agentmem._moved import moved_module

__getattr__ = moved_module(__name__, "agentmem.stores.qdrant.client")
