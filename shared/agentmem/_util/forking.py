"""Fresh locks in a forked child (private).

A thread of the parent that holds a lock when the process forks does not exist in the
child, so the child's copy of that lock stays held for ever: its first use hangs (a
forward pass, a model load or a cache lookup in progress at the fork). An object that
owns such locks registers here the method that makes fresh ones; every registered object
still alive gets it called in the child right after a fork (POSIX; nothing happens where
the platform has no ``fork``). Registration holds the object weakly.

Example:
    >>> import threading
    >>> class Counter:
    ...     def __init__(self) -> None:
    ...         self.reset()
    ...         reset_after_fork(self, Counter.reset)
    ...     def reset(self) -> None:
    ...         self.lock = threading.Lock()
    >>> Counter().lock.locked()
    False
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["reset_after_fork"]

T = TypeVar("T")

# id(object) -> (a weak reference to it, its reset); an entry goes with its object.
_REGISTERED: dict[int, tuple[weakref.ref[Any], Callable[[Any], None]]] = {}
# Reentrant: a garbage collection started by an allocation made under it can free a
# registered object, whose callback then takes it again in the same thread.
_GUARD = threading.RLock()


def reset_after_fork(obj: T, reset: Callable[[T], None]) -> None:
    """Call ``reset(obj)`` in a forked child, right after the fork, while ``obj`` lives."""
    key = id(obj)

    def forget(ref: weakref.ref[Any]) -> None:
        with _GUARD:
            entry = _REGISTERED.get(key)
            if entry is not None and entry[0] is ref:  # not a newer object at that id
                del _REGISTERED[key]

    with _GUARD:
        _REGISTERED[key] = (weakref.ref(obj, forget), reset)


def _after_fork_in_child() -> None:
    global _GUARD
    _GUARD = threading.RLock()  # the parent's may have been held too
    for ref, reset in list(_REGISTERED.values()):
        obj = ref()
        if obj is not None:
            reset(obj)


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)
