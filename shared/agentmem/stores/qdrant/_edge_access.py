"""Access statistics of a Qdrant Edge store, kept beside its points (private).

Recording the accesses of a recall (``access_count``, ``last_accessed_at``) as a payload
write moves each hit out of Edge's HNSW index into its unindexed appendable segment (1.8
points per recall on average, measured): the more a store is used, the more of it is searched
exactly. So :class:`~agentmem.stores.qdrant.edge.QdrantEdgeStore` records them here instead,
in ``agentmem-access.log`` in the live generation's directory, and lays them over every
payload it reads (retrieved records, which the one ranker's recency and importance boosts
read, search hits, scrolls, scrolls ordered by last access): ranking and forgetting see
exactly what a payload write would have given.

Migration: a store written before this file existed keeps its statistics in the payloads;
they are the starting values (a memory without an entry here is read from its payload, and
its first recorded access counts on from there).

File: a header line, then frames ``<u32 length><u32 crc32><JSON {id: [count, at, ts] | null}>``,
a later frame overriding an earlier one (``null``: the memory was deleted). An access is in
RAM at once and in the file within :data:`FLUSH_SECONDS` (one frame per flush, fsync'ed):
**a process killed with ``kill -9`` loses at most the accesses of its last**
:data:`FLUSH_SECONDS` **second**. Explicit writes of these fields (``set_fields``, an
upsert) go to the payload, and, for a memory the file holds, to the file before the call
returns, so the file never overrides a newer write. A crash in the middle of an append
leaves a torn last frame (the file ends inside it, or in zeros a power loss left): dropped at
the next load. Damage elsewhere (a whole frame failing its checksum included) raises
:class:`~agentmem.errors.StoreCorruptedError`. An append that fails (a full disk) is cut
off again at once, fsync'ed, and its entries stay in RAM for the next flush; if even the
cut fails, the next flush cuts it before it appends: a frame is never written after a torn
one.

The file is one of the generation's files, so the integrity manifest
(:mod:`agentmem.stores.qdrant._edge_manifest`) lists it with its size and checksum at every
clean close, and a backup copies it; the first access after a clean close marks the manifest
open. It is rewritten as one frame when it holds more than twice the entries it needs, and
when an index rebuild swaps in a new generation.

Example:
    >>> entry_payload((2, None, None))
    {'access_count': 2, 'last_accessed_at': None, 'last_accessed_ts': None}
"""

from __future__ import annotations

import json
import logging
import os
import struct
import threading
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentmem._sansio import Program
from agentmem._util.durable import fsync_dir
from agentmem.stores import points as pt
from agentmem.stores.qdrant._edge_manifest import damaged

__all__ = [
    "ACCESS_FILE",
    "ACCESS_KEYS",
    "FLUSH_SECONDS",
    "AccessStats",
    "entry_payload",
    "ordered_by_access",
    "split_access",
]

logger = logging.getLogger("agentmem.stores.qdrant.edge")

ACCESS_FILE = "agentmem-access.log"
#: Payload keys the file holds (``set_fields``' ``access_count`` and ``last_accessed_at``).
ACCESS_KEYS = ("access_count", "last_accessed_at", "last_accessed_ts")
#: Accesses reach the file at most this long after they are recorded (the loss window).
FLUSH_SECONDS = 1.0
_MAGIC = b"agentmem-access 1\n"
_FRAME = struct.Struct("<II")
_SLACK = 1024  # entries the file may hold beyond twice what it needs before a rewrite

Entry = tuple[int, str | None, float | None]
"""``(access_count, last_accessed_at as stored, last_accessed_ts)``."""


def entry_payload(entry: Entry) -> dict[str, Any]:
    """The payload keys of ``entry`` (``None``: the key is absent)."""
    return dict(zip(ACCESS_KEYS, entry, strict=True))


def _entry(values: Mapping[str, Any]) -> Entry:
    at, ts = values.get("last_accessed_at"), values.get("last_accessed_ts")
    return int(values.get("access_count") or 0), at, None if ts is None else float(ts)


def _patched(entry: Entry, patch: pt.Patch) -> Entry:
    values = entry_payload(entry)
    values.update({k: v for k, v in patch.set.items() if k in ACCESS_KEYS})
    values.update({k: None for k in patch.unset if k in ACCESS_KEYS})
    return _entry(values)


def _lay_over(payload: dict[str, Any], entry: Entry) -> None:
    for key, value in entry_payload(entry).items():
        if value is None:
            payload.pop(key, None)
        else:
            payload[key] = value


def split_access(patches: Sequence[pt.Patch]) -> tuple[list[pt.Patch], list[pt.Patch]]:
    """``(access parts, other parts)`` of ``patches``; a part that changes nothing is left
    out.

    Example:
        >>> side, rest = split_access([pt.Patch("a", {"access_count": 1, "pinned": True}, [])])
        >>> side[0].set, rest[0].set
        ({'access_count': 1}, {'pinned': True})
    """
    side: list[pt.Patch] = []
    rest: list[pt.Patch] = []
    for patch in patches:
        for keep, out in ((True, side), (False, rest)):
            set_ = {k: v for k, v in patch.set.items() if (k in ACCESS_KEYS) == keep}
            unset = [k for k in patch.unset if (k in ACCESS_KEYS) == keep]
            if set_ or unset:
                out.append(pt.Patch(patch.id, set_, unset))
    return side, rest


class AccessStats:
    """The access statistics of one Edge store, in RAM and in its generation's file.

    Every method runs under the store's ``lock`` (the timer's flush takes it itself).

    Args:
        root: The store's directory (named in errors).
        directory: The live generation's directory (where the file is).
        lock: The store's mutex.
        on_access: Called (under ``lock``) when an access is recorded: the store marks its
            manifest open.
        flush_seconds: The loss window (:data:`FLUSH_SECONDS`).
    """

    def __init__(
        self,
        root: Path,
        directory: Path,
        lock: threading.RLock,
        *,
        on_access: Callable[[], None],
        flush_seconds: float = FLUSH_SECONDS,
    ) -> None:
        self._root = root
        self._file = directory / ACCESS_FILE
        self._lock = lock
        self._on_access = on_access
        self._flush_seconds = flush_seconds
        self._table: dict[str, Entry] | None = None  # read at first use
        self._pending: dict[str, Entry | None] = {}
        self._in_file = 0  # entries the file holds (a rewrite keeps only the live ones)
        self._torn_at: int | None = None  # a failed append may have left bytes from here on
        self._timer: threading.Timer | None = None
        self._closed = False

    def _entries(self) -> dict[str, Entry]:
        if self._table is None:
            self._table, self._in_file = _read(self._root, self._file)
        return self._table

    def active(self) -> bool:
        """Whether any memory has statistics here (else the payloads hold them all)."""
        return bool(self._entries())

    def merge(self, hits: list[pt.Hit]) -> list[pt.Hit]:
        """Lay the statistics over the payloads of ``hits`` (in place); returns them."""
        table = self._entries()
        if table:
            for hit in hits:
                entry = table.get(hit.id)
                if entry is not None and hit.payload:
                    _lay_over(hit.payload, entry)
        return hits

    def record(self, patches: Iterable[pt.Patch], current: Mapping[str, Mapping[str, Any]]) -> None:
        """Record accesses (``patches`` of :data:`ACCESS_KEYS` only) on memories whose
        merged payloads are ``current``; in the file within the loss window."""
        table = self._entries()
        changed = False
        for patch in patches:
            if patch.id in current:
                entry = _patched(table.get(patch.id) or _entry(current[patch.id]), patch)
                table[patch.id] = self._pending[patch.id] = entry
                changed = True
        if changed:
            self._on_access()
            self._schedule()

    def mirror(self, op: str, args: tuple[Any, ...]) -> None:
        """After a write to the live shard: an upsert or payload write of a memory held here
        is written here too, at once (the file must never override it); a deletion is
        forgotten within the loss window."""
        table = self._entries()
        if not table:
            return
        now: dict[str, Entry] = {}
        if op == "upsert":
            now = {p.id: _entry(p.payload) for p in args[0] if p.id in table}
        elif op == "set_payload":
            for patch in args[0]:
                held = now.get(patch.id) or table.get(patch.id)
                if held is not None and split_access([patch])[0]:
                    now[patch.id] = _patched(held, patch)
        elif op == "delete":
            for memory_id in args[0]:
                if table.pop(memory_id, None) is not None:
                    self._pending[memory_id] = None
            self._schedule()
        if now:
            table.update(now)
            self._pending.update(now)
            self.flush()

    def flush(self) -> None:
        """Append what is not in the file yet, as one frame, and fsync it.

        An append that fails leaves no part of its frame in the file: the file is cut back
        to its size before the append (if that fails too, the next flush cuts it first, and
        appends nothing until it could), and what is pending is written whole next time.
        """
        if not self._pending:
            return
        body = json.dumps(self._pending, separators=(",", ":")).encode()
        if self._torn_at is not None:
            self._cut(self._torn_at)
        try:
            size = self._file.stat().st_size
        except FileNotFoundError:
            size = 0
        fresh = size < len(_MAGIC)
        try:
            with self._file.open("wb" if fresh else "ab") as handle:
                if fresh:
                    handle.write(_MAGIC)
                handle.write(_FRAME.pack(len(body), zlib.crc32(body)) + body)
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException:
            self._torn_at = 0 if fresh else size
            try:
                self._cut(self._torn_at)
            except OSError as exc:  # the next flush cuts it before it appends
                logger.warning("could not cut a failed append off %s: %s", self._file, exc)
            raise
        if fresh:
            fsync_dir(self._file.parent)
        self._in_file += len(self._pending)
        self._pending.clear()
        table = self._entries()
        if self._in_file > 2 * len(table) + _SLACK:
            self._rewrite(self._file.parent)

    def _cut(self, size: int) -> None:
        """Cut the file back to ``size`` bytes (where its last whole frame ends), durably."""
        try:
            fd = os.open(self._file, os.O_WRONLY)
        except FileNotFoundError:  # nothing was written
            self._torn_at = None
            return
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            os.close(fd)
        self._torn_at = None

    def _rewrite(self, directory: Path) -> None:
        """Write every entry as one frame to ``directory``'s file (atomically, durably)."""
        body = json.dumps(self._entries(), separators=(",", ":")).encode()
        target = directory / ACCESS_FILE
        tmp = directory / (ACCESS_FILE + ".tmp")
        with tmp.open("wb") as handle:
            handle.write(_MAGIC + _FRAME.pack(len(body), zlib.crc32(body)) + body)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
        fsync_dir(directory)
        if directory == self._file.parent:
            self._in_file = len(self._entries())
            self._pending.clear()
            self._torn_at = None  # replaced

    def copy_to(self, directory: Path) -> None:
        """Write every entry into the new generation ``directory`` (before it goes live)."""
        if self._entries():
            self._rewrite(directory)

    def moved_to(self, directory: Path) -> None:
        """The new generation ``directory`` (given :meth:`copy_to`) is live."""
        self._file = directory / ACCESS_FILE
        self._in_file = len(self._entries())
        self._pending.clear()
        self._torn_at = None

    def _schedule(self) -> None:
        if self._timer is None and not self._closed:
            self._timer = threading.Timer(self._flush_seconds, self._flush_later)
            self._timer.name = "agentmem-edge-access"
            self._timer.daemon = True
            self._timer.start()

    def _flush_later(self) -> None:
        with self._lock:
            self._timer = None
            if self._closed:
                return
            try:
                self.flush()
            except OSError as exc:  # kept in RAM: the next flush or the close retries
                logger.warning("could not write the access statistics %s: %s", self._file, exc)

    def close(self) -> None:
        """Flush and stop the timer (a failed flush is logged: the store still closes)."""
        self._closed = True
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        try:
            self.flush()
        except OSError as exc:
            logger.warning("could not write the access statistics %s: %s", self._file, exc)


def _read(root: Path, path: Path) -> tuple[dict[str, Entry], int]:
    """The entries of the file at ``path`` and how many it holds; a torn last frame (a
    crash during an append) is cut off."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, 0
    except OSError as exc:
        raise damaged(root, f"{path} is unreadable ({exc})") from None
    if len(data) < len(_MAGIC) and _MAGIC.startswith(data):
        return {}, 0  # a crash while the header was written: nothing was in it yet
    if not data.startswith(_MAGIC):
        raise damaged(root, f"{path} is not an agentmem access statistics file")
    table: dict[str, Entry] = {}
    held, position = 0, len(_MAGIC)
    while position < len(data):
        if not data[position:].strip(b"\0"):  # only zeros left: a block a power loss left
            logger.info("dropping a zero-filled tail of %s (a crash while appending)", path)
            os.truncate(path, position)
            break
        end = position + _FRAME.size
        length, crc = _FRAME.unpack_from(data, position) if end <= len(data) else (0, 0)
        body = data[end : end + length]
        if end > len(data) or len(body) < length or zlib.crc32(body) != crc:
            if not _torn(data, end, length, body):
                raise damaged(root, f"{path} has a damaged frame at byte {position}")
            logger.info("dropping a torn last frame of %s (a crash while writing it)", path)
            os.truncate(path, position)
            break
        try:
            frame = json.loads(body)
            for memory_id, value in frame.items():
                if value is None:
                    table.pop(memory_id, None)
                else:
                    count, at, ts = value
                    table[memory_id] = (int(count), at, None if ts is None else float(ts))
        except (ValueError, TypeError, AttributeError) as exc:
            problem = f"{path} has an unreadable frame at byte {position} ({exc})"
            raise damaged(root, problem) from None
        held += len(frame)
        position = end + length
    return table, held


def _torn(data: bytes, end: int, length: int, body: bytes) -> bool:
    """Whether a frame that fails its check (its header ending at ``end``) is the last one,
    torn by a crash while it was appended: the file ends inside it, or it ends in zeros (a
    power loss may leave a block of the append unwritten). A whole frame of other bytes
    that fails its checksum is damage, wherever it is.

    Example:
        >>> _torn(b"hdr" + b"{}", 3, 10, b"{}"), _torn(b"hdr" + b"{x}", 3, 3, b"{x}")
        (True, False)
    """
    if end + length < len(data):
        return False
    return end > len(data) or len(body) < length or body.endswith(b"\0")


def ordered_by_access(
    scroll: Callable[[pt.ScrollSpec], Program[tuple[list[pt.Hit], str | None]]],
    spec: pt.ScrollSpec,
) -> Program[tuple[list[pt.Hit], str | None]]:
    """A scroll ordered by ``last_accessed_ts`` (newest first, from ``spec.order.start``)
    over the merged payloads: Edge's order reads the payload index, which the access file
    overrides. Reads every matching point (a rare request: listing by last access)."""
    assert spec.order is not None  # invariant: only called for an ordered scroll
    start = spec.order.start
    rows: list[pt.Hit] = []
    offset: str | None = None
    while True:
        page, offset = yield from scroll(pt.ScrollSpec(spec.conditions, 1024, offset))
        for hit in page:
            ts = hit.payload.get("last_accessed_ts")
            if ts is not None and (start is None or ts <= start):
                rows.append(hit._replace(score=float(ts)))
        if offset is None:
            break
    rows.sort(key=lambda h: (-h.score, h.id))
    return rows[: spec.limit], None
