"""Which stores a deployment uses, opened once per process and shared by reference count.

Each store is named by a URL whose scheme chooses its backend (the registry of
:mod:`agentmem.stores.registry`): ``memory_url`` for the long-term memories,
``session_url`` for conversations, summaries and working memory. Every opener
(:meth:`MemoryService.open <agentmem.MemoryService.open>`,
:meth:`MemoryManager.open <agentmem.MemoryManager.open>`,
:meth:`LongTermMemory.open <agentmem.long_term.LongTermMemory.open>`, the command line)
takes the same :class:`BackendOptions` and resolves them here, in one place:

=====================  ==========================  ==========================================
argument               environment                 default
=====================  ==========================  ==========================================
``memory_url``         ``AGENTMEM_MEMORY_URL``     ``edge://<home>/long_term`` (Qdrant Edge)
``session_url``        ``AGENTMEM_SESSION_URL``    ``sqlite://<home>/sessions.db``
``qdrant_url``         ``AGENTMEM_QDRANT_URL``     older name of ``memory_url``: ``http(s)://..``
                                                   is ``qdrant+http(s)://...``, ``":memory:"``
                                                   is ``qdrant+local://``
``redis_url``          ``AGENTMEM_REDIS_URL``      older name of ``session_url`` (Redis URLs)
``qdrant_api_key``     ``AGENTMEM_QDRANT_API_KEY`` none: the API key of a ``qdrant+http(s)``
                                                   store
``collection``         —                           ``agentmem_memories`` (``qdrant+...``)
=====================  ==========================  ==========================================

An argument wins over the environment; a URL over its older name.

One process serves many users and sessions from the same stores: the SQLite file and the
Qdrant Edge shard of a home (or the Qdrant server collection and Redis of a deployment) are
opened by the first object that needs them and closed when the last one lets go. Every
opener holds a :class:`Lease`; releasing a lease never closes a store that another lease
still uses.

Example:
    >>> import tempfile
    >>> config = BackendConfig.resolve(home=tempfile.mkdtemp())
    >>> config.session_url.startswith("sqlite:///"), config.memory_url.startswith("edge:///")
    (True, True)
    >>> lease = acquire_session_store(config)
    >>> again = acquire_session_store(config)
    >>> lease.value is again.value
    True
    >>> lease.release(); again.release()
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from typing_extensions import TypedDict, Unpack

from agentmem.errors import ConfigurationError
from agentmem.stores.registry import DEFAULT_COLLECTION, StoreKind, backend_for

if TYPE_CHECKING:
    from agentmem.long_term.store import MemoryStore
    from agentmem.stores.base import SessionStore
    from agentmem.stores.qdrant.edge import AutoIndex

__all__ = [
    "BACKEND_OPTIONS",
    "DEFAULT_COLLECTION",
    "MEMORY_URL_ENV",
    "QDRANT_URL_ENV",
    "REDIS_URL_ENV",
    "SESSION_URL_ENV",
    "BackendConfig",
    "BackendOptions",
    "Lease",
    "StoreLeases",
    "acquire_memory_store",
    "acquire_session_store",
    "acquire_stores",
    "split_backend_options",
]

MEMORY_URL_ENV = "AGENTMEM_MEMORY_URL"
SESSION_URL_ENV = "AGENTMEM_SESSION_URL"
QDRANT_URL_ENV = "AGENTMEM_QDRANT_URL"
REDIS_URL_ENV = "AGENTMEM_REDIS_URL"
QDRANT_API_KEY_ENV = "AGENTMEM_QDRANT_API_KEY"

T = TypeVar("T")


class BackendOptions(TypedDict, total=False):
    """Where the stores are: the backend arguments of every opener, stated once (see the
    module docstring for the environment variables and the defaults).

    Attributes:
        memory_url: URL of the long-term memory store (``edge:///path``,
            ``qdrant+https://host:6333``, ``memory://``, or a registered scheme).
        session_url: URL of the session store (``sqlite:///path``, ``redis://host/0``,
            ``redis+cluster://host:7000``, ``memory://``, or a registered scheme).
        qdrant_url: Older name of ``memory_url``: a Qdrant server URL, or ``":memory:"``.
        qdrant_api_key: API key sent to a ``qdrant+http(s)`` memory store.
        collection: Qdrant collection of the memories (``qdrant+...`` memory stores).
        redis_url: Older name of ``session_url``: a Redis URL.
    """

    memory_url: str | None
    session_url: str | None
    qdrant_url: str | None
    qdrant_api_key: str | None
    collection: str
    redis_url: str | None


BACKEND_OPTIONS = frozenset(BackendOptions.__optional_keys__)
"""The names of :class:`BackendOptions` (to split them from other keyword arguments)."""


def split_backend_options(options: Mapping[str, Any]) -> tuple[BackendOptions, dict[str, Any]]:
    """``options`` split into the backend's and the rest.

    Example:
        >>> split_backend_options({"redis_url": "redis://r/0", "model": "gpt-4o"})
        ({'redis_url': 'redis://r/0'}, {'model': 'gpt-4o'})
    """
    backend = {k: v for k, v in options.items() if k in BACKEND_OPTIONS}
    rest = {k: v for k, v in options.items() if k not in BACKEND_OPTIONS}
    return cast("BackendOptions", backend), rest


def _qdrant_as_url(value: str) -> str:
    """An older ``qdrant_url`` as a memory store URL."""
    if value == ":memory:":
        return "qdrant+local://"
    scheme = value.partition("://")[0].lower() if "://" in value else ""
    if scheme in ("http", "https"):
        return f"qdrant+{value}"
    return value if scheme else f"qdrant+http://{value}"  # host:port, as qdrant-client reads it


def _redis_as_url(value: str) -> str:
    """An older ``redis_url`` as a session store URL (redis-py's ``unix://`` socket form)."""
    return f"redis+{value}" if value.lower().startswith("unix://") else value


def _chosen(
    options: BackendOptions,
    name: str,
    older: str,
    as_url: Callable[[str], str],
    envs: tuple[str, str],
) -> str | None:
    """The URL an argument (or its older name), else the environment, names."""
    given: Mapping[str, Any] = options
    url, old = given.get(name), given.get(older)
    if url and old:
        msg = f"pass {name}= or its older name {older}=, not both"
        raise ConfigurationError(msg)
    if url or old:
        return str(url) if url else as_url(str(old))
    env, older_env = (os.environ.get(e) or None for e in envs)
    if env:
        return env
    return as_url(older_env) if older_env else None


@dataclass(frozen=True)
class BackendConfig:
    """Where the stores live (resolve it with :meth:`resolve`).

    Attributes:
        home: Directory of the embedded stores (the default URLs point into it).
        memory_url: URL of the long-term memory store.
        session_url: URL of the session store.
        memory_options: Options of the memory store's factory (``api_key``,
            ``collection``), those given only.
    """

    home: Path
    memory_url: str
    session_url: str
    memory_options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def resolve(
        cls, home: str | os.PathLike[str] | None = None, **options: Unpack[BackendOptions]
    ) -> BackendConfig:
        """Arguments first, then the environment (``AGENTMEM_MEMORY_URL``,
        ``AGENTMEM_SESSION_URL`` and the older ``AGENTMEM_QDRANT_URL``,
        ``AGENTMEM_REDIS_URL``, ``AGENTMEM_QDRANT_API_KEY``), then the embedded defaults
        under ``home`` (``AGENTMEM_HOME``, else the per-user data directory). Both URLs are
        checked here, before anything opens.

        Raises:
            ConfigurationError: A URL is malformed or of an unknown scheme (the message lists
                the known ones), or an option its backend does not take.

        Example:
            >>> BackendConfig.resolve("/srv/am", qdrant_url="http://q:6333").memory_url
            'qdrant+http://q:6333'
        """
        from agentmem.home import default_home

        root = (Path(home).expanduser() if home is not None else default_home()).resolve()
        memory_url = _chosen(
            options, "memory_url", "qdrant_url", _qdrant_as_url, (MEMORY_URL_ENV, QDRANT_URL_ENV)
        ) or _in(root / "long_term", "edge")
        session_url = _chosen(
            options, "session_url", "redis_url", _redis_as_url, (SESSION_URL_ENV, REDIS_URL_ENV)
        ) or _in(root / "sessions.db", "sqlite")
        memory, parsed = backend_for("memory", memory_url)
        memory_options: dict[str, Any] = {}
        for name, option, env in (
            ("qdrant_api_key", "api_key", QDRANT_API_KEY_ENV),
            ("collection", "collection", None),
        ):
            value = options.get(name)
            if value is not None and option not in memory.options:
                msg = f"{name}= is not an option of the {parsed.scheme}:// memory store {parsed}"
                raise ConfigurationError(msg)
            value = value if value is not None else (os.environ.get(env) if env else None)
            if value and option in memory.options:
                memory_options[option] = value
        memory.locate(parsed)
        session, parsed_session = backend_for("session", session_url)
        session.locate(parsed_session)
        return cls(root, memory_url, session_url, memory_options)

    def _where(self, kind: StoreKind) -> Hashable:
        backend, url = backend_for(kind, self.memory_url if kind == "memory" else self.session_url)
        return backend.locate(url)

    @property
    def memory_path(self) -> Path | None:
        """The directory of the memory store when it is on this machine's disk (Edge)."""
        where = self._where("memory")
        return where if isinstance(where, Path) else None

    @property
    def embedded(self) -> bool:
        """Whether both stores are on this machine's disk (one process per home)."""
        return self.memory_path is not None and isinstance(self._where("session"), Path)

    def describe_memories(self) -> str:
        """Where the memories are, for messages: the home (or the directory) that holds
        them, or the store's URL (without its password)."""
        path = self.memory_path
        if path is not None:
            return str(self.home if path.is_relative_to(self.home) else path)
        return str(backend_for("memory", self.memory_url)[1])

    def as_options(self) -> BackendOptions:
        """These stores as the arguments of another opener (``LongTermMemory.open(...)``)."""
        options = BackendOptions(memory_url=self.memory_url, session_url=self.session_url)
        if "api_key" in self.memory_options:
            options["qdrant_api_key"] = self.memory_options["api_key"]
        if "collection" in self.memory_options:
            options["collection"] = self.memory_options["collection"]
        return options


def _in(path: Path, scheme: str) -> str:
    """The URL of an embedded store at ``path`` (``edge:///abs/path``)."""
    return scheme + path.as_uri()[len("file") :]


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


def _acquire(
    kind: StoreKind, url: str, options: Mapping[str, Any], hints: Mapping[str, Any]
) -> Lease[Any]:
    """A share of the ``kind`` store ``url`` names, opened by its registered backend.

    Openers of the same place (as the backend locates it) with the same ``options`` share
    one store; ``hints`` (how to open it: ``dimension``, ``preload``...) do not tell stores
    apart, and reach the factory only when it takes them."""
    backend, parsed = backend_for(kind, url)
    where = backend.locate(parsed)
    given = {**options, **{k: v for k, v in hints.items() if k in backend.options}}
    if kind == "memory":
        given["dimension"] = hints["dimension"]
    # A backend that locates nothing (memory://, qdrant+local://) is private to each opener.
    key: Hashable = object() if where is None else (kind, parsed.scheme, where, *options.items())
    return _REGISTRY.acquire(key, lambda: backend.open(parsed, **given), _close)


def acquire_session_store(config: BackendConfig) -> Lease[SessionStore]:
    """A share of the deployment's session store (``config.session_url``)."""
    return cast("Lease[SessionStore]", _acquire("session", config.session_url, {}, {}))


def acquire_memory_store(
    config: BackendConfig,
    *,
    dimension: int,
    preload: bool = True,
    auto_index: AutoIndex | None = None,
) -> Lease[MemoryStore]:
    """A share of the deployment's long-term store (``config.memory_url``). A store opened
    earlier with another dimension is returned as it is;
    :class:`~agentmem.long_term.LongTermMemory` then refuses the mismatch.

    ``preload`` and ``auto_index`` are passed to a backend that takes them (Edge, see
    :class:`~agentmem.stores.qdrant.edge.QdrantEdgeStore`): a caller that only counts opens
    it with ``preload=False`` and ``AutoIndex(enabled=False)``. A store already open is
    shared as it was opened."""
    hints = {"dimension": dimension, "preload": preload, "auto_index": auto_index}
    lease = _acquire("memory", config.memory_url, config.memory_options, hints)
    return cast("Lease[MemoryStore]", lease)


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
    """A share of the session store and of the long-term store of ``backend`` (an embedded
    store creates its directory).

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
    sessions = acquire_session_store(backend)
    try:
        memories = acquire_memory_store(backend, dimension=dimension)
    except BaseException:
        sessions.release()
        raise
    return StoreLeases(sessions, memories)


def _close(store: Any) -> None:
    store.close()
