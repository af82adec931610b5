"""CachedEmbedder's memory, measured with tracemalloc, stays within its documented bounds."""

from __future__ import annotations

import gc
import random
import tracemalloc
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from agentmem.embeddings import CachedEmbedder
from agentmem.embeddings.cache import BYTES_PER_VECTOR_384, DEFAULT_MAX_BYTES
from agentmem.errors import ConfigurationError
from tests.fake_embedder import BatchEmbedder

DIM = 384


class Float32Model(BatchEmbedder):
    """Like sentence-transformers: fresh Python floats per call, from float32 arithmetic."""

    model_name, dimension = "float32-model", DIM

    def __init__(self, dimension: int = DIM) -> None:
        self.dimension = dimension
        self._rng = np.random.default_rng(0)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        rows: list[list[float]] = self._rng.standard_normal(
            (len(texts), self.dimension), dtype=np.float32
        ).tolist()
        return rows


class Float64Model(Float32Model):
    """Values float32 would round (as a JSON API's decimals may be)."""

    model_name = "float64-model"

    def __init__(self) -> None:
        super().__init__()
        self._random = random.Random(0)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[self._random.random() for _ in range(DIM)] for _ in texts]


def fill(cache: CachedEmbedder, n: int, batch: int = 100) -> None:
    for start in range(0, n, batch):
        cache.embed_documents([f"text {i}" for i in range(start, min(n, start + batch))])


def filled(inner: Any, n: int, **options: Any) -> tuple[CachedEmbedder, int]:
    """A cache over ``inner`` after ``fill(cache, n)``, and the bytes that filling allocated
    and still holds (measured with tracemalloc, after a full collection)."""
    cache = CachedEmbedder(inner, **options)
    cache.embed_documents(["warm up"])  # first-call allocations (numpy, hashlib) are not ours
    cache.cache_clear()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fill(cache, n)
        gc.collect()
        return cache, tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()


def test_memory_per_384d_vector_is_within_the_documented_bound() -> None:
    n = 2_000
    cache, measured = filled(Float32Model(), n)
    assert cache.cache_info().size == n
    assert measured / n <= BYTES_PER_VECTOR_384  # about 1.8 KiB (was 12.2 KiB as floats)
    assert measured <= cache.nbytes <= DEFAULT_MAX_BYTES  # nbytes is an upper bound


def test_float64_values_cost_more_but_are_still_bounded_by_nbytes() -> None:
    n = 1_000
    cache, measured = filled(Float64Model(), n)
    assert 3_000 < measured / n < 3_600
    assert measured <= cache.nbytes


def test_max_bytes_bounds_the_memory_held() -> None:
    budget = 200_000
    cache, measured = filled(Float32Model(), 3_000, max_bytes=budget)
    info = cache.cache_info()
    assert 0 < info.size < 3_000
    assert cache.nbytes <= budget
    assert measured <= budget
    assert budget // 2_100 <= info.size <= budget // 1_700  # about 1.9 KB counted per entry


def test_max_entries_still_bounds_the_count() -> None:
    cache = CachedEmbedder(Float32Model(), max_entries=10)
    fill(cache, 100)
    assert cache.cache_info().size == 10


def test_values_come_back_exactly_as_the_model_returned_them() -> None:
    for model in (Float32Model, Float64Model):
        expected = model().embed_documents(["a", "b"])  # seeded: a new model repeats them
        cache = CachedEmbedder(model())
        assert cache.embed_documents(["a", "b"]) == expected  # misses
        assert cache.embed_documents(["b", "a"]) == expected[::-1]  # hits
        assert all(type(x) is float for x in cache.embed_query("q"))


def test_a_vector_larger_than_max_bytes_is_returned_but_not_kept() -> None:
    cache = CachedEmbedder(Float32Model(), max_bytes=1_000)
    vectors = cache.embed_documents(["a", "b"])
    assert len(vectors) == 2
    assert all(len(v) == DIM for v in vectors)
    assert cache.cache_info().size == 0
    assert cache.nbytes == 0


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10"])
def test_bad_max_bytes_is_refused(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_bytes"):
        CachedEmbedder(Float32Model(), max_bytes=bad)


def test_model_name_and_dimension_are_the_inner_models_and_read_only() -> None:
    inner = Float32Model()
    cache = CachedEmbedder(inner)
    assert (cache.model_name, cache.dimension) == (inner.model_name, inner.dimension)
    with pytest.raises(AttributeError, match="read-only"):
        cache.dimension = 3  # type: ignore[assignment]
    assert inner.dimension != 3
