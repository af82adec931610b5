"""Qdrant Edge on disk: data survives reopen, one process at a time, a killed writer loses
nothing it was told was written."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest

from agentmem.errors import StoreLockedError
from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.store import SparseVector
from agentmem.stores.qdrant._edge_manifest import read_manifest
from agentmem.stores.qdrant.edge import QdrantEdgeStore

pytestmark = pytest.mark.integration

DIM = 8
ALICE = Scope(user_id="alice")
NAMESPACE = uuid.UUID("6f1c1c3e-8a43-4d8e-9a36-0d3f2b7f5a10")
ROOT = Path(__file__).resolve().parents[2]


def _vectors(n: int, seed: int = 0) -> list[list[float]]:
    v = np.random.default_rng(seed).normal(size=(n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).tolist()  # type: ignore[no-any-return]


def _records(n: int) -> list[MemoryRecord]:
    return [MemoryRecord.new(f"memory {i}", "semantic", scope=ALICE) for i in range(n)]


def _child(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def test_data_survives_close_and_reopen(tmp_path: Path) -> None:
    recs = _records(30)
    vecs = _vectors(30)
    with QdrantEdgeStore(tmp_path, dimension=DIM) as store:
        store.upsert(recs, vecs, [SparseVector([i], [1.0]) for i in range(30)])
        store.set_fields(ALICE, [recs[0].id], {"importance": 0.9, "pinned": True})
        store.delete(ALICE, [recs[1].id])
        before = store.search(ALICE, dense=vecs[5], sparse=SparseVector([5], [1.0]), limit=5)
    with QdrantEdgeStore(tmp_path, dimension=DIM) as store:
        assert store.count(ALICE) == 29
        (first,) = store.get(ALICE, [recs[0].id])
        assert (first.importance, first.pinned) == (0.9, True)
        assert store.get(ALICE, [recs[1].id]) == []
        after = store.search(ALICE, dense=vecs[5], sparse=SparseVector([5], [1.0]), limit=5)
        assert after == before
        assert after[0].record.content == "memory 5"
        assert store.count(ALICE, filter=RecordFilter(pinned=True)) == 1


def test_boolean_conditions_match_stored_booleans_without_numpy(tmp_path: Path) -> None:
    """A filter on a boolean field (``pinned``, and ``is_current`` behind history queries
    and the open's backfill) matches, in a process that never imports numpy."""
    recs = _records(3)
    with QdrantEdgeStore(tmp_path, dimension=DIM) as store:
        store.upsert(recs, _vectors(3), [SparseVector([1], [1.0])] * 3)
        store.set_fields(ALICE, [recs[0].id], {"pinned": True})
    child = _child(
        """
        import sys
        from agentmem.long_term.records import RecordFilter, Scope
        from agentmem.stores.qdrant.edge import QdrantEdgeStore
        with QdrantEdgeStore(sys.argv[1], dimension=8, preload=False) as store:
            alice = Scope(user_id="alice")
            counts = [store.count(alice, filter=RecordFilter(pinned=p)) for p in (True, False)]
        print(counts, "numpy" in sys.modules)
        """,
        str(tmp_path),
    )
    out, err = child.communicate(timeout=120)
    assert out.split() == ["[1,", "2]", "False"], err


def test_the_manifest_counts_the_points_again_only_after_a_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest's point counts: a session that only reads counts once (at open, and
    reuses them at close); one that writes after a flush records the new counts."""
    import agentmem.stores.qdrant.edge as edge_module

    counted: list[int] = []
    count_spaces = edge_module.count_spaces

    def counting(shard: object) -> dict[str, int]:
        counts = count_spaces(shard)
        counted.append(counts["*"])
        return counts

    monkeypatch.setattr(edge_module, "count_spaces", counting)
    recs, vecs = _records(5), _vectors(5)
    with QdrantEdgeStore(tmp_path, dimension=DIM) as store:
        store.upsert(recs[:3], vecs[:3], [SparseVector([1], [1.0])] * 3)
        store.flush()
        store.upsert(recs[3:], vecs[3:], [SparseVector([1], [1.0])] * 2)
    assert counted == [3, 5]
    counted.clear()
    with QdrantEdgeStore(tmp_path, dimension=DIM, preload=False) as store:
        assert store.count(ALICE) == 5
    assert counted == [5]
    manifest = read_manifest(tmp_path)
    assert manifest is not None
    assert manifest.points["*"] == 5


def test_a_second_store_in_this_process_is_refused(tmp_path: Path) -> None:
    store = QdrantEdgeStore(tmp_path, dimension=DIM)
    try:
        with pytest.raises(StoreLockedError, match=str(tmp_path)):
            QdrantEdgeStore(tmp_path, dimension=DIM)
    finally:
        store.close()
    QdrantEdgeStore(tmp_path, dimension=DIM).close()  # free again after close


def test_a_second_process_gets_a_clear_error_not_corruption(tmp_path: Path) -> None:
    recs = _records(10)
    store = QdrantEdgeStore(tmp_path, dimension=DIM)
    store.upsert(recs, _vectors(10), [SparseVector([1], [1.0])] * 10)
    child = _child(
        """
        import sys
        from agentmem.errors import StoreLockedError
        from agentmem.stores.qdrant.edge import QdrantEdgeStore
        try:
            QdrantEdgeStore(sys.argv[1], dimension=8)
        except StoreLockedError as exc:
            print("LOCKED", exc)
        else:
            print("OPENED")
        """,
        str(tmp_path),
    )
    out, err = child.communicate(timeout=120)
    assert out.startswith("LOCKED"), err
    assert "one process at a time" in out
    assert "QdrantClientStore" in out
    assert store.count(ALICE) == 10
    store.close()
    with QdrantEdgeStore(tmp_path, dimension=DIM) as again:
        assert again.get(ALICE, [r.id for r in recs]) == recs


def test_a_killed_writer_loses_nothing_it_reported(tmp_path: Path) -> None:
    child = _child(
        """
        import sys, uuid
        import numpy as np
        from agentmem.stores.qdrant.edge import QdrantEdgeStore
        from agentmem.long_term.records import MemoryRecord, Scope
        from agentmem.long_term.store import SparseVector
        ns = uuid.UUID(sys.argv[2])
        store = QdrantEdgeStore(sys.argv[1], dimension=8)
        rng = np.random.default_rng(0)
        batch = 0
        while True:
            recs = [
                MemoryRecord.new(f"m{batch}-{i}", "episodic", scope=Scope(user_id="alice"),
                                 id=str(uuid.uuid5(ns, f"{batch}-{i}")))
                for i in range(50)
            ]
            vecs = rng.normal(size=(50, 8)).tolist()
            store.upsert(recs, vecs, [SparseVector([i], [1.0]) for i in range(50)])
            print(batch, flush=True)
            batch += 1
        """,
        str(tmp_path),
        str(NAMESPACE),
    )
    assert child.stdout is not None
    reported = -1
    for line in child.stdout:
        reported = int(line)
        if reported >= 40:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    errors = child.stderr.read() if child.stderr else ""
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()
    assert reported >= 40, errors
    with QdrantEdgeStore(tmp_path, dimension=DIM) as store:
        ids = [
            str(uuid.uuid5(NAMESPACE, f"{b}-{i}")) for b in range(reported + 1) for i in range(50)
        ]
        found = store.get(ALICE, ids)
        assert len(found) == len(ids)
        assert store.count(ALICE) >= len(ids)
        store.upsert(_records(1), _vectors(1), [SparseVector([1], [1.0])])  # still writable
