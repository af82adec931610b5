"""One suite every long-term store passes, called in sync and in async mode: the in-memory
store, Qdrant Edge, qdrant-client local mode, a server.

Data is built here (random unit vectors, hand-made sparse vectors) so the expected order of
every search is known without an embedder.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from agentmem._sansio import drive
from agentmem.errors import (
    DimensionMismatchError,
    InvalidValueError,
    MemoryNotFoundError,
    StoreClosedError,
)
from agentmem.long_term._fusion import fused_search_program
from agentmem.long_term.ranking import RankingConfig, fusion_plan
from agentmem.long_term.records import MemoryRecord, RecordFilter, Relation, Scope
from agentmem.long_term.store import Boost, FusionPlan, MemoryStore, SparseVector
from tests.conformance.long_term.memory_store_backends import (
    DIM,
    AsyncFace,
    MemorySpec,
    mem,
    put,
    sparse_of,
    unit,
)

ALICE = Scope(user_id="alice")
NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)
E0 = [1.0] + [0.0] * (DIM - 1)


def axis(*weights: float) -> list[float]:
    v = np.zeros(DIM)
    v[: len(weights)] = weights
    return [float(x) for x in v / np.linalg.norm(v)]


def contents(records: list[MemoryRecord]) -> list[str]:
    return [r.content for r in records]


# -- CRUD -------------------------------------------------------------------------------


def test_upsert_then_get_returns_equal_records_in_id_order(memory_store: MemoryStore) -> None:
    recs = put(
        memory_store,
        [
            mem("a", subtype="fact", importance=0.9, concept="tea", metadata={"k": 1}),
            mem("b", relations=(Relation(predicate="likes", target="green tea"),)),
            mem("c", last_accessed_at=NOW, access_count=3, source_message_ids=("m1",)),
        ],
    )
    ids = [recs[2].id, recs[0].id, recs[1].id]
    assert memory_store.get(ALICE, ids) == [recs[2], recs[0], recs[1]]


def test_get_skips_missing_and_out_of_scope_ids(memory_store: MemoryStore) -> None:
    a, b = put(memory_store, [mem("a"), mem("b", user="bob")])
    missing = "00000000-0000-4000-8000-000000000000"
    assert memory_store.get(ALICE, [missing, b.id, a.id]) == [a]


def test_get_vectors_returns_the_stored_dense_vectors_in_scope(memory_store: MemoryStore) -> None:
    vectors = [axis(1.0), axis(0.0, 1.0), axis(1.0, 1.0)]
    a, b, c = put(memory_store, [mem("a"), mem("b"), mem("c", user="bob")], vectors)
    missing = "00000000-0000-4000-8000-000000000000"
    got = memory_store.get_vectors(ALICE, [b.id, missing, c.id, a.id])
    assert set(got) == {a.id, b.id}
    for record, expected in ((a, vectors[0]), (b, vectors[1])):
        assert np.allclose(got[record.id], expected, atol=1e-6)
    assert memory_store.get_vectors(ALICE, []) == {}


def test_set_fields_each_patches_each_record_with_its_own_fields(
    memory_store: MemoryStore,
) -> None:
    # Not in the MemoryStore protocol: the stores here offer it for recording accesses.
    a, b, c, d = put(memory_store, [mem("a"), mem("b"), mem("c"), mem("d", user="bob")])
    each = memory_store.set_fields_each  # type: ignore[attr-defined]
    each(
        ALICE,
        [(a.id, {"access_count": 5}), (b.id, {"access_count": 2, "pinned": True}), (c.id, {})],
    )
    got = {r.id: r for r in memory_store.get(ALICE, [a.id, b.id, c.id])}
    assert (got[a.id].access_count, got[a.id].pinned) == (5, False)
    assert (got[b.id].access_count, got[b.id].pinned) == (2, True)
    assert got[c.id] == c
    # Another scope's id (or one deleted since a search found it) is skipped: a crafted
    # id never reaches another tenant, and a concurrent delete does not fail the write.
    memory_store.delete(ALICE, [c.id])
    each(
        ALICE, [(a.id, {"access_count": 9}), (d.id, {"access_count": 9}), (c.id, {"pinned": True})]
    )
    assert memory_store.get(ALICE, [a.id])[0].access_count == 9
    assert memory_store.get(Scope(user_id="bob"), [d.id]) == [d]
    assert memory_store.get(ALICE, [c.id]) == []
    with pytest.raises(InvalidValueError):
        each(ALICE, [(a.id, {"access_count": 1}), (b.id, {"access_count": -1})])
    assert memory_store.get(ALICE, [a.id])[0].access_count == 9  # nothing changed


def test_upsert_replaces_a_record_with_the_same_id(memory_store: MemoryStore) -> None:
    (a,) = put(memory_store, [mem("old text")])
    put(memory_store, [a.replace(content="new text")])
    assert contents(memory_store.get(ALICE, [a.id])) == ["new text"]
    assert memory_store.count(ALICE) == 1


def test_delete_counts_only_records_in_scope(memory_store: MemoryStore) -> None:
    a, b, c = put(memory_store, [mem("a"), mem("b"), mem("c", user="bob")])
    assert memory_store.delete(ALICE, [a.id, c.id]) == 1
    assert memory_store.get(ALICE, [a.id, b.id]) == [b]
    assert memory_store.count(Scope(user_id="bob")) == 1
    assert memory_store.delete(ALICE, [a.id]) == 0


def test_scroll_pages_cover_everything_once(memory_store: MemoryStore) -> None:
    recs = put(memory_store, [mem(f"m{i}") for i in range(11)] + [mem("other", user="bob")])
    seen: list[str] = []
    offset = None
    for _ in range(10):
        page, offset = memory_store.scroll(ALICE, limit=4, offset=offset)
        assert len(page) <= 4
        seen += [r.id for r in page]
        if offset is None:
            break
    assert sorted(seen) == sorted(r.id for r in recs[:11])


@pytest.mark.parametrize("order_by", ["created_ts", "last_accessed_ts"])
def test_scroll_order_by_is_newest_first_across_pages(
    memory_store: MemoryStore, order_by: str
) -> None:
    # Two pairs share a timestamp, so pages must split ties without losing or repeating.
    moments = [NOW - timedelta(days=d) for d in (0, 1, 1, 2, 3, 3, 3, 5)]
    field = "created_at" if order_by == "created_ts" else "last_accessed_at"
    recs = [mem(f"m{i}", **{field: t}) for i, t in enumerate(moments)]
    never = [mem("never accessed")] if order_by == "last_accessed_ts" else []
    put(memory_store, recs + never)
    seen: list[MemoryRecord] = []
    offset = None
    for _ in range(10):
        page, offset = memory_store.scroll(ALICE, limit=3, offset=offset, order_by=order_by)  # type: ignore[arg-type]
        seen += page
        if offset is None:
            break
    assert sorted(r.id for r in seen) == sorted(r.id for r in recs)
    stamps = [getattr(r, field) for r in seen]
    assert stamps == sorted(stamps, reverse=True)


def test_count_follows_filter_and_scope(memory_store: MemoryStore) -> None:
    put(memory_store, [mem("a", importance=0.9), mem("b", importance=0.1), mem("c", user="bob")])
    assert memory_store.count(ALICE) == 2
    assert memory_store.count(ALICE, filter=RecordFilter(min_importance=0.5)) == 1


def likes(target: str) -> Relation:
    return Relation(predicate="likes", target=target)


def test_count_by_counts_each_value_in_one_pass(memory_store: MemoryStore) -> None:
    put(
        memory_store,
        [
            mem("a", subtype="fact", relations=(likes("tea"), likes("oslo"))),
            mem("b", subtype="fact", relations=(likes("tea"),)),
            mem("c", subtype="preference", importance=0.2),
            mem("d", memory_type="episodic"),
            mem("e", subtype="fact", user="bob"),
        ],
    )
    assert memory_store.count_by(ALICE, "memory_type") == {"semantic": 3, "episodic": 1}
    # Records without the field are in no entry; the most frequent value comes first.
    assert list(memory_store.count_by(ALICE, "subtype").items()) == [
        ("fact", 2),
        ("preference", 1),
    ]
    assert memory_store.count_by(ALICE, "related_concepts") == {"tea": 2, "oslo": 1}
    important = RecordFilter(min_importance=0.5, memory_types=("semantic",))
    assert memory_store.count_by(ALICE, "subtype", filter=important) == {"fact": 2}
    assert memory_store.count_by(ALICE, "subtype", limit=1) == {"fact": 2}
    assert memory_store.count_by(Scope(user_id="carol"), "subtype") == {}
    with pytest.raises(InvalidValueError, match="count_by counts one of"):
        memory_store.count_by(ALICE, "content_hash")
    with pytest.raises(InvalidValueError, match="limit"):
        memory_store.count_by(ALICE, "subtype", limit=0)


# -- scope ------------------------------------------------------------------------------


def test_agent_and_session_narrow_every_operation(memory_store: MemoryStore) -> None:
    rng = np.random.default_rng(3)
    recs = put(
        memory_store,
        [
            mem("user-wide"),
            mem("agent x", agent_id="x"),
            mem("agent x s1", agent_id="x", session_id="s1"),
            mem("agent y", agent_id="y"),
        ],
    )
    ids = [r.id for r in recs]
    x = Scope(user_id="alice", agent_id="x")
    xs1 = Scope(user_id="alice", agent_id="x", session_id="s1")
    assert sorted(contents(memory_store.get(x, ids))) == ["agent x", "agent x s1"]
    assert contents(memory_store.get(xs1, ids)) == ["agent x s1"]
    assert memory_store.count(ALICE) == 4
    assert memory_store.count(x) == 2
    assert sorted(contents(memory_store.scroll(x)[0])) == ["agent x", "agent x s1"]
    hits = memory_store.search(xs1, dense=unit(rng), limit=10)
    assert [h.record.content for h in hits] == ["agent x s1"]
    with pytest.raises(MemoryNotFoundError):
        memory_store.set_fields(x, [recs[3].id], {"pinned": True})
    assert memory_store.delete(x, [recs[3].id]) == 0
    assert memory_store.count(ALICE) == 4


# -- filters ----------------------------------------------------------------------------

FILTERS = {
    "memory_types": (RecordFilter(memory_types=("episodic",)), {"ep"}),
    "subtypes": (RecordFilter(subtypes=("fact", "event")), {"fact", "ep"}),
    "min_importance": (RecordFilter(min_importance=0.7), {"pinned", "fact"}),
    "created_after": (RecordFilter(created_after=NOW - timedelta(days=2)), {"fact", "new"}),
    "created_before": (
        RecordFilter(created_before=NOW - timedelta(days=2)),
        {"pinned", "ep", "meta", "concept"},
    ),
    "include_history": (RecordFilter(include_history=True), None),
    "concepts": (RecordFilter(concepts=("tea",)), {"concept"}),
    "related_to": (RecordFilter(related_to=("green tea",)), {"concept"}),
    "pinned_true": (RecordFilter(pinned=True), {"pinned"}),
    "pinned_false": (RecordFilter(pinned=False), {"fact", "ep", "meta", "concept", "new"}),
    "metadata": (RecordFilter(metadata={"lang": "py", "n": 2}), {"meta"}),
}


def _filter_data() -> list[MemoryRecord]:
    old = NOW - timedelta(days=10)
    return [
        mem("pinned", pinned=True, importance=0.9, created_at=old),
        mem("fact", subtype="fact", importance=0.8, created_at=NOW),
        mem("ep", memory_type="episodic", subtype="event", importance=0.2, created_at=old),
        mem("meta", metadata={"lang": "py", "n": 2}, created_at=old),
        mem("meta-other", metadata={"lang": "py", "n": 3}, created_at=old, valid_to=old),
        mem(
            "concept",
            concept="tea",
            relations=(Relation(predicate="likes", target="green tea"),),
            created_at=old,
        ),
        mem("new", created_at=NOW - timedelta(days=1)),
        mem("ended", created_at=old, valid_to=NOW, superseded_by=None),
    ]


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_every_filter_field(memory_store: MemoryStore, name: str) -> None:
    data = put(memory_store, _filter_data())
    flt, expected = FILTERS[name]
    if expected is None:
        expected = {r.content for r in data}
    got_scroll = {r.content for r in memory_store.scroll(ALICE, filter=flt)[0]}
    got_search = {
        h.record.content for h in memory_store.search(ALICE, dense=E0, filter=flt, limit=50)
    }
    assert got_scroll == expected
    assert got_search == expected
    assert memory_store.count(ALICE, filter=flt) == len(expected)


def test_ids_filter_keeps_only_those_ids(memory_store: MemoryStore) -> None:
    recs = put(memory_store, [mem(f"m{i}") for i in range(5)])
    flt = RecordFilter(ids=(recs[1].id, recs[3].id))
    assert sorted(contents(memory_store.scroll(ALICE, filter=flt)[0])) == ["m1", "m3"]
    assert {h.record.content for h in memory_store.search(ALICE, dense=E0, filter=flt)} == {
        "m1",
        "m3",
    }


def test_history_is_hidden_by_default_but_get_returns_it(memory_store: MemoryStore) -> None:
    old, new = put(memory_store, [mem("lives in Paris"), mem("lives in Berlin")])
    memory_store.set_fields(ALICE, [old.id], {"valid_to": NOW, "superseded_by": new.id})
    assert contents(memory_store.scroll(ALICE)[0]) == ["lives in Berlin"]
    assert [h.record.content for h in memory_store.search(ALICE, dense=E0)] == ["lives in Berlin"]
    everything = memory_store.scroll(ALICE, filter=RecordFilter(include_history=True))[0]
    assert len(everything) == 2
    (back,) = memory_store.get(ALICE, [old.id])
    assert (back.valid_to, back.superseded_by, back.is_current) == (NOW, new.id, False)


# -- set_fields -------------------------------------------------------------------------


def test_set_fields_patches_payload_and_keeps_vectors(memory_store: MemoryStore) -> None:
    (a,) = put(memory_store, [mem("a", metadata={"x": 1})], dense=[E0])
    memory_store.set_fields(
        ALICE,
        [a.id],
        {"importance": 0.2, "access_count": 4, "last_accessed_at": NOW, "metadata": {"y": 2}},
    )
    (b,) = memory_store.get(ALICE, [a.id])
    assert (b.importance, b.access_count, b.last_accessed_at, b.metadata) == (0.2, 4, NOW, {"y": 2})
    assert b.content == a.content
    (hit,) = memory_store.search(ALICE, dense=E0)
    assert hit.score == pytest.approx(1.0, abs=1e-5)
    page, _ = memory_store.scroll(ALICE, order_by="last_accessed_ts")
    assert [r.id for r in page] == [a.id]
    memory_store.set_fields(ALICE, [a.id], {"last_accessed_at": None})
    assert memory_store.get(ALICE, [a.id])[0].last_accessed_at is None
    assert memory_store.scroll(ALICE, order_by="last_accessed_ts")[0] == []


@pytest.mark.parametrize(
    "fields",
    [{"importance": math.nan}, {"importance": 2.0}, {"content": "x"}, {"access_count": -1}],
)
def test_set_fields_rejects_bad_values_and_changes_nothing(
    memory_store: MemoryStore, fields: dict[str, object]
) -> None:
    a, b = put(memory_store, [mem("a"), mem("b")])
    with pytest.raises(InvalidValueError):
        memory_store.set_fields(ALICE, [a.id, b.id], fields)
    assert memory_store.get(ALICE, [a.id, b.id]) == [a, b]


def test_set_fields_on_a_missing_id_changes_nothing(memory_store: MemoryStore) -> None:
    (a,) = put(memory_store, [mem("a")])
    missing = "00000000-0000-4000-8000-000000000001"
    with pytest.raises(MemoryNotFoundError, match=missing):
        memory_store.set_fields(ALICE, [a.id, missing], {"pinned": True})
    assert memory_store.get(ALICE, [a.id]) == [a]


# -- ranking ----------------------------------------------------------------------------


def test_dense_ranks_by_cosine(memory_store: MemoryStore) -> None:
    put(
        memory_store,
        [mem("opposite"), mem("same"), mem("orthogonal"), mem("close")],
        dense=[axis(-1), axis(1), axis(0, 1), axis(1, 1)],
    )
    hits = memory_store.search(ALICE, dense=E0, limit=4)
    assert [h.record.content for h in hits] == ["same", "close", "orthogonal", "opposite"]
    assert [h.score for h in hits] == pytest.approx([1.0, math.sqrt(0.5), 0.0, -1.0], abs=1e-4)


def test_sparse_ranks_by_bm25_and_skips_non_matching(memory_store: MemoryStore) -> None:
    put(
        memory_store,
        [mem("one term"), mem("no match"), mem("both terms"), mem("common only")],
        sparse=[sparse_of(6), sparse_of(9), sparse_of(5, 6), sparse_of(5)],
    )
    # Term 6 is in 2 docs, term 5 in 2: "both terms" matches both, the others one each.
    hits = memory_store.search(ALICE, sparse=sparse_of(5, 6), limit=10)
    names = [h.record.content for h in hits]
    assert names[0] == "both terms"
    assert set(names) == {"both terms", "one term", "common only"}


def test_hybrid_fuses_ranks_with_rrf(memory_store: MemoryStore) -> None:
    put(
        memory_store,
        [mem("X"), mem("Y"), mem("Z")],
        dense=[axis(1, 0.5), axis(1), axis(1, 2)],  # dense: Y, X, Z
        sparse=[sparse_of(5, 6), sparse_of(99), sparse_of(5)],  # sparse: X, Z
    )
    dense_only = memory_store.search(ALICE, dense=E0)
    assert [h.record.content for h in dense_only] == ["Y", "X", "Z"]
    hits = memory_store.search(ALICE, dense=E0, sparse=sparse_of(5, 6), explain=True)
    assert [h.record.content for h in hits] == ["X", "Z", "Y"]
    # RRF with k=2: 1/(rank+1) per list.
    assert [h.score for h in hits] == pytest.approx([1 / 3 + 1 / 2, 1 / 4 + 1 / 3, 1 / 2])
    x = hits[0].components
    assert (x["dense_rank"], x["sparse_rank"]) == (2.0, 1.0)
    assert x["fused"] == pytest.approx(hits[0].score)


def test_importance_boost_reorders_as_the_formula_says(memory_store: MemoryStore) -> None:
    put(
        memory_store,
        [mem("close, unimportant", importance=0.0), mem("further, important", importance=1.0)],
        dense=[axis(1, 0.3), axis(1, 0.6)],
    )
    plain = memory_store.search(ALICE, dense=E0)
    assert plain[0].record.content == "close, unimportant"
    boosted = memory_store.search(
        ALICE, dense=E0, boost=Boost(importance_weight=0.5, now=NOW), explain=True
    )
    assert boosted[0].record.content == "further, important"
    cos = {h.record.content: h.score for h in plain}
    for hit in boosted:
        expected = cos[hit.record.content] + 0.5 * hit.record.importance
        assert hit.score == pytest.approx(expected, abs=1e-4)


def test_recency_boost_decays_with_age_since_last_access(memory_store: MemoryStore) -> None:
    old = NOW - timedelta(days=60)
    a, _ = put(
        memory_store,
        [mem("old but closer", created_at=old), mem("fresh", created_at=NOW)],
        dense=[axis(1, 0.3), axis(1, 0.6)],
    )
    boost = Boost(recency_weight=1.0, half_life_days=30, now=NOW)
    hits = memory_store.search(ALICE, dense=E0, boost=boost, explain=True)
    assert [h.record.content for h in hits] == ["fresh", "old but closer"]
    old_hit = hits[1]
    assert old_hit.components["recency_boost"] == pytest.approx(0.25)
    assert old_hit.score == pytest.approx(old_hit.components["dense"] + 0.25, abs=1e-4)
    memory_store.set_fields(ALICE, [a.id], {"last_accessed_at": NOW})
    hits = memory_store.search(ALICE, dense=E0, boost=boost)
    assert [h.record.content for h in hits] == ["old but closer", "fresh"]


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid"])
def test_explain_components_add_up_to_the_score(memory_store: MemoryStore, mode: str) -> None:
    rng = np.random.default_rng(11)
    recs = [mem(f"m{i}", importance=i / 10, created_at=NOW - timedelta(days=i)) for i in range(8)]
    # Distinct term weights: no ties, so every list has one true order.
    sparse = [SparseVector([i % 3, 10 + i], [1.0 + i / 10, 1.0]) for i in range(8)]
    put(memory_store, recs, sparse=sparse, seed=5)
    query = {
        "dense": {"dense": unit(rng)},
        "sparse": {"sparse": sparse_of(1, 2)},
        "hybrid": {"dense": unit(rng), "sparse": sparse_of(1, 2)},
    }[mode]
    boost = Boost(importance_weight=0.3, recency_weight=0.2, half_life_days=7, now=NOW)
    hits = memory_store.search(ALICE, boost=boost, explain=True, limit=5, **query)  # type: ignore[arg-type]
    assert hits
    for hit in hits:
        c = hit.components
        assert c["final"] == hit.score
        assert c["importance_boost"] == pytest.approx(0.3 * hit.record.importance)
        assert mode == "sparse" or "dense" in c
        total = c["base"] + c["importance_boost"] + c["recency_boost"]
        assert total == pytest.approx(hit.score, abs=1e-4)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_exact_search_finds_the_true_nearest(memory_store: MemoryStore) -> None:
    rng = np.random.default_rng(2)
    vecs = [unit(rng) for _ in range(40)]
    put(memory_store, [mem(f"m{i}") for i in range(40)], dense=vecs)
    q = unit(rng)
    best = int(np.argmax(np.array(vecs) @ np.array(q)))
    hits = memory_store.search(ALICE, dense=q, exact=True, limit=1)
    assert hits[0].record.content == f"m{best}"


@pytest.mark.parametrize("candidates", [2, 50])
def test_fused_search_answers_a_plan_like_search_and_get(
    memory_store: MemoryStore, candidates: int
) -> None:
    # Whatever a store's fast path, its answers equal those of its own search and get.
    rng = np.random.default_rng(4)
    recs = [mem(f"m{i}", importance=i / 10, created_at=NOW - timedelta(days=i)) for i in range(10)]
    sparse = [SparseVector([i % 3, 10 + i], [1.0 + i / 10, 1.0]) for i in range(10)]
    put(memory_store, [*recs, mem("bob's", user="bob")], sparse=[*sparse, sparse_of(1)], seed=6)
    query, terms = unit(rng), sparse_of(1, 2)
    flt = RecordFilter(min_importance=0.1)

    def plan() -> FusionPlan:
        config = RankingConfig(importance_weight=0.1, recency_weight=0.1, relative_floor=None)
        window = (NOW - timedelta(days=3), NOW)
        return fusion_plan(
            config,
            has_sparse=True,
            candidates=candidates,
            fetch=5,
            now=NOW,
            windows=[window],
            explain=True,
        )

    got = memory_store.fused_search(ALICE, flt, query, terms, plan())
    store = memory_store.store if isinstance(memory_store, AsyncFace) else memory_store
    want = drive(fused_search_program(store, ALICE, flt, query, terms, plan()))
    assert [h.record for h in got] == [h.record for h in want]
    assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)
    assert got
    assert all(h.record.importance >= 0.1 for h in got)


# -- bad input --------------------------------------------------------------------------


def test_wrong_dimension_write_is_rejected_and_store_unchanged(memory_store: MemoryStore) -> None:
    put(memory_store, [mem("a")])
    good, bad = mem("good"), mem("bad")
    with pytest.raises(DimensionMismatchError, match=f"{DIM + 1} dimensions"):
        memory_store.upsert([good, bad], [E0, [1.0] * (DIM + 1)], [sparse_of(1), sparse_of(2)])
    assert memory_store.count(ALICE) == 1
    with pytest.raises(DimensionMismatchError):
        memory_store.search(ALICE, dense=[1.0, 0.0])


@pytest.mark.parametrize(
    "dense",
    [[math.nan] + [0.0] * (DIM - 1), [0.0] * DIM],
    ids=["nan", "zero"],
)
def test_unusable_vectors_are_rejected(memory_store: MemoryStore, dense: list[float]) -> None:
    with pytest.raises(InvalidValueError):
        memory_store.upsert([mem("a")], [dense], [sparse_of(1)])
    assert memory_store.count(ALICE) == 0


def test_reopen_with_another_dimension_is_refused(memory_spec: MemorySpec) -> None:
    if memory_spec.backend == "memory":
        pytest.skip("an in-memory store's memories live in one object: nothing to reopen")
    store = memory_spec.open()
    put(store, [mem("a")])
    store.close()
    with pytest.raises(DimensionMismatchError, match=rf"{DIM}.*16|16.*{DIM}"):
        memory_spec.open(dimension=16)
    store = memory_spec.open()
    assert store.count(ALICE) == 1
    store.close()


def test_invalid_uuids_are_named_and_nothing_changes(memory_store: MemoryStore) -> None:
    (a,) = put(memory_store, [mem("a")])
    for call in (
        lambda: memory_store.get(ALICE, [a.id, "not-a-uuid"]),
        lambda: memory_store.delete(ALICE, [a.id, "not-a-uuid"]),
        lambda: memory_store.set_fields(ALICE, [a.id, "not-a-uuid"], {"pinned": True}),
        lambda: memory_store.scroll(ALICE, offset="not-a-uuid"),
    ):
        with pytest.raises(InvalidValueError, match="not-a-uuid"):
            call()
    assert memory_store.get(ALICE, [a.id]) == [a]


def test_search_needs_a_query_vector(memory_store: MemoryStore) -> None:
    with pytest.raises(InvalidValueError, match="dense=, sparse="):
        memory_store.search(ALICE)


async def test_closed_store_refuses_every_call(memory_store: MemoryStore) -> None:
    memory_store.close()
    memory_store.close()  # idempotent
    with pytest.raises(StoreClosedError):
        memory_store.count(ALICE)
    with pytest.raises(StoreClosedError):
        memory_store.upsert([mem("a")], [E0], [sparse_of(1)])
    with pytest.raises(StoreClosedError):
        await memory_store.asearch(ALICE, dense=E0)


# -- async ------------------------------------------------------------------------------


async def test_async_twins_match_sync(memory_store: MemoryStore) -> None:
    recs = [mem(f"m{i}", importance=i / 5) for i in range(5)]
    rng = np.random.default_rng(9)
    vecs = [unit(rng) for _ in recs]
    await memory_store.aupsert(recs, vecs, [sparse_of(i) for i in range(5)])
    ids = [r.id for r in recs]
    assert await memory_store.aget(ALICE, ids) == memory_store.get(ALICE, ids)
    assert await memory_store.acount(ALICE) == memory_store.count(ALICE) == 5
    q = unit(rng)
    sync_hits = memory_store.search(ALICE, dense=q, sparse=sparse_of(1, 2), explain=True)
    async_hits = await memory_store.asearch(ALICE, dense=q, sparse=sparse_of(1, 2), explain=True)
    assert async_hits == sync_hits
    assert await memory_store.ascroll(ALICE, limit=2) == memory_store.scroll(ALICE, limit=2)
    await memory_store.aset_fields(ALICE, [ids[0]], {"pinned": True})
    assert memory_store.get(ALICE, [ids[0]])[0].pinned
    assert await memory_store.adelete(ALICE, ids[:2]) == 2
    assert memory_store.count(ALICE) == 3
    await memory_store.aclose()
    with pytest.raises(StoreClosedError):
        memory_store.count(ALICE)
