"""Damage to a SQLite write-ahead log that SQLite would drop in silence (private).

After a crash, the transactions committed since the last checkpoint live only in the
``-wal`` file beside the database. The first connection to open the database replays that
log, frame by frame, while each frame's cumulative checksum holds; at the first frame that
fails it stops and drops that frame and everything after it, with no error, because that is
what a write torn by a power cut looks like. A log damaged in the middle (an altered
sector, a bad copy) therefore loses every transaction committed after the damaged frame,
and the next checkpoint makes the loss permanent: 200 stored messages came back as 182.
A log whose header does not hold (a changed magic number, page size, salt or checksum) is
ignored whole.

:func:`wal_damage` tells damage from what SQLite is right to drop, before SQLite sees the
log. Two things legitimately end a log with frames that fail: a transaction torn by a power
cut (any of its frames may be missing or stale), and the tail of a transaction whose writer
was killed before publishing it, partly overwritten since by the next writer (its frames
still carry the log's salts, and its commit frame is there). Either is one transaction: the
failing frame, and the frames up to the first commit frame from there. Damage is found when
more follows: the log is damaged when, from its first failing frame on, at least two
frames of the log (its salts) end a transaction. So damage to the log's last transaction
alone is left to SQLite, which drops that transaction as it would after a power cut. A
header that does not hold, followed by frames that carry one pair of salts and end a
transaction, is damage too.

Another process may be writing the log while it is read (a service runs several). A frame
caught half-written, or a log restarted from its beginning under the reader, can look like
damage for a moment, so a finding counts only when a second read, a moment later, finds the
same log damaged at the same frame.

Cost: the checksums are computed with numpy (imported only when a log with frames is
there), about 1 MiB of frames at a time, so memory stays bounded whatever the log's size:
about 6 ms for a full log (1,000 frames of 4 KiB, the size at which SQLite checkpoints by
default).

The format: https://www.sqlite.org/fileformat.html#the_write_ahead_log

Example:
    >>> wal_damage("/nonexistent/sessions.db") is None
    True
"""

from __future__ import annotations

import functools
import os
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["wal_damage"]

_MAGIC_LE, _MAGIC_BE = 0x377F0682, 0x377F0683  # checksums of little-/big-endian words
_HEADER = 32
_FRAME_HEADER = 24
_PAGE_SIZES = tuple(1 << n for n in range(9, 17))  # 512 .. 65536
_MASK = 0xFFFFFFFF
_RECHECKS = 3
_RECHECK_WAIT_S = 0.05
_BATCH_BYTES = 1 << 20  # frames checksummed at once: about this much of the log
_HEADER_DAMAGE = -1


@dataclass(frozen=True)
class _Damage:
    salts: tuple[int, int]
    frame: int  # the first frame SQLite would drop (0-based); _HEADER_DAMAGE: the header
    commits: int  # frames of the log that end a transaction, from there on

    def where(self) -> tuple[tuple[int, int], int]:
        return self.salts, self.frame

    def describe(self, wal: str) -> str:
        if self.frame == _HEADER_DAMAGE:
            what, lost = "its header", f"all {self.commits} transaction(s) it holds"
        else:
            what = f"frame {self.frame + 1}"
            lost = f"the transaction it is in and the {self.commits - 1} committed after it"
        return (
            f"its write-ahead log {wal} is damaged at {what}: SQLite would drop {lost} "
            "without an error"
        )


def wal_damage(path: str) -> str | None:
    """What is wrong with the write-ahead log of the SQLite database at ``path`` (its
    ``-wal`` file, beside the database a symlink names) that SQLite would drop committed
    transactions over, or ``None``: no log, a sound one, or one whose only fault is in its
    last transaction."""
    wal = f"{os.path.realpath(path)}-wal"
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
        size = os.fstat(handle.fileno()).st_size
        head = handle.read(_HEADER)
        if len(head) < _HEADER or size < _HEADER + _FRAME_HEADER + _PAGE_SIZES[0]:
            return None  # no frame: nothing SQLite could drop
        import numpy

        magic, _, page_size, _, salt1, salt2, check1, check2 = struct.unpack(">8I", head)
        order = "<u4" if magic == _MAGIC_LE else ">u4"
        if (
            magic not in (_MAGIC_LE, _MAGIC_BE)
            or page_size not in _PAGE_SIZES
            or _chain(numpy.frombuffer(head[:24], order)[None, :], (0, 0)) != [(check1, check2)]
        ):
            return _header_damage(handle, size)
        salts = (salt1, salt2)
        frame_size = _FRAME_HEADER + page_size
        frames = (size - _HEADER) // frame_size
        batch = max(1, _BATCH_BYTES // frame_size)
        state = (check1, check2)
        for first in range(0, frames, batch):
            data = handle.read(min(batch, frames - first) * frame_size)
            count = len(data) // frame_size  # fewer: the file shrank since its size was read
            if count == 0:
                return None
            raw = numpy.frombuffer(data, numpy.uint8, count * frame_size)
            raw = raw.reshape(count, frame_size)
            fields = raw[:, :_FRAME_HEADER].copy().view(">u4")  # page, commit, salts, sums
            # Each frame's checksum covers the first 8 bytes of its header and its page.
            words = numpy.concatenate([raw[:, :8], raw[:, _FRAME_HEADER:]], axis=1).view(order)
            sums = _chain(words, state)
            for i, (page, _, s1, s2, c1, c2) in enumerate(fields.tolist()):
                if (s1, s2) != salts or sums[i] != (c1, c2) or page == 0:
                    bad = first + i
                    commits = _commits(handle, salts, bad, frames, frame_size)
                    return _Damage(salts, bad, commits) if commits >= 2 else None
            state = sums[-1]
    return None


def _header_damage(handle: BinaryIO, size: int) -> _Damage | None:
    """For a log whose header does not hold: the damage if, at some page size, its frames
    carry the salts of its first frame and end a transaction (SQLite drops them all)."""
    for page_size in _PAGE_SIZES:
        frame_size = _FRAME_HEADER + page_size
        frames = (size - _HEADER) // frame_size
        if frames < 1:
            break
        handle.seek(_HEADER)
        page, _, salt1, salt2 = struct.unpack(">4I", handle.read(16))
        if page == 0:
            continue
        commits = _commits(handle, (salt1, salt2), 0, frames, frame_size)
        if commits:
            return _Damage((salt1, salt2), _HEADER_DAMAGE, commits)
    return None


def _commits(handle: BinaryIO, salts: tuple[int, int], first: int, frames: int, size: int) -> int:
    """How many of the frames from ``first`` on carry ``salts`` and end a transaction."""
    commits = 0
    for frame in range(first, frames):
        handle.seek(_HEADER + frame * size)
        header = handle.read(16)
        if len(header) < 16:
            break
        _, commit, s1, s2 = struct.unpack(">4I", header)
        commits += (s1, s2) == salts and commit != 0
    return commits


def _chain(words: npt.NDArray[np.uint32], seed: tuple[int, int]) -> list[tuple[int, int]]:
    """The cumulative checksum after each row of ``words`` (uint32, one row per frame),
    starting from ``seed``.

    SQLite's checksum runs over pairs of words: ``s1 += a + s2; s2 += b + s1`` (mod 2**32),
    that is ``(s1, s2) <- M (s1, s2) + (a, a + b)`` with ``M = [[1, 1], [1, 2]]``. So a row of
    ``K`` pairs adds ``sum_k M**(K-k) (a_k, a_k + b_k)`` to ``M**K`` times the state it
    starts from: the sums are computed for every row at once, only the chaining of the
    rows runs in Python. numpy's uint64 arithmetic wraps modulo 2**64, which keeps every
    value exact modulo 2**32.
    """
    import numpy

    wide = words.astype(numpy.uint64)
    first, second = wide[:, 0::2], wide[:, 1::2]
    powers, m = _powers(first.shape[1])
    both = first + second
    adds1 = first @ powers[:, 0] + both @ powers[:, 1]
    adds2 = first @ powers[:, 2] + both @ powers[:, 3]
    s1, s2 = seed
    out = []
    for add1, add2 in zip(adds1.tolist(), adds2.tolist(), strict=True):
        s1, s2 = (m[0] * s1 + m[1] * s2 + add1) & _MASK, (m[2] * s1 + m[3] * s2 + add2) & _MASK
        out.append((s1, s2))
    return out


@functools.lru_cache(maxsize=16)
def _powers(pairs: int) -> tuple[npt.NDArray[np.uint64], tuple[int, int, int, int]]:
    """``M**(pairs-1-j)`` for each pair ``j`` (row-major, one row each), and ``M**pairs``."""
    import numpy

    powers = numpy.empty((pairs, 4), numpy.uint64)
    m = (1, 0, 0, 1)
    for j in range(pairs - 1, -1, -1):
        powers[j] = m
        m = _times(m, (1, 1, 1, 2))
    powers.setflags(write=False)
    return powers, m


def _times(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The product of two 2x2 matrices (row-major), modulo 2**32."""
    return (
        (a[0] * b[0] + a[1] * b[2]) & _MASK,
        (a[0] * b[1] + a[1] * b[3]) & _MASK,
        (a[2] * b[0] + a[3] * b[2]) & _MASK,
        (a[2] * b[1] + a[3] * b[3]) & _MASK,
    )
