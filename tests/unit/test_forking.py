"""The registry of locks a forked child must not inherit held (``agentmem._util.forking``)."""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import pytest

from agentmem._util import forking
from agentmem._util.forking import reset_after_fork


class _Cyclic:
    """Freed only by the garbage collector (it refers to itself), like a service's parts."""

    def __init__(self) -> None:
        self.me = self
        reset_after_fork(self, _Cyclic.reset)

    def reset(self) -> None:
        self.lock = threading.Lock()


def test_a_collection_inside_a_registration_that_frees_registered_objects_does_not_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A collection can start inside a registration (it allocates) and free objects
    # registered before, whose callbacks then take the registry's guard in the same thread.
    garbage = [_Cyclic() for _ in range(10)]
    del garbage  # registered, and freed only by a collection

    class Collecting:  # the registration's allocation starts a collection
        @staticmethod
        def ref(obj: object, callback: Any = None) -> weakref.ref[Any]:
            gc.collect()
            return weakref.ref(obj, callback)

    monkeypatch.setattr(forking, "weakref", Collecting)
    worker = threading.Thread(target=_Cyclic, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive()


def _entries_of(kind: type) -> int:
    """Registry entries of live ``kind`` objects (other objects come and go meanwhile: an
    embedder's worker thread ending frees it, on another thread)."""
    return sum(isinstance(ref(), kind) for ref, _ in list(forking._REGISTERED.values()))


def test_an_entry_goes_with_its_object() -> None:
    gc.collect()
    before = _entries_of(_Cyclic)
    objects = [_Cyclic() for _ in range(50)]
    keys = {id(o) for o in objects}
    assert _entries_of(_Cyclic) == before + 50
    assert keys <= set(forking._REGISTERED)
    del objects
    gc.collect()
    assert _entries_of(_Cyclic) == before
    registry = dict(forking._REGISTERED)
    stale = [k for k in keys if k in registry and registry[k][0]() is None]
    assert stale == []  # each entry went with its object (an id reused since is another's)
