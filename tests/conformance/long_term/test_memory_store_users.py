"""``user_ids`` (the users with records in a space, read from the tenant index) and the
``superseded_by`` filter (a memory's earlier versions): what the inspector lists users and
history chains with, on every backend."""

from __future__ import annotations

import numpy as np

from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.store import MemoryStore, SparseVector
from tests.conformance.long_term.memory_store_backends import unit


def _write(store: MemoryStore, scopes: list[Scope]) -> None:
    rng = np.random.default_rng(7)
    records = [MemoryRecord.new(f"m{i}", "semantic", scope=s) for i, s in enumerate(scopes)]
    store.upsert(
        records,
        [unit(rng) for _ in records],
        [SparseVector([i], [1.0]) for i in range(len(records))],
    )


def test_user_ids_lists_each_user_of_a_space_once(memory_store: MemoryStore) -> None:
    assert memory_store.user_ids() == []  # type: ignore[attr-defined]
    _write(
        memory_store,
        [
            Scope(user_id="bob"),
            Scope(user_id="alice"),
            Scope(user_id="alice", agent_id="a1", session_id="s1"),
            Scope(user_id="carol", space="langgraph"),
        ],
    )
    assert memory_store.user_ids() == ["alice", "bob"]  # type: ignore[attr-defined]
    assert memory_store.user_ids("langgraph") == ["carol"]  # type: ignore[attr-defined]


def test_the_superseded_by_filter_finds_earlier_versions(memory_store: MemoryStore) -> None:
    rng = np.random.default_rng(3)
    alice, bob = Scope(user_id="alice"), Scope(user_id="bob")
    old = MemoryRecord.new("lives in Oslo", "semantic", scope=alice)
    new = MemoryRecord.new("lives in Bergen", "semantic", scope=alice)
    other = MemoryRecord.new("lives in Oslo", "semantic", scope=bob)
    ended = old.replace(valid_to=new.created_at, superseded_by=new.id)
    theirs = other.replace(valid_to=new.created_at, superseded_by=new.id)  # same id, bob's
    memory_store.upsert(
        [ended, new, theirs],
        [unit(rng) for _ in range(3)],
        [SparseVector([1], [1.0])] * 3,
    )
    history = RecordFilter(include_history=True, superseded_by=(new.id,))
    found, _ = memory_store.scroll(alice, filter=history)
    assert [r.id for r in found] == [old.id]
    assert memory_store.count(alice, filter=RecordFilter(superseded_by=(new.id,))) == 0
