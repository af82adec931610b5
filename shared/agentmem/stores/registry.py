"""Which store a URL names: one registry of memory stores and session stores, by URL scheme.

Every store a deployment uses is named by a URL, and the URL's scheme chooses the class
that opens it. A memory store holds the long-term memories; a session store holds the
conversations, summaries and working memory. Each scheme is registered once, with its
factory, which options the factory accepts, and how to tell which store a URL names (so
that one process opens each store once, see :mod:`agentmem.backends`):

==================================================  =======  ==================================
URL                                                 kind     store
==================================================  =======  ==================================
``edge:///var/lib/agentmem/long_term``              memory   ``QdrantEdgeStore`` (the default:
                                                             ``<home>/long_term``)
``qdrant+http://host:6333``, ``qdrant+https://...``  memory   ``QdrantClientStore`` on a Qdrant
                                                             server or cluster
``qdrant+local://``                                 memory   ``QdrantClientStore`` in
                                                             qdrant-client's in-memory local
                                                             mode (tests)
``sqlite:///var/lib/agentmem/sessions.db``          session  ``SQLiteSessionStore`` (the
                                                             default: ``<home>/sessions.db``)
``redis://host:6379/0``, ``rediss://...``           session  ``RedisSessionStore``
``redis+cluster://host:7000``, ``rediss+cluster://``  session  ``RedisSessionStore`` on a Redis
                                                             Cluster
``redis+unix:///run/redis.sock``                    session  ``RedisSessionStore`` over a
                                                             Unix socket
``memory://`` (``memory://NAME``)                   both     ``InMemoryMemoryStore`` /
                                                             ``InMemorySessionStore``
==================================================  =======  ==================================

A path is the URL's host and path: ``edge:///abs/dir`` is ``/abs/dir``, ``edge://rel/dir``
is ``rel/dir`` (from the working directory), ``edge://~/dir`` is in the home directory.
``memory://`` is a new private store at each open; ``memory://NAME`` is one store per
process and name, shared while someone holds it open.

A third party adds a backend with one call (see ``CONTRIBUTING.md``):

Example:
    >>> from agentmem.stores.memory import InMemorySessionStore
    >>> register_session_store("scratch", lambda url: InMemorySessionStore())
    >>> open_session_store("scratch://anything").sessions()
    []
    >>> unregister_store("scratch", kind="session")
    >>> try:
    ...     open_session_store("scratch://anything")
    ... except ConfigurationError as exc:
    ...     print(str(exc).split(";")[0])
    unknown session store scheme 'scratch' in 'scratch://anything'
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentmem.errors import ConfigurationError

if TYPE_CHECKING:
    from agentmem.long_term.store import MemoryStore
    from agentmem.stores.base import SessionStore
    from agentmem.stores.qdrant.edge import AutoIndex

__all__ = [
    "DEFAULT_COLLECTION",
    "BackendURL",
    "StoreBackend",
    "StoreKind",
    "backend_for",
    "known_schemes",
    "open_memory_store",
    "open_session_store",
    "register_memory_store",
    "register_session_store",
    "unregister_store",
]

#: A memory store (long-term memories) or a session store (conversations, working memory).
StoreKind = Literal["memory", "session"]

DEFAULT_COLLECTION = "agentmem_memories"
"""The Qdrant collection of the memories when none is given (``qdrant+...`` URLs)."""

_KIND_NAMES = {"memory": "memory store", "session": "session store"}


@dataclass(frozen=True, repr=False)
class BackendURL:
    """A store URL split into the parts factories read (build it with :meth:`parse`).

    Attributes:
        url: The URL as given.
        scheme: Its scheme, lower-cased (``"qdrant+https"``).
        parts: ``urllib.parse.urlsplit(url)``.

    Example:
        >>> url = BackendURL.parse("qdrant+https://user:secret@q.example:6333/base")
        >>> url.scheme, url.host, url.inner
        ('qdrant+https', 'q.example', 'https://user:secret@q.example:6333/base')
        >>> str(url)  # the password is never shown
        'qdrant+https://user:***@q.example:6333/base'
        >>> BackendURL.parse("edge:///srv/agentmem/long_term").path
        PosixPath('/srv/agentmem/long_term')
    """

    url: str
    scheme: str
    parts: urllib.parse.SplitResult

    @classmethod
    def parse(cls, url: str) -> BackendURL:
        """Split ``url``.

        Raises:
            ConfigurationError: ``url`` is not a string of the form ``scheme://...``.
        """
        if not isinstance(url, str) or "://" not in url:
            msg = (
                f"{url!r} is not a store URL; write scheme://location, for example "
                "edge:///var/lib/agentmem/long_term or redis://localhost:6379/0"
            )
            raise ConfigurationError(msg)
        try:
            parts = urllib.parse.urlsplit(url.strip())
        except ValueError as exc:
            msg = f"{_redact(url)!r} is not a usable URL: {exc}"
            raise ConfigurationError(msg) from None
        if not parts.scheme:
            msg = f"{_redact(url)!r} has no scheme; write scheme://location"
            raise ConfigurationError(msg)
        return cls(url.strip(), parts.scheme.lower(), parts)

    @property
    def location(self) -> str:
        """Host and path, percent-decoded (``edge://~/x`` -> ``~/x``; ``""`` when empty)."""
        return urllib.parse.unquote(self.parts.netloc + self.parts.path)

    @property
    def path(self) -> Path:
        """The filesystem path the URL names (``~`` expanded).

        Raises:
            ConfigurationError: The URL names no path.
        """
        if not self.location:
            msg = f"{self} names no path; write {self.scheme}:///absolute/path"
            raise ConfigurationError(msg)
        return Path(self.location).expanduser()

    @property
    def host(self) -> str:
        """The host the URL names (its port, if any, checked to be a number).

        Raises:
            ConfigurationError: The URL names no host, or its port is not a number.
        """
        try:
            port = self.parts.port
        except ValueError:
            port = -1
        if not self.parts.hostname or port == -1:
            msg = f"{self} needs a host (and a numeric port if any): {self.scheme}://host:port"
            raise ConfigurationError(msg)
        return self.parts.hostname

    @property
    def inner(self) -> str:
        """The URL without its scheme's prefix: ``qdrant+https://h`` -> ``https://h``."""
        _, _, rest = self.scheme.partition("+")
        return f"{rest}{self.url[len(self.scheme) :]}" if rest else self.url

    def __str__(self) -> str:
        return _redact(self.url)

    def __repr__(self) -> str:
        return f"BackendURL({str(self)!r})"


def _redact(url: str) -> str:
    """``url`` with its password replaced by ``***`` (error messages, reprs)."""
    try:
        parts = urllib.parse.urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return url


def _by_url(url: BackendURL) -> Hashable:
    """One store per URL (as written) and options."""
    return url.url


@dataclass(frozen=True)
class StoreBackend:
    """One registry entry: the factory of a scheme's stores and what it accepts.

    Attributes:
        kind: ``"memory"`` or ``"session"``.
        scheme: The URL scheme it serves.
        factory: ``factory(url: BackendURL, **options) -> store``; a memory store's factory
            always gets ``dimension=`` (the embedder's), and the options below when given.
        options: The keyword options the factory accepts besides ``dimension``.
        locate: Which store a URL names (checking the URL, raising
            :class:`~agentmem.errors.ConfigurationError` for a bad one): openers of the same
            place in one process share one store. A :class:`~pathlib.Path` says the store
            lives on this machine's disk there; ``None``, that every open makes a private
            store.
    """

    kind: StoreKind
    scheme: str
    factory: Callable[..., Any]
    options: frozenset[str] = frozenset()
    locate: Callable[[BackendURL], Hashable] = _by_url

    def open(self, url: BackendURL, **options: Any) -> Any:
        """A new store on ``url`` (not shared with anyone).

        Raises:
            ConfigurationError: An option this backend does not take, or a bad URL.
        """
        accepted = self.options | ({"dimension"} if self.kind == "memory" else set())
        unknown = sorted(set(options) - accepted)
        if unknown:
            takes = ", ".join(sorted(self.options)) or "no options"
            msg = (
                f"the {self.scheme}:// {_KIND_NAMES[self.kind]} does not take "
                f"{', '.join(unknown)} (it takes: {takes})"
            )
            raise ConfigurationError(msg)
        self.locate(url)  # the URL's own checks, before anything is built
        return self.factory(url, **options)


class _Registry:
    """The backends by kind and scheme (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._backends: dict[tuple[StoreKind, str], StoreBackend] = {}

    def add(self, backend: StoreBackend, *, replace: bool) -> None:
        key = (backend.kind, backend.scheme)
        with self._lock:
            if key in self._backends and not replace:
                msg = (
                    f"the {_KIND_NAMES[backend.kind]} scheme {backend.scheme!r} is already "
                    "registered; pass replace=True to replace it"
                )
                raise ConfigurationError(msg)
            self._backends[key] = backend

    def remove(self, kind: StoreKind, scheme: str) -> None:
        with self._lock:
            self._backends.pop((kind, scheme.lower()), None)

    def get(self, kind: StoreKind, url: BackendURL) -> StoreBackend:
        with self._lock:
            backend = self._backends.get((kind, url.scheme))
        if backend is None:
            known = ", ".join(f"{s}://" for s in known_schemes(kind))
            msg = (
                f"unknown {_KIND_NAMES[kind]} scheme {url.scheme!r} in {str(url)!r}; "
                f"the known ones are {known}"
            )
            raise ConfigurationError(msg)
        return backend

    def schemes(self, kind: StoreKind) -> list[str]:
        with self._lock:
            return sorted(scheme for k, scheme in self._backends if k == kind)


_BACKENDS = _Registry()


def _register(
    kind: StoreKind,
    schemes: str | Iterable[str],
    factory: Callable[..., Any],
    options: Iterable[str],
    locate: Callable[[BackendURL], Hashable] | None,
    replace: bool,
) -> None:
    names = [schemes] if isinstance(schemes, str) else list(schemes)
    for scheme in names:
        if not isinstance(scheme, str) or not scheme or "://" in scheme or ":" in scheme:
            msg = f"a scheme is a name like 'redis' or 'qdrant+http', got {scheme!r}"
            raise ConfigurationError(msg)
        backend = StoreBackend(kind, scheme.lower(), factory, frozenset(options), locate or _by_url)
        _BACKENDS.add(backend, replace=replace)


def register_memory_store(
    schemes: str | Iterable[str],
    factory: Callable[..., MemoryStore],
    *,
    options: Iterable[str] = (),
    locate: Callable[[BackendURL], Hashable] | None = None,
    replace: bool = False,
) -> None:
    """Make ``MemoryService.open(memory_url="SCHEME://...")`` (and every other opener, the
    command line and ``AGENTMEM_MEMORY_URL``) open memory stores with ``factory``.

    Args:
        schemes: The URL scheme(s) it serves (``"mystore"`` for ``mystore://...``).
        factory: ``factory(url: BackendURL, *, dimension: int, **options) -> MemoryStore``.
        options: The keyword options ``factory`` accepts besides ``dimension``
            (``"collection"``, ``"api_key"``, ...); others are refused before it is called.
        locate: Which store a URL names, checking it (see :class:`StoreBackend`; default:
            the URL itself, so opens of one URL in a process share one store).
        replace: Replace a backend registered earlier for the scheme (otherwise refused).

    Example:
        >>> from agentmem.stores.in_memory import InMemoryMemoryStore
        >>> register_memory_store("scratch", lambda url, *, dimension: InMemoryMemoryStore(
        ...     dimension=dimension))
        >>> open_memory_store("scratch://x", dimension=8).dimension
        8
        >>> unregister_store("scratch", kind="memory")
    """
    _register("memory", schemes, factory, options, locate, replace)


def register_session_store(
    schemes: str | Iterable[str],
    factory: Callable[..., SessionStore],
    *,
    options: Iterable[str] = (),
    locate: Callable[[BackendURL], Hashable] | None = None,
    replace: bool = False,
) -> None:
    """Make ``MemoryService.open(session_url="SCHEME://...")`` (and every other opener, the
    command line and ``AGENTMEM_SESSION_URL``) open session stores with ``factory``:
    ``factory(url: BackendURL, **options) -> SessionStore``. The arguments are those of
    :func:`register_memory_store`."""
    _register("session", schemes, factory, options, locate, replace)


def unregister_store(scheme: str, *, kind: StoreKind) -> None:
    """Forget the ``kind`` backend of ``scheme`` (nothing happens when there is none);
    stores already open stay open."""
    _BACKENDS.remove(kind, scheme)


def known_schemes(kind: StoreKind) -> list[str]:
    """The registered schemes of ``kind``, sorted.

    Example:
        >>> "edge" in known_schemes("memory"), "edge" in known_schemes("session")
        (True, False)
    """
    return _BACKENDS.schemes(kind)


def backend_for(kind: StoreKind, url: str) -> tuple[StoreBackend, BackendURL]:
    """The backend registered for ``url``'s scheme, and the parsed URL.

    Raises:
        ConfigurationError: ``url`` is not a URL, or no ``kind`` backend has its scheme
            (the message lists those that do).
    """
    parsed = BackendURL.parse(url)
    return _BACKENDS.get(kind, parsed), parsed


def open_memory_store(url: str, *, dimension: int, **options: Any) -> MemoryStore:
    """A new memory store on ``url`` (the caller closes it; not shared).

    Example:
        >>> import tempfile
        >>> store = open_memory_store(f"edge://{tempfile.mkdtemp()}/lt", dimension=8)
        >>> type(store).__name__, store.dimension
        ('QdrantEdgeStore', 8)
        >>> store.close()

    Raises:
        ConfigurationError: An unknown scheme, a bad URL or an option the backend does not
            take.
    """
    backend, parsed = backend_for("memory", url)
    store: MemoryStore = backend.open(parsed, dimension=dimension, **options)
    return store


def open_session_store(url: str, **options: Any) -> SessionStore:
    """A new session store on ``url`` (the caller closes it; not shared).

    Example:
        >>> store = open_session_store("memory://")
        >>> store.sessions()
        []

    Raises:
        ConfigurationError: An unknown scheme, a bad URL or an option the backend does not
            take.
    """
    backend, parsed = backend_for("session", url)
    store: SessionStore = backend.open(parsed, **options)
    return store


# -- the built-in backends ------------------------------------------------------------------
# Each factory imports its store on first use, so naming a scheme costs nothing.


def _on_disk(url: BackendURL) -> Path:
    return url.path.resolve()


def _private_or_named(url: BackendURL) -> Hashable:
    return url.location.strip("/") or None


def _server(url: BackendURL) -> Hashable:
    url.host  # noqa: B018 - checks the host and port
    return url.inner


def _in_memory_only(url: BackendURL) -> Hashable:
    if url.location.strip("/"):
        msg = (
            f"{url} names a path, but qdrant+local:// is qdrant-client's in-memory local mode"
            " (tests): write qdrant+local://, or edge:///path for a store on disk"
        )
        raise ConfigurationError(msg)
    return None  # one private database per client: never shared


def _redis(url: BackendURL) -> Hashable:
    if url.scheme == "redis+unix":
        url.path  # noqa: B018 - checks there is a socket path
    else:
        url.host  # noqa: B018
    return url.url


def _open_edge(
    url: BackendURL, *, dimension: int, preload: bool = True, auto_index: AutoIndex | None = None
) -> MemoryStore:
    from agentmem.stores.qdrant.edge import QdrantEdgeStore

    return QdrantEdgeStore(url.path, dimension=dimension, preload=preload, auto_index=auto_index)


def _open_qdrant_server(
    url: BackendURL,
    *,
    dimension: int,
    api_key: str | None = None,
    collection: str = DEFAULT_COLLECTION,
) -> MemoryStore:
    from agentmem.stores.qdrant.client import QdrantClientStore

    return QdrantClientStore(
        url=url.inner, api_key=api_key, collection=collection, dimension=dimension
    )


def _open_qdrant_local(
    url: BackendURL, *, dimension: int, collection: str = DEFAULT_COLLECTION
) -> MemoryStore:
    from agentmem.stores.qdrant.client import QdrantClientStore

    return QdrantClientStore(location=":memory:", collection=collection, dimension=dimension)


def _open_in_memory_memories(url: BackendURL, *, dimension: int) -> MemoryStore:
    from agentmem.stores.in_memory import InMemoryMemoryStore

    return InMemoryMemoryStore(dimension=dimension)


def _open_in_memory_sessions(url: BackendURL) -> SessionStore:
    from agentmem.stores.memory import InMemorySessionStore

    return InMemorySessionStore()


def _open_sqlite(url: BackendURL) -> SessionStore:
    from agentmem.stores.sqlite import SQLiteSessionStore

    return SQLiteSessionStore.open(url.path)


def _open_redis(url: BackendURL, **options: Any) -> SessionStore:
    from agentmem.stores.redis import RedisSessionStore

    # redis-py names a socket unix://; every other form it reads as written.
    plain = url.inner if url.scheme == "redis+unix" else url.url
    return RedisSessionStore.from_url(plain, **options)


register_memory_store("edge", _open_edge, options=("preload", "auto_index"), locate=_on_disk)
register_memory_store(
    ("qdrant+http", "qdrant+https"),
    _open_qdrant_server,
    options=("api_key", "collection"),
    locate=_server,
)
register_memory_store(
    "qdrant+local", _open_qdrant_local, options=("collection",), locate=_in_memory_only
)
register_memory_store("memory", _open_in_memory_memories, locate=_private_or_named)
register_session_store("sqlite", _open_sqlite, locate=_on_disk)
register_session_store(
    ("redis", "rediss", "redis+cluster", "rediss+cluster", "redis+unix"),
    _open_redis,
    options=("prefix", "session_ttl", "timeout", "deadline", "retries"),
    locate=_redis,
)
register_session_store("memory", _open_in_memory_sessions, locate=_private_or_named)
