"""``ConsolidationQueue``: one bounded queue and worker pool for background consolidation.

A :class:`~agentmem.MemoryService` owns one for all its users; a manager opened on its own
owns a private one. Jobs are keyed by session: a session already waiting in the queue is not
queued twice (the one run catches up on everything recorded so far), and one session is
never consolidated by two workers at once (managers take the session's process-wide lock).

Backpressure: when ``max_pending`` sessions are already waiting, :meth:`~ConsolidationQueue.submit`
does not block the caller and does not queue the job; it returns ``None`` and logs at
``WARNING``. Nothing is lost: the messages stay in the session log with their token count
pending, so the session's next recorded turn (or an explicit ``consolidate()``) submits it
again. The same holds for what is still queued when the process dies.

:meth:`~ConsolidationQueue.close` stops taking work, then finishes the queued and running
jobs (``wait=True``, the default) or lets the queued ones go (``wait=False``); either way
consolidation is watermarked in the session store, so work left behind runs next time.

Example:
    >>> queue = ConsolidationQueue(workers=1, max_pending=8)
    >>> future = queue.submit(("alice", "s1"), lambda: "done")
    >>> future.result(timeout=5)
    'done'
    >>> queue.close()
"""

from __future__ import annotations

import logging
import queue as queue_module
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any

from agentmem.errors import ConfigurationError, StoreClosedError

__all__ = ["ConsolidationQueue"]

logger = logging.getLogger(__name__)


_STOP = object()


class ConsolidationQueue:
    """A bounded queue of consolidation jobs and the worker threads that run them.

    Args:
        workers: Worker threads (started on the first job).
        max_pending: Sessions that may wait at once; beyond that, :meth:`submit` refuses
            (see the module docstring for why that loses nothing).
    """

    def __init__(self, *, workers: int = 1, max_pending: int = 1024) -> None:
        for name, value in (("workers", workers), ("max_pending", max_pending)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"{name} must be a positive integer, got {value!r}"
                raise ConfigurationError(msg)
        self.workers = workers
        self.max_pending = max_pending
        self._queue: queue_module.Queue[Any] = queue_module.Queue()
        self._waiting: dict[Hashable, Future[Any]] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
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
                    "turn or an explicit consolidate()",
                    self.max_pending,
                    key,
                )
                return None
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

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            key, future, job = item
            with self._lock:
                if self._waiting.get(key) is future:
                    del self._waiting[key]
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except BaseException as exc:
                logger.exception("background consolidation of %r failed", key)
                future.set_exception(exc)

    def close(self, *, wait: bool = True, timeout: float | None = None) -> None:
        """Stop taking jobs; finish the queued ones (``wait``) or cancel them.

        Cancelled jobs lose nothing: their messages stay pending in the session store.
        """
        with self._lock:
            if self._closed:
                threads = []
            else:
                self._closed = True
                threads = list(self._threads)
                if not wait:
                    for future in self._waiting.values():
                        future.cancel()
                for _ in threads:
                    self._queue.put(_STOP)
        for thread in threads:
            thread.join(timeout)
