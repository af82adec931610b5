"""Deprecated: moved to :mod:`agentmem.controller.retrieval` (this path is removed in 0.3)."""

from agentmem._moved import moved_module

__getattr__ = moved_module(__name__, "agentmem.controller.retrieval")
