"""The integrity manifest of a Qdrant Edge store: what its live generation must hold (private).

Edge takes some damage for an empty or smaller shard (a segment's ``version.info`` gone: 0 of
200 points, no error; an id tracker truncated: 20 of 200) and aborts the whole process on
others (altered bytes in ``mutable_id_tracker.mappings``: a 103 GB allocation, exit 134).
So the store keeps ``agentmem-manifest.json`` beside its generations, replaced atomically
at every flush and close:

* every file of the live generation with its size and a checksum of its content (a CRC-32C
  of its non-zero 4 KiB blocks with their offsets, :func:`block_checksum`: Edge's files are
  sparse, preallocated, and a copy may store their zeros as holes or not, with the same
  checksum; manifests written before it hold a SHA-256, :func:`block_digest`, and are
  checked with it);
* the point count of each space (see :data:`~agentmem.long_term.records.SPACES`);
* ``state``: ``"clean"`` when written by a flush or close (the files are exactly as listed
  until the next write), ``"open"`` from an open (marked before Edge loads the shard, which
  rewrites some of its files) and from the first write after a flush (a crash then leaves
  files the manifest cannot vouch for);
* a checksum of the manifest itself.

At open, before Edge sees a file, :func:`verify` checks a clean manifest: every file there
with its size, and the checksums of the metadata files (``segment.json``, ``version.info``,
the id trackers, configs, status and WAL files) always, those of the large data files too
when the store preloads (it reads them anyway). After the load the store compares the point
counts. A manifest in the ``"open"`` state (the process crashed), or none (a store made
before manifests, or the manifest deleted), cannot vouch for the files: the store loads the
shard once in a child process (:mod:`agentmem.stores.qdrant._edge_probe`) before loading it
itself, so that a file Edge would abort on ends a child, not the caller, after reading its
write-ahead log for damage Edge would replay in part without an error
(:mod:`agentmem.stores.qdrant._edge_wal`). Such a store gets a manifest at its first clean
close.

Cost: CRC-32C runs in hardware here (about 20 GB/s), so reading the files is most of it. On
an indexed store of 100,000 memories (318 files, 668 MB apparent), describing every file took
126 ms, checking the metadata (the two 32 MiB write-ahead-log files included) 28 ms and
every file 125 ms, against 463, 78 and 458 ms with SHA-256. The child-process load, only
after a crash or for a store without a manifest, costs about one more open (1.2x). All of it
grows linearly with the data. ``preload=False`` (an open that only counts) checks the large
data files by size only; ``agentmem stats`` reading the census checks them all.

A CRC-32C catches damage, not forgery (as Edge's own write-ahead log, and btrfs or ext4
metadata, use it): any change of up to 32 bits in a row, and all but one in 2**32 of the
others. Whoever can rewrite the files can rewrite the manifest too.

Example:
    >>> block_digest.__name__
    'block_digest'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import google_crc32c

from agentmem._util.durable import replace_durably
from agentmem._util.file_copy import data_regions
from agentmem.errors import StoreCorruptedError

__all__ = [
    "MANIFEST_FILE",
    "Manifest",
    "Stamps",
    "block_checksum",
    "block_digest",
    "generation_files",
    "read_manifest",
    "stamp",
    "verify",
    "write_manifest",
]

MANIFEST_FILE = "agentmem-manifest.json"
_FORMAT = "agentmem-edge-manifest"
_BLOCK = 4096
_ZERO = bytes(_BLOCK)
_CHUNK = 1 << 20
_ZERO_CHUNK = bytes(_CHUNK)
#: Files of the store's root that are not part of a generation.
_ROOT_OWN = frozenset(
    {
        "agentmem.lock",
        "agentmem-index.json",
        MANIFEST_FILE,
        "CURRENT",
        "agentmem-embedder.json",
        "agentmem-census.json",
    }
)
#: Edge rewrites these at every load, even one that then fails: listed, never checksummed.
_REWRITTEN_AT_LOAD = frozenset({"tracker_journal.dat"})
_METADATA_SUFFIXES = (".json", ".info")
_METADATA_NAMES = frozenset({"status.dat", "gaps.dat", "first-index"})
#: The checksum a manifest's files get (:func:`block_checksum`), and the one manifests
#: written before it hold (:func:`block_digest`), still checked. Without google-crc32c's
#: compiled extension (its pure-Python fallback is about 1,000x slower), SHA-256 again.
LEGACY_CHECKSUM = "sha256"
CHECKSUM = "crc32c" if google_crc32c.implementation == "c" else LEGACY_CHECKSUM

State = Literal["clean", "open"]


@dataclass(frozen=True)
class Manifest:
    """What one generation of an Edge store holds.

    Attributes:
        generation: The generation directory's name (``"."``: the store's root itself).
        state: ``"clean"``: the files are as listed; ``"open"``: written to since.
        files: Relative path -> ``{"size": int, "crc32c": str | None}`` (``"sha256"``
            instead of ``"crc32c"`` in a manifest written before CRC-32C).
        points: Space -> number of points (``"*"``: all of them).
        census: The checksum of the census file written with a clean manifest (see
            :mod:`agentmem.stores.qdrant._edge_census`; ``None``: no census holds).
    """

    generation: str
    state: State
    files: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    points: Mapping[str, int] = field(default_factory=dict)
    census: str | None = None

    def as_open(self) -> Manifest:
        """The same manifest, marked as written to since (its census no longer holds)."""
        return Manifest(self.generation, "open", self.files, self.points)


def is_metadata(relative: str) -> bool:
    """Whether a file is small metadata, checksummed at every open."""
    name = relative.rsplit("/", 1)[-1]
    return (
        name.endswith(_METADATA_SUFFIXES)
        or name in _METADATA_NAMES
        or "id_tracker" in name
        or relative.startswith("wal/")
    )


def is_sealed(relative: str) -> bool:
    """Whether a metadata file is a closed segment of the write-ahead log (``wal/closed-N``):
    once closed, Edge's log only reads such a segment, or deletes it whole. Checked at every
    open like the other metadata, it keeps that checksum at a close that wrote nothing
    while its size and mtime are unchanged (a full segment is 32 MiB: reading it again
    took 27 ms of ``agentmem stats`` on an indexed store of 100,000 memories)."""
    return relative.startswith("wal/closed-")


def block_digest(path: Path) -> str:
    """SHA-256 of the file's non-zero 4 KiB blocks and their offsets, reading only its data
    (holes are skipped without reading): the same for a sparse and a dense copy."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        digest.update(size.to_bytes(8, "little"))
        for start, end in data_regions(fd, size):
            start -= start % _BLOCK
            while start < end:
                chunk = os.pread(fd, min(end - start, _CHUNK), start)
                if not chunk:
                    break
                if chunk == _ZERO_CHUNK[: len(chunk)]:  # one memcmp for a run of zeros
                    start += len(chunk)
                    continue
                for offset in range(0, len(chunk), _BLOCK):
                    block = chunk[offset : offset + _BLOCK]
                    if block != _ZERO[: len(block)]:
                        digest.update((start + offset).to_bytes(8, "little"))
                        digest.update(block)
                start += len(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def block_checksum(path: Path) -> str:
    """CRC-32C of the file's non-zero 4 KiB blocks and their offsets, reading only its data
    (holes are skipped without reading): the same for a sparse and a dense copy.

    The file is read in windows of 1 MiB at fixed offsets; each run of non-zero blocks in
    a window counts with its offset and length, so zeros stored as holes or as data, and
    where a copy's holes start, change nothing.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "f"
        >>> _ = path.write_bytes(bytes(8192) + b"data")
        >>> sparse = path.with_name("sparse")
        >>> with sparse.open("wb") as f:
        ...     _ = f.truncate(8192)
        ...     _ = f.seek(8192)
        ...     _ = f.write(b"data")
        >>> block_checksum(path) == block_checksum(sparse)
        True
        >>> _ = sparse.write_bytes(bytes(8192) + b"date")
        >>> block_checksum(path) == block_checksum(sparse)
        False
    """
    crc = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        crc = google_crc32c.extend(crc, size.to_bytes(8, "little"))
        for start, end in data_regions(fd, size):
            start -= start % _BLOCK
            while start < end:
                window_end = min(end, (start // _CHUNK + 1) * _CHUNK)
                chunk = os.pread(fd, window_end - start, start)
                if not chunk:
                    break
                for run_start, run_end in _non_zero_runs(chunk):
                    where = (start + run_start).to_bytes(8, "little")
                    length = (run_end - run_start).to_bytes(8, "little")
                    crc = google_crc32c.extend(crc, where + length)
                    crc = google_crc32c.extend(crc, chunk[run_start:run_end])
                start += len(chunk)
    finally:
        os.close(fd)
    return f"{crc:08x}"


def _non_zero_runs(chunk: bytes) -> list[tuple[int, int]]:
    """The runs of non-zero 4 KiB blocks of ``chunk`` (which starts at a block boundary)."""
    if chunk == _ZERO_CHUNK[: len(chunk)]:  # one memcmp for a window of zeros
        return []
    runs: list[tuple[int, int]] = []
    run = -1
    for offset in range(0, len(chunk), _BLOCK):
        zero = chunk.startswith(_ZERO[: len(chunk) - offset], offset)
        if not zero and run < 0:
            run = offset
        elif zero and run >= 0:
            runs.append((run, offset))
            run = -1
    if run >= 0:
        runs.append((run, len(chunk)))
    return runs


def file_checksum(path: Path, kind: str) -> str:
    """The checksum of ``kind`` (``"crc32c"`` or ``"sha256"``) of a file."""
    return block_checksum(path) if kind == "crc32c" else block_digest(path)


def entry_checksum(entry: Mapping[str, Any]) -> tuple[str, str] | None:
    """The kind and value of the checksum a manifest entry holds (``None``: none)."""
    for kind in ("crc32c", LEGACY_CHECKSUM):
        value = entry.get(kind)
        if isinstance(value, str):
            return kind, value
    return None


def generation_dir(root: Path, generation: str) -> Path:
    return root if generation == "." else root / generation


def generation_name(root: Path, directory: Path) -> str:
    return "." if directory == root else directory.name


def generation_files(root: Path, directory: Path) -> list[str]:
    """The files of a generation, relative to it (the root's own files left out)."""
    out: list[str] = []
    for current, dirs, files in os.walk(directory):
        here = Path(current)
        if here == root:
            dirs[:] = [d for d in dirs if not d.startswith(("gen-", "damaged-"))]
            files = [f for f in files if f not in _ROOT_OWN and not f.endswith(".tmp")]
        out.extend(str((here / f).relative_to(directory)) for f in files)
    return sorted(out)


@dataclass(frozen=True)
class Stamps:
    """Size and mtime of a generation's files, taken at ``taken_ns`` (before their checksums
    were verified or computed for ``manifest``). Only Edge writes these files, and every
    write it makes moves the mtime (as ``git status`` trusts it)."""

    manifest: Manifest
    taken_ns: int
    files: Mapping[str, tuple[int, int]]

    def checksum(self, relative: str, stat: os.stat_result) -> tuple[str, str] | None:
        """The manifest's checksum of ``relative`` (its kind and value, see
        :func:`entry_checksum`) if the file has not changed since: same size and mtime, and
        an mtime older than the stamps by more than a timestamp's granularity (a file
        written in the same tick as its hashing is read again). A SHA-256 of an earlier
        manifest is kept as it is: computing a CRC-32C instead would vouch for a file
        nobody checked against it."""
        if is_metadata(relative) and not is_sealed(relative):
            return None  # small, and Edge may change them through a memory map
        known = self.manifest.files.get(relative)
        stamp = (stat.st_size, stat.st_mtime_ns)
        if known is None or self.files.get(relative) != stamp or known["size"] != stat.st_size:
            return None
        if stat.st_mtime_ns >= self.taken_ns - _RACY_NS:
            return None
        return entry_checksum(known)


_RACY_NS = 2_000_000_000


def stamp(root: Path, manifest: Manifest, *, taken_ns: int | None = None) -> Stamps:
    """The :class:`Stamps` of ``manifest``'s generation: its files now, as of ``taken_ns``
    (default: now), the time its checksums were taken or checked from."""
    taken = time.time_ns() if taken_ns is None else taken_ns
    directory = generation_dir(root, manifest.generation)
    files: dict[str, tuple[int, int]] = {}
    for relative in manifest.files:
        with contextlib.suppress(OSError):
            st = (directory / relative).stat()
            files[relative] = (st.st_size, st.st_mtime_ns)
    return Stamps(manifest, taken, files)


def describe(
    root: Path,
    directory: Path,
    points: Mapping[str, int],
    state: State,
    *,
    unchanged: Stamps | None = None,
) -> Manifest:
    """The manifest of ``directory`` as it is on disk now (checksums of every file).

    With ``unchanged`` (the stamps of the generation's last manifest; only for a session
    that wrote nothing since: Edge writes some files through memory maps, which need not move
    their mtime), a data file that has not changed since keeps that manifest's checksum
    instead of being read again: a session that wrote nothing (``agentmem stats``) reads
    only the metadata and the files Edge rewrote at load, and a large file
    the session did not check at open (``preload=False``) keeps the checksum it was verified
    against, so damage to it is still found by the next full check.
    """
    name = generation_name(root, directory)
    if unchanged is not None and unchanged.manifest.generation != name:
        unchanged = None
    files: dict[str, dict[str, Any]] = {}
    for relative in generation_files(root, directory):
        path = directory / relative
        stat = path.stat()
        entry: dict[str, Any] = {"size": stat.st_size, CHECKSUM: None}
        if relative.rsplit("/", 1)[-1] not in _REWRITTEN_AT_LOAD:
            known = None if unchanged is None else unchanged.checksum(relative, stat)
            kind, value = known or (CHECKSUM, file_checksum(path, CHECKSUM))
            entry = {"size": stat.st_size, kind: value}
        files[relative] = entry
    return Manifest(name, state, files, dict(points))


def _body(manifest: Manifest) -> dict[str, Any]:
    body = {
        "format": _FORMAT,
        "version": 2,
        "generation": manifest.generation,
        "state": manifest.state,
        "points": dict(manifest.points),
        "files": {k: dict(v) for k, v in manifest.files.items()},
    }
    if manifest.census is not None:
        body["census"] = manifest.census
    return body


def _self_checksum(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def write_manifest(root: Path, manifest: Manifest) -> None:
    """Replace the manifest atomically and durably."""
    body = _body(manifest)
    body["checksum"] = _self_checksum(body)
    replace_durably(root / MANIFEST_FILE, json.dumps(body, sort_keys=True))


def read_manifest(root: Path) -> Manifest | None:
    """The manifest of the store at ``root`` (``None``: there is none).

    Raises:
        StoreCorruptedError: It is there but unreadable or fails its own checksum.
    """
    path = root / MANIFEST_FILE
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise damaged(root, f"its manifest {MANIFEST_FILE} is unreadable ({exc})") from None
    try:
        body = json.loads(raw)
        checksum = body.pop("checksum")
        if body.get("format") != _FORMAT or checksum != _self_checksum(body):
            raise ValueError("fails its checksum")
        return Manifest(
            str(body["generation"]),
            "clean" if body["state"] == "clean" else "open",
            {str(k): dict(v) for k, v in body["files"].items()},
            {str(k): int(v) for k, v in body["points"].items()},
            census if isinstance(census := body.get("census"), str) else None,
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise damaged(root, f"its manifest {MANIFEST_FILE} is damaged ({exc})") from None


def verify(root: Path, manifest: Manifest, *, data: bool) -> None:
    """Check a clean manifest's generation before Edge loads it: each file there, with its
    size and (metadata always, the rest when ``data``) its checksum.

    Raises:
        StoreCorruptedError: Naming the first file that differs and how.
    """
    directory = generation_dir(root, manifest.generation)
    on_disk = set(generation_files(root, directory)) if directory.is_dir() else set()
    for relative, expected in sorted(manifest.files.items()):
        path = directory / relative
        if directory == root and relative in _ROOT_OWN:
            continue  # listed by an agentmem that did not know it as the store's own file
        if relative not in on_disk:
            raise damaged(root, f"{path} is missing (the manifest lists it)")
        size = path.stat().st_size
        if size != expected["size"]:
            raise damaged(root, f"{path} has {size} bytes, the manifest says {expected['size']}")
        want = entry_checksum(expected)
        if want is None or not (data or is_metadata(relative)):
            continue
        kind, value = want
        if file_checksum(path, kind) != value:
            raise damaged(root, f"{path} was altered (its checksum differs from the manifest's)")


#: Files a segment (or the shard) cannot load without; Edge never deletes them from a
#: segment it keeps.
_ESSENTIAL = frozenset(
    {
        "edge_config.json",
        "segment.json",
        "version.info",
        "mutable_id_tracker.mappings",
        "mutable_id_tracker.versions",
        "id_tracker.mappings",
        "id_tracker.versions",
    }
)


#: Files of a generation that agentmem writes and never deletes from it (replaced whole at
#: most): the access statistics (see :mod:`agentmem.stores.qdrant._edge_access`).
_KEPT = frozenset({"agentmem-access.log"})


def check_listed(root: Path, manifest: Manifest) -> None:
    """For a manifest in the ``"open"`` state (written to since, maybe a crash): the files
    no segment can load without are still there, in each listed segment that still exists
    (Edge may have merged others away, and rewrites the rest), and so are the files of
    :data:`_KEPT` it lists."""
    directory = generation_dir(root, manifest.generation)
    _check_log_files(root, manifest, directory)
    for relative in sorted(manifest.files):
        parts = relative.split("/")
        if relative in _KEPT:
            if not (directory / relative).exists():
                raise damaged(root, f"{directory / relative} is missing (the manifest lists it)")
            continue
        if parts[-1] not in _ESSENTIAL:
            continue
        if len(parts) > 1 and not (directory / parts[0] / parts[1]).is_dir():
            continue  # a segment merged away since
        if not (directory / relative).exists():
            raise damaged(root, f"{directory / relative} is missing (the manifest lists it)")


def _check_log_files(root: Path, manifest: Manifest, directory: Path) -> None:
    """The write-ahead log's open files the manifest lists are still there, unless the log
    has moved on since (a full ``wal/open-N`` is renamed ``wal/closed-M``, a file the
    manifest does not list). Without them Edge starts an empty log and loads the shard
    without the writes they held, with no error."""
    gone = [
        relative
        for relative in sorted(manifest.files)
        if relative.startswith("wal/open-") and not (directory / relative).exists()
    ]
    if not gone:
        return
    closed = (directory / "wal").glob("closed-*")
    if any(f"wal/{path.name}" not in manifest.files for path in closed):
        return
    raise damaged(root, f"{directory / gone[0]} is missing (the manifest lists it)")


def check_points(root: Path, manifest: Manifest, counted: Mapping[str, int]) -> None:
    """Raise unless every space has at least the points the manifest counted."""
    for space, expected in sorted(manifest.points.items()):
        found = counted.get(space, 0)
        if found < expected:
            what = "points in all" if space == "*" else f"points in space {space!r}"
            problem = f"Qdrant Edge loads {found} {what}, the manifest counted {expected}"
            raise damaged(root, problem)


def way_back(root: Path) -> str:
    """How to get a damaged store back (the CLI commands, with the home)."""
    home = root.parent
    return (
        f"Restore the home from a backup (`agentmem restore BACKUP --home '{home}' --force`), "
        f"or keep what can be read and see exactly what was lost (`agentmem repair "
        f"--accept-loss --home '{home}'`)"
    )


def damaged(root: Path, problem: str) -> StoreCorruptedError:
    """The error for a store that fails its manifest: what differs and the way back."""
    msg = (
        f"the Qdrant Edge store at {root} is damaged: {problem}. Nothing was written to it. "
        f"{way_back(root)}. Or move the directory away (for example: mv '{root}' "
        f"'{root}.damaged') and re-import a backup made with `agentmem export`."
    )
    return StoreCorruptedError(msg, path=str(root))


def manifest_text(root: Path) -> str | None:
    """The manifest file's text as it is (``None``: there is none), for :func:`put_back`."""
    try:
        return (root / MANIFEST_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def put_back(root: Path, text: str | None) -> None:
    """Restore the manifest as :func:`manifest_text` read it (``None``: none), after an open
    that marked it was refused: a refused store is left as it was found."""
    with contextlib.suppress(OSError):
        if text is None:
            remove_manifest(root)
        else:
            replace_durably(root / MANIFEST_FILE, text)


def remove_manifest(root: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (root / MANIFEST_FILE).unlink()
