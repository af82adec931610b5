"""RedisSessionStore when its server stalls (SIGSTOP) or dies (SIGKILL) under load.

Every call must return or raise :class:`StoreUnavailableError` within its bound (no hangs);
afterwards nothing acknowledged may be lost and nothing may be stored twice, including
appends that failed with outcome ``"unknown"`` and were retried with the same messages.
Appends that failed with outcome ``"not_applied"`` must really be absent.

The faults hit a private ``redis-server`` (one per module), so pausing or killing it never
disturbs other tests. ``AGENTMEM_FAULT_TRIALS`` (default 2) sets how many times each fault is
injected; run with ``-s`` to see the summary table.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from agentmem.errors import ConfigurationError, StoreError, StoreUnavailableError
from agentmem.stores._redis_support import AsyncDeadlineRetry, DeadlineRetry
from agentmem.stores.redis import RedisSessionStore
from agentmem.types import Message
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration

TRIALS = max(1, int(os.environ.get("AGENTMEM_FAULT_TRIALS", "2")))
TIMEOUT = 0.5  # from_url(timeout=...)
DEADLINE = 1.0  # from_url(deadline=...)
# Documented: a call ends after about max(deadline, timeout). This is a hang check, not a
# benchmark: allow a couple more timeouts and a second of scheduling slack.
BOUND = DEADLINE + 2 * TIMEOUT + 1.0
# Longest we wait for a (possibly hung) call before declaring it hung and moving on.
HANG_CAP = 4 * BOUND


# -- the report printed at the end of the module ------------------------------------------


@dataclass
class _Row:
    trials: int = 0
    calls: int = 0
    lost: int = 0
    duplicated: int = 0
    hung: int = 0
    slowest: float = 0.0
    outcomes: Counter[str] = field(default_factory=Counter)


_REPORT: dict[str, _Row] = {}


@pytest.fixture(scope="module", autouse=True)
def _print_report() -> Iterator[None]:
    yield
    if not _REPORT:
        return
    lines = [
        f"\nfault trials (timeout={TIMEOUT} s, deadline={DEADLINE} s, bound={BOUND} s)",
        f"{'case':<34} {'trials':>6} {'calls':>6} {'lost':>5} {'dup':>5} {'hung':>5} "
        f"{'slowest':>8}  outcomes",
    ]
    for case, row in _REPORT.items():
        outcomes = ", ".join(f"{k}={v}" for k, v in sorted(row.outcomes.items()))
        lines.append(
            f"{case:<34} {row.trials:>6} {row.calls:>6} {row.lost:>5} {row.duplicated:>5} "
            f"{row.hung:>5} {row.slowest:>7.2f}s  {outcomes}"
        )
    print("\n".join(lines))


# -- fixtures and helpers -------------------------------------------------------------------


def _open(server: RedisServer) -> RedisSessionStore:
    return RedisSessionStore.from_url(
        server.url, prefix=f"f{uuid.uuid4().hex[:10]}", timeout=TIMEOUT, deadline=DEADLINE
    )


@pytest.fixture
async def store(private_redis: RedisServer) -> AsyncIterator[RedisSessionStore]:
    s = _open(private_redis)
    try:
        yield s
    finally:
        private_redis.resume()
        await s.aclose()


def _msgs(n: int, tag: str) -> list[Message]:
    return [Message(role="user", content=f"{tag}-{i}") for i in range(n)]


@dataclass
class _Result:
    name: str
    elapsed: float
    value: Any = None
    error: BaseException | None = None

    @property
    def outcome(self) -> str:
        if self.error is None:
            return "ok"
        return getattr(self.error, "outcome", type(self.error).__name__)


async def _timed(name: str, call: Callable[[], Awaitable[Any]]) -> _Result:
    start = time.monotonic()
    try:
        value = await call()
    except Exception as exc:  # recorded; the test asserts on the type
        return _Result(name, time.monotonic() - start, error=exc)
    return _Result(name, time.monotonic() - start, value=value)


def _in_thread(fn: Callable[[], Any]) -> Callable[[], Awaitable[Any]]:
    return lambda: asyncio.to_thread(fn)


def _check_ids(store: RedisSessionStore, sid: str, expected: dict[str, int]) -> tuple[int, int]:
    """(lost, duplicated) among ``expected`` (message id -> the seq ``append`` returned).

    Lost: not stored, or stored under another seq. Duplicated: extra copies.
    """
    stored = store.read(sid)
    counts = Counter(m.message.id for m in stored)
    seq_of = {m.message.id: m.seq for m in stored}
    lost = sum(1 for i, seq in expected.items() if seq_of.get(i) != seq)
    duplicated = sum(counts[i] - 1 for i in expected if counts[i] > 1)
    return lost, duplicated


# -- stalled server (SIGSTOP) -----------------------------------------------------------------


async def test_calls_on_a_stalled_server_end_in_time_and_lose_nothing(
    private_redis: RedisServer, store: RedisSessionStore
) -> None:
    """SIGSTOP: every sync and async call ends within BOUND; after SIGCONT, retries of the
    failed appends with the same messages store each message exactly once."""
    row_sync = _REPORT.setdefault("SIGSTOP, sync calls", _Row())
    row_async = _REPORT.setdefault("SIGSTOP, async calls", _Row())
    for trial in range(TRIALS):
        await _stall_trial(private_redis, store, f"stall{trial}", row_sync, row_async)


async def _stall_trial(
    server: RedisServer, store: RedisSessionStore, sid: str, row_sync: _Row, row_async: _Row
) -> None:
    warm = _msgs(2, f"{sid}.warm")
    # Pooled connections for both clients, so the appends below are sent, then stall.
    acked_sync = dict(zip([warm[0].id], store.append(sid, warm[:1]), strict=True))
    acked_async = dict(zip([warm[1].id], await store.aappend(sid, warm[1:]), strict=True))
    store.set_state(sid, "sync", {"v": 0})
    await store.aset_state(sid, "async", {"v": 0})
    fresh = _open(server)  # never connected: its calls stall in the handshake
    batches = {name: _msgs(2, f"{sid}.{name}") for name in ("sync", "async", "fresh")}

    sync_calls: dict[str, Callable[[], Any]] = {
        "append": lambda: store.append(sid, batches["sync"]),
        "read": lambda: store.read(sid),
        "get_state": lambda: store.get_state(sid, "sync"),
        "set_state": lambda: store.set_state(sid, "sync", {"v": 1}),
        "sessions": store.sessions,
        "append (new connection)": lambda: fresh.append(sid, batches["fresh"]),
    }
    async_calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "aappend": lambda: store.aappend(sid, batches["async"]),
        "aread": lambda: store.aread(sid),
        "aget_state": lambda: store.aget_state(sid, "async"),
        "aset_state": lambda: store.aset_state(sid, "async", {"v": 1}),
        "asessions": store.asessions,
    }
    server.pause()
    try:
        tasks = [
            asyncio.ensure_future(_timed(name, _in_thread(fn))) for name, fn in sync_calls.items()
        ] + [asyncio.ensure_future(_timed(n, fn)) for n, fn in async_calls.items()]
        await asyncio.wait(tasks, timeout=HANG_CAP)
    finally:
        server.resume()  # also lets a hung call finish, so that it can be reported
    results = [await t for t in tasks]
    by_name = {r.name: r for r in results}
    for row, names in ((row_sync, sync_calls), (row_async, async_calls)):
        row.trials += 1
        for name in names:
            r = by_name[name]
            row.calls += 1
            row.slowest = max(row.slowest, r.elapsed)
            row.hung += r.elapsed >= BOUND
            row.outcomes[r.outcome] += 1
    for r in results:
        assert r.elapsed < BOUND, f"{r.name} took {r.elapsed:.2f} s (bound {BOUND} s)"
        assert r.error is None or isinstance(r.error, StoreUnavailableError), repr(r.error)

    # The new connection never sent its append: the error must say so, and be right.
    assert by_name["append (new connection)"].outcome == "not_applied"
    assert not {m.message.id for m in store.read(sid)} & {m.id for m in batches["fresh"]}

    # Retry the appends that failed, with the same messages: each must be stored once.
    for name, acked, batch in (
        ("append", acked_sync, batches["sync"]),
        ("append (new connection)", acked_sync, batches["fresh"]),
        ("aappend", acked_async, batches["async"]),
    ):
        r = by_name[name]
        seqs = r.value if r.error is None else store.append(sid, batch)
        acked.update(zip((m.id for m in batch), seqs, strict=True))
    for key, call in (("sync", "set_state"), ("async", "aset_state")):
        outcome = by_name[call].outcome
        if outcome == "not_applied":
            assert store.get_state(sid, key) == {"v": 0}, "a 'not_applied' write happened"
        if outcome == "unknown":
            store.set_state(sid, key, {"v": 1})  # the safe retry
        if outcome != "not_applied":
            assert store.get_state(sid, key) == {"v": 1}
    for row, acked in ((row_sync, acked_sync), (row_async, acked_async)):
        lost, duplicated = _check_ids(store, sid, acked)
        row.lost += lost
        row.duplicated += duplicated
        assert (lost, duplicated) == (0, 0)
    assert store.count(sid) == len(acked_sync) + len(acked_async)
    await fresh.aclose()


async def test_unknown_append_retried_with_the_same_messages_is_stored_once(
    private_redis: RedisServer, store: RedisSessionStore
) -> None:
    row = _REPORT.setdefault("unknown append, then retried", _Row())
    for trial in range(TRIALS):
        sid = f"unknown{trial}"
        first = store.append(sid, _msgs(1, "first"))
        batch = _msgs(3, f"batch{trial}")
        private_redis.pause()
        try:
            start = time.monotonic()
            with pytest.raises(StoreUnavailableError) as info:
                store.append(sid, batch)  # sent on the pooled connection, then no reply
            elapsed = time.monotonic() - start
        finally:
            private_redis.resume()
        assert info.value.outcome == "unknown"
        assert "same Message objects" in str(info.value)
        assert elapsed < BOUND
        # SIGCONT: the server now runs the append it had received. Wait until it has, so that
        # the retry below really meets an append that was applied.
        for _ in range(200):
            if store.count(sid) == 4:
                break
            await asyncio.sleep(0.01)
        applied_before_retry = store.count(sid) == 4
        seqs = store.append(sid, batch)  # the safe retry: same Message objects
        lost, duplicated = _check_ids(
            store, sid, dict(zip((m.id for m in batch), seqs, strict=True))
        )
        row.trials += 1
        row.calls += 2
        row.lost += lost
        row.duplicated += duplicated
        row.slowest = max(row.slowest, elapsed)
        row.outcomes["unknown"] += 1
        row.outcomes["applied before retry"] += applied_before_retry
        assert seqs == [first[0] + 1, first[0] + 2, first[0] + 3]
        assert (lost, duplicated) == (0, 0)
        assert store.count(sid) == 4


# -- killed and restarted server (SIGKILL) ---------------------------------------------------


@dataclass
class _Stream:
    """What one appender saw: acknowledged seqs, and batches whose append failed."""

    acked: dict[str, int] = field(default_factory=dict)
    failed: list[tuple[list[Message], str]] = field(default_factory=list)
    slowest: float = 0.0
    calls: int = 0
    hung: int = 0
    other_errors: list[BaseException] = field(default_factory=list)

    def record(self, batch: list[Message], start: float, seqs: list[int] | Exception) -> None:
        took = time.monotonic() - start
        self.slowest, self.calls = max(self.slowest, took), self.calls + 1
        self.hung += took >= BOUND
        if isinstance(seqs, StoreUnavailableError):
            self.failed.append((batch, seqs.outcome))
        elif isinstance(seqs, Exception):
            self.other_errors.append(seqs)
        else:
            self.acked.update(zip((m.id for m in batch), seqs, strict=True))


async def test_kill_and_restart_mid_stream_loses_and_duplicates_nothing(
    private_redis: RedisServer, store: RedisSessionStore
) -> None:
    """SIGKILL, downtime longer than the deadline, restart (AOF, fsync always), while a thread
    and an asyncio task keep appending. Acknowledged appends survive exactly once; appends
    that failed with "unknown", retried with the same messages, are stored exactly once; and
    appends that failed with "not_applied" are absent."""
    row = _REPORT.setdefault("SIGKILL + restart, thread + task", _Row())
    for trial in range(TRIALS):
        await _kill_trial(private_redis, store, f"kill{trial}", row)


async def _kill_trial(server: RedisServer, store: RedisSessionStore, sid: str, row: _Row) -> None:
    stop = threading.Event()
    streams = {"thread": _Stream(), "task": _Stream()}

    def append_from_thread(stream: _Stream = streams["thread"]) -> None:
        i = 0
        while not stop.is_set():
            batch, start = _msgs(1 + i % 3, f"{sid}.thread{i}"), time.monotonic()
            try:
                stream.record(batch, start, store.append(sid, batch))
            except Exception as exc:
                stream.record(batch, start, exc)
            i += 1

    async def append_from_task(stream: _Stream = streams["task"]) -> None:
        i = 0
        while not stop.is_set():
            batch, start = _msgs(1 + i % 3, f"{sid}.task{i}"), time.monotonic()
            try:
                stream.record(batch, start, await store.aappend(sid, batch))
            except Exception as exc:
                stream.record(batch, start, exc)
            i += 1

    thread = threading.Thread(target=append_from_thread)
    thread.start()
    task = asyncio.ensure_future(append_from_task())
    try:
        await asyncio.sleep(0.3)  # mid-stream
        await asyncio.to_thread(server.restart, downtime=DEADLINE + 0.5)
        await asyncio.sleep(0.3)  # and keep appending after the restart
    finally:
        stop.set()
        await asyncio.wait_for(task, HANG_CAP)
        await asyncio.to_thread(thread.join, HANG_CAP)
    assert not thread.is_alive()

    failed = [f for s in streams.values() for f in s.failed]
    stored_ids = {m.message.id for m in store.read(sid)}
    for batch, outcome in failed:
        if outcome == "not_applied":  # the error said so: it must be true
            assert not stored_ids & {m.id for m in batch}, "a 'not_applied' append was stored"
    expected: dict[str, int] = {}
    for s in streams.values():
        expected.update(s.acked)
    for batch, _ in failed:  # retry every failed batch with the same messages
        expected.update(zip((m.id for m in batch), store.append(sid, batch), strict=True))
    lost, duplicated = _check_ids(store, sid, expected)

    row.trials += 1
    row.lost += lost
    row.duplicated += duplicated
    for s in streams.values():
        row.calls += s.calls
        row.slowest = max(row.slowest, s.slowest)
        row.hung += s.hung
        row.outcomes["ok"] += s.calls - len(s.failed) - len(s.other_errors)
        assert not s.other_errors, s.other_errors
        assert s.slowest < BOUND, f"an append took {s.slowest:.2f} s (bound {BOUND} s)"
    for _, outcome in failed:
        row.outcomes[outcome] += 1
    assert failed, "the downtime outlasted the deadline, so some append must have failed"
    assert all(s.acked for s in streams.values())
    assert (lost, duplicated) == (0, 0)
    assert store.count(sid) == len(expected)


# -- outcome without a server, and configuration --------------------------------------------


def _refusing_port() -> tuple[socket.socket, int]:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))  # bound but not listening: connections are refused
    return probe, probe.getsockname()[1]


async def test_refused_connection_means_not_applied_within_the_deadline() -> None:
    probe, port = _refusing_port()
    store = RedisSessionStore.from_url(
        f"redis://127.0.0.1:{port}/0", timeout=TIMEOUT, deadline=DEADLINE
    )
    try:
        calls: dict[str, Callable[[], Awaitable[Any]]] = {
            "append": lambda: asyncio.to_thread(store.append, "s", _msgs(1, "x")),
            "aappend": lambda: store.aappend("s", _msgs(1, "x")),
            "set_state": lambda: asyncio.to_thread(store.set_state, "s", "k", {}),
            "aclear": lambda: store.aclear("s"),
            "read": lambda: asyncio.to_thread(store.read, "s"),
            "asessions": store.asessions,
        }
        for name, call in calls.items():
            r = await _timed(name, call)
            assert isinstance(r.error, StoreUnavailableError), (name, r.error)
            assert r.error.outcome == "not_applied", (name, str(r.error))
            assert f"127.0.0.1:{port}" in str(r.error)
            assert r.elapsed < BOUND, (name, r.elapsed)
    finally:
        await store.aclose()
        probe.close()


def test_writes_through_a_client_you_pass_in_report_unknown() -> None:
    """The store cannot see when a command leaves a client it did not build."""
    probe, port = _refusing_port()
    client = redis.Redis(host="127.0.0.1", port=port, retry=Retry(NoBackoff(), 0))
    store = RedisSessionStore(client)
    try:
        with pytest.raises(StoreUnavailableError) as write:
            store.append("s", _msgs(1, "x"))
        with pytest.raises(StoreUnavailableError) as read:
            store.read("s")
        assert (write.value.outcome, read.value.outcome) == ("unknown", "not_applied")
        assert isinstance(write.value, StoreError)  # existing `except StoreError` still works
    finally:
        client.close()
        probe.close()


def test_from_url_bounds_every_network_step_and_every_call() -> None:
    store = RedisSessionStore.from_url("redis://127.0.0.1:1/0")  # never connects
    try:
        assert store._client is not None
        assert store._async_client is not None
        for client, retry_class in (
            (store._client, DeadlineRetry),
            (store._async_client, AsyncDeadlineRetry),
        ):
            kwargs = client.connection_pool.connection_kwargs
            assert kwargs["socket_timeout"] == kwargs["socket_connect_timeout"] == 5.0
            assert kwargs["health_check_interval"] == 30
            retry = kwargs["retry"]
            assert isinstance(retry, retry_class)
            assert (retry.attempt_time, retry.budget) == (5.0, 10.0)
        assert store._deadline == 10.0
    finally:
        store.close()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"timeout": 0}, "timeout must be a positive"),
        ({"timeout": float("inf")}, "timeout must be a positive"),
        ({"timeout": True}, "timeout must be a positive"),
        ({"timeout": 2, "deadline": 1}, "at least as large as timeout"),
        ({"deadline": float("nan")}, "at least as large as timeout"),
        ({"retries": -1}, "retries must be an integer"),
    ],
)
def test_from_url_refuses_unbounded_settings(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        RedisSessionStore.from_url("redis://127.0.0.1:1/0", **kwargs)


def test_store_unavailable_error_refuses_an_unknown_outcome() -> None:
    with pytest.raises(ValueError, match="outcome must be one of"):
        StoreUnavailableError("x", outcome="maybe")  # type: ignore[arg-type]
