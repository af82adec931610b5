"""QdrantClientStore options: what it refuses, and what it shares with other stores."""

from __future__ import annotations

import pytest
from qdrant_client import AsyncQdrantClient, QdrantClient
from qdrant_client import models as m

from agentmem.errors import ConfigurationError, DimensionMismatchError
from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.store import SparseVector
from agentmem.stores.qdrant.client import QdrantClientStore

BOB = Scope(user_id="bob")


def test_needs_a_client_url_or_location() -> None:
    with pytest.raises(ConfigurationError, match="client=, url= or location="):
        QdrantClientStore(dimension=4)


def test_refuses_a_local_client_with_an_async_client() -> None:
    with pytest.raises(ConfigurationError, match="never share data"):
        QdrantClientStore(
            QdrantClient(":memory:"), async_client=AsyncQdrantClient(":memory:"), dimension=4
        )


def test_refuses_a_collection_it_did_not_make() -> None:
    client = QdrantClient(":memory:")
    client.create_collection("foreign", vectors_config=m.VectorParams(size=4, distance="Cosine"))
    with pytest.raises(ConfigurationError, match="not made by agentmem"):
        QdrantClientStore(client, collection="foreign", dimension=4)


def test_two_stores_on_one_client_share_the_collection() -> None:
    client = QdrantClient(":memory:")
    first = QdrantClientStore(client, collection="mem", dimension=4)
    rec = MemoryRecord.new("likes tea", "semantic", scope=BOB)
    first.upsert([rec], [[0.0, 1.0, 0.0, 0.0]], [SparseVector([3], [1.0])])
    first.close()
    second = QdrantClientStore(client, collection="mem", dimension=4)
    assert second.get(BOB, [rec.id]) == [rec]
    with pytest.raises(DimensionMismatchError, match="4-dimensional"):
        QdrantClientStore(client, collection="mem", dimension=384)
    second.close()
    assert client.collection_exists("mem")  # an injected client stays open and usable
