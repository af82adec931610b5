"""The consolidation queue's feeding (what ``MemoryService.open`` resumes) and its view of a
key's jobs, on real threads."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from agentmem.controller.scheduler import ConsolidationQueue, Job


def test_feeding_never_fills_more_than_half_the_queue() -> None:
    queue = ConsolidationQueue(workers=1, max_pending=4)
    gate = threading.Event()
    assert queue.submit("blocker", gate.wait) is not None
    done: list[int] = []
    most_waiting = 0

    def jobs() -> Iterator[Job]:
        nonlocal most_waiting
        for i in range(10):
            most_waiting = max(most_waiting, queue.pending)
            yield f"s{i}", lambda i=i: done.append(i)

    queue.feed(jobs())
    assert queue.wait_idle(timeout=0.2) is False  # the blocker holds the only worker
    assert queue.pending <= 2  # half of max_pending: room stays for live turns
    assert queue.submit("live", lambda: None) is not None  # a live turn still gets in
    gate.set()
    assert queue.wait_idle(timeout=10)
    assert sorted(done) == list(range(10))
    assert most_waiting <= 3  # two fed and the live one, never more
    queue.close()


def test_close_stops_feeding_and_the_rest_is_not_queued() -> None:
    queue = ConsolidationQueue(workers=1, max_pending=2)
    gate = threading.Event()
    queue.submit("blocker", gate.wait)
    fed: list[int] = []

    def jobs() -> Iterator[Job]:
        for i in range(100):
            fed.append(i)
            yield f"s{i}", lambda: None

    queue.feed(jobs())
    while not fed:
        threading.Event().wait(0.01)
    closer = threading.Thread(target=queue.close)
    closer.start()
    gate.set()
    closer.join(timeout=10)
    assert not closer.is_alive()
    assert len(fed) < 100  # the feeder stopped at the close


def test_a_keys_jobs_are_seen_whoever_submitted_them() -> None:
    queue = ConsolidationQueue(workers=1)
    gate = threading.Event()
    running = queue.submit("s1", gate.wait)
    while queue.pending:  # the worker took it
        threading.Event().wait(0.01)
    waiting = queue.submit("s1", lambda: None)
    assert queue.futures_of("s1") == [running, waiting]
    assert queue.futures_of("s2") == []
    gate.set()
    assert queue.wait_idle(timeout=10)
    assert queue.futures_of("s1") == []
    queue.close()
