"""RedisSessionStore on a Redis Cluster whose master is killed (SIGKILL) mid-traffic.

Writers append from threads (sync calls) and from asyncio tasks (async calls) to sessions
spread over all three masters, while one master is killed. Every call must either succeed
(on the promoted replica, after the failover) or raise :class:`StoreUnavailableError`
within its bound; a failed append is retried with the same message, as the error advises.
The threads' store has a deadline longer than the failover, so its calls ride through it;
the tasks' store has a shorter one, so its calls give up during the failover.
Once the cluster has healed (replica promoted, the killed node back as a replica), every
acknowledged message must be in its session exactly once, under the seq its append
returned. Run with ``-s`` to see the numbers.

The test starts its own cluster: killing a node of the session-wide one would disturb the
tests sharing it.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import Counter
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentmem.errors import StoreUnavailableError
from agentmem.stores.redis import RedisSessionStore
from agentmem.types import Message
from tests.redis_cluster import RedisCluster, cluster_available

pytestmark = pytest.mark.integration

# from_url(timeout=..., deadline=...) of the threads' store: a deadline above the failover
# time (about 2 x cluster-node-timeout of 1 s, plus the election), to ride through it.
RIDE_THROUGH = (1.0, 8.0)
# ... and of the asyncio tasks' store: a deadline below it, to give up during it.
GIVE_UP = (0.5, 1.5)


def bound(timeout: float, deadline: float) -> float:
    """A call ends after about max(deadline, timeout); this is a hang check, not a
    benchmark: allow one more timeout and a couple of seconds of scheduling slack."""
    return deadline + timeout + 2.0


PER_WRITER = 3  # sessions per writer: one on the master that is killed, two elsewhere
THREADS = 4  # sync writers
TASKS = 4  # async writers, on one event loop in one more thread
BEFORE_KILL = 1.0  # seconds of traffic before the kill
AFTER_HEAL = 1.5  # seconds of traffic once the replica has taken over


@dataclass
class _Log:
    """What the writers saw, under one lock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: dict[str, tuple[str, int]] = field(default_factory=dict)  # message id -> (sid, seq)
    ok: int = 0
    failed: Counter[str] = field(default_factory=Counter)  # outcome -> count
    slowest_failure: float = 0.0
    other_errors: list[BaseException] = field(default_factory=list)
    # Calls on the killed master's sessions that started between the kill and the moment the
    # test saw the failover complete (its probe polls, so some succeed on the new master).
    victim_calls_in_outage: int = 0
    # Seconds from the kill to the first append on those sessions, started after the kill,
    # that succeeded.
    victim_first_ok_after_kill: float | None = None

    def record_ok(self, message: Message, sid: str, seq: int) -> None:
        with self.lock:
            self.ok += 1
            self.acked[message.id] = (sid, seq)

    def record_failure(self, error: StoreUnavailableError, took: float) -> None:
        with self.lock:
            self.failed[error.outcome] += 1
            self.slowest_failure = max(self.slowest_failure, took)


@dataclass
class _Clock:
    killed_at: float | None = None
    healed_at: float | None = None


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RedisCluster]:
    missing = cluster_available()
    if missing is not None:
        pytest.skip(f"no Redis Cluster: {missing}")
    with RedisCluster.start(tmp_path / "cluster", node_timeout=1000) as started:
        yield started


def _note(
    log: _Log, clock: _Clock, victim_sids: set[str], sid: str, started: float, ok: bool
) -> None:
    killed_at = clock.killed_at
    if sid not in victim_sids or killed_at is None:
        return
    with log.lock:
        if clock.healed_at is None or started < clock.healed_at:
            log.victim_calls_in_outage += 1
        if ok and started >= killed_at and log.victim_first_ok_after_kill is None:
            log.victim_first_ok_after_kill = time.monotonic() - killed_at


def _writer(
    sids: list[str], stop: threading.Event, log: _Log, clock: _Clock, victim_sids: set[str]
) -> Generator[tuple[str, Message], int | BaseException, None]:
    """One writer's traffic, for the sync and the async driver alike: yields the next
    ``(session, message)`` to append and is sent the sequence number, or the exception.

    Appends are idempotent by message id, so a refused message is retried until it is
    acknowledged (bounded by the stop signal plus one more try). Anything but
    :class:`StoreUnavailableError` is a defect: it stops the writer and is reported.
    """
    i = 0
    while not stop.is_set():
        sid = sids[i % len(sids)]
        message = Message(role="user", content=f"{sid} #{i}")
        i += 1
        while True:
            started = time.monotonic()
            outcome = yield sid, message
            if isinstance(outcome, StoreUnavailableError):
                log.record_failure(outcome, time.monotonic() - started)
                _note(log, clock, victim_sids, sid, started, ok=False)
                if stop.is_set():
                    break
                continue
            if isinstance(outcome, BaseException):
                with log.lock:
                    log.other_errors.append(outcome)
                return
            log.record_ok(message, sid, outcome)
            _note(log, clock, victim_sids, sid, started, ok=True)
            break


def _resume(
    program: Generator[tuple[str, Message], int | BaseException, None],
    outcome: int | BaseException,
) -> tuple[str, Message] | None:
    """Send the last append's outcome into a writer; its next call, or ``None`` when done."""
    try:
        return program.send(outcome)
    except StopIteration:
        return None


def _sync_writer(store: RedisSessionStore, *args: Any) -> None:
    program = _writer(*args)
    call = next(program, None)
    while call is not None:
        try:
            outcome: int | BaseException = store.append(call[0], [call[1]])[0]
        except BaseException as exc:
            outcome = exc
        call = _resume(program, outcome)


async def _async_writer(store: RedisSessionStore, *args: Any) -> None:
    program = _writer(*args)
    call = next(program, None)
    while call is not None:
        try:
            outcome: int | BaseException = (await store.aappend(call[0], [call[1]]))[0]
        except BaseException as exc:
            outcome = exc
        call = _resume(program, outcome)


def test_master_killed_mid_traffic_loses_no_acknowledged_append(cluster: RedisCluster) -> None:
    prefix = f"fault-{uuid.uuid4().hex[:8]}"
    writers = THREADS + TASKS
    victim = cluster.masters()[0]
    # Every writer has one session on the victim and the others elsewhere, so every writer
    # meets the failover.
    on_victim: list[str] = []
    elsewhere: list[str] = []
    for i in range(1000):  # a third of the names land on the victim
        if len(on_victim) >= writers and len(elsewhere) >= (PER_WRITER - 1) * writers:
            break
        sid = f"s{i:03d}"
        mine = cluster.master_of(f"{prefix}:{{{sid}}}:log") is victim
        (on_victim if mine else elsewhere).append(sid)
    groups = [
        [on_victim[w], *elsewhere[(PER_WRITER - 1) * w : (PER_WRITER - 1) * (w + 1)]]
        for w in range(writers)
    ]
    sids = [sid for group in groups for sid in group]
    victim_sids = set(on_victim[:writers])

    timeout, deadline = RIDE_THROUGH
    store = RedisSessionStore.from_url(
        cluster.url, prefix=prefix, timeout=timeout, deadline=deadline
    )
    stop = threading.Event()
    sync_log, async_log, clock = _Log(), _Log(), _Clock()
    threads = [
        threading.Thread(
            target=_sync_writer, args=(store, groups[w], stop, sync_log, clock, victim_sids)
        )
        for w in range(THREADS)
    ]

    def run_async() -> None:
        async def main() -> None:
            atimeout, adeadline = GIVE_UP
            astore = RedisSessionStore.from_url(
                cluster.url, prefix=prefix, timeout=atimeout, deadline=adeadline
            )
            try:
                await asyncio.gather(
                    *(
                        _async_writer(astore, g, stop, async_log, clock, victim_sids)
                        for g in groups[THREADS:]
                    )
                )
            finally:
                await astore.aclose()

        try:
            asyncio.run(main())
        except BaseException as exc:
            with async_log.lock:
                async_log.other_errors.append(exc)

    threads.append(threading.Thread(target=run_async))
    try:
        for thread in threads:
            thread.start()
        time.sleep(BEFORE_KILL)
        acked_before_kill = len(sync_log.acked) + len(async_log.acked)
        clock.killed_at = time.monotonic()
        victim.kill()
        failover = cluster.wait_for_failover(victim, timeout=60.0)
        clock.healed_at = time.monotonic()
        time.sleep(AFTER_HEAL)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=bound(*RIDE_THROUGH) + 10)
    hung = [t.name for t in threads if t.is_alive()]

    # Heal: the killed node comes back and rejoins as a replica of its successor.
    victim.restart()
    cluster.wait_until_ok(cluster.ports)
    cluster.wait_for_replicas()
    store.close()

    reader = RedisSessionStore.from_url(cluster.url, prefix=prefix)
    try:
        logs = {sid: reader.read(sid) for sid in sids}
    finally:
        reader.close()
    stored = Counter(m.message.id for entries in logs.values() for m in entries)
    where = {m.message.id: (sid, m.seq) for sid, entries in logs.items() for m in entries}
    acked = {**sync_log.acked, **async_log.acked}
    lost = [mid for mid in acked if mid not in where]
    moved = [mid for mid, at in acked.items() if mid in where and where[mid] != at]
    duplicated = [mid for mid, n in stored.items() if n > 1]

    lines = [
        f"\ncluster fault: 3 masters + 3 replicas, cluster-node-timeout 1000 ms; "
        f"{len(sids)} sessions, {len(victim_sids)} on the killed master; failover (kill -> "
        f"replica serving, cluster_state ok) {failover:.2f} s"
    ]
    for name, log, (t, d) in (
        (f"{THREADS} threads, sync", sync_log, RIDE_THROUGH),
        (f"{TASKS} asyncio tasks", async_log, GIVE_UP),
    ):
        first = log.victim_first_ok_after_kill
        lines.append(
            f"  {name} (timeout={t} s, deadline={d} s): {log.ok} calls succeeded, "
            f"{sum(log.failed.values())} failed with StoreUnavailableError "
            f"{dict(log.failed)} (slowest failure {log.slowest_failure:.2f} s); calls on the "
            f"killed master's slots while it failed over {log.victim_calls_in_outage}; first "
            f"acknowledged there after the kill: " + ("none" if first is None else f"{first:.2f} s")
        )
    lines.append(
        f"  acknowledged {len(acked)} ({acked_before_kill} before the kill); found after "
        f"healing {sum(1 for mid in acked if mid in where)}; lost {len(lost)}, under another "
        f"seq {len(moved)}, stored twice {len(duplicated)}; stored {sum(stored.values())}"
    )
    print("\n".join(lines))

    assert not sync_log.other_errors, sync_log.other_errors[:3]
    assert not async_log.other_errors, async_log.other_errors[:3]
    assert not hung, f"writers still running long after the stop: {hung}"
    assert sync_log.slowest_failure <= bound(*RIDE_THROUGH)
    assert async_log.slowest_failure <= bound(*GIVE_UP)
    # The fault really hit the traffic: calls on the killed master's slots were under way
    # during the outage; the short deadline gave up during it; appends on those slots
    # succeeded again after it.
    assert sync_log.victim_calls_in_outage + async_log.victim_calls_in_outage > 0
    assert async_log.failed, "no call with the short deadline failed during the failover"
    assert sync_log.victim_first_ok_after_kill is not None
    assert async_log.victim_first_ok_after_kill is not None
    assert acked_before_kill > 0
    assert not lost, f"{len(lost)} acknowledged appends lost, e.g. {lost[:3]}"
    assert not moved, f"{len(moved)} appends stored under another seq than returned"
    assert not duplicated, f"{len(duplicated)} messages stored twice"
    # Each session holds only its own messages.
    for sid, entries in logs.items():
        assert all(m.message.content.startswith(f"{sid} #") for m in entries), sid
