"""Fixtures of the store conformance suite: every test runs once per backend and mode.

* ``mode``: how the test's calls reach the store (param: sync, async): ``store.append(...)``
  itself, or ``await store.aappend(...)`` on a background event loop (see ``_backends``);
* ``store_spec``: where the backend keeps its data (param: each name of ``BACKENDS``, whose
  URL opens it through the store registry: memory, sqlite, redis, redis-cluster: a local
  Redis Cluster of 3 masters with replicas), and the mode;
* ``session_store``: an open store on that spec, called in that mode, closed after the test;
* ``store_factory``: the spec, for tests that open a second handle or a child process
  (skips for ``memory``, whose data lives in one object).

A backend whose URL names a fixture (``{redis_url}``, ``{redis_cluster_url}``) is an
integration test; it skips while that fixture (``tests/conftest.py``) is missing, and when
``redis-server`` (or, for the cluster, ``redis-cli``) is not installed.
"""

from __future__ import annotations

import string
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmem.stores.base import SessionStore
from agentmem.stores.registry import backend_for
from tests.conformance._backends import BACKENDS, MODES, StoreSpec


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    """``"sync"``: tests call the store's methods; ``"async"``: the same calls await the
    store's async twins (``append`` -> ``aappend``)."""
    return str(request.param)


def _fixtures(template: str) -> list[str]:
    """The fixtures a backend's URL template names (all but ``{tmp}``)."""
    return [
        name for _, name, _, _ in string.Formatter().parse(template) if name not in (None, "tmp")
    ]


@pytest.fixture(
    params=[
        pytest.param(name, marks=pytest.mark.integration) if _fixtures(url) else name
        for name, url in BACKENDS.items()
    ]
)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path, mode: str) -> StoreSpec:
    backend: str = request.param
    template = BACKENDS[backend]
    urls = {"tmp": str(tmp_path)}
    for fixture in _fixtures(template):
        try:
            urls[fixture] = str(request.getfixturevalue(fixture))
        except pytest.FixtureLookupError:
            pytest.skip(f"no {fixture} fixture (tests/conftest.py) yet")
    url = template.format(**urls)
    options: tuple[tuple[str, str], ...] = ()
    if "prefix" in backend_for("session", url)[0].options:
        # A server (the session's redis-server) is shared: each test has keys of its own.
        options = (("prefix", f"conf-{uuid.uuid4().hex[:12]}"),)
    return StoreSpec(backend, url, options, mode=mode)


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
