"""Run blocking code from async code without starting event loops (private helper)."""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["run_in_executor"]

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
