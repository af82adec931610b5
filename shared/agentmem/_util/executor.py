"""Run blocking code from async code without starting event loops (private helper)."""

from __future__ import annotations

import contextvars
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

__all__ = ["run_in_executor", "run_in_worker"]

P = ParamSpec("P")
T = TypeVar("T")


async def run_in_executor(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``func`` in the default thread pool, carrying the caller's contextvars.

    Async twins of blocking operations go through here (as langchain-core's
    ``run_in_executor`` does), so library code never starts or nests an event loop.
    """
    import asyncio  # here: a caller with a running loop has it; sync code never needs it

    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    call = functools.partial(ctx.run, func, *args, **kwargs)
    return await loop.run_in_executor(None, call)


_workers: ThreadPoolExecutor | None = None
_workers_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _workers
    with _workers_lock:
        if _workers is None:
            _workers = ThreadPoolExecutor(
                max_workers=min(32, (os.cpu_count() or 1) + 4),
                thread_name_prefix="agentmem-op",
            )
        return _workers


def _forget_pool_in_child() -> None:  # a forked child has none of the parent's threads
    global _workers, _workers_lock
    _workers, _workers_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_in_child)


async def run_in_worker(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``func`` in agentmem's own thread pool, carrying the caller's contextvars.

    For a whole blocking operation (see :func:`agentmem._sansio.async_twin`): its threads
    may wait for the process-wide keyed locks, which an async holder releases with the
    help of the *default* pool, so they never take a thread that holder needs. Sized as
    the default pool (cores + 4, at most 32).
    """
    import asyncio  # here: a caller with a running loop has it

    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    return await loop.run_in_executor(_pool(), functools.partial(ctx.run, func, *args, **kwargs))
