"""Checks of integer options and arguments shared across the tiers and adapters (private).

Each returns the value when it is usable and raises :class:`ConfigurationError` (or the
``error`` given) otherwise, naming the argument, the value given and (with ``hint``) how to
fix it. ``bool`` is refused although it is an ``int``, and so are floats (``2.0``, ``nan``)
and numeric strings. :func:`check_int` is the one check; the others are its common shapes.

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
    >>> check_int(True, "top_k", maximum=1000)
    Traceback (most recent call last):
    ...
    agentmem.errors.ConfigurationError: top_k must be an integer in [1, 1000], got True
    >>> check_optional_int(None, "max_tokens", minimum=0) is None
    True
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from agentmem.errors import AgentMemError, ConfigurationError

if TYPE_CHECKING:
    from typing_extensions import TypedDict, Unpack

    class IntOptions(TypedDict, total=False):
        """The keyword options of :func:`check_int`."""

        minimum: int
        maximum: int | None
        error: type[AgentMemError]
        expected: str | None
        hint: str


__all__ = [
    "check_int",
    "check_non_negative_int",
    "check_optional_int",
    "check_positive_int",
    "check_seconds",
]


def check_int(
    value: object,
    name: str,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    error: type[AgentMemError] = ConfigurationError,
    expected: str | None = None,
    hint: str = "",
) -> int:
    """``value`` if it is an ``int`` (not a bool) in ``[minimum, maximum]``, else ``error``.

    The message is ``"<name> <expected>, got <value!r><hint>"``; ``expected`` defaults to
    ``"must be an integer >= <minimum>"`` (or ``"... in [<minimum>, <maximum>]"``).
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        if expected is None:
            bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
            expected = f"must be an integer {bound}"
        msg = f"{name} {expected}, got {value!r}{hint}"
        raise error(msg)
    return value


def check_optional_int(value: object, name: str, **options: Unpack[IntOptions]) -> int | None:
    """``None``, or what :func:`check_int` accepts (with the same options)."""
    return None if value is None else check_int(value, name, **options)


def check_positive_int(value: object, name: str, *, hint: str = "") -> int:
    """``value`` if it is an ``int`` >= 1 (not a bool), else :class:`ConfigurationError`
    (``hint``, e.g. ``"; for example max_tokens=2000"``, ends its message)."""
    return check_int(value, name, hint=hint)


def check_non_negative_int(value: object, name: str, *, hint: str = "") -> int:
    """``value`` if it is an ``int`` >= 0 (not a bool), else :class:`ConfigurationError`
    (``hint`` ends its message)."""
    return check_int(value, name, minimum=0, hint=hint)


def check_seconds(value: object, name: str, *, maximum: float = math.inf) -> float:
    """``value`` as a float if it is a number of seconds in ``[0, maximum)`` (an ``int`` or
    a ``float``, not a bool, not NaN, finite), else :class:`ConfigurationError`.

    Example:
        >>> check_seconds(2, "timeout")
        2.0
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < maximum:
        msg = f"{name} must be a number of seconds >= 0, got {value!r}"
        raise ConfigurationError(msg)
    return float(value)
