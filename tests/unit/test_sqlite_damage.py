"""A damaged SQLite session database is refused at open, and nothing is written into it.

SQLite reads only the pages a statement needs, so a file damaged in the middle used to open
and take new writes. The store now runs ``PRAGMA quick_check`` on a read-only connection at
open and raises ``StoreCorruptedError`` naming the path and the recovery.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from agentmem.errors import StoreCorruptedError, StoreError
from agentmem.stores.sqlite import SQLiteSessionStore
from agentmem.types import Message

PAGE = 4096


def fill(store: SQLiteSessionStore, sessions: int = 20, per_session: int = 60) -> None:
    for s in range(sessions):
        batch = [
            Message(role="user", content=f"session {s} message {i} " + "lorem ipsum " * 40)
            for i in range(per_session)
        ]
        store.append(f"s{s}", batch)
        store.set_state(f"s{s}", "working_memory", {"turn": s, "notes": ["n" * 300] * 3})


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed, healthy session database of about 2 MB (WAL checkpointed into the file)."""
    path = tmp_path_factory.mktemp("sqlite") / "sessions.db"
    with SQLiteSessionStore(path) as store:
        fill(store)
    assert path.stat().st_size > 1_000_000
    return path


def copy(pristine: Path, target: Path) -> Path:
    shutil.copy(pristine, target)
    return target


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def overwrite_page(path: Path, fraction: float, byte: bytes = b"\xa5") -> None:
    offset = (int(path.stat().st_size * fraction) // PAGE) * PAGE
    with path.open("r+b") as handle:
        handle.seek(offset)
        handle.write(byte * PAGE)


DAMAGE: list[tuple[str, Callable[[Path], None]]] = [
    ("garbage page at 25%", lambda p: overwrite_page(p, 0.25)),
    ("garbage page at 50%", lambda p: overwrite_page(p, 0.50)),
    ("garbage page at 75%", lambda p: overwrite_page(p, 0.75)),
    ("zeroed page at 50%", lambda p: overwrite_page(p, 0.50, b"\0")),
    ("truncated to 60%", lambda p: os.truncate(p, int(p.stat().st_size * 0.6))),
    ("header overwritten", lambda p: overwrite_page(p, 0.0)),
]


@pytest.mark.parametrize(("case", "damage"), DAMAGE, ids=[d[0] for d in DAMAGE])
def test_damaged_file_is_refused_and_left_unchanged(
    pristine: Path, tmp_path: Path, case: str, damage: Callable[[Path], None]
) -> None:
    path = copy(pristine, tmp_path / "sessions.db")
    damage(path)
    before = digest(path)
    with pytest.raises(StoreCorruptedError) as info:
        SQLiteSessionStore(path)
    message = str(info.value)
    assert repr(str(path)) in message
    assert "corrupted or not a SQLite database" in message
    assert "mv " in message
    assert "backup" in message
    assert info.value.path == str(path)
    assert digest(path) == before


@pytest.mark.parametrize(
    "content",
    [b"this is not a database at all\n" * 200, os.urandom(3 * PAGE), b"SQLite format 3\0" + b"x"],
    ids=["text", "random bytes", "bare header"],
)
def test_a_file_that_is_not_sqlite_is_refused_unchanged(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "sessions.db"
    path.write_bytes(content)
    with pytest.raises(StoreCorruptedError, match="corrupted or not a SQLite database"):
        SQLiteSessionStore(path)
    assert path.read_bytes() == content


def test_committed_log_is_not_checkpointed_into_a_damaged_file(
    pristine: Path, tmp_path: Path
) -> None:
    """Closing a read-write connection would copy the -wal into the damaged main file."""
    live = copy(pristine, tmp_path / "live.db")
    path = tmp_path / "sessions.db"
    store = SQLiteSessionStore(live)
    try:
        store.append("late", [Message(role="user", content="only in the log " * 30)] * 50)
        for suffix in ("", "-wal", "-shm"):  # the files as a crash would leave them
            shutil.copy(f"{live}{suffix}", f"{path}{suffix}")
    finally:
        store.close()
    assert Path(f"{path}-wal").stat().st_size > 0
    overwrite_page(path, 0.5)
    before = (digest(path), digest(Path(f"{path}-wal")))
    with pytest.raises(StoreCorruptedError):
        SQLiteSessionStore(path)
    assert (digest(path), digest(Path(f"{path}-wal"))) == before


def test_healthy_file_opens_and_its_log_is_replayed(pristine: Path, tmp_path: Path) -> None:
    path = copy(pristine, tmp_path / "sessions.db")
    with SQLiteSessionStore(path) as store:
        assert store.count("s7") == 60
        store.append("s7", [Message(role="user", content="one more")])
    with SQLiteSessionStore(path) as store:
        assert store.count("s7") == 61


def test_without_quick_check_damage_is_still_an_agentmem_error_when_read(
    pristine: Path, tmp_path: Path
) -> None:
    path = copy(pristine, tmp_path / "sessions.db")
    overwrite_page(path, 0.5)

    def read_everything(store: SQLiteSessionStore) -> None:
        for s in range(20):
            store.read(f"s{s}")

    store = SQLiteSessionStore(path, quick_check=False)  # opens: the pages are not read yet
    try:
        with pytest.raises(StoreCorruptedError):
            read_everything(store)
    finally:
        store.close()


def test_corrupted_is_a_store_error() -> None:
    assert issubclass(StoreCorruptedError, StoreError)
