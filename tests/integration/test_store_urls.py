"""Every built-in store URL opens its real store through the registry, from the library,
the environment and the command line: Qdrant Edge and SQLite on a temp dir, qdrant-client's
local mode, a real ``redis-server`` and a local Redis Cluster, and the in-memory stores."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from agentmem import LongTermMemory, MemoryService
from agentmem.backends import MEMORY_URL_ENV, QDRANT_URL_ENV, REDIS_URL_ENV, SESSION_URL_ENV
from agentmem.cli import main
from agentmem.stores.in_memory import InMemoryMemoryStore
from agentmem.stores.memory import InMemorySessionStore
from agentmem.stores.qdrant.client import QdrantClientStore
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from agentmem.stores.redis import RedisSessionStore
from agentmem.stores.sqlite import SQLiteSessionStore
from tests.fake_embedder import HashingEmbedder

pytestmark = pytest.mark.integration

DIM = 384  # the command line counts on a store of the default embedder's dimension


@pytest.fixture(autouse=True)
def _no_store_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (MEMORY_URL_ENV, SESSION_URL_ENV, QDRANT_URL_ENV, REDIS_URL_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("memory_url", "session_url", "memory_class", "session_class"),
    [
        ("edge://{tmp}/lt", "sqlite://{tmp}/s.db", QdrantEdgeStore, SQLiteSessionStore),
        ("qdrant+local://", "{redis_url}", QdrantClientStore, RedisSessionStore),
        ("memory://", "{redis_cluster_url}", InMemoryMemoryStore, RedisSessionStore),
        ("memory://", "memory://", InMemoryMemoryStore, InMemorySessionStore),
    ],
    ids=["edge-sqlite", "local-redis", "memory-cluster", "memory-memory"],
)
def test_each_built_in_url_serves_a_service(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    memory_url: str,
    session_url: str,
    memory_class: type,
    session_class: type,
) -> None:
    urls = {"tmp": str(tmp_path)}
    for fixture in ("redis_url", "redis_cluster_url"):
        if f"{{{fixture}}}" in session_url:
            urls[fixture] = request.getfixturevalue(fixture)
    session = f"urls-{uuid.uuid4().hex[:8]}"  # the Redis servers are shared by tests
    with MemoryService.open(
        tmp_path / "home",
        embedder=HashingEmbedder(DIM),
        memory_url=memory_url.format(**urls),
        session_url=session_url.format(**urls),
        background=False,
    ) as service:
        assert type(service.memory_store) is memory_class
        assert type(service.sessions) is session_class
        alice = service.manager("alice", session)
        alice.process_interaction("I keep bees on the roof", "Noted.")
        alice.remember("alice keeps bees on the roof")
        said = [m.message.content for m in service.sessions.read(session)]
        assert said == ["I keep bees on the roof", "Noted."]
        hits = service.manager("alice", session).recall("bees")
        assert hits[0].record.content == "alice keeps bees on the roof"
        assert service.manager("bob").recall("bees") == []
        service.sessions.clear(session)
    # Nothing is written to the home the URLs do not name.
    assert not (tmp_path / "home").exists()


def test_the_older_redis_url_still_names_a_redis_session_store(
    tmp_path: Path, redis_url: str
) -> None:
    with MemoryService.open(
        tmp_path, embedder=HashingEmbedder(DIM), qdrant_url=":memory:", redis_url=redis_url
    ) as service:
        assert isinstance(service.memory_store, QdrantClientStore)
        assert isinstance(service.sessions, RedisSessionStore)


def test_the_command_line_reads_the_store_its_url_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = f"edge://{tmp_path}/elsewhere"
    memory = LongTermMemory.open(
        user_id="alice", embedder=HashingEmbedder(DIM), memory_url=elsewhere
    )
    memory.store_memory("Alice indents with tabs", "semantic", subtype="preference")
    memory.close()
    home = str(tmp_path / "home")

    assert main(["--home", home, "stats", "--user", "alice"]) == 1
    assert f"no memories in {home} yet" in capsys.readouterr().err

    assert main(["--home", home, "--memory-url", elsewhere, "stats", "--user", "alice"]) == 0
    assert "semantic/preference      1" in capsys.readouterr().out

    # Messages name the store the URL names, not the unused home.
    assert main(["--home", home, "--memory-url", elsewhere, "stats", "--user", "bob"]) == 1
    assert f"user 'bob' has no memories in {tmp_path}/elsewhere;" in capsys.readouterr().err

    monkeypatch.setenv(MEMORY_URL_ENV, elsewhere)
    assert main(["--home", home, "stats", "--user", "alice"]) == 0
    assert "semantic/preference      1" in capsys.readouterr().out

    assert main(["--home", home, "--memory-url", "mongodb://db/x", "stats", "--user", "a"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("agentmem: unknown memory store scheme 'mongodb'")
    assert "edge://, memory://, qdrant+http://" in err
