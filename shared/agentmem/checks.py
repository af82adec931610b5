"""Checks of integer arguments (budgets, limits, sizes), public so that the framework
adapters refuse bad arguments exactly as the core does: with
:class:`~agentmem.errors.ConfigurationError`, naming the argument, the value given and how
to fix it. ``bool``, floats (``2.0``, ``nan``) and numeric strings are refused.

Example:
    >>> from agentmem.checks import check_positive_int
    >>> check_positive_int(3000, "token_limit")
    3000
    >>> check_positive_int(-5, "limit", hint="; e.g. limit=10")
    Traceback (most recent call last):
    ...
    agentmem.errors.ConfigurationError: limit must be an integer >= 1, got -5; e.g. limit=10
"""

from __future__ import annotations

from agentmem._util.checks import check_non_negative_int, check_positive_int

__all__ = ["check_non_negative_int", "check_positive_int"]
