"""Session-wide fixtures for real services: one ``redis-server`` on a free loopback port, and
one Redis Cluster (six ``redis-server`` nodes: 3 masters, 3 replicas) started on first use.

Tests that use these fixtures should be marked ``pytest.mark.integration``.

Temporary directories live in memory (``/dev/shm``) when the machine has it with at least
4 GiB free (a container's small default tmpfs is not used): the stores
fsync on every write (Qdrant Edge on each update, Redis with ``appendfsync always``), and on
a disk that is most of a test's time (opening a Qdrant Edge store: ~1.8 s on ext4, ~0.15 s
on tmpfs). A killed process loses nothing either way (the page cache outlives it), so the
crash tests test the same thing. ``--basetemp`` or ``AGENTMEM_TEST_TMP=DIR`` choose another
place; ``AGENTMEM_TEST_TMP=`` (empty) keeps pytest's default.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.redis_cluster import RedisCluster, cluster_available
from tests.redis_server import RedisServer, find_redis_server

__all__ = ["redis_cluster", "redis_cluster_url", "redis_server", "redis_url"]

# No per-example deadline for the property tests: speed is measured in bench/, never timed
# in a test, and on a loaded 2-core machine one example of an escaping property took 529 ms
# against hypothesis's default 200 ms (a failure that says nothing about the code).
settings.register_profile("agentmem", deadline=None)
settings.load_profile("agentmem")

_ROOT = Path(__file__).resolve().parents[1]
_MEMORY_TMP = Path("/dev/shm")
# What a whole run may hold at once there (each Qdrant Edge store preallocates ~100 MB; the
# directories of passing tests are removed as they end, see tmp_path_retention_policy).
_MEMORY_TMP_MIN_FREE = 4 << 30


def _temp_root() -> str | None:
    """Where pytest's temporary directories go (``None``: pytest's default)."""
    chosen = os.environ.get("AGENTMEM_TEST_TMP")
    if chosen is not None:
        return chosen or None
    if _MEMORY_TMP.is_dir() and os.access(_MEMORY_TMP, os.W_OK | os.X_OK):
        try:  # a tmpfs mounted noexec, small or nearly full must not break the run
            tempfile.TemporaryDirectory(dir=_MEMORY_TMP).cleanup()
            stats = os.statvfs(_MEMORY_TMP)
        except OSError:
            return None
        if stats.f_bavail * stats.f_frsize >= _MEMORY_TMP_MIN_FREE:
            return str(_MEMORY_TMP)
    return None


def pytest_configure(config: pytest.Config) -> None:
    # pytest numbers, locks and prunes (keeping the last 3) its base temporary directories
    # under PYTEST_DEBUG_TEMPROOT when set, as under the system's temporary directory.
    # Under pytest-xdist the workers get their own subdirectory of the controller's.
    if config.option.basetemp is None and "PYTEST_DEBUG_TEMPROOT" not in os.environ:
        root = _temp_root()
        if root is not None:
            os.environ["PYTEST_DEBUG_TEMPROOT"] = root


def _redis_in(directory: Path) -> Iterator[RedisServer]:
    """A ``redis-server`` in ``directory`` until the generator ends; skips the test when
    ``redis-server`` is not installed."""
    if find_redis_server() is None:
        pytest.skip(
            "redis-server is not on PATH; .ci/run installs it "
            "(locally: apt-get install redis-server)"
        )
    with RedisServer.start(directory) as server:
        yield server


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A ``redis-server`` (AOF, fsync always) for the whole test session, stopped at the end.

    It offers ``.url``, ``.port`` and ``.restart()`` (SIGKILL, then start again on the same
    port and directory). Skips when ``redis-server`` is not installed.
    """
    yield from _redis_in(tmp_path_factory.mktemp("redis"))


@pytest.fixture(scope="module")
def private_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A ``redis-server`` of the requesting module's own, stopped after its last test:
    pausing (SIGSTOP), killing or restarting it cannot disturb other modules' tests. Skips
    when ``redis-server`` is not installed."""
    yield from _redis_in(tmp_path_factory.mktemp("redis-private"))


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer) -> str:
    """URL of the session's ``redis-server`` (``redis://127.0.0.1:<port>/0``)."""
    return redis_server.url


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """A local Redis Cluster for the whole test session (3 masters with one replica each, on
    loopback, ``cluster-node-timeout`` 1 s), stopped at the end. Skips when ``redis-server``
    or ``redis-cli`` is not installed.

    Tests must leave it as they found it: a test that kills nodes starts its own cluster.
    """
    missing = cluster_available()
    if missing is not None:
        pytest.skip(f"no Redis Cluster: {missing}; .ci/test installs both")
    with RedisCluster.start(tmp_path_factory.mktemp("redis-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def redis_cluster_url(redis_cluster: RedisCluster) -> str:
    """URL of the session's Redis Cluster (``redis+cluster://127.0.0.1:<port>``)."""
    return redis_cluster.url


_MODULE_SCOPED = re.compile(r"""scope=["']module["']""")


@functools.cache
def _one_worker(module: str) -> bool:
    """Whether the tests of ``module`` (a path relative to the root) must share a worker:
    it has module-scoped fixtures (an expensive setup, or module-wide state such as a fault
    report)."""
    path = _ROOT / module
    return path.suffix == ".py" and path.is_file() and bool(_MODULE_SCOPED.search(path.read_text()))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: fine without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``.ci/test`` runs on pytest-xdist workers with ``--dist loadgroup``: tests are spread one
    by one, except that each module with module-scoped fixtures runs on one worker (its setup
    runs once, its module-wide state sees all of its tests).

    xdist's own loadgroup reads ``xdist_group`` marks by renaming node ids, which pytest 9.2
    no longer honours; this scheduler groups by module path instead (the controller sees only
    node ids).
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroups(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if _one_worker(module) else nodeid

    return ModuleGroups(config, log)
