"""SQLite-only behaviour: file format, locking and failure reporting.

Behaviour shared by every backend lives in ``tests/conformance``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentmem.errors import (
    ConfigurationError,
    InvalidMessageError,
    InvalidValueError,
    StoreClosedError,
    StoreError,
)
from agentmem.stores.sqlite import SCHEMA_VERSION, SQLiteSessionStore
from agentmem.types import Message


def msg(text: str) -> Message:
    return Message(role="user", content=text)


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


def test_new_file_is_wal_with_a_schema_version(db: Path) -> None:
    SQLiteSessionStore(db).close()
    conn = raw(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_in_memory_stores_are_private() -> None:
    with SQLiteSessionStore(":memory:") as one, SQLiteSessionStore(":memory:") as two:
        one.append("s1", [msg("only in one")])
        assert two.count("s1") == 0
        assert [m.message.content for m in one.read("s1")] == ["only in one"]


def test_context_manager_closes(db: Path) -> None:
    with SQLiteSessionStore(db) as store:
        store.append("s1", [msg("x")])
    with pytest.raises(StoreClosedError, match="closed"):
        store.count("s1")


def test_newer_schema_is_refused_and_left_alone(db: Path) -> None:
    SQLiteSessionStore(db).close()
    conn = raw(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="upgrade agentmem"):
        SQLiteSessionStore(db)
    conn = raw(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    conn.close()


@pytest.mark.parametrize("pragma", ["user_version = 7", "application_id = 1234"])
def test_another_applications_database_is_refused(db: Path, pragma: str) -> None:
    conn = raw(db)
    conn.execute("CREATE TABLE theirs (x)")
    conn.execute(f"PRAGMA {pragma}")
    conn.close()
    with pytest.raises(StoreError, match="another application"):
        SQLiteSessionStore(db)


def test_corrupted_file_is_reported(db: Path) -> None:
    db.write_bytes(b"this is not a database at all\n" * 200)
    with pytest.raises(StoreError, match="corrupted or not a SQLite database"):
        SQLiteSessionStore(db)


def test_missing_directory_is_reported_and_open_creates_it(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "sessions.db"
    with pytest.raises(StoreError, match="directory exists"):
        SQLiteSessionStore(path)
    with SQLiteSessionStore.open(path) as store:
        store.append("s1", [msg("x")])
    assert path.exists()


@pytest.mark.parametrize(
    "kwargs", [{"timeout": -1}, {"timeout": "5"}, {"synchronous": "off"}], ids=str
)
def test_bad_options_are_refused(db: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        SQLiteSessionStore(db, **kwargs)


def test_full_synchronous_mode_works(db: Path) -> None:
    with SQLiteSessionStore(db, synchronous="full") as store:
        assert store.append("s1", [msg("durable")]) == [1]


def test_locked_database_times_out_with_a_clear_error_and_reads_still_work(db: Path) -> None:
    store = SQLiteSessionStore(db, timeout=0.2)
    store.append("s1", [msg("before")])
    holder = raw(db)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match=r"locked.*0\.2 s"):
            store.append("s1", [msg("blocked")])
        # WAL: readers are not blocked by a writer.
        assert [m.message.content for m in store.read("s1")] == ["before"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    store.append("s1", [msg("after")])
    assert [m.message.content for m in store.read("s1")] == ["before", "after"]
    store.close()


def test_writer_waits_for_the_lock_instead_of_failing(db: Path) -> None:
    store = SQLiteSessionStore(db, timeout=30)
    holder = raw(db)
    holder.execute("BEGIN IMMEDIATE")
    outcome: list[object] = []

    def write() -> None:
        try:
            outcome.append(store.append("s1", [msg("waited")]))
        except Exception as exc:
            outcome.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.3)  # let the writer hit the held lock
    holder.execute("COMMIT")
    holder.close()
    writer.join(timeout=30)
    assert outcome == [[1]]
    store.close()


def test_failed_append_writes_nothing(db: Path) -> None:
    store = SQLiteSessionStore(db)
    store.append("s1", [msg("kept")])
    conn = raw(db)
    conn.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON agentmem_messages "
        "WHEN NEW.body LIKE '%boom%' BEGIN SELECT RAISE(ABORT, 'boom'); END"
    )
    conn.close()
    with pytest.raises(StoreError, match=r"could not append messages in .*: boom$"):
        store.append("s1", [msg("first of batch"), msg("boom")])
    assert [m.message.content for m in store.read("s1")] == ["kept"]
    assert store.count("s1") == 1
    assert store.append("s1", [msg("next")]) == [2]
    store.close()


def test_non_message_is_refused_before_writing(db: Path) -> None:
    with SQLiteSessionStore(db) as store:
        with pytest.raises(InvalidMessageError, match=r"messages\[1\].*to_message"):
            store.append("s1", [msg("ok"), {"role": "user", "content": "dict"}])  # type: ignore[list-item]
        assert store.count("s1") == 0
        assert store.sessions() == []


def test_empty_state_key_is_refused(db: Path) -> None:
    with SQLiteSessionStore(db) as store, pytest.raises(InvalidValueError, match="state key"):
        store.set_state("s1", "", {})


def test_unreadable_stored_message_is_reported(db: Path) -> None:
    with SQLiteSessionStore(db) as store:
        store.append("s1", [msg("x")])
        conn = raw(db)
        conn.execute("UPDATE agentmem_messages SET body = '{not json'")
        conn.close()
        with pytest.raises(StoreError, match=r"message 1 of session 's1'.*unreadable"):
            store.read("s1")


class _FullDisk(sqlite3.Connection):
    """A copy whose last step fails as on a full disk (after the pages were written)."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.startswith("PRAGMA journal_mode"):
            raise sqlite3.OperationalError("database or disk is full")
        return super().execute(sql, *args)


def test_a_failed_backup_leaves_nothing_and_can_be_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    store.append("s1", [Message(role="user", content="hi")])
    out = tmp_path / "backup"
    out.mkdir()
    real = sqlite3.connect

    def connect(path: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if str(path).startswith(str(out)):
            kwargs["factory"] = _FullDisk
        return real(path, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    with pytest.raises(StoreError, match="could not back up") as info:
        store.backup_to(out / "sessions.db")
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)
    assert list(out.iterdir()) == []  # no partial copy, no identity record
    monkeypatch.undo()
    store.backup_to(out / "sessions.db")  # the path is free for another try
    assert SQLiteSessionStore(out / "sessions.db").count("s1") == 1
    store.close()


def test_appends_are_idempotent_by_message_id(db: Path) -> None:
    a, b, c = msg("a"), msg("b"), msg("c")
    with SQLiteSessionStore(db) as store:
        assert store.append("s1", [a, b]) == [1, 2]
        assert store.append("s1", [a, b]) == [1, 2]  # a retry: stored once
        assert store.append("s1", [b, c, c]) == [2, 3, 3]  # only what is new, once
        assert store.append("s2", [a]) == [1]  # ids are per session
        assert [m.message.content for m in store.read("s1")] == ["a", "b", "c"]
        assert (store.count("s1"), store.last_seq("s1")) == (3, 3)
        assert asyncio.run(store.aappend("s1", [c])) == [3]


def test_a_file_made_before_the_id_index_gets_it_at_open(db: Path) -> None:
    with SQLiteSessionStore(db) as store:
        store.append("s1", [msg("a"), msg("b")])
    conn = raw(db)
    conn.execute("DROP INDEX agentmem_messages_by_id")
    conn.execute("UPDATE agentmem_messages SET body = '{not json' WHERE seq = 2")  # damaged
    conn.close()
    with SQLiteSessionStore(db) as store:  # the damaged row does not stop the index
        first = store.read("s1", limit=1)[0].message
        assert store.append("s1", [first]) == [1]
        assert store.count("s1") == 2
    indexes = raw(db).execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    assert ("agentmem_messages_by_id",) in indexes
