"""Points Edge's counters do not show as unindexed still count towards the next rebuild.

A payload write (a touch on recall, a supersede) or an upsert of an indexed point moves that
point's copy into Edge's unindexed appendable segment, while ``info()`` keeps counting the
old copy as indexed. The store counts such points itself, keeps the count across a close,
and rebuilds once they are enough; stores written by an older agentmem get the one-condition
``current_scope`` key at open, and a rebuild when that backfill moved enough points.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import qdrant_edge as qe

from agentmem.long_term.records import MemoryRecord, RecordFilter
from agentmem.long_term.store import DENSE_VECTOR as DENSE
from agentmem.stores import points as pt
from agentmem.stores.qdrant import edge as edge_module
from agentmem.stores.qdrant._edge_shard import lazy_layout
from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore
from tests.edge_writes import ALICE, write_random

pytestmark = pytest.mark.integration

DIM = 16
LOW = AutoIndex(min_unindexed=1_500, check_every=250)
OFF = AutoIndex(enabled=False)


def indexed_store(path: Path, n: int) -> tuple[QdrantEdgeStore, list[MemoryRecord]]:
    store = QdrantEdgeStore(path, dimension=DIM, auto_index=LOW)
    records = write_random(store, n, dimension=DIM, tag="note", seed=7, batch=500)
    store.wait_for_index(240)
    store.optimize()  # Edge's counters are exact again (small segments stay unindexed)
    assert store.unindexed_estimate() < 600
    return store, records


def test_payload_writes_count_as_unindexed_and_start_a_rebuild(tmp_path: Path) -> None:
    store, records = indexed_store(tmp_path, 2_000)
    try:
        generation = (tmp_path / "CURRENT").read_text()
        touched = records[:800]
        for record in touched:  # the same points twice: counted once
            store.set_fields(ALICE, [record.id], {"access_count": 1})
        store.set_fields(ALICE, [r.id for r in touched[:10]], {"access_count": 2})
        assert store.unindexed_estimate() == 800
        assert not store.indexing
        more = records[800:1_600]
        store.set_fields(ALICE, [r.id for r in more], {"importance": 0.9})
        store.wait_for_index(240)
        assert (tmp_path / "CURRENT").read_text() != generation  # rebuilt by itself
        assert store.unindexed_estimate() < 800
        assert {r.access_count for r in store.get(ALICE, [r.id for r in touched[:20]])} == {1, 2}
    finally:
        store.close()


def test_the_count_survives_a_close(tmp_path: Path) -> None:
    store, records = indexed_store(tmp_path, 2_000)
    store.set_fields(ALICE, [r.id for r in records[:700]], {"pinned": True})
    assert store.unindexed_estimate() == 700
    store.close()
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=OFF) as again:
        assert again.unindexed_estimate() == 700
    # A store that never saw the file (or crashed) falls back on Edge's counters.
    (tmp_path / "agentmem-index.json").unlink()
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=OFF) as again:
        assert again.unindexed_estimate() >= 0


def test_an_older_store_gets_current_scope_at_open_and_a_rebuild(tmp_path: Path) -> None:
    store, records = indexed_store(tmp_path, 2_000)
    ended = records[0]
    store.set_fields(ALICE, [ended.id], {"valid_to": ended.created_at})
    # As agentmem 0.2 wrote them: no current_scope key.
    store._shard.update(
        qe.UpdateOperation.delete_payload([r.id for r in records], [pt.CURRENT_SCOPE_FIELD])
    )
    generation = (tmp_path / "CURRENT").read_text()
    store.close()
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW) as again:
        again.wait_for_index(240)  # the backfill moved 1,999 points: a rebuild was due
        assert (tmp_path / "CURRENT").read_text() != generation
        assert again.unindexed_estimate() < 1_500
        current = again.scroll(ALICE, filter=RecordFilter(), limit=5_000)[0]
        assert len(current) == 1_999
        assert ended.id not in {r.id for r in current}
        everything = again.scroll(ALICE, filter=RecordFilter(include_history=True), limit=5_000)
        assert len(everything[0]) == 2_000
        assert again.count(ALICE) == 1_999


def test_indexed_searches_score_with_exact_cosines(tmp_path: Path) -> None:
    # A rebuilt generation searches an int8 copy of the vectors and rescores the candidates
    # with float32: the scores fusion compares must equal the exact search's.
    store, _ = indexed_store(tmp_path, 2_000)
    try:
        config = (tmp_path / (tmp_path / "CURRENT").read_text() / "edge_config.json").read_text()
        assert "scalar" in config.lower()
        query = np.random.default_rng(3).normal(size=DIM).tolist()
        approx = store.search(ALICE, dense=query, limit=20, candidates=20)
        exact = store.search(ALICE, dense=query, limit=20, candidates=20, exact=True)
        exact_scores = {h.record.id: h.score for h in exact}
        shared = [h for h in approx if h.record.id in exact_scores]
        assert len(shared) >= 15
        for hit in shared:
            assert hit.score == pytest.approx(exact_scores[hit.record.id], abs=1e-5)
    finally:
        store.close()


def test_rarely_filtered_payload_indexes_are_memory_mapped(tmp_path: Path) -> None:
    # Loading every payload index into RAM dominated the open of a large store: only the
    # ones nearly every search filters on stay in RAM; filters on the others still work.
    store, records = indexed_store(tmp_path, 2_000)
    store.close()
    generation = tmp_path / (tmp_path / "CURRENT").read_text()
    placements: dict[str, bool] = {}
    for config in generation.glob("segments/*/payload_index/config.json"):
        for field, kinds in json.loads(config.read_text())["indexed_types"].items():
            storage = kinds[0].get("storage_type")
            if isinstance(storage, dict) and "mmap" in storage:  # an indexed segment's
                placements[field] = storage["mmap"]["is_on_disk"]
    assert [placements[f] for f in ("content_hash", "created_ts", pt.CURRENT_SCOPE_FIELD)] == [
        True,
        True,
        False,
    ]
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW) as again:
        late = RecordFilter(created_after=records[1_500].created_at)
        assert again.count(ALICE, filter=late) == len(
            [r for r in records if r.created_at >= records[1_500].created_at]
        )


def test_a_read_only_session_writes_nothing_of_its_own(tmp_path: Path) -> None:
    # Closing after reads only skips the flush and leaves agentmem's own files alone.
    store, _ = indexed_store(tmp_path, 2_000)
    store.close()
    ours = [tmp_path / "CURRENT", tmp_path / "agentmem-index.json"]
    before = [p.stat().st_mtime_ns for p in ours]
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW) as again:
        again.search(ALICE, dense=[1.0] * DIM, limit=5)
        again.count(ALICE)
        assert not again._unflushed
    assert [p.stat().st_mtime_ns for p in ours] == before
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW) as again:
        (record,) = again.scroll(ALICE, limit=1)[0]
        again.set_fields(ALICE, [record.id], {"pinned": True})
        assert again._unflushed
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW) as again:
        assert again.get(ALICE, [record.id])[0].pinned
        assert again.unindexed_estimate() >= 1


def test_a_counting_open_reads_nothing_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every large part is memory-mapped without Edge's page-by-page warm-up; the store reads
    # the files ahead when it opens to search (and before loading a rebuilt generation), and
    # not when it opens only to count.
    read: list[str] = []
    real = edge_module.read_ahead

    def recording(path: Path) -> int:
        read.append(path.name)
        return real(path)

    monkeypatch.setattr(edge_module, "read_ahead", recording)
    store, records = indexed_store(tmp_path, 2_000)
    store.close()
    generation = tmp_path / (tmp_path / "CURRENT").read_text()
    assert generation.name in read  # the rebuilt generation, before the swap
    indexed = [
        config["vector_data"][DENSE]
        for config in (
            json.loads(p.read_text())["config"] for p in generation.glob("segments/*/segment.json")
        )
        if config["vector_data"][DENSE]["index"]["type"] == "hnsw"
    ]
    assert indexed
    assert all(v["storage_type"] == "Mmap" for v in indexed)
    assert all(v["index"]["options"]["memory"] == "cold" for v in indexed)
    assert lazy_layout(json.loads((generation / "edge_config.json").read_text()))
    read.clear()
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW, preload=False) as counting:
        assert counting.count(ALICE) == len(records)
        assert len(counting.search(ALICE, dense=[1.0] * DIM, limit=5)) == 5  # works, cold
    assert read == []
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW) as searching:
        assert searching.count(ALICE) == len(records)
    assert read == [generation.name]


def test_a_shard_of_the_older_layout_is_read_ahead_even_to_count() -> None:
    # Such a shard has Edge warm its vectors and graph page by page: reading first is faster.
    older = {
        "vectors": {DENSE: {"size": DIM, "quantization_config": {"scalar": {"always_ram": True}}}},
        "hnsw_config": {"m": 16},
    }
    assert not lazy_layout(older)


def test_a_count_by_reads_the_cold_index_of_its_fields_ahead_once_per_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Edge drops a cold payload index from the page cache when it loads the segment; a facet
    # then faults every page of it in one at a time, unless the store reads it ahead.
    store, records = indexed_store(tmp_path, 2_000)
    store.close()
    advised: list[tuple[str, int]] = []
    real = edge_module.read_ahead_field

    def spy(directory: Path, field: str) -> int:
        advised.append((field, real(directory, field)))
        return advised[-1][1]

    monkeypatch.setattr(edge_module, "read_ahead_field", spy)
    everything = RecordFilter(include_history=True)
    semantic = RecordFilter.model_validate({"include_history": True, "memory_types": ("semantic",)})
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=OFF, preload=False) as counting:
        by_type = counting.count_by(ALICE, "memory_type", filter=everything)
        by_subtype = counting.count_by(ALICE, "subtype", filter=semantic)
        again = counting.count_by(ALICE, "memory_type", filter=everything)
    assert by_type == again == {"semantic": len(records)}
    assert sum(by_subtype.values()) <= len(records)
    # Each cold field once (the tenant and the space are kept in RAM), and Edge's layout
    # names its files: an Edge that renames them fails here instead of slowing down unseen.
    assert [field for field, _ in advised] == ["memory_type", "subtype"]
    assert all(files > 0 for _, files in advised)
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=OFF, preload=False) as reopened:
        reopened.count_by(ALICE, "memory_type", filter=everything)
    assert [field for field, _ in advised][2:] == ["memory_type"]  # a new load: again
