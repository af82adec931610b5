"""Process-wide locks by key, usable from threads and from asyncio (private).

Several handles may stand for one thing (a session, a user's memories in one store): each
handle asks for the lock of that thing's key and gets the same lock, so their critical
sections never interleave, whichever thread or task runs them.

Example:
    >>> keyed_lock(("s", 1)) is keyed_lock(("s", 1))
    True
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable

__all__ = ["KeyedLock", "holding", "keyed_lock"]


class KeyedLock:
    """A ``threading.Lock`` that can be weakly referenced (so unused keys go away)."""

    def __init__(self) -> None:
        #: The thread whose event loop holds the lock (for an async holder), else None.
        self.loop_thread: int | None = None
        self._lock = threading.Lock()
        self.acquire = self._lock.acquire
        self.release = self._lock.release
        self.locked = self._lock.locked

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


_LOCKS: weakref.WeakValueDictionary[Hashable, KeyedLock] = weakref.WeakValueDictionary()
_GUARD = threading.Lock()


def keyed_lock(key: Hashable) -> KeyedLock:
    """The one lock of ``key`` in this process."""
    with _GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = KeyedLock()
            _LOCKS[key] = lock
        return lock


class holding:
    """``async with holding(lock)``: take a thread lock without blocking the event loop."""

    def __init__(self, lock: KeyedLock) -> None:
        self._lock = lock

    async def __aenter__(self) -> None:
        import asyncio  # here: an event loop runs, so it is loaded; sync callers never need it

        # Polling, not acquiring in a worker thread: a cancelled task must never leave the
        # lock taken behind it.
        while not self._lock.acquire(blocking=False):  # noqa: ASYNC110
            await asyncio.sleep(0.002)
        self._lock.loop_thread = threading.get_ident()

    async def __aexit__(self, *exc: object) -> None:
        self._lock.loop_thread = None
        self._lock.release()
