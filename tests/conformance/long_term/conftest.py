"""Fixtures of the long-term store conformance suite: every test runs once per backend.

* ``memory_spec``: where a backend keeps its memories (param: ``edge`` on a temp dir,
  ``local`` = ``QdrantClient(":memory:")``, ``server`` when ``QDRANT_URL`` is set: one
  collection per test, dropped afterwards);
* ``memory_store``: an open store of dimension ``DIM`` on that spec, closed after the test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmem.long_term.store import MemoryStore
from tests.conformance.long_term.memory_store_backends import MemorySpec


def _params() -> list[Any]:
    # Like langchain-qdrant's qdrant_locations(): the server only when QDRANT_URL is set.
    params: list[Any] = ["edge", "local"]
    if os.environ.get("QDRANT_URL"):
        params.append(pytest.param("server", marks=pytest.mark.integration))
    return params


@pytest.fixture(params=_params())
def memory_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemorySpec]:
    spec = MemorySpec(
        request.param, path=tmp_path / "edge", url=os.environ.get("QDRANT_URL") or None
    )
    yield spec
    spec.drop()


@pytest.fixture
def memory_store(memory_spec: MemorySpec) -> Iterator[MemoryStore]:
    store = memory_spec.open()
    yield store
    store.close()
