"""The real local model through its batch worker: shared passes give the unbatched vectors.

One embedder answers texts one at a time (each call alone in its pass: the unbatched
reference); another answers the same texts from many threads and asyncio tasks at once,
so that they share passes. The vectors must match within float32 rounding.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
import pytest_socket

from agentmem.embeddings import SentenceTransformerEmbedder
from agentmem.embeddings.batching import BatchWorker
from agentmem.embeddings.local import default_torch_threads
from agentmem.errors import InvalidValueError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TEXTS = [
    "Which indentation does the user prefer?",
    "tabs",
    "The user writes Python and indents with tabs, not spaces, because it is easier to read.",
    "我用 Python 写代码，缩进用制表符",
    "Alice flew to Tokyo on Friday for the planning meeting about the Kubernetes migration, "
    "which took the checkout service down for two hours and triggered a long discussion.",
    "What did I say about sourdough?",
    "ok",
    "The quarterly report is due on Monday morning, with the open risks listed first.",
] * 3
TEXTS = [f"{text} ({i})" for i, text in enumerate(TEXTS)]
TOLERANCE = 1e-6  # float32 rounding of differently shaped matrix products; vectors are unit


@pytest.fixture(scope="module")
def offline_module() -> Iterator[None]:
    pytest_socket.disable_socket(allow_unix_socket=True)
    yield
    pytest_socket.enable_socket()


@pytest.fixture(scope="module")
def reference(offline_module: None) -> dict[str, np.ndarray[Any, Any]]:
    """Each text embedded alone (one call at a time: no pass is shared)."""
    alone = SentenceTransformerEmbedder()
    return {
        "query": np.array([alone.embed_query(t) for t in TEXTS]),
        "document": np.array([alone.embed_documents([t])[0] for t in TEXTS]),
    }


@pytest.fixture(scope="module")
def shared(offline_module: None) -> SentenceTransformerEmbedder:
    emb = SentenceTransformerEmbedder()
    emb.load()
    return emb


def close(a: Any, b: Any) -> bool:
    return bool(np.allclose(np.asarray(a), np.asarray(b), rtol=0, atol=TOLERANCE))


def test_concurrent_threads_and_tasks_get_the_unbatched_vectors(
    shared: SentenceTransformerEmbedder, reference: dict[str, np.ndarray[Any, Any]]
) -> None:
    async def tasks() -> list[Any]:
        queries = [shared.aembed_query(t) for t in TEXTS]
        documents = [shared.aembed_documents([t]) for t in TEXTS]
        return list(await asyncio.gather(*queries, *documents))

    with ThreadPoolExecutor(8) as pool:
        threaded_q = [pool.submit(shared.embed_query, t) for t in TEXTS]
        threaded_d = pool.submit(shared.embed_documents, TEXTS)
        awaited = asyncio.run(tasks())
        assert close([f.result() for f in threaded_q], reference["query"])
        assert close(threaded_d.result(), reference["document"])
    n = len(TEXTS)
    assert close(awaited[:n], reference["query"])
    assert close([v[0] for v in awaited[n:]], reference["document"])


def test_a_worker_batching_the_real_model_matches_it_unbatched(
    shared: SentenceTransformerEmbedder, reference: dict[str, np.ndarray[Any, Any]]
) -> None:
    sizes: list[int] = []

    def encode(texts: list[str], query: bool) -> list[list[float]]:
        sizes.append(len(texts))
        return shared.embed_documents(texts)

    worker = BatchWorker(encode, max_batch=16)
    with ThreadPoolExecutor(12) as pool:
        vectors = list(pool.map(lambda t: worker.embed([t], query=True)[0], TEXTS))
    assert close(vectors, reference["query"])
    assert sum(sizes) == len(TEXTS)
    assert max(sizes) > 1  # passes were shared, and still give the unbatched vectors


def test_a_bad_request_among_concurrent_ones_fails_alone(
    shared: SentenceTransformerEmbedder, reference: dict[str, np.ndarray[Any, Any]]
) -> None:
    strict = SentenceTransformerEmbedder(too_long="error")
    long_text = "memory " * 300

    def one(i: int) -> Any:
        if i % 5 == 0:
            with pytest.raises(InvalidValueError, match="longer than the 256 word pieces"):
                strict.embed_documents([TEXTS[i], long_text])
            return None
        return strict.embed_query(TEXTS[i])

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(len(TEXTS))))
    for i, vector in enumerate(results):
        if vector is not None:
            assert close(vector, reference["query"][i])


def _embed_in_child(emb: SentenceTransformerEmbedder, text: str, out: Any) -> None:
    out.put(emb.embed_query(text))


def test_a_forked_child_gets_its_own_worker(
    shared: SentenceTransformerEmbedder, reference: dict[str, np.ndarray[Any, Any]]
) -> None:
    shared.embed_query(TEXTS[0])  # the parent's worker thread is running
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_embed_in_child, args=(shared, TEXTS[1], out))
    child.start()
    vector = out.get(timeout=300)
    child.join(60)
    assert child.exitcode == 0
    assert close(vector, reference["query"][1])
    assert close(shared.embed_query(TEXTS[2]), reference["query"][2])  # the parent goes on


def test_torch_threads_follow_the_setting_and_respect_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch

    before = torch.get_num_threads()
    try:
        SentenceTransformerEmbedder(torch_threads=1).load()
        assert torch.get_num_threads() == 1
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        torch.set_num_threads(2)
        SentenceTransformerEmbedder().load()  # the environment chose: left alone
        assert torch.get_num_threads() == 2
        monkeypatch.delenv("OMP_NUM_THREADS")
        SentenceTransformerEmbedder().load()
        assert torch.get_num_threads() == default_torch_threads()
        assert 1 <= default_torch_threads() <= max(1, (os.cpu_count() or 1) // 2)
    finally:
        torch.set_num_threads(before)
