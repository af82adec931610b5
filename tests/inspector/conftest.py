"""A service on a temporary home (Qdrant Edge, SQLite) holding two users, and its
inspector, shared by the module's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmem import MemoryService
from agentmem.inspector import InspectorServer
from tests.fake_embedder import HashingEmbedder
from tests.inspector.seed import Seeded, seed

DIM = 384


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    home: Path = tmp_path_factory.mktemp("inspector-home")
    svc = MemoryService.open(home, embedder=HashingEmbedder(DIM), background=False)
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def seeded(service: MemoryService) -> Seeded:
    return seed(service)


@pytest.fixture(scope="module")
def server(service: MemoryService, seeded: Seeded) -> Iterator[InspectorServer]:
    """The read-only inspector."""
    with service.serve_inspector() as srv:
        yield srv


@pytest.fixture(scope="module")
def editor(service: MemoryService, seeded: Seeded) -> Iterator[InspectorServer]:
    """An inspector with edits allowed."""
    with service.serve_inspector(allow_edits=True) as srv:
        yield srv
