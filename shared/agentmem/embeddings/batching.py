"""Worker threads per local model: concurrent embedding requests share forward passes.

A local model on the CPU embeds eight short texts in one forward pass in little more time
than one; eight callers that each run their own pass queue for the cores instead, and
torch's own threads compete with theirs. :class:`BatchWorker` owns the daemon thread (or
the few threads, ``workers``) that run every pass of one model in this process:

* requests that arrive while a pass runs go together into the next pass. A request that
  finds the worker idle waits at most :data:`BATCH_WINDOW_S` (2 ms) for company, and only
  when the last pass saw other requests in flight: a lone caller's request goes at once;
* queries go first: a pass takes the waiting queries before any document, and a long
  document request (a consolidation, an ingest) is cut into passes of ``max_batch`` texts,
  so a query waits for at most one pass of documents;
* when the model embeds queries and documents apart (no ``shared_pass``), documents that
  have waited ``document_wait`` (:data:`DOCUMENT_WAIT_S`) behind a pass of queries get the
  next pass to themselves, the waiting queries the one after: steady queries slow
  documents down but never starve them;
* queries and documents share a pass when the model embeds them alike (``shared_pass``):
  a pass of queries takes at most ``query_pass_documents`` documents
  (:data:`QUERY_PASS_DOCUMENTS`), the others wait for the next pass; documents that have
  waited ``document_wait`` (:data:`DOCUMENT_WAIT_S`) fill the rest of the pass, so steady
  queries never starve them. While several callers are about and queries keep coming
  (the latest came less than ``document_wait`` ago), a few new documents (no more than
  such a pass takes) wait up to ``document_wait`` for the next query to share its pass:
  one user's consolidation rides along with another's question almost for free, instead
  of running a pass of its own that the question would wait for. A lone caller's
  documents, and the rest of a request a pass has started, never wait;
* sync callers wait on a :class:`concurrent.futures.Future`, async callers await it
  (``asyncio.wrap_future``) without blocking the event loop and without a pool thread;
* an error in a shared pass is retried request by request, so only the request that
  caused it fails; a cancelled async caller's texts are skipped if not yet taken;
* the thread starts on first use, ends after ``idle_exit`` seconds without work (so an
  embedder nobody uses any more can be collected, model and all), and starts again on the
  next request, also after ``fork()`` in the child (where the parent's thread does not
  exist);
* with ``workers=N``, up to N passes run at once, each on a thread of its own: a request
  that finds every thread busy starts another (up to N). For a model whose forward pass
  leaves the GIL while it computes (the traced local model), two passes use two cores;
  a request cut into several passes gets its vectors in order whichever pass ends first.

Example:
    >>> worker = BatchWorker(lambda texts, query: [[float(len(t))] for t in texts])
    >>> worker.embed(["ab", "abc"], query=False)
    [[2.0], [3.0]]
    >>> worker.embed(["abcd"], query=True)
    [[4.0]]
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field

from agentmem._util.checks import check_non_negative_int, check_positive_int, check_seconds
from agentmem._util.forking import reset_after_fork

__all__ = [
    "BATCH_WINDOW_S",
    "DOCUMENT_WAIT_S",
    "IDLE_EXIT_S",
    "QUERY_PASS_DOCUMENTS",
    "BatchWorker",
    "Encode",
]

BATCH_WINDOW_S = 0.002
"""Seconds a request that finds the worker idle waits for others to share its pass (only
when the last pass saw more than one request in flight)."""

QUERY_PASS_DOCUMENTS = 4
"""Documents a pass that carries queries takes at most; the other documents wait."""

DOCUMENT_WAIT_S = 0.1
"""Seconds at most that a few documents wait for a query to share its pass; documents
waiting longer fill a pass that carries queries, or, when queries and documents cannot
share a pass, take the next pass before the waiting queries."""

IDLE_EXIT_S = 10.0
"""Seconds without work after which the worker thread ends (the next request restarts it)."""

Encode = Callable[[list[str], bool], list[list[float]]]
"""``encode(texts, query)``: one forward pass over ``texts`` (embedded as queries when
``query``), one vector per text, in order."""


@dataclass(eq=False)
class _Request:
    texts: list[str]
    query: bool
    future: Future[list[list[float]]]
    vectors: list[list[float]] = field(default_factory=list)  # by position, once filled
    filled: int = 0  # texts whose vectors are in ``vectors``
    taken: int = 0  # texts already given to a pass
    started: bool = False
    since: float = field(default_factory=time.monotonic)  # when it was submitted


# (request, start, end): texts[start:end] of a request, in one pass.
_Piece = tuple[_Request, int, int]


class BatchWorker:
    """Runs one model's forward passes on daemon threads (one, or up to ``workers`` at once),
    batching concurrent requests.

    Args:
        encode: One forward pass (see :data:`Encode`); called on the worker threads only
            (on several at once with ``workers`` > 1).
        max_batch: Texts per pass at most.
        window: Seconds a request that finds the worker idle waits for others, when the
            last pass saw more than one request in flight.
        query_pass_documents: Documents a pass that carries queries takes at most.
        document_wait: Seconds at most that documents which fit beside a query wait for
            one, while queries keep coming (0: never); documents that have waited that
            long fill a pass of queries, or, when they may not share it, get the next
            pass before the waiting queries.
        shared_pass: Whether queries and documents may share a pass (the model embeds
            them alike); called once, before the first pass.
        name: The threads' name.
        idle_exit: Seconds without work after which the thread ends.
        workers: Passes that may run at once (see :attr:`workers`).

    Example:
        >>> import asyncio
        >>> worker = BatchWorker(lambda texts, query: [[1.0] for _ in texts], max_batch=2)
        >>> asyncio.run(worker.aembed(["a", "b", "c"], query=False))
        [[1.0], [1.0], [1.0]]
    """

    def __init__(
        self,
        encode: Encode,
        *,
        max_batch: int = 64,
        window: float = BATCH_WINDOW_S,
        query_pass_documents: int = QUERY_PASS_DOCUMENTS,
        document_wait: float = DOCUMENT_WAIT_S,
        shared_pass: Callable[[], bool] = lambda: True,
        name: str = "agentmem-embed",
        idle_exit: float = IDLE_EXIT_S,
        workers: int = 1,
    ) -> None:
        self._encode = encode
        self.workers = check_positive_int(workers, "workers")
        """Passes that may run at once, each on a thread of its own (1: one at a time).
        More than one only for an ``encode`` that may run concurrently and leaves the GIL
        while it computes; read when a request finds every thread busy."""
        self.max_batch = check_positive_int(max_batch, "max_batch")
        self.window = check_seconds(window, "window")
        self.query_pass_documents = check_non_negative_int(
            query_pass_documents, "query_pass_documents"
        )
        self.document_wait = check_seconds(document_wait, "document_wait")
        self._shared_pass = shared_pass
        self._mixed: bool | None = None
        self.name = name
        self.idle_exit = idle_exit
        self.passes = 0
        """Forward passes run so far (for tests and benchmarks)."""
        self.in_flight = 0
        """Requests in flight when the last pass started (in it or waiting for the next);
        with more than one, a request that finds the worker idle waits for company."""
        self._reset()
        reset_after_fork(self, BatchWorker._reset)

    def _reset(self) -> None:
        """Fresh state: at construction, and in a forked child (whose copy of the parent's
        lock may be held by a thread that does not exist there)."""
        self._cond = threading.Condition(threading.Lock())
        self._queries: deque[_Request] = deque()
        self._documents: deque[_Request] = deque()
        self._threads: set[threading.Thread] = set()
        self._idle = 0  # threads waiting for work
        self._running = 0  # passes running
        self._last_query: float | None = None  # when the latest query came (monotonic)
        self._passed_over = False  # the last pass took queries while documents waited

    def __repr__(self) -> str:
        return f"BatchWorker({self.name!r}, max_batch={self.max_batch})"

    # -- callers ---------------------------------------------------------------------------

    def submit(self, texts: Sequence[str], *, query: bool) -> Future[list[list[float]]]:
        """Queue ``texts`` for the next passes; the future holds their vectors, in order."""
        future: Future[list[list[float]]] = Future()
        if not texts:
            future.set_result([])
            return future
        request = _Request(list(texts), query, future)
        with self._cond:
            self._threads = {t for t in self._threads if t.is_alive()}
            if not self._threads or (not self._idle and len(self._threads) < self.workers):
                thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._threads.add(thread)
                thread.start()
            if query:
                self._last_query = time.monotonic()
            (self._queries if query else self._documents).append(request)
            self._cond.notify()
        return future

    def embed(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        """Vectors of ``texts``, waiting for the worker (blocks this thread)."""
        return self.submit(texts, query=query).result()

    async def aembed(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        """Async twin of :meth:`embed`: awaits the worker without blocking the loop."""
        return await asyncio.wrap_future(self.submit(texts, query=query))

    # -- the worker thread -----------------------------------------------------------------

    def _run(self) -> None:
        while (pieces := self._next_pass()) is not None:
            try:
                if pieces:
                    self._pass(pieces)
            finally:
                with self._cond:
                    self._running -= 1
                    self._cond.notify()  # documents may go now

    def _next_pass(self) -> list[_Piece] | None:
        """The texts of the next pass; ``None`` when idle for ``idle_exit`` (thread ends)."""
        with self._cond:
            while True:
                if not self._has_work():
                    self._idle += 1
                    try:
                        while not self._has_work():
                            if not self._cond.wait(self.idle_exit) and not self._has_work():
                                # Decided under the lock: a later submit() starts a thread.
                                self._threads.discard(threading.current_thread())
                                return None
                    finally:
                        self._idle -= 1
                    if self.in_flight > 1:  # found idle, others about: wait for them
                        self._wait(self.window, lambda: self._pending() >= self.max_batch)
                if not self._queries and self._documents and (wait := self._document_wait()):
                    self._wait(wait, lambda: bool(self._queries))
                if not self._has_work():
                    continue  # another worker thread took it meanwhile
                pieces = self._take(queries_only=self._running > 0)
                self._running += 1
                queued = (r for q in (self._queries, self._documents) for r in q)
                # A request cut between this pass and the next counts once.
                self.in_flight = len({id(r) for r, _, _ in pieces} | {id(r) for r in queued})
                return pieces

    def _has_work(self) -> bool:
        """Whether a thread may start a pass now: fewer than ``workers`` run, and either
        none runs and something waits, or queries wait and no document has waited
        ``document_wait``. A pass beside another is for queries only (a consolidation
        leaves the other core to the requests), and documents that have waited long
        enough stop such passes, so the running ones drain and the documents go next:
        steady queries never starve them."""
        if self._running >= self.workers:
            return False
        if not self._running:
            return bool(self._queries or self._documents)
        return bool(self._queries) and not self._documents_waited()

    def _wait(self, seconds: float, until: Callable[[], bool]) -> None:
        """Wait (the lock held) up to ``seconds`` for ``until()``."""
        deadline = time.monotonic() + seconds
        while not until():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._cond.wait(left)

    def _document_wait(self) -> float:
        """Seconds the waiting documents (no query waits) wait for a query to share its
        pass: ``document_wait`` if other callers are about, queries keep coming and the
        documents fit beside one, else 0 (they go now)."""
        if self._last_query is None or not self._may_mix() or self.in_flight <= 1:
            return 0.0  # no query to come, or none from another caller
        if self._documents[0].started:
            return 0.0  # the rest of a request a pass has started
        if time.monotonic() - self._last_query >= self.document_wait:
            return 0.0  # the queries stopped
        if self._pending() > self.query_pass_documents:
            return 0.0  # more than a pass of queries takes: a pass of their own
        return self.document_wait

    def _may_mix(self) -> bool:
        if self._mixed is None:
            self._mixed = self._shared_pass()
        return self._mixed

    def _pending(self) -> int:
        return sum(len(r.texts) - r.taken for q in (self._queries, self._documents) for r in q)

    def _take(self, *, queries_only: bool = False) -> list[_Piece]:
        """Queries first, then documents: up to ``max_batch`` texts if no query waits, or
        beside the queries if they may share the pass: ``query_pass_documents``, or the
        rest of the pass once the oldest document has waited ``document_wait``. If they
        may not, documents that have waited that long and were passed over by the last
        pass (it took queries) take this one, alone. ``queries_only`` (a pass beside
        another): the waiting queries alone."""
        pieces: list[_Piece] = []
        if queries_only:
            self._take_from(self._queries, self.max_batch, pieces)
            return pieces
        if self._documents_due():
            self._take_from(self._documents, self.max_batch, pieces)
        if not pieces:  # the usual order
            room = self._take_from(self._queries, self.max_batch, pieces)
            if not pieces:
                self._take_from(self._documents, room, pieces)
            elif self._may_mix():  # the pass carries queries: documents beside them
                if not self._documents_waited():
                    room = min(room, self.query_pass_documents)
                self._take_from(self._documents, room, pieces)
        self._passed_over = bool(self._documents) and any(r.query for r, _, _ in pieces)
        return pieces

    def _documents_due(self) -> bool:
        """Whether the waiting documents take the next pass before the waiting queries:
        only when the two may not share a pass, the last pass took queries while these
        documents waited, and the oldest of them has waited ``document_wait``."""
        return (
            self._passed_over
            and bool(self._queries and self._documents)
            and not self._may_mix()
            and self._documents_waited()
        )

    def _documents_waited(self) -> bool:
        """Whether the oldest waiting document has waited ``document_wait``."""
        return bool(self._documents) and (
            time.monotonic() - self._documents[0].since >= self.document_wait
        )

    def _take_from(self, queue: deque[_Request], room: int, pieces: list[_Piece]) -> int:
        """Append up to ``room`` texts of ``queue``, oldest first, to ``pieces``; the room
        left."""
        while queue and room:
            request = queue[0]
            if not request.started:
                request.started = True
                if not request.future.set_running_or_notify_cancel():
                    queue.popleft()  # its caller gave up before any pass took it
                    continue
            start = request.taken
            end = min(len(request.texts), start + room)
            pieces.append((request, start, end))
            request.taken = end
            room -= end - start
            if end == len(request.texts):
                queue.popleft()
        return room

    def _pass(self, pieces: list[_Piece]) -> None:
        query = all(request.query for request, _, _ in pieces)
        texts = [t for request, start, end in pieces for t in request.texts[start:end]]
        try:
            vectors = self._encode(texts, query)
            if len(vectors) != len(texts):
                msg = f"the model returned {len(vectors)} vectors for {len(texts)} texts"
                raise RuntimeError(msg)
        except Exception as exc:
            if len({id(request) for request, _, _ in pieces}) > 1:
                for piece in pieces:  # find the request that failed; the others go on
                    if not piece[0].future.done():
                        self._pass([piece])
            else:
                self._fail(pieces[0][0], exc)
            return
        done: list[_Request] = []
        with self._cond:  # passes of one request may end on several threads
            self.passes += 1
            offset = 0
            for request, start, end in pieces:
                if not request.future.done():  # else it failed in an earlier pass
                    if not request.vectors:
                        request.vectors = [[] for _ in request.texts]
                    request.vectors[start:end] = vectors[offset : offset + end - start]
                    request.filled += end - start
                    if request.filled == len(request.texts):
                        done.append(request)
                offset += end - start
        for request in done:
            with contextlib.suppress(InvalidStateError):  # failed meanwhile on another thread
                request.future.set_result(request.vectors)

    def _fail(self, request: _Request, exc: Exception) -> None:
        with contextlib.suppress(InvalidStateError):  # done meanwhile on another thread
            request.future.set_exception(exc)
        with self._cond:  # drop what is left of it
            for queue in (self._queries, self._documents):
                if request in queue:
                    queue.remove(request)
