"""Qdrant Edge builds its vector index by itself, off the callers' path, and safely.

With a low ``AutoIndex`` threshold, writing past it starts a rebuild in a child process;
the store keeps serving reads and writes meanwhile, every write made during the rebuild is
in the new generation, a close or a kill -9 mid-rebuild loses nothing (and a close keeps
the parts the rebuild has indexed for the next one to resume), and a store whose
``CURRENT`` names a missing generation is refused as damaged.
"""

from __future__ import annotations

import io
import pickle
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe

from agentmem.errors import ConfigurationError, StoreCorruptedError
from agentmem.long_term.records import MemoryRecord, RecordFilter
from agentmem.stores.qdrant._edge_index import (
    PARTIAL_FILE,
    current_generation,
    resumable_generation,
)
from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore
from tests.edge_writes import ALICE, write_random

pytestmark = pytest.mark.integration

DIM = 32
ROOT = Path(__file__).resolve().parents[2]
LOW = AutoIndex(min_unindexed=1_500, check_every=250)


def write(store: QdrantEdgeStore, n: int, tag: str, seed: int = 0) -> list[MemoryRecord]:
    return write_random(store, n, dimension=DIM, tag=tag, seed=seed, batch=250)


def wait_until(predicate: object, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_rebuild_starts_by_itself_and_keeps_every_write(tmp_path: Path) -> None:
    store = QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW)
    try:
        first = write(store, 2_000, "before")
        wait_until(lambda: store.indexing or (tmp_path / "CURRENT").exists())
        # Reads and writes go on while the child builds the new generation.
        during = write(store, 300, "during", seed=1)
        gone = first[:50]
        store.delete(ALICE, [r.id for r in gone])
        store.set_fields(ALICE, [first[60].id], {"importance": 0.99, "pinned": True})
        assert store.count(ALICE) == 2_000 + 300 - 50
        store.wait_for_index(120)
        live = (tmp_path / "CURRENT").read_text()
        assert live.startswith("gen-")
        assert [p.name for p in tmp_path.glob("gen-*")] == [live]
        assert not (tmp_path / "segments").exists()  # the old layout was dropped
        kept = {r.id for r in store.scroll(ALICE, filter=RecordFilter(), limit=10_000)[0]}
        assert kept == {r.id for r in [*first[50:], *during]}
        (changed,) = store.get(ALICE, [first[60].id])
        assert (changed.importance, changed.pinned) == (0.99, True)
    finally:
        store.close()
    with QdrantEdgeStore(tmp_path, dimension=DIM) as reopened:
        assert reopened.count(ALICE) == 2_250


def test_writes_made_during_a_rebuild_are_indexed_by_the_next_one(tmp_path: Path) -> None:
    from agentmem.stores.qdrant._edge_index import unindexed_points

    store = QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW)
    try:
        write(store, 2_000, "before")
        wait_until(lambda: store.indexing or (tmp_path / "CURRENT").exists())
        write(store, 2_000, "during", seed=1)  # enough for another rebuild on their own
        store.wait_for_index(240)
        assert not store.indexing
        info = store._shard.info()
        assert info.points_count == 4_000
        assert unindexed_points(info.points_count, info.indexed_vectors_count) == 0
    finally:
        store.close()


def test_below_the_threshold_nothing_is_rebuilt(tmp_path: Path) -> None:
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW) as store:
        write(store, 1_000, "few")
        assert not store.indexing
    assert not (tmp_path / "CURRENT").exists()
    off = AutoIndex(min_unindexed=1_500, check_every=250, enabled=False)
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=off) as store:
        write(store, 2_000, "many")
        assert not store.indexing


def test_close_during_a_rebuild_loses_nothing(tmp_path: Path) -> None:
    store = QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW)
    records = write(store, 2_000, "m")
    wait_until(lambda: store.indexing or (tmp_path / "CURRENT").exists())
    store.close()  # stops the child; the live generation is complete
    with QdrantEdgeStore(tmp_path, dimension=DIM) as reopened:
        assert reopened.count(ALICE) == len(records)
        assert len(reopened.get(ALICE, [r.id for r in records])) == len(records)
    live = (tmp_path / "CURRENT").read_text() if (tmp_path / "CURRENT").exists() else None
    gens = sorted(p.name for p in tmp_path.glob("gen-*"))
    assert gens == ([live] if live else [])


def test_a_close_during_a_rebuild_keeps_its_index_for_the_next_open(tmp_path: Path) -> None:
    store = QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW)
    write(store, 2_000, "m")
    wait_until(lambda: store.indexing)
    generation = (tmp_path / "CURRENT").read_text() if (tmp_path / "CURRENT").exists() else ""
    store.close()  # waits for the rebuild (AutoIndex.finish_at_close)
    assert (tmp_path / "CURRENT").read_text() != generation
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW) as again:
        # Searched with the index built before the close: nothing to redo.
        assert again.unindexed_estimate() < LOW.min_unindexed
        assert not again.indexing
        assert again.count(ALICE) == 2_000


def segments(generation: Path) -> set[str]:
    return {p.name for p in (generation / "segments").iterdir()}


def test_a_close_that_stops_a_rebuild_keeps_its_indexed_parts_for_the_next_open(
    tmp_path: Path,
) -> None:
    hurried = AutoIndex(min_unindexed=1_500, check_every=250, finish_at_close=0, parts=3)
    store = QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=hurried)
    records = write(store, 4_000, "m")  # indexed in parts of 1,500 (part_size)
    wait_until(lambda: resumable_generation(tmp_path) is not None)  # one part flushed
    store.close()  # does not wait: the builder is stopped
    partial = resumable_generation(tmp_path)
    assert partial is not None
    assert not (tmp_path / "CURRENT").exists()  # the live shard is still the first one
    kept = segments(partial)
    # Writes between the close and the rebuild that resumes: it must take them all.
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=AutoIndex(enabled=False)) as off:
        off.delete(ALICE, [r.id for r in records[:100]])
        added = write(off, 50, "n", seed=1)
        off.set_fields(ALICE, [records[100].id], {"importance": 0.9})
    assert resumable_generation(tmp_path) == partial  # an open without a rebuild keeps it
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW) as again:
        again.wait_for_index(240)
        assert current_generation(tmp_path) == partial  # resumed, not redone elsewhere
        assert kept & segments(partial)  # segments indexed before the close, reused
        assert not (partial / PARTIAL_FILE).exists()
        assert again.unindexed_estimate() < LOW.min_unindexed
        assert again.count(ALICE) == 3_950
        assert again.get(ALICE, [r.id for r in records[:100]]) == []
        assert len(again.get(ALICE, [r.id for r in added])) == 50
        assert again.get(ALICE, [records[100].id])[0].importance == 0.9
    assert resumable_generation(tmp_path) is None


@pytest.mark.parametrize("wait", [-1, float("nan"), True, "10"])
def test_finish_at_close_must_be_seconds(wait: object) -> None:
    with pytest.raises(ConfigurationError, match="finish_at_close"):
        AutoIndex(finish_at_close=wait)  # type: ignore[arg-type]


def test_kill_during_a_rebuild_loses_nothing(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sys, numpy as np
        from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore
        from agentmem.long_term.records import MemoryRecord, Scope
        from agentmem.long_term.store import SparseVector
        store = QdrantEdgeStore(sys.argv[1], dimension=32,
                                auto_index=AutoIndex(min_unindexed=1500, check_every=250))
        rng = np.random.default_rng(0)
        i = 0
        while True:
            recs = [MemoryRecord.new(f"m{i}-{j}", "semantic", scope=Scope(user_id="alice"))
                    for j in range(250)]
            store.upsert(recs, rng.normal(size=(250, 32)).tolist(),
                         [SparseVector([j], [1.0]) for j in range(250)])
            print(i, int(store.indexing), flush=True)
            i += 1
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdout is not None
    acked = -1
    for line in child.stdout:
        batch, indexing = (int(x) for x in line.split())
        acked = batch
        if indexing and batch >= 10:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()
    assert acked >= 10
    with QdrantEdgeStore(tmp_path, dimension=DIM) as store:
        assert store.count(ALICE) >= (acked + 1) * 250
    live = (tmp_path / "CURRENT").read_text() if (tmp_path / "CURRENT").exists() else None
    resumable = resumable_generation(tmp_path)  # the parts the killed builder flushed
    kept = {live, None if resumable is None else resumable.name} - {None}
    assert {p.name for p in tmp_path.glob("gen-*")} == kept


def test_a_missing_live_generation_is_refused_as_damaged(tmp_path: Path) -> None:
    with QdrantEdgeStore(tmp_path, dimension=DIM):
        pass
    (tmp_path / "CURRENT").write_text("gen-7")
    with pytest.raises(StoreCorruptedError, match="gen-7"):
        QdrantEdgeStore(tmp_path, dimension=DIM)
    with pytest.raises(Exception, match="positive integer"):
        AutoIndex(min_unindexed=0)
    with pytest.raises(ConfigurationError, match="parts"):
        AutoIndex(parts=0)


def test_the_builder_writes_one_log_entry_per_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every update is one entry of the new shard's write-ahead log, which Edge reads again
    at every open while the log holds it: a part written as one update (100,000 points)
    made each later open of the rebuilt store spend seconds of CPU on it."""
    from agentmem.stores.qdrant import _edge_index, _edge_shard

    updates: list[object] = []

    class Recording:  # the real shard, its updates counted
        def __init__(self, shard: Any) -> None:
            self._shard = shard

        def update(self, operation: object) -> None:
            updates.append(operation)
            self._shard.update(operation)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._shard, name)

    create = _edge_shard.create_shard
    monkeypatch.setattr(_edge_shard, "create_shard", lambda *a, **k: Recording(create(*a, **k)))
    rng = random.Random(0)
    pages = [
        [
            (str(uuid.UUID(int=page * 1_000 + i + 1)), {"dense": vector(rng)}, {"n": i})
            for i in range(300)
        ]
        for page in range(4)
    ]
    stream = io.BytesIO()
    for page in [*pages, None]:
        pickle.dump(page, stream)
    stream.seek(0)
    _edge_index._child(tmp_path / "gen", DIM, 700, stream)  # parts of 700 points
    assert len(updates) == len(pages)
    shard = qe.EdgeShard.load(str(tmp_path / "gen"))
    try:
        assert shard.count(qe.CountRequest(exact=True)) == 1_200
    finally:
        shard.close()


def vector(rng: random.Random) -> list[float]:
    return [rng.random() for _ in range(DIM)]


def test_a_swap_whose_sync_fails_after_the_rename_serves_the_new_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CURRENT was renamed to the new generation but its directory could not be synced: the
    # store must go on with the generation CURRENT names (and keep it), or the next open
    # would find CURRENT naming a directory deleted behind it.
    from agentmem.stores.qdrant import edge as edge_module

    real = edge_module.set_current_generation
    failed: list[str] = []

    def renamed_then_failed(root: Path, generation: Path) -> None:
        real(root, generation)
        failed.append(generation.name)
        raise OSError(5, "Input/output error (fsync of the directory)")

    monkeypatch.setattr(edge_module, "set_current_generation", renamed_then_failed)
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW) as store:
        first = write(store, 2_000, "before")
        store.wait_for_index(120)
        assert failed == [(tmp_path / "CURRENT").read_text()]
        assert (tmp_path / failed[0]).is_dir()
        after = write(store, 10, "after", seed=1)
    monkeypatch.undo()
    with QdrantEdgeStore(tmp_path, dimension=DIM) as reopened:
        kept = {r.id for r in reopened.scroll(ALICE, filter=RecordFilter(), limit=10_000)[0]}
        assert kept == {r.id for r in [*first, *after]}


def test_a_write_whose_access_mirror_fails_during_a_rebuild_survives_the_swap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shard took the write, then mirroring it into the access statistics failed: the
    # caller hears of it, and the rebuild still replays the write into the new generation
    # (made here once the builder has exported every point, so only the replay can carry it).
    from agentmem.stores.qdrant import edge as edge_module

    real_build = edge_module.build_generation
    heard: list[OSError] = []

    def full_disk(op: str, args: tuple[Any, ...]) -> None:
        raise OSError(28, "No space left on device")

    def build_then_write(*args: Any, **kwargs: Any) -> None:
        real_build(*args, **kwargs)
        with monkeypatch.context() as patch:
            patch.setattr(store._access, "mirror", full_disk)
            try:
                write(store, 1, "during", seed=1)
            except OSError as exc:
                heard.append(exc)

    monkeypatch.setattr(edge_module, "build_generation", build_then_write)
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=LOW) as store:
        first = write(store, 2_000, "before")
        store.wait_for_index(120)
        assert [e.errno for e in heard] == [28]
        assert (tmp_path / "CURRENT").exists()  # swapped to the rebuilt generation
        assert store.count(ALICE) == len(first) + 1
