"""Session-wide fixtures for real services: one ``redis-server`` on a free loopback port.

Tests that use these fixtures should be marked ``pytest.mark.integration``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.redis_server import RedisServer, find_redis_server

__all__ = ["redis_server", "redis_url"]


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A ``redis-server`` (AOF, fsync always) for the whole test session, stopped at the end.

    It offers ``.url``, ``.port`` and ``.restart()`` (SIGKILL, then start again on the same
    port and directory). Skips when ``redis-server`` is not installed.
    """
    if find_redis_server() is None:
        pytest.skip(
            "redis-server is not on PATH; .ci/run installs it "
            "(locally: apt-get install redis-server)"
        )
    directory: Path = tmp_path_factory.mktemp("redis")
    server = RedisServer.start(directory)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer) -> str:
    """URL of the session's ``redis-server`` (``redis://127.0.0.1:<port>/0``)."""
    return redis_server.url
