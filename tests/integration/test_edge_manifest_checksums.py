"""The checksums of a Qdrant Edge store's manifest: CRC-32C of the non-zero blocks, and the
SHA-256 of the manifests written before it, still checked.

A checksum must not depend on how a copy stores its zeros (holes or data, holes starting
anywhere), must change with any changed byte, and a store whose manifest an earlier
agentmem wrote (SHA-256) must open, refuse the same damage, and get CRC-32C at its next
close.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path

import pytest

from agentmem.errors import StoreCorruptedError
from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.store import SparseVector
from agentmem.stores.qdrant import _edge_manifest as manifests
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from tests.integration.test_qdrant_edge_damage import make_store

pytestmark = pytest.mark.integration

ALICE = Scope(user_id="alice")
MIB = 1 << 20


def _layout(rng: random.Random) -> list[tuple[int, bytes]]:
    """Pieces of data at 4 KiB-aligned offsets across several 1 MiB windows, some of them
    ending inside a window, one crossing a window's edge, some with zero blocks inside."""
    pieces = []
    offset = 0
    for _ in range(12):
        offset += rng.choice([0, 4096, 3 * 4096, MIB // 2, MIB - 8192])
        blocks = rng.randint(1, 300)
        data = bytearray(rng.randbytes(blocks * 4096))
        if blocks > 4:  # a zero block inside the piece, stored as data
            hole = rng.randrange(1, blocks - 1) * 4096
            data[hole : hole + 4096] = bytes(4096)
        pieces.append((offset, bytes(data)))
        offset += len(data)
    return pieces


def _write(path: Path, pieces: list[tuple[int, bytes]], size: int, *, sparse: bool) -> None:
    with path.open("wb") as f:
        if sparse:
            f.truncate(size)
            for offset, data in pieces:
                f.seek(offset)
                f.write(data)
        else:
            content = bytearray(size)
            for offset, data in pieces:
                content[offset : offset + len(data)] = data
            f.write(content)


@pytest.mark.parametrize("seed", range(6))
def test_a_sparse_and_a_dense_copy_have_one_checksum_and_any_changed_byte_changes_it(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    pieces = _layout(rng)
    size = pieces[-1][0] + len(pieces[-1][1]) + rng.choice([0, 17, 4096 * 3 + 5])
    dense, sparse = tmp_path / "dense", tmp_path / "sparse"
    _write(dense, pieces, size, sparse=False)
    _write(sparse, pieces, size, sparse=True)
    assert dense.read_bytes() == sparse.read_bytes()
    # `cp --sparse=always` makes holes of the dense copy's zero blocks wherever it likes.
    copied = tmp_path / "copied"
    subprocess.run(["cp", "--sparse=always", str(dense), str(copied)], check=True)
    checksum = manifests.block_checksum(dense)
    assert manifests.block_checksum(sparse) == checksum
    assert manifests.block_checksum(copied) == checksum
    for _ in range(5):
        where = rng.randrange(size)
        content = bytearray(dense.read_bytes())
        content[where] ^= 1 << rng.randrange(8)
        changed = tmp_path / "changed"
        changed.write_bytes(content)
        assert manifests.block_checksum(changed) != checksum, where
    longer = tmp_path / "longer"  # zeros appended: the size is in the checksum
    longer.write_bytes(dense.read_bytes() + bytes(4096))
    assert manifests.block_checksum(longer) != checksum


def _as_written_before(root: Path) -> None:
    """Rewrite the store's clean manifest as an agentmem with SHA-256 manifests wrote it."""
    manifest = manifests.read_manifest(root)
    assert manifest is not None
    assert manifest.state == "clean"
    directory = manifests.generation_dir(root, manifest.generation)
    files = {
        relative: {
            "size": entry["size"],
            "sha256": None
            if entry.get("crc32c") is None
            else manifests.block_digest(directory / relative),
        }
        for relative, entry in manifest.files.items()
    }
    body = {
        "format": "agentmem-edge-manifest",
        "version": 1,
        "generation": manifest.generation,
        "state": "clean",
        "points": dict(manifest.points),
        "files": files,
    }
    body["checksum"] = manifests._self_checksum(body)
    (root / manifests.MANIFEST_FILE).write_text(json.dumps(body, sort_keys=True))


def _age(root: Path) -> None:
    """Make every file of the store an hour old, as files a session last wrote long ago (a
    file changed within a timestamp's granularity of its checksum is read again)."""
    hour_ago = time.time_ns() - 3600 * 10**9
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(hour_ago, hour_ago))


def _metadata_file(root: Path) -> Path:
    manifest = manifests.read_manifest(root)
    assert manifest is not None
    directory = manifests.generation_dir(root, manifest.generation)
    for relative, entry in sorted(manifest.files.items()):
        if relative.endswith("segment.json") and entry["size"] > 0:
            return directory / relative
    raise AssertionError("no segment.json in the manifest")


def test_a_store_closed_now_lists_crc32c_checksums(tmp_path: Path) -> None:
    root = tmp_path / "long_term"
    make_store(root)
    manifest = manifests.read_manifest(root)
    assert manifest is not None
    assert manifest.state == "clean"
    checked = [e for e in manifest.files.values() if e.get("crc32c") is not None]
    assert checked
    assert all("sha256" not in e for e in manifest.files.values())
    assert all(len(e["crc32c"]) == 8 for e in checked)


def test_a_manifest_written_before_crc32c_is_checked_and_replaced_as_files_change(
    tmp_path: Path,
) -> None:
    root = tmp_path / "long_term"
    make_store(root)
    _as_written_before(root)
    _age(root)
    store = QdrantEdgeStore(root, dimension=3)  # a session that writes nothing
    assert store.count(ALICE) == 8
    store.close()
    manifest = manifests.read_manifest(root)
    assert manifest is not None
    # Files unchanged since keep the SHA-256 they were checked against.
    assert any(e.get("sha256") for e in manifest.files.values())
    store = QdrantEdgeStore(root, dimension=3)  # a session that writes: all anew
    store.upsert(
        [MemoryRecord.new("one more", "semantic", scope=ALICE)],
        [[1.0, 9.0, 0.5]],
        [SparseVector([9], [1.0])],
    )
    store.close()
    manifest = manifests.read_manifest(root)
    assert manifest is not None
    assert any(e.get("crc32c") for e in manifest.files.values())
    assert not any("sha256" in e for e in manifest.files.values())


def test_a_data_file_not_checked_at_open_keeps_its_sha256(tmp_path: Path) -> None:
    """A session that checks only the metadata (``preload=False``: ``agentmem stats``,
    ``backup``) must not give a data file it never read a new checksum: damage under a
    manifest an earlier agentmem wrote is still refused at the next full open."""
    root = tmp_path / "long_term"
    make_store(root)
    _as_written_before(root)
    chunk = next(root.glob("segments/*/vector_storage-dense/vectors/chunk_0.mmap"))
    content = bytearray(chunk.read_bytes())
    first = next(i for i, b in enumerate(content) if b)
    _age(root)
    stat = chunk.stat()
    content[first] ^= 0xFF
    chunk.write_bytes(bytes(content))
    os.utime(chunk, ns=(stat.st_mtime_ns, stat.st_mtime_ns))  # bit rot: size and time kept
    QdrantEdgeStore(root, dimension=3, preload=False).close()
    with pytest.raises(StoreCorruptedError, match="was altered"):
        QdrantEdgeStore(root, dimension=3)


def test_damage_under_a_manifest_written_before_crc32c_is_still_refused(tmp_path: Path) -> None:
    root = tmp_path / "long_term"
    make_store(root)
    _as_written_before(root)
    target = _metadata_file(root)
    content = target.read_bytes()
    before = (root / manifests.MANIFEST_FILE).read_bytes()
    changed = content.replace(b'"', b"'", 1)
    assert len(changed) == len(content)
    assert changed != content
    target.write_bytes(changed)
    with pytest.raises(StoreCorruptedError, match="was altered"):
        QdrantEdgeStore(root, dimension=3)
    assert (root / manifests.MANIFEST_FILE).read_bytes() == before  # left as found


def test_damage_under_a_crc32c_manifest_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "long_term"
    make_store(root)
    target = _metadata_file(root)
    content = bytearray(target.read_bytes())
    content[len(content) // 2] ^= 0x01
    target.write_bytes(bytes(content))
    os.utime(target)
    with pytest.raises(StoreCorruptedError, match="was altered"):
        QdrantEdgeStore(root, dimension=3)


def test_a_manifest_listing_the_census_file_as_data_still_opens(tmp_path: Path) -> None:
    """After a downgrade and an upgrade: an agentmem that does not know the census file
    lists it among a root generation's files; the census is the store's own file, not
    Edge's, and is not required."""
    root = tmp_path / "long_term"
    make_store(root)
    census = root / "agentmem-census.json"
    assert census.is_file()
    _as_written_before(root)
    body = json.loads((root / manifests.MANIFEST_FILE).read_text())
    assert body["generation"] == "."
    body.pop("checksum")
    body.pop("census", None)
    body["files"][census.name] = {
        "size": census.stat().st_size,
        "sha256": manifests.block_digest(census),
    }
    body["checksum"] = manifests._self_checksum(body)
    (root / manifests.MANIFEST_FILE).write_text(json.dumps(body, sort_keys=True))
    census.unlink()
    store = QdrantEdgeStore(root, dimension=3)
    assert store.count(ALICE) == 8
    store.close()
