"""Repairing a damaged embedded home: keep what can be read, report exactly what was lost.

``agentmem repair --home H`` checks the home's two stores the way opening them does (the
session database's ``quick_check`` and every row's checksum; the Edge store's manifest and
point counts) and writes nothing. ``--accept-loss`` (``accept_loss=True``) then rebuilds a
damaged store from what can still be read:

* **sessions.db** - every row SQLite can still read and whose checksum holds goes into a new
  database; the rows dropped are listed (session and seq, or state key). The damaged file
  and its companions are kept beside it as ``sessions.db.damaged-<time>/``.
* **long_term/** - a child process loads the damaged generation (a file Edge would abort on
  ends the child, not this process) and copies every point Edge returns into a new
  generation; the lost points are counted per space against the manifest. The damaged
  generation is kept as ``long_term/damaged-<time>/``.

Restoring a backup (``agentmem restore``) loses nothing since the backup; repair is for when
there is none.

Example:
    >>> import tempfile
    >>> repair(tempfile.mkdtemp()).damaged
    []
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentmem.errors import StoreCorruptedError
from agentmem.stores import _sqlite_integrity as integrity
from agentmem.stores.qdrant import _edge_manifest as manifests
from agentmem.stores.qdrant._edge_index import (
    AutoIndex,
    current_generation,
    next_generation,
    set_current_generation,
)
from agentmem.stores.qdrant._edge_probe import salvage
from agentmem.stores.qdrant.edge import QdrantEdgeStore
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
        lost: One line per thing lost (rows, points per space), after ``accept_loss``.
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

    Raises:
        StoreLockedError: Another process holds the home.
    """
    root = Path(home).expanduser()
    report = RepairReport(root)
    db = root / "sessions.db"
    if db.exists() or integrity.identity_path(str(db)).exists():
        _repair_sessions(db, report, accept_loss)
    long_term = root / "long_term"
    if long_term.is_dir():
        _repair_memories(long_term, report, accept_loss)
    return report


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
    rows, lost, last_seq = _readable_rows(db)
    report.lost.extend(lost)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside = db.with_name(f"{db.name}.damaged-{stamp}")
    aside.mkdir()
    for suffix in ("", "-wal", "-shm", ".identity.json"):
        source = Path(f"{db}{suffix}")
        if source.exists():
            os.replace(source, aside / source.name)
    fresh = SQLiteSessionStore(db)
    fresh.close()
    conn = sqlite3.connect(db)
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
    finally:
        conn.close()
    kept = len(rows.get("agentmem_messages", []))
    report.kept.append(f"{db}: rebuilt with {kept} messages; the damaged file is in {aside}")
    report.repaired = True


def _readable_rows(
    db: Path,
) -> tuple[dict[str, list[tuple[object, ...]]], list[str], dict[str, int]]:
    """The rows of ``db`` that can be read and pass their checksum, what was lost, and each
    session's last seq."""
    rows: dict[str, list[tuple[object, ...]]] = {}
    lost: list[str] = []
    last_seq: dict[str, int] = {}
    size = db.stat().st_size if db.exists() else 0
    if size == 0:
        state = "missing" if not db.exists() else "empty"
        lost.append(f"{db}: every session (the file is {state}; how many there were is unknown)")
        return rows, lost, last_seq
    try:
        conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        lost.append(f"{db}: every session (SQLite cannot open the file: {exc})")
        return rows, lost, last_seq
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
            except sqlite3.Error as exc:
                lost.append(f"{db}: {table} rows after the first {len(kept)} ({exc})")
            rows[table] = kept
        try:
            query = "SELECT session_id, last_seq FROM agentmem_sessions"
            last_seq = {str(s): int(q) for s, q in conn.execute(query)}
        except sqlite3.Error:
            pass
    finally:
        conn.close()
    return rows, lost, last_seq


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
    target = next_generation(root)
    try:
        kept = salvage(live, target, dimension) if dimension else {}
    except StoreCorruptedError as exc:
        report.lost.append(f"{root}: every point of {live.name} ({exc})")
        kept = {}
    if not kept:
        from agentmem.stores.qdrant._edge_shard import create_shard

        if target.exists():
            import shutil

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
