"""Concurrent writers (threads and processes) and reopening a store, in both modes.

In ``"async"`` mode every writer thread's calls run as tasks on one event loop (see
``_backends.AsyncFace``), so the same tests cover concurrent asyncio callers; child
processes and reopened handles use the mode too.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading

import pytest

from agentmem.stores.base import SessionStore
from agentmem.types import Message
from tests.conformance._backends import StoreSpec, append_worker, assert_writers_intact, tagged

THREADS, PROCESSES, APPENDS = 8, 4, 500


# On a machine loaded to ~10x its cores, redis-py's asyncio cluster client once failed one of
# the 8 concurrent writers with AttributeError("'NoneType' object has no attribute
# 'writelines'") from inside its own connection handling (not reproduced at normal load in
# repeated runs). Such a run is repeated up to twice; any other failure fails at once.
@pytest.mark.flaky(reruns=2, only_rerun=["AttributeError"])
def test_threads_appending_to_one_session_lose_nothing(session_store: SessionStore) -> None:
    start = threading.Barrier(THREADS)
    returned: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def write(writer: int) -> None:
        try:
            start.wait(timeout=30)
            returned[writer] = [
                session_store.append("shared", [tagged(writer, i)])[0] for i in range(APPENDS)
            ]
        except BaseException as exc:  # surfaced below, with the thread's own traceback
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert_writers_intact(session_store.read("shared"), THREADS, APPENDS, returned)
    assert session_store.count("shared") == THREADS * APPENDS


def test_racing_claims_have_exactly_one_winner(session_store: SessionStore) -> None:
    start = threading.Barrier(THREADS)
    seen: dict[int, dict[str, object]] = {}

    def claim(writer: int) -> None:
        start.wait(timeout=30)
        for round_ in range(20):
            record = {"owner": [f"user{writer}", None]}
            seen[writer * 100 + round_] = session_store.claim_owner(f"s{round_}", record)

    threads = [threading.Thread(target=claim, args=(w,)) for w in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for round_ in range(20):
        winners = {str(seen[w * 100 + round_]["owner"]) for w in range(THREADS)}
        assert len(winners) == 1  # every claimant was told the same owner
        assert session_store.get_owner(f"s{round_}") == seen[round_]


def test_concurrent_batches_stay_contiguous(session_store: SessionStore) -> None:
    """A batch is appended atomically: no other writer's message lands inside it."""
    writers, batches, size = 4, 50, 3
    start = threading.Barrier(writers)

    def write(writer: int) -> None:
        start.wait(timeout=30)
        for b in range(batches):
            session_store.append("batches", [tagged(writer, b * size + k) for k in range(size)])

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log = session_store.read("batches")
    assert len(log) == writers * batches * size
    for first in range(0, len(log), size):
        group = [m.message.metadata for m in log[first : first + size]]
        assert len({g["writer"] for g in group}) == 1
        assert [g["i"] % size for g in group] == list(range(size))


def test_processes_appending_to_one_session_lose_nothing(store_factory: StoreSpec) -> None:
    # Nothing has opened the store yet: for SQLite the children also race to create the file.
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=append_worker,
            args=(store_factory, "shared", w, APPENDS, barrier, results),
            name=f"writer-{w}",
        )
        for w in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    returned: dict[int, list[int]] = {}
    try:
        # Drain before join: a child cannot exit while its queue data is unread.
        while len(returned) < PROCESSES and any(p.is_alive() for p in procs):
            try:
                writer, seqs = results.get(timeout=1)
            except queue.Empty:
                continue
            returned[writer] = seqs
        while len(returned) < PROCESSES and not results.empty():
            writer, seqs = results.get(timeout=5)
            returned[writer] = seqs
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0] * PROCESSES
    assert sorted(returned) == list(range(PROCESSES))
    store = store_factory.open()
    try:
        assert_writers_intact(store.read("shared"), PROCESSES, APPENDS, returned)
    finally:
        store.close()


def test_reopened_store_keeps_messages_state_and_seqs(store_factory: StoreSpec) -> None:
    store = store_factory.open()
    seqs = store.append("s1", [Message(role="user", content="remember me")])
    store.set_state("s1", "summary", {"upto": seqs[-1]})
    store.append("gone", [Message(role="user", content="x")])
    store.clear("gone")
    store.close()

    store = store_factory.open()
    try:
        assert [m.message.content for m in store.read("s1")] == ["remember me"]
        assert store.get_state("s1", "summary") == {"upto": seqs[-1]}
        assert store.sessions() == ["s1"]
        assert store.append("s1", [Message(role="user", content="more")])[0] > seqs[-1]
        # seqs are not reused after clear, even across reopen.
        assert store.append("gone", [Message(role="user", content="y")])[0] > 1
    finally:
        store.close()


def test_two_handles_see_each_others_writes(store_factory: StoreSpec) -> None:
    one, two = store_factory.open(), store_factory.open()
    try:
        a = one.append("s1", [Message(role="user", content="from one")])
        b = two.append("s1", [Message(role="user", content="from two")])
        assert b[0] > a[0]
        two.set_state("s1", "k", {"by": "two"})
        assert [m.message.content for m in one.read("s1")] == ["from one", "from two"]
        assert one.get_state("s1", "k") == {"by": "two"}
    finally:
        one.close()
        two.close()
