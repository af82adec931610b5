"""The identity of an embedder (model, dimension, weights) and the record a store keeps."""

from __future__ import annotations

import pytest

from agentmem.cli.embedder import DeferredEmbedder
from agentmem.embeddings import ALL_MINILM_L6_V2_SHA256, CachedEmbedder
from agentmem.embeddings.identity import EmbedderIdentity, embedder_identity
from agentmem.errors import EmbedderMismatchError, StoreCorruptedError
from agentmem.long_term.embedder_record import EmbedderRecord, ReembedState, bind_embedder
from agentmem.stores.in_memory import InMemoryMemoryStore
from tests.fake_embedder import HashingEmbedder

WEIGHTS = "ab" * 32


class Local(HashingEmbedder):
    """A local model that knows the sha256 of its weights."""

    weights_sha256 = WEIGHTS


def test_the_default_model_is_identified_by_its_pinned_weights_without_loading() -> None:
    embedder = DeferredEmbedder()
    identity = embedder_identity(embedder)
    assert identity.fingerprint == ALL_MINILM_L6_V2_SHA256
    assert identity.dimension == 384
    assert not embedder.loaded


def test_a_cache_is_looked_through_for_the_fingerprint() -> None:
    identity = embedder_identity(CachedEmbedder(Local(8, model_name="/models/a")))
    assert identity == EmbedderIdentity("/models/a", 8, WEIGHTS)
    assert embedder_identity(CachedEmbedder(HashingEmbedder(8))).fingerprint is None


def test_same_weights_are_the_same_model_wherever_they_live() -> None:
    here = embedder_identity(Local(8, model_name="/models/a"))
    moved = embedder_identity(Local(8, model_name="/elsewhere/a"))
    assert here.same_as(moved)
    assert not here.same_as(EmbedderIdentity("/models/a", 8, "cd" * 32))  # retrained
    assert not here.same_as(EmbedderIdentity("/models/a", 16, WEIGHTS))
    remote = EmbedderIdentity("text-embedding-3-small", 1536)
    assert remote.same_as(EmbedderIdentity("text-embedding-3-small", 1536))
    assert not remote.same_as(EmbedderIdentity("text-embedding-3-large", 1536))


def test_the_record_round_trips_through_json() -> None:
    old, new = EmbedderIdentity("a", 8), EmbedderIdentity("b", 8, WEIGHTS)
    record = EmbedderRecord(
        old, ReembedState(old, new, "ann", "00000000-0000-0000-0000-0000000000aa", 7)
    )
    assert EmbedderRecord.from_json(record.to_json()) == record
    assert EmbedderRecord.from_json(EmbedderRecord().to_json()) == EmbedderRecord()


@pytest.mark.parametrize(
    "damaged",
    [
        {"format": 99},
        {"format": 1, "identity": {"model": "", "dimension": 8}, "reembed": None},
        {"format": 1, "identity": {"model": "a", "dimension": 0}, "reembed": None},
        {"format": 1, "identity": {"model": "a", "dimension": 8, "fingerprint": "x"}},
        {"format": 1, "identity": None, "reembed": {"target": None, "done": 0}},
        {"format": 1, "identity": None, "reembed": {"done": -1}},
    ],
)
def test_a_damaged_record_is_reported_not_overwritten(damaged: dict[str, object]) -> None:
    store = InMemoryMemoryStore(dimension=8)
    store.write_embedder_record(damaged)
    with pytest.raises(StoreCorruptedError, match="embedder record"):
        bind_embedder(store, HashingEmbedder(8))
    assert store.read_embedder_record() == damaged


def test_the_error_says_which_model_made_the_vectors() -> None:
    store = InMemoryMemoryStore(dimension=8)
    bind_embedder(store, Local(8, model_name="model-a"))
    with pytest.raises(EmbedderMismatchError, match="'model-a' \\(8-d, weights abababab") as caught:
        bind_embedder(store, HashingEmbedder(8, model_name="model-b"))
    assert caught.value.given == {"model": "model-b", "dimension": 8, "fingerprint": None}
    assert isinstance(caught.value, ValueError)
