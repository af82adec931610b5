"""Damage to a SQLite write-ahead log that SQLite would drop in silence (private).

After a crash, the transactions committed since the last checkpoint live only in the
``-wal`` file beside the database. The first connection to open the database replays that
log, frame by frame, while each frame's cumulative checksum holds; at the first frame that
fails it stops and drops that frame and everything after it, with no error, because that is
what a write torn by a power cut looks like. A log damaged in the middle (an altered
sector, a bad copy) therefore loses every transaction committed after the damaged frame,
and the next checkpoint makes the loss permanent: 200 stored messages came back as 182.

:func:`wal_damage` tells the two apart before SQLite sees the log. A torn write ends the
log: nothing written after it can be a frame of the same log that completes a transaction.
Damage does not: later frames still carry the log's salts, and some of them end a
transaction (their commit field is set). So the log is damaged when a frame fails its
checksum and a commit frame of the same log follows it, or when its header fails its
checksum (SQLite then ignores the whole log) while commit frames with its salts follow.
Damage to the frames of the last transaction alone looks exactly like a torn write, and is
left to SQLite, which drops that transaction as it would after a power cut.

Another process may be writing the log while it is read (a service runs several). A frame
caught half-written, or a log restarted from its beginning under the reader, can look like
damage for a moment, so a finding counts only when a second read, a moment later, finds the
same log damaged at the same frame.

Cost: the checksums are computed with numpy (imported only when a log with frames is
there), 256 frames at a time, so memory stays bounded whatever the log's size: about 6 ms
for a full log (1,000 frames of 4 KiB, the size at which SQLite checkpoints by default).

The format: https://www.sqlite.org/fileformat.html#the_write_ahead_log

Example:
    >>> wal_damage("/nonexistent/sessions.db") is None
    True
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from typing import Any, BinaryIO

__all__ = ["wal_damage"]

_MAGIC_LE, _MAGIC_BE = 0x377F0682, 0x377F0683  # checksums of little-/big-endian words
_HEADER = 32
_FRAME_HEADER = 24
_MASK = 0xFFFFFFFF
_RECHECKS = 3
_RECHECK_WAIT_S = 0.05
_BATCH = 256  # frames checksummed at once (1 MiB of 4 KiB pages)


@dataclass(frozen=True)
class _Damage:
    salts: tuple[int, int]
    frame: int  # the first frame SQLite would drop (0-based); -1: the header
    frames: int
    commits_after: int

    def where(self) -> tuple[tuple[int, int], int]:
        return self.salts, self.frame

    def describe(self, wal: str) -> str:
        what = "its header" if self.frame < 0 else f"frame {self.frame + 1} of {self.frames}"
        return (
            f"its write-ahead log {wal} is damaged at {what}: the "
            f"{self.commits_after} transaction(s) committed after it would be dropped "
            "without an error"
        )


def wal_damage(path: str) -> str | None:
    """What is wrong with the write-ahead log of the SQLite database at ``path`` (its
    ``-wal`` file) that SQLite would drop committed transactions over, or ``None``: no log,
    a sound one, or one whose only fault is a torn last transaction."""
    wal = f"{path}-wal"
    found = _scan(wal)
    for _ in range(_RECHECKS):
        if found is None:
            return None
        time.sleep(_RECHECK_WAIT_S)
        again = _scan(wal)
        if again is not None and again.where() == found.where():
            return again.describe(wal)
        found = again
    return None  # still changing under the reader: a live log, not damage


def _scan(wal: str) -> _Damage | None:
    try:
        handle = open(wal, "rb")  # noqa: SIM115 - closed below, on every path
    except OSError:
        return None
    with handle:
        head = handle.read(_HEADER)
        if len(head) < _HEADER:
            return None
        magic, _, page_size, _, salt1, salt2, check1, check2 = struct.unpack(">8I", head)
        if magic not in (_MAGIC_LE, _MAGIC_BE):
            return None  # SQLite ignores such a file: it never held a readable log
        if page_size < 512 or page_size > 65536 or page_size & (page_size - 1):
            return None  # nor a log whose header names no page size
        frame_size = _FRAME_HEADER + page_size
        frames = (os.fstat(handle.fileno()).st_size - _HEADER) // frame_size
        if frames <= 0:
            return None
        import numpy as np

        log = _Log(handle, (salt1, salt2), frames, frame_size)
        order = "<u4" if magic == _MAGIC_LE else ">u4"
        if _checksums(np, np.frombuffer(head[:24], order)[None, :], (0, 0)) != [(check1, check2)]:
            return log.damage_at(-1)  # SQLite ignores the whole log
        state = (check1, check2)
        for first in range(0, frames, _BATCH):
            data = handle.read(min(_BATCH, frames - first) * frame_size)
            count = len(data) // frame_size  # fewer: the file shrank since its size was read
            if count == 0:
                return None
            raw = np.frombuffer(data, np.uint8, count * frame_size).reshape(count, frame_size)
            fields = raw[:, :_FRAME_HEADER].copy().view(">u4")  # page, commit, salts, sums
            # Each frame's checksum covers the first 8 bytes of its header and its page.
            words = np.concatenate([raw[:, :8], raw[:, _FRAME_HEADER:]], axis=1).view(order)
            sums = _checksums(np, words, state)
            for i, (page, _, s1, s2, c1, c2) in enumerate(fields.tolist()):
                if (s1, s2) != log.salts or sums[i] != (c1, c2) or page == 0:
                    return log.damage_at(first + i)
            state = sums[-1]
    return None


class _Log:
    """An open log file, for counting the commit frames after the one SQLite stops at."""

    def __init__(self, handle: BinaryIO, salts: tuple[int, int], frames: int, size: int):
        self.handle, self.salts, self.frames, self.frame_size = handle, salts, frames, size

    def damage_at(self, bad: int) -> _Damage | None:
        """The damage at frame ``bad`` (-1: the header) if a later frame of this log ends a
        transaction; ``None`` if none does (a torn write, or stale frames of an older log)."""
        commits = 0
        for frame in range(bad + 1, self.frames):
            self.handle.seek(_HEADER + frame * self.frame_size)
            header = self.handle.read(16)
            if len(header) < 16:
                break
            _, commit, s1, s2 = struct.unpack(">4I", header)
            commits += (s1, s2) == self.salts and commit != 0
        return _Damage(self.salts, bad, self.frames, commits) if commits else None


def _checksums(np: Any, words: Any, seed: tuple[int, int]) -> list[tuple[int, int]]:
    """The cumulative checksum after each row of ``words`` (uint32, one row per frame),
    starting from ``seed``.

    SQLite's checksum runs over pairs of words: ``s1 += a + s2; s2 += b + s1`` (mod 2**32),
    that is ``(s1, s2) <- M (s1, s2) + (a, a + b)`` with ``M = [[1, 1], [1, 2]]``. So a row of
    ``K`` pairs adds ``sum_k M**(K-k) (a_k, a_k + b_k)`` to ``M**K`` times the state it
    starts from: the sums are computed for every row at once, only the chaining of the
    rows runs in Python. numpy's uint64 arithmetic wraps modulo 2**64, which keeps every
    value exact modulo 2**32.
    """
    wide = words.astype(np.uint64)
    first, second = wide[:, 0::2], wide[:, 1::2]
    pairs = first.shape[1]
    powers = np.empty((pairs, 4), np.uint64)  # powers[j] = M**(pairs-1-j), flattened
    m = (1, 0, 0, 1)
    for j in range(pairs - 1, -1, -1):
        powers[j] = m
        m = _times(m, (1, 1, 1, 2))
    both = first + second
    adds1 = first @ powers[:, 0] + both @ powers[:, 1]
    adds2 = first @ powers[:, 2] + both @ powers[:, 3]
    s1, s2 = seed
    out = []
    for add1, add2 in zip(adds1.tolist(), adds2.tolist(), strict=True):
        s1, s2 = (m[0] * s1 + m[1] * s2 + add1) & _MASK, (m[2] * s1 + m[3] * s2 + add2) & _MASK
        out.append((s1, s2))
    return out


def _times(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The product of two 2x2 matrices (row-major), modulo 2**32."""
    return (
        (a[0] * b[0] + a[1] * b[2]) & _MASK,
        (a[0] * b[1] + a[1] * b[3]) & _MASK,
        (a[2] * b[0] + a[3] * b[2]) & _MASK,
        (a[2] * b[1] + a[3] * b[3]) & _MASK,
    )
