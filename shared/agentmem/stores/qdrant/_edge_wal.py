"""Damage to a Qdrant Edge write-ahead log that Edge would drop in silence (private).

A store that was not closed cleanly (a crash) holds its latest writes only in the shard's
write-ahead log (``wal/open-N`` and ``wal/closed-N``), and its manifest cannot vouch for
those files (see :mod:`agentmem.stores.qdrant._edge_manifest`). Edge replays each log file
entry by entry while each entry's checksum holds, and stops at the first that fails,
without an error: a log altered in the middle loses every write after the altered entry.
On a store of 200 flushed and 50 logged points, four bytes changed anywhere in the log
brought back 200 points, and the close that followed made the loss permanent.

:func:`wal_damage` reads the log before Edge does. A write torn by the crash ends its file:
nothing after it is an entry. Damage does not: entries whose checksums still hold follow the
one that fails. So a log file is damaged when an entry fails its checksum and a sound entry
follows it. When the last entry fails, what a cut-short write leaves tells the two apart:
Edge writes an entry into preallocated zeros and its CRC last, so a process killed mid-write
leaves a zero CRC, and a power cut leaves whole zero sectors; a last entry with its CRC and
no zero sector was written whole and altered since.

The format, as Edge 0.9 (the ``wal`` crate) writes it, all little-endian: a file starts
with ``b"wal"``, a version byte and a 4-byte checksum seed; each entry is its length (8
bytes), its data, zero padding to a multiple of 8 for the whole entry, and a CRC-32C (4
bytes) of the length, data and padding, seeded with the bit-reversed complement of the
previous entry's CRC (of the file's seed, for the first). An entry of length 0 ends the
data (files are preallocated with zeros). A file that does not start that way is left to
Edge, which names its own error.

Cost: a CRC-32C pass over the log (``google-crc32c``, hardware CRC), only when a store
that was not closed cleanly opens: 20-35 ms per 32 MiB log file.

Example:
    >>> import tempfile
    >>> wal_damage(Path(tempfile.mkdtemp())) is None
    True
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

__all__ = ["wal_damage"]

_MAGIC = b"wal"
_HEADER = 8
_MASK = 0xFFFFFFFF
_SECTOR = 512  # the unit a power cut may leave unwritten
_MAX_CANDIDATES = 4096  # places tried for a sound entry after a damaged one

_Extend = Callable[[int, bytes], int]  # google_crc32c.extend: a CRC-32C continued


def wal_damage(shard: Path) -> str | None:
    """What is wrong with the write-ahead log of the Edge shard at ``shard`` that Edge
    would drop writes over, or ``None``: no log, a sound one, or a torn last entry."""
    try:
        names = sorted(p for p in (shard / "wal").iterdir() if "-" in p.name and p.is_file())
    except OSError:
        return None
    for path in names:
        problem = _file_damage(path)
        if problem is not None:
            return problem
    return None


def _file_damage(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if len(data) < _HEADER or data[:3] != _MAGIC:
        return None
    from google_crc32c import extend

    (previous,) = struct.unpack_from("<I", data, 4)
    offset, entries = _HEADER, 0
    while _length(data, offset):
        sound = _sound(extend, data, offset, previous)
        if sound is None:
            break
        offset, previous = sound
        entries += 1
    else:
        return None  # the end of the data: every entry sound
    after = _sound_entries_after(extend, data, offset)
    if after:
        return (
            f"its write-ahead log {path} is damaged at entry {entries + 1}: it and the "
            f"{after} write(s) logged after it would be dropped without an error"
        )
    if _torn(data, offset):
        return None
    return (
        f"its write-ahead log {path} is damaged at its last entry ({entries + 1}), which no "
        "interrupted write explains: that write would be dropped without an error"
    )


def _length(data: bytes, offset: int) -> int:
    """The length of the entry at ``offset`` (0: the end of the data)."""
    if offset + _HEADER > len(data):
        return 0
    return int(struct.unpack_from("<Q", data, offset)[0])


def _sound(extend: _Extend, data: bytes, offset: int, seed: int) -> tuple[int, int] | None:
    """``(offset of the next entry, CRC)`` of the entry at ``offset`` if its CRC holds."""
    length = _length(data, offset)
    end = offset + _HEADER + length + (-(length + 4)) % 8
    if length == 0 or end + 4 > len(data):
        return None
    (stored,) = struct.unpack_from("<I", data, end)
    if extend(~_reverse_bits(seed) & _MASK, data[offset:end]) != stored:
        return None
    return end + 4, stored


def _sound_entries_after(extend: _Extend, data: bytes, damaged: int) -> int:
    """How many sound entries follow the damaged one at ``damaged``: from the first
    8-aligned place before the end of the data that holds one (seeded with the CRC stored
    just before it, so an altered length field cannot hide it), along their chain."""
    end_of_data = len(data.rstrip(b"\0"))
    tried = 0
    for start in range(damaged + 8, end_of_data, 8):
        if not 0 < _length(data, start) <= end_of_data - start:
            continue
        tried += 1
        if tried > _MAX_CANDIDATES:
            break
        (seed,) = struct.unpack_from("<I", data, start - 4)
        count, sound = 0, _sound(extend, data, start, seed)
        while sound is not None:
            count += 1
            sound = _sound(extend, data, *sound)
        if count:
            return count
    return 0


def _torn(data: bytes, offset: int) -> bool:
    """Whether the failing last entry at ``offset`` may be a write cut short. Edge writes an
    entry into preallocated zeros, its CRC last: a process killed mid-write leaves the CRC
    0, and a power cut leaves whole 512-byte sectors unwritten, still zero. An entry whose
    CRC is there and none of whose sectors is zero was written whole and altered since (as
    is one whose length field no longer fits it, which then reads part of its data as its
    CRC)."""
    length = _length(data, offset)
    end = offset + _HEADER + length + (-(length + 4)) % 8
    if end + 4 > len(data) or struct.unpack_from("<I", data, end)[0] == 0:
        return True
    first = offset - offset % _SECTOR
    for sector in range(first, end + 4, _SECTOR):
        part = data[max(sector, offset) : min(sector + _SECTOR, end + 4)]
        if part.count(0) == len(part):
            return True
    return False


def _reverse_bits(value: int) -> int:
    return int(f"{value:032b}"[::-1], 2)
