"""Checks of integer options and arguments shared across the tiers and adapters (private).

Each returns the value when it is usable and raises :class:`ConfigurationError` otherwise,
naming the argument, the value given and (with ``hint``) how to fix it. ``bool`` is refused
although it is an ``int``, and so are floats (``2.0``, ``nan``) and numeric strings.

Example:
    >>> check_positive_int(3, "workers")
    3
    >>> check_positive_int(0, "workers")
    Traceback (most recent call last):
    ...
    agentmem.errors.ConfigurationError: workers must be an integer >= 1, got 0
    >>> check_non_negative_int(-1, "offset", hint="; 0 is the first item")
    Traceback (most recent call last):
    ...
    agentmem.errors.ConfigurationError: offset must be an integer >= 0, got -1; 0 is the first item
"""

from __future__ import annotations

from agentmem.errors import ConfigurationError

__all__ = ["check_non_negative_int", "check_positive_int"]


def _check_int(value: object, name: str, minimum: int, hint: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        msg = f"{name} must be an integer >= {minimum}, got {value!r}{hint}"
        raise ConfigurationError(msg)
    return value


def check_positive_int(value: object, name: str, *, hint: str = "") -> int:
    """``value`` if it is an ``int`` >= 1 (not a bool), else :class:`ConfigurationError`
    (``hint``, e.g. ``"; for example max_tokens=2000"``, ends its message)."""
    return _check_int(value, name, 1, hint)


def check_non_negative_int(value: object, name: str, *, hint: str = "") -> int:
    """``value`` if it is an ``int`` >= 0 (not a bool), else :class:`ConfigurationError`
    (``hint`` ends its message)."""
    return _check_int(value, name, 0, hint)
