"""SQLite session store: the embedded default for messages, summaries and working memory.

One file holds every session. The database runs in WAL mode (readers never block the
writer), waits ``timeout`` seconds for a busy lock instead of failing, and takes the write
lock up front (``BEGIN IMMEDIATE``) so concurrent writers, in threads or in other
processes, queue up rather than fail half-way.

Example:
    >>> from agentmem.stores.sqlite import SQLiteSessionStore
    >>> from agentmem.types import Message
    >>> with SQLiteSessionStore(":memory:") as store:
    ...     store.append("s1", [Message(role="user", content="hi")])
    [1]
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import ValidationError
from typing_extensions import TypedDict, Unpack

from agentmem._util.checks import check_seconds
from agentmem._util.durable import fsync_dir, fsync_file
from agentmem._util.session_ids import validate_session_id
from agentmem.errors import (
    ConfigurationError,
    StoreClosedError,
    StoreError,
)
from agentmem.home import check_no_interrupted_restore
from agentmem.stores import _sqlite_integrity as integrity
from agentmem.stores._sqlite_wal import wal_damage
from agentmem.stores.base import (
    StoredMessage,
    SyncSessionStore,
    check_messages,
    check_state_key,
    dump_state,
)
from agentmem.types import Message

__all__ = ["SCHEMA_VERSION", "SQLiteOptions", "SQLiteSessionStore"]

SCHEMA_VERSION = 3
"""Version of the table layout, kept in ``PRAGMA user_version``.

Version 2 added ``agentmem_owners``; version 3 a checksum (``crc``) on every message, state
and owner row, verified on read, and ``agentmem_identity``, the store's identity record
(also kept beside the file, see :mod:`agentmem.stores._sqlite_integrity`). Older files
migrate at open, their checksums computed then."""

# "agmm": marks the file as ours, so we never write our tables into another app's database.
_APPLICATION_ID = 0x61676D6D

# Messages get a rowid table plus a unique index: bodies can be kilobytes, and SQLite
# advises WITHOUT ROWID only for small rows. agentmem_sessions keeps each session's last
# seq even after clear(), so seqs are never reused.
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS agentmem_sessions (
        session_id TEXT PRIMARY KEY,
        last_seq INTEGER NOT NULL,
        message_count INTEGER NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS agentmem_messages (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        body TEXT NOT NULL,
        crc INTEGER NOT NULL DEFAULT 0,
        UNIQUE (session_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS agentmem_state (
        session_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        crc INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (session_id, key)
    ) WITHOUT ROWID""",
    # Version 2: who owns each session (kept by clear()). Version-1 files get the table at
    # open; their sessions get an owner on first use (agentmem.controller.ownership).
    """CREATE TABLE IF NOT EXISTS agentmem_owners (
        session_id TEXT PRIMARY KEY,
        record TEXT NOT NULL,
        crc INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID""",
    # Version 3: the store's identity (see _sqlite_integrity) and a checksum per row.
    """CREATE TABLE IF NOT EXISTS agentmem_identity (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID""",
)
# Finds a session's message by its id, so an append is idempotent by message id. An index,
# not a table change: files of schema version 3 get it at open (older agentmem versions
# keep it up to date without knowing it).
_ID_INDEX = "agentmem_messages_by_id"
# A body that is not JSON (a damaged row, reported when read) has no id, not an error.
_ID_OF_BODY = "(CASE WHEN json_valid(body) THEN json_extract(body, '$.id') END)"
_ID_INDEX_DDL = (
    f"CREATE INDEX IF NOT EXISTS {_ID_INDEX} ON agentmem_messages (session_id, {_ID_OF_BODY})"
)
_TABLES = frozenset(
    {
        "agentmem_sessions",
        "agentmem_messages",
        "agentmem_state",
        "agentmem_owners",
        "agentmem_identity",
    }
)
# The rows with a checksum: (table, key columns, data column), as integrity.row_crc takes them.
_CHECKED = (
    ("agentmem_messages", ("session_id", "seq"), "body"),
    ("agentmem_state", ("session_id", "key"), "value"),
    ("agentmem_owners", ("session_id",), "record"),
)

_IN_MEMORY = (":memory:", "")


class SQLiteOptions(TypedDict, total=False):
    """The :class:`SQLiteSessionStore` constructor's keyword arguments (their defaults are
    the constructor's), as :meth:`SQLiteSessionStore.open` takes them."""

    timeout: float
    synchronous: Literal["normal", "full"]
    quick_check: bool


def _put_owner(
    conn: sqlite3.Connection, session_id: str, raw: str, *, conflict: Literal["IGNORE", "REPLACE"]
) -> None:
    """Write a session's ownership record with its row checksum; on a record already there,
    ``IGNORE`` keeps it (first claim wins) and ``REPLACE`` overwrites it."""
    conn.execute(
        f"INSERT OR {conflict} INTO agentmem_owners (session_id, record, crc) VALUES (?, ?, ?)",
        (session_id, raw, integrity.row_crc(session_id, raw)),
    )


class SQLiteSessionStore(SyncSessionStore):
    """Session store in one SQLite file, safe for many threads and many processes.

    The store keeps one connection guarded by a lock: SQLite admits one writer at a time
    anyway, a single connection also serves ``":memory:"`` databases, and ``close()`` can
    release it deterministically from any thread. Other processes open their own store on
    the same path; they serialize on SQLite's file lock.

    Args:
        path: Database file (created if missing; its directory must exist), or
            ``":memory:"`` for a private in-memory database.
        timeout: Seconds to wait for another writer's lock before raising
            :class:`~agentmem.errors.StoreError`.
        synchronous: ``"normal"`` (default) never corrupts the database and loses nothing
            when the process crashes; a power cut may drop the last few commits.
            ``"full"`` also survives power cuts, at the cost of an fsync per write.
        quick_check: Check the whole file with ``PRAGMA quick_check`` before anything is
            written, so a file damaged anywhere is refused instead of written into. It
            reads every page: about 50 ms for a 50 MB file in the page cache, about 0.75 s
            from a cold disk. Pass ``False`` only for a file checked some other way.

    Raises:
        StoreCorruptedError: The file is damaged or is not a SQLite database (nothing is
            written to it; the message says how to recover), or its directory is a home a
            restore is replacing, or was interrupted replacing (see
            :func:`agentmem.home.check_no_interrupted_restore`).
        StoreError: The file cannot be opened, is not an agentmem database, or was written
            by a newer agentmem.

    Example:
        >>> from agentmem.types import Message
        >>> store = SQLiteSessionStore(":memory:")
        >>> store.append("s1", [Message(role="user", content="hi")])
        [1]
        >>> store.count("s1")
        1
        >>> store.close()
    """

    exclusive_appends: ClassVar[bool] = True  # see ExclusiveAppends

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        synchronous: Literal["normal", "full"] = "normal",
        quick_check: bool = True,
    ) -> None:
        check_seconds(timeout, "timeout")
        if synchronous not in ("normal", "full"):
            msg = f"synchronous must be 'normal' or 'full', got {synchronous!r}"
            raise ConfigurationError(msg)
        self._path = os.fspath(path)
        self._timeout = float(timeout)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self.store_id = ""
        """The id made when the store was created (kept in the file and beside it)."""
        self._conn: sqlite3.Connection | None = self._connect(synchronous, bool(quick_check))

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], **options: Unpack[SQLiteOptions]
    ) -> SQLiteSessionStore:
        """Open (or create) the store at ``path``, creating missing parent directories
        (``options``: the constructor's, with its defaults).

        Example:
            >>> import tempfile, pathlib
            >>> tmp = pathlib.Path(tempfile.mkdtemp())
            >>> store = SQLiteSessionStore.open(tmp / "agentmem" / "sessions.db")
            >>> store.sessions()
            []
            >>> store.close()
        """
        if os.fspath(path) not in _IN_MEMORY:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        return cls(path, **options)

    @property
    def path(self) -> str:
        """The database path as given (``":memory:"`` for in-memory stores)."""
        return self._path

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else "open"
        return f"SQLiteSessionStore({self._path!r}, {state})"

    # -- connection and schema ------------------------------------------------------------

    def _connect(self, synchronous: str, quick_check: bool) -> sqlite3.Connection:
        self._check_not_lost()
        # Before any connection: the first one replays the log, dropping in silence every
        # transaction after a damaged frame (see agentmem.stores._sqlite_wal).
        if self._path not in _IN_MEMORY and (damage := wal_damage(self._path)) is not None:
            raise integrity.lost(self._path, damage)
        checked = (
            not quick_check
            or self._path in _IN_MEMORY
            or integrity.check_file(self._path, self._timeout)
        )
        try:
            # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves.
            conn = sqlite3.connect(
                self._path, timeout=self._timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._failure(exc, "open the session database") from exc
        try:
            with self._errors("open the session database"):
                conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
                if not checked:  # a new file, or one SQLite must recover first
                    integrity.check_integrity(conn, self._path)
                mode = self._switch_to_wal(conn)
                if mode != "wal" and self._path not in _IN_MEMORY:
                    msg = (
                        f"could not switch {self._path!r} to WAL journal mode (it stays in "
                        f"{mode!r}); WAL needs a local file system with shared-memory support, "
                        "so keep the database off network drives"
                    )
                    raise StoreError(msg)
                conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
                self._migrate(conn)
                self.store_id = self._identity(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_not_lost(self) -> None:
        """Refuse a missing or empty file where the identity record says a store was, and a
        file in a home an unfinished restore is replacing."""
        if self._path in _IN_MEMORY:
            return
        check_no_interrupted_restore(Path(self._path).parent)
        store_id = integrity.read_identity(self._path)
        if store_id is None:
            return
        try:
            size = os.path.getsize(self._path)
        except FileNotFoundError:
            size = -1
        if size <= 0:
            state = "is missing" if size < 0 else "is empty"
            where = integrity.identity_path(self._path).name
            detail = (
                f"the file {state}, but {where} beside it records that session store "
                f"{store_id} was created here, so its sessions are gone"
            )
            raise integrity.lost(self._path, detail)

    def _identity(self, conn: sqlite3.Connection) -> str:
        """The store's id (made at creation), also written beside the file."""
        row = conn.execute("SELECT value FROM agentmem_identity WHERE key = 'store_id'").fetchone()
        if row is None:
            raise integrity.lost(self._path, "its identity record is gone")
        store_id = str(row[0])
        if self._path not in _IN_MEMORY:
            integrity.write_identity(self._path, store_id)
        return store_id

    def _switch_to_wal(self, conn: sqlite3.Connection) -> str:
        # When several processes open a fresh file at once, the switch to WAL fails with
        # "database is locked" at once, without calling the busy handler: retry until timeout.
        deadline = time.monotonic() + self._timeout
        delay = 0.005
        while True:
            try:
                return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(2 * delay, 0.1)

    def _migrate(self, conn: sqlite3.Connection) -> None:
        if self._schema_ok(conn):
            self._check_tables(conn)
            self._add_id_index(conn)
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-check under the write lock: another process may have created it meanwhile.
            if not self._schema_ok(conn):
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
                if version == 0:
                    self._check_new(conn)
                for statement in (*_SCHEMA, _ID_INDEX_DDL):
                    conn.execute(statement)
                if version:  # an earlier layout: its rows get their checksums now
                    _add_checksums(conn)
                conn.execute(
                    "INSERT OR IGNORE INTO agentmem_identity (key, value) VALUES (?, ?)",
                    ("store_id", uuid.uuid4().hex),
                )
                conn.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise
        self._check_tables(conn)

    def _add_id_index(self, conn: sqlite3.Connection) -> None:
        """Index messages by id in a file made before the index (once: it reads every
        message)."""
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (_ID_INDEX,)
        ).fetchone()
        if found is not None:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_ID_INDEX_DDL)
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise

    def _check_new(self, conn: sqlite3.Connection) -> None:
        """A file without a schema is new, unless the identity beside it says otherwise."""
        if self._path in _IN_MEMORY:
            return
        store_id = integrity.read_identity(self._path)
        if store_id is not None:
            where = integrity.identity_path(self._path).name
            detail = (
                f"it holds no agentmem schema, but {where} beside it records that session "
                f"store {store_id} was created here, so its sessions are gone"
            )
            raise integrity.lost(self._path, detail)
        tables = _table_names(conn)
        if tables & _TABLES:
            detail = f"it holds agentmem tables ({', '.join(sorted(tables & _TABLES))}) but "
            raise integrity.lost(self._path, detail + "lost its schema version")

    def _check_tables(self, conn: sqlite3.Connection) -> None:
        missing = _TABLES - _table_names(conn)
        if missing:
            raise integrity.lost(self._path, f"its tables {', '.join(sorted(missing))} are gone")

    def _schema_ok(self, conn: sqlite3.Connection) -> bool:
        """True when the schema is current, False when it must be created; raise otherwise."""
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if app_id not in (0, _APPLICATION_ID) or (app_id == 0 and version != 0):
            msg = (
                f"{self._path!r} is a SQLite database of another application (application_id "
                f"{app_id:#x}, user_version {version}); give agentmem a file of its own"
            )
            raise StoreError(msg)
        if version > SCHEMA_VERSION:
            msg = (
                f"{self._path!r} uses session-store schema version {version}, but this "
                f"agentmem only knows version {SCHEMA_VERSION}; upgrade agentmem to open it"
            )
            raise StoreError(msg)
        return version == SCHEMA_VERSION

    def _describe(self, exc: sqlite3.Error, action: str) -> str:
        text = str(exc)
        where = f"session database {self._path!r}"
        if "locked" in text or "busy" in text:
            return (
                f"could not {action}: {where} is locked; another connection held the write "
                f"lock for more than {self._timeout:g} s. Find the process holding it, or pass "
                "a larger timeout="
            )
        if "unable to open" in text:
            return (
                f"could not {action}: cannot open {where} ({text}); check that its directory "
                "exists and is writable (SQLiteSessionStore.open creates missing directories)"
            )
        return f"could not {action} in {where}: {text}"

    def _failure(self, exc: sqlite3.Error, action: str) -> StoreError:
        if integrity.is_corruption(exc):
            return integrity.corrupted(self._path, f"could not {action}: {exc}")
        return StoreError(self._describe(exc, action))

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise self._failure(exc, action) from exc

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            msg = f"SQLiteSessionStore({self._path!r}) is closed; open a new store to use it"
            raise StoreClosedError(msg)
        if os.getpid() != self._pid:
            msg = (
                "this SQLiteSessionStore was opened in another process (before a fork); "
                "SQLite connections cannot cross fork(), open a new store in this process"
            )
            raise StoreError(msg)
        return self._conn

    @contextmanager
    def _read(self, action: str) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors(action):
            yield self._connection()

    @contextmanager
    def _write(self, action: str) -> Iterator[sqlite3.Connection]:
        """One all-or-nothing transaction holding SQLite's write lock from the start."""
        with self._lock, self._errors(action):
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise

    def _check(self, session_id: str) -> None:
        if self._conn is None:
            self._connection()
        validate_session_id(session_id)

    # -- messages -------------------------------------------------------------------------

    def append(
        self, session_id: str, messages: Sequence[Message], *, exclusive: bool = False
    ) -> list[int]:
        """Append ``messages`` atomically; return their seqs (strictly increasing for the
        new ones).

        Idempotent by message id, as the Redis store is: a message whose id is already in
        the session (or earlier in ``messages``) is not stored again, and its seq is the one
        it was stored with. So a retry of an append whose outcome was unknown, or two
        processes appending one turn's messages (``process_interaction(turn_id=...)``
        derives their ids from the turn) at once, store each message once.

        ``exclusive=True`` stores the batch only if the session holds none of its ids: if
        it holds any, nothing is stored, and a message it does not hold gets seq 0. Two
        attempts of one turn with other messages (another process's model answered anew,
        and at another length) then never leave the log holding parts of both.

        Example:
            >>> from agentmem.types import Message
            >>> store = SQLiteSessionStore(":memory:")
            >>> said = [Message(role="user", content="a"), Message(role="assistant", content="b")]
            >>> store.append("s1", said)
            [1, 2]
            >>> store.append("s1", said), store.count("s1")  # the same messages again
            ([1, 2], 2)
        """
        self._check(session_id)
        checked = check_messages(messages)
        if not checked:
            return []
        bodies = [m.to_json() for m in checked]
        ids = [m.id for m in checked]
        with self._write("append messages") as conn:
            known = self._seqs_of(conn, session_id, ids)
            if exclusive and known:
                return [known.get(i, 0) for i in ids]
            new: dict[str, str] = {}  # id -> body, in order, each id once
            for message_id, body in zip(ids, bodies, strict=True):
                if message_id not in known:
                    new.setdefault(message_id, body)
            if new:
                row = conn.execute(
                    "SELECT last_seq FROM agentmem_sessions WHERE session_id = ?", (session_id,)
                ).fetchone()
                first = (row[0] if row else 0) + 1
                seqs = list(range(first, first + len(new)))
                if row:
                    conn.execute(
                        "UPDATE agentmem_sessions SET last_seq = ?, "
                        "message_count = message_count + ? WHERE session_id = ?",
                        (seqs[-1], len(new), session_id),
                    )
                else:
                    conn.execute(
                        "INSERT INTO agentmem_sessions (session_id, last_seq, message_count) "
                        "VALUES (?, ?, ?)",
                        (session_id, seqs[-1], len(new)),
                    )
                conn.executemany(
                    "INSERT INTO agentmem_messages (session_id, seq, body, crc) "
                    "VALUES (?, ?, ?, ?)",
                    [
                        (session_id, s, b, integrity.row_crc(session_id, s, b))
                        for s, b in zip(seqs, new.values(), strict=True)
                    ],
                )
                known.update(zip(new, seqs, strict=True))
        return [known[i] for i in ids]

    @staticmethod
    def _seqs_of(conn: sqlite3.Connection, session_id: str, ids: Sequence[str]) -> dict[str, int]:
        """The seqs of the messages of ``session_id`` with one of ``ids``."""
        unique = list(dict.fromkeys(ids))
        found: dict[str, int] = {}
        for start in range(0, len(unique), 500):  # within SQLite's bound on parameters
            chunk = unique[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            rows = conn.execute(
                f"SELECT {_ID_OF_BODY}, seq FROM agentmem_messages "
                f"WHERE session_id = ? AND {_ID_OF_BODY} IN ({marks})",
                (session_id, *chunk),
            )
            for message_id, seq in rows:
                found.setdefault(str(message_id), int(seq))
        return found

    def read(
        self, session_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[StoredMessage]:
        """Messages with ``seq > after`` in log order, at most ``limit`` of them.

        Example:
            >>> from agentmem.types import Message
            >>> store = SQLiteSessionStore(":memory:")
            >>> _ = store.append("s1", [Message(role="user", content=c) for c in "abc"])
            >>> [m.message.content for m in store.read("s1", after=1, limit=1)]
            ['b']
        """
        self._check(session_id)
        if limit is not None and limit <= 0:
            return []
        with self._read("read messages") as conn:
            rows = conn.execute(
                "SELECT seq, body, crc FROM agentmem_messages WHERE session_id = ? AND seq > ? "
                "ORDER BY seq LIMIT ?",
                (session_id, after, -1 if limit is None else limit),
            ).fetchall()
        return [self._load(session_id, *row) for row in rows]

    def read_last(self, session_id: str, n: int) -> list[StoredMessage]:
        """The last ``n`` messages of the log, in log order."""
        self._check(session_id)
        if n <= 0:
            return []
        with self._read("read messages") as conn:
            rows = conn.execute(
                "SELECT seq, body, crc FROM agentmem_messages WHERE session_id = ? "
                "ORDER BY seq DESC LIMIT ?",
                (session_id, n),
            ).fetchall()
        return [self._load(session_id, *row) for row in reversed(rows)]

    def count(self, session_id: str) -> int:
        """Number of messages in the log."""
        sql = "SELECT message_count FROM agentmem_sessions WHERE session_id = ?"
        return self._read_number(session_id, "count messages", sql)

    def last_seq(self, session_id: str) -> int:
        """The highest seq in the log, 0 when it is empty (also right after ``clear``)."""
        sql = "SELECT MAX(seq) FROM agentmem_messages WHERE session_id = ?"
        return self._read_number(session_id, "read the last seq", sql)

    def _read_number(self, session_id: str, action: str, sql: str) -> int:
        """The number ``sql`` (one ``?``: the session id) selects; 0 for no row or NULL."""
        self._check(session_id)
        with self._read(action) as conn:
            row = conn.execute(sql, (session_id,)).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def _verify(self, crc: int, parts: tuple[str | int, ...], what: str) -> None:
        if integrity.row_crc(*parts) != crc:
            raise integrity.lost(self._path, f"{what} fails its checksum (it was altered)")

    def _load(self, session_id: str, seq: int, body: str, crc: int) -> StoredMessage:
        self._verify(crc, (session_id, seq, body), f"message {seq} of session {session_id!r}")
        try:
            return StoredMessage(int(seq), Message.from_json(body))
        except ValidationError as exc:
            msg = (
                f"message {seq} of session {session_id!r} in {self._path!r} is unreadable "
                f"(corrupted, or written by an incompatible agentmem): {exc}"
            )
            raise StoreError(msg) from exc

    # -- state ----------------------------------------------------------------------------

    def get_state(self, session_id: str, key: str) -> dict[str, Any] | None:
        """The JSON state ``key`` of the session, or ``None``."""
        self._check(session_id)
        check_state_key(key)
        with self._read("read session state") as conn:
            row = conn.execute(
                "SELECT value, crc FROM agentmem_state WHERE session_id = ? AND key = ?",
                (session_id, key),
            ).fetchone()
        if row is None:
            return None
        self._verify(row[1], (session_id, key, row[0]), f"state {key!r} of session {session_id!r}")
        try:
            return dict(json.loads(row[0]))
        except (ValueError, TypeError) as exc:
            msg = f"state {key!r} of session {session_id!r} in {self._path!r} is corrupted: {exc}"
            raise StoreError(msg) from exc

    def set_state(self, session_id: str, key: str, value: dict[str, Any]) -> None:
        """Replace the JSON state ``key`` of the session.

        Raises:
            InvalidValueError: ``value`` is not a JSON object (the stored state is unchanged).

        Example:
            >>> store = SQLiteSessionStore(":memory:")
            >>> store.set_state("s1", "summary", {"text": "...", "upto": 12})
            >>> store.get_state("s1", "summary")
            {'text': '...', 'upto': 12}
        """
        self._check(session_id)
        check_state_key(key)
        raw = dump_state(value)
        with self._write("write session state") as conn:
            conn.execute(
                "INSERT OR REPLACE INTO agentmem_state (session_id, key, value, crc) "
                "VALUES (?, ?, ?, ?)",
                (session_id, key, raw, integrity.row_crc(session_id, key, raw)),
            )

    def state_keys(self, session_id: str) -> list[str]:
        """The keys of the session's JSON state, sorted."""
        self._check(session_id)
        with self._read("list session state") as conn:
            rows = conn.execute(
                "SELECT key FROM agentmem_state WHERE session_id = ? ORDER BY key", (session_id,)
            ).fetchall()
        return [str(r[0]) for r in rows]

    def delete_state(self, session_id: str, key: str) -> None:
        """Remove the JSON state ``key`` (no error if absent)."""
        self._check(session_id)
        check_state_key(key)
        with self._write("delete session state") as conn:
            conn.execute(
                "DELETE FROM agentmem_state WHERE session_id = ? AND key = ?", (session_id, key)
            )

    # -- sessions -------------------------------------------------------------------------

    def clear(self, session_id: str) -> None:
        """Delete the session's messages and state; later appends still get fresh seqs, and
        the session keeps its owner."""
        self._check(session_id)
        with self._write("clear the session") as conn:
            conn.execute("DELETE FROM agentmem_messages WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM agentmem_state WHERE session_id = ?", (session_id,))
            conn.execute(
                "UPDATE agentmem_sessions SET message_count = 0 WHERE session_id = ?",
                (session_id,),
            )

    def get_owner(self, session_id: str) -> dict[str, Any] | None:
        """The session's ownership record, or ``None``."""
        self._check(session_id)
        with self._read("read the session owner") as conn:
            row = conn.execute(
                "SELECT record, crc FROM agentmem_owners WHERE session_id = ?", (session_id,)
            ).fetchone()
        return None if row is None else self._load_owner(session_id, *row)

    def claim_owner(self, session_id: str, record: dict[str, Any]) -> dict[str, Any]:
        """Store ``record`` unless the session has an owner (one transaction); return the
        record in force.

        Example:
            >>> store = SQLiteSessionStore(":memory:")
            >>> store.claim_owner("s1", {"owner": ["alice", None]})
            {'owner': ['alice', None]}
            >>> store.claim_owner("s1", {"owner": ["bob", None]})
            {'owner': ['alice', None]}
        """
        self._check(session_id)
        raw = dump_state(record)
        with self._write("claim the session") as conn:
            _put_owner(conn, session_id, raw, conflict="IGNORE")
            row = conn.execute(
                "SELECT record, crc FROM agentmem_owners WHERE session_id = ?", (session_id,)
            ).fetchone()
        return self._load_owner(session_id, *row)

    def set_owner(self, session_id: str, record: dict[str, Any]) -> None:
        """Replace the session's ownership record."""
        self._check(session_id)
        raw = dump_state(record)
        with self._write("write the session owner") as conn:
            _put_owner(conn, session_id, raw, conflict="REPLACE")

    def _load_owner(self, session_id: str, raw: str, crc: int) -> dict[str, Any]:
        self._verify(crc, (session_id, raw), f"the owner record of session {session_id!r}")
        try:
            return dict(json.loads(raw))
        except (ValueError, TypeError) as exc:
            msg = f"the owner of session {session_id!r} in {self._path!r} is corrupted: {exc}"
            raise StoreError(msg) from exc

    def sessions(self) -> list[str]:
        """Ids of sessions that have messages or state, sorted."""
        with self._read("list sessions") as conn:
            rows = conn.execute(
                "SELECT session_id FROM agentmem_sessions WHERE message_count > 0 "
                "UNION SELECT session_id FROM agentmem_state ORDER BY session_id"
            ).fetchall()
        return [str(r[0]) for r in rows]

    def backup_to(self, dest: str | os.PathLike[str]) -> None:
        """Copy the database to the new file ``dest`` with SQLite's online backup API (a
        consistent snapshot: every write committed before the call, none after), with its
        identity record beside it. Other threads wait for the copy; other processes may
        go on reading.

        Raises:
            ConfigurationError: ``dest`` exists.
            StoreError: The copy failed (a full disk, say); nothing is left at ``dest``.

        Example:
            >>> import tempfile, pathlib
            >>> from agentmem.types import Message
            >>> store = SQLiteSessionStore(":memory:")
            >>> _ = store.append("s1", [Message(role="user", content="hi")])
            >>> copy = pathlib.Path(tempfile.mkdtemp()) / "copy.db"
            >>> store.backup_to(copy)
            >>> SQLiteSessionStore(copy).count("s1")
            1
        """
        target = os.fspath(dest)
        if os.path.exists(target):
            msg = f"{target!r} exists; a backup of the session database goes to a new file"
            raise ConfigurationError(msg)
        partial = f"{target}.partial"  # renamed to ``target`` once complete and on disk
        try:
            _remove(partial)  # left by a copy that failed before this one
            copy = sqlite3.connect(partial)
            try:
                with self._read("back up the session database") as conn:
                    conn.backup(copy)
                copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
            finally:
                copy.close()
            fsync_file(partial)
            if self.store_id:
                integrity.write_identity(target, self.store_id)
            os.replace(partial, target)
            fsync_dir(Path(target).parent)
        except BaseException as exc:
            _remove(partial)
            if not os.path.exists(target):
                _remove(str(integrity.identity_path(target)))
            if isinstance(exc, (sqlite3.Error, OSError)):
                msg = f"could not back up the session database to {target!r}: {exc}"
                raise StoreError(msg) from exc
            raise

    def verify_all(self) -> tuple[int, int]:
        """Read every message, state and owner row and check its checksum; returns the
        number of sessions and of messages.

        Raises:
            StoreCorruptedError: A row fails its checksum (naming it).
        """
        with self._read("verify the session database") as conn:
            for table, keys, data in _CHECKED:
                query = f"SELECT {', '.join(keys)}, {data}, crc FROM {table}"
                for *parts, crc in conn.execute(query):
                    where = ", ".join(map(repr, parts[:-1]))
                    self._verify(crc, tuple(parts), f"the {table} row ({where})")
            messages = conn.execute("SELECT COUNT(*) FROM agentmem_messages").fetchone()[0]
        return len(self.sessions()), int(messages)

    def close(self) -> None:
        """Close the connection (waiting for a running operation). Idempotent."""
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None and os.getpid() == self._pid:
                conn.close()


def _table_names(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {str(r[0]) for r in rows}


def _add_checksums(conn: sqlite3.Connection) -> None:
    """Give the rows of an earlier schema their checksum column and values (a migration)."""
    for table, keys, data in _CHECKED:
        columns = {str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})").fetchall()}
        if "crc" not in columns:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN crc INTEGER NOT NULL DEFAULT 0")
        where = " AND ".join(f"{k} = ?" for k in keys)
        rows = conn.execute(f"SELECT {', '.join(keys)}, {data} FROM {table}").fetchall()
        conn.executemany(
            f"UPDATE {table} SET crc = ? WHERE {where}",
            [(integrity.row_crc(*row), *row[:-1]) for row in rows],
        )


def _rollback(conn: sqlite3.Connection) -> None:
    # Keep the original error: a failing ROLLBACK (connection already broken) adds nothing.
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _remove(path: str) -> None:
    """Delete the file at ``path`` if it is there."""
    with suppress(FileNotFoundError):
        os.unlink(path)
