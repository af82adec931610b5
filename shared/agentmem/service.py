"""``MemoryService``: one object per process that serves memory to every user and session.

It owns what is expensive or must be unique — the session store, the long-term store, the
embedder (loaded once), the LLM and one consolidation queue with its workers — and hands out
cheap per-user, per-session :class:`~agentmem.MemoryManager` handles over them. Framework
adapters take the service and resolve the user and the session per call.

On the embedded defaults (no setting) the stores are SQLite and Qdrant Edge under ``home``,
one process per home. With ``memory_url="qdrant+https://..."`` and
``session_url="redis://..."`` (or ``AGENTMEM_MEMORY_URL`` / ``AGENTMEM_SESSION_URL`` in the
environment; see :mod:`agentmem.backends`) the same code runs on a Qdrant server and Redis,
which any number of processes and machines can share.

Example:
    >>> from agentmem import MemoryService
    >>> service = MemoryService.open(home)  # doctest: +SKIP
    >>> alice = service.manager("alice", "alice-chat-1")  # doctest: +SKIP
    >>> _ = alice.remember("Alice indents with tabs")  # doctest: +SKIP
    >>> [hit.record.content for hit in alice.recall("indentation")]  # doctest: +SKIP
    ['Alice indents with tabs']
    >>> service.manager("bob", "bob-chat-1").recall("indentation")  # doctest: +SKIP
    []
    >>> service.close()  # doctest: +SKIP
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar, cast

from typing_extensions import Never, Unpack

from agentmem._sansio import offload
from agentmem._util.delegate import ReadOnlyDelegate
from agentmem.backends import (
    BackendConfig,
    BackendOptions,
    acquire_stores,
    split_backend_options,
)
from agentmem.controller.builder import ManagerBuilder
from agentmem.controller.config import ManagerConfig, ManagerSettings
from agentmem.controller.manager import MemoryManager
from agentmem.controller.ownership import Principal, SessionOwner, SessionOwners
from agentmem.controller.scheduler import ConsolidationQueue, Job
from agentmem.embeddings import Embedder
from agentmem.embeddings.base import check_store_dimension
from agentmem.errors import (
    ConfigurationError,
    InvalidSessionIdError,
    InvalidValueError,
    ReadOnlySettingError,
    StoreClosedError,
)
from agentmem.inspector.recent import RecentContexts
from agentmem.llm import ChatModel
from agentmem.long_term.embedder_record import bind_embedder
from agentmem.long_term.memory import LongTermMemory
from agentmem.long_term.ranking import RankingConfig
from agentmem.long_term.store import MemoryStore
from agentmem.stores.base import SessionStore
from agentmem.tokens import TokenCounter

if TYPE_CHECKING:
    from agentmem.backup import BackupReport
    from agentmem.inspector.server import InspectorServer

__all__ = ["HandleSettings", "MemoryService", "ServiceOptions", "ServiceSettings"]

T = TypeVar("T")

logger = logging.getLogger(__name__)

#: Builds of one handle that ``manager`` checks against concurrent ``share_session`` calls
#: before it hands out the last one built without caching it.
_BUILD_ATTEMPTS = 3


class _Fixed(ReadOnlyDelegate[T]):
    """An attribute of an open :class:`MemoryService`, fixed when it opens: its handles are
    built with it, so assigning it raises :class:`ReadOnlySettingError`, saying how to
    change it (a copy by :meth:`MemoryService.with_settings`, or another service)."""

    def __set__(self, obj: object, value: Never) -> None:
        if self.holder == "config":
            how = f"service.with_settings({self.name}=...) (a copy over the same stores)"
        else:
            how = f"a MemoryService opened with {self.name}=..."
        msg = (
            f"MemoryService.{self.name} is fixed once the service is open (every handle is "
            f"built with it); to use another value, take {how}"
        )
        raise ReadOnlySettingError(msg)


class _Sharings:
    """How many times each session's sharing changed in this service (and its copies).

    A cached handle was checked against its session's owner record at one of these
    generations: once the session is shared anew (a member may have been dropped), a handle
    checked before is neither cached nor handed out again without a new check.

    The counts of at most ``max_sessions`` sessions shared most recently are kept; forgetting
    older ones moves every session to a new epoch (a generation is the pair), so a handle
    checked before is checked again rather than matched against a count started anew: a
    service that shares sessions for months holds a bounded table.
    """

    def __init__(self, max_sessions: int = 65_536) -> None:
        self._lock = threading.Lock()
        self._max_sessions = max_sessions
        self._epoch = 0
        self._changes: OrderedDict[str, int] = OrderedDict()

    def generation(self, session_id: str) -> tuple[int, int]:
        with self._lock:
            return self._epoch, self._changes.get(session_id, 0)

    def changed(self, session_id: str) -> None:
        with self._lock:
            self._changes[session_id] = self._changes.get(session_id, 0) + 1
            self._changes.move_to_end(session_id)
            if len(self._changes) > self._max_sessions:
                # The older half at once: a new epoch (every cached handle checked again
                # once) per max_sessions / 2 new sessions, not per share.
                for _ in range(len(self._changes) // 2):
                    self._changes.popitem(last=False)
                self._epoch += 1


@dataclass(frozen=True)
class _Shared:
    """What a service shares with its :meth:`~MemoryService.with_settings` copies."""

    owner: MemoryService
    sessions: SessionStore
    memory_store: MemoryStore
    embedder: Embedder
    llm: ChatModel | None
    consolidation: ConsolidationQueue
    recent_contexts: RecentContexts
    sharings: _Sharings


class HandleSettings(ManagerSettings, total=False):
    """How a service builds its handles: the
    :class:`~agentmem.controller.config.ManagerSettings` and ``ranking`` (what
    :meth:`MemoryService.with_settings` may change).

    Attributes:
        ranking: How long-term search ranks results (``None``: the default ranking).
    """

    ranking: RankingConfig | None


class ServiceSettings(HandleSettings, total=False):
    """The keyword settings of :class:`MemoryService` and :meth:`MemoryService.open`: the
    :class:`HandleSettings` every handle is built with (with their defaults: every turn is
    consolidated in the service's worker pool, never in the caller), and the ones below.

    Attributes:
        workers: Consolidation worker threads (default 1).
        max_pending: Sessions that may wait for consolidation at once (default 1024; see
            :mod:`agentmem.controller.scheduler` for what happens beyond).
        max_handles: Session handles kept warm (default 1024; their token counts cached);
            older ones are rebuilt on next use.
    """

    workers: int
    max_pending: int
    max_handles: int


class ServiceOptions(ServiceSettings, BackendOptions, total=False):
    """The keyword arguments of :meth:`MemoryService.open`: the :class:`ServiceSettings`
    and where the stores are (:class:`~agentmem.backends.BackendOptions`)."""


class MemoryService:
    """The process-level memory of an agent server (see the module docstring).

    Thread-safe and asyncio-safe: handles may be taken and used from any thread or task.
    Its parts and settings are fixed once it is open (assigning one raises
    :class:`~agentmem.errors.ReadOnlySettingError`); :meth:`with_settings` gives a copy
    over the same stores whose handles are built with other settings.

    Args:
        sessions: The session store (conversations, summaries, working memory).
        memory_store: The long-term store; its dimension must be the embedder's.
        embedder: Dense embedder shared by every user.
        llm: Chat model for summaries and memory extraction (``None``: windows and episodes).
        on_close: Called by :meth:`close` after the worker pool stopped (releases stores).
        **settings: How every handle is built (``model``, ``consolidate_every_tokens``,
            ``background``, ...) and how the service runs: see :class:`ServiceSettings`.
    """

    def __init__(
        self,
        *,
        sessions: SessionStore,
        memory_store: MemoryStore,
        embedder: Embedder,
        llm: ChatModel | None = None,
        on_close: Sequence[Callable[[], None]] = (),
        **settings: Unpack[ServiceSettings],
    ) -> None:
        check_store_dimension(
            embedder.dimension, memory_store.dimension, otherwise="another home / collection"
        )
        bind_embedder(memory_store, embedder)  # EmbedderMismatchError: another model's vectors
        workers = settings.pop("workers", 1)
        max_pending = settings.pop("max_pending", 1024)
        self._max_handles = settings.pop("max_handles", 1024)
        ranking = settings.pop("ranking", None)
        handles: ManagerSettings = settings  # what is left is how each handle is built
        queue = ConsolidationQueue(workers=workers, max_pending=max_pending)
        self._shared = _Shared(
            self, sessions, memory_store, embedder, llm, queue, RecentContexts(), _Sharings()
        )
        self._on_close = list(on_close)
        self._start(ManagerConfig(ranking=ranking, **handles))

    def _start(self, config: ManagerConfig, token_counter: TokenCounter | None = None) -> None:
        """Build handles with ``config`` from now on (a new service, or a copy)."""
        shared = self._shared
        self._builder = ManagerBuilder(
            config,
            sessions=shared.sessions,
            llm=shared.llm,
            token_counter=token_counter,
            queue=shared.consolidation,
        )
        # Each handle with the generation of its session's sharing it was checked at.
        self._handles: OrderedDict[
            tuple[str, str, str | None], tuple[MemoryManager, tuple[int, int]]
        ] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    # The parts every handle shares, fixed at open.
    sessions: _Fixed[SessionStore] = _Fixed("_shared", doc="The session store.")
    memory_store: _Fixed[MemoryStore] = _Fixed("_shared", doc="The long-term store.")
    embedder: _Fixed[Embedder] = _Fixed("_shared", doc="The dense embedder of every user.")
    llm: _Fixed[ChatModel | None] = _Fixed("_shared", doc="The chat model (or ``None``).")
    consolidation: _Fixed[ConsolidationQueue] = _Fixed(
        "_shared", doc="The consolidation worker pool."
    )
    recent_contexts: _Fixed[RecentContexts] = _Fixed(
        "_shared",
        doc="The last contexts the handles built (what the inspector's contexts page shows).",
    )
    config: _Fixed[ManagerConfig] = _Fixed(
        "_builder", doc="What every handle is built with (model, budgets, threshold, ...)."
    )
    # What every handle is built with, read from ``config`` (see :meth:`with_settings`).
    model: _Fixed[str] = _Fixed("config")
    max_short_term_tokens: _Fixed[int] = _Fixed("config")
    consolidate_every_tokens: _Fixed[int | None] = _Fixed("config")
    background: _Fixed[bool] = _Fixed("config")
    clock: _Fixed[Callable[[], datetime] | None] = _Fixed("config")
    system_prompt: _Fixed[str | None] = _Fixed("config")
    ranking: _Fixed[RankingConfig | None] = _Fixed("config")

    @property
    def token_counter(self) -> TokenCounter:
        """The token counter every handle shares."""
        return self._builder.token_counter

    @classmethod
    def open(
        cls,
        home: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        llm: ChatModel | None = None,
        **options: Unpack[ServiceOptions],
    ) -> MemoryService:
        """Open the stores and the shared parts (see the class for the settings), then
        resume, in the background, the consolidation of every session an earlier process
        left over its threshold (:meth:`resume_consolidation`).

        Args:
            home: Directory of the embedded stores (``AGENTMEM_HOME``, else the per-user
                data directory). Several services and managers in one process may use the
                same home: they share its stores.
            embedder: Dense embedder (default: the local all-MiniLM-L6-v2, loaded once).
            llm: Chat model for summaries and memory extraction.
            **options: The settings (:class:`ServiceSettings`) and where the stores are
                (:class:`~agentmem.backends.BackendOptions`: ``memory_url=``,
                ``session_url=``, ...; default: the environment, else Qdrant Edge and
                SQLite in ``home``).

        Raises:
            ConfigurationError: A store URL is malformed or of an unknown scheme.
            StoreLockedError: Another process holds the embedded stores of ``home``.
            DimensionMismatchError: The store holds vectors of another size.
            EmbedderMismatchError: Another model of that size made the store's vectors, or
                a re-embedding (``agentmem reembed``) is unfinished.

        Example:
            >>> service = MemoryService.open(  # doctest: +SKIP
            ...     memory_url="qdrant+http://qdrant:6333", session_url="redis://redis:6379/0"
            ... )
        """
        from agentmem.embeddings import default_embedder

        where, rest = split_backend_options(options)
        settings = cast("ServiceSettings", rest)
        backend = BackendConfig.resolve(home, **where)
        embedder = embedder if embedder is not None else default_embedder()
        leases = acquire_stores(backend, dimension=embedder.dimension)
        try:
            service = cls(
                sessions=leases.sessions.value,
                memory_store=leases.memories.value,
                embedder=embedder,
                llm=llm,
                on_close=[leases.release],
                **settings,
            )
        except BaseException:
            leases.release()
            raise
        service.resume_consolidation()
        return service

    def with_settings(self, **settings: Unpack[HandleSettings]) -> MemoryService:
        """A copy of this service whose handles are built with ``settings`` changed.

        The copy shares this service's stores, embedder, LLM and consolidation workers, and
        keeps handles of its own; it is usable while this service is open. Closing it
        drops its handles only. The settings of an open service never change in place
        (``service.model = ...`` raises :class:`~agentmem.errors.ReadOnlySettingError`):
        handles and token counters built with the old value would keep it.

        Args:
            **settings: Any of :class:`HandleSettings` (``model``, ``max_short_term_tokens``,
                ``consolidate_every_tokens``, ``background``, ``clock``, ``system_prompt``,
                ``ranking``); the others keep this service's values.

        Raises:
            ConfigurationError: A setting that is not one of :class:`HandleSettings`
                (``workers``, ``max_pending`` and ``max_handles`` belong to the service).
            StoreClosedError: The service was closed.

        Example:
            >>> quiet = service.with_settings(consolidate_every_tokens=None)  # doctest: +SKIP
            >>> quiet.manager("alice", "alice-chat-2").consolidate_every_tokens  # doctest: +SKIP
            >>> service.consolidate_every_tokens  # doctest: +SKIP
            1
        """
        self._check_open()
        unknown = sorted(set(settings) - set(HandleSettings.__annotations__))
        if unknown:
            allowed = ", ".join(sorted(HandleSettings.__annotations__))
            msg = f"with_settings takes {allowed}; not {', '.join(unknown)}"
            raise ConfigurationError(msg)
        config = self.config.replace(**settings)
        same_model = config.model == self.config.model
        copied = copy.copy(self)
        copied._start(config, token_counter=self.token_counter if same_model else None)
        return copied

    # -- handles ---------------------------------------------------------------------------

    def long_term(
        self, user_id: str, *, agent_id: str | None = None, session_id: str | None = None
    ) -> LongTermMemory:
        """The long-term memory of one user on the shared store (closing it closes nothing).

        Raises:
            InvalidValueError: ``user_id`` is empty or not a valid id.
        """
        self._check_open()
        return LongTermMemory(
            store=self.memory_store,
            embedder=self.embedder,
            user_id=user_id,
            agent_id=agent_id,
            session_id=session_id,
            ranking=self.config.ranking,
            clock=self.config.clock,
            on_close=_nothing,
        )

    def manager(
        self, user_id: str, session_id: str | None = None, *, agent_id: str | None = None
    ) -> MemoryManager:
        """A cheap handle on one user's session (a new session when ``session_id`` is None).

        Handles of the same user and session are shared (and kept warm), so taking one per
        request costs nothing after the first. Closing a handle closes nothing shared.

        Raises:
            InvalidValueError: ``user_id`` is empty or not a valid id.
            InvalidSessionIdError: ``session_id`` is not a valid session id.
            SessionOwnershipError: ``session_id`` belongs to another user (or agent) and was
                not shared with this one (see :meth:`share_session`). Nothing is read or
                written.
            StoreClosedError: The service was closed.
        """
        if session_id is None:
            self._check_open()
            return self._new_handle(user_id, None, agent_id)
        key = (user_id, session_id, agent_id)
        sharings = self._shared.sharings
        attempts = 0
        while True:
            with self._lock:
                self._check_open()
                generation = sharings.generation(session_id)
                cached = self._handles.get(key)
                if cached is not None:
                    if cached[1] == generation:
                        self._handles.move_to_end(key)
                        return cached[0]
                    del self._handles[key]  # checked before the session was shared anew
            # Built outside the lock (it reads the session and checks its owner); the first
            # of two racing builders wins.
            handle = self._new_handle(user_id, session_id, agent_id)
            with self._lock:
                if sharings.generation(session_id) != generation:
                    # share_session changed the members since the check (maybe dropping
                    # this user): check again rather than cache what it may have revoked.
                    attempts += 1
                    if attempts < _BUILD_ATTEMPTS:
                        continue
                    # Shared anew at every attempt: hand this one out uncached. It is safe:
                    # a member's door rereads the owner record before each operation.
                    return handle
                handle, _ = self._handles.setdefault(key, (handle, generation))
                while len(self._handles) > self._max_handles:
                    self._handles.popitem(last=False)
            return handle

    def share_session(
        self,
        session_id: str,
        *,
        owner: str | Principal,
        members: Sequence[str | Principal],
    ) -> SessionOwner:
        """Let ``members`` use ``owner``'s session, e.g. a group chat.

        A session belongs to the user (and agent) who first used it; any other user naming
        it gets :class:`~agentmem.errors.SessionOwnershipError` unless its owner shares it
        here. ``owner`` and each member are a user id or a ``(user_id, agent_id)`` pair.
        ``members`` replaces the earlier list (``[]`` stops sharing; handles of former
        members are dropped, in this service and its :meth:`with_settings` copies, even
        one being built meanwhile). Each member reads and writes the shared conversation, and
        each member's consolidation goes to that member's own long-term memory, under a
        watermark of its own.

        Example:
            >>> _ = service.manager("alice", "team-chat")  # doctest: +SKIP
            >>> service.share_session(  # doctest: +SKIP
            ...     "team-chat", owner="alice", members=["bob"]
            ... ).members
            (('bob', None),)
            >>> bob = service.manager("bob", "team-chat")  # doctest: +SKIP

        Raises:
            SessionOwnershipError: ``owner`` does not own the session.
            InvalidSessionIdError: ``session_id`` is not a valid session id.
            InvalidValueError: ``owner`` or a member is not a user id or a pair.
        """
        self._check_open()
        record = SessionOwners(self.sessions).share(session_id, owner=owner, members=members)
        with self._lock:
            # After the new record is written: a handle checked before it is not cached (nor
            # handed out from a copy's cache) without a new check.
            self._shared.sharings.changed(session_id)
            for key in [k for k in self._handles if k[1] == session_id]:
                if not record.admits((key[0], key[2])):
                    del self._handles[key]
        return record

    def assign_session(self, session_id: str, *, owner: str | Principal) -> SessionOwner:
        """Make ``owner`` the owner of a session of an earlier agentmem that no user may claim
        by naming it (its consolidation watermark's key cannot say whose it is, e.g. an owner
        id with ``:``) and that holds ``owner``'s earlier watermark: the way back for whoever
        runs the stores, never for a request's input. The earlier watermark is kept, so
        consolidation goes on where it stopped. See
        :meth:`agentmem.controller.ownership.SessionOwners.assign`.

        Example:
            >>> service.assign_session("chat-2023", owner=("a:b", None))  # doctest: +SKIP
            SessionOwner(owner=('a:b', None), members=())

        Raises:
            SessionOwnershipError: The session already belongs to another principal, or
                holds no earlier watermark that could be ``owner``'s.
            InvalidSessionIdError: ``session_id`` is not a valid session id.
            InvalidValueError: ``owner`` is not a valid user id or ``(user_id, agent_id)``.
        """
        self._check_open()
        record = SessionOwners(self.sessions).assign(session_id, owner=owner)
        with self._lock:
            self._shared.sharings.changed(session_id)
        return record

    def _new_handle(
        self, user_id: str, session_id: str | None, agent_id: str | None
    ) -> MemoryManager:
        long_term = self.long_term(user_id, agent_id=agent_id)
        handle = self._builder.build(long_term, session_id=session_id, manager_class=MemoryManager)
        handle.recent_contexts = self.recent_contexts
        return handle

    def serve_inspector(
        self, host: str = "127.0.0.1", port: int = 0, *, allow_edits: bool = False
    ) -> InspectorServer:
        """Serve the web inspector of this service's users from a background thread (see
        :mod:`agentmem.inspector.server`); it stops with :meth:`close` at the latest.

        Args:
            host: Interface to bind (``127.0.0.1``: this machine only).
            port: Port (0: a free one).
            allow_edits: Allow forgetting, pinning and correcting memories from the pages.

        Example:
            >>> server = service.serve_inspector(port=0)  # doctest: +SKIP
            >>> server.url  # doctest: +SKIP
            'http://127.0.0.1:43817/?token=6Yb0...'
            >>> server.stop()  # doctest: +SKIP
        """
        self._check_open()
        from agentmem.inspector.server import InspectorServer

        server = InspectorServer(self, host=host, port=port, allow_edits=allow_edits)
        self._shared.owner._on_close.insert(0, server.stop)  # before the stores are released
        return server

    # -- waiting for consolidation ---------------------------------------------------------

    def wait_for_consolidation(self, timeout: float | None = None) -> bool:
        """Wait until no consolidation is queued or running in the service's worker pool.

        By default every turn is consolidated in the background after it is recorded, so a
        test or a script that reads long-term memory right after a conversation calls this
        first. Jobs queued while it waits are waited for too, and so are the sessions
        :meth:`resume_consolidation` is resuming. A server never needs it.

        Args:
            timeout: Most seconds to wait (``None``: as long as it takes).

        Returns:
            ``True`` once nothing is queued or running; ``False`` when ``timeout`` passed
            first (nothing is cancelled: the work goes on in the background).

        Example:
            >>> chat = service.manager("alice", "alice-chat-1")  # doctest: +SKIP
            >>> _ = chat.process_interaction("I indent with tabs", "Noted.")  # doctest: +SKIP
            >>> service.wait_for_consolidation(timeout=60)  # doctest: +SKIP
            True
            >>> next_chat = service.manager("alice")  # a new session  # doctest: +SKIP
            >>> [hit.record.content for hit in next_chat.recall("tabs")][0]  # doctest: +SKIP
            'user: I indent with tabs\\nassistant: Noted.'
        """
        return self.consolidation.wait_idle(timeout)

    await_consolidation = offload(wait_for_consolidation)
    """Async twin of :meth:`wait_for_consolidation` (waits in a worker thread):
    ``await service.await_consolidation(timeout=60)``."""

    def resume_consolidation(self) -> None:
        """Consolidate, in the background, every session left over its threshold: turns
        whose job was dropped by a full queue, or still queued when a process stopped.
        :meth:`open` calls it.

        Pending work is read from each session's log and its owners' watermarks (see
        :mod:`agentmem.controller.scheduler`), so a session is resumed exactly when a
        consolidation has not got past its messages. Bounded: one thread scans the sessions
        and queues their jobs, never filling more than half of ``max_pending``, so live
        turns keep room; :meth:`wait_for_consolidation` waits for it too, :meth:`close`
        stops it (what is left is resumed at the next open). The scan reads each session's
        ownership record, its owners' watermarks and its log once. Each owner and member of a
        session is resumed into their own long-term memory; sessions without an ownership
        record (written by earlier versions) are resumed at their next turn instead.

        Example:
            >>> service = MemoryService.open(home)  # resumes on its own  # doctest: +SKIP
            >>> service.wait_for_consolidation(timeout=300)  # doctest: +SKIP
            True
        """
        self._check_open()
        if self.config.consolidate_every_tokens is not None:
            self.consolidation.feed(self._left_over())

    def _left_over(self) -> Iterator[Job]:
        """The jobs of the sessions left over their threshold (scanned lazily, in the
        feeding thread)."""
        for session_id in self.sessions.sessions():
            if self.closed:
                return
            try:
                found = self.sessions.get_owner(session_id)
                if found is None:
                    continue
                record = SessionOwner.from_json(found)
                for user_id, agent_id in (record.owner, *record.members):
                    handle = self._new_handle(user_id, session_id, agent_id)
                    job = handle.scheduler.resume_job()
                    if job is not None:
                        yield job
            except (InvalidValueError, InvalidSessionIdError) as exc:
                logger.warning("not resuming session %r: %s", session_id, exc)
            except StoreClosedError:
                return

    # -- backups ---------------------------------------------------------------------------

    def backup(self, dest: str | os.PathLike[str]) -> BackupReport:
        """Back up the embedded stores into the new directory ``dest`` while serving.

        The session database is copied with SQLite's online backup API, the Qdrant Edge
        store flushed and copied under its write lock (writers wait for the copy), with
        its manifest; every copied file is verified before the backup is published. Every
        turn acknowledged before the call is in the backup. Restore it with
        ``agentmem restore DEST --home H`` (or :func:`agentmem.backup.restore`).

        Example:
            >>> report = service.backup("/backups/agentmem-2026-12-03")  # doctest: +SKIP
            >>> report.memories, report.messages  # doctest: +SKIP
            (1200, 5400)

        Raises:
            ConfigurationError: ``dest`` exists and is not empty, or the service runs on a
                Qdrant server or Redis (back those up with Qdrant snapshots and Redis
                persistence instead).
            StoreCorruptedError: A copied file differs from its store's manifest.
        """
        from agentmem.backup import backup_stores
        from agentmem.stores.qdrant.edge import QdrantEdgeStore
        from agentmem.stores.sqlite import SQLiteSessionStore

        self._check_open()
        sessions, memories = self.sessions, self.memory_store
        if not isinstance(sessions, SQLiteSessionStore) or not isinstance(
            memories, QdrantEdgeStore
        ):
            msg = (
                f"backup() copies the embedded stores (SQLite and Qdrant Edge); this service "
                f"runs on {type(sessions).__name__} and {type(memories).__name__}: back up a "
                "Qdrant server with its snapshots (POST /collections/NAME/snapshots) and Redis "
                "with its persistence (RDB snapshots or the append-only file)"
            )
            raise ConfigurationError(msg)
        return backup_stores(sessions, memories, dest)

    abackup = offload(backup)
    """Async twin of :meth:`backup` (copies in a worker thread)."""

    # -- lifecycle -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            msg = "the MemoryService is closed; open a new one"
            raise StoreClosedError(msg)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (on this service or, for a copy made by
        :meth:`with_settings`, on the service it copies)."""
        return self._closed or self._shared.owner._closed

    def close(self) -> None:
        """Finish queued and running consolidations, then release the stores (idempotent).

        Stores shared with managers opened elsewhere on the same home stay open for them.
        A copy made by :meth:`with_settings` drops its handles only.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._handles.clear()
        if self._shared.owner is not self:
            return
        self.consolidation.close(wait=True)
        on_close, self._on_close = self._on_close, []
        for release in on_close:
            release()

    aclose = offload(close)
    """Async twin of :meth:`close` (waits in a worker thread)."""

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MemoryService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (
            f"MemoryService(sessions={type(self.sessions).__name__}, "
            f"memories={type(self.memory_store).__name__}, model={self.model!r}, {state})"
        )


def _nothing() -> None:
    """A shared store is closed by its owner (the service), not by one user's memory."""
