"""The real local model, traced: the vectors of sentence-transformers' ``encode``, or no trace.

``SentenceTransformerEmbedder`` runs its forward pass traced (one call into torch) when the
trace reproduces ``encode``; these tests compare it with an embedder built with
``trace=False`` on texts of every length, alone and in shared batches, and check that a
pipeline the trace does not reproduce keeps ``encode``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
import pytest_socket
import torch

from agentmem.embeddings import SentenceTransformerEmbedder, local
from agentmem.embeddings import traced as traced_module
from agentmem.embeddings.traced import TOLERANCE, TracedPipeline, trace_pipeline

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TEXTS = [
    "ok",
    "Which indentation does the user prefer?",
    "我用 Python 写代码，缩进用制表符",
    "Alice flew to Tokyo on Friday for the planning meeting about the Kubernetes migration, "
    "which took the checkout service down for two hours and triggered a long discussion.",
    "memory " * 300,  # past the 256 word pieces the model reads: truncated alike
    "x",
    "emoji 🙂 and accents: café, naïve, Zürich",
]


@pytest.fixture(scope="module")
def embedders() -> Iterator[tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder]]:
    pytest_socket.disable_socket(allow_unix_socket=True)
    traced, eager = SentenceTransformerEmbedder(), SentenceTransformerEmbedder(trace=False)
    traced.load()
    eager.load()
    yield traced, eager
    pytest_socket.enable_socket()


def test_the_default_model_runs_traced(
    embedders: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
) -> None:
    traced, eager = embedders
    assert isinstance(traced._traced, TracedPipeline)
    assert eager._traced is None
    assert eager._worker.workers == 1  # encode() holds the GIL: passes one at a time
    assert traced._worker.workers == local._parallel_passes(torch.get_num_threads())


@pytest.mark.parametrize("kind", ["query", "documents", "batch"])
def test_traced_vectors_equal_encode(
    embedders: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder], kind: str
) -> None:
    traced, eager = embedders
    if kind == "query":
        got = [traced.embed_query(t) for t in TEXTS]
        want = [eager.embed_query(t) for t in TEXTS]
    elif kind == "documents":
        got = [traced.embed_documents([t])[0] for t in TEXTS]
        want = [eager.embed_documents([t])[0] for t in TEXTS]
    else:  # one padded pass of unequal lengths
        got, want = traced.embed_documents(TEXTS), eager.embed_documents(TEXTS)
    assert np.abs(np.asarray(got) - np.asarray(want)).max() <= 1e-6


def test_concurrent_traced_passes_equal_encode(
    embedders: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
) -> None:
    traced, eager = embedders
    texts = [f"{t} ({i})" for i, t in enumerate(TEXTS * 3)]
    with ThreadPoolExecutor(8) as pool:  # the worker shares passes among the threads
        got = list(pool.map(traced.embed_query, texts))
    want = [eager.embed_query(t) for t in texts]
    assert np.abs(np.asarray(got) - np.asarray(want)).max() <= 1e-6


def test_unnormalized_vectors_equal_encode() -> None:
    traced = SentenceTransformerEmbedder(normalize=False)
    eager = SentenceTransformerEmbedder(normalize=False, trace=False)
    got, want = traced.embed_documents(TEXTS), eager.embed_documents(TEXTS)
    assert traced._traced is not None
    assert np.abs(np.asarray(got) - np.asarray(want)).max() <= 1e-6


def _model(
    embedders: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
) -> Any:
    return embedders[1]._model


def test_a_model_with_prompts_is_not_traced(
    embedders: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _model(embedders)
    monkeypatch.setattr(model, "prompts", {"query": "query: ", "document": ""})
    assert trace_pipeline(model) is None


def test_a_pooling_the_trace_does_not_reproduce_is_not_traced(
    embedders: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _model(embedders)
    pooling = model[1]
    config = {**pooling.get_config_dict(), "pooling_mode": "max"}
    monkeypatch.setattr(pooling, "get_config_dict", lambda: config)
    assert trace_pipeline(model) is None


def test_a_gpu_device_is_not_traced(
    embedders: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
) -> None:
    assert trace_pipeline(_model(embedders), device="cuda") is None


def test_a_trace_that_differs_from_encode_is_dropped(
    embedders: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = traced_module._trace

    def off_by_a_little(module: Any, example: tuple[Any, ...]) -> Any:
        inner = real(module, example)
        return lambda *inputs: inner(*inputs) + 10 * TOLERANCE

    monkeypatch.setattr(traced_module, "_trace", off_by_a_little)
    assert trace_pipeline(_model(embedders)) is None


def test_a_failed_trace_keeps_encode(
    embedders: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def gone(module: Any, example: tuple[Any, ...]) -> Any:
        raise AttributeError("module 'torch.jit' has no attribute 'trace'")

    monkeypatch.setattr(traced_module, "_trace", gone)
    assert trace_pipeline(_model(embedders)) is None
    emb = SentenceTransformerEmbedder()
    want = embedders[1].embed_query("tabs, not spaces")
    assert np.abs(np.asarray(emb.embed_query("tabs, not spaces")) - want).max() <= 1e-6
    assert emb._traced is None


def test_the_trace_shares_the_model_weights(
    embedders: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
) -> None:
    traced = embedders[0]
    assert traced._traced is not None
    module = traced._traced._module
    weights = {p.data_ptr() for p in traced._model.parameters()}
    assert {p.data_ptr() for p in module.parameters()} <= weights  # no second copy


def test_a_trace_that_fails_later_falls_back_to_encode(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    emb, eager = SentenceTransformerEmbedder(), SentenceTransformerEmbedder(trace=False)
    emb.load()
    assert emb._traced is not None

    def broken(features: Any, *, normalize: bool) -> Any:
        raise RuntimeError("the traced graph broke")

    monkeypatch.setattr(emb._traced, "run", broken)
    with caplog.at_level("WARNING", logger="agentmem.embeddings.local"):
        got = emb.embed_query("tabs, not spaces")
    assert np.abs(np.asarray(got) - eager.embed_query("tabs, not spaces")).max() <= 1e-6
    assert emb._traced is None  # encode() from now on, one pass at a time
    assert emb._worker.workers == 1
    assert "traced forward pass failed" in caplog.text


def test_tracing_shows_no_warning_and_leaves_other_filters_alone(
    embedders: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        before = list(warnings.filters)
        assert trace_pipeline(_model(embedders)) is not None
        added = [f for f in warnings.filters if f not in before]
    assert [str(w.message) for w in caught] == []
    assert len(added) <= 3  # the trace's own warnings, narrowly (see traced._quiet_tracing)
    assert all(f[0] == "ignore" and f[2] is not Warning for f in added)
