"""How the conformance suite opens each backend, in this process or in a spawned child,
and in which mode it calls it.

Every behaviour is written once, calling the sync names (``store.append(...)``), and runs in
both modes: in ``"sync"`` mode the test gets the store itself; in ``"async"`` mode an
:class:`AsyncFace`, whose sync names await the store's async twins (``store.aappend(...)``)
on one background event loop. Calls from many threads become concurrent tasks on that loop,
so the concurrency tests exercise concurrent async callers too.

Everything here is importable by name and picklable, because ``multiprocessing`` with the
``spawn`` context re-imports it in each child.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from agentmem.stores.base import SessionStore, StoredMessage
from agentmem.stores.registry import backend_for, open_session_store
from agentmem.types import Message
from tests.conformance._async_face import AsyncFace as _AsyncFace

__all__ = [
    "BACKENDS",
    "MODES",
    "AsyncFace",
    "StoreSpec",
    "append_worker",
    "assert_writers_intact",
    "tagged",
    "unwrap",
]

#: Each backend of the suite -> the URL of its store, opened through the store registry
#: (:mod:`agentmem.stores.registry`). ``{tmp}`` is the test's temp dir; any other ``{name}``
#: is the URL a fixture of that name gives (the test skips without it). Adding a backend
#: to the suite is one line here.
BACKENDS = {
    "memory": "memory://",
    "sqlite": "sqlite://{tmp}/sessions.db",
    "redis": "{redis_url}",
    "redis-cluster": "{redis_cluster_url}",  # redis+cluster://127.0.0.1:<port>
}
MODES = ("sync", "async")


class AsyncFace(_AsyncFace):
    """A session store called through its async twins (see ``tests/conformance/_async_face.py``)."""

    TWINNED = frozenset(
        {"append", "read", "read_last", "count", "last_seq", "get_state", "set_state"}
        | {"delete_state", "clear", "sessions", "close"}
    )


def unwrap(store: SessionStore) -> SessionStore:
    """The store behind a face (or the store itself, in sync mode)."""
    return store.store if isinstance(store, AsyncFace) else store


@dataclass(frozen=True)
class StoreSpec:
    """Where a backend's data lives, so another handle (or process) can open the same store.

    ``url`` is the store's URL; ``options`` the keyword options of its backend (a Redis
    key ``prefix`` of its own per test);
    ``mode`` how :meth:`open`'s store is called (``"sync"`` or ``"async"``, see the module).
    """

    backend: str
    url: str
    options: tuple[tuple[str, str], ...] = ()
    mode: str = "sync"

    @property
    def reopenable(self) -> bool:
        """Whether a second open reaches the same data (not ``memory://``: one per open)."""
        backend, url = backend_for("session", self.url)
        return backend.locate(url) is not None

    def open(self) -> SessionStore:
        """A new handle on the store, called in this spec's mode."""
        store = open_session_store(self.url, **dict(self.options))
        return cast("SessionStore", AsyncFace(store)) if self.mode == "async" else store


def tagged(writer: int, index: int) -> Message:
    """The message writer ``writer`` appends as its ``index``-th."""
    return Message(
        role="user", content=f"w{writer}-{index}", metadata={"writer": writer, "i": index}
    )


def append_worker(
    spec: StoreSpec, session_id: str, writer: int, n: int, barrier: Any, results: Any
) -> None:
    """Child-process body: open the store (in the spec's mode), wait for the others, append
    ``n`` tagged messages."""
    store = spec.open()
    try:
        barrier.wait(timeout=120)
        seqs = [store.append(session_id, [tagged(writer, i)])[0] for i in range(n)]
        results.put((writer, seqs))
    finally:
        store.close()


def assert_writers_intact(
    log: Sequence[StoredMessage], writers: int, n: int, returned: dict[int, list[int]]
) -> None:
    """No message lost or duplicated, each writer's order kept, seqs strictly increasing."""
    assert len(log) == writers * n
    seqs = [m.seq for m in log]
    assert all(a < b for a, b in itertools.pairwise(seqs)), "seqs are not strictly increasing"
    tags = [(m.message.metadata["writer"], m.message.metadata["i"]) for m in log]
    assert sorted(tags) == [(w, i) for w in range(writers) for i in range(n)]
    for w in range(writers):
        assert [i for tw, i in tags if tw == w] == list(range(n)), f"writer {w} out of order"
    # The seq append() returned for each message is the seq it is stored under.
    by_tag = {tag: m.seq for tag, m in zip(tags, log, strict=True)}
    for w, got in returned.items():
        assert got == [by_tag[(w, i)] for i in range(n)]
