"""Fixtures of the long-term store conformance suite: every test runs once per backend
and mode.

* ``store_mode``: how the test's calls reach the store (param: ``sync``, ``async``): the
  store's methods, or the same calls awaiting its async twins (see ``AsyncFace``);
* ``memory_spec``: where a backend keeps its memories (param: ``memory`` =
  ``InMemoryMemoryStore``, ``edge`` on a temp dir, ``local`` = ``QdrantClient(":memory:")``,
  ``native`` = that with a (test) async client, so async twins run natively,
  ``server`` when ``QDRANT_URL`` is set: one collection per test, dropped afterwards);
* ``memory_store``: an open store of dimension ``DIM`` on that spec, closed after the test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmem.long_term.store import MemoryStore
from tests.conformance.long_term.memory_store_backends import MODES, URLS, MemorySpec


def _params() -> list[Any]:
    # Each backend named by URL (URLS), then the two on a shared qdrant-client object; like
    # langchain-qdrant's qdrant_locations(): the server only when QDRANT_URL is set.
    params: list[Any] = [name for name in URLS if name != "server"] + ["local", "native"]
    if os.environ.get("QDRANT_URL"):
        params.append(pytest.param("server", marks=pytest.mark.integration))
    return params


@pytest.fixture(params=MODES)
def store_mode(request: pytest.FixtureRequest) -> str:
    """``"sync"``: tests call the store's methods; ``"async"``: the same calls await the
    store's async twins (``search`` -> ``asearch``)."""
    return str(request.param)


@pytest.fixture(params=_params())
def memory_spec(
    request: pytest.FixtureRequest, tmp_path: Path, store_mode: str
) -> Iterator[MemorySpec]:
    spec = MemorySpec(
        request.param,
        path=tmp_path / "edge",
        url=os.environ.get("QDRANT_URL") or None,
        mode=store_mode,
    )
    yield spec
    spec.drop()


@pytest.fixture
def memory_store(memory_spec: MemorySpec) -> Iterator[MemoryStore]:
    store = memory_spec.open()
    yield store
    store.close()
