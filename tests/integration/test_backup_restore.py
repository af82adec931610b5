"""Backups taken while the service serves, restores verified first, and repair.

Real SQLite and Qdrant Edge; the hashing embedder stands in for the model.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from agentmem import MemoryService, backup
from agentmem.backup import BACKUP_FILE, restore, verify
from agentmem.controller.ownership import SessionOwners
from agentmem.errors import (
    ConfigurationError,
    SessionOwnershipError,
    StoreCorruptedError,
    StoreError,
    StoreLockedError,
)
from agentmem.home import RESTORE_MARKER
from agentmem.long_term.records import RecordFilter, Scope
from agentmem.repair import repair
from agentmem.stores.qdrant.edge import LOCK_FILE, QdrantEdgeStore
from agentmem.stores.sqlite import SQLiteSessionStore
from agentmem.types import Message
from tests.fakes import HashingEmbedder
from tests.processes import run_python

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DIM = 64
WRITERS = 4
HISTORY = RecordFilter(include_history=True)
EMPTY = hashlib.sha256(b"").hexdigest()
LIKES = ("green tea", "the Rust compiler", "hiking in Norway", "modal jazz", "tabs")


def open_service(home: Path) -> MemoryService:
    return MemoryService.open(home, embedder=HashingEmbedder(DIM), consolidate_every_tokens=None)


def memory_ids(service: MemoryService, users: list[str]) -> set[str]:
    ids: set[str] = set()
    for user in users:
        ids |= {r.id for r in service.long_term(user).all_records(HISTORY)}
    return ids


def tree(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_python("-m", "agentmem.cli", *args, cwd=ROOT, timeout=300)


@pytest.fixture
def small_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    with open_service(home) as service:
        alice = service.manager("alice", "chat-1")
        for i in range(5):
            alice.process_interaction(f"question {i}", f"answer {i}")
            alice.remember(f"alice likes {LIKES[i]}")
    return home


@pytest.fixture
def other_backup(tmp_path: Path) -> Path:
    """A backup of another home than ``small_home``: bob's, 3 memories and 2 messages."""
    with open_service(tmp_path / "other") as service:
        bob = service.manager("bob", "chat-b")
        bob.process_interaction("bob's question", "bob's answer")
        for like in LIKES[:3]:
            bob.remember(f"bob likes {like}")
        return service.backup(tmp_path / "other-backup").path


# A restore's staging copy of the backup, and the directory the home's entries go aside into.
STAGING = re.compile(r"\.restore-[0-9a-f]{8}")
ASIDE = re.compile(r"\.replaced-[0-9a-f]{8}")


def under(path: str | os.PathLike[str], pattern: re.Pattern[str]) -> bool:
    return any(pattern.fullmatch(part) for part in Path(path).parts)


def leftovers(home: Path) -> list[str]:
    """What a restore may leave in the home: staging, aside, its journal."""
    return sorted(p.name for p in home.iterdir() if p.name.startswith("."))


#: Each user's session, its messages and the user's memories in the two homes.
HELD = {"alice": ("chat-1", 10, 5), "bob": ("chat-b", 2, 3)}


def holds(home: Path, user: str) -> bool:
    """Whether ``home`` holds ``user``'s session and memories and none of the other's."""
    (other,) = set(HELD) - {user}
    session, messages, memories = HELD[user]
    with open_service(home) as service:
        assert service.sessions.count(HELD[other][0]) == 0
        assert service.sessions.count(session) == messages
        assert len(service.long_term(user).all_records()) == memories
        return len(service.long_term(other).all_records()) == 0


def restored_tree(source: Path) -> dict[str, str]:
    """What a complete restore of the backup ``source`` puts in a home (its lock aside)."""
    return {k: v for k, v in tree(source).items() if k != BACKUP_FILE}


def without_lock(files: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in files.items() if k != f"long_term/{LOCK_FILE}"}


def test_backup_during_concurrent_writes_then_restore(tmp_path: Path) -> None:
    home, dest, restored = tmp_path / "home", tmp_path / "backup", tmp_path / "restored"
    users = [f"user{w}" for w in range(WRITERS)]
    acked: list[tuple[float, int, int, str]] = []  # (time, writer, turn, memory id)
    lock = threading.Lock()
    stop = threading.Event()
    service = open_service(home)

    def writer(w: int) -> None:
        manager = service.manager(users[w], f"session-{w}")
        i = 0
        while not stop.is_set():
            manager.process_interaction(f"writer {w} turn {i}", f"ack {w} {i}")
            decision = manager.remember(f"writer {w} remembers fact number {i}")
            # A near-duplicate reinforces the memory it matches and writes nothing.
            stored = decision.existing if decision.action == "reinforce" else decision.record
            assert stored is not None
            with lock:
                acked.append((time.monotonic(), w, i, stored.id))
            i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    try:
        while len(acked) < 40:
            time.sleep(0.05)
        began = time.monotonic()
        report = service.backup(dest)
        ended = time.monotonic()
        deadline = ended + 60
        while sum(a[0] > ended for a in acked) < WRITERS and time.monotonic() < deadline:
            time.sleep(0.05)  # writes go on after the backup
    finally:
        stop.set()
        for t in threads:
            t.join()
        service.close()
    before = [a for a in acked if a[0] < began]
    assert before
    assert len(acked) > len([a for a in acked if a[0] < ended])  # the service kept serving

    result = restore(dest, restored)
    assert result.memories == report.memories
    assert result.messages == report.messages
    with open_service(restored) as back:
        for _, w, turn, _ in before:  # every turn acknowledged before the backup
            texts = [m.message.content for m in back.sessions.read(f"session-{w}")]
            assert f"writer {w} turn {turn}" in texts
        ids = memory_ids(back, users)
        assert {memory for *_, memory in before} <= ids
        total = sum(back.memory_store.count(Scope(user_id=u), filter=HISTORY) for u in users)
        assert total == report.memories  # the count at the backup, no more, no less
        assert sum(back.sessions.count(f"session-{w}") for w in range(WRITERS)) == (report.messages)
    assert repair(restored).damaged == []  # the restored home passes its own verification


def test_backup_report_and_async_twin(small_home: Path, tmp_path: Path) -> None:
    with open_service(small_home) as service:
        report = asyncio.run(service.abackup(tmp_path / "b"))
    assert report.path == (tmp_path / "b").absolute()
    assert (report.sessions, report.messages, report.memories) == (1, 10, 5)
    assert report.files == len([p for p in report.path.rglob("*") if p.is_file()])
    assert report.bytes > 0
    assert report.seconds > 0
    assert verify(report.path) == {"sessions": 1, "messages": 10, "memories": 5}


def test_backup_into_a_non_empty_destination_is_refused(small_home: Path, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    before = tree(dest)
    with open_service(small_home) as service, pytest.raises(ConfigurationError, match="not empty"):
        service.backup(dest)
    assert tree(dest) == before
    done = cli("backup", str(dest), "--home", str(small_home))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "not empty" in done.stderr
    assert tree(dest) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    with open_service(small_home) as service:
        assert service.backup(empty).memories == 5  # an empty directory is fine


def test_cli_backup_and_restore_round_trip(small_home: Path, tmp_path: Path) -> None:
    dest, home = tmp_path / "b", tmp_path / "restored"
    done = cli("backup", str(dest), "--home", str(small_home))
    assert done.returncode == 0, done.stderr
    assert "5 memories" in done.stdout
    done = cli("restore", str(dest), "--home", str(home))
    assert done.returncode == 0, done.stderr
    with open_service(home) as service:
        assert len(service.long_term("alice").all_records()) == 5
        assert service.sessions.count("chat-1") == 10
    # A non-empty home is refused without --force, and replaced with it.
    with open_service(home) as service:
        service.manager("alice", "chat-1").process_interaction("after", "the backup")
    before = tree(home)
    done = cli("restore", str(dest), "--home", str(home))
    assert done.returncode == 1
    assert "--force" in done.stderr
    assert tree(home) == before
    done = cli("restore", str(dest), "--home", str(home), "--force")
    assert done.returncode == 0, done.stderr
    with open_service(home) as service:
        assert service.sessions.count("chat-1") == 10


def test_restore_leaves_out_files_the_backup_does_not_list(
    small_home: Path, other_backup: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Files found beside a backup's own (dropped there later) are not vouched for by its
    # checksums: a stray -wal would be replayed into the restored database.
    (other_backup / "sessions.db-wal").write_bytes(b"not from the backup")
    (other_backup / "long_term" / "stray.bin").write_bytes(b"\x00" * 10)
    restore(other_backup, small_home, force=True)
    assert not (small_home / "sessions.db-wal").exists() or (
        (small_home / "sessions.db-wal").read_bytes() != b"not from the backup"
    )
    assert not (small_home / "long_term" / "stray.bin").exists()
    assert "stray.bin" in caplog.text
    assert "sessions.db-wal" in caplog.text
    assert holds(small_home, "bob")


def test_restore_refuses_a_source_that_is_not_a_backup(small_home: Path, tmp_path: Path) -> None:
    target = tmp_path / "target"
    with pytest.raises(ConfigurationError, match="not an agentmem backup"):
        restore(small_home, target)
    done = cli("restore", str(small_home), "--home", str(target))
    assert done.returncode == 1
    assert done.stderr.startswith("agentmem: ")
    assert done.stderr.count("\n") == 1
    assert not target.exists()


@pytest.mark.parametrize("damage", ["altered", "removed", "manifest altered"])
def test_a_damaged_backup_is_refused_and_nothing_written(
    small_home: Path, tmp_path: Path, damage: str
) -> None:
    dest, target = tmp_path / "b", tmp_path / "target"
    with open_service(small_home) as service:
        service.backup(dest)
    if damage == "manifest altered":
        text = (dest / BACKUP_FILE).read_text().replace('"memories": 5', '"memories": 6')
        (dest / BACKUP_FILE).write_text(text)
    else:
        (victim,) = dest.glob("long_term/segments/*/version.info")
        if damage == "removed":
            victim.unlink()
        else:
            victim.write_bytes(victim.read_bytes()[:-1] + b"9")
    with pytest.raises(StoreCorruptedError, match="damaged"):
        restore(dest, target)
    done = cli("restore", str(dest), "--home", str(target))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "nothing was restored" in done.stderr
    assert not target.exists()


def test_restore_into_a_home_another_process_holds_is_refused(
    small_home: Path, tmp_path: Path
) -> None:
    dest, home = tmp_path / "b", tmp_path / "busy"
    with open_service(small_home) as service:
        service.backup(dest)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from agentmem import MemoryService; from tests.fakes import "
            "HashingEmbedder; s = MemoryService.open(sys.argv[1], embedder=HashingEmbedder(64)); "
            "print('ready', flush=True); sys.stdin.read(); s.close()",
            str(home),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        before = tree(home)
        with pytest.raises(StoreLockedError, match="in use by another process"):
            restore(dest, home, force=True)
        done = cli("restore", str(dest), "--home", str(home), "--force")
        assert done.returncode == 1
        assert done.stderr.count("\n") == 1
        assert "in use by another process" in done.stderr
        assert tree(home) == before
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=120)


def test_repair_reports_what_was_lost_and_keeps_the_rest(small_home: Path) -> None:
    # A message changed on disk: its row fails its checksum.
    conn_path = small_home / "sessions.db"
    data = bytearray(conn_path.read_bytes())
    at = data.index(b"question 3") + 2
    data[at] ^= 0x20
    conn_path.write_bytes(bytes(data))
    # A segment's version.info removed: Edge would open it as empty, silently.
    (victim,) = (small_home / "long_term").glob("segments/*/version.info")
    victim.unlink()
    with pytest.raises(StoreCorruptedError, match=r"version\.info is missing"):
        open_service(small_home)
    before = tree(small_home)
    done = cli("repair", "--home", str(small_home))
    assert done.returncode == 1
    assert "nothing was changed" in done.stderr
    assert tree(small_home) == before
    done = cli("repair", "--accept-loss", "--home", str(small_home))
    assert done.returncode == 0, done.stderr
    assert "agentmem_messages row ('chat-1', 7) failed its checksum" in done.stdout
    found = re.search(r"lost: .*: (\d+) points in all \(of 5 in the manifest\)", done.stdout)
    assert found, done.stdout
    lost = int(found.group(1))
    assert lost > 0
    with open_service(small_home) as service:
        texts = [m.message.content for m in service.sessions.read("chat-1")]
        assert len(texts) == 9
        assert "answer 3" in texts
        assert not [t for t in texts if t.lower() == "question 3"]
        # Exactly what was reported lost is missing; the rest is kept.
        assert len(service.long_term("alice").all_records()) == 5 - lost
    assert repair(small_home).damaged == []


def alter_row(db: Path, table: str, where: str) -> None:
    """Change a row's checksum on disk, as a flipped bit would: the row fails its check."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(f"UPDATE {table} SET crc = crc + 1 WHERE {where}")
    conn.close()


def test_repair_refuses_a_home_a_restore_left_half_replaced(small_home: Path) -> None:
    (small_home / RESTORE_MARKER).write_text("{}")
    before = sorted(p.relative_to(small_home) for p in small_home.rglob("*"))
    with pytest.raises(StoreCorruptedError, match="restore"):
        repair(small_home, accept_loss=True)
    assert sorted(p.relative_to(small_home) for p in small_home.rglob("*")) == before


def test_repair_refuses_a_home_a_running_service_holds(small_home: Path) -> None:
    service = open_service(small_home)
    try:
        alter_row(small_home / "sessions.db", "agentmem_messages", "seq = 3")
        before = tree(small_home)
        with pytest.raises(StoreLockedError, match=re.escape(f"{small_home} is in use")):
            repair(small_home, accept_loss=True)
        assert tree(small_home) == before  # nothing checked, moved or rebuilt
        # The service's later turns still reach the home's database.
        service.manager("alice", "chat-1").process_interaction("after repair", "still here")
    finally:
        service.close()
    assert repair(small_home, accept_loss=True).repaired  # once the service is gone
    with SQLiteSessionStore(small_home / "sessions.db") as store:
        texts = [m.message.content for m in store.read("chat-1")]
    assert len(texts) == 11
    assert texts[-2:] == ["after repair", "still here"]


class _FullDisk(sqlite3.Connection):
    def executemany(self, *args: object) -> sqlite3.Cursor:
        raise sqlite3.OperationalError("database or disk is full")


class _Interrupted(sqlite3.Connection):
    def executemany(self, *args: object) -> sqlite3.Cursor:
        raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("connection", "raised"), [(_FullDisk, StoreError), (_Interrupted, KeyboardInterrupt)]
)
def test_a_repair_that_fails_midway_leaves_the_damaged_database_in_place(
    small_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    connection: type[sqlite3.Connection],
    raised: type[BaseException],
) -> None:
    import agentmem.repair as repair_module

    alter_row(small_home / "sessions.db", "agentmem_messages", "seq = 3")
    before = tree(small_home)
    failing = types.SimpleNamespace(**vars(sqlite3))  # for repair's own connections only
    failing.connect = lambda *a, **k: sqlite3.connect(*a, factory=connection, **k)
    with monkeypatch.context() as patched:
        patched.setattr(repair_module, "sqlite3", failing)
        with pytest.raises(raised) as caught:
            repair(small_home, accept_loss=True)
    if raised is StoreError:
        assert "the damaged database is still in place" in str(caught.value)
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    # No empty store, no temporary file left behind (reading the damaged file may leave
    # SQLite's empty -wal and -shm files beside it).
    after = tree(small_home)
    assert after.pop("sessions.db-wal", EMPTY) == EMPTY
    after.pop("sessions.db-shm", None)
    assert after == before
    # The home is still found damaged, so repair can run again, and keeps what it can.
    assert repair(small_home).damaged
    report = repair(small_home, accept_loss=True)
    assert report.lost == [
        f"{small_home / 'sessions.db'}: agentmem_messages row ('chat-1', 3) failed its checksum"
    ]
    assert repair(small_home).damaged == []
    with SQLiteSessionStore(small_home / "sessions.db") as store:
        assert store.count("chat-1") == 9


def test_a_repair_that_dies_while_swapping_keeps_the_rows_only_the_log_held(
    small_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repair killed after moving the damaged database's -wal aside and before putting the
    rebuilt file in place, then run again at once: the rows that were only in the log are
    kept (the first repair's check checkpointed them into the file before the swap), and
    the second repair's aside directory does not collide with the first's."""
    import agentmem.repair as repair_module

    db = small_home / "sessions.db"
    alter_row(db, "agentmem_messages", "seq = 3")
    # The latest turn is only in the log, as a crash leaves it (not checkpointed).
    store = SQLiteSessionStore(db)
    store.append("chat-1", [Message.create("user", "only in the log")])
    saved = {s: Path(f"{db}{s}").read_bytes() for s in ("", "-wal", "-shm")}
    store.close()  # checkpoints and removes the log: put back the files as they were
    for suffix, data in saved.items():
        Path(f"{db}{suffix}").write_bytes(data)
    assert saved["-wal"]

    real = os.replace

    def dies_at_the_swap(src: object, dst: object) -> None:
        if Path(str(dst)) == db:
            raise KeyboardInterrupt  # the process dies here
        real(src, dst)  # type: ignore[arg-type]

    with monkeypatch.context() as patched:
        patched.setattr(repair_module.os, "replace", dies_at_the_swap)
        with pytest.raises(KeyboardInterrupt):
            repair(small_home, accept_loss=True)
    assert not Path(f"{db}-wal").exists()  # moved aside with the file still in place

    report = repair(small_home, accept_loss=True)
    assert report.repaired
    assert report.lost == [f"{db}: agentmem_messages row ('chat-1', 3) failed its checksum"]
    with SQLiteSessionStore(db) as store:
        texts = [m.message.content for m in store.read("chat-1")]
    assert texts[-1] == "only in the log"
    assert len(texts) == 10
    assert repair(small_home).damaged == []


def test_repair_withholds_a_session_whose_owner_record_was_lost(small_home: Path) -> None:
    with open_service(small_home) as service:
        service.manager("bob", "chat-2").process_interaction("bob's question", "bob's answer")
    alter_row(small_home / "sessions.db", "agentmem_owners", "session_id = 'chat-1'")
    done = cli("repair", "--accept-loss", "--home", str(small_home))
    assert done.returncode == 0, done.stderr
    assert "lost: " in done.stdout
    assert "agentmem_owners row ('chat-1') failed its checksum" in done.stdout
    found = re.search(
        r"lost: .*: session 'chat-1' was not restored \(10 messages, \d+ state values?\): "
        r"its owner record was lost.*",
        done.stdout,
    )
    assert found, done.stdout
    (aside,) = small_home.glob("sessions.db.damaged-*")
    assert str(aside) in found.group(0)
    with open_service(small_home) as service:
        # bob names alice's session: it is not hers any more, but nothing of hers is in it.
        SessionOwners(service.sessions).check("chat-1", ("bob", None))
        assert service.sessions.read("chat-1") == []
        # A session whose owner record held is kept, and stays its owner's.
        assert service.sessions.count("chat-2") == 2
        with pytest.raises(SessionOwnershipError):
            SessionOwners(service.sessions).check("chat-2", ("alice", None))
    # The withheld messages are still in the damaged copy kept aside.
    with SQLiteSessionStore(aside / "sessions.db") as damaged:
        assert [m.message.content for m in damaged.read("chat-1")][:2] == ["question 0", "answer 0"]


def test_a_store_written_before_the_manifest_gets_one(small_home: Path) -> None:
    manifest = small_home / "long_term" / "agentmem-manifest.json"
    manifest.unlink()  # as a store made by an earlier agentmem
    with open_service(small_home) as service:
        assert len(service.long_term("alice").all_records()) == 5
    assert manifest.exists()
    (victim,) = (small_home / "long_term").glob("segments/*/version.info")
    victim.unlink()
    with pytest.raises(StoreCorruptedError, match=r"version\.info"):
        open_service(small_home)


def test_sqlite_schema_2_files_migrate_with_checksums(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    with SQLiteSessionStore(path) as store:
        from agentmem.types import Message

        store.append("s1", [Message(role="user", content="kept across the migration")])
        store.set_state("s1", "k", {"v": 1})
    conn = sqlite3.connect(path)
    with conn:  # what schema 2 wrote: no checksums, no identity
        conn.execute("UPDATE agentmem_messages SET crc = 0")
        conn.execute("UPDATE agentmem_state SET crc = 0")
        conn.execute("DROP TABLE agentmem_identity")
        conn.execute("PRAGMA user_version = 2")
    conn.close()
    (tmp_path / "sessions.db.identity.json").unlink()
    with SQLiteSessionStore(path) as store:
        assert store.read("s1")[0].message.content == "kept across the migration"
        assert store.get_state("s1", "k") == {"v": 1}
        assert store.verify_all() == (1, 1)
    assert (tmp_path / "sessions.db.identity.json").exists()


@pytest.mark.parametrize(
    ("phase", "n", "error"),
    [
        ("aside", 1, OSError),  # the first of the home's entries moved aside
        ("aside", 6, KeyboardInterrupt),
        ("in", 1, KeyboardInterrupt),  # the first of the backup's entries moved in
        ("in", 4, OSError),
        ("in", 7, KeyboardInterrupt),  # the last one
        ("fsync", 1, OSError),  # every entry moved; the sync of the home fails
    ],
)
def test_a_failed_swap_puts_the_home_back(
    small_home: Path,
    other_backup: Path,
    monkeypatch: pytest.MonkeyPatch,
    phase: str,
    n: int,
    error: type[BaseException],
) -> None:
    before = tree(small_home)
    real_replace, real_fsync_tree = os.replace, backup.fsync_tree
    seen = 0

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        nonlocal seen
        if (phase == "aside" and under(dst, ASIDE)) or (phase == "in" and under(src, STAGING)):
            seen += 1
            if seen == n:
                raise error(f"injected at {phase} move {n}")
        real_replace(src, dst)

    def fsync_tree(root: Path) -> None:
        if phase == "fsync" and Path(root) == small_home:
            raise error("injected: the home's sync failed")
        real_fsync_tree(root)

    monkeypatch.setattr(backup.os, "replace", replace)
    monkeypatch.setattr(backup, "fsync_tree", fsync_tree)
    with pytest.raises(error, match="injected"):
        restore(other_backup, small_home, force=True)
    monkeypatch.undo()
    assert tree(small_home) == before  # every file of the home, byte for byte
    assert leftovers(small_home) == []  # no staging, no aside, no journal
    assert holds(small_home, "alice")
    report = restore(other_backup, small_home, force=True)  # and it can be retried
    assert report.replaced
    assert holds(small_home, "bob")


# Restores the backup argv[1] into the home argv[2] with force, and SIGKILLs itself just
# before the argv[4]-th move of the phase argv[3]: "aside" (a home's entry moved aside), "in"
# (a backup's entry moved in) or "cleanup" (every move done, the old entries being deleted).
KILLED_RESTORE = """
import os, re, shutil, signal, sys
from pathlib import Path
from agentmem.backup import restore

src, home, phase, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
staging, aside = re.compile(r"\\.restore-[0-9a-f]{8}"), re.compile(r"\\.replaced-[0-9a-f]{8}")
real_replace, real_rmtree = os.replace, shutil.rmtree
seen = 0

def under(path, pattern):
    return any(pattern.fullmatch(part) for part in Path(path).parts)

def reached():
    global seen
    seen += 1
    if seen == n:
        os.kill(os.getpid(), signal.SIGKILL)

def replace(src, dst):
    if (phase == "aside" and under(dst, aside)) or (phase == "in" and under(src, staging)):
        reached()
    real_replace(src, dst)

def rmtree(path, *args, **kwargs):
    if phase == "cleanup" and aside.fullmatch(Path(path).name):
        reached()
    real_rmtree(path, *args, **kwargs)

os.replace, shutil.rmtree = replace, rmtree
restore(src, home, force=True)
print("not killed")
"""


def kill_a_restore(source: Path, home: Path, phase: str, n: int) -> None:
    done = run_python("-c", KILLED_RESTORE, str(source), str(home), phase, str(n), cwd=ROOT)
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize("then", ["recover", "restore again"])
@pytest.mark.parametrize(
    ("phase", "n"), [("aside", 1), ("aside", 5), ("in", 1), ("in", 4), ("in", 7), ("cleanup", 1)]
)
def test_a_killed_restore_is_refused_at_open_then_settled(
    small_home: Path, other_backup: Path, phase: str, n: int, then: str
) -> None:
    before = tree(small_home)
    kill_a_restore(other_backup, small_home, phase, n)
    assert (small_home / RESTORE_MARKER).exists()
    # Neither store of the half-replaced home opens, however it is opened.
    with pytest.raises(StoreCorruptedError, match="agentmem restore") as refused:
        open_service(small_home)
    assert "unfinished restore" in str(refused.value)
    with pytest.raises(StoreCorruptedError, match="unfinished restore"):
        SQLiteSessionStore(small_home / "sessions.db")
    with pytest.raises(StoreCorruptedError, match="unfinished restore"):
        QdrantEdgeStore(small_home / "long_term", dimension=DIM)
    complete = phase == "cleanup"  # killed once every entry of the backup was in place
    if then == "recover":
        assert backup.recover_restore(small_home) == ("completed" if complete else "rolled back")
        assert backup.recover_restore(small_home) is None
        if complete:
            assert without_lock(tree(small_home)) == restored_tree(other_backup)
        else:
            assert tree(small_home) == before  # the old home, all of it
        assert leftovers(small_home) == []
        assert holds(small_home, "bob") if complete else holds(small_home, "alice")
    else:
        report = restore(other_backup, small_home, force=True)
        assert report.replaced
        assert without_lock(tree(small_home)) == restored_tree(other_backup)
        assert leftovers(small_home) == []
        assert holds(small_home, "bob")


def test_cli_restore_after_a_killed_one_rolls_it_back_first(
    small_home: Path, other_backup: Path
) -> None:
    before = tree(small_home)
    kill_a_restore(other_backup, small_home, "in", 2)
    # Every entry of the home was moved aside: it looks empty, but is not.
    done = cli("restore", str(other_backup), "--home", str(small_home))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "an interrupted restore was rolled back first" in done.stderr
    assert "--force" in done.stderr
    assert tree(small_home) == before
    assert leftovers(small_home) == []
    kill_a_restore(other_backup, small_home, "aside", 3)
    done = cli("restore", str(other_backup), "--home", str(small_home), "--force")
    assert done.returncode == 0, done.stderr
    assert "an interrupted restore into it was rolled back first" in done.stderr
    assert "replaced the stores that were there" in done.stdout
    assert leftovers(small_home) == []
    assert holds(small_home, "bob")


def test_an_unreadable_restore_journal_is_refused_untouched(
    small_home: Path, other_backup: Path
) -> None:
    (small_home / RESTORE_MARKER).write_text('{"format": "agentmem-restore", "staging": "../../x"}')
    before = tree(small_home)
    with pytest.raises(StoreCorruptedError, match="cannot be read"):
        restore(other_backup, small_home, force=True)
    with pytest.raises(StoreCorruptedError, match="cannot be read"):
        backup.recover_restore(small_home)
    assert tree(small_home) == before
