"""Where agentmem keeps its embedded data by default, and the check every open of a home's
embedded stores makes first.

A restore (:func:`agentmem.backup.restore`) that replaces a home's stores journals its swap
in ``RESTORE_MARKER`` inside the home until the swap is complete or rolled back. While that
file is there the home may hold part of the old stores and part of the backup's, so
:func:`check_no_interrupted_restore` (called by :class:`~agentmem.stores.sqlite.SQLiteSessionStore`
and :class:`~agentmem.stores.qdrant.edge.QdrantEdgeStore` before they open anything) refuses
it instead of opening, or creating, stores there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agentmem.errors import StoreCorruptedError

__all__ = ["RESTORE_MARKER", "check_no_interrupted_restore", "default_home"]

RESTORE_MARKER = ".restore-in-progress.json"
"""The journal of a restore's swap, in the home it replaces (see :mod:`agentmem.backup`)."""


def default_home() -> Path:
    """``$AGENTMEM_HOME`` if set, else the per-user data directory.

    Linux: ``$XDG_DATA_HOME/agentmem`` (``~/.local/share/agentmem``); macOS:
    ``~/Library/Application Support/agentmem``; Windows: ``%LOCALAPPDATA%\\agentmem``.

    Example:
        >>> import os
        >>> os.environ["AGENTMEM_HOME"] = "/tmp/am"
        >>> str(default_home())
        '/tmp/am'
        >>> del os.environ["AGENTMEM_HOME"]
    """
    if env := os.environ.get("AGENTMEM_HOME"):
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "agentmem"


def check_no_interrupted_restore(home: str | os.PathLike[str]) -> None:
    """Refuse ``home`` while it holds the journal of a restore that is running or was
    interrupted (one ``exists()`` check).

    Raises:
        StoreCorruptedError: ``RESTORE_MARKER`` is in ``home``; the message says how to
            finish the restore or put the old stores back.

    Example:
        >>> import tempfile
        >>> check_no_interrupted_restore(tempfile.mkdtemp())  # nothing to refuse
    """
    root = Path(home)
    marker = root / RESTORE_MARKER
    if not marker.exists():
        return
    msg = (
        f"{root} holds an unfinished restore ({marker}): a restore into it is running, or was "
        "interrupted and its stores may be part old, part restored, so they are not opened. "
        "If no restore is running, run `agentmem restore BACKUP --home "
        f"{root} --force` again (it first puts the interrupted restore's old stores back, then "
        "restores BACKUP), or call agentmem.backup.recover_restore(home) to only put the old "
        "stores back"
    )
    raise StoreCorruptedError(msg, path=str(marker))
