"""The sans-IO drivers: one program, the same behaviour under the sync and async driver."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentmem import WorkingMemory
from agentmem._sansio import (
    Program,
    adrive,
    async_twin,
    blocking,
    call,
    drive,
    locked,
    offload,
    twin,
)
from agentmem.errors import BlockingCallError
from agentmem.stores import InMemorySessionStore


class Ledger:
    """A tiny I/O object with a sync/async pair, recording which side ran."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def put(self, value: int, *, fail: bool = False) -> int:
        self.calls.append(("sync", value))
        if fail:
            raise KeyError(value)
        return value * 10

    async def aput(self, value: int, *, fail: bool = False) -> int:
        await asyncio.sleep(0)
        self.calls.append(("async", value))
        if fail:
            raise KeyError(value)
        return value * 10


class Service:
    def __init__(self) -> None:
        self.ledger = Ledger()
        self.cleaned = 0

    @twin
    def put_all(self, values: list[int], fail_on: int | None = None) -> Program[int]:
        """Put every value; a failure is recovered from and counted."""
        total = 0
        for v in values:
            try:
                total += yield from call(self.ledger.put, self.ledger.aput, v, fail=v == fail_on)
            except KeyError:
                total -= 1
        return total

    aput_all = async_twin(put_all)

    @twin
    def put_then_cleanup(self, value: int) -> Program[int]:
        try:
            return (yield from call(self.ledger.put, self.ledger.aput, value, fail=True))
        finally:
            self.cleaned += 1

    aput_then_cleanup = async_twin(put_then_cleanup)


Runner = Callable[[Service, str, Any], Any]


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Runner:
    """Call ``name`` on a service in the parametrized mode."""

    def go(service: Service, name: str, *args: Any) -> Any:
        if request.param == "sync":
            return getattr(service, name)(*args)
        return asyncio.run(getattr(service, "a" + name)(*args))

    go.mode = request.param  # type: ignore[attr-defined]
    return go


def test_one_program_two_drivers(run: Runner) -> None:
    service = Service()
    assert run(service, "put_all", [1, 2, 3]) == 60
    assert [side for side, _ in service.ledger.calls] == [run.mode] * 3  # type: ignore[attr-defined]


def test_errors_are_thrown_into_the_program_at_its_yield(run: Runner) -> None:
    service = Service()
    assert run(service, "put_all", [1, 2, 3], 2) == 10 + 30 - 1
    with pytest.raises(KeyError):
        run(service, "put_then_cleanup", 5)
    assert service.cleaned == 1  # the program's finally ran in both modes


def test_twin_keeps_name_doc_and_signature_checks() -> None:
    service = Service()
    assert Service.put_all.__doc__ == "Put every value; a failure is recovered from and counted."
    assert service.aput_all.__doc__ == "Async twin of :meth:`put_all`."
    with pytest.raises(TypeError):
        service.put_all()  # type: ignore[call-arg]


def test_subclass_override_reaches_both_faces() -> None:
    class Doubled(Service):
        @twin
        def put_all(self, values: list[int], fail_on: int | None = None) -> Program[int]:
            total = yield from Service.put_all.program(self, values, fail_on)
            return 2 * total

    assert Doubled().put_all([1]) == 20
    assert asyncio.run(Doubled().aput_all([1])) == 20


def test_blocking_runs_off_the_event_loop() -> None:
    loop_thread: list[int] = []

    def where() -> int:
        return threading.get_ident()

    async def main() -> int:
        loop_thread.append(threading.get_ident())
        return await adrive(iter(blocking(where)))

    assert asyncio.run(main()) != loop_thread[0]
    assert drive(iter(blocking(where))) == threading.get_ident()


def _critical(log: list[str], name: str, pause: Callable[[], Any]) -> Program[None]:
    log.append(f"{name}+")
    yield from pause()
    log.append(f"{name}-")


def _sleep_pause() -> Program[None]:
    yield from call(time.sleep, asyncio.sleep, 0.01)


def test_locked_programs_never_interleave_across_threads_and_tasks() -> None:
    log: list[str] = []
    key = ("test", "locked")

    def thread_body(i: int) -> None:
        drive(iter(locked(key, _critical(log, f"t{i}", _sleep_pause))))

    async def tasks() -> None:
        await asyncio.gather(
            *(adrive(iter(locked(key, _critical(log, f"a{i}", _sleep_pause)))) for i in range(4))
        )

    threads = [threading.Thread(target=thread_body, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    asyncio.run(tasks())
    for t in threads:
        t.join()
    assert len(log) == 16
    for enter, leave in zip(log[::2], log[1::2], strict=True):
        assert enter.endswith("+")
        assert leave == enter[:-1] + "-"


def test_offload_honours_overrides() -> None:
    class Engine:
        def size(self, items: list[int]) -> int:
            return len(items)

        asize = offload(size)

    class Bigger(Engine):
        def size(self, items: list[int]) -> int:
            return 100 + len(items)

    assert asyncio.run(Engine().asize([1])) == 1
    assert asyncio.run(Bigger().asize([1])) == 101


def _nothing() -> Program[None]:
    return None
    yield


async def test_a_blocking_call_on_the_loop_thread_fails_instead_of_hanging() -> None:
    key = ("test", "held by a task of this loop")
    gate = asyncio.Event()

    def never() -> None:
        raise AssertionError("the async face runs here")

    async def wait() -> None:
        await gate.wait()

    def held() -> Program[None]:
        yield from call(never, wait)

    task = asyncio.create_task(adrive(iter(locked(key, held()))))
    await asyncio.sleep(0.05)  # the task holds the lock, suspended at its await
    with pytest.raises(BlockingCallError, match="async method"):
        drive(iter(locked(key, _nothing())))
    gate.set()
    await task
    drive(iter(locked(key, _nothing())))  # released: a blocking call takes it again


async def test_working_memory_sync_call_during_an_async_change_fails_clearly() -> None:
    gate = asyncio.Event()

    class SlowStore(InMemorySessionStore):
        async def aset_state(self, session_id: str, key: str, value: Any) -> None:
            await gate.wait()
            self.set_state(session_id, key, value)

    wm = WorkingMemory(session_id="s1", store=SlowStore())
    task = asyncio.create_task(wm.aset_variable("a", 1))
    await asyncio.sleep(0.05)
    with pytest.raises(BlockingCallError):
        wm.set_variable("b", 2)
    gate.set()
    await task
    wm.set_variable("b", 2)
    assert wm.get_all_variables() == {"a": 1, "b": 2}
