"""The store registry: every store is named by a URL whose scheme picks its backend, for
every opener (``MemoryService.open``, ``MemoryManager.open``, ``LongTermMemory.open``), the
environment and third-party backends. Offline: the stores here are on disk (Qdrant Edge,
SQLite), in qdrant-client's local mode, or in memory; Redis is in
``tests/integration/test_store_urls.py``."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Hashable, Iterator
from pathlib import Path

import pytest

from agentmem import LongTermMemory, MemoryManager, MemoryService
from agentmem.backends import (
    MEMORY_URL_ENV,
    QDRANT_API_KEY_ENV,
    QDRANT_URL_ENV,
    REDIS_URL_ENV,
    SESSION_URL_ENV,
    BackendConfig,
    acquire_memory_store,
    acquire_session_store,
)
from agentmem.errors import ConfigurationError, StoreClosedError
from agentmem.long_term.records import Scope
from agentmem.stores.in_memory import InMemoryMemoryStore
from agentmem.stores.memory import InMemorySessionStore
from agentmem.stores.qdrant.client import QdrantClientStore
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from agentmem.stores.registry import (
    BackendURL,
    backend_for,
    known_schemes,
    open_memory_store,
    open_session_store,
    register_memory_store,
    register_session_store,
    unregister_store,
)
from agentmem.stores.sqlite import SQLiteSessionStore
from tests.fake_embedder import HashingEmbedder

DIM = 32
ENVIRONMENT = (MEMORY_URL_ENV, SESSION_URL_ENV, QDRANT_URL_ENV, REDIS_URL_ENV, QDRANT_API_KEY_ENV)


@pytest.fixture(autouse=True)
def _no_store_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test chooses its stores itself (a developer's shell may set these)."""
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


# -- a third-party backend, as a plugin would write it ---------------------------------------


class NotebookSessionStore(InMemorySessionStore):
    """A session store of a third party, named ``notebook://NAME``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class NotebookMemoryStore(InMemoryMemoryStore):
    """A memory store of a third party, named ``notebook://NAME`` (``shelf=`` option)."""

    def __init__(self, name: str, *, dimension: int, shelf: str) -> None:
        super().__init__(dimension=dimension)
        self.name = name
        self.shelf = shelf


def _open_notebook_memories(
    url: BackendURL, *, dimension: int, shelf: str = "top"
) -> NotebookMemoryStore:
    return NotebookMemoryStore(url.location, dimension=dimension, shelf=shelf)


def _notebook_name(url: BackendURL) -> Hashable:
    if not url.location:
        msg = f"{url} names no notebook; write notebook://NAME"
        raise ConfigurationError(msg)
    return url.location


@pytest.fixture
def notebook() -> Iterator[None]:
    register_session_store(
        "notebook", lambda url: NotebookSessionStore(url.location), locate=_notebook_name
    )
    register_memory_store(
        "notebook", _open_notebook_memories, options=["shelf"], locate=_notebook_name
    )
    yield
    unregister_store("notebook", kind="session")
    unregister_store("notebook", kind="memory")


def test_a_registered_backend_is_opened_by_every_opener(
    notebook: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = HashingEmbedder(DIM)
    with MemoryService.open(
        tmp_path,
        embedder=embedder,
        memory_url="notebook://team",
        session_url="notebook://chats",
        background=False,
    ) as service:
        assert isinstance(service.memory_store, NotebookMemoryStore)
        assert isinstance(service.sessions, NotebookSessionStore)
        assert (service.memory_store.name, service.sessions.name) == ("team", "chats")
        alice = service.manager("alice", "a1")
        alice.remember("alice waters the ferns on mondays")
        # The managers and memories of the process share the stores the URLs name.
        memory = LongTermMemory.open(
            user_id="alice", embedder=embedder, memory_url="notebook://team"
        )
        assert memory.store is service.memory_store
        assert [h.record.content for h in memory.retrieve_memories("ferns")] == [
            "alice waters the ferns on mondays"
        ]
        memory.close()  # its share only: the service goes on
        assert alice.recall("ferns")
    assert not (tmp_path / "sessions.db").exists()
    assert not (tmp_path / "long_term").exists()

    monkeypatch.setenv(SESSION_URL_ENV, "notebook://from-env")
    monkeypatch.setenv(MEMORY_URL_ENV, "notebook://from-env")
    with MemoryManager.open(user_id="bob", home=tmp_path, embedder=embedder) as bob:
        assert isinstance(bob.long_term.store, NotebookMemoryStore)
        assert bob.long_term.store.name == "from-env"


def test_a_backend_gets_the_options_it_declares_and_no_other(notebook: None) -> None:
    store = open_memory_store("notebook://n", dimension=DIM, shelf="bottom")
    assert isinstance(store, NotebookMemoryStore)
    assert (store.shelf, store.dimension) == ("bottom", DIM)
    with pytest.raises(ConfigurationError, match=r"notebook:// memory store does not take colour"):
        open_memory_store("notebook://n", dimension=DIM, colour="red")
    with pytest.raises(ConfigurationError, match=r"names no notebook"):
        open_session_store("notebook://")


def test_a_scheme_is_registered_once_unless_replaced(notebook: None) -> None:
    with pytest.raises(ConfigurationError, match=r"'notebook' is already registered"):
        register_session_store("notebook", lambda url: InMemorySessionStore())
    register_session_store("notebook", lambda url: NotebookSessionStore("replaced"), replace=True)
    store = open_session_store("notebook://x")
    assert isinstance(store, NotebookSessionStore)
    assert store.name == "replaced"
    for bad in ("", "note://book", "a:b"):
        with pytest.raises(ConfigurationError, match=r"a scheme is a name like"):
            register_memory_store(bad, _open_notebook_memories)


# -- the built-in schemes --------------------------------------------------------------------


def test_every_built_in_scheme_is_registered() -> None:
    assert known_schemes("memory") == [
        "edge",
        "memory",
        "qdrant+http",
        "qdrant+https",
        "qdrant+local",
    ]
    assert known_schemes("session") == [
        "memory",
        "redis",
        "redis+cluster",
        "redis+unix",
        "rediss",
        "rediss+cluster",
        "sqlite",
    ]


def test_built_in_local_schemes_open_real_stores(tmp_path: Path) -> None:
    edge = open_memory_store(f"edge://{tmp_path}/lt", dimension=DIM)
    local = open_memory_store("qdrant+local://", dimension=DIM, collection="mine")
    in_memory = open_memory_store("memory://", dimension=DIM)
    sqlite = open_session_store(f"sqlite://{tmp_path}/deep/sessions.db")
    sessions = open_session_store("memory://")
    try:
        assert isinstance(edge, QdrantEdgeStore)
        assert edge.path == tmp_path / "lt"
        assert isinstance(local, QdrantClientStore)
        assert local.collection == "mine"
        assert isinstance(in_memory, InMemoryMemoryStore)
        assert isinstance(sqlite, SQLiteSessionStore)
        assert Path(sqlite.path) == tmp_path / "deep" / "sessions.db"
        assert isinstance(sessions, InMemorySessionStore)
    finally:
        for store in (edge, local, in_memory, sqlite, sessions):
            store.close()


def test_paths_are_absolute_relative_or_in_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert BackendURL.parse("edge:///srv/a%20b").path == Path("/srv/a b")
    assert BackendURL.parse("edge://rel/dir").path == Path("rel/dir")
    assert BackendURL.parse("sqlite://~/s.db").path == tmp_path / "user" / "s.db"
    config = BackendConfig.resolve(tmp_path, memory_url="edge://rel/dir")
    assert config.memory_path == tmp_path / "rel" / "dir"


@pytest.mark.parametrize(
    ("kind", "url", "message"),
    [
        ("memory", "edge://", r"edge:// names no path; write edge:///absolute/path"),
        ("session", "sqlite://", r"sqlite:// names no path"),
        ("memory", "qdrant+http://:6333", r"needs a host"),
        ("memory", "qdrant+https://q:port", r"needs a host \(and a numeric port"),
        ("memory", "qdrant+local:///data", r"qdrant\+local:// is qdrant-client's in-memory"),
        ("session", "redis:///0", r"redis:///0 needs a host"),
        ("session", "redis+unix://", r"redis\+unix:// names no path"),
        ("memory", "localhost:6333", r"'localhost:6333' is not a store URL"),
        ("session", "://host", r"has no scheme"),
    ],
)
def test_a_bad_url_is_refused_before_anything_opens(
    kind: str, url: str, message: str, tmp_path: Path
) -> None:
    option = "memory_url" if kind == "memory" else "session_url"
    with pytest.raises(ConfigurationError, match=message):
        MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM), **{option: url})  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_scheme_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM), memory_url="mongodb://db/x")
    assert str(caught.value) == (
        "unknown memory store scheme 'mongodb' in 'mongodb://db/x'; the known ones are "
        "edge://, memory://, qdrant+http://, qdrant+https://, qdrant+local://"
    )
    # A session store's scheme is not a memory store's.
    with pytest.raises(ConfigurationError, match=r"unknown session store scheme 'edge'.*sqlite://"):
        BackendConfig.resolve(tmp_path, session_url=f"edge://{tmp_path}")
    assert list(tmp_path.iterdir()) == []


def test_a_password_never_reaches_a_message() -> None:
    with pytest.raises(ConfigurationError) as caught:
        backend_for("memory", "mongodb://admin:hunter2@db:27017/x")
    assert "hunter2" not in str(caught.value)
    assert "admin:***@db:27017" in str(caught.value)
    url = BackendURL.parse("qdrant+https://k:hunter2@q:6333")
    assert "hunter2" not in f"{url} {url!r}"
    assert url.inner == "https://k:hunter2@q:6333"


# -- arguments, their older names and the environment: one place ---------------------------


def test_the_defaults_are_edge_and_sqlite_in_the_home(tmp_path: Path) -> None:
    config = BackendConfig.resolve(tmp_path)
    assert config.memory_url == f"edge://{tmp_path}/long_term"
    assert config.session_url == f"sqlite://{tmp_path}/sessions.db"
    assert config.embedded
    assert config.memory_path == tmp_path / "long_term"


@pytest.mark.parametrize(
    ("qdrant_url", "memory_url"),
    [
        (":memory:", "qdrant+local://"),
        ("http://q:6333", "qdrant+http://q:6333"),
        ("HTTPS://q:6333/base", "qdrant+HTTPS://q:6333/base"),
        ("q:6333", "qdrant+http://q:6333"),
        ("edge:///srv/lt", "edge:///srv/lt"),
    ],
)
def test_the_older_qdrant_url_maps_onto_a_memory_url(
    qdrant_url: str, memory_url: str, tmp_path: Path
) -> None:
    assert BackendConfig.resolve(tmp_path, qdrant_url=qdrant_url).memory_url == memory_url


def test_the_older_redis_url_maps_onto_a_session_url(tmp_path: Path) -> None:
    for redis_url, session_url in [
        ("redis://r:6379/0", "redis://r:6379/0"),
        ("redis+cluster://r:7000", "redis+cluster://r:7000"),
        ("unix:///run/redis.sock", "redis+unix:///run/redis.sock"),
    ]:
        assert BackendConfig.resolve(tmp_path, redis_url=redis_url).session_url == session_url


def test_a_url_and_its_older_name_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"pass session_url= or its older name redis_url="):
        BackendConfig.resolve(tmp_path, session_url="memory://", redis_url="redis://r/0")


def test_arguments_win_over_the_environment_and_urls_over_older_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(QDRANT_URL_ENV, "http://old:6333")
    monkeypatch.setenv(REDIS_URL_ENV, "redis://old/0")
    config = BackendConfig.resolve(tmp_path)
    assert (config.memory_url, config.session_url) == ("qdrant+http://old:6333", "redis://old/0")
    assert not config.embedded
    assert config.memory_path is None
    monkeypatch.setenv(MEMORY_URL_ENV, "qdrant+https://new:6333")
    monkeypatch.setenv(SESSION_URL_ENV, "rediss://new/0")
    config = BackendConfig.resolve(tmp_path)
    assert (config.memory_url, config.session_url) == ("qdrant+https://new:6333", "rediss://new/0")
    config = BackendConfig.resolve(tmp_path, memory_url="memory://", redis_url="redis://arg/0")
    assert (config.memory_url, config.session_url) == ("memory://", "redis://arg/0")


def test_the_api_key_goes_to_a_backend_that_takes_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(QDRANT_API_KEY_ENV, "from-env")
    server = BackendConfig.resolve(tmp_path, memory_url="qdrant+https://q:6333")
    assert server.memory_options == {"api_key": "from-env"}
    assert server.as_options()["qdrant_api_key"] == "from-env"
    given = BackendConfig.resolve(
        tmp_path, qdrant_url="https://q:6333", qdrant_api_key="given", collection="c"
    )
    assert given.memory_options == {"api_key": "given", "collection": "c"}
    # The environment's key is no reason to refuse Edge; an argument Edge ignores is.
    assert BackendConfig.resolve(tmp_path).memory_options == {}
    with pytest.raises(ConfigurationError, match=r"collection= is not an option of the edge://"):
        BackendConfig.resolve(tmp_path, collection="c")
    with pytest.raises(ConfigurationError, match=r"qdrant_api_key= is not an option of"):
        MemoryService.open(tmp_path, embedder=HashingEmbedder(DIM), qdrant_api_key="k")


# -- sharing: one store per place and process ------------------------------------------------


def test_openers_of_one_place_share_its_store_until_the_last_lets_go(tmp_path: Path) -> None:
    home = BackendConfig.resolve(tmp_path)
    # The same directory named by another URL is the same store.
    other = BackendConfig.resolve(tmp_path / "x", memory_url=f"edge://{tmp_path}/x/../long_term")
    first = acquire_memory_store(home, dimension=DIM)
    second = acquire_memory_store(other, dimension=DIM)
    assert first.value is second.value
    scope = Scope(user_id="alice")
    first.release()
    assert second.value.count(scope) == 0
    second.release()
    with pytest.raises(StoreClosedError):
        first.value.count(scope)


def test_memory_urls_are_private_unless_named(tmp_path: Path) -> None:
    private = BackendConfig.resolve(tmp_path, memory_url="memory://", session_url="memory://")
    one, two = acquire_session_store(private), acquire_session_store(private)
    assert one.value is not two.value
    named = BackendConfig.resolve(tmp_path, session_url="memory://team")
    three, four = acquire_session_store(named), acquire_session_store(named)
    assert three.value is four.value
    for lease in (one, two, three, four):
        lease.release()
    assert list(tmp_path.iterdir()) == []


# -- the registry is the one place that chooses a backend ------------------------------------

STORE_CLASSES = {
    "QdrantEdgeStore",
    "QdrantClientStore",
    "SQLiteSessionStore",
    "RedisSessionStore",
    "InMemorySessionStore",
    "InMemoryMemoryStore",
}
STORE_MODULES = ("agentmem.stores.qdrant", "agentmem.stores.redis", "agentmem.stores.sqlite")


def _store_names(source: str) -> set[str]:
    """The store classes and modules the code uses at run time (not in type hints under
    ``if TYPE_CHECKING:``, not in docstrings)."""
    found: set[str] = set()
    stack: list[ast.AST] = [ast.parse(textwrap.dedent(source))]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(STORE_MODULES):
            found.add(node.module or "")
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if name in STORE_CLASSES:
            found.add(name)
        stack.extend(ast.iter_child_nodes(node))
    return found


def test_the_openers_name_no_store_class() -> None:
    """``backends`` and every ``open`` reach stores through the registry only: none of them
    names a store class or imports a store module at run time (the pre-registry openers
    branched on ``qdrant_url`` / ``redis_url`` to build ``QdrantClientStore`` or
    ``RedisSessionStore``)."""
    import agentmem.backends
    from agentmem.cli import common as _cli_common
    from agentmem.controller.builder import ManagerBuilder

    openers = {
        "agentmem.backends": agentmem.backends,
        "MemoryService.open": MemoryService.open,
        "MemoryManager.open": MemoryManager.open,
        "ManagerBuilder.open": ManagerBuilder.open,
        "LongTermMemory.open": LongTermMemory.open,
        "resolve_config": _cli_common.resolve_config,
        "open_long_term": _cli_common.open_long_term,
    }
    named = {name: _store_names(inspect.getsource(code)) for name, code in openers.items()}
    assert named == {name: set() for name in openers}
    # The finder finds what the openers used to hold.
    before = "from agentmem.stores.redis import RedisSessionStore\nRedisSessionStore.from_url(u)"
    assert _store_names(before) == {"agentmem.stores.redis", "RedisSessionStore"}
