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
with ``force=True``. It copies the backup into a hidden directory of the home first, then
swaps it in: the home's stores are moved into a second hidden directory, the backup's moved
into their place. The swap is all or nothing:

* any exception during it (an ``OSError``, Ctrl-C) rolls it back: the backup's entries
  already moved in are taken out, the home's moved back, and the exception re-raised;
* a kill or a power cut during it leaves its journal, ``.restore-in-progress.json`` in the
  home (written durably before the first move, removed durably last). Opening the home then
  raises :class:`~agentmem.errors.StoreCorruptedError` instead of opening stores that may be
  part old, part restored (see :func:`agentmem.home.check_no_interrupted_restore`); the
  next :func:`restore` into the home, or :func:`recover_restore`, settles it first: it puts
  the home's stores back as they were, or, when the swap was complete, only removes the
  leftovers.

The old stores are deleted only once the backup's are all in place.

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
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from agentmem._util.durable import fsync_dir, replace_durably
from agentmem._util.file_copy import copy_tree, fsync_tree
from agentmem.errors import ConfigurationError, StoreCorruptedError, StoreLockedError
from agentmem.home import RESTORE_MARKER
from agentmem.stores.qdrant._edge_manifest import block_digest
from agentmem.stores.qdrant.edge import LOCK_FILE, QdrantEdgeStore
from agentmem.stores.sqlite import SQLiteSessionStore

__all__ = [
    "BACKUP_FILE",
    "BackupReport",
    "Recovery",
    "RestoreReport",
    "backup_stores",
    "recover_restore",
    "restore",
    "verify",
]

logger = logging.getLogger(__name__)

#: What :func:`recover_restore` did to an interrupted restore.
Recovery = Literal["rolled back", "completed"]

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
    they are then replaced, their -wal/-shm files included). Only the files the backup
    lists are restored: any other file found beside them (a stray ``sessions.db-wal`` that
    SQLite would replay into the restored database, say) is left out, with a warning.

    A restore into ``home`` that was interrupted (killed during its swap) is settled first,
    as :func:`recover_restore` does: the stores it was replacing are put back (with a
    warning logged), and are then replaced only with ``force``. The swap itself is all or
    nothing (see the module): on any exception, ``KeyboardInterrupt`` included, the home is
    put back as it was and the exception re-raised; after a kill, its journal makes the
    next open of the home refuse it until it is settled.

    Raises:
        ConfigurationError: ``src`` is not a backup, or ``home`` is not empty without
            ``force``, or is a file.
        StoreCorruptedError: The backup is damaged, or the journal of an interrupted
            restore into ``home`` cannot be read.
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
    if present and not force and not (root / RESTORE_MARKER).exists():
        msg = (
            f"{root} already holds {' and '.join(present)}; restoring would replace them: "
            "pass --force (force=True) to replace them, or restore into an empty home"
        )
        raise ConfigurationError(msg)
    (root / _LONG_TERM).mkdir(parents=True, exist_ok=True)
    with _holding(root / _LONG_TERM / LOCK_FILE):
        if (done := _recover(root)) is not None:  # not refused above: settled first
            present = _stores_in(root)
            if present and not force:
                msg = (
                    f"{root} already holds {' and '.join(present)} (an interrupted restore "
                    f"was {done} first); restoring would replace them: pass --force "
                    "(force=True) to replace them, or restore into an empty home"
                )
                raise ConfigurationError(msg)
            logger.warning("%s: an interrupted restore into it was %s first", root, done)
        files, data = _swap_in(source, root)
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


def recover_restore(home: str | os.PathLike[str]) -> Recovery | None:
    """Settle a restore into ``home`` that was interrupted (a kill, a power cut): put the
    stores it was replacing back as they were, or, when it had already replaced them all,
    only remove what it left over. Returns what was done (``"rolled back"`` or
    ``"completed"``), or ``None`` when there was no interrupted restore.

    :func:`restore` does the same before it restores; opening a home with an unsettled
    restore raises :class:`~agentmem.errors.StoreCorruptedError` (see
    :func:`agentmem.home.check_no_interrupted_restore`).

    Raises:
        StoreLockedError: Another process holds ``home`` (a restore that is still running).
        StoreCorruptedError: The restore's journal cannot be read (the message names it).

    Example:
        >>> import tempfile
        >>> recover_restore(tempfile.mkdtemp()) is None
        True
    """
    root = Path(home).expanduser()
    if not (root / RESTORE_MARKER).exists():
        return None
    (root / _LONG_TERM).mkdir(exist_ok=True)
    with _holding(root / _LONG_TERM / LOCK_FILE):
        return _recover(root)


# -- the swap of a restore and its journal ---------------------------------------------------
#
# The journal (RESTORE_MARKER in the home) names the staging directory (the backup's copy),
# the directory the home's own entries are moved aside into, and both lists of entries. It is
# written durably before the first entry moves; "swapping" means a rollback puts the home back
# as it was, "replaced" that every entry of the backup is in place and only the two
# directories remain to be deleted. It is removed, durably, last.

_STAGING_PREFIX = ".restore-"
_ASIDE_PREFIX = ".replaced-"
_JOURNAL_FORMAT = "agentmem-restore"


def _move(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst`` (every move of a restore's swap and of its rollback)."""
    os.replace(src, dst)


def _entries(root: Path) -> list[str]:
    """The entries a restore replaces in ``root`` (a home or a staging copy), relative."""
    names = [name for name in _SESSION_FILES if os.path.lexists(root / name)]
    long_term = root / _LONG_TERM
    if long_term.is_dir():
        names += sorted(
            f"{_LONG_TERM}/{entry.name}" for entry in long_term.iterdir() if entry.name != LOCK_FILE
        )
    return names


def _swap_in(source: Path, root: Path) -> tuple[int, int]:
    """Copy the backup ``source`` into ``root`` and swap it for the home's stores, journaled
    (the home's store lock held); on any exception the home is put back as it was."""
    token = uuid.uuid4().hex[:8]
    staging, aside = root / f"{_STAGING_PREFIX}{token}", root / f"{_ASIDE_PREFIX}{token}"
    listed = set(_read_backup_file(source)["files"])

    def unlisted(path: Path) -> bool:  # a file the backup does not vouch for: not restored
        if path.is_dir() and not path.is_symlink():
            return False
        return path.relative_to(source).as_posix() not in listed

    stray = [str(p.relative_to(source)) for p in source.rglob("*") if unlisted(p)]
    if set(stray) - {BACKUP_FILE}:
        logger.warning(
            "restore of %s skips the files its %s does not list: %s",
            source,
            BACKUP_FILE,
            ", ".join(sorted(set(stray) - {BACKUP_FILE})),
        )
    try:
        files, data = copy_tree(source, staging, skip=unlisted)
        (staging / _LONG_TERM).mkdir(exist_ok=True)
        fsync_tree(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    journal: dict[str, Any] = {
        "format": _JOURNAL_FORMAT,
        "version": 1,
        "state": "swapping",
        "source": str(source),
        "staging": staging.name,
        "aside": aside.name,
        "old": _entries(root),
        "new": _entries(staging),
    }
    try:
        _write_journal(root, journal)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):
            _remove_journal(root)
        raise
    try:
        (aside / _LONG_TERM).mkdir(parents=True)
        for name in journal["old"]:  # the old database's log must never meet the new one
            _move(root / name, aside / name)
        for name in journal["new"]:
            _move(staging / name, root / name)
        fsync_tree(root)
        _write_journal(root, {**journal, "state": "replaced"})
    except BaseException:
        try:
            _roll_back(root, journal)
        except BaseException:
            logger.exception(
                "%s: the failed restore could not be rolled back; %s stays, and the next "
                "`agentmem restore` (or agentmem.backup.recover_restore) rolls it back",
                root,
                RESTORE_MARKER,
            )
        raise
    try:
        _finish(root, journal)
    except Exception:  # the swap is complete and journaled: the next restore cleans up
        logger.warning(
            "%s: restored, but removing what the swap replaced failed; the next `agentmem "
            "restore` (or agentmem.backup.recover_restore) removes it",
            root,
            exc_info=True,
        )
    return files, data


def _recover(root: Path) -> Recovery | None:
    """Settle the interrupted restore journaled in ``root`` (the store lock held)."""
    journal = _read_journal(root)
    if journal is None:
        return None
    if journal["state"] == "replaced":
        _finish(root, journal)
        return "completed"
    _roll_back(root, journal)
    return "rolled back"


def _roll_back(root: Path, journal: Mapping[str, Any]) -> None:
    """Put the home's entries back from the aside directory, taking out (into staging) the
    backup's entries already moved in; then delete both directories and the journal.

    Correct from any point of the swap, and of an earlier rollback: every old entry is moved
    aside before any new one is moved in, so an old entry still in the aside directory may
    have a new one in its place, and an old entry not there is in its place."""
    staging, aside = root / journal["staging"], root / journal["aside"]
    old = set(journal["old"])
    for name in sorted(old | set(journal["new"])):
        here, kept = root / name, aside / name
        if name in old and not os.path.lexists(kept):
            continue  # never moved aside, or already moved back
        if os.path.lexists(here):  # the backup's: moved in
            out = staging / name
            if not os.path.lexists(out) and out.parent.is_dir():
                _move(here, out)
            else:
                _delete(here)
        if name in old:
            _move(kept, here)
    for directory in (root, root / _LONG_TERM):
        fsync_dir(directory)
    _remove_journal(root)
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(aside, ignore_errors=True)


def _finish(root: Path, journal: Mapping[str, Any]) -> None:
    """Delete what a complete swap left: the home's old entries, the emptied staging copy;
    then the journal."""
    shutil.rmtree(root / journal["aside"], ignore_errors=True)
    shutil.rmtree(root / journal["staging"], ignore_errors=True)
    _remove_journal(root)


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _write_journal(root: Path, journal: Mapping[str, Any]) -> None:
    replace_durably(root / RESTORE_MARKER, json.dumps(journal, sort_keys=True, indent=1))


def _remove_journal(root: Path) -> None:
    for name in (RESTORE_MARKER, f"{RESTORE_MARKER}.tmp"):  # the latter: a write cut short
        with contextlib.suppress(FileNotFoundError):
            (root / name).unlink()
    fsync_dir(root)


def _read_journal(root: Path) -> dict[str, Any] | None:
    """The journal of an interrupted restore in ``root`` (``None``: there is none), checked:
    it names only entries a restore moves, and directories a restore makes."""
    path = root / RESTORE_MARKER
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        text = ""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    allowed = set(_SESSION_FILES)
    if (
        isinstance(body, dict)
        and body.get("format") == _JOURNAL_FORMAT
        and body.get("state") in ("swapping", "replaced")
        and _ours(body.get("staging"), _STAGING_PREFIX)
        and _ours(body.get("aside"), _ASIDE_PREFIX)
        and all(
            isinstance(names, list)
            and all(isinstance(n, str) and (n in allowed or _in_long_term(n)) for n in names)
            for names in (body.get("old"), body.get("new"))
        )
    ):
        return body
    msg = (
        f"{path}, the journal of an interrupted restore into {root}, cannot be read; the "
        f"home's old stores may be in a {_ASIDE_PREFIX}* directory and the backup's in a "
        f"{_STAGING_PREFIX}* one beside it: restore the home from a backup into a new "
        "directory, or put those entries back by hand, then delete the journal"
    )
    raise StoreCorruptedError(msg, path=str(path))


def _ours(name: object, prefix: str) -> bool:
    if not isinstance(name, str) or not name.startswith(prefix):
        return False
    token = name[len(prefix) :]
    return len(token) == 8 and all(c in "0123456789abcdef" for c in token)


def _in_long_term(name: str) -> bool:
    head, _, entry = name.partition("/")
    return head == _LONG_TERM and entry not in ("", ".", "..", LOCK_FILE) and "/" not in entry


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
