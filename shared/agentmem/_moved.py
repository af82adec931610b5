"""Old import paths that keep working for one release, with a ``DeprecationWarning``.

A module that moved leaves a two-line stub at its old path::

    from agentmem._moved import moved_module
    __getattr__ = moved_module(__name__, "agentmem.controller.manager")

``from agentmem.manager import MemoryManager`` then warns, naming the new path, and returns
the very object the new module holds.

Example:
    >>> import warnings
    >>> forward = moved_module("agentmem.old_place", "agentmem.errors")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     cls = forward("AgentMemError")
    >>> cls.__module__, caught[0].category.__name__
    ('agentmem.errors', 'DeprecationWarning')
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable

__all__ = ["REMOVED_IN", "moved_module", "moved_names"]

#: The release that drops the old paths.
REMOVED_IN = "0.3"


def _warn(old: str, new: str, name: str) -> None:
    msg = (
        f"{old}.{name} moved to {new}.{name}; import it from {new} "
        f"(the old path is removed in agentmem {REMOVED_IN})"
    )
    warnings.warn(msg, DeprecationWarning, stacklevel=3)


def moved_module(old: str, new: str) -> Callable[[str], object]:
    """A module ``__getattr__`` for the stub left at ``old``: forwards every name to the
    module ``new`` with a :class:`DeprecationWarning`."""

    def __getattr__(name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            value = getattr(importlib.import_module(new), name)
        except AttributeError:
            msg = f"module {old!r} has no attribute {name!r}"
            raise AttributeError(msg) from None
        _warn(old, new, name)
        return value

    return __getattr__


def moved_names(module: str, names: dict[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for a package some names left: ``names`` maps each moved
    name to the module that holds it now."""

    def __getattr__(name: str) -> object:
        new = names.get(name)
        if new is None:
            msg = f"module {module!r} has no attribute {name!r}"
            raise AttributeError(msg)
        value = getattr(importlib.import_module(new), name)
        _warn(module, new, name)
        return value

    return __getattr__
