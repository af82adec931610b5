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
follows it (seeded with the CRC stored before it, or with the one the failing entry should
carry, in case its CRC field is what changed). When the last entry of ``open-N`` fails,
what a cut-short write leaves tells the two apart: Edge writes an entry over the zeros the
file is preallocated with (or over what an earlier cut-short write left there), its CRC
last, so a kill mid-write leaves the CRC slot as it was (zero, or with bytes after it), and
a power cut leaves whole zero sectors; a last entry with its CRC, nothing after it and no
zero sector was written whole and altered since. A ``closed-N`` file was written whole: a
failing last entry there is damage. (A power cut may also leave an earlier page unwritten
while later ones were: that is refused, since the writes after it are lost too.)

The format, as Edge 0.9 (the ``wal`` crate) writes it, all little-endian: a file starts
with ``b"wal"``, a version byte and a 4-byte checksum seed; each entry is its length (8
bytes), its data, zero padding to a multiple of 8 for the whole entry, and a CRC-32C (4
bytes) of the length, data and padding, seeded with the bit-reversed complement of the
previous entry's CRC (of the file's seed, for the first). An entry of length 0 ends the
data (files are preallocated with zeros). A file that does not start that way is left to
Edge, which names its own error.

Cost: a CRC-32C pass over the log (``google-crc32c``, hardware CRC), only when a store
that was not closed cleanly opens: 20-35 ms per 32 MiB log file of large writes, about
0.5 s for one full of the smallest (320,000 entries of 90 bytes: Python's work per entry).

Example:
    >>> import tempfile
    >>> wal_damage(Path(tempfile.mkdtemp())) is None
    True
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from pathlib import Path

__all__ = ["wal_damage"]

_MAGIC = b"wal"
_HEADER = 8
_MASK = 0xFFFFFFFF
_SECTOR = 512  # the unit a power cut may leave unwritten
_FILE = re.compile(r"(open|closed)-\d+")  # the log's files (not first-index, tmp-open-N)
_REVERSED = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))

_Extend = Callable[[int, bytes], int]  # google_crc32c.extend: a CRC-32C continued


def wal_damage(shard: Path) -> str | None:
    """What is wrong with the write-ahead log of the Edge shard at ``shard`` that Edge
    would drop writes over, or ``None``: no log, a sound one, or a torn last entry."""
    try:
        names = sorted(p for p in (shard / "wal").iterdir() if _FILE.fullmatch(p.name))
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
    after = _sound_entries_after(extend, data, offset, previous)
    if after:
        return (
            f"its write-ahead log {path} is damaged at entry {entries + 1}: it and the "
            f"{after} write(s) logged after it would be dropped without an error"
        )
    # A file the log has moved past (closed-N) was written whole: no write was cut short.
    if path.name.startswith("open-") and _torn(data, offset):
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


def _end(data: bytes, offset: int) -> int:
    """Where the CRC of the entry at ``offset`` is (past the file: no room for it)."""
    length = _length(data, offset)
    return offset + _HEADER + length + (-(length + 4)) % 8


def _crc(extend: _Extend, data: bytes, offset: int, end: int, seed: int) -> int:
    """The CRC-32C an entry from ``offset`` to ``end`` must carry after one of CRC ``seed``."""
    return extend(~_reverse_bits(seed) & _MASK, data[offset:end])


def _sound(extend: _Extend, data: bytes, offset: int, seed: int) -> tuple[int, int] | None:
    """``(offset of the next entry, CRC)`` of the entry at ``offset`` if its CRC holds."""
    end = _end(data, offset)
    if not _length(data, offset) or end + 4 > len(data):
        return None
    (stored,) = struct.unpack_from("<I", data, end)
    if _crc(extend, data, offset, end, seed) != stored:
        return None
    return end + 4, stored


def _sound_entries_after(extend: _Extend, data: bytes, damaged: int, seed: int) -> int:
    """How many sound entries follow the failing one at ``damaged`` (whose predecessor's CRC
    is ``seed``), along their chain: first right after it (the next entry is seeded with
    the CRC it stores, or with the one it should store if its CRC field is what was
    altered), then from the first 8-aligned place before the end of the data that holds an
    entry seeded with the CRC stored just before it (for an altered length field). The
    places tried hash at most twice the file's size in all."""
    end = _end(data, damaged)
    if end + 8 <= len(data):
        (stored,) = struct.unpack_from("<I", data, end)
        for next_seed in (stored, _crc(extend, data, damaged, end, seed)):
            if count := _chain_length(extend, data, end + 4, next_seed):
                return count
    end_of_data = len(data.rstrip(b"\0"))
    budget = 2 * len(data)
    for start in range(damaged + 8, end_of_data, 8):
        length = _length(data, start)
        if not 0 < length <= end_of_data - start:
            continue
        budget -= length
        if budget < 0:
            break
        (before,) = struct.unpack_from("<I", data, start - 4)
        if count := _chain_length(extend, data, start, before):
            return count
    return 0


def _chain_length(extend: _Extend, data: bytes, offset: int, seed: int) -> int:
    """How many sound entries chain from ``offset``, the first seeded with ``seed``."""
    count, sound = 0, _sound(extend, data, offset, seed)
    while sound is not None:
        count += 1
        sound = _sound(extend, data, *sound)
    return count


def _torn(data: bytes, offset: int) -> bool:
    """Whether the failing last entry at ``offset`` may be a write cut short. Edge writes an
    entry over what its file holds past the log's end, its CRC last: zeros (the file is
    preallocated), or what an earlier write cut short left there. A process killed
    mid-write leaves the CRC as it found it, zero or not; a power cut leaves whole 512-byte
    sectors unwritten. So the entry may be torn if anything follows it (what an earlier
    write cut short left), if its CRC is zero or no longer fits in the file, or if one of
    its sectors is still zero; an entry with none of these was written whole and altered
    since. (An altered length that makes the entry overrun what was written reads zeros as
    its CRC: it passes for torn, as before.)"""
    end = _end(data, offset)
    if end + 4 > len(data) or struct.unpack_from("<I", data, end)[0] == 0:
        return True
    if data.count(0, end + 4) != len(data) - end - 4:
        return True  # bytes left past the log's end by an earlier write cut short
    first = offset - offset % _SECTOR
    for sector in range(first, end + 4, _SECTOR):
        part = data[max(sector, offset) : min(sector + _SECTOR, end + 4)]
        if part.count(0) == len(part):
            return True
    return False


def _reverse_bits(value: int) -> int:
    return int.from_bytes(value.to_bytes(4, "little").translate(_REVERSED), "big")
