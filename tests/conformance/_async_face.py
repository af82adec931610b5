"""A store called through its async twins from test code written once, with sync calls.

``face.read(...)`` is ``await store.aread(...)`` run on one background event loop per
process (asyncio clients such as redis.asyncio's and qdrant-client's stay bound to the loop
that first used them, so every call uses this one); calls from several threads become
concurrent tasks. Names outside :attr:`AsyncFace.TWINNED` (the ``a*`` twins included) are
the store's own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

__all__ = ["AsyncFace"]

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="async-face", daemon=True).start()
        return _loop


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class AsyncFace:
    """Subclass per protocol, naming its sync methods that have an ``a``-prefixed twin."""

    TWINNED: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, store: Any) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        if name not in self.TWINNED:
            return getattr(self.store, name)
        twin: Callable[..., Awaitable[Any]] = getattr(self.store, "a" + name)

        def run(*args: Any, **kwargs: Any) -> Any:
            coro = _awaited(twin(*args, **kwargs))
            return asyncio.run_coroutine_threadsafe(coro, _background_loop()).result()

        return run
