"""A crash-left Qdrant Edge write-ahead log altered in place is refused, not replayed in part.

After a crash the writes since the last flush live only in the shard's log, which the
manifest cannot vouch for. Edge replays the log up to the first entry that fails its
checksum and drops the rest without an error: four bytes changed anywhere in it turned 250
points into 200. The store now reads the log first (see
``agentmem.stores.qdrant._edge_wal``); what a write cut short by a kill or a power cut
leaves is still left to Edge, and a store killed at any moment of its writes opens.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentmem.errors import StoreCorruptedError
from agentmem.long_term.records import RecordFilter, Scope
from agentmem.repair import repair
from agentmem.stores.qdrant._edge_wal import wal_damage
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from tests.processes import run_python

pytestmark = pytest.mark.integration

ALICE = Scope(user_id="alice")
EVERYTHING = RecordFilter(include_history=True)

WRITER = """
import os, sys, time
from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.store import SparseVector
from agentmem.stores.qdrant.edge import QdrantEdgeStore
ALICE = Scope(user_id="alice")
store = QdrantEdgeStore(sys.argv[1], dimension=3)
def put(n, tag):
    records = [MemoryRecord.new(f"{tag} {i}", "semantic", scope=ALICE) for i in range(n)]
    vectors = [[1.0, float(i), 0.5] for i in range(n)]
    store.upsert(records, vectors, [SparseVector([i], [1.0]) for i in range(n)])
if sys.argv[2] == "roll over":  # flushed, then past a full log file (32 MiB), then a kill
    put(10, "flushed")
    store.flush()
    for i in range(12):
        records = [MemoryRecord.new(f"big {i} {k} " + "z" * 40_000, "semantic", scope=ALICE)
                   for k in range(100)]
        store.upsert(records, [[1.0, 0.0, 0.5]] * 100, [SparseVector([0], [1.0])] * 100)
    os.kill(os.getpid(), 9)
if sys.argv[2] == "crash":  # 200 flushed, then 50 and 1 only in the log, then a kill
    put(200, "flushed")
    store.flush()
    put(50, "logged")
    put(1, "last")
    os.kill(os.getpid(), 9)
print("writing", flush=True)
i = 0
while True:  # until the test kills it
    put(1 + i % 7, f"w{i}")
    i += 1
"""


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("crashed") / "long_term"
    killed = run_python("-c", WRITER, str(path), "crash", timeout=300)
    assert killed.returncode == -9, killed.stderr
    return path


def copy_of(crashed: Path, target: Path) -> Path:
    subprocess.run(["cp", "-r", "--sparse=always", str(crashed), str(target)], check=True)
    return target


def log_file(path: Path) -> Path:
    """The live generation's log file that holds entries (``wal/open-N``)."""
    live = path / (path / "CURRENT").read_text().strip() if (path / "CURRENT").exists() else path
    return max((live / "wal").glob("open-*"), key=lambda p: len(entries(p)))


def entries(log: Path) -> list[tuple[int, int]]:
    """Each entry of ``log``: its offset and the offset of its CRC."""
    data = log.read_bytes()
    out, offset = [], 8
    while offset + 8 <= len(data) and (length := struct.unpack_from("<Q", data, offset)[0]):
        crc = offset + 8 + length + (-(length + 4)) % 8
        out.append((offset, crc))
        offset = crc + 4
    return out


def patch(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as handle:
        handle.seek(offset)
        handle.write(data)


def digests(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name not in ("agentmem.lock", "tracker_journal.dat")
    }


def count(path: Path) -> int:
    with QdrantEdgeStore(path, dimension=3) as store:
        return store.count(ALICE, filter=EVERYTHING)


def test_the_crash_left_log_is_sound_and_replayed_whole(crashed: Path, tmp_path: Path) -> None:
    path = copy_of(crashed, tmp_path / "long_term")
    assert wal_damage(log_file(path).parent.parent) is None
    assert count(path) == 251


@pytest.mark.parametrize(
    ("which", "part"),
    [
        ("first", "data"),
        ("middle", "data"),
        ("the one before the last", "data"),
        # The next entry is then tried seeded with the CRC the altered one should carry.
        ("the one before the last", "CRC field"),
    ],
)
def test_an_entry_altered_before_the_last_is_refused_untouched(
    crashed: Path, tmp_path: Path, which: str, part: str
) -> None:
    path = copy_of(crashed, tmp_path / "long_term")
    log = log_file(path)
    found = entries(log)
    index = {"first": 0, "middle": len(found) // 2, "the one before the last": -2}[which]
    start, crc = found[index]
    if part == "data":
        patch(log, (start + crc) // 2, b"\xde\xad\xbe\xef")
    else:
        patch(log, crc, bytes(4))
    before = digests(path)
    with pytest.raises(StoreCorruptedError, match=r"write-ahead log .* is damaged at entry"):
        QdrantEdgeStore(path, dimension=3)
    assert digests(path) == before


def test_the_last_entry_altered_in_place_is_refused(crashed: Path, tmp_path: Path) -> None:
    path = copy_of(crashed, tmp_path / "long_term")
    log = log_file(path)
    start, _ = entries(log)[-1]
    patch(log, start + 12, b"\xde\xad")  # in its data: the CRC is there, no sector is zero
    with pytest.raises(StoreCorruptedError, match="damaged at its last entry"):
        QdrantEdgeStore(path, dimension=3)


@pytest.mark.parametrize(
    "cut", ["CRC not written yet", "a sector never written", "over an earlier cut-short write"]
)
def test_a_last_write_cut_short_is_left_to_edge(crashed: Path, tmp_path: Path, cut: str) -> None:
    # A kill during Edge's write leaves the CRC slot (written last) as it was: zero, or,
    # when the write went over bytes an earlier cut-short (longer) write left past the
    # log's end, those old bytes, with more after them. A power cut leaves a whole sector
    # of the preallocated zeros. Edge drops that write, as before.
    path = copy_of(crashed, tmp_path / "long_term")
    log = log_file(path)
    start, crc = entries(log)[-1]
    if cut == "CRC not written yet":
        patch(log, crc, bytes(4))
    elif cut == "a sector never written":
        sector = (start // 512 + 1) * 512  # its part of the sector: never written
        assert sector < crc
        patch(log, sector, bytes(min(512, crc + 4 - sector)))
    else:
        patch(log, crc, b"x" * 3004)
    assert wal_damage(log.parent.parent) is None
    assert count(path) == 250


def test_a_log_file_gone_from_a_crash_left_store_is_refused(crashed: Path, tmp_path: Path) -> None:
    # Edge would start an empty log and load the shard without the writes it held.
    path = copy_of(crashed, tmp_path / "long_term")
    log_file(path).unlink()
    with pytest.raises(StoreCorruptedError, match="open-1 is missing"):
        QdrantEdgeStore(path, dimension=3)


def test_a_log_that_moved_on_to_a_new_file_before_the_crash_opens(tmp_path: Path) -> None:
    # A full wal/open-N is renamed wal/closed-M: the file the manifest lists is gone, and
    # that is no damage.
    path = tmp_path / "long_term"
    killed = run_python("-c", WRITER, str(path), "roll over", timeout=300)
    assert killed.returncode == -9, killed.stderr
    assert list((path / "wal").glob("closed-*"))
    assert count(path) == 1_210


def test_repair_keeps_what_the_log_holds_before_the_damage_and_names_the_loss(
    crashed: Path, tmp_path: Path
) -> None:
    path = copy_of(crashed, tmp_path / "long_term")
    log = log_file(path)
    start, crc = entries(log)[-2]
    patch(log, (start + crc) // 2, b"\xde\xad\xbe\xef")
    checked = repair(tmp_path)
    assert any("write-ahead log" in line for line in checked.damaged)
    report = repair(tmp_path, accept_loss=True)
    assert report.repaired
    assert any("write-ahead log" in line and "cannot be read" in line for line in report.lost)
    assert count(path) == 200


def test_a_store_killed_at_any_moment_of_its_writes_opens(tmp_path: Path) -> None:
    # No false alarm: whatever a kill interrupts, the log it leaves is one Edge may replay.
    path = tmp_path / "long_term"
    rng = random.Random(7)
    for _ in range(8):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), "loop"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "writing", writer.stderr
        time.sleep(rng.uniform(0.05, 0.6))
        writer.kill()
        writer.wait(timeout=30)
        assert wal_damage(log_file(path).parent.parent) is None
        assert count(path) > 0
    shutil.rmtree(path)
