"""Repairing a damaged embedded home: keep what can be read, report exactly what was lost.

``agentmem repair --home H`` checks the home's two stores the way opening them does (the
session database's ``quick_check`` and every row's checksum; the Edge store's manifest and
point counts) and writes nothing. ``--accept-loss`` (``accept_loss=True``) then rebuilds a
damaged store from what can still be read:

* **sessions.db** - every row SQLite can still read and whose checksum holds goes into a new
  database, written beside the damaged one and on disk before it takes its place; the rows
  dropped are listed (session and seq, or state key). If an owner record was lost, the
  sessions left without one are not restored (restored unowned, a session goes to the first
  user who names it): each is listed with its messages and state. The damaged file and its
  companions are kept beside it as ``sessions.db.damaged-<time>/``, the withheld sessions
  included. A repair that fails before the new database is in place (a full disk, an
  interrupt) leaves the damaged one as it was, and can run again.
* **long_term/** - a child process loads the damaged generation (a file Edge would abort on
  ends the child, not this process) and copies every point Edge returns into a new
  generation; the lost points are counted per space against the manifest. The damaged
  generation is kept as ``long_term/damaged-<time>/``.

Repair holds the home's lock (``long_term/agentmem.lock``, the one a running service holds)
from before its first check to the end, so it refuses a home another process has open and
never moves files from under it.

Restoring a backup (``agentmem restore``) loses nothing since the backup; repair is for when
there is none.

Example:
    >>> import tempfile
    >>> repair(tempfile.mkdtemp()).damaged
    []
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agentmem._util.durable import fsync_dir, replace_durably
from agentmem.errors import StoreCorruptedError, StoreError, StoreLockedError
from agentmem.home import check_no_interrupted_restore
from agentmem.stores import _sqlite_integrity as integrity
from agentmem.stores._sqlite_wal import wal_damage
from agentmem.stores.qdrant import _edge_manifest as manifests
from agentmem.stores.qdrant._edge_index import (
    AutoIndex,
    current_generation,
    next_generation,
    set_current_generation,
)
from agentmem.stores.qdrant._edge_probe import salvage
from agentmem.stores.qdrant._edge_wal import wal_damage as edge_wal_damage
from agentmem.stores.qdrant.edge import LOCK_FILE, QdrantEdgeStore, holding_lock
from agentmem.stores.sqlite import SQLiteSessionStore

__all__ = ["RepairReport", "repair"]

_CHECKED = (
    ("agentmem_messages", ("session_id", "seq"), "body"),
    ("agentmem_state", ("session_id", "key"), "value"),
    ("agentmem_owners", ("session_id",), "record"),
)


@dataclass
class RepairReport:
    """What :func:`repair` found and did.

    Attributes:
        home: The home.
        damaged: One line per damaged store: what is wrong.
        lost: One line per thing lost (rows, points per space, sessions withheld because
            their owner record was lost), after ``accept_loss``.
        kept: One line per store rebuilt: what it kept.
        repaired: Whether anything was rebuilt.
    """

    home: Path
    damaged: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    repaired: bool = False


def repair(home: str | os.PathLike[str], *, accept_loss: bool = False) -> RepairReport:
    """Check the embedded stores of ``home``; with ``accept_loss``, rebuild the damaged ones
    from what can be read (see the module).

    The home's lock (``long_term/agentmem.lock``, the one a running service holds; created
    when missing) is taken first and held throughout: nothing is checked or moved while
    another process has the home open.

    Raises:
        StoreLockedError: Another process holds the home (nothing was checked or changed).
        StoreCorruptedError: A restore into the home was interrupted (its journal is
            there): rerun it, or roll it back, before repairing; nothing was changed.
        StoreError: The repaired session database could not be written (the disk filled
            up, say); the damaged database is left in place, unchanged, for another try.
    """
    root = Path(home).expanduser()
    report = RepairReport(root)
    if not root.is_dir():
        return report
    long_term = root / "long_term"
    had_memories = long_term.is_dir() and any(p.name != LOCK_FILE for p in long_term.iterdir())
    with _holding_home(root, long_term):
        check_no_interrupted_restore(root)  # a half-replaced home: finish the restore first
        db = root / "sessions.db"
        if db.exists() or integrity.identity_path(str(db)).exists():
            _repair_sessions(db, report, accept_loss)
        if had_memories:
            _repair_memories(long_term, report, accept_loss)
    return report


@contextlib.contextmanager
def _holding_home(root: Path, long_term: Path) -> Iterator[None]:
    """Hold the home's lock (the long-term store's, which a running service holds); the Edge
    stores that repair opens meanwhile share it."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(holding_lock(long_term))
        except StoreLockedError:
            msg = (
                f"{root} is in use by another process (it holds {long_term / LOCK_FILE}); "
                "stop it (or close its MemoryService) before repairing this home; nothing "
                "was checked or changed"
            )
            raise StoreLockedError(msg) from None
        yield


# -- the session database -------------------------------------------------------------------


def _repair_sessions(db: Path, report: RepairReport, accept_loss: bool) -> None:
    try:
        store = SQLiteSessionStore(db)
        try:
            store.verify_all()
            return
        finally:
            store.close()
    except StoreCorruptedError as exc:
        report.damaged.append(f"{db}: {exc}")
    if not accept_loss:
        return
    rows, lost, last_seq, incomplete = _readable_rows(db)
    aside = _new_aside(db)
    if "agentmem_owners" in incomplete:
        lost.extend(_withhold_unowned(db, rows, aside))
    try:
        fresh, store_id = _build(db, rows, last_seq)
    except sqlite3.Error as exc:
        msg = (
            f"could not write the repaired session database beside {db} ({exc}); nothing "
            "was changed: the damaged database is still in place. Free some disk space (or "
            "fix what failed) and run `agentmem repair --accept-loss` again"
        )
        raise StoreError(msg) from exc
    _swap_in(db, fresh, aside, store_id)
    report.lost.extend(lost)
    kept = len(rows.get("agentmem_messages", []))
    report.kept.append(f"{db}: rebuilt with {kept} messages; the damaged file is in {aside}")
    report.repaired = True


def _new_aside(db: Path) -> Path:
    """A directory name beside ``db`` for its damaged files, not taken yet: the time, and a
    number when a repair of the same second left one (a repair that died while swapping,
    run again at once)."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside = db.with_name(f"{db.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = db.with_name(f"{db.name}.damaged-{stamp}-{n}")
    return aside


def _withhold_unowned(
    db: Path, rows: dict[str, list[tuple[object, ...]]], aside: Path
) -> list[str]:
    """Take out of ``rows`` the messages and state of the sessions whose owner record may
    have been lost (some owner rows were); what was withheld, one line per session.

    Restored without its owner record, a session would go to the first user who names it
    (see :mod:`agentmem.controller.ownership`). Once any owner record failed its checksum or
    could not be read, which session it belonged to cannot be trusted (its key may be the
    damaged part), so every session left without an owner record is withheld; the damaged
    copy kept in ``aside`` still holds them.
    """
    owned = {str(row[0]) for row in rows.get("agentmem_owners", [])}
    messages: dict[str, int] = {}
    state: dict[str, int] = {}
    for table, counts in (("agentmem_messages", messages), ("agentmem_state", state)):
        kept = []
        for row in rows.get(table, []):
            session = str(row[0])
            if session in owned:
                kept.append(row)
            else:
                counts[session] = counts.get(session, 0) + 1
        rows[table] = kept
    return [
        f"{db}: session {session!r} was not restored ({_count(messages.get(session, 0), 'message')}"
        f", {_count(state.get(session, 0), 'state value')}): its owner record was lost, and "
        f"without one the session would go to the first user who names it; it is kept in "
        f"{aside}"
        for session in sorted(messages.keys() | state.keys())
    ]


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _build(
    db: Path, rows: dict[str, list[tuple[object, ...]]], last_seq: dict[str, int]
) -> tuple[Path, str]:
    """Write ``rows`` into a new database beside ``db``, committed and on disk; its path
    and store id. On any failure the new file is removed and ``db`` is untouched."""
    fresh = db.with_name(f".{db.name}.repair-{uuid.uuid4().hex[:8]}")
    try:
        store = SQLiteSessionStore(fresh)
        store_id = store.store_id
        store.close()
        integrity.identity_path(str(fresh)).unlink()  # the home's is written at the swap
        conn = sqlite3.connect(fresh)
        try:
            with conn:
                for table, keys, data in _CHECKED:
                    columns = ", ".join((*keys, data, "crc"))
                    marks = ", ".join("?" * (len(keys) + 2))
                    conn.executemany(
                        f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows.get(table, [])
                    )
                counts: dict[str, int] = {}
                top = dict(last_seq)  # seqs are never reused, even those of lost messages
                for session, seq, *_ in rows.get("agentmem_messages", []):
                    name = str(session)
                    counts[name] = counts.get(name, 0) + 1
                    top[name] = max(top.get(name, 0), int(str(seq)))
                conn.executemany(
                    "INSERT INTO agentmem_sessions (session_id, last_seq, message_count) "
                    "VALUES (?, ?, ?)",
                    [(name, seq, counts.get(name, 0)) for name, seq in top.items()],
                )
            conn.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
        finally:
            conn.close()
        fd = os.open(fresh, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        for suffix in ("", "-wal", "-shm", "-journal", ".identity.json"):
            with contextlib.suppress(OSError):
                Path(f"{fresh}{suffix}").unlink()
        raise
    return fresh, store_id


def _swap_in(db: Path, fresh: Path, aside: Path, store_id: str) -> None:
    """Keep the damaged database and its companions in ``aside``, put ``fresh`` in its
    place, then write the identity record beside it.

    The damaged file and its identity record stay in the home (hard-linked into ``aside``)
    until ``fresh`` replaces them, so a crash meanwhile leaves a damaged home that repair
    finds again, never an empty one; its -wal and -shm files are moved first, as the old
    database's log must never meet the new one.
    """
    aside.mkdir()
    for suffix in ("", ".identity.json"):
        source = Path(f"{db}{suffix}")
        if source.exists():
            try:
                os.link(source, aside / source.name)
            except OSError:  # a file system without hard links
                shutil.copy2(source, aside / source.name)
    for suffix in ("-wal", "-shm"):
        source = Path(f"{db}{suffix}")
        if source.exists():
            os.replace(source, aside / source.name)
    fsync_dir(aside)
    os.replace(fresh, db)
    fsync_dir(db.parent)
    replace_durably(integrity.identity_path(str(db)), integrity.identity_record(store_id))


def _readable_rows(
    db: Path,
) -> tuple[dict[str, list[tuple[object, ...]]], list[str], dict[str, int], set[str]]:
    """The rows of ``db`` that can be read and pass their checksum, what was lost, each
    session's last seq, and the tables that lost rows."""
    rows: dict[str, list[tuple[object, ...]]] = {}
    lost: list[str] = []
    last_seq: dict[str, int] = {}
    incomplete: set[str] = set()
    size = db.stat().st_size if db.exists() else 0
    if size == 0:
        state = "missing" if not db.exists() else "empty"
        lost.append(f"{db}: every session (the file is {state}; how many there were is unknown)")
        return rows, lost, last_seq, incomplete
    if (damage := wal_damage(str(db))) is not None:  # SQLite reads up to the damaged frame
        lost.append(f"{db}: {damage}; what it held after the damage cannot be read")
    try:
        conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        lost.append(f"{db}: every session (SQLite cannot open the file: {exc})")
        return rows, lost, last_seq, incomplete
    try:
        for table, keys, data in _CHECKED:
            kept: list[tuple[object, ...]] = []
            query = f"SELECT {', '.join(keys)}, {data}, crc FROM {table}"
            try:
                for *parts, crc in conn.execute(query):
                    if integrity.row_crc(*parts) == crc:
                        kept.append((*parts, crc))
                    else:
                        key = ", ".join(map(repr, parts[:-1]))
                        lost.append(f"{db}: {table} row ({key}) failed its checksum")
                        incomplete.add(table)
            except sqlite3.Error as exc:
                lost.append(f"{db}: {table} rows after the first {len(kept)} ({exc})")
                incomplete.add(table)
            rows[table] = kept
        try:
            query = "SELECT session_id, last_seq FROM agentmem_sessions"
            last_seq = {str(s): int(q) for s, q in conn.execute(query)}
        except sqlite3.Error:
            pass
    finally:
        conn.close()
    return rows, lost, last_seq, incomplete


# -- the Edge store ---------------------------------------------------------------------------


def _repair_memories(root: Path, report: RepairReport, accept_loss: bool) -> None:
    live = current_generation(root)
    config = live / "edge_config.json"
    try:
        dimension = int(json.loads(config.read_text(encoding="utf-8"))["vectors"]["dense"]["size"])
    except (OSError, ValueError, KeyError, TypeError):
        dimension = 0
    if dimension:
        try:
            QdrantEdgeStore(root, dimension=dimension, auto_index=AutoIndex(enabled=False)).close()
            return
        except StoreCorruptedError as exc:
            report.damaged.append(f"{root}: {exc}")
    else:
        report.damaged.append(f"{root}: its config {config} is missing or unreadable")
    if not accept_loss:
        return
    try:
        expected = manifests.read_manifest(root)
    except StoreCorruptedError:
        expected = None
    if (logged := edge_wal_damage(live)) is not None:  # Edge replays up to the damage
        report.lost.append(f"{root}: {logged}; what they held cannot be read")
    target = next_generation(root)
    try:
        kept = salvage(live, target, dimension) if dimension else {}
    except StoreCorruptedError as exc:
        report.lost.append(f"{root}: every point of {live.name} ({exc})")
        kept = {}
    if not kept:
        from agentmem.stores.qdrant._edge_shard import create_shard

        if target.exists():
            shutil.rmtree(target)
        create_shard(target, dimension or 384).close()
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside = root / f"damaged-{stamp}"
    if live == root:
        aside.mkdir()
        for name in ("segments", "wal", "edge_config.json"):
            if (root / name).exists():
                os.replace(root / name, aside / name)
    set_current_generation(root, target)
    if live != root:
        os.replace(live, aside)
    manifests.remove_manifest(root)
    if expected is not None and expected.state == "clean":
        for space, count in sorted(expected.points.items()):
            missing = count - kept.get(space, 0)
            if missing > 0:
                what = "points in all" if space == "*" else f"points of space {space!r}"
                report.lost.append(f"{root}: {missing} {what} (of {count} in the manifest)")
    else:
        report.lost.append(
            f"{root}: kept {kept.get('*', 0)} points; the manifest could not say how many "
            "there were"
        )
    QdrantEdgeStore(root, dimension=dimension or 384, auto_index=AutoIndex(enabled=False)).close()
    report.kept.append(
        f"{root}: rebuilt with {kept.get('*', 0)} points; the damaged generation is in {aside}"
    )
    report.repaired = True
