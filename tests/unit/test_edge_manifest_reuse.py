"""What a close that wrote nothing reads again to describe the store: the metadata files,
but not the data files or the closed write-ahead-log segments that are unchanged since
the open checked them (``Stamps``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agentmem.stores.qdrant import _edge_manifest as manifests

FILES = {
    "wal/closed-3": b"entries" * 1000,  # a sealed segment: kept while unchanged
    "wal/open-4": b"tail",  # the segment being written: always read again
    "segments/s1/segment.json": b"{}",  # metadata: always read again
    "segments/s1/vectors.dat": b"\x01" * 5000,  # data: kept while unchanged
}


@pytest.fixture
def generation(tmp_path: Path) -> Path:
    old = time.time_ns() - 10 * 10**9  # older than a timestamp's granularity
    for relative, content in FILES.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        os.utime(path, ns=(old, old))
    return tmp_path


def _read_again(
    generation: Path, monkeypatch: pytest.MonkeyPatch, *, change: str | None = None
) -> list[str]:
    """The files the second description reads (``change``: a file rewritten, same size
    and content but a new mtime, between the two)."""
    manifest = manifests.describe(generation, generation, {"*": 1}, "clean")
    stamps = manifests.stamp(generation, manifest)
    if change is not None:
        (generation / change).write_bytes(FILES[change])
    read: list[str] = []
    real = manifests.block_checksum

    def recording(path: Path) -> str:
        read.append(str(path.relative_to(generation)))
        return real(path)

    monkeypatch.setattr(manifests, "block_checksum", recording)
    again = manifests.describe(generation, generation, {"*": 1}, "clean", unchanged=stamps)
    assert again.files == manifest.files  # the same checksums, read or kept
    return sorted(read)


def test_a_close_that_wrote_nothing_keeps_sealed_and_data_checksums(
    generation: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _read_again(generation, monkeypatch) == ["segments/s1/segment.json", "wal/open-4"]


def test_a_changed_sealed_segment_is_read_again(
    generation: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = _read_again(generation, monkeypatch, change="wal/closed-3")
    assert read == ["segments/s1/segment.json", "wal/closed-3", "wal/open-4"]


@pytest.mark.parametrize(
    ("relative", "sealed"),
    [("wal/closed-183", True), ("wal/open-9", False), ("wal/first-index", False)],
)
def test_only_closed_log_segments_are_sealed(relative: str, sealed: bool) -> None:
    assert manifests.is_metadata(relative)
    assert manifests.is_sealed(relative) is sealed
