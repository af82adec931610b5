"""A damaged Qdrant Edge directory is refused at open with StoreCorruptedError.

Each case damages a real store the way a disk, a crash or a careless ``rm`` would, then
opens it: the error must be agentmem's (not Edge's bare ``Exception``), name the path and
the recovery, release the lock, and leave every file as it was.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentmem.errors import StoreCorruptedError, StoreError
from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.store import SparseVector
from agentmem.stores.qdrant._edge_manifest import is_metadata
from agentmem.stores.qdrant.edge import LOCK_FILE, QdrantEdgeStore
from tests.processes import run_python

pytestmark = pytest.mark.integration

ALICE = Scope(user_id="alice")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pristine") / "long_term"
    make_store(path)
    return path


def copy_of(pristine: Path, target: Path) -> Path:
    # cp keeps Edge's preallocated files sparse (about 1 MB instead of 250 MB per copy).
    subprocess.run(["cp", "-r", "--sparse=always", str(pristine), str(target)], check=True)
    return target


def make_store(path: Path) -> None:
    store = QdrantEdgeStore(path, dimension=3)
    records = [MemoryRecord.new(f"fact {i}", "semantic", scope=ALICE) for i in range(8)]
    store.upsert(
        records,
        [[1.0, float(i), 0.5] for i in range(8)],
        [SparseVector([i], [1.0]) for i in range(8)],
    )
    store.close()


def truncate(path: Path, fraction: float = 0.5) -> None:
    os.truncate(path, int(path.stat().st_size * fraction))


def segment(path: Path) -> Path:
    return next((path / "segments").iterdir())


def files(path: Path) -> dict[str, str]:
    """Every file with its sha256, but the lock and Edge's ``tracker_journal.dat`` files
    (Edge's segment loader rewrites those at every load, even one that then fails)."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name not in (LOCK_FILE, "tracker_journal.dat")
    }


def lock_is_free(path: Path) -> bool:
    with (path / LOCK_FILE).open("ab") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return True


DAMAGE: list[tuple[str, Callable[[Path], None], str]] = [
    ("config deleted", lambda p: (p / "edge_config.json").unlink(), "config file"),
    ("config truncated", lambda p: truncate(p / "edge_config.json"), "unreadable"),
    # A truncated file is named by the manifest, before Edge sees it.
    ("wal segment truncated", lambda p: truncate(p / "wal" / "open-1", 0.0), "open-1 has 0 bytes"),
    ("wal index truncated", lambda p: truncate(p / "wal" / "first-index"), "first-index has 8"),
    ("wal deleted", lambda p: shutil.rmtree(p / "wal"), "write-ahead log"),
    ("segments deleted", lambda p: shutil.rmtree(p / "segments"), "segments/"),
    (
        "all shard files deleted",
        lambda p: (shutil.rmtree(p / "segments"), shutil.rmtree(p / "wal")),
        "segments/",
    ),
    (  # a swap whose rename took but whose sync failed, or a hand edit: nothing is deleted
        "CURRENT names a missing generation",
        lambda p: (p / "CURRENT").write_text("gen-7"),
        "gen-7, named live by CURRENT, is missing",
    ),
    (  # a partial restore: with no file of the shard left, it is not a new, empty store
        "every shard file deleted, the manifest kept",
        lambda p: (
            shutil.rmtree(p / "segments"),
            shutil.rmtree(p / "wal"),
            (p / "edge_config.json").unlink(),
        ),
        "holds none of the .* files its manifest lists",
    ),
    (
        "segment.json truncated",
        lambda p: truncate(segment(p) / "segment.json"),
        "segment.json has .* bytes, the manifest says",
    ),
    (
        "payload index config truncated",
        lambda p: truncate(segment(p) / "payload_index" / "config.json"),
        "config.json has .* bytes, the manifest says",
    ),
]


@pytest.mark.parametrize(("case", "damage", "named"), DAMAGE, ids=[d[0] for d in DAMAGE])
def test_damaged_store_is_refused_untouched_and_unlocked(
    pristine: Path, tmp_path: Path, case: str, damage: Callable[[Path], None], named: str
) -> None:
    path = copy_of(pristine, tmp_path / "long_term")
    damage(path)
    before = files(path)
    for _ in range(2):  # a second open gets the same answer, not StoreLockedError
        with pytest.raises(StoreCorruptedError, match=named) as info:
            QdrantEdgeStore(path, dimension=3)
        message = str(info.value)
        assert str(path) in message
        assert "agentmem export" in message
        assert "move" in message
        assert info.value.path == str(path)
        assert lock_is_free(path)
    assert files(path) == before


def test_an_only_config_directory_is_not_taken_for_an_empty_store(
    pristine: Path, tmp_path: Path
) -> None:
    """The old behaviour: a shard whose data files were deleted opened as an empty store."""
    path = copy_of(pristine, tmp_path / "long_term")
    shutil.rmtree(path / "segments")
    shutil.rmtree(path / "wal")
    left = sorted(p.name for p in path.iterdir())
    assert "edge_config.json" in left
    with pytest.raises(StoreCorruptedError, match="data is gone"):
        QdrantEdgeStore(path, dimension=3)
    assert sorted(p.name for p in path.iterdir()) == left  # nothing made up


def test_moving_the_directory_away_recovers(pristine: Path, tmp_path: Path) -> None:
    path = copy_of(pristine, tmp_path / "long_term")
    (path / "edge_config.json").unlink()
    with pytest.raises(StoreCorruptedError):
        QdrantEdgeStore(path, dimension=3)
    path.rename(tmp_path / "long_term.damaged")
    with QdrantEdgeStore(path, dimension=3) as store:
        assert store.count(ALICE, filter=RecordFilter(include_history=True)) == 0


def test_sound_stores_still_open(pristine: Path, tmp_path: Path) -> None:
    path = copy_of(pristine, tmp_path / "long_term")
    with QdrantEdgeStore(path, dimension=3) as store:
        assert store.count(ALICE) == 8
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / LOCK_FILE).touch()  # a lock file alone is not a shard
    QdrantEdgeStore(empty, dimension=3).close()


def test_corrupted_is_a_store_error() -> None:
    assert issubclass(StoreCorruptedError, StoreError)
    assert issubclass(StoreCorruptedError, RuntimeError)


def test_a_counting_session_does_not_vouch_for_files_it_did_not_check(
    pristine: Path, tmp_path: Path
) -> None:
    # A session that preloads nothing checks the large files by size only; its close must
    # not describe them anew (that would vouch for damage it never read): the next full
    # check still finds it. Such a close reads only the files Edge rewrote.
    path = copy_of(pristine, tmp_path / "long_term")
    time.sleep(2.5)  # older than a timestamp's granularity: the manifest's checksums hold
    data = max(
        (p for p in path.rglob("*") if p.is_file() and not is_metadata(str(p.relative_to(path)))),
        key=lambda p: len(p.read_bytes().strip(b"\0")),
    )
    raw = bytearray(data.read_bytes())
    where = next(i for i, byte in enumerate(raw) if byte)
    raw[where] ^= 0xFF
    stat = data.stat()
    data.write_bytes(bytes(raw))
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as bit rot leaves it
    QdrantEdgeStore(path, dimension=3, preload=False).close()
    with pytest.raises(StoreCorruptedError, match="altered"):
        QdrantEdgeStore(path, dimension=3)


def test_a_panic_of_edge_while_it_loads_is_store_damage(pristine: Path, tmp_path: Path) -> None:
    # An open that checks the data files by size only (preload=False) hands Edge a BM25
    # page altered within its size: Edge's load panics ("index out of bounds"), which pyo3
    # raises as a PanicException, not an Exception. It must be agentmem's damage error,
    # with the lock released and the files as they were.
    path = copy_of(pristine, tmp_path / "long_term")
    page = next(path.glob("segments/*/vector_storage-bm25/store/page_0.dat"))
    raw = bytearray(page.read_bytes())
    raw[next(i for i, byte in enumerate(raw) if byte)] ^= 0x01
    stat = page.stat()
    page.write_bytes(bytes(raw))
    os.utime(page, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as bit rot leaves it
    before = files(path)
    with pytest.raises(StoreCorruptedError, match="could not load it"):
        QdrantEdgeStore(path, dimension=3, preload=False)
    assert lock_is_free(path)
    assert files(path) == before


def test_a_kill_while_edge_loads_the_shard_leaves_a_store_that_opens(
    pristine: Path, tmp_path: Path
) -> None:
    # Edge rewrites some files as it loads a shard (a segment's tracker_journal.dat goes
    # until the close): the open marks the manifest before the load, so a kill during it
    # leaves a store the next open probes and loads, not one it refuses as damaged.
    path = copy_of(pristine, tmp_path / "long_term")
    killed = run_python(
        "-c",
        "import os, qdrant_edge as qe\n"
        "from agentmem.stores.qdrant.edge import QdrantEdgeStore\n"
        "real = qe.EdgeShard.load\n"
        "def load(where):\n"
        "    real(where)\n"
        "    os.kill(os.getpid(), 9)\n"
        "qe.EdgeShard.load = load\n"
        f"QdrantEdgeStore({str(path)!r}, dimension=3)\n",
        timeout=120,
    )
    assert killed.returncode == -9
    with QdrantEdgeStore(path, dimension=3) as store:
        assert store.count(ALICE) == 8


def test_stored_data_that_does_not_decode_is_damage(pristine: Path, tmp_path: Path) -> None:
    # Without a manifest to check (a store left by a crash, or whose manifest was deleted)
    # Edge loads a payload file altered in its data, and fails only when it reads it: that
    # failure is damage, with the way back, not a bare store error.
    path = copy_of(pristine, tmp_path / "long_term")
    (path / "agentmem-manifest.json").unlink()
    data = segment(path) / "payload_storage" / "page_0.dat"
    raw = bytearray(data.read_bytes())
    raw[raw.index(b"fact 3")] = 0x01  # a control character inside a stored payload's JSON
    data.write_bytes(bytes(raw))
    with (
        QdrantEdgeStore(path, dimension=3) as store,
        pytest.raises(StoreCorruptedError, match="agentmem restore") as caught,
    ):
        store.scroll(ALICE, filter=RecordFilter(include_history=True), limit=100)
    assert "could not decode" in str(caught.value)
