"""The census of a Qdrant Edge store: ``agentmem stats`` reads each scope's counts from it
without loading the shard, and they must be exactly what the loaded store counts, or not
be used at all.

Every case runs on a real store. The census must match the store's own indexed counts after
any mix of writes (new points, points written again with another type, superseded, deleted,
other users and spaces, flushes between), be refused whenever the last close was not clean
or anything it rests on changed, and come back at the next clean close.
"""

from __future__ import annotations

import os
import random
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agentmem.cli import main
from agentmem.errors import StoreCorruptedError
from agentmem.long_term.records import MEMORY_TYPES, MemoryRecord, RecordFilter, Scope
from agentmem.long_term.store import SparseVector
from agentmem.stores.qdrant import _edge_census as census
from agentmem.stores.qdrant import edge
from agentmem.stores.qdrant._edge_index import current_generation
from agentmem.stores.qdrant._edge_manifest import read_manifest
from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore, read_scope_counts
from tests.processes import run_python

pytestmark = pytest.mark.integration

DIM = 4
USERS = ("alice", "bob", "carol")
SPACES = ("memories", "langgraph")
SUBTYPES = ("preference", "fact", None, "hobby_2")


def _vector(rng: random.Random, dim: int = DIM) -> list[float]:
    return [rng.uniform(0.1, 1.0) for _ in range(dim)]


def _write_randomly(store: QdrantEdgeStore, rng: random.Random, steps: int, dim: int = DIM) -> None:
    """New memories, memories written again with another type or subtype, superseded,
    deleted, across users and spaces, with flushes between."""
    alive: list[MemoryRecord] = []
    for _ in range(steps):
        action = rng.random()
        if action < 0.45 or not alive:
            batch = [
                MemoryRecord.new(
                    f"memory {rng.random()}",
                    rng.choice(MEMORY_TYPES),
                    subtype=rng.choice(SUBTYPES),
                    scope=Scope(user_id=rng.choice(USERS), space=rng.choice(SPACES)),
                )
                for _ in range(rng.randint(1, 12))
            ]
            store.upsert(
                batch,
                [_vector(rng, dim) for _ in batch],
                [SparseVector([1], [1.0]) for _ in batch],
            )
            alive.extend(batch)
        elif action < 0.6:  # the same id written again, as another type and subtype
            i = rng.randrange(len(alive))
            again = alive[i].model_copy(
                update={"memory_type": rng.choice(MEMORY_TYPES), "subtype": rng.choice(SUBTYPES)}
            )
            store.upsert([again], [_vector(rng, dim)], [SparseVector([2], [1.0])])
            alive[i] = again
        elif action < 0.8:
            record = rng.choice(alive)
            when = datetime.now(timezone.utc)
            store.set_fields(record.scope, [record.id], {"valid_to": when})
        elif action < 0.95:
            record = alive.pop(rng.randrange(len(alive)))
            store.delete(record.scope, [record.id])
        else:
            store.flush()


def _counted_by_the_store(store: QdrantEdgeStore, scope: Scope) -> census.ScopeCounts:
    everything = RecordFilter(include_history=True)
    kinds: dict[tuple[str, str | None], int] = {}
    for memory_type, n in store.count_by(scope, "memory_type", filter=everything).items():
        of_type = RecordFilter(include_history=True, memory_types=(memory_type,))
        with_subtype = 0
        for subtype, m in store.count_by(scope, "subtype", filter=of_type).items():
            kinds[(memory_type, subtype)] = m
            with_subtype += m
        if n > with_subtype:
            kinds[(memory_type, None)] = n - with_subtype
    return census.ScopeCounts(kinds, store.count(scope, filter=RecordFilter()))


@pytest.mark.parametrize("seed", range(4))
def test_the_census_is_what_the_store_counts_after_any_writes(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "long_term"
    rng = random.Random(seed)
    store = QdrantEdgeStore(path, dimension=DIM)
    _write_randomly(store, rng, 60)
    store.close()
    if seed % 2:  # a second session that writes more, after a clean close
        store = QdrantEdgeStore(path, dimension=DIM)
        _write_randomly(store, rng, 30)
        store.close()
    scopes = [Scope(user_id=u, space=s) for u in (*USERS, "nobody") for s in SPACES]
    read = {scope: read_scope_counts(path, scope, dimension=DIM) for scope in scopes}
    store = QdrantEdgeStore(path, dimension=DIM)
    try:
        for scope in scopes:
            found = read[scope]
            assert found is not None
            assert found == _counted_by_the_store(store, scope), scope
    finally:
        store.close()


def _stats(home: Path, user: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """The exit code and the count lines (the disk use after them changes with any open)."""
    code = main(["--home", str(home), "stats", "--user", user])
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("home ")
    return code, lines[:-1]


def test_stats_prints_the_same_lines_from_the_census_and_from_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    store = QdrantEdgeStore(home / "long_term", dimension=384)
    _write_randomly(store, random.Random(7), 80, dim=384)
    store.close()
    fast = {user: _stats(home, user, capsys) for user in USERS}
    assert read_scope_counts(home / "long_term", Scope(user_id="alice"), dimension=384)
    opened: list[bool] = []
    real = census.read_census

    def refused(*args: object) -> None:
        opened.append(True)

    monkeypatch.setattr(edge, "read_census", refused)
    slow = {user: _stats(home, user, capsys) for user in USERS}
    assert opened  # the second round counted through the store
    assert fast == slow
    monkeypatch.setattr(edge, "read_census", real)
    assert all(code == 0 for code, _ in fast.values())


def _closed_store(path: Path, memories: int = 20) -> None:
    store = QdrantEdgeStore(path, dimension=DIM)
    rng = random.Random(1)
    batch = [
        MemoryRecord.new(f"m {i}", "semantic", scope=Scope(user_id="alice"))
        for i in range(memories)
    ]
    store.upsert(batch, [_vector(rng) for _ in batch], [SparseVector([1], [1.0]) for _ in batch])
    store.close()


ALICE = Scope(user_id="alice")


def test_no_census_while_another_process_holds_the_store_or_after_a_crash(
    tmp_path: Path,
) -> None:
    path = tmp_path / "long_term"
    _closed_store(path)
    assert read_scope_counts(path, ALICE, dimension=DIM) is not None
    store = QdrantEdgeStore(path, dimension=DIM)  # held here: the lock is taken
    assert read_scope_counts(path, ALICE, dimension=DIM) is None
    store.close()
    killed = run_python(
        "-c",
        "import os, sys\n"
        "from agentmem.long_term.records import MemoryRecord, Scope\n"
        "from agentmem.long_term.store import SparseVector\n"
        "from agentmem.stores.qdrant.edge import QdrantEdgeStore\n"
        f"store = QdrantEdgeStore(sys.argv[1], dimension={DIM})\n"
        "r = MemoryRecord.new('late', 'episodic', scope=Scope(user_id='alice'))\n"
        "store.upsert([r], [[0.5] * 4], [SparseVector([1], [1.0])])\n"
        "os.kill(os.getpid(), 9)\n",
        str(path),
    )
    assert killed.returncode == -9, killed.stderr
    assert read_scope_counts(path, ALICE, dimension=DIM) is None  # the manifest is open
    store = QdrantEdgeStore(path, dimension=DIM)  # recovers; its close counts again
    store.close()
    found = read_scope_counts(path, ALICE, dimension=DIM)
    assert found is not None
    assert (found.total, found.current) == (21, 21)


def test_a_census_file_removed_or_altered_is_not_read_and_comes_back_at_the_next_close(
    tmp_path: Path,
) -> None:
    path = tmp_path / "long_term"
    _closed_store(path)
    target = path / census.CENSUS_FILE
    target.write_text(target.read_text().replace('"current": 20', '"current": 19'))
    assert read_scope_counts(path, ALICE, dimension=DIM) is None
    target.unlink()
    assert read_scope_counts(path, ALICE, dimension=DIM) is None
    QdrantEdgeStore(path, dimension=DIM).close()  # a session that wrote nothing
    found = read_scope_counts(path, ALICE, dimension=DIM)
    assert found is not None
    assert found.total == 20


def test_a_session_that_wrote_nothing_keeps_the_census_without_counting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "long_term"
    _closed_store(path)
    before = read_manifest(path)
    assert before is not None
    assert before.census is not None
    counted: list[str] = []
    real = QdrantEdgeStore._facet_all

    def counting(self: QdrantEdgeStore, key: str, limit: int) -> dict[str, int]:
        counted.append(key)
        return real(self, key, limit)

    monkeypatch.setattr(QdrantEdgeStore, "_facet_all", counting)
    store = QdrantEdgeStore(path, dimension=DIM)
    assert store.count(ALICE) == 20
    store.close()
    after = read_manifest(path)
    assert after is not None
    assert after.census == before.census
    assert counted == []


@pytest.mark.parametrize(
    "damaged",
    [
        "segments/*/segment.json",  # metadata
        "segments/*/vector_storage-dense/vectors/chunk_0.mmap",  # data Edge maps, never reads
        "segments/*/vector_storage-bm25/store/page_0.dat",  # data Edge reads at load
    ],
)
def test_damage_refuses_the_census_and_stats_says_what_the_open_finds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damaged: str
) -> None:
    home = tmp_path / "home"
    path = home / "long_term"
    store = QdrantEdgeStore(path, dimension=384)
    record = MemoryRecord.new("likes tea", "semantic", scope=ALICE)
    store.upsert([record], [[1.0] + [0.0] * 383], [SparseVector([1], [1.0])])
    store.close()
    live = current_generation(path)
    target = next(live.glob(damaged))
    stat = target.stat()
    content = bytearray(target.read_bytes())
    at = next(i for i, byte in enumerate(content) if byte)
    content[at] ^= 0x01
    target.write_bytes(bytes(content))
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # bit rot: size, time kept
    with pytest.raises(StoreCorruptedError, match="was altered"):
        read_scope_counts(path, ALICE, dimension=384)
    code = main(["--home", str(home), "stats", "--user", "alice"])
    err = capsys.readouterr().err
    assert code == 1
    assert "damaged" in err
    assert "was altered" in err


def test_points_written_before_the_census_field_get_it_from_an_index_rebuild(
    tmp_path: Path,
) -> None:
    import qdrant_edge as qe

    path = tmp_path / "long_term"
    store = QdrantEdgeStore(path, dimension=DIM, auto_index=AutoIndex(enabled=False))
    rng = random.Random(3)
    batch = [MemoryRecord.new(f"m {i}", "episodic", scope=ALICE) for i in range(1_600)]
    store.upsert(batch, [_vector(rng) for _ in batch], [SparseVector([1], [1.0]) for _ in batch])
    # As an older agentmem left them: no census field.
    store._shard.update(
        qe.UpdateOperation.delete_payload([r.id for r in batch], [census.CENSUS_FIELD])
    )
    store.close()
    assert read_scope_counts(path, ALICE, dimension=DIM) is None
    rebuilding = AutoIndex(min_unindexed=1_500, check_every=250)
    store = QdrantEdgeStore(path, dimension=DIM, auto_index=rebuilding)
    assert store.indexing
    store.wait_for_index()
    store.close()
    found = read_scope_counts(path, ALICE, dimension=DIM)
    assert found is not None
    assert (found.total, found.current, dict(found.kinds)) == (
        1_600,
        1_600,
        {("episodic", None): 1_600},
    )
