"""The files a Qdrant Edge shard directory must hold, checked before Edge opens it (private).

A shard made by :class:`~agentmem.stores.qdrant.edge.QdrantEdgeStore` always holds, from
its creation on, a config file (``edge_config.json``), a ``segments/`` directory with at least
one segment, and a write-ahead log (``wal/``). Edge itself notices only some damage (and then
raises a bare ``Exception: Service runtime error``); other damage it silently takes for an
empty shard, losing every memory. So before Edge sees the directory:

* config present, but no segment or no WAL: the shard's files are gone;
* segments or WAL present, but no config: the config is gone;
* config present but not JSON: it is damaged.

Each case, and any error Edge raises while loading, becomes
:class:`~agentmem.errors.StoreCorruptedError` naming the path and the recovery.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> shard_state(Path(tempfile.mkdtemp()))
    'empty'
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from agentmem.errors import AgentMemError, StoreCorruptedError, StoreError

__all__ = [
    "CONFIG_FILE",
    "check_shard_files",
    "corrupted",
    "edge_errors",
    "is_undecodable",
    "read_ahead",
    "read_ahead_field",
    "shard_state",
]

CONFIG_FILE = "edge_config.json"
SEGMENTS_DIR = "segments"
WAL_DIR = "wal"

ShardState = Literal["empty", "present"]


def corrupted(path: Path, problem: str) -> StoreCorruptedError:
    """The error for a damaged shard at ``path``: what is wrong and how to recover."""
    msg = (
        f"the Qdrant Edge store at {path} is damaged: {problem}. Nothing was written to it. "
        f"Recover by moving the directory away (for example: mv '{path}' '{path}.damaged') "
        "and then either restoring it from a copy of the directory, or re-importing a backup "
        "made with `agentmem export` (`agentmem import FILE --user U`); without a backup, "
        "the moved-away store starts empty."
    )
    return StoreCorruptedError(msg, path=str(path))


def _has_entries(directory: Path) -> bool:
    return directory.is_dir() and any(directory.iterdir())


def shard_state(path: Path) -> ShardState:
    """``"empty"`` if ``path`` holds no shard yet, ``"present"`` if it holds a sound one.

    Raises:
        StoreCorruptedError: Some of the shard's files are there and others are not.
    """
    config = path / CONFIG_FILE
    segments = _has_entries(path / SEGMENTS_DIR)
    wal = (path / WAL_DIR).is_dir()
    if not config.exists():
        if segments or _has_entries(path / WAL_DIR):
            raise corrupted(path, f"its config file {CONFIG_FILE} is missing")
        return "empty"
    check_shard_files(path)
    if not segments:
        raise corrupted(path, f"{CONFIG_FILE} is there but its {SEGMENTS_DIR}/ data is gone")
    if not wal:
        raise corrupted(path, f"{CONFIG_FILE} is there but its write-ahead log {WAL_DIR}/ is gone")
    return "present"


def check_shard_files(path: Path) -> None:
    """Raise :class:`StoreCorruptedError` if the config file is unreadable or not JSON."""
    config = path / CONFIG_FILE
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise corrupted(path, f"its config file {CONFIG_FILE} is unreadable ({exc})") from None


_NOT_DAMAGE = ("Permission denied", "No space left", "Read-only file system", "Too many open")
#: What Edge says when stored bytes it reads do not decode (a payload, a compressed value,
#: a record of its own format): the files are damaged, whatever the operation.
_UNDECODABLE = ("Failed to decode", "Failed to deserialize", "Failed to decompress", "corrupt")


def is_undecodable(exc: BaseException) -> bool:
    """Whether the plain ``Exception`` Edge raised says that stored data does not decode.

    Example:
        >>> is_undecodable(Exception("Service runtime error: Failed to decode value: ..."))
        True
        >>> is_undecodable(Exception("Wrong input: bad filter"))
        False
    """
    text = str(exc)
    return type(exc) is Exception and any(marker in text for marker in _UNDECODABLE)


@contextlib.contextmanager
def edge_errors(path: Path, action: str) -> Iterator[None]:
    """Turn the bare ``Exception`` Edge raises while ``action`` into an agentmem error.

    Errors of the operating system (permissions, a full disk) become
    :class:`~agentmem.errors.StoreError`; anything else Edge cannot read becomes
    :class:`~agentmem.errors.StoreCorruptedError`. agentmem's own errors pass unchanged.

    A panic of Edge's Rust code while it loads a shard (pyo3's ``PanicException``, which is
    not an ``Exception``) is damage too: a data file altered within its size, which an open
    that checks sizes only (``preload=False``) lets through, panicked the load with "index
    out of bounds". The panics of other actions pass unchanged.
    """
    try:
        yield
    except AgentMemError:
        raise
    except Exception as exc:
        if type(exc) is not Exception:  # Edge raises plain Exception; others are bugs
            raise
        if any(marker in str(exc) for marker in _NOT_DAMAGE):
            msg = (
                f"Qdrant Edge could not {action} the store at {path}: {exc}; check the "
                "directory's permissions and the free disk space, then try again"
            )
            raise StoreError(msg) from exc
        raise corrupted(path, f"Qdrant Edge could not {action} it ({exc})") from exc
    except BaseException as exc:  # not an Exception: KeyboardInterrupt, or a Rust panic
        if action != "load" or type(exc).__name__ != "PanicException":
            raise
        raise corrupted(path, f"Qdrant Edge could not load it (it panicked: {exc})") from exc


def read_ahead(path: Path) -> int:
    """Read the segment files of the shard at ``path`` once, sequentially, so that they are
    in the page cache when Edge loads them; returns the bytes read.

    Edge warms the parts it keeps in RAM (in shards made by an earlier agentmem: the vectors,
    their int8 copy, the HNSW graph) by faulting in 4 KiB pages of memory maps it marks
    random-access, and drops the files from the page cache when it closes them. On a disk
    with per-request latency, every open then reads a few hundred MB one page at a time:
    2.1-2.7 s for 100,000 memories on this project's CI machine, against 0.7-0.9 s after
    this sequential read. Current shards leave those parts memory-mapped and cold, and this
    read is what warms them for the first searches. From the page cache (a warm or
    in-memory file system) it costs a copy: tens of ms. The write-ahead log is left out
    (its files are mostly preallocated space).
    """
    done = 0
    for directory, _, files in os.walk(path / SEGMENTS_DIR):
        for name in files:
            with contextlib.suppress(OSError):
                done += _read_data(os.path.join(directory, name))
    return done


def read_ahead_field(path: Path, field: str) -> int:
    """Ask the kernel to read the payload index files of ``field`` into the page cache, in
    every segment of the shard at ``path`` (``POSIX_FADV_WILLNEED``: read ahead in the
    background, nothing copied); returns the files advised (0: none found).

    An indexed segment keeps a cold payload index memory-mapped, and Edge drops its files
    from the page cache when it loads the segment, so the first pass over every point of a
    field (a facet: ``count_by``) faults its pages in one at a time. On a store of 100,000
    memories the first facet on ``memory_type`` took 65 ms, 29 ms after this hint, which
    itself took 1-3 ms. Edge 0.9 names a field's index directories
    ``<hash>-<first 8 characters of the field>-<kind>``; a field no name matches (a
    segment without that index, or another layout) is left to the page faults.

    Example:
        >>> import tempfile
        >>> read_ahead_field(Path(tempfile.mkdtemp()), "memory_type")
        0
    """
    short = field[:8]
    advised = 0
    with contextlib.suppress(OSError):
        for segment in os.scandir(path / SEGMENTS_DIR):
            indexes = Path(segment.path, "payload_index")
            with contextlib.suppress(OSError):
                for index in os.scandir(indexes):
                    _, _, named = index.name.partition("-")
                    if index.is_dir() and named.rpartition("-")[0] == short:
                        advised += _advise_files(index.path)
    return advised


def _advise_files(directory: str) -> int:
    advised = 0
    for current, _, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):
                fd = os.open(os.path.join(current, name), os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
                    advised += 1
                finally:
                    os.close(fd)
    return advised


def _read_data(file: str) -> int:
    """Read the data of ``file``, skipping its holes (Edge preallocates sparse files)."""
    fd = os.open(file, os.O_RDONLY)
    try:
        done, position = 0, 0
        while True:
            try:
                start = os.lseek(fd, position, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after `position`
                return done
            position = os.lseek(fd, start, os.SEEK_HOLE)
            while start < position:
                chunk = os.pread(fd, min(position - start, 4 << 20), start)
                if not chunk:
                    return done
                start += len(chunk)
                done += len(chunk)
    finally:
        os.close(fd)
