"""A crash-left write-ahead log damaged in the middle is refused, not replayed in part.

After a crash the transactions committed since the last checkpoint live only in the
``-wal`` file. SQLite replays it up to the first frame that fails its checksum and drops the
rest without an error (that is how it rolls back a write torn by a power cut), so a log
damaged in the middle used to lose every later turn in silence: 200 messages came back as
182. The store now checks the log before SQLite sees it (see
``agentmem.stores._sqlite_wal``); what only looks like a torn write is left to SQLite.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentmem.errors import StoreCorruptedError
from agentmem.repair import repair
from agentmem.stores._sqlite_wal import wal_damage
from agentmem.stores.sqlite import SQLiteSessionStore
from agentmem.types import Message

TURNS = 300  # about 1.5 logs' worth: the log restarts once, stale frames stay behind it


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session database as a kill -9 leaves it: the last turns only in its -wal, whose
    current log has restarted over an older one (stale frames follow it)."""
    live = tmp_path_factory.mktemp("live") / "sessions.db"
    kept = tmp_path_factory.mktemp("crashed") / "sessions.db"
    store = SQLiteSessionStore(live)
    try:
        for i in range(TURNS):
            store.append("s", [Message(role="user", content=f"turn {i} " + "x" * 3000)])
        # Copied with the connection still open, the identity record beside them.
        for suffix in ("", "-wal", "-shm", ".identity.json"):
            shutil.copy(f"{live}{suffix}", f"{kept}{suffix}")
    finally:
        store.close()
    return kept


def frames(wal: Path) -> list[tuple[int, bool, bool]]:
    """Each frame of ``wal``: its offset, whether it has the log's salts, and whether it
    ends a transaction."""
    data = wal.read_bytes()
    page = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    out = []
    for offset in range(32, len(data) - 24 - page + 1, 24 + page):
        commit = struct.unpack(">I", data[offset + 4 : offset + 8])[0] != 0
        out.append((offset, data[offset + 8 : offset + 16] == salts, commit))
    return out


def home_copy(crashed: Path, target: Path) -> Path:
    target.mkdir()
    for suffix in ("", "-wal", "-shm", ".identity.json"):
        shutil.copy(f"{crashed}{suffix}", target / f"sessions.db{suffix}")
    return target / "sessions.db"


def alter(path: Path, offset: int) -> None:
    with path.open("r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0xFF]))


def digests(db: Path) -> tuple[str, ...]:
    return tuple(hashlib.sha256(Path(f"{db}{s}").read_bytes()).hexdigest() for s in ("", "-wal"))


def test_the_crash_left_log_is_sound_and_replayed_whole(crashed: Path, tmp_path: Path) -> None:
    db = home_copy(crashed, tmp_path / "home")
    found = frames(Path(f"{db}-wal"))
    assert any(not ours for _, ours, _ in found)  # stale frames of the older log follow
    assert wal_damage(str(db)) is None
    with SQLiteSessionStore(db) as store:
        assert store.count("s") == TURNS


@pytest.mark.parametrize("where", [0.2, 0.5, 0.8])
def test_a_frame_damaged_in_the_middle_is_refused_and_nothing_is_written(
    crashed: Path, tmp_path: Path, where: float
) -> None:
    db = home_copy(crashed, tmp_path / "home")
    ours = [offset for offset, mine, _ in frames(Path(f"{db}-wal")) if mine]
    alter(Path(f"{db}-wal"), ours[int(len(ours) * where)] + 24 + 1000)  # in its page
    before = digests(db)
    with pytest.raises(StoreCorruptedError) as info:
        SQLiteSessionStore(db)
    message = str(info.value)
    assert "write-ahead log" in message
    assert "without an error" in message
    assert "agentmem repair --accept-loss" in message
    assert "restore" in message
    assert digests(db) == before  # SQLite never saw the log: nothing checkpointed away


@pytest.mark.parametrize(
    ("field", "offset"),
    [("magic number", 3), ("page size", 10), ("checkpoint sequence", 12), ("salt", 17)],
)
def test_a_damaged_log_header_is_refused(
    crashed: Path, tmp_path: Path, field: str, offset: int
) -> None:
    # SQLite ignores a log whose header does not hold: every turn in it would be lost.
    db = home_copy(crashed, tmp_path / "home")
    alter(Path(f"{db}-wal"), offset)
    with pytest.raises(StoreCorruptedError, match="damaged at its header"):
        SQLiteSessionStore(db)


def test_a_log_opened_through_a_symlink_is_checked(crashed: Path, tmp_path: Path) -> None:
    # SQLite keeps the log beside the file the link names, not beside the link.
    db = home_copy(crashed, tmp_path / "home")
    ours = [offset for offset, mine, _ in frames(Path(f"{db}-wal")) if mine]
    alter(Path(f"{db}-wal"), ours[len(ours) // 2] + 24 + 1000)
    link = tmp_path / "elsewhere.db"
    link.symlink_to(db)
    with pytest.raises(StoreCorruptedError, match="write-ahead log"):
        SQLiteSessionStore(link)


@pytest.mark.parametrize("cut", ["its last frame torn", "a frame before its commit frame"])
def test_damage_within_the_last_transaction_is_left_to_sqlite(
    crashed: Path, tmp_path: Path, cut: str
) -> None:
    # A power cut may leave any frame of the last transaction torn, unwritten or stale,
    # and a writer killed before publishing it leaves its tail behind the next writer's
    # frames: one transaction either way, which SQLite drops by design (the stale frames
    # of the older log go with it).
    db = home_copy(crashed, tmp_path / "home")
    wal = Path(f"{db}-wal")
    found = [(offset, commit) for offset, mine, commit in frames(wal) if mine]
    if cut == "its last frame torn":
        with wal.open("r+b") as handle:
            handle.truncate(found[-1][0] + 24 + 2000)
    else:
        before_last = max(i for i, (_, commit) in enumerate(found[:-1]) if commit)
        assert len(found) - before_last > 2  # the last transaction spans several frames
        alter(wal, found[before_last + 1][0] + 24 + 100)
    assert wal_damage(str(db)) is None
    with SQLiteSessionStore(db) as store:
        assert store.count("s") == TURNS - 1


def test_damage_to_the_stale_frames_of_an_older_log_is_harmless(
    crashed: Path, tmp_path: Path
) -> None:
    db = home_copy(crashed, tmp_path / "home")
    stale = [offset for offset, ours, _ in frames(Path(f"{db}-wal")) if not ours]
    alter(Path(f"{db}-wal"), stale[len(stale) // 2] + 24 + 1000)
    with SQLiteSessionStore(db) as store:
        assert store.count("s") == TURNS


def test_repair_rebuilds_from_the_frames_before_the_damage_and_names_the_loss(
    crashed: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    db = home_copy(crashed, home)
    ours = [offset for offset, mine, _ in frames(Path(f"{db}-wal")) if mine]
    alter(Path(f"{db}-wal"), ours[len(ours) // 2] + 24 + 1000)
    checked = repair(home)
    assert any("write-ahead log" in line for line in checked.damaged)
    assert not checked.repaired
    report = repair(home, accept_loss=True)
    assert report.repaired
    assert any("write-ahead log" in line and "cannot be read" in line for line in report.lost)
    with SQLiteSessionStore(db) as store:
        kept = store.count("s")
        assert 0 < kept < TURNS
        assert [m.message.content.split()[1] for m in store.read("s")] == [
            str(i) for i in range(kept)
        ]


WRITER = """
import sys, time
from agentmem.stores.sqlite import SQLiteSessionStore
from agentmem.types import Message
store = SQLiteSessionStore(sys.argv[1])
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[2])
i = 0
while time.monotonic() < end:
    store.append("w", [Message(role="user", content=f"w {i} " + "y" * 3000)])
    i += 1
store.close()
print(i, flush=True)
"""


def test_a_log_another_process_is_writing_is_never_taken_for_damage(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    SQLiteSessionStore(db).close()
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), "4"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"
        opened = 0
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert wal_damage(str(db)) is None
            with SQLiteSessionStore(db) as store:
                store.count("w")
            opened += 1
        written = int(writer.stdout.readline())
    finally:
        writer.wait(timeout=30)
    assert writer.returncode == 0
    assert opened > 5
    assert written > 100
    with SQLiteSessionStore(db) as store:
        assert store.count("w") == written


@pytest.mark.parametrize("page_size", [512, 1024, 8192, 65536])
def test_logs_of_every_page_size_are_read(tmp_path: Path, page_size: int) -> None:
    live, db = tmp_path / "live.db", tmp_path / "crashed.db"
    conn = sqlite3.connect(live, isolation_level=None)
    try:
        conn.execute(f"PRAGMA page_size = {page_size}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE t (x TEXT)")
        for i in range(60):
            conn.execute("INSERT INTO t VALUES (?)", (f"{i} " + "z" * 700,))
        for suffix in ("", "-wal"):
            shutil.copy(f"{live}{suffix}", f"{db}{suffix}")
    finally:
        conn.close()
    assert wal_damage(str(db)) is None
    ours = [offset for offset, mine, _ in frames(Path(f"{db}-wal")) if mine]
    alter(Path(f"{db}-wal"), ours[len(ours) // 3] + 24 + page_size // 2)
    assert "damaged at frame" in str(wal_damage(str(db)))
