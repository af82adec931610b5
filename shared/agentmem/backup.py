"""Backups of an embedded home (SQLite sessions + Qdrant Edge memories), and restoring them.

A backup is a directory::

    DEST/
      agentmem-backup.json        what it holds: every file with its size and checksum, counts
      sessions.db                 SQLite's online backup of the session store (+ its identity)
      long_term/                  the live Edge generation, flushed, with its manifest

:func:`backup_stores` (and :meth:`agentmem.MemoryService.backup`) takes it while the stores
serve: the session database through SQLite's online backup API (a snapshot of every
committed write), then the Edge shard flushed and copied under the store's write lock (writers
wait for the copy; a few hundred ms per 10,000 memories here). Every copied file is checked
against the store's manifest before the backup is published: it is written into a hidden
sibling directory and renamed to ``DEST`` only once complete.

:func:`restore` checks every file of a backup against ``agentmem-backup.json`` before it
writes anything, refuses a home another process holds, and replaces a non-empty home only
with ``force=True``.

Server deployments back up their servers instead: Qdrant's snapshots (``POST
/collections/{name}/snapshots``) and Redis persistence (RDB snapshots or the AOF).

Example:
    >>> import tempfile, pathlib
    >>> from agentmem import MemoryService
    >>> from agentmem.backup import restore
    >>> service = MemoryService.open(home, embedder=embedder)  # doctest: +SKIP
    >>> report = service.backup(pathlib.Path(tempfile.mkdtemp()) / "b1")  # doctest: +SKIP
    >>> report.memories  # doctest: +SKIP
    12
    >>> service.close()  # doctest: +SKIP
    >>> restore(report.path, other_home).memories  # doctest: +SKIP
    12
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentmem._util.file_copy import copy_tree, fsync_tree
from agentmem.errors import ConfigurationError, StoreCorruptedError, StoreLockedError
from agentmem.stores.qdrant._edge_manifest import block_digest
from agentmem.stores.qdrant.edge import LOCK_FILE, QdrantEdgeStore
from agentmem.stores.sqlite import SQLiteSessionStore

__all__ = ["BACKUP_FILE", "BackupReport", "RestoreReport", "backup_stores", "restore", "verify"]

BACKUP_FILE = "agentmem-backup.json"
_FORMAT = "agentmem-backup"
_SESSIONS = "sessions.db"
_LONG_TERM = "long_term"
#: The session database's companions: replaced (or moved away) together with it.
_SESSION_FILES = (_SESSIONS, f"{_SESSIONS}-wal", f"{_SESSIONS}-shm", f"{_SESSIONS}.identity.json")


@dataclass(frozen=True)
class BackupReport:
    """What :func:`backup_stores` wrote.

    Attributes:
        path: The backup directory.
        files: Files in it.
        bytes: Their data (holes of Edge's sparse files not counted).
        sessions: Sessions in the session database.
        messages: Messages in them.
        memories: Points in the long-term store (every space).
        seconds: How long the backup took.
    """

    path: Path
    files: int
    bytes: int
    sessions: int
    messages: int
    memories: int
    seconds: float


@dataclass(frozen=True)
class RestoreReport:
    """What :func:`restore` wrote.

    Attributes:
        home: The home restored into.
        files: Files written.
        bytes: Their data.
        sessions: Sessions restored.
        messages: Messages restored.
        memories: Long-term points restored.
        replaced: Whether stores that were in the home were replaced (``force``).
        seconds: How long it took (the verification included).
    """

    home: Path
    files: int
    bytes: int
    sessions: int
    messages: int
    memories: int
    replaced: bool
    seconds: float


def backup_stores(
    sessions: SQLiteSessionStore, memories: QdrantEdgeStore, dest: str | os.PathLike[str]
) -> BackupReport:
    """Back up two open embedded stores into the new directory ``dest`` (see the module).

    Raises:
        ConfigurationError: ``dest`` exists and is not an empty directory (nothing written).
        StoreCorruptedError: A copied file differs from its store's manifest (the partial
            backup is removed).

    Example:
        >>> import tempfile, pathlib
        >>> from agentmem.stores.qdrant.edge import QdrantEdgeStore
        >>> from agentmem.stores.sqlite import SQLiteSessionStore
        >>> home = pathlib.Path(tempfile.mkdtemp())
        >>> s = SQLiteSessionStore(home / "sessions.db")
        >>> m = QdrantEdgeStore(home / "long_term", dimension=3)
        >>> backup_stores(s, m, home.parent / (home.name + "-backup")).files > 1
        True
        >>> s.close(); m.close()
    """
    started = time.monotonic()
    target = _fresh_destination(Path(dest))
    staging = target.parent / f".{target.name}.partial-{uuid.uuid4().hex[:8]}"
    staging.mkdir(parents=True)
    try:
        sessions.backup_to(staging / _SESSIONS)
        copy = SQLiteSessionStore(staging / _SESSIONS)
        try:
            n_sessions, n_messages = copy.verify_all()
        finally:
            copy.close()
        manifest, _ = memories.backup_to(staging / _LONG_TERM)
        memories_count = int(manifest.points.get("*", 0))
        counts = {"sessions": n_sessions, "messages": n_messages, "memories": memories_count}
        listing = _describe(staging)
        _write_backup_file(staging, listing, counts)
        fsync_tree(staging)
        if target.exists():  # an empty directory: replaced by the complete backup
            target.rmdir()
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BackupReport(
        path=target,
        files=len(listing) + 1,
        bytes=sum(int(f["data"]) for f in listing.values()),
        sessions=n_sessions,
        messages=n_messages,
        memories=memories_count,
        seconds=time.monotonic() - started,
    )


def verify(src: str | os.PathLike[str]) -> dict[str, int]:
    """Check every file of the backup at ``src`` against its ``agentmem-backup.json``;
    returns its counts (sessions, messages, memories).

    Raises:
        ConfigurationError: ``src`` is not an agentmem backup.
        StoreCorruptedError: A file of the backup is missing or differs (named).
    """
    root = Path(src)
    body = _read_backup_file(root)
    for relative, expected in sorted(body["files"].items()):
        path = root / relative
        if not path.is_file():
            raise _damaged(root, f"{relative} is missing")
        size = path.stat().st_size
        if size != expected["size"]:
            raise _damaged(
                root, f"{relative} has {size} bytes, the backup recorded {expected['size']}"
            )
        if block_digest(path) != expected["sha256"]:
            raise _damaged(root, f"{relative} was altered (its checksum differs)")
    return {k: int(v) for k, v in body["counts"].items()}


def restore(
    src: str | os.PathLike[str], home: str | os.PathLike[str], *, force: bool = False
) -> RestoreReport:
    """Restore the backup at ``src`` into ``home``.

    Checks, in this order, before anything is written: ``src`` is a backup and every file
    in it is intact; no process holds ``home``; ``home`` holds no stores (unless ``force``:
    they are then replaced, their -wal/-shm files included).

    Raises:
        ConfigurationError: ``src`` is not a backup, or ``home`` is not empty without
            ``force``, or is a file.
        StoreCorruptedError: The backup is damaged.
        StoreLockedError: Another process holds ``home``.

    Example:
        >>> restore("/no/such/backup", "/tmp/h")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        agentmem.errors.ConfigurationError: /no/such/backup is not an agentmem backup ...
    """
    started = time.monotonic()
    source, root = Path(src), Path(home).expanduser()
    counts = verify(source)
    if root.exists() and not root.is_dir():
        msg = f"--home {root} is a file, not a directory; pass a directory"
        raise ConfigurationError(msg)
    _check_not_held(root)
    present = _stores_in(root)
    if present and not force:
        msg = (
            f"{root} already holds {' and '.join(present)}; restoring would replace them: "
            "pass --force (force=True) to replace them, or restore into an empty home"
        )
        raise ConfigurationError(msg)
    (root / _LONG_TERM).mkdir(parents=True, exist_ok=True)
    with _holding(root / _LONG_TERM / LOCK_FILE):
        staging = root / f".restore-{uuid.uuid4().hex[:8]}"
        aside = root / f".replaced-{uuid.uuid4().hex[:8]}"
        try:
            files, data = copy_tree(source, staging, skip=lambda p: p.name == BACKUP_FILE)
            fsync_tree(staging)
            aside.mkdir()
            for name in _SESSION_FILES:  # the old database's log must never meet the new one
                if (root / name).exists():
                    os.replace(root / name, aside / name)
            (aside / _LONG_TERM).mkdir()
            for entry in (root / _LONG_TERM).iterdir():
                if entry.name != LOCK_FILE:
                    os.replace(entry, aside / _LONG_TERM / entry.name)
            for name in _SESSION_FILES:
                if (staging / name).exists():
                    os.replace(staging / name, root / name)
            for entry in (staging / _LONG_TERM).iterdir():
                if entry.name != LOCK_FILE:
                    os.replace(entry, root / _LONG_TERM / entry.name)
            fsync_tree(root)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(aside, ignore_errors=True)
    return RestoreReport(
        home=root,
        files=files,
        bytes=data,
        sessions=counts["sessions"],
        messages=counts["messages"],
        memories=counts["memories"],
        replaced=bool(present),
        seconds=time.monotonic() - started,
    )


# -- helpers ---------------------------------------------------------------------------------


def _fresh_destination(target: Path) -> Path:
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        msg = (
            f"backup destination {target} exists and is not empty; pass a new directory "
            "(or an empty one): a backup never writes over files"
        )
        raise ConfigurationError(msg)
    return target.absolute()


def _describe(root: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for current, _, names in os.walk(root):
        for name in names:
            path = Path(current) / name
            relative = str(path.relative_to(root))
            stat = path.stat()
            out[relative] = {
                "size": stat.st_size,
                "sha256": block_digest(path),
                "data": min(stat.st_size, stat.st_blocks * 512),
            }
    return out


def _self_checksum(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _write_backup_file(root: Path, files: Mapping[str, Any], counts: Mapping[str, int]) -> None:
    body: dict[str, Any] = {
        "format": _FORMAT,
        "version": 1,
        "created_at": datetime.now(timezone.utc).isoformat(),
        "counts": dict(counts),
        "files": {k: {"size": v["size"], "sha256": v["sha256"]} for k, v in files.items()},
    }
    body["checksum"] = _self_checksum(body)
    with (root / BACKUP_FILE).open("w", encoding="utf-8") as handle:
        json.dump(body, handle, sort_keys=True, indent=1)
        handle.flush()
        os.fsync(handle.fileno())


def _read_backup_file(root: Path) -> dict[str, Any]:
    path = root / BACKUP_FILE
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        body = None
    if not isinstance(body, dict) or body.get("format") != _FORMAT:
        msg = (
            f"{root} is not an agentmem backup (no readable {BACKUP_FILE}); pass a directory "
            "written by `agentmem backup` or MemoryService.backup"
        )
        raise ConfigurationError(msg)
    checksum = body.pop("checksum", None)
    if checksum != _self_checksum(body):
        raise _damaged(root, f"{BACKUP_FILE} fails its checksum")
    return body


def _damaged(root: Path, problem: str) -> StoreCorruptedError:
    msg = f"backup {root} is damaged: {problem}; nothing was restored. Use another backup."
    return StoreCorruptedError(msg, path=str(root))


def _stores_in(root: Path) -> list[str]:
    present = []
    db = root / _SESSIONS
    if (db.exists() and db.stat().st_size > 0) or Path(f"{db}.identity.json").exists():
        present.append(f"a session database ({_SESSIONS})")
    long_term = root / _LONG_TERM
    if long_term.is_dir() and any(p.name != LOCK_FILE for p in long_term.iterdir()):
        present.append(f"a long-term store ({_LONG_TERM}/)")
    return present


def _check_not_held(root: Path) -> None:
    lock = root / _LONG_TERM / LOCK_FILE
    if not lock.exists():
        return
    with _holding(lock):
        pass


@contextlib.contextmanager
def _holding(lock: Path) -> Iterator[None]:
    """Hold the home's store lock (the one QdrantEdgeStore takes) meanwhile."""
    handle = lock.open("ab")
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            msg = (
                f"{lock.parent.parent} is in use by another process (it holds {lock}); stop "
                "it (or close its MemoryService) before restoring into this home"
            )
            raise StoreLockedError(msg) from None
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()
