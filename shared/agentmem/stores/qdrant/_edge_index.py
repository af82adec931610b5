"""Building a Qdrant Edge store's vector index off the callers' path (private).

Qdrant Edge builds its HNSW index only in ``EdgeShard.optimize()``, and qdrant-edge-py 0.9
runs that call holding Python's GIL: measured here, the whole process (every thread, every
asyncio task) stops for about 9 s at 10,000 points of 384 dimensions and 35-40 s at 20,000 to
30,000. Optimizing the live shard in a background thread would therefore still freeze every
caller. Instead, once :attr:`AutoIndex.min_unindexed` points are searched without an index,
a background thread rebuilds the shard in a child process and swaps it in:

1. **export** - the live shard's points (vectors and payload) are read page by page, each
   page under the store's lock for a few milliseconds, and streamed to a child process;
2. **build** - the child writes them into a fresh shard in a new generation directory,
   creates the payload indexes, runs ``optimize()`` (its own GIL, its own CPU), flushes;
3. **journal** - every write the store accepts from the start of the export is also kept,
   in order. agentmem's writes are absolute (set a value, never add to one), so replaying
   them over a copy that already holds some of them gives exactly the live state;
4. **catch up and swap** - the new shard is loaded and the journal replayed into it in
   rounds while callers go on; once the rest is short, under the store's lock, the rest is
   replayed and flushed, ``CURRENT`` (the name of the live generation) replaced atomically,
   and the old shard closed and deleted. Only that last step holds the store's lock. (Loading
   the new shard runs in Edge holding the GIL, like every Edge call: the process pauses
   for the load, about 0.7 s at 20,000 points here.)

Crash safety: ``CURRENT`` names a generation only once it is complete; a crash at any point
leaves the old generation live, and the next open deletes generations ``CURRENT`` does not
name. A child that fails or is killed leaves the live shard untouched (the attempt is logged
and retried after the next :attr:`AutoIndex.min_unindexed` writes).

Work kept across a close: the child indexes the points in :attr:`AutoIndex.parts` parts
(:func:`part_size`), each one optimized into its own HNSW segment and flushed before the
next, and after each marks the generation resumable (``agentmem-partial.json``). A close
that stops the rebuild (past :attr:`AutoIndex.finish_at_close`), or a kill, leaves the
parts done on disk (and a close during the catch-up, the whole generation), and the next
rebuild (at the next open, once due) resumes that generation: the export is compared with
what it holds, and only the points written or changed since, and those deleted, are
written to it, so the segments indexed before the close are kept as they are. Code from
before this deletes the resumable generation at open like any other (and rebuilds).

Example:
    >>> AutoIndex().min_unindexed
    20000
"""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from agentmem._util.checks import check_int, check_seconds
from agentmem._util.durable import replace_durably
from agentmem.errors import ConfigurationError
from agentmem.stores.qdrant._edge_access import ACCESS_FILE

__all__ = [
    "CURRENT_FILE",
    "PARTIAL_FILE",
    "AutoIndex",
    "build_generation",
    "current_generation",
    "drop_stale_generations",
    "export_vectors",
    "next_generation",
    "part_size",
    "resumable_generation",
    "set_current_generation",
    "unindexed_points",
]

logger = logging.getLogger("agentmem.stores.qdrant.edge")

CURRENT_FILE = "CURRENT"
PARTIAL_FILE = "agentmem-partial.json"  # in a generation with parts indexed and flushed
_GEN_PREFIX = "gen-"
_SAME_VECTOR = 1e-6  # Edge normalizes cosine vectors again on insert: the last bits move


@dataclass(frozen=True)
class AutoIndex:
    """When a :class:`~agentmem.stores.qdrant.edge.QdrantEdgeStore` rebuilds its index
    by itself (the Edge counterpart of a Qdrant server's optimizer thresholds).

    Attributes:
        min_unindexed: Rebuild once at least this many points are searched without the
            HNSW index. Below it, exact search over the unindexed points is fast (a few ms
            per 10,000 filtered points here), so rebuilding would cost more than it saves.
        growth: Also wait until the unindexed points are at least this fraction of the
            indexed ones. A rebuild re-indexes every point, so waiting for the store to grow
            by a fixed fraction keeps the total indexing work linear in the store's size
            (each point is indexed at most ``1 + 1 / growth`` times over the store's life),
            while at most ``growth / (1 + growth)`` of the points are searched exactly.
        check_every: Points written between two checks of the count (a check reads the
            shard's counters: microseconds).
        enabled: ``False`` turns it off; :meth:`QdrantEdgeStore.optimize` still works.
        finish_at_close: Seconds :meth:`QdrantEdgeStore.close` waits for a rebuild in
            progress to finish and swap in, so that the next open searches with its index
            (2 min at 100,000 memories here). Past it, the rebuild is stopped: the parts it
            has indexed and flushed so far stay on disk, and the next rebuild resumes from
            them (see ``parts``); meanwhile the previous index serves searches and the
            points written since it are searched exactly. ``0``: never wait.
        parts: Index the store in this many parts (each at least ``min_unindexed``
            points), each flushed when done, so that a rebuild stopped by a close or a kill
            keeps the parts done for the next open to resume. Each part is an HNSW segment
            of its own, and a search visits each: the recall p50 of a user with 100,000
            of 110,000 memories over that of one with 1,000 was the same with 4 parts as
            with 1 on an idle machine here (1.41-1.46 against 1.39-1.51), but 1.65-1.76
            against 1.46-1.67 on a loaded one. ``1``: one segment; a rebuild stopped
            before its end is redone (one stopped while catching up with the writes made
            meanwhile resumes).
    """

    min_unindexed: int = 20_000
    growth: float = 0.25
    check_every: int = 1_000
    enabled: bool = True
    finish_at_close: float = 180.0
    parts: int = 1

    def due(self, unindexed: int, points: int) -> bool:
        """Whether a store with ``points`` points, ``unindexed`` of them without the index
        (beyond what the last rebuild left), should rebuild now.

        Example:
            >>> policy = AutoIndex()
            >>> policy.due(19_999, 19_999), policy.due(20_000, 20_000)
            (False, True)
            >>> policy.due(20_000, 200_000), policy.due(45_000, 200_000)
            (False, True)
        """
        indexed = max(0, points - unindexed)
        return unindexed >= max(self.min_unindexed, self.growth * indexed)

    def __post_init__(self) -> None:
        if isinstance(self.growth, bool) or not 0 <= self.growth <= 10:
            msg = f"AutoIndex.growth must be a number in [0, 10], got {self.growth!r}"
            raise ConfigurationError(msg)
        check_seconds(self.finish_at_close, "AutoIndex.finish_at_close", maximum=1e9)
        for name in ("min_unindexed", "check_every", "parts"):
            value = getattr(self, name)
            check_int(value, f"AutoIndex.{name}", expected="must be a positive integer")


def unindexed_points(points: int, indexed_vectors: int) -> int:
    """Points without an HNSW entry, from Edge's counters: each point has two vectors (dense
    and BM25); the sparse one is always indexed, the dense one only once optimized.

    Example:
        >>> unindexed_points(30_000, 30_000), unindexed_points(30_001, 60_001)
        (30000, 1)
    """
    return max(0, 2 * points - indexed_vectors)


# -- generations ------------------------------------------------------------------------


def current_generation(root: Path) -> Path:
    """The live shard directory of the store at ``root`` (``root`` itself for a store made
    before generations existed)."""
    marker = root / CURRENT_FILE
    if not marker.exists():
        return root
    name = marker.read_text(encoding="utf-8").strip()
    return root / name


def next_generation(root: Path) -> Path:
    """A fresh generation directory under ``root``: never the name of an earlier one, even
    one a crashed process's builder may still be writing."""
    return root / f"{_GEN_PREFIX}{time.time_ns():x}-{uuid.uuid4().hex[:8]}"


def set_current_generation(root: Path, generation: Path) -> None:
    """Make ``generation`` the live one, atomically and durably."""
    replace_durably(root / CURRENT_FILE, generation.name)


def resumable_generation(root: Path) -> Path | None:
    """The newest generation that a rebuild stopped by a close (or a kill) left with parts
    indexed and flushed, for the next rebuild to resume; ``None`` when there is none."""
    live = current_generation(root)
    found = [
        path
        for path in root.glob(f"{_GEN_PREFIX}*")
        if path != live and (path / PARTIAL_FILE).is_file()
    ]
    return max(found, key=lambda path: path.name, default=None)


def drop_stale_generations(root: Path) -> None:
    """Delete generation directories the store does not use (an interrupted rebuild, or the
    generation a swap replaced) but the one a rebuild can resume (see
    :func:`resumable_generation`), and the files of the pre-generation layout once replaced.
    Nothing is deleted while the live generation is missing (``CURRENT`` naming a directory
    that is gone): what is left may then be the only copy of the data."""
    live = current_generation(root)
    if not live.is_dir():
        return
    keep = resumable_generation(root)
    for path in root.glob(f"{_GEN_PREFIX}*"):
        if path.is_dir() and path not in (live, keep):
            shutil.rmtree(path, ignore_errors=True)
    if live != root:
        for name in ("segments", "wal", "edge_config.json", ACCESS_FILE):
            target = root / name
            if target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
            elif target.exists():
                target.unlink()


# -- the child process ------------------------------------------------------------------

Page = list[tuple[str, dict[str, Any], dict[str, Any]]]
"""Points as ``(id, {vector name: dense list or (indices, values)}, payload)``."""


def part_size(points: int, policy: AutoIndex) -> int:
    """Points the builder indexes and flushes at a time for a store of ``points`` points:
    an :attr:`AutoIndex.parts`-th of them, and at least :attr:`AutoIndex.min_unindexed`
    (below it, an index is not worth building).

    Example:
        >>> part_size(110_000, AutoIndex()), part_size(110_000, AutoIndex(parts=4))
        (110000, 27500)
        >>> part_size(30_000, AutoIndex(parts=4))
        20000
    """
    return max(policy.min_unindexed, -(-points // policy.parts))


def build_generation(
    target: Path,
    dimension: int,
    pages: Iterator[Page],
    *,
    part: int,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> None:
    """Write ``pages`` into an optimized shard at ``target`` in a child process, ``part``
    points at a time (see :func:`part_size`). A ``target`` that
    :func:`resumable_generation` names is resumed: only what differs from ``pages`` is
    written to it.

    ``on_start`` receives the child (so its owner can kill it when the store closes).

    Raises:
        RuntimeError: The child failed or was killed (its stderr is in the message).
    """
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentmem.stores.qdrant._edge_index",
            str(target),
            str(dimension),
            str(os.getpid()),
            str(part),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if on_start is not None:
        on_start(child)
    assert child.stdin is not None  # invariant: stdin=PIPE
    try:
        for page in pages:
            pickle.dump(page, child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.dump(None, child.stdin)
        child.stdin.close()
        assert child.stderr is not None  # invariant: stderr=PIPE
        err = child.stderr.read()
        child.wait()
        child.stderr.close()
    except BaseException:
        child.kill()
        child.wait()
        raise
    if child.returncode != 0:
        msg = f"index build in {target} failed: {err.decode(errors='replace')[-2000:]}"
        raise RuntimeError(msg)


def _die_with_parent(parent: int) -> None:
    """End this builder when the store's process dies (a kill -9 included), so no orphan
    keeps writing; where the OS cannot tell us, the closed pipe ends it while it reads."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        raise SystemExit(1)


def _child(target: Path, dimension: int, part: int, source: IO[bytes]) -> None:
    import qdrant_edge as qe

    from agentmem.stores.qdrant._edge_shard import create_shard

    resumed = (target / PARTIAL_FILE).is_file()
    if resumed:
        shard = qe.EdgeShard.load(str(target))
    else:
        shard = create_shard(target, dimension, index_everything=True)
    try:
        sent: set[str] = set()
        pending = 0  # points written since the last part was indexed
        while (page := pickle.load(source)) is not None:
            if resumed:
                sent.update(pid for pid, _, _ in page)
                page = _changed(shard, page)
            # One update per page: every update is one entry of the shard's write-ahead log,
            # and Edge reads the entries its log still holds at every later open (one entry
            # of a whole 100,000-point part cost 5.7 s of CPU per open).
            points = [
                qe.Point(pid, {k: _vector(qe, v) for k, v in vectors.items()}, payload)
                for pid, vectors, payload in page
            ]
            if points:
                shard.update(qe.UpdateOperation.upsert_points(points))
            pending += len(points)
            if pending >= part:
                _index_part(shard, target)
                pending = 0
        if resumed:
            gone: list[Any] = [pid for pid in _ids(qe, shard) if pid not in sent]
            if gone:
                shard.update(qe.UpdateOperation.delete_points(gone))
        _index_part(shard, target)  # the parent unmarks it when it swaps it in
    finally:
        shard.close()


def _index_part(shard: Any, target: Path) -> None:
    """Index the points written since the last part into segments of their own, flush, and
    mark the generation resumable."""
    shard.optimize()
    shard.flush()
    replace_durably(target / PARTIAL_FILE, '{"resumable": true}\n')


def _changed(shard: Any, page: Page) -> Page:
    """The points of ``page`` that a resumed generation lacks or holds otherwise."""
    held = {
        str(r.id): r
        for r in shard.retrieve([pid for pid, _, _ in page], with_payload=True, with_vector=True)
    }
    return [
        (pid, vectors, payload)
        for pid, vectors, payload in page
        if (old := held.get(pid)) is None
        or dict(old.payload or {}) != payload
        or not _same_vectors(export_vectors(old.vector), vectors)
    ]


def _same_vectors(held: dict[str, Any], sent: dict[str, Any]) -> bool:
    if held.keys() != sent.keys():
        return False
    for name, value in sent.items():
        if isinstance(value, tuple):  # sparse: (indices, values), exactly
            if held[name] != value:
                return False
        elif len(held[name]) != len(value) or any(
            abs(a - b) > _SAME_VECTOR for a, b in zip(held[name], value, strict=True)
        ):
            return False
    return True


def _ids(qe: Any, shard: Any) -> Iterator[str]:
    offset: Any = None
    while True:
        request = qe.ScrollRequest(offset=offset, limit=1024, with_payload=False)
        rows, offset = shard.scroll(request)
        yield from (str(r.id) for r in rows)
        if offset is None:
            return


def _vector(qe: Any, value: Any) -> Any:
    if isinstance(value, tuple):
        return qe.SparseVector(list(value[0]), list(value[1]))
    return value


def export_vectors(vectors: Any) -> dict[str, Any]:
    """Picklable vectors of a scrolled Edge record."""
    out: dict[str, Any] = {}
    for name, value in vectors.items():
        if hasattr(value, "indices"):
            out[name] = (list(value.indices), [float(v) for v in value.values])
        else:
            out[name] = list(value)
    return out


def run_child(argv: list[str], read: Callable[[], IO[bytes]]) -> int:
    """Entry point of the child (``python -m agentmem.stores.qdrant._edge_index``)."""
    target, dimension, parent, part = Path(argv[0]), int(argv[1]), int(argv[2]), int(argv[3])
    _die_with_parent(parent)
    _child(target, dimension, part, read())
    return 0


if __name__ == "__main__":
    raise SystemExit(run_child(sys.argv[1:], lambda: sys.stdin.buffer))
