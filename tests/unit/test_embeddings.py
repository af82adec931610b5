"""Embedder protocol, CachedEmbedder, framework adapters and option checks (offline)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding
from llama_index.core.embeddings import MockEmbedding

from agentmem.embeddings import (
    ALL_MINILM_L6_V2,
    ALL_MINILM_L6_V2_SHA256,
    CachedEmbedder,
    CacheInfo,
    Embedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    default_embedder,
    local,
)
from agentmem.errors import ConfigurationError, DimensionMismatchError, InvalidValueError
from langchain_agentmem import LangChainEmbedder
from llamaindex_agentmem import LlamaIndexEmbedder
from tests.fake_embedder import HashingEmbedder

BAD_TEXTS: list[Any] = ["", "   ", "\n\t", None, 3, b"bytes"]


def cached(dimension: int = 16, **kwargs: Any) -> tuple[CachedEmbedder, HashingEmbedder]:
    inner = HashingEmbedder(dimension)
    return CachedEmbedder(inner, **kwargs), inner


# -- protocol and validation ---------------------------------------------------------------


def test_every_embedder_satisfies_the_protocol() -> None:
    embedders: list[object] = [
        HashingEmbedder(),
        CachedEmbedder(HashingEmbedder()),
        LangChainEmbedder(DeterministicFakeEmbedding(size=8)),
        LlamaIndexEmbedder(MockEmbedding(embed_dim=8)),
        OpenAIEmbedder(api_key="sk-test-unused"),
        SentenceTransformerEmbedder(),  # not loaded until used
        default_embedder(),
    ]
    for embedder in embedders:
        assert isinstance(embedder, Embedder), embedder


def make_validated() -> list[Embedder]:
    return [
        CachedEmbedder(HashingEmbedder()),
        LangChainEmbedder(DeterministicFakeEmbedding(size=8)),
        LlamaIndexEmbedder(MockEmbedding(embed_dim=8)),
        OpenAIEmbedder(api_key="sk-test-unused"),  # fails before any request
        SentenceTransformerEmbedder(),  # fails before loading the model
    ]


@pytest.mark.parametrize("bad", BAD_TEXTS)
async def test_bad_texts_are_rejected_by_every_embedder(bad: Any) -> None:
    for embedder in make_validated():
        with pytest.raises(InvalidValueError):
            embedder.embed_documents(["fine", bad])
        with pytest.raises(InvalidValueError):
            embedder.embed_query(bad)
        with pytest.raises(InvalidValueError):
            await embedder.aembed_documents([bad])
        with pytest.raises(InvalidValueError):
            await embedder.aembed_query(bad)


async def test_empty_list_gives_empty_list_without_calling_the_model() -> None:
    for embedder in make_validated():
        assert embedder.embed_documents([]) == []
        assert await embedder.aembed_documents([]) == []
    emb, inner = cached()
    assert emb.embed_documents([]) == []
    assert inner.calls == []


def test_a_bare_string_is_not_embedded_per_character() -> None:
    emb, inner = cached()
    with pytest.raises(InvalidValueError, match="single string"):
        emb.embed_documents("hello")  # type: ignore[arg-type]
    assert inner.calls == []


# -- CachedEmbedder --------------------------------------------------------------------------


def test_cache_counts_hits_and_misses_and_sends_only_misses() -> None:
    emb, inner = cached()
    first = emb.embed_documents(["tabs", "spaces"])
    assert emb.cache_info() == CacheInfo(hits=0, misses=2, size=2, max_entries=100_000)
    second = emb.embed_documents(["spaces", "python", "tabs"])
    assert inner.calls == [
        ("embed_documents", ["tabs", "spaces"]),
        ("embed_documents", ["python"]),
    ]
    assert second == [first[1], inner.vector("python"), first[0]]
    assert emb.cache_info() == CacheInfo(hits=2, misses=3, size=3, max_entries=100_000)


def test_a_text_repeated_in_one_batch_is_embedded_once() -> None:
    emb, inner = cached()
    vectors = emb.embed_documents(["a b", "c", "a b", "a b"])
    assert inner.calls == [("embed_documents", ["a b", "c"])]
    assert vectors[0] == vectors[2] == vectors[3] == inner.vector("a b")
    assert emb.cache_info().misses == 2
    assert emb.cache_info().hits == 2


def test_fully_cached_batch_does_not_call_the_model() -> None:
    emb, inner = cached()
    emb.embed_documents(["x", "y"])
    emb.embed_documents(["y", "x", "y"])
    assert len(inner.calls) == 1


def test_queries_and_documents_are_cached_apart() -> None:
    emb, inner = cached()
    emb.embed_documents(["tabs"])
    emb.embed_query("tabs")
    emb.embed_query("tabs")
    assert inner.calls == [("embed_documents", ["tabs"]), ("embed_query", ["tabs"])]
    assert emb.cache_info() == CacheInfo(hits=1, misses=2, size=2, max_entries=100_000)


def test_least_recently_used_entry_is_evicted() -> None:
    emb, inner = cached(max_entries=2)
    emb.embed_documents(["a", "b"])
    emb.embed_documents(["a"])  # a is now the most recently used
    emb.embed_documents(["c"])  # evicts b
    assert emb.cache_info().size == 2
    inner.calls.clear()
    emb.embed_documents(["a", "c", "b"])
    assert inner.calls == [("embed_documents", ["b"])]


def test_mutating_a_returned_vector_does_not_corrupt_the_cache() -> None:
    emb, inner = cached()
    vector = emb.embed_query("tabs")
    vector[0] = 99.0
    assert emb.embed_query("tabs") == inner.vector("tabs")


def test_cache_clear_forgets_vectors_and_counters() -> None:
    emb, inner = cached()
    emb.embed_documents(["a"])
    emb.cache_clear()
    assert emb.cache_info() == CacheInfo(0, 0, 0, 100_000)
    emb.embed_documents(["a"])
    assert len(inner.calls) == 2


async def test_async_and_sync_share_one_cache() -> None:
    emb, inner = cached()
    sync_vectors = emb.embed_documents(["a", "b"])
    assert await emb.aembed_documents(["b", "a", "c"]) == [*sync_vectors[::-1], inner.vector("c")]
    assert await emb.aembed_query("q") == emb.embed_query("q")
    assert inner.calls == [
        ("embed_documents", ["a", "b"]),
        ("aembed_documents", ["c"]),
        ("aembed_query", ["q"]),
    ]


def test_cache_reports_the_inner_model_and_dimension() -> None:
    emb = CachedEmbedder(HashingEmbedder(24, model_name="m1"))
    assert (emb.model_name, emb.dimension) == ("m1", 24)


def test_cache_rejects_an_inner_that_returns_the_wrong_number_of_vectors() -> None:
    class Short(HashingEmbedder):
        def embed_documents(self, texts: Any) -> list[list[float]]:
            return super().embed_documents(texts)[:-1]

    with pytest.raises(ConfigurationError, match="one vector per text"):
        CachedEmbedder(Short()).embed_documents(["a", "b"])


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10"])
def test_cache_rejects_bad_max_entries(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_entries"):
        CachedEmbedder(HashingEmbedder(), max_entries=bad)


def test_cache_rejects_a_non_embedder() -> None:
    with pytest.raises(ConfigurationError, match="Embedder protocol"):
        CachedEmbedder(object())  # type: ignore[arg-type]


words = st.sampled_from(["tabs", "spaces", "python", "北京", "cafe", "x y", "tabs spaces"])


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(st.lists(words, max_size=6), max_size=5), max_entries=st.integers(1, 4))
def test_cached_vectors_always_equal_the_inner_ones(
    batches: list[list[str]], max_entries: int
) -> None:
    emb, inner = cached(max_entries=max_entries)
    total = 0
    for batch in batches:
        assert emb.embed_documents(batch) == [inner.vector(t) for t in batch]
        total += len(batch)
    info = emb.cache_info()
    assert info.hits + info.misses == total
    assert info.size <= max_entries
    assert len(inner.texts_embedded()) == info.misses


def test_concurrent_callers_get_correct_vectors() -> None:
    emb, inner = cached(max_entries=50)
    texts = [f"text {i % 40}" for i in range(200)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def work(offset: int) -> None:
        try:
            barrier.wait()
            for start in range(offset, len(texts), 7):
                batch = texts[start : start + 5]
                assert emb.embed_documents(batch) == [inner.vector(t) for t in batch]
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    info = emb.cache_info()
    assert info.size <= 50
    assert info.hits + info.misses == sum(
        len(texts[s : s + 5]) for i in range(8) for s in range(i, len(texts), 7)
    )


async def test_concurrent_async_callers_get_correct_vectors() -> None:
    emb, inner = cached()
    batches = [[f"t{i}", f"t{i + 1}", "shared"] for i in range(20)]
    results = await asyncio.gather(*(emb.aembed_documents(b) for b in batches))
    for batch, vectors in zip(batches, results, strict=True):
        assert vectors == [inner.vector(t) for t in batch]


# -- LangChain and LlamaIndex adapters -------------------------------------------------------


async def test_langchain_adapter_matches_the_wrapped_embeddings() -> None:
    fake = DeterministicFakeEmbedding(size=12)
    emb = LangChainEmbedder(fake)
    texts = ["I only write Python", "tabs, not spaces"]
    assert emb.embed_documents(texts) == fake.embed_documents(texts)
    assert emb.embed_query("tabs?") == fake.embed_query("tabs?")
    assert await emb.aembed_documents(texts) == fake.embed_documents(texts)
    assert await emb.aembed_query("tabs?") == fake.embed_query("tabs?")
    assert emb.dimension == 12
    assert emb.model_name.startswith("langchain:DeterministicFakeEmbedding")


async def test_llamaindex_adapter_matches_the_wrapped_model() -> None:
    mock = MockEmbedding(embed_dim=6)
    emb = LlamaIndexEmbedder(mock)
    assert emb.dimension == 6
    assert emb.embed_documents(["a", "b"]) == mock.get_text_embedding_batch(["a", "b"])
    assert emb.embed_query("q") == mock.get_query_embedding("q")
    assert await emb.aembed_documents(["a"]) == [mock.get_text_embedding("a")]
    assert await emb.aembed_query("q") == mock.get_query_embedding("q")
    assert emb.model_name.startswith("llamaindex:MockEmbedding")


async def test_adapters_use_the_frameworks_async_methods() -> None:
    class Recording(DeterministicFakeEmbedding):
        async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[7.0] * self.size for _ in texts]

        async def aembed_query(self, text: str) -> list[float]:
            return [8.0] * self.size

    emb = LangChainEmbedder(Recording(size=2))
    assert await emb.aembed_documents(["a"]) == [[7.0, 7.0]]
    assert await emb.aembed_query("a") == [8.0, 8.0]


def test_a_wrong_declared_dimension_is_caught() -> None:
    emb = LangChainEmbedder(DeterministicFakeEmbedding(size=8), dimension=16)
    with pytest.raises(DimensionMismatchError, match=r"length 8.*expected 16"):
        emb.embed_query("hello")
    llama = LlamaIndexEmbedder(MockEmbedding(embed_dim=4), dimension=5)
    with pytest.raises(DimensionMismatchError):
        llama.embed_documents(["hello"])


def test_adapters_reject_the_wrong_framework_object() -> None:
    with pytest.raises(ConfigurationError, match="LlamaIndexEmbedder"):
        LangChainEmbedder(MockEmbedding(embed_dim=4))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="LangChainEmbedder"):
        LlamaIndexEmbedder(DeterministicFakeEmbedding(size=4))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="dimension"):
        LangChainEmbedder(DeterministicFakeEmbedding(size=4), dimension=0)


def test_adapters_compose_with_the_cache() -> None:
    fake = DeterministicFakeEmbedding(size=8)
    emb = CachedEmbedder(LangChainEmbedder(fake))
    assert emb.embed_documents(["a", "a", "b"]) == fake.embed_documents(["a", "a", "b"])
    assert emb.cache_info().misses == 2


# -- option checks (no model, no network) ----------------------------------------------------


def test_openai_dimension_is_known_for_openai_models_without_a_request() -> None:
    assert OpenAIEmbedder("text-embedding-3-small", api_key="sk-x").dimension == 1536
    assert OpenAIEmbedder("text-embedding-3-large", api_key="sk-x").dimension == 3072
    shortened = OpenAIEmbedder("text-embedding-3-large", api_key="sk-x", dimensions=256)
    assert shortened.dimension == 256
    assert shortened.model_name == "openai:text-embedding-3-large@256"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_size": 0},
        {"batch_size": 4096},
        {"dimensions": 0},
        {"timeout": 0},
        {"max_retries": -1},
        {"model": ""},
    ],
)
def test_openai_rejects_bad_options(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        OpenAIEmbedder(api_key="sk-x", **kwargs)


def test_local_defaults_need_no_model_load() -> None:
    emb = SentenceTransformerEmbedder()
    assert emb.model_name == ALL_MINILM_L6_V2
    assert "SentenceTransformerEmbedder" in repr(emb)


@pytest.mark.parametrize(
    "kwargs", [{"batch_size": 0}, {"too_long": "drop"}, {"expected_sha256": "abc"}]
)
def test_local_rejects_bad_options(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        SentenceTransformerEmbedder(**kwargs)


def test_local_rejects_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="local directories only"):
        SentenceTransformerEmbedder(tmp_path / "nope")


def test_local_custom_model_needs_a_hash_or_an_explicit_opt_out(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="expected_sha256"):
        SentenceTransformerEmbedder(tmp_path)
    SentenceTransformerEmbedder(tmp_path, verify_sha256=False)  # allowed when asked


def test_local_missing_weights_fail_on_load_naming_the_file(tmp_path: Path) -> None:
    emb = SentenceTransformerEmbedder(tmp_path, expected_sha256=ALL_MINILM_L6_V2_SHA256)
    with pytest.raises(ConfigurationError, match=r"model\.safetensors.*missing"):
        emb.load()


def test_local_wrong_weights_are_refused_with_both_hashes(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"not the weights")
    emb = SentenceTransformerEmbedder(tmp_path, expected_sha256=ALL_MINILM_L6_V2_SHA256)
    with pytest.raises(ConfigurationError) as info:
        emb.embed_query("hello")
    message = str(info.value)
    assert ALL_MINILM_L6_V2_SHA256 in message
    assert "refusing to load" in message
    assert hashlib.sha256(b"not the weights").hexdigest() in message


class _Vectors(list[list[float]]):
    def tolist(self) -> list[list[float]]:  # as a numpy array
        return list(self)


class _HeldModel:
    """Stands in for a loaded sentence-transformers model: ``[len(text)]`` per text. In the
    process that made it, every encode waits for ``release`` (a forward pass in progress);
    in a forked child it answers at once."""

    max_seq_length = 256

    def __init__(self) -> None:
        self.prompts: dict[str, str] = {}
        self.parent = os.getpid()
        self.entered = threading.Event()
        self.release = threading.Event()

    def __iter__(self) -> Any:  # its modules: no Router
        return iter(())

    def encode(self, texts: list[str], **kwargs: Any) -> _Vectors:
        if os.getpid() == self.parent:
            self.entered.set()
            self.release.wait(30)
        return _Vectors([[float(len(t))] for t in texts])


def exit_code_of_forked(child: Callable[[], bool], seconds: float = 20.0) -> int:
    """Fork; the child runs ``child()`` on a thread for ``seconds`` at most and exits with
    0 if it returned True, 1 if it returned False or raised, 3 if it did not return (a
    deadlock). Returns the child's exit code."""
    pid = os.fork()
    if pid == 0:  # the child: always leaves through os._exit, never back into pytest
        code = 4
        try:
            outcome: list[bool] = []
            thread = threading.Thread(target=lambda: outcome.append(child()), daemon=True)
            thread.start()
            thread.join(seconds)
            code = 3 if thread.is_alive() else 0 if outcome == [True] else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork()")
# Python 3.12+ warns when a process with threads forks: these tests do it on purpose.
forks_threads = pytest.mark.filterwarnings(
    r"ignore:This process \(pid=\d+\) is multi-threaded:DeprecationWarning"
)


@needs_fork
@forks_threads
def test_a_child_forked_during_a_forward_pass_can_embed(tmp_path: Path) -> None:
    emb = SentenceTransformerEmbedder(tmp_path, verify_sha256=False)
    model = _HeldModel()
    emb._model = model  # loaded: no weights needed
    with ThreadPoolExecutor(1) as pool:
        parent = pool.submit(emb.embed_query, "parent")
        assert model.entered.wait(10)  # the worker thread is in the pass, its lock held
        try:
            code = exit_code_of_forked(lambda: emb.embed_query("child") == [5.0])
        finally:
            model.release.set()
        assert parent.result(10) == [6.0]
    assert code == 0  # 3: the child's pass waited for the lock of the parent's


@needs_fork
@forks_threads
def test_a_child_forked_during_a_model_load_can_load_and_embed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emb = SentenceTransformerEmbedder(tmp_path, verify_sha256=False)
    model = _HeldModel()
    loading = threading.Event()
    release = threading.Event()
    parent = os.getpid()

    def build() -> _HeldModel:  # holds what a real load holds, in the parent until released
        with local._QUIET_LOCK:
            if os.getpid() == parent:
                loading.set()
                release.wait(30)
            return model

    monkeypatch.setattr(emb, "_build", build)
    with ThreadPoolExecutor(1) as pool:
        load = pool.submit(emb.load)
        assert loading.wait(10)  # the load lock and the process-wide one are held
        try:
            code = exit_code_of_forked(lambda: emb.embed_query("child") == [5.0])
        finally:
            release.set()
        load.result(10)
    assert code == 0  # 3: the child's load waited for the locks of the parent's


@needs_fork
@forks_threads
def test_a_child_forked_while_the_default_embedder_is_made_gets_one() -> None:
    with local._DEFAULTS_LOCK:  # another thread is in default_embedder()
        code = exit_code_of_forked(
            lambda: default_embedder(max_entries=7).model_name == ALL_MINILM_L6_V2
        )
    assert code == 0


@needs_fork
@forks_threads
def test_a_child_forked_during_a_cache_lookup_can_embed() -> None:
    emb, _ = cached()
    with emb._lock:  # another thread is in a lookup
        code = exit_code_of_forked(lambda: len(emb.embed_query("child")) == 16)
    assert code == 0  # 3: the child's lookup waited for the lock of the parent's


def test_isinstance_check_never_calls_the_model() -> None:
    class Exploding(DeterministicFakeEmbedding):
        def embed_query(self, text: str) -> list[float]:
            raise RuntimeError("the model was called")

    emb = LangChainEmbedder(Exploding(size=4))
    assert isinstance(emb, Embedder)
    assert isinstance(CachedEmbedder(emb), Embedder)
    with pytest.raises(RuntimeError, match="model was called"):
        _ = emb.dimension  # probing is what calls it
