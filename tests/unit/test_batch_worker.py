"""BatchWorker: concurrent requests share passes, queries first, errors stay with their request.

The model here is a plain function (lengths of the texts); the real model's vectors are
checked in tests/integration/test_batched_embeddings.py.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from agentmem.embeddings.batching import BatchWorker
from agentmem.errors import ConfigurationError


class Recorder:
    """``encode``: [len(text), query] per text; records every pass; can hold the first."""

    def __init__(self, *, hold: bool = False, fail_on: str | None = None) -> None:
        self.passes: list[tuple[list[str], bool]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        if not hold:
            self.release.set()
        self.fail_on = fail_on

    def __call__(self, texts: list[str], query: bool) -> list[list[float]]:
        self.entered.set()
        self.release.wait(10)
        self.passes.append((list(texts), query))
        if self.fail_on in texts:
            msg = f"cannot embed {self.fail_on!r}"
            raise RuntimeError(msg)
        return [[float(len(t)), float(query)] for t in texts]


def expected(texts: list[str], query: bool) -> list[list[float]]:
    return [[float(len(t)), float(query)] for t in texts]


def test_requests_waiting_behind_a_pass_share_the_next_one() -> None:
    encode = Recorder(hold=True)
    worker = BatchWorker(encode, max_batch=64)
    first = worker.submit(["x"], query=True)
    assert encode.entered.wait(10)  # the first pass runs (held)
    texts = [f"text {i}" * (i + 1) for i in range(20)]
    futures = [worker.submit([t], query=True) for t in texts]
    encode.release.set()
    assert first.result(10) == expected(["x"], True)
    assert [f.result(10)[0] for f in futures] == expected(texts, True)
    assert len(encode.passes) == 2  # all twenty in one pass
    assert worker.passes == 2


def test_queries_go_before_documents_and_long_requests_are_cut() -> None:
    encode = Recorder(hold=True)
    worker = BatchWorker(encode, max_batch=4, shared_pass=lambda: False)
    blocker = worker.submit(["held"], query=False)
    assert encode.entered.wait(10)
    docs = [f"doc {i}" for i in range(10)]
    bulk = worker.submit(docs, query=False)
    query = worker.submit(["the question"], query=True)
    encode.release.set()
    assert query.result(10) == expected(["the question"], True)
    assert bulk.result(10) == expected(docs, False)
    assert blocker.result(10) == expected(["held"], False)
    order = [(texts, q) for texts, q in encode.passes]
    assert order[1] == (["the question"], True)  # before any of the bulk's documents
    assert [texts for texts, _ in order[2:]] == [docs[0:4], docs[4:8], docs[8:10]]


def test_queries_and_documents_share_a_pass_when_the_model_allows() -> None:
    encode = Recorder(hold=True)
    worker = BatchWorker(encode, max_batch=8)  # shared_pass defaults to True
    worker.submit(["held"], query=True)
    assert encode.entered.wait(10)
    doc = worker.submit(["a document"], query=False)
    query = worker.submit(["a query"], query=True)
    encode.release.set()
    # A shared pass embeds every text as a document (the model embeds both alike).
    assert query.result(10) == [[7.0, 0.0]]
    assert doc.result(10) == [[10.0, 0.0]]
    assert encode.passes[1] == (["a query", "a document"], False)  # queries first


def test_an_error_fails_only_the_request_that_caused_it() -> None:
    encode = Recorder(hold=True, fail_on="boom")
    worker = BatchWorker(encode, max_batch=16)
    worker.submit(["held"], query=True)
    assert encode.entered.wait(10)
    good = [worker.submit([f"fine {i}"], query=True) for i in range(3)]
    bad = worker.submit(["ok too", "boom"], query=True)
    after = worker.submit(["later"], query=True)
    encode.release.set()
    with pytest.raises(RuntimeError, match="cannot embed 'boom'"):
        bad.result(10)
    assert [f.result(10)[0] for f in good] == expected(["fine 0", "fine 1", "fine 2"], True)
    assert after.result(10) == expected(["later"], True)
    assert worker.embed(["still working"], query=False) == expected(["still working"], False)


def test_a_wrong_number_of_vectors_is_an_error_of_that_request() -> None:
    worker = BatchWorker(lambda texts, query: [[1.0]])
    assert worker.embed(["one"], query=True) == [[1.0]]
    with pytest.raises(RuntimeError, match="returned 1 vectors for 2 texts"):
        worker.embed(["one", "two"], query=False)


def test_threads_and_asyncio_at_once_get_their_own_vectors() -> None:
    encode = Recorder()
    worker = BatchWorker(encode, max_batch=32, shared_pass=lambda: False)
    texts = [f"{'w' * (i % 17)} text {i}" for i in range(200)]

    def sync_side() -> list[list[float]]:
        with ThreadPoolExecutor(8) as pool:
            return list(pool.map(lambda t: worker.embed([t], query=True)[0], texts))

    async def async_side() -> list[list[float]]:
        return list(await asyncio.gather(*(worker.aembed([t], query=False) for t in texts)))

    with ThreadPoolExecutor(1) as pool:
        threaded = pool.submit(sync_side)
        awaited = asyncio.run(async_side())
        assert threaded.result(30) == expected(texts, True)
    assert awaited == [expected([t], False) for t in texts]
    assert len(encode.passes) < 400  # some passes were shared


async def test_waiting_does_not_block_the_event_loop() -> None:
    encode = Recorder(hold=True)
    worker = BatchWorker(encode)
    task = asyncio.ensure_future(worker.aembed(["slow"], query=True))
    ticks = 0
    while not encode.entered.is_set() or ticks < 5:
        await asyncio.sleep(0.001)
        ticks += 1
    assert not task.done()
    encode.release.set()
    assert await task == expected(["slow"], True)


async def test_a_cancelled_caller_is_skipped_and_others_go_on() -> None:
    encode = Recorder(hold=True)
    worker = BatchWorker(encode)
    held = asyncio.ensure_future(worker.aembed(["held"], query=True))
    assert await asyncio.to_thread(encode.entered.wait, 10)
    gone = asyncio.ensure_future(worker.aembed(["gone"], query=True))
    kept = asyncio.ensure_future(worker.aembed(["kept"], query=True))
    await asyncio.sleep(0.01)
    gone.cancel()
    await asyncio.sleep(0.01)  # the cancellation reaches the worker's future on the loop
    encode.release.set()
    assert await kept == expected(["kept"], True)
    assert await held == expected(["held"], True)
    assert all("gone" not in texts for texts, _ in encode.passes)


def test_an_empty_request_does_not_reach_the_model() -> None:
    encode = Recorder()
    worker = BatchWorker(encode)
    assert worker.embed([], query=True) == []
    assert encode.passes == []


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="max_batch"):
        BatchWorker(Recorder(), max_batch=0)


def test_an_idle_worker_ends_its_thread_and_can_be_collected() -> None:
    import gc
    import weakref

    worker = BatchWorker(Recorder(), idle_exit=0.05, name="idle-test-worker")
    assert worker.embed(["a"], query=True) == expected(["a"], True)
    thread = next(t for t in threading.enumerate() if t.name == worker.name)
    thread.join(10)
    assert not thread.is_alive()
    assert worker.embed(["bb"], query=True) == expected(["bb"], True)  # starts again
    ref = weakref.ref(worker)
    del worker
    gc.collect()
    for _ in range(200):  # the second thread ends within idle_exit, then nothing holds it
        if ref() is None:
            break
        time.sleep(0.05)
        gc.collect()
    assert ref() is None


DOCS = [f"doc {i}" for i in range(10)]
QUERIES = [f"q {i}" for i in range(3)]


@pytest.mark.parametrize(
    ("document_wait", "passes"),
    [
        # The queries, then two documents; the other eight wait for the next pass.
        (3600.0, [[*QUERIES, "doc 0", "doc 1"], DOCS[2:]]),
        # Waited document_wait (here 0 s) already: steady queries cannot starve them.
        (0.0, [QUERIES + DOCS]),
    ],
)
def test_a_pass_with_queries_takes_few_documents_until_they_waited(
    document_wait: float, passes: list[list[str]]
) -> None:
    encode = Recorder(hold=True)
    worker = BatchWorker(encode, max_batch=64, query_pass_documents=2, document_wait=document_wait)
    worker.submit(["held"], query=False)
    assert encode.entered.wait(10)
    bulk = worker.submit(DOCS, query=False)
    queries = [worker.submit([q], query=True) for q in QUERIES]
    encode.release.set()
    assert [f.result(10) for f in queries] == [expected([q], False) for q in QUERIES]
    assert bulk.result(10) == expected(DOCS, False)
    assert [texts for texts, _ in encode.passes[1:]] == passes


def test_query_pass_documents_may_be_zero_but_not_negative() -> None:
    encode = Recorder(hold=True)
    worker = BatchWorker(encode, query_pass_documents=0, document_wait=3600.0)
    worker.submit(["held"], query=True)
    assert encode.entered.wait(10)
    doc = worker.submit(["a document"], query=False)
    queries = [worker.submit([t], query=True) for t in ("q1", "q2")]
    encode.release.set()
    assert [f.result(10) for f in queries] == [expected([t], True) for t in ("q1", "q2")]
    assert doc.result(10) == expected(["a document"], False)
    assert encode.passes[1:] == [(["q1", "q2"], True), (["a document"], False)]
    with pytest.raises(ConfigurationError, match="query_pass_documents"):
        BatchWorker(encode, query_pass_documents=-1)


def watched(encode: Recorder) -> tuple[BatchWorker, list[int]]:
    """A worker (an hour-long window) and the requests in flight at each of its passes."""
    seen: list[int] = []

    def model(texts: list[str], query: bool) -> list[list[float]]:
        seen.append(worker.in_flight)
        return encode(texts, query)

    worker = BatchWorker(model, max_batch=2, window=3600.0)
    return worker, seen


def test_a_lone_request_does_not_wait_for_company() -> None:
    worker, seen = watched(Recorder())
    # With nobody else in flight the hour-long window is never waited for.
    assert worker.embed(["alone"], query=True) == expected(["alone"], True)
    assert worker.embed(["again"], query=False) == expected(["again"], False)
    assert seen == [1, 1]


def test_after_a_crowded_pass_an_idle_worker_gathers_requests() -> None:
    encode = Recorder(hold=True)
    worker, seen = watched(encode)
    worker.submit(["held"], query=True)
    assert encode.entered.wait(10)
    others = [worker.submit(t, query=True) for t in (["a"], ["bb", "ccc"])]
    encode.release.set()
    assert [f.result(10) for f in others] == [expected(["a"], True), expected(["bb", "ccc"], True)]
    # "held" alone; "a" and "bb" (two requests); "ccc", the rest of its request, alone.
    assert seen == [1, 2, 1]
    assert worker.in_flight == 1
    crowd(worker, encode)
    # After a crowded pass, a request that finds the worker idle waits for company (here
    # until the pass is full, as the window is an hour).
    first = worker.submit(["c"], query=True)
    second = worker.submit(["dd"], query=True)
    assert first.result(10) + second.result(10) == expected(["c", "dd"], True)
    assert encode.passes[-1] == (["c", "dd"], True)


def crowd(worker: BatchWorker, encode: Recorder) -> None:
    """Run a pass (held until the others queue) that carries two callers' queries: after
    it, the worker knows others are about."""
    encode.entered.clear()
    encode.release.clear()
    worker.submit(["held"], query=True)
    assert encode.entered.wait(10)
    pair = [worker.submit([t], query=True) for t in ("q0", "q1")]
    encode.release.set()
    assert [f.result(10) for f in pair] == [expected([t], True) for t in ("q0", "q1")]
    assert worker.in_flight == 2


def test_while_queries_come_a_few_documents_wait_for_the_next_one() -> None:
    encode = Recorder()
    worker = BatchWorker(encode, document_wait=3600.0)
    crowd(worker, encode)
    doc = worker.submit(["a document"], query=False)  # fits beside a query: waits for one
    assert worker.embed(["q2"], query=True) == [[2.0, 0.0]]
    assert doc.result(10) == expected(["a document"], False)
    assert encode.passes[-1] == (["q2", "a document"], False)


def test_a_lone_callers_document_does_not_wait_for_a_query() -> None:
    encode = Recorder()
    worker = BatchWorker(encode, document_wait=3600.0)
    # One caller recalls, then stores: nobody else will send the query to share.
    assert worker.embed(["q"], query=True) == expected(["q"], True)
    assert worker.submit(["d"], query=False).result(10) == expected(["d"], False)


def test_the_rest_of_a_started_request_does_not_wait() -> None:
    encode = Recorder()
    worker = BatchWorker(encode, query_pass_documents=2, document_wait=3600.0)
    crowd(worker, encode)
    encode.entered.clear()
    encode.release.clear()
    worker.submit(["held"], query=True)
    assert encode.entered.wait(10)
    docs = ["d1", "d2", "d3"]
    bulk = worker.submit(docs, query=False)
    query = worker.submit(["q2"], query=True)
    encode.release.set()
    assert query.result(10) == expected(["q2"], False)  # a mixed pass
    assert bulk.result(10) == expected(docs, False)  # "d3" went on without a query
    assert [texts for texts, _ in encode.passes[-2:]] == [["q2", "d1", "d2"], ["d3"]]


@pytest.mark.parametrize("seconds", [-1, float("nan"), float("inf"), True, "0.1"])
def test_waits_must_be_seconds(seconds: object) -> None:
    for name in ("window", "document_wait"):
        with pytest.raises(ConfigurationError, match=f"{name} must be a number of seconds"):
            BatchWorker(Recorder(), **{name: seconds})


def test_more_documents_than_a_query_pass_takes_do_not_wait() -> None:
    encode = Recorder()
    worker = BatchWorker(encode, query_pass_documents=2, document_wait=3600.0)
    assert worker.embed(["q"], query=True) == expected(["q"], True)
    docs = ["d1", "d2", "d3"]
    assert worker.submit(docs, query=False).result(10) == expected(docs, False)


def test_documents_do_not_wait_for_queries_they_cannot_share_a_pass_with() -> None:
    encode = Recorder()
    worker = BatchWorker(encode, shared_pass=lambda: False, document_wait=3600.0)
    assert worker.embed(["q"], query=True) == expected(["q"], True)
    assert worker.submit(["d"], query=False).result(10) == expected(["d"], False)


@pytest.mark.parametrize(
    ("document_wait", "passes"),
    [
        # Passed over by a pass of queries ("q0") after waiting document_wait (here 0 s): a
        # pass of its own next, though "q1" waits; then the queries again.
        (0.0, [["held"], ["q0"], ["doc"], ["q1", "q2"], ["q3"], ["q4"]]),
        # Not waited long enough: the queries keep going first.
        (3600.0, [["held"], ["q0"], ["q1"], ["q2"], ["q3"], ["q4"], ["doc"]]),
    ],
)
def test_documents_that_cannot_share_a_pass_get_one_after_waiting(
    document_wait: float, passes: list[list[str]]
) -> None:
    encode = Recorder(hold=True)
    arrivals: list[Future[list[list[float]]]] = []

    def model(texts: list[str], query: bool) -> list[list[float]]:
        if len(arrivals) < 5:  # a query arrives during each of the first five passes
            arrivals.append(worker.submit([f"q{len(arrivals)}"], query=True))
        return encode(texts, query)

    worker = BatchWorker(model, shared_pass=lambda: False, document_wait=document_wait)
    worker.submit(["held"], query=True)
    assert encode.entered.wait(10)
    doc = worker.submit(["doc"], query=False)
    encode.release.set()
    assert doc.result(10) == expected(["doc"], False)
    assert [f.result(10) for f in arrivals] == [expected([f"q{i}"], True) for i in range(5)]
    assert [texts for texts, _ in encode.passes] == passes


def test_steady_queries_do_not_starve_documents_that_cannot_share_their_passes() -> None:
    document_wait = 0.02
    pass_seconds = 0.002  # at least; longer on a busy machine (then fewer passes run)
    kinds: list[bool] = []  # whether each pass embedded queries

    def model(texts: list[str], query: bool) -> list[list[float]]:
        time.sleep(pass_seconds)
        kinds.append(query)
        return expected(texts, query)

    worker = BatchWorker(model, shared_pass=lambda: False, document_wait=document_wait)
    stop = threading.Event()

    def asker() -> None:  # one query waits at every pass
        while not stop.is_set():
            worker.embed(["q"], query=True)

    askers = [threading.Thread(target=asker) for _ in range(3)]
    for thread in askers:
        thread.start()
    try:
        deadline = time.monotonic() + 10
        while len(kinds) < 10 and time.monotonic() < deadline:
            time.sleep(0.001)
        before = len(kinds)
        doc = worker.submit(["doc"], query=False)
        # Generous: without the ageing the document waits for as long as queries come.
        assert doc.result(500 * document_wait) == expected(["doc"], False)
    finally:
        stop.set()
        for thread in askers:
            thread.join(10)
    # Passes of queries ahead of it: the one running, those that started within
    # document_wait (each takes pass_seconds at least), the one during which it aged.
    ahead = kinds[before:].index(False)
    assert ahead <= document_wait / pass_seconds + 3


# -- several passes at once (workers) -------------------------------------------------------


class Gate:
    """``encode`` whose passes on the texts in ``held`` wait for ``release``; records how
    many passes ran at once at most, and each pass's texts."""

    def __init__(self, held: set[str]) -> None:
        self.held = held
        self.release = threading.Event()
        self.entered = threading.Event()
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.passes: list[list[str]] = []

    def __call__(self, texts: list[str], query: bool) -> list[list[float]]:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.passes.append(list(texts))
        try:
            if self.held & set(texts):
                self.entered.set()
                assert self.release.wait(10)
            return expected(texts, query)
        finally:
            with self.lock:
                self.running -= 1


def test_a_query_finding_every_pass_busy_runs_beside_it_with_two_workers() -> None:
    encode = Gate({"slow"})
    worker = BatchWorker(encode, workers=2)
    slow = worker.submit(["slow"], query=True)
    assert encode.entered.wait(10)
    quick = worker.submit(["quick"], query=True)
    assert quick.result(10) == expected(["quick"], True)  # while "slow" is still held
    assert not slow.done()
    encode.release.set()
    assert slow.result(10) == expected(["slow"], True)
    assert encode.most == 2


def test_one_worker_runs_one_pass_at_a_time() -> None:
    encode = Gate({"slow"})
    worker = BatchWorker(encode)  # workers=1
    slow = worker.submit(["slow"], query=True)
    assert encode.entered.wait(10)
    quick = worker.submit(["quick"], query=True)
    time.sleep(0.05)
    assert not quick.done()
    encode.release.set()
    assert quick.result(10) == expected(["quick"], True)
    assert slow.result(10) == expected(["slow"], True)
    assert encode.most == 1


def test_a_request_cut_into_passes_that_end_out_of_order_keeps_its_order() -> None:
    encode = Gate({"t0"})
    worker = BatchWorker(encode, max_batch=2, workers=2)
    texts = [f"t{i}" + "x" * i for i in range(6)]
    texts[0] = "t0"
    long = worker.submit(texts, query=True)  # passes of 2: the first is held
    assert encode.entered.wait(10)
    other = worker.submit(["other"], query=True)  # starts the second thread
    for _ in range(200):  # the second thread takes the rest of `long` meanwhile
        if sum(len(p) for p in encode.passes) >= 5:
            break
        time.sleep(0.01)
    assert other.result(10) == expected(["other"], True)
    encode.release.set()
    assert long.result(10) == expected(texts, True)


def test_documents_never_run_beside_another_pass() -> None:
    encode = Gate({"slow"})
    worker = BatchWorker(encode, workers=2)
    slow = worker.submit(["slow"], query=True)
    assert encode.entered.wait(10)
    docs = worker.submit(["a document", "another"], query=False)
    worker.submit(["a query"], query=True).result(10)  # a second thread exists now
    time.sleep(0.05)
    assert not docs.done()  # they wait for a pass to end, on either thread
    encode.release.set()
    assert docs.result(10) == expected(["a document", "another"], False)
    assert slow.result(10) == expected(["slow"], True)
    assert encode.most == 2  # the query beside "slow", never the documents


def test_workers_must_be_positive() -> None:
    with pytest.raises(ConfigurationError):
        BatchWorker(lambda texts, query: [], workers=0)


@pytest.mark.parametrize("shared", [True, False])
def test_steady_queries_beside_each_other_never_starve_documents(shared: bool) -> None:
    """Two threads could take turns running passes of new queries side by side, so that
    no moment comes with no pass running, when documents may go: documents that have
    waited ``document_wait`` stop the side passes instead."""

    def encode(texts: list[str], query: bool) -> list[list[float]]:
        time.sleep(0.005)
        return expected(texts, query)

    worker = BatchWorker(encode, workers=2, shared_pass=lambda: shared)
    stop = threading.Event()

    def steady() -> None:
        while not stop.is_set():
            worker.submit(["a query"], query=True)
            time.sleep(0.001)

    thread = threading.Thread(target=steady)
    thread.start()
    try:
        time.sleep(0.05)
        docs = worker.submit(["doc one", "doc two", "doc three"], query=False)
        assert docs.result(5) == expected(["doc one", "doc two", "doc three"], False)
    finally:
        stop.set()
        thread.join()


def test_fewer_workers_take_effect_on_the_threads_already_running() -> None:
    lock = threading.Lock()
    running, most = [0], [0]

    def encode(texts: list[str], query: bool) -> list[list[float]]:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.002)
        with lock:
            running[0] -= 1
        return expected(texts, query)

    worker = BatchWorker(encode, workers=2)
    for _ in range(10):  # two passes at once: seen within a round unless the machine is busy
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: worker.embed([f"q{i}"], query=True), range(200)))
        if most[0] == 2:
            break
    assert most[0] == 2
    worker.workers = 1  # what the local embedder does when its trace fails
    most[0] = 0
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: worker.embed([f"r{i}"], query=True), range(200)))
    assert most[0] == 1
