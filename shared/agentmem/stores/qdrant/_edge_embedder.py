"""The embedder record of a Qdrant Edge store: ``agentmem-embedder.json`` in its root (private).

One small JSON object (see :mod:`agentmem.long_term.embedder_record`), replaced atomically
and durably (a temporary file, fsync, rename, fsync of the directory), so that a process
killed mid-write leaves the old record or the new one, never a torn one. The file holds a
checksum of the record (``checksum``: SHA-256 of its canonical JSON), so that a changed byte
that still parses (a letter of the model's name) is refused as damage, not taken for another
model's record; a record written before the checksum (exactly the keys ``format``,
``identity`` and ``reembed``) is read as it is. It lives beside
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
    >>> sorted(json.loads((root / EMBEDDER_FILE).read_text()))
    ['checksum', 'format', 'identity', 'reembed']
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentmem._util.durable import replace_durably
from agentmem.errors import StoreCorruptedError
from agentmem.stores.qdrant._edge_manifest import way_back

__all__ = ["EMBEDDER_FILE", "read_record_file", "write_record_file"]

EMBEDDER_FILE = "agentmem-embedder.json"
_CHECKSUM = "checksum"
#: The keys of a record written before the checksum (read without one).
_UNCHECKED_KEYS = frozenset({"format", "identity", "reembed"})


def _checksum(record: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(dict(record), sort_keys=True).encode()).hexdigest()


def _damaged(root: Path, path: Path, problem: str) -> StoreCorruptedError:
    msg = (
        f"the embedder record {path} {problem}. {way_back(root)}; or, if you know that the "
        "model you open the store with made its vectors, delete the file to let that model "
        "be adopted"
    )
    return StoreCorruptedError(msg, path=str(path))


def read_record_file(root: Path) -> dict[str, Any] | None:
    """The record in ``root`` (``None``: there is none).

    Raises:
        StoreCorruptedError: It is there but is not a JSON object, or fails its checksum.
    """
    path = root / EMBEDDER_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _damaged(root, path, f"is unreadable ({exc})") from None
    if not isinstance(data, dict):
        raise _damaged(root, path, "is not a JSON object")
    if _CHECKSUM not in data and set(data) == _UNCHECKED_KEYS:
        return data  # written before the checksum
    checksum = data.pop(_CHECKSUM, None)
    if checksum != _checksum(data):
        raise _damaged(root, path, "was altered (it fails its checksum)")
    return data


def write_record_file(root: Path, record: Mapping[str, Any]) -> None:
    """Replace the record in ``root`` atomically and durably."""
    body = {**record, _CHECKSUM: _checksum(record)}
    replace_durably(root / EMBEDDER_FILE, json.dumps(body, sort_keys=True))
