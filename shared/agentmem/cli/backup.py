"""``agentmem backup``, ``agentmem restore`` and ``agentmem repair`` (private).

Each works on a home no process holds (a running service takes backups with
:meth:`agentmem.MemoryService.backup`). None loads a model. Every refusal is one line on
stderr, exit status 1, and nothing written.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from agentmem.cli import common
from agentmem.errors import ConfigurationError

__all__ = ["backup_command", "repair_command", "restore_command"]


def _home(args: argparse.Namespace) -> Path:
    config = common.resolve_config(args)
    common.check_home(config)
    return config.home


def _edge_dimension(root: Path) -> int:
    from agentmem.stores.qdrant._edge_index import current_generation

    config = current_generation(root) / "edge_config.json"
    try:
        return int(json.loads(config.read_text(encoding="utf-8"))["vectors"]["dense"]["size"])
    except (OSError, ValueError, KeyError, TypeError):
        msg = f"{root} holds no readable Qdrant Edge store ({config}); check --home"
        raise ConfigurationError(msg) from None


def backup_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem backup DEST``: a verified copy of the home in the new directory DEST."""
    from agentmem.backup import backup_stores
    from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore
    from agentmem.stores.sqlite import SQLiteSessionStore

    home = _home(args)
    db, long_term = home / "sessions.db", home / "long_term"
    if not db.exists() or not long_term.is_dir():
        msg = f"no agentmem home at {home} (sessions.db and long_term/); check --home"
        raise ConfigurationError(msg)
    dest = Path(args.dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        msg = f"backup destination {dest} exists and is not empty; pass a new directory"
        raise ConfigurationError(msg)
    dimension = _edge_dimension(long_term)
    memories = QdrantEdgeStore(
        long_term, dimension=dimension, preload=False, auto_index=AutoIndex(enabled=False)
    )
    try:
        sessions = SQLiteSessionStore(db)
        try:
            report = backup_stores(sessions, memories, dest)
        finally:
            sessions.close()
    finally:
        memories.close()
    out.write(
        f"backed up {home} to {report.path}: {report.files} files, "
        f"{common.format_bytes(report.bytes)}, {report.sessions} sessions, "
        f"{report.messages} messages, {report.memories} memories ({report.seconds:.1f} s)\n"
    )
    return 0


def restore_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem restore SRC --home H [--force]``: the backup SRC into the home, verified
    first."""
    from agentmem.backup import restore

    home = _home(args)
    report = restore(args.src, home, force=args.force)
    out.write(
        f"restored {args.src} into {report.home}: {report.files} files, "
        f"{report.sessions} sessions, {report.messages} messages, {report.memories} memories"
        f"{' (replaced the stores that were there)' if report.replaced else ''} "
        f"({report.seconds:.1f} s)\n"
    )
    return 0


def repair_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem repair [--accept-loss]``: check the home; rebuild damaged stores from what
    can be read with --accept-loss, listing what was lost."""
    from agentmem.repair import repair

    home = _home(args)
    report = repair(home, accept_loss=args.accept_loss)
    if not report.damaged:
        out.write(f"{home}: both stores are intact; nothing to repair\n")
        return 0
    for line in report.damaged:
        out.write(f"damaged: {line}\n")
    if not args.accept_loss:
        err.write(
            "agentmem: the home is damaged (see above); nothing was changed. Restore a backup "
            "(`agentmem restore BACKUP --home H --force`) or run `agentmem repair "
            "--accept-loss` to keep what can be read\n"
        )
        return 1
    for line in report.lost:
        out.write(f"lost: {line}\n")
    for line in report.kept:
        out.write(f"kept: {line}\n")
    return 0
