"""Checks of constructor options shared across the tiers (private).

Example:
    >>> check_positive_int(3, "workers")
    3
    >>> check_positive_int(0, "workers")
    Traceback (most recent call last):
    ...
    agentmem.errors.ConfigurationError: workers must be an integer >= 1, got 0
"""

from __future__ import annotations

from agentmem.errors import ConfigurationError

__all__ = ["check_positive_int"]


def check_positive_int(value: object, name: str) -> int:
    """``value`` if it is an ``int`` >= 1 (not a bool), else :class:`ConfigurationError`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"{name} must be an integer >= 1, got {value!r}"
        raise ConfigurationError(msg)
    return value
