"""The embedder record of a Qdrant Edge store: ``agentmem-embedder.json`` in its root (private).

One small JSON object (see :mod:`agentmem.long_term.embedder_record`), replaced atomically
and durably (a temporary file, fsync, rename, fsync of the directory), so that a process
killed mid-write leaves the old record or the new one, never a torn one. It lives beside
the generations, not in one: an index rebuild swaps generations and keeps it, and
:meth:`~agentmem.stores.qdrant.edge.QdrantEdgeStore.backup_to` copies it.

Example:
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> read_record_file(root) is None
    True
    >>> write_record_file(root, {"format": 1, "identity": None, "reembed": None})
    >>> read_record_file(root)["format"]
    1
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentmem._util.durable import replace_durably
from agentmem.errors import StoreCorruptedError

__all__ = ["EMBEDDER_FILE", "read_record_file", "write_record_file"]

EMBEDDER_FILE = "agentmem-embedder.json"


def read_record_file(root: Path) -> dict[str, Any] | None:
    """The record in ``root`` (``None``: there is none).

    Raises:
        StoreCorruptedError: It is there but is not a JSON object.
    """
    path = root / EMBEDDER_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        msg = (
            f"the embedder record {path} is unreadable ({exc}); restore the store from a "
            "backup, or delete the file to let the next opener's embedder be adopted"
        )
        raise StoreCorruptedError(msg, path=str(path)) from None
    if not isinstance(data, dict):
        msg = f"the embedder record {path} is not a JSON object; restore it or delete it"
        raise StoreCorruptedError(msg, path=str(path))
    return data


def write_record_file(root: Path, record: Mapping[str, Any]) -> None:
    """Replace the record in ``root`` atomically and durably."""
    replace_durably(root / EMBEDDER_FILE, json.dumps(dict(record), sort_keys=True))
