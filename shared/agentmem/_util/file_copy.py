"""Copying store files without filling their holes (private).

Qdrant Edge preallocates its files sparsely (a store of a few memories holds about 250 MB of
mostly holes in 1 MB of data); a plain copy would write every zero. :func:`copy_tree` copies
only the data regions (:func:`data_regions`, which the Edge manifest's checksums read too) and
sets each file's size, so holes stay holes.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> src, dst = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp()) / "copy"
    >>> _ = (src / "a.dat").write_bytes(b"x" * 10)
    >>> copy_tree(src, dst)
    (1, 10)
    >>> (dst / "a.dat").read_bytes() == b"x" * 10
    True
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from agentmem._util.durable import fsync_dir

__all__ = ["copy_file", "copy_tree", "data_regions", "fsync_tree"]


def data_regions(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """The ``(start, end)`` offsets of the data regions of the open file ``fd`` (``size``
    bytes long), in order; its holes are skipped without being read."""
    position = 0
    while position < size:
        try:
            start = os.lseek(fd, position, os.SEEK_DATA)
        except OSError:  # ENXIO: only a hole after `position`
            return
        position = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, position


def copy_file(src: Path, dst: Path) -> int:
    """Copy ``src`` to a new file ``dst``, holes kept; returns the data bytes copied."""
    done = 0
    fin = os.open(src, os.O_RDONLY)
    try:
        size = os.fstat(fin).st_size
        fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            for start, end in data_regions(fin, size):
                while start < end:
                    chunk = os.pread(fin, min(end - start, 1 << 20), start)
                    if not chunk:
                        break
                    os.pwrite(fout, chunk, start)
                    start += len(chunk)
                    done += len(chunk)
            os.ftruncate(fout, size)
            os.fsync(fout)
        finally:
            os.close(fout)
    finally:
        os.close(fin)
    return done


def copy_tree(
    src: Path, dst: Path, *, skip: Callable[[Path], bool] = lambda _: False
) -> tuple[int, int]:
    """Copy the directory ``src`` to a new directory ``dst`` (files ``skip`` accepts are
    left out); returns (files, data bytes)."""
    files = data = 0
    dst.mkdir(parents=True)
    for current, dirs, names in os.walk(src):
        here = Path(current)
        target = dst / here.relative_to(src)
        dirs[:] = [d for d in sorted(dirs) if not skip(here / d)]
        for d in dirs:
            (target / d).mkdir()
        for name in sorted(names):
            if skip(here / name):
                continue
            data += copy_file(here / name, target / name)
            files += 1
    return files, data


def fsync_tree(root: Path) -> None:
    """fsync every directory under ``root`` (the files were synced as they were written)."""
    for current, _, _ in os.walk(root):
        fsync_dir(Path(current))
