"""A Redis Cluster named by URL: ``AGENTMEM_REDIS_URL`` / ``redis_url=`` reach a real local
cluster (3 masters with replicas), and URLs that cannot work are refused with a clear error.

The session-store conformance suite runs on the same cluster (``tests/conformance``); the
failover test is ``test_redis_cluster_faults.py``.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
import redis
import redis.asyncio.cluster
import redis.cluster

from agentmem import MemoryService
from agentmem.backends import REDIS_URL_ENV
from agentmem.errors import (
    ConfigurationError,
    SessionOwnershipError,
    StoreError,
    StoreUnavailableError,
)
from agentmem.stores.redis import RedisSessionStore
from agentmem.types import Message
from tests.fakes import HashingEmbedder
from tests.redis_cluster import RedisCluster
from tests.redis_server import free_port

pytestmark = pytest.mark.integration


def test_service_sessions_live_on_the_cluster_named_by_the_environment(
    redis_cluster: RedisCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REDIS_URL_ENV, redis_cluster.url)  # redis+cluster://127.0.0.1:<port>
    prefix_sessions = [f"chat-{uuid.uuid4().hex[:8]}-{i}" for i in range(6)]
    with MemoryService.open(
        tmp_path, embedder=HashingEmbedder(64), qdrant_url=":memory:", background=False
    ) as service:
        assert isinstance(service.sessions, RedisSessionStore)
        for session in prefix_sessions:
            service.manager("alice", session).process_interaction(f"hi from {session}", "ok")
        # Ownership records live in each session's slot too: bob is refused.
        with pytest.raises(SessionOwnershipError):
            service.manager("bob", prefix_sessions[0])

    # Each session's log is on the master that serves its slot: the sessions are spread
    # over the cluster, not stored on the node the URL names.
    masters = {
        redis_cluster.master_of(f"agentmem:{{{session}}}:log").port for session in prefix_sessions
    }
    for session in prefix_sessions:
        node = redis_cluster.master_of(f"agentmem:{{{session}}}:log")
        direct = redis.Redis(port=node.port)
        try:
            assert direct.zcard(f"agentmem:{{{session}}}:log") == 2
        finally:
            direct.close()
    assert len(masters) > 1

    # The query-flag form names the same cluster.
    flagged = f"redis://127.0.0.1:{redis_cluster.nodes[1].port}?cluster=true"
    monkeypatch.delenv(REDIS_URL_ENV)
    with MemoryService.open(
        tmp_path, embedder=HashingEmbedder(64), qdrant_url=":memory:", redis_url=flagged
    ) as again:
        for session in prefix_sessions:
            log = again.manager("alice", session).short_term.get_log()
            assert [m.content for m in log] == [f"hi from {session}", "ok"]


async def test_async_calls_reach_the_cluster(redis_cluster: RedisCluster) -> None:
    store = RedisSessionStore.from_url(redis_cluster.url, prefix=f"a-{uuid.uuid4().hex[:8]}")
    try:
        sessions = [f"s{i}" for i in range(12)]
        for session in sessions:
            assert await store.aappend(session, [Message(role="user", content=session)]) == [1]
        assert await store.asessions() == sorted(sessions)
        assert [m.message.content for m in store.read("s3")] == ["s3"]
    finally:
        await store.aclose()


async def test_cluster_clients_passed_in_serve_every_operation(
    redis_cluster: RedisCluster,
) -> None:
    port = redis_cluster.nodes[2].port
    client = redis.cluster.RedisCluster(host="127.0.0.1", port=port)
    async_client = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=port)
    store = RedisSessionStore(
        client, async_client=async_client, prefix=f"in-{uuid.uuid4().hex[:8]}"
    )
    try:
        hi = Message(role="user", content="hi")
        assert store.append("s1", [hi]) == [1]
        assert await store.aappend("s1", [hi, Message(role="assistant", content="ok")]) == [1, 2]
        await store.aset_state("s2", "summary", {"text": "x"})
        assert store.state_keys("s2") == ["summary"]
        record = {"user_id": "alice"}
        assert await store.aclaim_owner("s1", record) == record
        assert store.claim_owner("s1", {"user_id": "bob"}) == record
        assert store.sessions() == ["s1", "s2"]
        store.clear("s1")
        assert await store.asessions() == ["s2"]
        assert store.get_owner("s1") == record  # the owner survives clear()
        assert store.last_seq("s1") == 0
        assert store.append("s1", [Message(role="user", content="again")]) == [3]
    finally:
        await store.aclose()
        client.close()
        await async_client.aclose()


def test_a_cluster_node_named_as_one_server_says_to_use_a_cluster_url(
    redis_cluster: RedisCluster,
) -> None:
    node = redis_cluster.nodes[0]
    prefix = f"plain-{uuid.uuid4().hex[:8]}"
    # A session whose slot another master serves: the node answers MOVED.
    session = next(
        s
        for s in (f"s{i}" for i in range(100))
        if redis_cluster.master_of(f"{prefix}:{{{s}}}:log") is not node
    )
    store = RedisSessionStore.from_url(f"redis://127.0.0.1:{node.port}/0", prefix=prefix)
    try:
        with pytest.raises(StoreError, match=r"redis\+cluster://") as caught:
            store.append(session, [Message(role="user", content="hi")])
        assert not isinstance(caught.value, StoreUnavailableError)
    finally:
        store.close()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+cluster://127.0.0.1:7000/2", "only database 0"),
        ("redis://127.0.0.1:7000?cluster=maybe", "cluster='maybe' is not a boolean"),
        ("redis+cluster://127.0.0.1:notaport", "not a usable Redis URL"),
        ("unix:///tmp/redis.sock?cluster=true", "reached over TCP"),
    ],
)
def test_unusable_cluster_urls_are_refused(url: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        RedisSessionStore.from_url(url)


def test_an_unreachable_cluster_raises_store_unavailable_within_the_timeout() -> None:
    url = f"redis+cluster://127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError, match="could not read its slot map") as caught:
        RedisSessionStore.from_url(url, timeout=0.5)
    assert caught.value.outcome == "not_applied"
    assert time.monotonic() - started < 5.0  # a hang check: refused at once on loopback
