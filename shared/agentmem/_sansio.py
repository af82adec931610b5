"""I/O written once for sync and async callers: programs of typed requests, two drivers.

A *program* is a generator that does no I/O itself. Where it needs some, it yields a typed
:class:`Request` and receives the result (``result = yield from request``); it returns its
own result at the end. Two drivers run any program: :func:`drive` answers each request with
its blocking call, :func:`adrive` awaits its async twin. The logic between requests — the
validation, the decisions, the order of writes, the locking — exists once, so sync and
async callers get one behaviour, under concurrency too.

Requests:

* :func:`call` — a pair of methods with one signature, such as ``store.upsert`` /
  ``store.aupsert`` (mypy checks that both take the arguments given and return one type);
* :func:`blocking` — a blocking function; the async driver runs it in the default thread
  pool (for in-process engines such as SQLite and Qdrant Edge);
* :func:`locked` — a sub-program under a process-wide keyed lock (:mod:`agentmem._util.locks`),
  taken without blocking the event loop in async mode.

Programs compose with ``yield from``: a tier's program runs a store's, a controller's runs a
tier's. A public method is written once, as a program, and gets both faces from
:class:`twin`::

    @twin
    def get_memory(self, memory_id: str) -> Program[MemoryRecord]:
        found = yield from call(self.store.get, self.store.aget, self.scope, [memory_id])
        ...

    aget_memory = async_twin(get_memory)

A class whose engine has only blocking calls writes ``aupsert = offload(upsert)``.

Example:
    >>> import asyncio
    >>> class Box:
    ...     def __init__(self): self.items = []
    ...     def put(self, x: int) -> int:
    ...         self.items.append(x); return len(self.items)
    ...     async def aput(self, x: int) -> int:
    ...         return self.put(x)
    ...     @twin
    ...     def put_twice(self, x: int) -> Program[int]:
    ...         yield from call(self.put, self.aput, x)
    ...         return (yield from call(self.put, self.aput, x))
    ...     aput_twice = async_twin(put_twice)
    >>> box = Box()
    >>> box.put_twice(1), asyncio.run(box.aput_twice(2)), box.items
    (2, 4, [1, 1, 2, 2])
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Hashable
from typing import Any, Concatenate, Generic, ParamSpec, TypeAlias, TypeVar, overload

from agentmem._util.executor import run_in_executor
from agentmem._util.locks import holding, keyed_lock
from agentmem.errors import BlockingCallError

__all__ = [
    "Program",
    "Request",
    "adrive",
    "async_twin",
    "blocking",
    "call",
    "drive",
    "locked",
    "offload",
    "twin",
]

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")
P = ParamSpec("P")


class Request(Generic[T]):
    """One piece of I/O a program asks its driver for; its result has type ``T``.

    ``result = yield from request`` yields it and types the answer.
    """

    __slots__ = ()

    def run(self) -> T:
        """Do it, blocking (the sync driver)."""
        raise NotImplementedError

    async def arun(self) -> T:
        """Do it without blocking the event loop (the async driver)."""
        raise NotImplementedError

    def __iter__(self) -> Generator[Request[Any], Any, T]:
        result: T = yield self
        return result


#: A program: yields requests, receives their results, returns ``R``.
Program: TypeAlias = Generator[Request[Any], Any, R]


class _Returned(Generic[R]):
    """What a program returned, once it has."""

    __slots__ = ("value",)

    def __init__(self, value: R) -> None:
        self.value = value


def _resume(
    program: Program[R], value: Any, error: BaseException | None
) -> Request[Any] | _Returned[R]:
    """Step ``program`` past its last ``yield``, where it gets its request's ``value`` (or
    has ``error`` raised): its next request, or what it returned. The one stepping logic
    of :func:`drive` and :func:`adrive`, which differ only in how they answer a request."""
    try:
        return program.send(value) if error is None else program.throw(error)
    except StopIteration as stop:
        return _Returned(stop.value)


def drive(program: Program[R]) -> R:
    """Run ``program`` to its end, answering each request with its blocking call.

    An error raised by a request is thrown into the program at the ``yield``, so the
    program's ``try``/``finally`` blocks see it as they would a direct call's.
    """
    value, error = None, None
    while not isinstance(request := _resume(program, value, error), _Returned):
        try:
            value, error = request.run(), None
        except BaseException as exc:  # the program decides, at its yield
            error = exc
    return request.value


async def adrive(program: Program[R]) -> R:
    """Run ``program`` to its end, awaiting each request's async twin (see :func:`drive`)."""
    value, error = None, None
    while not isinstance(request := _resume(program, value, error), _Returned):
        try:
            value, error = await request.arun(), None
        except BaseException as exc:  # the program decides, at its yield
            error = exc
    return request.value


class _Call(Request[T]):
    __slots__ = ("_args", "_async", "_kwargs", "_sync")

    def __init__(
        self,
        sync: Callable[..., T],
        asynchronous: Callable[..., Awaitable[T]],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self._sync, self._async, self._args, self._kwargs = sync, asynchronous, args, kwargs

    def run(self) -> T:
        return self._sync(*self._args, **self._kwargs)

    async def arun(self) -> T:
        return await self._async(*self._args, **self._kwargs)


def call(
    sync: Callable[P, T],
    asynchronous: Callable[P, Awaitable[T]],
    /,
    *args: P.args,
    **kwargs: P.kwargs,
) -> Request[T]:
    """A request for ``sync(*args, **kwargs)``, or ``await asynchronous(*args, **kwargs)``.

    Example:
        >>> def get(k: str) -> int: return len(k)
        >>> async def aget(k: str) -> int: return len(k)
        >>> drive(iter(call(get, aget, "abc")))
        3
    """
    return _Call(sync, asynchronous, args, kwargs)


class _Blocking(Request[T]):
    __slots__ = ("_args", "_func", "_kwargs")

    def __init__(self, func: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]):
        self._func, self._args, self._kwargs = func, args, kwargs

    def run(self) -> T:
        return self._func(*self._args, **self._kwargs)

    async def arun(self) -> T:
        return await run_in_executor(self._func, *self._args, **self._kwargs)


def blocking(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Request[T]:
    """A request for a blocking call; the async driver runs it in the default thread pool
    (carrying the caller's contextvars).

    Example:
        >>> import asyncio
        >>> asyncio.run(adrive(iter(blocking(sum, [1, 2, 3]))))
        6
    """
    return _Blocking(func, args, kwargs)


class _Locked(Request[T]):
    __slots__ = ("_key", "_program")

    def __init__(self, key: Hashable, program: Program[T]) -> None:
        self._key, self._program = key, program

    def run(self) -> T:
        lock = keyed_lock(self._key)
        if not lock.acquire(blocking=False):
            if lock.loop_thread == threading.get_ident():
                # A task of this thread's own event loop holds it, suspended at an await:
                # it can only resume once this call returns, so waiting would never end.
                msg = (
                    f"a blocking call needs the lock {self._key!r} that a task of this "
                    "thread's event loop holds; call the async method (a...) from async code"
                )
                raise BlockingCallError(msg)
            lock.acquire()
        try:
            return drive(self._program)
        finally:
            lock.release()

    async def arun(self) -> T:
        lock = keyed_lock(self._key)
        async with holding(lock):
            return await adrive(self._program)


def locked(key: Hashable, program: Program[T]) -> Request[T]:
    """A request to run ``program`` under the process-wide lock of ``key``: threads and
    asyncio tasks that lock one key never interleave their programs.

    An async holder keeps the lock across its awaits. A *blocking* call made on that event
    loop's own thread meanwhile cannot wait for it (the holder resumes only after the call
    returns), so it raises :class:`~agentmem.errors.BlockingCallError` instead of hanging.

    Example:
        >>> def count() -> Program[int]:
        ...     return 1
        ...     yield
        >>> drive(iter(locked(("doc", 1), count())))
        1
    """
    return _Locked(key, program)


class twin(Generic[S, P, R]):
    """A method written once as a program: called on an instance it runs the program with
    :func:`drive`; :func:`async_twin` makes its async face, run with :func:`adrive`.

    The twin looks the program up by name on the instance's class, so a subclass that
    overrides the method overrides both faces.
    """

    def __init__(self, program: Callable[Concatenate[S, P], Program[R]]) -> None:
        self.program = program
        self.name = program.__name__
        self.__doc__ = program.__doc__
        self.__module__ = program.__module__  # so doctest collects the method's Example
        self.__wrapped__ = program

        @functools.wraps(program)
        def sync(obj: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            return drive(program(obj, *args, **kwargs))

        self._sync = sync

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> twin[S, P, R]: ...

    @overload
    def __get__(self, obj: S, owner: type[Any] | None = None) -> Callable[P, R]: ...

    def __get__(self, obj: S | None, owner: type[Any] | None = None) -> Any:
        if obj is None:
            return self
        return types.MethodType(self._sync, obj)


def async_twin(method: twin[S, P, R]) -> _AsyncTwin[S, P, R]:
    """The async face of a :class:`twin` method, in the class body:
    ``aget_memory = async_twin(get_memory)``."""
    return _AsyncTwin(method.name, method.program)


class _AsyncTwin(Generic[S, P, R]):
    def __init__(self, sync_name: str, program: Callable[Concatenate[S, P], Program[R]]):
        self._sync_name = sync_name
        self._program = program
        self.__doc__ = f"Async twin of :meth:`{sync_name}`."
        self.__wrapped__ = program

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> _AsyncTwin[S, P, R]: ...

    @overload
    def __get__(
        self, obj: S, owner: type[Any] | None = None
    ) -> Callable[P, Coroutine[Any, Any, R]]: ...

    def __get__(self, obj: S | None, owner: type[Any] | None = None) -> Any:
        if obj is None:
            return self
        found = getattr(type(obj), self._sync_name, None)
        program = found.program if isinstance(found, twin) else self._program

        async def bound(*args: Any, **kwargs: Any) -> Any:
            return await adrive(program(obj, *args, **kwargs))

        bound.__doc__ = self.__doc__
        bound.__name__ = bound.__qualname__ = "a" + self._sync_name.lstrip("_")
        return bound


class offload(Generic[S, P, R]):
    """The async twin of a blocking method, run in the default thread pool: in a class
    body, ``aupsert = offload(upsert)``. Looked up by name, so overrides are honoured.

    Example:
        >>> import asyncio
        >>> class Engine:
        ...     def size(self, items: list[int]) -> int:
        ...         return len(items)
        ...     asize = offload(size)
        >>> asyncio.run(Engine().asize([1, 2]))
        2
    """

    def __init__(self, method: Callable[Concatenate[S, P], R]) -> None:
        self._name = method.__name__
        self.__doc__ = f"Async twin of :meth:`{self._name}` (run in the default thread pool)."

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> offload[S, P, R]: ...

    @overload
    def __get__(self, obj: S, owner: type[Any] | None = None) -> Callable[P, Awaitable[R]]: ...

    def __get__(self, obj: S | None, owner: type[Any] | None = None) -> Any:
        if obj is None:
            return self
        return functools.partial(run_in_executor, getattr(obj, self._name))
