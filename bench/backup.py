"""Backup, restore and the integrity manifest on a home of a realistic size.

Builds a home of ``--memories`` memories (default 10,000; the hashing embedder from
``tests/fakes.py``, 384 dimensions) in ``--users`` users, with ``--sessions`` sessions of
``--turns`` turns each in SQLite, and measures, in one run:

* ``MemoryService.backup`` while the service is open, and ``agentmem.backup.restore`` into
  a new home, against a plain copy of the home's data (the same sparse copy, without
  flushing, verifying or checksumming) as the baseline;
* the size of the backup against the home's (data bytes: the allocated blocks);
* what the manifest costs: describing the store (every file's checksum, as a flush or
  close does) and verifying it before the load (the metadata files only, as
  ``preload=False`` does; every file, as the default ``preload=True`` does), against the
  time a plain open and close of the store takes.

Run: ``python bench/backup.py [--memories 10000] [--out bench/results/backup.json]``.
Times are medians of ``--repeat`` runs, reported with the ratios the README quotes.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import environment, log, print_table, write_json

DIM = 384


def data_bytes(root: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def apparent_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def median_s(run: Callable[[], Any], repeat: int, reset: Callable[[], None] | None = None) -> float:
    times = []
    for _ in range(repeat):
        if reset is not None:
            reset()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def against(name: str, seconds: float, baseline: str, baseline_seconds: float) -> dict[str, float]:
    """``{name}_s`` and its ratio to the baseline, ``{name}_x_{baseline}``."""
    return {
        f"{name}_s": round(seconds, 3),
        f"{name}_x_{baseline}": round(seconds / baseline_seconds, 2),
    }


def build_home(home: Path, memories: int, users: int, sessions: int, turns: int) -> None:
    from agentmem import MemoryService
    from tests.fakes import HashingEmbedder

    with MemoryService.open(
        home, embedder=HashingEmbedder(DIM), consolidate_every_tokens=None
    ) as service:
        per_user = memories // users
        for u in range(users):
            memory = service.long_term(f"user{u:03d}")
            for start in range(0, per_user, 1000):
                batch = [
                    memory.new_record(f"user {u} note {i}: detail {i * 7919 % 10007}", "semantic")
                    for i in range(start, min(per_user, start + 1000))
                ]
                memory.store_records(batch)
        for s in range(sessions):
            manager = service.manager(f"user{s % users:03d}", f"session-{s}")
            for t in range(turns):
                manager.process_interaction(f"question {t} of session {s}", f"answer {t} " * 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()

    from agentmem import MemoryService
    from agentmem._util.file_copy import copy_tree
    from agentmem.backup import restore
    from agentmem.stores.qdrant import _edge_manifest as manifests
    from agentmem.stores.qdrant._edge_index import current_generation
    from agentmem.stores.qdrant._edge_probe import probe
    from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore
    from tests.fakes import HashingEmbedder

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "home"
        log(f"building a home of {args.memories} memories and {args.sessions} sessions")
        build_home(home, args.memories, args.users, args.sessions, args.turns)
        long_term = home / "long_term"
        counter = iter(range(1_000_000))

        def fresh(name: str) -> Path:
            return root / f"{name}-{next(counter)}"

        plain_copy_s = median_s(lambda: copy_tree(home, fresh("plain")), args.repeat)
        service = MemoryService.open(home, embedder=HashingEmbedder(DIM))
        backups: list[Path] = []
        try:

            def backup() -> None:
                backups.append(service.backup(fresh("backup")).path)

            backup_s = median_s(backup, args.repeat)
        finally:
            service.close()
        backup_dir = backups[-1]
        restore_s = median_s(lambda: restore(backup_dir, fresh("restored")), args.repeat)

        def open_close() -> None:
            QdrantEdgeStore(long_term, dimension=DIM, auto_index=AutoIndex(enabled=False)).close()

        open_close_s = median_s(open_close, args.repeat)
        manifest = manifests.read_manifest(long_term)
        assert manifest is not None
        assert manifest.state == "clean"
        live = current_generation(long_term)
        describe_s = median_s(
            lambda: manifests.describe(long_term, live, manifest.points, "clean"), args.repeat
        )
        verify_meta_s = median_s(
            lambda: manifests.verify(long_term, manifest, data=False), args.repeat
        )
        verify_all_s = median_s(
            lambda: manifests.verify(long_term, manifest, data=True), args.repeat
        )
        probe_s = median_s(lambda: probe(live), args.repeat)

        home_data, backup_data = data_bytes(home), data_bytes(backup_dir)
        result = {
            "memories": args.memories,
            "sessions": args.sessions,
            "messages": args.sessions * args.turns * 2,
            "home_data_mb": round(home_data / 1e6, 1),
            "home_apparent_mb": round(apparent_bytes(home) / 1e6, 1),
            "backup_data_mb": round(backup_data / 1e6, 1),
            "backup_size_x_home": round(backup_data / home_data, 2),
            "plain_copy_s": round(plain_copy_s, 3),
            **against("backup", backup_s, "plain_copy", plain_copy_s),
            **against("restore", restore_s, "plain_copy", plain_copy_s),
            "edge_open_close_s": round(open_close_s, 3),
            **against("manifest_describe", describe_s, "open_close", open_close_s),
            "manifest_verify_metadata_s": round(verify_meta_s, 4),
            **against("manifest_verify_all", verify_all_s, "open_close", open_close_s),
            **against("child_probe", probe_s, "open_close", open_close_s),
        }
        for path in root.iterdir():
            if path != home:
                shutil.rmtree(path, ignore_errors=True)
    rows = [{"measure": k, "value": v} for k, v in result.items()]
    print_table(rows, ["measure", "value"])
    if args.out:
        write_json(args.out, {"environment": environment(), "result": result})


if __name__ == "__main__":
    main()
