"""Which stores a deployment uses, opened once per process and shared by reference count.

One process serves many users and sessions from the same stores: the SQLite file and the
Qdrant Edge shard of a home (or the Qdrant server collection and Redis of a deployment) are
opened by the first object that needs them and closed when the last one lets go. Every
opener holds a :class:`Lease`; releasing a lease never closes a store that another lease
still uses.

=========================  ===========================================================
setting                    backend
=========================  ===========================================================
(none)                     SQLite ``<home>/sessions.db`` and Qdrant Edge ``<home>/long_term``
``qdrant_url``             :class:`~agentmem.stores.qdrant.client.QdrantClientStore`
                           (``AGENTMEM_QDRANT_URL``; ``":memory:"`` is qdrant-client's
                           local mode, for tests)
``redis_url``              :class:`~agentmem.stores.redis.RedisSessionStore`
                           (``AGENTMEM_REDIS_URL``)
=========================  ===========================================================

Example:
    >>> import tempfile
    >>> config = BackendConfig.resolve(home=tempfile.mkdtemp())
    >>> lease = acquire_session_store(config)
    >>> again = acquire_session_store(config)
    >>> lease.value is again.value
    True
    >>> lease.release(); again.release()
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from agentmem.long_term.store import MemoryStore
from agentmem.stores.base import SessionStore

if TYPE_CHECKING:
    from agentmem.stores.qdrant.edge import AutoIndex

__all__ = [
    "QDRANT_URL_ENV",
    "REDIS_URL_ENV",
    "BackendConfig",
    "Lease",
    "StoreLeases",
    "acquire_memory_store",
    "acquire_session_store",
    "acquire_stores",
]

QDRANT_URL_ENV = "AGENTMEM_QDRANT_URL"
REDIS_URL_ENV = "AGENTMEM_REDIS_URL"
QDRANT_API_KEY_ENV = "AGENTMEM_QDRANT_API_KEY"
DEFAULT_COLLECTION = "agentmem_memories"

T = TypeVar("T")


@dataclass(frozen=True)
class BackendConfig:
    """Where the stores live (resolve it with :meth:`resolve`).

    Attributes:
        home: Directory of the embedded stores (SQLite and Qdrant Edge).
        qdrant_url: Qdrant server URL (or ``":memory:"``); ``None``: Qdrant Edge in ``home``.
        qdrant_api_key: API key sent with ``qdrant_url``.
        collection: Qdrant collection of the memories (server mode).
        redis_url: Redis URL for sessions; ``None``: SQLite in ``home``.
    """

    home: Path
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    collection: str = DEFAULT_COLLECTION
    redis_url: str | None = None

    @classmethod
    def resolve(
        cls,
        home: str | os.PathLike[str] | None = None,
        *,
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        redis_url: str | None = None,
    ) -> BackendConfig:
        """Arguments first, then ``AGENTMEM_QDRANT_URL`` / ``AGENTMEM_REDIS_URL`` /
        ``AGENTMEM_QDRANT_API_KEY``, then the embedded defaults under ``home``
        (``AGENTMEM_HOME``, else the per-user data directory)."""
        from agentmem.home import default_home

        root = Path(home).expanduser() if home is not None else default_home()
        return cls(
            home=root.resolve(),
            qdrant_url=qdrant_url or os.environ.get(QDRANT_URL_ENV) or None,
            qdrant_api_key=qdrant_api_key or os.environ.get(QDRANT_API_KEY_ENV) or None,
            collection=collection,
            redis_url=redis_url or os.environ.get(REDIS_URL_ENV) or None,
        )

    @property
    def embedded(self) -> bool:
        """Whether both stores are the embedded ones (one process per home)."""
        return self.qdrant_url is None and self.redis_url is None


class Lease(Generic[T]):
    """A holder's share of a store. :meth:`release` once you are done (idempotent)."""

    def __init__(self, value: T, release: Callable[[], None]) -> None:
        self.value = value
        self._release: Callable[[], None] | None = release
        self._lock = threading.Lock()

    def release(self) -> None:
        """Give the share back; the store closes when the last share is released."""
        with self._lock:
            release, self._release = self._release, None
        if release is not None:
            release()


class _Registry:
    """Open objects by key, each with a count of its leases."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[Hashable, list[Any]] = {}  # key -> [value, count, close]

    def acquire(
        self, key: Hashable, open_: Callable[[], T], close: Callable[[T], None]
    ) -> Lease[T]:
        # Opening happens under the lock: two first openers of one home must not both try
        # to open it (the second would find the first's file lock).
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = [open_(), 0, close]
                self._entries[key] = entry
            entry[1] += 1
            value: T = entry[0]
        return Lease(value, lambda: self._release(key, value))

    def _release(self, key: Hashable, value: object) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] is not value:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del self._entries[key]
        entry[2](value)


_REGISTRY = _Registry()


def acquire_session_store(config: BackendConfig) -> Lease[SessionStore]:
    """A share of the deployment's session store (SQLite in ``home``, or Redis)."""
    if config.redis_url is not None:
        from agentmem.stores.redis import RedisSessionStore

        url = config.redis_url
        return _REGISTRY.acquire(("redis", url), lambda: RedisSessionStore.from_url(url), _close)

    from agentmem.stores.sqlite import SQLiteSessionStore

    path = config.home / "sessions.db"
    return _REGISTRY.acquire(("sqlite", path), lambda: SQLiteSessionStore.open(path), _close)


def acquire_memory_store(
    config: BackendConfig,
    *,
    dimension: int,
    preload: bool = True,
    auto_index: AutoIndex | None = None,
) -> Lease[MemoryStore]:
    """A share of the deployment's long-term store (Qdrant Edge in ``home``, or a Qdrant
    server collection). A store opened earlier with another dimension is returned as it
    is; :class:`~agentmem.long_term.LongTermMemory` then refuses the mismatch.

    ``preload`` and ``auto_index`` are passed to an Edge store (see
    :class:`~agentmem.stores.qdrant.edge.QdrantEdgeStore`): a caller that only counts opens
    it with ``preload=False`` and ``AutoIndex(enabled=False)``. A store already open is
    shared as it was opened."""
    if config.qdrant_url is not None:
        from agentmem.stores.qdrant.client import QdrantClientStore

        url, key, name = config.qdrant_url, config.qdrant_api_key, config.collection

        def open_client() -> MemoryStore:
            if url == ":memory:":
                return QdrantClientStore(location=url, collection=name, dimension=dimension)
            return QdrantClientStore(url=url, api_key=key, collection=name, dimension=dimension)

        # ":memory:" is one private database per client: never share it between services.
        ident: Hashable = object() if url == ":memory:" else (url, name)
        return _REGISTRY.acquire(("qdrant", ident), open_client, _close)

    from agentmem.stores.qdrant.edge import QdrantEdgeStore

    path = config.home / "long_term"
    return _REGISTRY.acquire(
        ("edge", path),
        lambda: QdrantEdgeStore(path, dimension=dimension, auto_index=auto_index, preload=preload),
        _close,
    )


@dataclass(frozen=True)
class StoreLeases:
    """A share of a deployment's two stores (see :func:`acquire_stores`).

    Attributes:
        sessions: The session store's lease.
        memories: The long-term store's lease.
    """

    sessions: Lease[SessionStore]
    memories: Lease[MemoryStore]

    def release(self) -> None:
        """Give both shares back (idempotent); each store closes with its last user."""
        self.memories.release()
        self.sessions.release()


def acquire_stores(backend: BackendConfig, *, dimension: int) -> StoreLeases:
    """A share of the session store and of the long-term store of ``backend`` (the
    embedded home is created when one of them lives there).

    Raises:
        StoreLockedError: Another process holds the embedded stores of the home.

    Example:
        >>> import tempfile
        >>> backend = BackendConfig.resolve(tempfile.mkdtemp())
        >>> leases = acquire_stores(backend, dimension=8)
        >>> leases.sessions.value.sessions()
        []
        >>> leases.release()
    """
    if backend.qdrant_url is None or backend.redis_url is None:
        backend.home.mkdir(parents=True, exist_ok=True)
    sessions = acquire_session_store(backend)
    try:
        memories = acquire_memory_store(backend, dimension=dimension)
    except BaseException:
        sessions.release()
        raise
    return StoreLeases(sessions, memories)


def _close(store: Any) -> None:
    store.close()
