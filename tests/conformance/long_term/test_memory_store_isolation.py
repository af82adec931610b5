"""Tenant isolation, as a property: whatever the query, no hit leaves its scope.

Random memories for several users, agents and sessions are written once per backend; then
hypothesis draws scopes, filters, query vectors, boosts and page sizes, and every record
returned by search, scroll, get and count is checked against a plain-Python oracle.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.store import Boost, MemoryStore, SparseVector
from tests.conformance.long_term.memory_store_backends import (
    DIM,
    unit,
)

USERS = ("u0", "u1", "u2", "u3")
AGENTS = (None, "a0", "a1")
SESSIONS = (None, "s0", "s1")
NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)


def _population(n: int = 160) -> list[MemoryRecord]:
    rng = np.random.default_rng(42)
    out = []
    for i in range(n):
        agent = AGENTS[int(rng.integers(len(AGENTS)))]
        out.append(
            MemoryRecord.new(
                f"memory {i}",
                ("episodic", "semantic", "procedural")[i % 3],
                scope=Scope(
                    user_id=USERS[int(rng.integers(len(USERS)))],
                    agent_id=agent,
                    session_id=SESSIONS[int(rng.integers(len(SESSIONS)))] if agent else None,
                ),
                importance=float(rng.integers(0, 11)) / 10,
                created_at=NOW - timedelta(days=int(rng.integers(0, 30))),
                valid_to=NOW if i % 7 == 0 else None,
                pinned=bool(i % 5 == 0),
                subtype=("fact", "preference", None)[i % 3],
            )
        )
    return out


def _in_scope(record: MemoryRecord, scope: Scope) -> bool:
    s = record.scope
    return (
        s.user_id == scope.user_id
        and scope.agent_id in (None, s.agent_id)
        and scope.session_id in (None, s.session_id)
    )


def _matches(record: MemoryRecord, flt: RecordFilter) -> bool:
    return (
        (flt.include_history or record.is_current)
        and (not flt.memory_types or record.memory_type in flt.memory_types)
        and (not flt.subtypes or record.subtype in flt.subtypes)
        and (flt.min_importance is None or record.importance >= flt.min_importance)
        and (flt.created_after is None or record.created_at >= flt.created_after)
        and (flt.pinned is None or record.pinned == flt.pinned)
    )


scopes = st.builds(
    Scope,
    user_id=st.sampled_from((*USERS, "nobody")),
    agent_id=st.sampled_from(AGENTS),
    session_id=st.sampled_from(SESSIONS),
)
filters = st.builds(
    RecordFilter,
    memory_types=st.sampled_from(((), ("episodic",), ("semantic", "procedural"))),
    subtypes=st.sampled_from(((), ("fact",), ("preference", "fact"))),
    min_importance=st.sampled_from((None, 0.0, 0.5, 0.9)),
    created_after=st.sampled_from((None, NOW - timedelta(days=10))),
    include_history=st.booleans(),
    pinned=st.sampled_from((None, True, False)),
)
queries = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**16),
        "mode": st.sampled_from(("dense", "sparse", "hybrid")),
        "limit": st.integers(1, 40),
        "boost": st.sampled_from(
            (None, Boost(importance_weight=0.5, recency_weight=0.3, half_life_days=5, now=NOW))
        ),
    }
)


def test_no_result_ever_leaves_its_scope(memory_store: MemoryStore) -> None:
    population = _population()
    rng = np.random.default_rng(7)
    memory_store.upsert(
        population,
        [unit(rng, DIM) for _ in population],
        [SparseVector([i % 11, 20 + i % 4], [1.0, 1.0]) for i in range(len(population))],
    )
    by_id = {r.id: r for r in population}
    all_ids = list(by_id)

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(scope=scopes, flt=filters, query=queries)
    def check(scope: Scope, flt: RecordFilter, query: dict[str, object]) -> None:
        expected = {r.id for r in population if _in_scope(r, scope) and _matches(r, flt)}
        q_rng = np.random.default_rng(int(query["seed"]))  # type: ignore[call-overload]
        vectors: dict[str, object] = {}
        if query["mode"] in ("dense", "hybrid"):
            vectors["dense"] = unit(q_rng, DIM)
        if query["mode"] in ("sparse", "hybrid"):
            vectors["sparse"] = SparseVector([int(q_rng.integers(11)), 21], [1.0, 1.0])
        hits = memory_store.search(
            scope,
            filter=flt,
            limit=query["limit"],  # type: ignore[arg-type]
            boost=query["boost"],  # type: ignore[arg-type]
            **vectors,  # type: ignore[arg-type]
        )
        assert {h.record.id for h in hits} <= expected
        for hit in hits:
            assert _in_scope(hit.record, scope)
            assert hit.record == by_id[hit.record.id]
        if query["mode"] == "dense":  # dense matches every point: the top is full
            assert len(hits) == min(int(query["limit"]), len(expected))  # type: ignore[call-overload]
        page, _ = memory_store.scroll(scope, filter=flt, limit=500)
        assert {r.id for r in page} == expected
        assert memory_store.count(scope, filter=flt) == len(expected)
        got = memory_store.get(scope, all_ids)
        assert {r.id for r in got} == {i for i in all_ids if _in_scope(by_id[i], scope)}

    check()
