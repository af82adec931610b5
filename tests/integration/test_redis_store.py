"""RedisSessionStore against a real redis-server: restarts, retries, cluster keys, TTL, async."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.retry import Retry

from agentmem.errors import ConfigurationError, StoreClosedError, StoreError
from agentmem.stores._redis_support import parse_messages, parse_state
from agentmem.stores.base import SessionStore
from agentmem.stores.redis import RedisSessionStore
from agentmem.types import Message
from tests.redis_server import RedisServer, find_redis_server

pytestmark = pytest.mark.integration


def _msgs(n: int, tag: str = "m") -> list[Message]:
    return [Message(role="user", content=f"{tag}{i}") for i in range(n)]


def _prefix() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(redis_url: str) -> Iterator[RedisSessionStore]:
    s = RedisSessionStore.from_url(redis_url, prefix=_prefix())
    yield s
    s.close()


@pytest.fixture
async def astore(redis_url: str) -> AsyncIterator[RedisSessionStore]:
    s = RedisSessionStore.from_url(redis_url, prefix=_prefix())
    yield s
    await s.aclose()


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A private server, so restarting it cannot disturb other tests."""
    if find_redis_server() is None:
        pytest.skip("redis-server is not on PATH; .ci/run installs it")
    with RedisServer.start(tmp_path / "redis") as server:
        yield server


# -- durability and retries ---------------------------------------------------------------


def test_kill_and_restart_mid_stream_loses_no_acknowledged_append(own_server: RedisServer) -> None:
    store = RedisSessionStore.from_url(own_server.url, prefix="restart", retries=30)
    probe = redis.Redis.from_url(own_server.url, retry=Retry(NoBackoff(), 30))
    run_id_before = probe.info("server")["run_id"]
    halfway = threading.Event()

    def restart_when_halfway() -> None:
        halfway.wait()
        own_server.restart()

    restarter = threading.Thread(target=restart_when_halfway)
    restarter.start()
    acked: list[tuple[int, str]] = []
    try:
        for i in range(300):
            batch = _msgs(1 + i % 3, tag=f"b{i}-")
            seqs = store.append("s", batch)
            acked += zip(seqs, (m.id for m in batch), strict=True)
            if i == 100:
                halfway.set()  # kill -9 + restart while we keep appending
    finally:
        halfway.set()
        restarter.join()
    stored = store.read("s")
    assert probe.info("server")["run_id"] != run_id_before  # it really was restarted
    assert [(m.seq, m.message.id) for m in stored] == acked
    assert store.count("s") == len(acked) == sum(1 + i % 3 for i in range(300))
    probe.close()
    store.close()


class _ReplyDroppingProxy:
    """TCP proxy to Redis that, when armed, closes the connection instead of relaying the
    reply to the next EVALSHA: the write is applied but the client never hears about it."""

    def __init__(self, port: int) -> None:
        self._upstream = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.armed = False
        self.dropped = 0
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self._upstream))
            self._sockets += (client, server)
            state = {"drop": False}
            threading.Thread(target=self._up, args=(client, server, state), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, state), daemon=True).start()

    def _up(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        while data := self._recv(src):
            if self.armed and b"EVALSHA" in data.upper():
                self.armed, state["drop"] = False, True
            dst.sendall(data)

    def _down(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        while data := self._recv(src):
            if state["drop"]:
                self.dropped += 1
                break
            dst.sendall(data)
        for sock in (src, dst):
            _shut(sock)

    @staticmethod
    def _recv(sock: socket.socket) -> bytes:
        try:
            return sock.recv(65536)
        except OSError:
            return b""

    def close(self) -> None:
        for sock in self._sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    # shutdown() wakes a thread blocked in recv() and sends FIN; close() alone does neither.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def test_append_retried_after_a_lost_reply_is_not_duplicated(redis_server: RedisServer) -> None:
    proxy = _ReplyDroppingProxy(redis_server.port)
    store = RedisSessionStore.from_url(f"redis://127.0.0.1:{proxy.port}/0", prefix=_prefix())
    try:
        assert store.append("s", _msgs(1, "warm")) == [1]
        proxy.armed = True
        batch = _msgs(3)
        seqs = store.append("s", batch)  # applied, reply lost, retried by the client
        assert proxy.dropped == 1
        assert seqs == [2, 3, 4]
        assert [m.message.id for m in store.read("s", after=1)] == [m.id for m in batch]
        assert store.count("s") == 4
    finally:
        store.close()
        proxy.close()


def test_repeating_an_append_returns_the_original_seqs(store: RedisSessionStore) -> None:
    batch = _msgs(3)
    first = store.append("s", batch)
    assert store.append("s", batch) == first
    assert store.append("s", [batch[1], batch[1]]) == [first[1], first[1]]
    fresh = _msgs(1, "new")
    assert store.append("s", [batch[0], *fresh]) == [first[0], first[-1] + 1]
    assert [m.message for m in store.read("s")] == [*batch, *fresh]


def test_seqs_are_not_reused_after_clear(store: RedisSessionStore) -> None:
    assert store.append("s", _msgs(3)) == [1, 2, 3]
    store.clear("s")
    assert store.sessions() == []
    assert store.append("s", _msgs(1)) == [4]


# -- key layout and TTL -------------------------------------------------------------------


def test_all_keys_of_a_session_share_one_cluster_slot(redis_url: str, raw: redis.Redis) -> None:
    prefix = _prefix()
    store = RedisSessionStore.from_url(redis_url, prefix=prefix)
    sessions = ["user-1:chat.7", "b@x", "c"]
    for sid in sessions:
        store.append(sid, _msgs(2))
        store.set_state(sid, "summary", {"text": sid})
    store.close()
    keys = [k for k in raw.scan_iter(f"{prefix}:*") if k != f"{prefix}:sessions"]
    for sid in sessions:
        own = [k for k in keys if f"{{{sid}}}" in k]
        assert len(own) == 4  # seq, log, ids, state
        assert {key_slot(k.encode()) for k in own} == {key_slot(sid.encode())}
    assert len(keys) == 4 * len(sessions)


def test_session_ttl_covers_every_key_and_is_refreshed_by_writes(
    redis_url: str, raw: redis.Redis
) -> None:
    prefix = _prefix()
    store = RedisSessionStore.from_url(redis_url, prefix=prefix, session_ttl=30)
    store.append("s", _msgs(2))
    store.set_state("s", "k", {"v": 1})
    keys = list(raw.scan_iter(f"{prefix}:{{s}}:*"))
    assert len(keys) == 4
    assert all(0 < raw.pttl(k) <= 30_000 for k in keys)
    for k in keys:
        raw.pexpire(k, 1000)
    store.set_state("s", "k", {"v": 2})
    assert all(raw.pttl(k) > 1000 for k in keys)
    store.close()


def test_session_expires_after_ttl(redis_url: str) -> None:
    store = RedisSessionStore.from_url(redis_url, prefix=_prefix(), session_ttl=0.1)
    store.append("s", _msgs(2))
    store.set_state("s", "k", {"v": 1})
    deadline = time.monotonic() + 10
    while store.count("s") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.count("s") == 0
    assert store.get_state("s", "k") is None
    assert store.sessions() == []
    store.close()


# -- async --------------------------------------------------------------------------------


async def test_async_methods_match_sync_ones(redis_url: str) -> None:
    sync = RedisSessionStore.from_url(redis_url, prefix=_prefix())
    asyn = RedisSessionStore.from_url(redis_url, prefix=_prefix())
    batch = _msgs(10)
    try:
        assert await asyn.aappend("s", batch) == sync.append("s", batch)
        assert await asyn.aread("s", after=3, limit=4) == sync.read("s", after=3, limit=4)
        assert await asyn.aread_last("s", 3) == sync.read_last("s", 3)
        assert await asyn.acount("s") == sync.count("s") == 10
        assert await asyn.alast_seq("s") == sync.last_seq("s") == 10
        await asyn.aset_state("t", "k", {"a": [1, "x"]})
        sync.set_state("t", "k", {"a": [1, "x"]})
        assert await asyn.aget_state("t", "k") == sync.get_state("t", "k") == {"a": [1, "x"]}
        assert await asyn.asessions() == sync.sessions() == ["s", "t"]
        await asyn.adelete_state("t", "k")
        sync.delete_state("t", "k")
        await asyn.aclear("s")
        sync.clear("s")
        assert await asyn.asessions() == sync.sessions() == []
    finally:
        sync.close()
        await asyn.aclose()


async def test_concurrent_async_appenders_lose_nothing(astore: RedisSessionStore) -> None:
    async def writer(w: int) -> list[tuple[int, str]]:
        out = []
        for m in _msgs(100, tag=f"w{w}-"):
            (seq,) = await astore.aappend("s", [m])
            out.append((seq, m.id))
        return out

    results = await asyncio.gather(*(writer(w) for w in range(20)))
    acked = sorted(pair for r in results for pair in r)
    assert all([s for s, _ in r] == sorted(s for s, _ in r) for r in results)
    assert len({s for s, _ in acked}) == 2000
    stored = await astore.aread("s")
    assert [(m.seq, m.message.id) for m in stored] == acked


def test_concurrent_threads_lose_nothing(store: RedisSessionStore) -> None:
    acked: list[int] = []

    def writer(w: int) -> None:
        for i in range(25):
            acked.extend(store.append("s", _msgs(2, tag=f"{w}-{i}-")))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(acked) == [m.seq for m in store.read("s")]
    assert len(set(acked)) == store.count("s") == 400


async def test_sync_client_only_store_still_serves_async_calls(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    store = RedisSessionStore(client, prefix=_prefix())
    assert await store.aappend("s", _msgs(2)) == [1, 2]
    assert [m.seq for m in await store.aread("s")] == [1, 2]
    store.close()
    assert client.ping()  # an injected client stays open
    client.close()


async def test_async_client_only_store_refuses_sync_calls(redis_url: str) -> None:
    client = redis.asyncio.Redis.from_url(redis_url)
    store = RedisSessionStore(async_client=client, prefix=_prefix())
    assert await store.aappend("s", _msgs(1)) == [1]
    with pytest.raises(ConfigurationError, match="only an async client"):
        store.count("s")
    await store.aclose()
    assert await client.ping()
    await client.aclose()


# -- errors -------------------------------------------------------------------------------


def test_unreachable_server_raises_store_error_naming_the_address() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound but not listening: connections are refused
        client = redis.Redis(
            host="127.0.0.1", port=port, retry=Retry(NoBackoff(), 1), socket_connect_timeout=1
        )
        store = RedisSessionStore(client)
        with pytest.raises(StoreError, match=f"127.0.0.1:{port}"):
            store.append("s", _msgs(1))
        client.close()


def test_closed_store_refuses_use(store: RedisSessionStore) -> None:
    store.close()
    with pytest.raises(StoreClosedError):
        store.read("s")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"client": None}, "needs client"),
        ({"prefix": "a{b}"}, "without braces"),
        ({"session_ttl": 0}, "positive"),
        ({"session_ttl": float("nan")}, "positive"),
    ],
)
def test_bad_configuration_is_refused(kwargs: dict[str, object], match: str) -> None:
    client = redis.Redis()  # never connects: construction fails first
    with pytest.raises(ConfigurationError, match=match):
        RedisSessionStore(**{"client": client, **kwargs})  # type: ignore[arg-type]


def test_store_satisfies_the_protocol(store: RedisSessionStore) -> None:
    assert isinstance(store, SessionStore)


# -- corrupted data -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "member",
    ["{not json", '{"role": "nobody", "content": "x"}', b"\xff\xfe", '["a list"]'],
    ids=["not-json", "not-a-message", "not-utf8", "a-list"],
)
def test_parse_messages_wraps_an_unreadable_member_in_store_error(member: str | bytes) -> None:
    good = Message(role="user", content="fine").to_json()
    with pytest.raises(StoreError, match=r"message 2 of the Redis key 'p:\{s\}:log'") as info:
        parse_messages([(good, 1.0), (member, 2.0)], "p:{s}:log")
    assert isinstance(info.value.__cause__, ValueError)  # pydantic's ValidationError too
    assert [m.message.content for m in parse_messages([(good, 1.0)], "k")] == ["fine"]


@pytest.mark.parametrize("raw", ["{broken", b"\xff", "[1, 2]", '"text"', "null"], ids=repr)
def test_parse_state_wraps_a_corrupted_document_in_store_error(raw: str | bytes) -> None:
    with pytest.raises(StoreError, match=r"'summary' of the Redis hash 'p:\{s\}:state'"):
        parse_state(raw, "p:{s}:state", "summary")
    with pytest.raises(StoreError, match=r"the Redis key 'p:\{s\}:owner' is corrupted"):
        parse_state(raw, "p:{s}:owner")
    assert parse_state(None, "k") is None
    assert parse_state(b'{"a": 1}', "k") == {"a": 1}


async def test_corrupted_members_and_fields_raise_store_error(
    store: RedisSessionStore, raw: redis.Redis
) -> None:
    """A member or field written by something else than the store (corrupted) is reported
    as a StoreError naming its key, by the sync and the async reads alike."""
    store.append("s1", _msgs(2))
    store.set_state("s1", "summary", {"text": "ok"})
    store.claim_owner("s1", {"owner": "alice"})
    keys = store._keys("s1")
    raw.zadd(keys.log, {"{not a message": 3})
    raw.hset(keys.state, "summary", "{broken")
    raw.set(keys.owner, '{"owner": ')
    reads = {
        "read": (lambda: store.read("s1"), lambda: store.aread("s1"), keys.log),
        "read_last": (
            lambda: store.read_last("s1", 1),
            lambda: store.aread_last("s1", 1),
            keys.log,
        ),
        "get_state": (
            lambda: store.get_state("s1", "summary"),
            lambda: store.aget_state("s1", "summary"),
            keys.state,
        ),
        "get_owner": (lambda: store.get_owner("s1"), lambda: store.aget_owner("s1"), keys.owner),
    }
    for name, (sync, asynchronous, key) in reads.items():
        with pytest.raises(StoreError, match=re.escape(repr(key))) as info:
            sync()
        assert isinstance(info.value.__cause__, ValueError), name
        with pytest.raises(StoreError, match=re.escape(repr(key))):
            await asynchronous()
    assert [m.message.content for m in store.read("s1", limit=2)] == ["m0", "m1"]
