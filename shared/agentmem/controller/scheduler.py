"""When consolidation runs: per-session triggering, and the background worker pool.

:class:`ConsolidationScheduler` belongs to one session handle: when a turn ends
(:func:`ends_turn`) it computes what is pending from the session log and the consolidation
watermark (the tokens of the messages logged after the last consolidated one: no counter
that a job could reset, so work is pending exactly as long as it is not consolidated), runs
a consolidation when ``every_tokens`` is reached (here, or in the background; by default
after every turn, in the background), and runs one session's consolidations one at a time
(a process-wide lock per session, taken alike by threads and asyncio tasks).

:class:`ConsolidationQueue` is one bounded queue and worker pool for background
consolidation. A :class:`~agentmem.MemoryService` owns one for all its users; a manager
opened on its own owns a private one (made by its scheduler on first use). Jobs are keyed
by session: a session already waiting in the queue is not queued twice (the one run catches
up on everything recorded so far), so a burst of turns is one consolidation, not one per
turn; and one session is never consolidated by two workers at once (schedulers take the
session's process-wide lock). :meth:`~ConsolidationQueue.wait_idle` waits until nothing is
queued, running or being fed (tests and scripts that read long-term memory right after a
turn).

Backpressure: when ``max_pending`` sessions are already waiting, :meth:`~ConsolidationQueue.submit`
does not block the caller and does not queue the job; it returns ``None`` and logs at
``WARNING``. Nothing is lost: the messages stay in the session log after its watermark, so
they stay pending until a consolidation gets past them: the session's next turn (or an
explicit ``consolidate()``) submits it again, and :meth:`MemoryService.open
<agentmem.MemoryService.open>` resumes every session left over its threshold
(:meth:`~ConsolidationQueue.feed`: in the background, never more than half the queue at a
time). The same holds for what is still queued when the process dies.

:meth:`~ConsolidationQueue.close` stops taking work, then finishes the queued and running
jobs (``wait=True``, the default) or lets the queued ones go (``wait=False``); either way
consolidation is watermarked in the session store, so work left behind runs next time.

Example:
    >>> from agentmem.short_term import ConversationBufferMemory
    >>> chat = ConversationBufferMemory(session_id="s1")
    >>> consolidator = MemoryConsolidator(long_term, store=chat.store)  # doctest: +SKIP
    >>> scheduler = ConsolidationScheduler(chat, consolidator, every_tokens=50)  # doctest: +SKIP
    >>> batch = chat.add_messages([{"role": "user", "content": "I indent with tabs"}])
    >>> scheduler.record(batch) is None  # no answer yet: nothing ran  # doctest: +SKIP
    True
    >>> queue = ConsolidationQueue(workers=1, max_pending=8)
    >>> future = queue.submit(("alice", "s1"), lambda: "done")
    >>> future.result(timeout=5)
    'done'
    >>> queue.close()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue as queue_module
import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeAlias

from agentmem._sansio import Program, async_twin, blocking, call, drive, locked, twin
from agentmem._util.checks import check_positive_int
from agentmem.errors import SessionOwnershipError, StoreClosedError
from agentmem.types import Message

if TYPE_CHECKING:
    from agentmem.controller.consolidation import ConsolidationReport, MemoryConsolidator
    from agentmem.short_term.base import ShortTermMemory

__all__ = ["ConsolidationQueue", "ConsolidationScheduler", "Job", "JobKey", "ends_turn"]

logger = logging.getLogger(__name__)


_STOP = object()

#: What identifies a session's consolidation job in a queue: the session store (by
#: identity), the user, the agent and the session.
JobKey: TypeAlias = tuple[int, str, str | None, str]

#: A job to queue: its key and what it runs.
Job: TypeAlias = tuple[Hashable, Callable[[], Any]]


class ConsolidationQueue:
    """A bounded queue of consolidation jobs and the worker threads that run them.

    Args:
        workers: Worker threads (started on the first job).
        max_pending: Sessions that may wait at once; beyond that, :meth:`submit` refuses
            (see the module docstring for why that loses nothing).
    """

    def __init__(self, *, workers: int = 1, max_pending: int = 1024) -> None:
        self.workers = check_positive_int(workers, "workers")
        self.max_pending = check_positive_int(max_pending, "max_pending")
        self._queue: queue_module.Queue[Any] = queue_module.Queue()
        self._waiting: dict[Hashable, Future[Any]] = {}
        self._running_jobs: dict[Hashable, list[Future[Any]]] = {}
        self._threads: list[threading.Thread] = []
        self._feeders: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._running = 0
        self._feeding = 0
        self._closed = False
        self.dropped = 0
        """Jobs refused because the queue was full (their work stays pending)."""

    @property
    def pending(self) -> int:
        """Jobs waiting for a worker."""
        with self._lock:
            return len(self._waiting)

    def submit(self, key: Hashable, job: Callable[[], Any]) -> Future[Any] | None:
        """Queue ``job`` for ``key`` and return its future; the waiting future when ``key``
        is already queued; ``None`` when the queue is full.

        Raises:
            StoreClosedError: The queue was closed.
        """
        with self._lock:
            if self._closed:
                msg = "the consolidation queue is closed; open a new service or manager"
                raise StoreClosedError(msg)
            waiting = self._waiting.get(key)
            if waiting is not None:
                return waiting
            if len(self._waiting) >= self.max_pending:
                self.dropped += 1
                logger.warning(
                    "consolidation queue full (%d waiting); %r stays pending until its next "
                    "turn, an explicit consolidate() or the next MemoryService.open",
                    self.max_pending,
                    key,
                )
                return None
            return self._put(key, job)

    def _put(self, key: Hashable, job: Callable[[], Any]) -> Future[Any]:
        """Queue a job (the lock held, room checked)."""
        future: Future[Any] = Future()
        self._waiting[key] = future
        self._queue.put((key, future, job))
        if len(self._threads) < self.workers:
            thread = threading.Thread(
                target=self._work, name=f"agentmem-consolidate-{len(self._threads)}"
            )
            thread.daemon = True
            self._threads.append(thread)
            thread.start()
        return future

    def futures_of(self, key: Hashable) -> list[Future[Any]]:
        """The futures of ``key``'s queued and running jobs, whoever submitted them."""
        with self._lock:
            found = list(self._running_jobs.get(key, ()))
            waiting = self._waiting.get(key)
            return [*found, waiting] if waiting is not None else found

    def feed(self, jobs: Iterable[Job]) -> None:
        """Queue ``jobs`` (``(key, job)`` pairs) from a background thread, never filling
        more than half the queue (room stays for live turns), until they run out or the
        queue closes. ``jobs`` is iterated in that thread, so it may do I/O (a scan of the
        sessions left over their threshold, see ``MemoryService.open``).
        :meth:`wait_idle` waits for the feeding too.

        Example:
            >>> queue = ConsolidationQueue(max_pending=2)
            >>> done = []
            >>> queue.feed((f"s{i}", lambda i=i: done.append(i)) for i in range(5))
            >>> queue.wait_idle(timeout=5), sorted(done)
            (True, [0, 1, 2, 3, 4])
            >>> queue.close()
        """
        with self._lock:
            if self._closed:
                msg = "the consolidation queue is closed; open a new service or manager"
                raise StoreClosedError(msg)
            self._feeding += 1
            thread = threading.Thread(
                target=self._feed, args=(jobs,), name="agentmem-consolidate-feed"
            )
            thread.daemon = True
            self._feeders.append(thread)
        thread.start()

    def _feed(self, jobs: Iterable[Job]) -> None:
        room = max(1, self.max_pending // 2)
        try:
            for key, job in jobs:
                with self._changed:
                    self._changed.wait_for(lambda: self._closed or len(self._waiting) < room)
                    if self._closed:
                        return
                    if key not in self._waiting:
                        self._put(key, job)
        except Exception:
            logger.exception("resuming pending consolidations stopped")
        finally:
            with self._changed:
                self._feeding -= 1
                self._changed.notify_all()

    @property
    def running(self) -> int:
        """Jobs a worker is running now."""
        with self._lock:
            return self._running

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no job is queued, running or being fed (:meth:`feed`); ``False`` if
        ``timeout`` seconds passed first (jobs submitted meanwhile are waited for too).

        Example:
            >>> queue = ConsolidationQueue()
            >>> _ = queue.submit("s1", lambda: "done")
            >>> queue.wait_idle(timeout=5), queue.pending, queue.running
            (True, 0, 0)
            >>> queue.close()
        """
        with self._changed:
            return self._changed.wait_for(self._idle, timeout)

    def _idle(self) -> bool:
        return not self._waiting and not self._running and not self._feeding

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            key, future, job = item
            with self._changed:
                if self._waiting.get(key) is future:
                    del self._waiting[key]
                self._running += 1
                self._running_jobs.setdefault(key, []).append(future)
                self._changed.notify_all()  # room for a feeder
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(job())
                    except SessionOwnershipError as exc:  # its owner dropped the member since
                        logger.warning("background consolidation of %r refused: %s", key, exc)
                        future.set_exception(exc)
                    except BaseException as exc:
                        logger.exception("background consolidation of %r failed", key)
                        future.set_exception(exc)
            finally:
                with self._changed:
                    self._running -= 1
                    running = self._running_jobs[key]
                    running.remove(future)
                    if not running:
                        del self._running_jobs[key]
                    self._changed.notify_all()

    def close(self, *, wait: bool = True, timeout: float | None = None) -> None:
        """Stop taking jobs (and stop feeding); finish the queued ones (``wait``) or cancel
        them.

        Cancelled jobs lose nothing: their messages stay pending in the session store.
        """
        with self._changed:
            if self._closed:
                threads: list[threading.Thread] = []
            else:
                self._closed = True
                threads = [*self._feeders, *self._threads]
                if not wait:
                    for future in self._waiting.values():
                        future.cancel()
                for _ in self._threads:
                    self._queue.put(_STOP)
            self._changed.notify_all()
        for thread in threads:
            thread.join(timeout)


def ends_turn(messages: Sequence[Message]) -> bool:
    """Whether ``messages`` end a turn: the last one is an assistant answer (not a tool
    call). Only then is the threshold checked, so a question waiting for its answer, or a
    tool call waiting for its result, is never consolidated apart from the rest of its turn.

    Example:
        >>> ends_turn([Message(role="user", content="hi")])
        False
        >>> ends_turn([Message(role="user", content="hi"), Message(role="assistant", content="ok")])
        True
    """
    return bool(messages) and messages[-1].role == "assistant" and not messages[-1].tool_calls


class ConsolidationScheduler:
    """When and where one session's consolidation runs (see the module docstring).

    Args:
        short_term: The session's conversation (its log is what is consolidated).
        consolidator: Writes the conversation into the user's long-term memory.
        every_tokens: Consolidate when a turn ends (:func:`ends_turn`) with at least this
            many tokens recorded since the last successful consolidation (``1``: after every
            turn; ``None``: only on demand).
        background: Run threshold-triggered consolidation in a worker thread, so
            :meth:`record` never waits for it.
        queue: The queue background runs go to (a service's, shared by its users). Without
            one, a private single-worker queue is made when needed and closed by :meth:`close`.
    """

    def __init__(
        self,
        short_term: ShortTermMemory,
        consolidator: MemoryConsolidator,
        *,
        every_tokens: int | None = 1,
        background: bool = True,
        queue: ConsolidationQueue | None = None,
    ) -> None:
        self.short_term = short_term
        self.consolidator = consolidator
        self.every_tokens = every_tokens
        self.background = background
        self._queue = queue
        self._owns_queue = False
        self._queue_lock = threading.Lock()
        self._futures: set[Future[Any]] = set()
        # Every handle on one session takes this key's lock, wherever it was opened.
        self._run_key: Hashable = ("consolidate", short_term.store, short_term.session_id)

    @property
    def job_key(self) -> JobKey:
        """What names this session's (and owner's) job in a :class:`ConsolidationQueue`:
        every handle on the session gets the same key, so they share one queued job."""
        scope = self.consolidator.memory.scope
        store, session_id = self.short_term.store, self.short_term.session_id
        # hash(), not id(): a handle's door on the store (GuestStore) hashes as the store,
        # so every handle's door on one store names the same job.
        return (hash(store), scope.user_id, scope.agent_id, session_id)

    # -- triggering ------------------------------------------------------------------------

    @twin
    def record(self, messages: Sequence[Message]) -> Program[ConsolidationReport | None]:
        """Note that ``messages`` were just appended to the session; when they end a turn
        and the backlog reached the threshold, consolidate. Returns the report if it ran
        here (never in background mode).
        """
        return (yield from self._record(messages))

    arecord = async_twin(record)

    def _record(self, messages: Sequence[Message]) -> Program[ConsolidationReport | None]:
        if not ends_turn(messages) or self.every_tokens is None:
            return None
        if not (yield from self._due()):
            return None
        if self.background:
            self.submit()
            return None
        return (yield from self._consolidate())

    @twin
    def due(self) -> Program[bool]:
        """Whether the session's backlog has reached the threshold: the messages logged
        after the consolidation watermark hold at least ``every_tokens`` tokens, or an
        interrupted consolidation waits to be finished. Never with ``every_tokens=None``.

        Computed from the log and the watermark alone, so it stays true until a
        consolidation really gets past the messages, whatever happened to earlier jobs.
        """
        return (yield from self._due())

    adue = async_twin(due)

    def _due(self) -> Program[bool]:
        limit = self.every_tokens
        if limit is None:
            return False
        consolidator = self.consolidator
        state = (yield from consolidator._get_state(self.short_term.session_id)) or {}
        if state.get("pending"):
            return True
        tokens, _ = yield from self.short_term._backlog(state.get("watermark"), limit)
        return tokens >= limit

    def _resumable(self) -> Program[bool]:
        """Due, and the log ends a turn (a question still waiting for its answer is not
        consolidated apart from it): what :meth:`MemoryService.open
        <agentmem.MemoryService.open>` resumes."""
        if not (yield from self._due()):
            return False
        _, newest = yield from self.short_term._backlog(None, 0)
        return newest is not None and ends_turn([newest])

    def resume_job(self) -> Job | None:
        """The ``(key, job)`` that consolidates this session when it is left over its
        threshold (see :meth:`ConsolidationQueue.feed`), else ``None``."""
        if not drive(self._resumable()):
            return None
        return self.job_key, lambda: drive(self._consolidate())

    # -- running ---------------------------------------------------------------------------

    @twin
    def consolidate(self) -> Program[ConsolidationReport]:
        """Consolidate the session's messages not consolidated before, now (one run per
        session at a time)."""
        return (yield from self._consolidate())

    aconsolidate = async_twin(consolidate)

    def _consolidate(self) -> Program[ConsolidationReport]:
        return (yield from locked(self._run_key, self._run()))

    def _run(self) -> Program[ConsolidationReport]:
        log = yield from self.short_term._get_log()
        session_id = self.short_term.session_id
        return (yield from self.consolidator._consolidate_session(log, session_id=session_id))

    def submit(self) -> None:
        """Queue a background consolidation of the session (sync and async callers alike:
        it runs in a worker thread). A session already waiting is not queued twice."""
        with self._queue_lock:
            if self._queue is None:
                self._queue = ConsolidationQueue(workers=1)
                self._owns_queue = True
            queue = self._queue
        future = queue.submit(self.job_key, lambda: drive(self._consolidate()))
        if future is not None and future not in self._futures:
            self._futures.add(future)
            future.add_done_callback(self._futures.discard)

    # -- waiting and closing ---------------------------------------------------------------

    def _session_futures(self) -> list[Future[Any]]:
        """This handle's background runs, and the session's queued or running ones that
        another handle (an evicted one, say) submitted to the same queue."""
        futures = set(self._futures)
        queue = self._queue
        if queue is not None:
            futures.update(queue.futures_of(self.job_key))
        return list(futures)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the session's queued and running background runs finish (whichever
        handle submitted them); ``False`` if ``timeout`` seconds passed first."""
        futures = self._session_futures()
        if not futures:
            return True
        return not concurrent.futures.wait(futures, timeout).not_done

    async def wait_async(self, timeout: float | None = None) -> bool:
        """:meth:`wait` without blocking the event loop."""
        futures = [asyncio.wrap_future(f) for f in self._session_futures()]
        if not futures:
            return True
        return not (await asyncio.wait(futures, timeout=timeout))[1]

    @twin
    def close(self) -> Program[None]:
        """Wait for the background runs, then close the private queue if one was made
        (a shared queue is its owner's to close)."""
        yield from call(self.wait, self.wait_async)
        with self._queue_lock:
            queue = self._queue if self._owns_queue else None
            if queue is not None:
                self._queue, self._owns_queue = None, False
        if queue is not None:
            yield from blocking(queue.close)

    aclose = async_twin(close)
