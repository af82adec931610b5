"""Damage to the access statistics of a Qdrant Edge store that no clean manifest vouches for
(a store left by a crash): only a torn last frame is dropped; anything else is refused."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from agentmem.errors import StoreCorruptedError
from agentmem.stores.qdrant import _edge_access as access
from agentmem.stores.qdrant._edge_manifest import Manifest, check_listed

MAGIC = b"agentmem-access 1\n"


def frame(entries: dict[str, object]) -> bytes:
    body = json.dumps(entries).encode()
    return struct.pack("<II", len(body), zlib.crc32(body)) + body


def written(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / access.ACCESS_FILE
    path.write_bytes(data)
    return path


WHOLE = MAGIC + frame({"a": [1, None, None]}) + frame({"b": [2, None, None]})


def test_a_torn_last_frame_is_dropped(tmp_path: Path) -> None:
    for torn in (WHOLE[:-3], WHOLE[:-3] + b"\0\0\0"):  # cut short; its last block unwritten
        path = written(tmp_path, torn)
        table, _ = access._read(tmp_path, path)
        assert set(table) == {"a"}
        assert path.read_bytes() == MAGIC + frame({"a": [1, None, None]})


@pytest.mark.parametrize("zeros", [1, 8, 4096])
def test_a_zero_filled_tail_is_dropped(tmp_path: Path, zeros: int) -> None:
    """A power loss during an append may leave whole blocks of zeros after the last frame
    (its header too): torn, not damage."""
    path = written(tmp_path, WHOLE + b"\0" * zeros)
    table, _ = access._read(tmp_path, path)
    assert set(table) == {"a", "b"}
    assert path.read_bytes() == WHOLE


def test_an_empty_frame_before_others_is_refused(tmp_path: Path) -> None:
    path = written(tmp_path, MAGIC + b"\0" * 8 + frame({"a": [1, None, None]}))
    with pytest.raises(StoreCorruptedError):
        access._read(tmp_path, path)


@pytest.mark.parametrize("where", [-2, len(MAGIC) + 12])
def test_a_whole_frame_failing_its_checksum_is_refused(tmp_path: Path, where: int) -> None:
    damaged = bytearray(WHOLE)
    damaged[where] ^= 0x20  # in the last frame, or in the first
    path = written(tmp_path, bytes(damaged))
    with pytest.raises(StoreCorruptedError, match="damaged frame"):
        access._read(tmp_path, path)
    assert path.read_bytes() == bytes(damaged)  # left as it was found


def test_a_listed_access_file_gone_after_a_crash_is_refused(tmp_path: Path) -> None:
    files = {access.ACCESS_FILE: {"size": len(WHOLE), "sha256": None}}
    manifest = Manifest(".", "open", files, {})
    written(tmp_path, WHOLE)
    check_listed(tmp_path, manifest)
    (tmp_path / access.ACCESS_FILE).unlink()
    with pytest.raises(StoreCorruptedError, match=r"agentmem-access\.log is missing"):
        check_listed(tmp_path, manifest)
