"""Long-term memories in Qdrant Edge: the Qdrant engine in-process, on disk (the default).

One directory holds one shard: HNSW on the named dense vector ``"dense"``, a BM25 sparse
vector ``"bm25"`` with the IDF modifier, payload indexes on the scope fields (``user_id`` is
the tenant key), and a write-ahead log.

Durability: every write goes to Edge's WAL before it returns, so a killed process loses
nothing it was told was written; segments are flushed on :meth:`QdrantEdgeStore.close` (and
by :meth:`QdrantEdgeStore.flush`). Flushing after every write would cost ~40 ms per call on
this machine and add no safety against a crash, only a faster reopen.

Indexing needs no manual step: once :attr:`AutoIndex.min_unindexed` points are searched
without the HNSW index (20,000 by default), the store rebuilds its index in a child process
and swaps it in (see :mod:`agentmem.stores.qdrant._edge_index` for why not in-process, and for
crash safety); :meth:`QdrantEdgeStore.optimize` still builds it now, in-process. New points
count, and so do indexed points that a payload write (an access recorded on recall, a
supersede) or an upsert moved to Edge's unindexed segment: Edge's counters miss those, so
the store counts them itself (:meth:`QdrantEdgeStore.unindexed_estimate`) and keeps the
count across a close.

One process at a time: the store takes an exclusive ``flock`` on ``<path>/agentmem.lock``;
a second opener gets :class:`~agentmem.errors.StoreLockedError`.

Integrity: at every flush and close the store writes a manifest of its live generation
(each file's size and checksum, the point count per space) and verifies it at open before
Edge sees a file; a store that was not closed cleanly is loaded in a child process first
(see :mod:`agentmem.stores.qdrant._edge_manifest`). :meth:`QdrantEdgeStore.backup_to`
copies the flushed generation with its manifest under the store's lock.

Damage: a shard whose files are partly gone (config without segments or WAL, or the
reverse) or that Edge cannot load (a truncated WAL or segment) raises
:class:`~agentmem.errors.StoreCorruptedError` at open, naming the path and the recovery;
the lock is released and nothing is written. Several processes sharing
memories should use :class:`~agentmem.stores.qdrant.client.QdrantClientStore` with a
Qdrant server.

Example:
    >>> import tempfile
    >>> from agentmem.long_term.records import MemoryRecord, Scope
    >>> from agentmem.long_term.store import SparseVector
    >>> with QdrantEdgeStore(tempfile.mkdtemp(), dimension=3) as store:
    ...     rec = MemoryRecord.new("tabs, not spaces", "semantic", scope=Scope(user_id="alice"))
    ...     store.upsert([rec], [[1.0, 0.0, 0.0]], [SparseVector([7], [1.0])])
    ...     [hit.record.content for hit in store.search(Scope(user_id="alice"), dense=[1, 0, 0])]
    ['tabs, not spaces']
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

import qdrant_edge as qe

from agentmem._sansio import Program, blocking
from agentmem._util.checks import check_int
from agentmem._util.durable import fsync_dir
from agentmem._util.file_copy import copy_tree
from agentmem.errors import (
    ConfigurationError,
    StoreClosedError,
    StoreCorruptedError,
    StoreError,
    StoreLockedError,
)
from agentmem.home import check_no_interrupted_restore
from agentmem.long_term.records import Scope
from agentmem.long_term.store import DENSE_VECTOR, SPARSE_VECTOR, SparseVector
from agentmem.stores import points as pt
from agentmem.stores.engine import MemoryStoreEngine
from agentmem.stores.qdrant import _edge_manifest as manifests
from agentmem.stores.qdrant._edge_access import AccessStats, ordered_by_access, split_access
from agentmem.stores.qdrant._edge_census import (
    CENSUS_FIELD,
    CENSUS_FILE,
    Census,
    ScopeCounts,
    census_holds,
    census_kind,
    read_census,
    write_census,
)
from agentmem.stores.qdrant._edge_embedder import (
    EMBEDDER_FILE,
    read_record_file,
    write_record_file,
)
from agentmem.stores.qdrant._edge_files import (
    CONFIG_FILE,
    corrupted,
    edge_errors,
    is_undecodable,
    read_ahead,
    read_ahead_field,
    shard_state,
)
from agentmem.stores.qdrant._edge_index import (
    CURRENT_FILE,
    PARTIAL_FILE,
    AutoIndex,
    build_generation,
    current_generation,
    drop_stale_generations,
    export_vectors,
    next_generation,
    part_size,
    resumable_generation,
    set_current_generation,
    unindexed_points,
)
from agentmem.stores.qdrant._edge_probe import count_spaces, probe
from agentmem.stores.qdrant._edge_shard import (
    HOT_FIELDS,
    create_indexes,
    create_shard,
    lazy_layout,
    shard_schema,
)
from agentmem.stores.qdrant._edge_wal import wal_damage

__all__ = ["AutoIndex", "QdrantEdgeStore", "create_shard", "holding_lock", "read_scope_counts"]

T = TypeVar("T")

logger = logging.getLogger(__name__)
_EXPORT_PAGE = 512
_FINAL_REPLAY = 32  # journal entries replayed under the store's lock at the swap

LOCK_FILE = "agentmem.lock"
INDEX_STATE_FILE = "agentmem-index.json"  # unindexed points at close (a hint, see _read_moved)
_ROOT_FILES = frozenset(
    {
        LOCK_FILE,
        INDEX_STATE_FILE,
        manifests.MANIFEST_FILE,
        CURRENT_FILE,
        EMBEDDER_FILE,
        CENSUS_FILE,
    }
)


class QdrantEdgeStore(MemoryStoreEngine):
    """A :class:`~agentmem.long_term.store.MemoryStore` on a Qdrant Edge shard directory.

    Args:
        path: Directory of the shard; created (with the schema) when it holds no shard yet.
        dimension: Size of the dense vectors (the embedder's dimension). An existing shard
            made with another size raises :class:`~agentmem.errors.DimensionMismatchError`.
        auto_index: When to rebuild the vector index in the background (default
            :class:`AutoIndex`: after 20,000 unindexed points; ``AutoIndex(enabled=False)``
            turns it off).
        preload: Read the shard's files into the page cache at open (sequentially, once),
            so that the first searches do not wait on the disk page by page (0.3-0.5 s
            per 100,000 memories on this project's CI machine). ``False`` suits a short
            command that only counts (``agentmem stats``): the open then reads only the id
            map and the payload indexes kept in RAM. Searches are correct either way.

    Raises:
        StoreLockedError: Another process (or another open store) holds ``path``.
        DimensionMismatchError: The shard at ``path`` holds vectors of another size.
        StoreCorruptedError: The shard at ``path`` is damaged (files missing or unreadable),
            or the home it is in (its parent) is being replaced by a restore that is running
            or was interrupted (see :func:`agentmem.home.check_no_interrupted_restore`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        dimension: int,
        auto_index: AutoIndex | None = None,
        preload: bool = True,
    ) -> None:
        check_int(dimension, "dimension", expected="must be a positive integer")
        self._path = Path(path)
        self._dimension = dimension
        self._auto = auto_index if auto_index is not None else AutoIndex()
        self._preload = preload
        self._mutex = threading.RLock()
        self._journal: list[tuple[str, tuple[Any, ...]]] | None = None
        self._since_check = 0
        # Points searched without the index that Edge's counters cannot show: a payload
        # update (a touch, a supersede) or an upsert of an indexed point moves its copy to
        # the unindexed appendable segment, while the counters still count the old copy.
        self._moved: set[str] = set()  # ids written since the live generation was exported
        self._moved_before = 0  # such points at open (from agentmem-index.json)
        self._exported_moved: tuple[set[str], int] = (set(), 0)  # restored on a failure
        self._unflushed = False  # a write since the last flush: close() flushes only then
        self._counts: dict[str, int] | None = None  # points per space, until the next write
        # The checksum of the census file that holds for the live shard (from the clean
        # manifest verified at open, or written since), until the next write.
        self._census: str | None = None
        self._warm = set(HOT_FIELDS)  # fields in RAM or read ahead since the load (_facet)
        self._saved_index_state: tuple[str, int] | None = None  # as agentmem-index.json holds
        self._rebuild: threading.Thread | None = None
        self._closing = False  # close() is waiting for a rebuild: start no other
        self._child: subprocess.Popen[bytes] | None = None
        self._manifest: manifests.Manifest | None = None  # as last written (or verified)
        self._stamps: manifests.Stamps | None = None  # its files when it was checked
        self._path.mkdir(parents=True, exist_ok=True)
        self._lock_file = None if _held_here(self._path) else _lock(self._path)
        try:
            check_no_interrupted_restore(self._path.parent)  # a half-replaced home
            _check_current(self._path)  # before anything that would trust it
            self._shard_dir = current_generation(self._path)
            if not self._shard_dir.is_dir():  # before deleting what is not live
                problem = f"{self._shard_dir.name}, named live by CURRENT, is missing"
                raise corrupted(self._path, problem)
            drop_stale_generations(self._path)
            expected = self._check_before_load()
            before = manifests.manifest_text(self._path)  # put back if the open is refused
            # Marked before Edge loads the shard, which rewrites some of its files: a kill
            # from here on leaves a manifest that vouches for nothing, and the next open
            # probes the shard instead of refusing files the manifest no longer matches.
            self._mark_open()
            try:
                self._shard = self._open_shard()
            except BaseException:
                manifests.put_back(self._path, before)
                raise
            try:
                try:
                    self._access = AccessStats(
                        self._path, self._shard_dir, self._mutex, on_access=self._touching
                    )
                    if expected is not None:
                        manifests.check_points(self._path, expected, self._count_spaces())
                except BaseException:  # refused before anything of ours was written
                    manifests.put_back(self._path, before)
                    raise
                self._moved_before = _read_moved(self._path, self._shard_dir)
                self._saved_index_state = (self._shard_dir.name, self._moved_before)
                with edge_errors(self._path, "update"):
                    self._backfill_spaces()  # its writes count as moved, like any other
                if self._auto.enabled:
                    with self._mutex:
                        self._rebuild_if_due()
            except BaseException:
                with contextlib.suppress(Exception):
                    self._shard.close()
                raise
        except BaseException:
            _unlock(self._lock_file)
            raise

    @property
    def path(self) -> Path:
        """The shard directory."""
        return self._path

    # -- the integrity manifest (see agentmem.stores.qdrant._edge_manifest) ---------------

    def _check_before_load(self) -> manifests.Manifest | None:
        """Verify the live generation before Edge sees it; the manifest whose point counts
        the loaded shard must reach (``None``: nothing to compare)."""
        root, where = self._path, self._shard_dir
        manifest = manifests.read_manifest(root)
        name = manifests.generation_name(root, where)
        if shard_state(where) == "empty":
            if manifest is not None and manifest.generation == name and manifest.files:
                # Not a new store: its shard's files were deleted (a partial restore, an
                # emptied directory). Loading none would make an empty store of it.
                listed = len(manifest.files)
                problem = f"{where} holds none of the {listed} files its manifest lists"
                raise manifests.damaged(root, problem)
            return None
        if manifest is not None and manifest.generation == name and manifest.state == "clean":
            stamps = manifests.stamp(root, manifest)
            manifests.verify(root, manifest, data=self._preload)
            self._stamps = stamps
            self._manifest = manifest
            self._census = manifest.census
            return manifest
        if manifest is not None and manifest.generation == name:
            manifests.check_listed(root, manifest)
            self._manifest = manifest
            reason = "was not closed cleanly (a crash)"
        else:
            reason = "has no manifest yet (made before agentmem kept one, or it was deleted)"
        logger.info(
            "the Qdrant Edge store at %s %s: loading it in a child process first; it gets a "
            "manifest at its next clean close",
            root,
            reason,
        )
        # Edge would replay its log up to a damaged entry and drop the rest in silence.
        logged = wal_damage(where)
        if logged is not None:
            raise manifests.damaged(root, logged)
        try:
            probe(where)
        except StoreCorruptedError as exc:
            raise manifests.damaged(root, str(exc)) from None
        return None

    def _mark_open(self) -> None:
        """Record that the files may change from now on (a crash leaves them unvouched)."""
        current = self._manifest
        if current is None or current.generation != manifests.generation_name(
            self._path, self._shard_dir
        ):
            listed = manifests.generation_files(self._path, self._shard_dir)
            current = manifests.Manifest(
                manifests.generation_name(self._path, self._shard_dir),
                "open",
                {f: {"size": 0, manifests.CHECKSUM: None} for f in listed},
            )
        self._manifest = current.as_open()
        manifests.write_manifest(self._path, self._manifest)

    def _write_clean_manifest(
        self, counts: dict[str, int], census: str | None, wrote: bool
    ) -> manifests.Manifest:
        """Describe the flushed (or closed) live generation: files, checksums, counts, and
        the checksum of the census written for it (see :meth:`_census_checksum`)."""
        # Described anew: loading a shard may rewrite files (Edge replays its WAL); after a
        # session that wrote nothing, data files unchanged since keep their checksums.
        stamps = None if wrote else self._stamps
        taken = time.time_ns()
        manifest = manifests.describe(
            self._path, self._shard_dir, counts, "clean", unchanged=stamps
        )
        manifest = dataclasses.replace(manifest, census=census)
        manifests.write_manifest(self._path, manifest)
        self._manifest = manifest
        self._stamps = manifests.stamp(self._path, manifest, taken_ns=taken)
        return manifest

    def _open_shard(self) -> qe.EdgeShard:
        where = self._shard_dir
        if shard_state(where) == "empty":
            with edge_errors(where, "create"):
                shard = qe.EdgeShard.create(str(where), shard_schema(self._dimension))
        else:
            config, stored = _stored_config(where / CONFIG_FILE)
            pt.check_dimension(stored, self._dimension, f"the Qdrant Edge store at {self._path}")
            if self._preload or not lazy_layout(config):  # an older layout loads it all
                read_ahead(where)
            with edge_errors(where, "load"):
                shard = qe.EdgeShard.load(str(where))
        try:
            with edge_errors(self._path, "index"):
                if set(_CONFIG_KEYS) - set(shard.info().payload_schema):
                    create_indexes(shard)
        except BaseException:
            with contextlib.suppress(Exception):
                shard.close()
            raise
        return shard

    def optimize(self) -> bool:
        """Build the HNSW and payload indexes of new segments now, in this process.

        Blocking, and qdrant-edge-py holds the GIL meanwhile: the whole process waits (tens
        of seconds at 50,000 points). The store also does this by itself, in a child process
        (see ``auto_index``); call this when you want the index now, e.g. after a large
        import before serving. Returns whether anything was optimized.
        """
        with self._mutex:
            self._check_open()
            if not self._unflushed:  # optimizing rewrites segments: unvouched until a flush
                self._mark_open()
            self._unflushed = True
            done = bool(self._shard.optimize())
            # Optimized segments drop the stale copies of moved points: the counters are
            # exact again.
            self._moved, self._moved_before = set(), 0
            return done

    def flush(self) -> None:
        """Write pending segment changes to disk (the WAL already holds every write) and
        the store's manifest (files, checksums, point counts)."""
        with self._mutex:
            self._check_open()
            self._access.flush()
            self._shard.flush()
            wrote, self._unflushed = self._unflushed, False
            self._write_clean_manifest(self._count_spaces(), self._census_checksum(), wrote)

    def backup_to(self, dest: str | os.PathLike[str]) -> tuple[manifests.Manifest, int]:
        """Copy the live generation, flushed, with its manifest, to the new directory
        ``dest`` (holding the store's lock: writers wait for the copy, readers too);
        returns the manifest and the data bytes copied. The copy is verified against the
        manifest (every checksum) after the lock is released.

        Raises:
            StoreCorruptedError: The copy differs from the manifest (it is removed).
        """
        target = Path(dest)
        with self._mutex:
            self._check_open()
            self._access.flush()
            self._shard.flush()
            wrote, self._unflushed = self._unflushed, False
            counts, census = self._count_spaces(), self._census_checksum()
            manifest = self._write_clean_manifest(counts, census, wrote)
            source, root = self._shard_dir, self._path

            def skip(path: Path) -> bool:  # the root's own files, and other generations
                own = path.name in _ROOT_FILES or path.name.startswith(("gen-", "damaged-"))
                return path.parent == root and own

            inside = target if source == root else target / source.name
            try:
                _, copied = copy_tree(source, inside, skip=skip)
                if inside != target:
                    (target / CURRENT_FILE).write_text(source.name, encoding="utf-8")
                if (root / EMBEDDER_FILE).is_file():  # whose vectors these are
                    shutil.copyfile(root / EMBEDDER_FILE, target / EMBEDDER_FILE)
                manifests.write_manifest(target, manifest)
            except BaseException:
                shutil.rmtree(target, ignore_errors=True)
                raise
        try:
            manifests.verify(target, manifest, data=True)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        return manifest, copied

    def read_embedder_record(self) -> dict[str, Any] | None:
        """Whose vectors the store holds (see :mod:`agentmem.long_term.embedder_record`):
        ``agentmem-embedder.json`` in the store's directory."""
        with self._mutex:
            self._check_open()
            return read_record_file(self._path)

    def write_embedder_record(self, record: Mapping[str, Any]) -> None:
        """Replace the embedder record, atomically and durably."""
        with self._mutex:
            self._check_open()
            write_record_file(self._path, record)

    def close(self) -> None:
        """Flush (when anything was written), close the shard and release the lock. Further
        use raises StoreClosedError.

        A background index rebuild still running is waited for, up to
        :attr:`AutoIndex.finish_at_close` seconds, so that the next open searches with its
        index; past that it is stopped (the live shard is complete without it), and the
        parts it has indexed and flushed are kept for the next open's rebuild to resume
        (see :attr:`AutoIndex.parts`)."""
        self._finish_rebuild()
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            if self._child is not None:
                self._child.kill()
        try:
            with self._mutex:
                self._access.close()
                if self._unflushed:  # a read-only session leaves the files as they were
                    self._shard.flush()
                counts, census = self._count_spaces(), self._census_checksum()
                self._shard.close()
                try:
                    self._write_clean_manifest(counts, census, self._unflushed)
                except OSError as exc:  # the store is sound; the next open probes it first
                    logger.warning("could not write the manifest of %s: %s", self._path, exc)
        finally:
            rebuild = self._rebuild
            if rebuild is not None and rebuild is not threading.current_thread():
                rebuild.join()  # it sees the store closed, drops its work and ends
            state = (self._shard_dir.name, self.unindexed_estimate())
            if state != self._saved_index_state:
                _write_moved(self._path, *state)
            _unlock(self._lock_file)

    def _finish_rebuild(self) -> None:
        """Let a rebuild in progress swap in (bounded by ``finish_at_close``); start none."""
        with self._mutex:
            if self._closed:
                return
            self._closing = True  # a finished rebuild starts no other
            rebuild = self._rebuild
        wait = self._auto.finish_at_close
        if rebuild is None or not rebuild.is_alive() or rebuild is threading.current_thread():
            return
        if wait > 0:
            logger.info(
                "closing %s: waiting up to %.0f s for the index rebuild in progress "
                "(AutoIndex.finish_at_close)",
                self._path,
                wait,
            )
            started = time.monotonic()
            rebuild.join(wait)
            logger.info(
                "closing %s: the index rebuild %s after %.1f s",
                self._path,
                "is stopped (the parts it indexed are kept for the next open)"
                if rebuild.is_alive()
                else "finished",
                time.monotonic() - started,
            )

    def unindexed_estimate(self) -> int:
        """Points a search reads without the HNSW index (exactly), as far as the store can
        tell: Edge's counters, or the points written since the index was built (an upper
        bound: an id written twice counts once, a point written before and after a rebuild
        once)."""
        with self._mutex:
            counted = 0
            if not self._closed:
                info = self._shard.info()
                counted = unindexed_points(info.points_count, info.indexed_vectors_count)
            return max(counted, self._moved_before + len(self._moved))

    @property
    def indexing(self) -> bool:
        """Whether a background index rebuild is running."""
        rebuild = self._rebuild
        return rebuild is not None and rebuild.is_alive()

    def wait_for_index(self, timeout: float | None = None) -> None:
        """Wait until background index rebuilds have finished (or ``timeout``), including
        one a finished rebuild started for the writes made while it ran."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (rebuild := self._rebuild) is not None and rebuild.is_alive():
            rebuild.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if deadline is not None and time.monotonic() >= deadline:
                return

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"QdrantEdgeStore({str(self._path)!r}, dimension={self._dimension}, {state})"

    def _drive(self, program: Program[T]) -> T:
        with self._mutex:
            try:
                return super()._drive(program)
            except Exception as exc:
                if type(exc) is not Exception:  # ours, or a builtin with a meaning
                    raise
                # qdrant_edge reports every engine failure as a plain Exception; stored
                # data that does not decode (a damaged file found while reading) is damage.
                if is_undecodable(exc):
                    problem = f"Qdrant Edge could not decode what it read ({exc})"
                    raise manifests.damaged(self._path, problem) from exc
                msg = f"Qdrant Edge at {self._path} failed: {exc}"
                raise StoreError(msg) from exc

    # -- background index rebuild (see agentmem.stores.qdrant._edge_index) ----------------

    def _note_write(self, op: str, args: tuple[Any, ...], points: int) -> None:
        """After each write the live shard accepted (under the mutex): journal it while a
        rebuild runs, and start a rebuild once enough points are unindexed."""
        if self._journal is not None:
            self._journal.append((op, args))
        if op == "delete":
            self._moved.difference_update(args[0])
        else:
            self._moved.update(_written_ids(op, args))
        if not self._auto.enabled or self.indexing:
            return
        self._since_check += points
        if self._since_check < self._auto.check_every:
            return
        self._since_check = 0
        self._rebuild_if_due()

    def _rebuild_if_due(self) -> None:
        """Start a background rebuild if the policy says so (under the mutex)."""
        if self._closing:
            return
        points = self._shard.info().points_count
        if not self._auto.due(self.unindexed_estimate(), points):
            return
        self._journal = []
        # The rebuilt generation indexes every point exported; what is written from now on
        # is unindexed in it (restored if the rebuild fails).
        self._exported_moved = (self._moved, self._moved_before)
        self._moved, self._moved_before = set(), 0
        self._rebuild = threading.Thread(
            target=self._rebuild_index, name="agentmem-edge-index", daemon=True
        )
        self._rebuild.start()

    def _set_child(self, child: subprocess.Popen[bytes]) -> None:
        with self._mutex:
            self._child = child
            if self._closed:
                child.kill()

    def _export_pages(self) -> Iterator[list[tuple[str, dict[str, Any], dict[str, Any]]]]:
        offset: Any = None
        while True:
            with self._mutex:
                self._check_open()
                rows, offset = self._shard.scroll(
                    qe.ScrollRequest(
                        offset=offset, limit=_EXPORT_PAGE, with_payload=True, with_vector=True
                    )
                )
            yield [(str(r.id), export_vectors(r.vector), _with_census(r.payload)) for r in rows]
            if offset is None:
                return

    def _rebuild_index(self) -> None:
        resumed = resumable_generation(self._path)
        target = resumed or next_generation(self._path)
        swapped = False
        new: qe.EdgeShard | None = None
        started = time.monotonic()
        try:
            if resumed is not None:
                logger.info(
                    "resuming the index rebuild of %s in %s (its parts indexed before a "
                    "close are kept)",
                    self._path,
                    resumed.name,
                )
            with self._mutex:
                self._check_open()
                part = part_size(self._shard.info().points_count, self._auto)
            build_generation(
                target,
                self._dimension,
                self._export_pages(),
                part=part,
                on_start=self._set_child,
            )
            built = time.monotonic()
            if self._preload:  # the builder's close dropped its files from the page cache
                read_ahead(target)
            with edge_errors(target, "load"):
                new = qe.EdgeShard.load(str(target))
            # Catch up with the writes made meanwhile without holding the store: replay the
            # journal in rounds while it keeps growing, and only its tail under the lock.
            replayed = 0
            while True:
                with self._mutex:
                    self._check_open()
                    batch, self._journal = self._journal or [], []
                if len(batch) <= _FINAL_REPLAY:
                    break
                for op, args in batch:  # absolute writes: replaying them is exact
                    _apply(new, op, args)
                replayed += len(batch)
            with self._mutex:
                self._check_open()
                paused_from = time.monotonic()
                tail, self._journal = [*batch, *(self._journal or [])], None
                for op, args in tail:
                    _apply(new, op, args)  # each in Edge's WAL before it returns: durable
                self._access.copy_to(target)
                (target / PARTIAL_FILE).unlink(missing_ok=True)  # complete: live from now
                fsync_dir(target)  # a live generation never comes back marked resumable
                try:
                    set_current_generation(self._path, target)
                except OSError:
                    if not _names_live(self._path, target):
                        raise  # CURRENT still names the old generation: nothing changed
                    # Renamed, but its directory could not be synced: CURRENT names the new
                    # generation, so the store must serve (and write to) it from now on.
                    logger.warning("could not sync the swap of %s to disk", self._path)
                swapped = True
                old, self._shard, self._shard_dir = self._shard, new, target
                self._access.moved_to(target)
                self._unflushed = True  # the replayed tail is in its WAL only
                self._counts = self._census = None
                self._warm = set(HOT_FIELDS)  # the new segments' files left the page cache
                self._mark_open()
                paused = time.monotonic() - paused_from
            with contextlib.suppress(Exception):
                old.close()  # nobody uses it any more; its flush need not hold anyone up
            drop_stale_generations(self._path)
            logger.info(
                "rebuilt the vector index of %s in the background in %.1f s, caught up with "
                "%d writes made meanwhile; callers paused %.3f s for the swap",
                self._path,
                built - started,
                replayed + len(tail),
                paused,
            )
        except StoreClosedError:
            pass  # closed meanwhile: the live shard is complete without this rebuild
        except Exception:
            if self._closed:  # the close killed the builder: nothing to report
                logger.debug("background index rebuild of %s stopped by close()", self._path)
                return
            logger.exception(
                "background index rebuild of %s failed; the live shard is unchanged and "
                "complete, and the rebuild is retried after more writes",
                self._path,
            )
        finally:
            with self._mutex:
                self._journal = None
                self._child = None
                if swapped and not self._closed:
                    # The writes made during this rebuild are unindexed: if they are enough
                    # for another, start it now rather than after the next writes.
                    self._rebuild_if_due()
            if not swapped:
                with self._mutex:
                    moved, before = self._exported_moved
                    self._moved |= moved
                    self._moved_before += before
                if new is not None:
                    with contextlib.suppress(Exception):
                        new.close()
                resumable = self._closed and (target / PARTIAL_FILE).is_file()
                if not resumable and not _names_live(self._path, target):
                    shutil.rmtree(target, ignore_errors=True)  # else the next open resumes it

    # -- the steps (blocking calls, run under the mutex by _drive) -----------------------

    def _write_points(self, points: list[pt.PointData]) -> Program[None]:
        yield from blocking(self._write, "upsert", (points,), len(points))

    def _delete_points(self, ids: list[str]) -> Program[None]:
        yield from blocking(self._write, "delete", (ids,), len(ids))

    def _set_payload(
        self, patches: list[pt.Patch], where: tuple[pt.Condition, ...] = ()
    ) -> Program[None]:
        yield from blocking(self._write, "set_payload", (patches, where), len(patches))

    def _write(self, op: str, args: tuple[Any, ...], points: int) -> None:
        self._changing()
        _apply(self._shard, op, args)
        # Journaled as soon as the shard holds it: a rebuild's swap must not lose a write
        # whose access-statistics mirror then fails (that failure still reaches the caller).
        self._note_write(op, args, points)
        self._access.mirror(op, args)

    def _changing(self) -> None:
        """Before a change to the points (under the mutex)."""
        self._touching()
        self._counts = self._census = None

    def _touching(self) -> None:
        """Before a change to the files that leaves every point's payload as it is (the
        access statistics; under the mutex)."""
        if not self._unflushed:  # the first since a flush: the manifest no longer holds
            self._mark_open()
        self._unflushed = True

    def _count_spaces(self) -> dict[str, int]:
        """The points in all and in each space, for the manifest (under the mutex): counted
        once until the next write, so a session that only reads (``agentmem stats``)
        counts them at open and reuses them at close."""
        if self._counts is None:
            self._counts = count_spaces(self._shard)
        return self._counts

    def _census_checksum(self) -> str | None:
        """The checksum of a census file that holds for the live shard, for a clean
        manifest (under the mutex, the shard open): the one that held at open or was
        written since, if nothing was written since and the file is still as named; else
        the points are counted (two facets) and the file written. ``None`` (no census)
        while any point lacks :data:`CENSUS_FIELD` (written by an older agentmem, until an
        index rebuild gives it one), or if counting fails: stats then counts the slow way."""
        if self._census is not None and census_holds(self._path, self._census):
            return self._census
        self._census = None
        try:
            missing = qe.Filter(must=[qe.IsEmptyCondition(CENSUS_FIELD)])
            if self._shard.count(qe.CountRequest(exact=True, filter=missing)):
                return None
            limit = self._shard.info().points_count + 1  # more than any field has values
            census = Census(
                kinds=self._facet_all(CENSUS_FIELD, limit),
                current=self._facet_all(pt.CURRENT_SCOPE_FIELD, limit),
            )
            self._census = write_census(self._path, census)
        except Exception as exc:  # the store is sound; stats counts through it instead
            logger.warning("could not count the census of %s: %s", self._path, exc)
        return self._census

    def _facet_all(self, key: str, limit: int) -> dict[str, int]:
        """Points per value of ``key`` in the whole shard (under the mutex)."""
        if key not in self._warm:
            self._warm.add(key)
            read_ahead_field(self._shard_dir, key)
        found = self._shard.facet(qe.FacetRequest(key, limit=limit, exact=True))
        # A value no point holds any more can still come back, counted 0.
        return {str(hit.value): int(hit.count) for hit in found.hits if hit.count}

    def _write_accesses(
        self, scope: Scope, patches: list[pt.Patch], where: tuple[pt.Condition, ...]
    ) -> Program[None]:
        # Beside the points (see agentmem.stores.qdrant._edge_access): a payload write
        # would move each hit out of the HNSW index. Only memories still in scope count.
        side, rest = split_access(patches)
        if rest:
            yield from self._set_payload(rest, where)
        if side:
            found = yield from self._retrieve([p.id for p in side])
            current = {h.id: h.payload for h in found if pt.in_scope(h.payload, scope)}
            yield from blocking(self._access.record, side, current)

    def _retrieve(self, ids: list[str]) -> Program[list[pt.Hit]]:
        rows = yield from blocking(
            self._shard.retrieve, list(ids), with_payload=True, with_vector=False
        )
        return self._access.merge([pt.Hit(str(r.id), 0.0, dict(r.payload or {})) for r in rows])

    def _retrieve_dense(self, ids: list[str]) -> Program[list[tuple[pt.Hit, list[float]]]]:
        rows = yield from blocking(
            self._shard.retrieve, list(ids), with_payload=True, with_vector=[DENSE_VECTOR]
        )
        out: list[tuple[pt.Hit, list[float]]] = []
        for r in rows:
            vectors = r.vector  # built on each access
            dense: Any = vectors.get(DENSE_VECTOR) if isinstance(vectors, dict) else None
            if isinstance(dense, list):  # a plain dense vector: Edge's list of floats
                out.append((pt.Hit(str(r.id), 0.0, dict(r.payload or {})), dense))
        self._access.merge([hit for hit, _ in out])
        return out

    # Searches return ids and raw scores without payload: the one ranker
    # (agentmem.long_term.ranking) boosts on the records it retrieves, which _retrieve and
    # _retrieve_dense give with the access statistics laid over, so no in-store boost has
    # to read them. A hit with a payload gets them too.
    def _query(self, spec: pt.QuerySpec) -> Program[list[pt.Hit]]:
        points = yield from blocking(self._shard.query, _query_request(spec))
        return self._access.merge(_hits(points))

    def _query_batch(self, specs: list[pt.QuerySpec]) -> Program[list[list[pt.Hit]]]:
        if len(specs) == 1:
            return [(yield from self._query(specs[0]))]
        batch = qe.QueryBatchRequest([_query_request(spec) for spec in specs])
        found = yield from blocking(self._shard.query_batch, batch)
        return [self._access.merge(_hits(points)) for points in found]

    def _scroll(self, spec: pt.ScrollSpec) -> Program[tuple[list[pt.Hit], str | None]]:
        order = spec.order
        if order is not None and order.key == "last_accessed_ts" and self._access.active():
            return (yield from ordered_by_access(self._scroll, spec))
        order_by = (
            None
            if order is None
            else qe.OrderBy(order.key, direction=qe.Direction.Desc, start_from=order.start)
        )
        request = qe.ScrollRequest(
            offset=spec.offset,
            limit=spec.limit,
            filter=_filter(spec.conditions),
            with_payload=True,
            with_vector=False,
            order_by=order_by,
        )
        rows, nxt = yield from blocking(self._shard.scroll, request)
        hits = [pt.Hit(str(r.id), float(r.order_value or 0.0), dict(r.payload or {})) for r in rows]
        return self._access.merge(hits), None if nxt is None else str(nxt)

    def _count(self, conds: tuple[pt.Condition, ...]) -> Program[int]:
        request = qe.CountRequest(exact=True, filter=_filter(conds))
        return int((yield from blocking(self._shard.count, request)))

    def _facet(
        self, key: str, conds: tuple[pt.Condition, ...], limit: int
    ) -> Program[dict[str, int]]:
        # A facet reads the field of every point it counts: its cold index files, which the
        # load dropped from the page cache, are read ahead first (once per field).
        cold = [
            f
            for f in (key, *(c.key for c in conds if isinstance(c, pt.Match)))
            if f not in self._warm
        ]
        if cold:
            self._warm.update(cold)
            yield from blocking(_read_ahead_fields, self._shard_dir, cold)
        request = qe.FacetRequest(key, limit=limit, exact=True, filter=_filter(conds))
        found = yield from blocking(self._shard.facet, request)
        return {str(hit.value): int(hit.count) for hit in found.hits}


def _with_census(payload: Mapping[str, Any] | None) -> dict[str, Any]:
    """An exported point's payload, with :data:`CENSUS_FIELD` if it lacks it (a point
    written by an older agentmem gets it in the rebuilt generation)."""
    out = dict(payload or {})
    if CENSUS_FIELD not in out and "user_id" in out and "memory_type" in out:
        out[CENSUS_FIELD] = census_kind(out)
    return out


def _read_ahead_fields(directory: Path, fields: list[str]) -> None:
    for field in fields:
        read_ahead_field(directory, field)


def _hits(points: list[qe.ScoredPoint]) -> list[pt.Hit]:
    return [pt.Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in points]


def _query_request(spec: pt.QuerySpec) -> qe.QueryRequest:
    # Exact: every float32 vector. Approximate: the int8 index, then the candidates
    # rescored with float32, so scores are exact cosines either way (fusion compares them).
    params = (
        qe.SearchParams(exact=True, quantization=qe.QuantizationSearchParams(ignore=True))
        if spec.exact
        else _RESCORED
    )
    vector = spec.vector
    if isinstance(vector, SparseVector):
        sparse = qe.SparseVector(vector.indices, vector.values)
        query = qe.Query.Nearest(sparse, using=SPARSE_VECTOR)
    else:
        query = qe.Query.Nearest(vector, using=DENSE_VECTOR)
    return qe.QueryRequest(
        limit=spec.limit,
        query=query,
        filter=_filter(spec.conditions),
        params=params,
        with_payload=False,
        with_vector=False,
    )


_RESCORED = qe.SearchParams(quantization=qe.QuantizationSearchParams(rescore=True))
_CONFIG_KEYS = (
    pt.TENANT_FIELD,
    *pt.KEYWORD_FIELDS,
    *pt.BOOL_FIELDS,
    *pt.FLOAT_FIELDS,
    CENSUS_FIELD,
)


def _apply(shard: qe.EdgeShard, op: str, args: tuple[Any, ...]) -> None:
    """Apply one write to ``shard`` (the live one, or a rebuilt one catching up)."""
    if op == "upsert":
        (points,) = args
        shard.update(
            qe.UpdateOperation.upsert_points(
                [
                    qe.Point(
                        p.id,
                        {
                            DENSE_VECTOR: p.dense,
                            SPARSE_VECTOR: qe.SparseVector(p.sparse.indices, p.sparse.values),
                        },
                        {**p.payload, CENSUS_FIELD: census_kind(p.payload)},
                    )
                    for p in points
                ]
            )
        )
    elif op == "delete":
        (ids,) = args
        shard.update(qe.UpdateOperation.delete_points(list(ids)))
    else:
        patches, where = args
        for ids, set_, unset in pt.group_patches(patches):
            # A conditional write skips the points that do not match `where` (or are gone).
            flt = _filter((pt.HasIds(tuple(ids)), *where)) if where else None
            if set_:
                shard.update(
                    qe.UpdateOperation.set_payload([*ids], set_)
                    if flt is None
                    else qe.UpdateOperation.set_payload_by_filter(flt, set_)
                )
            if unset:
                shard.update(
                    qe.UpdateOperation.delete_payload([*ids], unset)
                    if flt is None
                    else qe.UpdateOperation.delete_payload_by_filter(flt, unset)
                )


def _written_ids(op: str, args: tuple[Any, ...]) -> Iterator[str]:
    """Ids of the points an upsert or a payload write (re)writes."""
    if op == "upsert":
        return (p.id for p in args[0])
    return (patch.id for patch in args[0])


def _read_moved(root: Path, generation: Path) -> int:
    """Points written without the index since ``generation`` was built, as the last close
    saved them (0 when unknown: a crash, or a store from before the file existed)."""
    try:
        saved = json.loads((root / INDEX_STATE_FILE).read_text(encoding="utf-8"))
        if saved["generation"] == generation.name:
            return max(0, int(saved["unindexed"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return 0


def _write_moved(root: Path, generation: str, unindexed: int) -> None:
    state = {"generation": generation, "unindexed": unindexed}
    with contextlib.suppress(OSError):
        tmp = root / (INDEX_STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state), encoding="utf-8")
        os.replace(tmp, root / INDEX_STATE_FILE)


def _names_live(root: Path, generation: Path) -> bool:
    """Whether ``CURRENT`` names ``generation`` (``True`` when it cannot be read: a
    directory that may be live is never deleted)."""
    try:
        return current_generation(root) == generation
    except (OSError, UnicodeDecodeError):
        return True


def _check_current(root: Path) -> None:
    """Refuse a ``CURRENT`` marker gone or emptied while generations exist: the store would
    otherwise take itself for an empty one made before generations, and delete them all."""
    marker = root / CURRENT_FILE
    try:
        name = marker.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        name = None
    except (OSError, UnicodeDecodeError) as exc:
        raise manifests.damaged(root, f"{marker} is unreadable ({exc})") from None
    if name is not None and (not name or "/" in name or name in (".", "..")):
        raise manifests.damaged(root, f"{marker} names no generation ({name!r})")
    if name is None and not (root / CONFIG_FILE).exists():
        generations = sorted(p.name for p in root.glob("gen-*") if p.is_dir())
        if generations:
            problem = (
                f"{marker}, which names the live generation, is missing, and {root} holds "
                f"generations ({', '.join(generations)}) but no shard of its own"
            )
            raise manifests.damaged(root, problem)


def _stored_config(config_path: Path) -> tuple[dict[str, Any], int]:
    """The shard's config and the size of its dense vectors."""
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
        return config, int(config["vectors"][DENSE_VECTOR]["size"])
    except (OSError, ValueError, KeyError, TypeError):
        msg = (
            f"{config_path.parent} holds a Qdrant Edge shard without a {DENSE_VECTOR!r} dense "
            f"vector; it was not made by agentmem. Use another path."
        )
        raise ConfigurationError(msg) from None


#: Store directories whose lock this thread holds through :func:`holding_lock`.
_held = threading.local()


@contextlib.contextmanager
def holding_lock(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the lock of the store directory ``path`` meanwhile (creating the directory and
    its lock file), for work on its files while no other process may open it (``agentmem
    repair``); yields the lock file.

    A :class:`QdrantEdgeStore` that this thread opens at ``path`` meanwhile shares the hold
    instead of taking the lock again (``flock`` belongs to one open file description, so a
    second open of the lock file would be refused, even in this process); close it before
    the hold ends.

    Raises:
        StoreLockedError: Another process (or an open store object) holds ``path``; nothing
            is held.

    Example:
        >>> import tempfile
        >>> with holding_lock(tempfile.mkdtemp()) as lock:
        ...     lock.name
        'agentmem.lock'
    """
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    key = directory.resolve()
    held: set[Path] = _held.__dict__.setdefault("paths", set())
    if key in held:
        msg = f"this thread already holds the lock of {directory}"
        raise StoreLockedError(msg)
    handle = _lock(directory)
    held.add(key)
    try:
        yield directory / LOCK_FILE
    finally:
        held.discard(key)
        _unlock(handle)


def read_scope_counts(
    path: str | os.PathLike[str], scope: Scope, *, dimension: int
) -> ScopeCounts | None:
    """The points of ``scope`` (by type and subtype, and how many are current) as the
    store at ``path`` holds them, read from its census without loading the shard (see
    :mod:`agentmem.stores.qdrant._edge_census`), under the store's lock: what ``agentmem
    stats`` shows.

    ``None`` when the census cannot answer, and opening the store is how to count: a scope
    narrowed to an agent or a session (the census counts users and spaces), another process
    holds the store, its last close was not clean, it has no census (or not the one the
    manifest names), or its vectors do not have ``dimension``. Nothing is written.

    Raises:
        StoreCorruptedError: What an open would refuse before loading the shard: the
            manifest, ``CURRENT`` or a half-done restore; any file that differs from the
            manifest (every checksum is checked, data files too: counting from the census
            loads nothing that would find damage to them otherwise).

    Example:
        >>> import tempfile
        >>> from agentmem.long_term.records import MemoryRecord, Scope
        >>> path = tempfile.mkdtemp()
        >>> store = QdrantEdgeStore(path, dimension=3)
        >>> record = MemoryRecord.new("likes tea", "semantic", scope=Scope(user_id="alice"))
        >>> store.upsert([record], [[1.0, 0.0, 0.0]], [SparseVector([1], [1.0])])
        >>> store.close()
        >>> counts = read_scope_counts(path, Scope(user_id="alice"), dimension=3)
        >>> counts.total, counts.current, dict(counts.kinds)
        (1, 1, {('semantic', None): 1})
    """
    root = Path(path)
    narrowed = scope.agent_id is not None or scope.session_id is not None
    if narrowed or not root.is_dir() or _held_here(root):
        return None
    try:
        handle = _lock(root)
    except StoreLockedError:
        return None
    try:
        check_no_interrupted_restore(root.parent)
        _check_current(root)
        manifest = manifests.read_manifest(root)
        directory = current_generation(root)
        if (
            manifest is None
            or manifest.state != "clean"
            or manifest.census is None
            or manifest.generation != manifests.generation_name(root, directory)
            or _stored_dimension(directory) != dimension
        ):
            return None
        manifests.verify(root, manifest, data=True)
        return read_census(root, manifest.census, scope.user_id, scope.space)
    finally:
        _unlock(handle)


def _stored_dimension(directory: Path) -> int | None:
    """The dense vectors' size in a shard's config (``None``: unreadable; the open says)."""
    try:
        return _stored_config(directory / CONFIG_FILE)[1]
    except ConfigurationError:
        return None


def _held_here(path: Path) -> bool:
    """Whether this thread holds the lock of ``path`` (see :func:`holding_lock`)."""
    held: set[Path] = _held.__dict__.get("paths", set())
    return bool(held) and path.resolve() in held


def _lock(path: Path) -> IO[bytes]:
    handle = (path / LOCK_FILE).open("ab")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        msg = (
            f"the Qdrant Edge store at {path} is open in another process (or another store "
            f"object); Edge allows one process at a time. Close the other one, share one "
            f"MemoryService (or MemoryManager.open on the same home) within a process, or run "
            f"several processes on a Qdrant server (QdrantClientStore) and Redis: set "
            f"AGENTMEM_QDRANT_URL and AGENTMEM_REDIS_URL (or pass qdrant_url= and redis_url= "
            f"to MemoryService.open)."
        )
        raise StoreLockedError(msg) from None
    return handle


def _unlock(handle: IO[bytes] | None) -> None:
    if handle is None:  # the lock is held by holding_lock, which releases it
        return
    with contextlib.suppress(OSError):
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    handle.close()


def _condition(cond: pt.Condition) -> Any:
    if isinstance(cond, pt.HasIds):
        return qe.HasIdCondition(set(cond.ids))
    if isinstance(cond, pt.Range):
        return qe.FieldCondition(cond.key, range=qe.RangeFloat(gte=cond.gte, lt=cond.lt))
    if isinstance(cond, pt.IsEmpty):
        return qe.IsEmptyCondition(cond.key)
    if len(cond.values) == 1:
        return qe.FieldCondition(cond.key, match=qe.MatchValue(_value(cond.values[0])))
    return qe.FieldCondition(cond.key, match=qe.MatchAny(list(cond.values)))  # type: ignore[arg-type]


def _filter(conds: tuple[pt.Condition, ...]) -> qe.Filter:
    return qe.Filter(must=[_condition(c) for c in conds])


def _value(value: str | int | bool) -> Any:
    return _EdgeBool(value) if isinstance(value, bool) else value


class _EdgeBool:
    """A boolean as qdrant_edge's bindings read one in a match.

    qdrant_edge 0.9 reads a Python bool as the integer 1/0 (bool subclasses int, and the
    integer is tried first), which then never matches a stored boolean. Besides ``bool``,
    its bindings (PyO3) read as a bool numpy's scalar type, which they recognise by its
    module and name and convert through ``__bool__``; this class is that shape, without
    importing numpy (0.1-0.2 s: the open of every store matches ``is_current``).
    """

    __slots__ = ("_value",)
    __module__ = "numpy"

    def __init__(self, value: bool) -> None:
        self._value = value

    def __bool__(self) -> bool:
        return self._value


_EdgeBool.__name__ = _EdgeBool.__qualname__ = "bool_"
