"""Writing small files so that a crash leaves either the old or the new one (private).

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "CURRENT"
    >>> replace_durably(path, "gen-2")
    >>> path.read_text()
    'gen-2'
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fsync_dir", "fsync_file", "replace_durably"]


def fsync_dir(directory: Path) -> None:
    """fsync ``directory`` itself, so that the names created or replaced in it persist."""
    fsync_file(directory)


def fsync_file(path: str | os.PathLike[str]) -> None:
    """fsync the file (or directory) at ``path``: what was written to it is on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically and durably: written to ``<path>.tmp`` and
    fsync'ed, renamed over ``path``, then the directory fsync'ed."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
