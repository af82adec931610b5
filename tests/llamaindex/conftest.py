"""LlamaIndex integration tests run offline: no network sockets (Unix sockets stay allowed
for asyncio). Everything here is in-process: Qdrant Edge and SQLite on a temp dir."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_socket


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    pytest_socket.disable_socket(allow_unix_socket=True)
    yield
    pytest_socket.enable_socket()


@pytest.fixture(scope="session")
def _pristine_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home whose stores exist already (creating the Qdrant Edge indexes takes seconds)."""
    from tests.llamaindex._helpers import open_memory

    root = tmp_path_factory.mktemp("pristine-home")
    open_memory(root).close()
    return root


@pytest.fixture
def home(tmp_path: Path, _pristine_home: Path) -> Path:
    """A fresh, empty agentmem home for one test."""
    target = tmp_path / "home"
    shutil.copytree(_pristine_home, target)
    return target
