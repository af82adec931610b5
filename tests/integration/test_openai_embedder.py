"""OpenAIEmbedder against the local stub that speaks /v1/embeddings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest

from agentmem.embeddings import CachedEmbedder, OpenAIEmbedder
from agentmem.errors import (
    DimensionMismatchError,
    LLMConnectionError,
    LLMResponseError,
    LLMTimeoutError,
)
from tests.stub_openai import (
    API_KEY,
    Delay,
    EmbeddingReply,
    ErrorStatus,
    Malformed,
    StubOpenAI,
    factory_fixtures,
    stub_embedding,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

Factory = Callable[..., OpenAIEmbedder]


stub, make, amake = factory_fixtures(
    OpenAIEmbedder, model="stub-embed", api_key=API_KEY, name="make"
)


def test_documents_are_sent_in_batches_and_returned_in_order(
    stub: StubOpenAI, make: Factory
) -> None:
    stub.enqueue(EmbeddingReply(), EmbeddingReply(), EmbeddingReply())
    emb = make(batch_size=2)
    texts = ["a", "b", "c", "d", "e"]
    assert emb.embed_documents(texts) == [stub_embedding(t, 8) for t in texts]
    assert [r.body["input"] for r in stub.requests] == [["a", "b"], ["c", "d"], ["e"]]
    request = stub.requests[0]
    assert request.path == "/v1/embeddings"
    assert request.body["model"] == "stub-embed"
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert headers["authorization"] == f"Bearer {API_KEY}"


def test_unknown_model_dimension_is_probed_once(stub: StubOpenAI, make: Factory) -> None:
    stub.enqueue(EmbeddingReply(dimension=12), EmbeddingReply(dimension=12))
    emb = make()
    assert emb.dimension == 12
    assert emb.dimension == 12
    assert len(stub.requests) == 1
    assert emb.embed_query("tabs") == stub_embedding("tabs", 12)


def test_dimensions_option_is_sent(stub: StubOpenAI, make: Factory) -> None:
    stub.enqueue(EmbeddingReply())
    emb = make(model="text-embedding-3-small", dimensions=5)
    assert emb.embed_query("tabs") == stub_embedding("tabs", 5)
    assert stub.requests[0].body["dimensions"] == 5


def test_vectors_of_the_wrong_size_are_caught(stub: StubOpenAI, make: Factory) -> None:
    stub.enqueue(EmbeddingReply(dimension=8))
    emb = make(model="text-embedding-3-small")  # known to be 1536
    with pytest.raises(DimensionMismatchError, match="length 8"):
        emb.embed_query("tabs")


def test_a_wrong_number_of_vectors_is_a_response_error(stub: StubOpenAI, make: Factory) -> None:
    stub.enqueue(EmbeddingReply(count=1))
    with pytest.raises(LLMResponseError, match="1 embeddings for 2 inputs"):
        make().embed_documents(["a", "b"])


@pytest.mark.parametrize(
    ("behaviour", "error", "pattern"),
    [
        (ErrorStatus(401, "bad key"), LLMResponseError, "HTTP 401.*check the API key"),
        (ErrorStatus(400, "too long"), LLMResponseError, "token limit"),
        (Malformed(), LLMResponseError, "not JSON|OpenAI-compatible"),
        (Delay(5.0, EmbeddingReply()), LLMTimeoutError, "did not answer within"),
    ],
)
def test_errors_are_mapped_like_the_chat_model(
    stub: StubOpenAI, make: Factory, behaviour: Any, error: type[Exception], pattern: str
) -> None:
    stub.enqueue(behaviour)
    emb = make(timeout=0.5)
    with pytest.raises(error, match=pattern) as info:
        emb.embed_query("tabs")
    assert API_KEY not in str(info.value)


def test_unreachable_server_is_a_connection_error() -> None:
    emb = OpenAIEmbedder(
        "stub-embed", base_url="http://127.0.0.1:9/v1", api_key=API_KEY, max_retries=0
    )
    with pytest.raises(LLMConnectionError, match="could not connect"):
        emb.embed_query("tabs")
    emb.close()


async def test_async_twins(stub: StubOpenAI, amake: Factory) -> None:
    stub.enqueue(EmbeddingReply(), EmbeddingReply(), EmbeddingReply())
    emb = amake(batch_size=2)
    assert await emb.aembed_documents(["a", "b", "c"]) == [stub_embedding(t, 8) for t in "abc"]
    assert await emb.aembed_query("q") == stub_embedding("q", 8)
    assert len(stub.requests) == 3


async def test_async_with_only_a_sync_client_runs_it_in_a_thread(stub: StubOpenAI) -> None:
    stub.enqueue(EmbeddingReply())
    client = openai.OpenAI(base_url=stub.base_url, api_key=API_KEY, max_retries=0)
    emb = OpenAIEmbedder("stub-embed", client=client)
    assert await emb.aembed_query("q") == stub_embedding("q", 8)
    emb.close()  # injected: left open
    client.close()


def test_cached_openai_embedder_skips_repeated_requests(stub: StubOpenAI, make: Factory) -> None:
    stub.enqueue(EmbeddingReply())
    emb = CachedEmbedder(make())
    first = emb.embed_documents(["a", "b"])
    assert emb.embed_documents(["b", "a"]) == first[::-1]
    assert len(stub.requests) == 1
