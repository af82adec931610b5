"""Fixtures of the store conformance suite: every test runs once per backend and mode.

* ``mode``: how the test's calls reach the store (param: sync, async): ``store.append(...)``
  itself, or ``await store.aappend(...)`` on a background event loop (see ``_backends``);
* ``store_spec``: where the backend keeps its data (param: memory, sqlite, redis,
  redis-cluster: a local Redis Cluster of 3 masters with replicas), and the mode;
* ``session_store``: an open store on that spec, called in that mode, closed after the test;
* ``store_factory``: the spec, for tests that open a second handle or a child process
  (skips for ``memory``, whose data lives in one object).

The ``redis`` and ``redis-cluster`` params skip while ``agentmem.stores.redis`` or the
``redis_url`` / ``redis_cluster_url`` fixture (``tests/conftest.py``) is missing, and when
``redis-server`` (or, for the cluster, ``redis-cli``) is not installed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmem.stores.base import SessionStore
from tests.conformance._backends import BACKENDS, MODES, StoreSpec


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    """``"sync"``: tests call the store's methods; ``"async"``: the same calls await the
    store's async twins (``append`` -> ``aappend``)."""
    return str(request.param)


_REDIS_URL_FIXTURES = {"redis": "redis_url", "redis-cluster": "redis_cluster_url"}


@pytest.fixture(
    params=[
        pytest.param(b, marks=pytest.mark.integration) if b in _REDIS_URL_FIXTURES else b
        for b in BACKENDS
    ]
)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path, mode: str) -> StoreSpec:
    backend: str = request.param
    if backend == "sqlite":
        return StoreSpec("sqlite", str(tmp_path / "sessions.db"), mode=mode)
    if backend in _REDIS_URL_FIXTURES:
        pytest.importorskip("agentmem.stores.redis")
        fixture = _REDIS_URL_FIXTURES[backend]
        try:
            url = request.getfixturevalue(fixture)
        except pytest.FixtureLookupError:
            pytest.skip(f"no {fixture} fixture (tests/conftest.py) yet")
        return StoreSpec(backend, str(url), prefix=f"conf-{uuid.uuid4().hex[:12]}", mode=mode)
    return StoreSpec(backend, mode=mode)


@pytest.fixture
def session_store(store_spec: StoreSpec) -> Iterator[SessionStore]:
    store = store_spec.open()
    yield store
    store.close()


@pytest.fixture
def store_factory(store_spec: StoreSpec) -> StoreSpec:
    if not store_spec.reopenable:
        pytest.skip(f"{store_spec.backend} stores cannot be reopened or shared across processes")
    return store_spec
