"""The embedder record file of a Qdrant Edge store: a changed byte is damage, not a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentmem.errors import StoreCorruptedError
from agentmem.stores.qdrant._edge_embedder import (
    EMBEDDER_FILE,
    read_record_file,
    write_record_file,
)

RECORD = {
    "format": 1,
    "identity": {"dimension": 8, "fingerprint": None, "model": "hashing-fake"},
    "reembed": None,
}


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    write_record_file(tmp_path, RECORD)
    assert read_record_file(tmp_path) == RECORD


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"hashing-fake", b"hashing-fakE"),  # the model's name: still valid JSON
        (b'"dimension": 8', b'"dimension": 9'),
        (b'"checksum": "', b'"checksuM": "'),  # the checksum's own key
    ],
)
def test_a_changed_byte_that_still_parses_is_refused(
    tmp_path: Path, old: bytes, new: bytes
) -> None:
    write_record_file(tmp_path, RECORD)
    path = tmp_path / EMBEDDER_FILE
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new))
    with pytest.raises(StoreCorruptedError, match="agentmem restore") as caught:
        read_record_file(tmp_path)
    assert caught.value.path == str(path)


def test_a_record_written_before_the_checksum_is_read_as_it_is(tmp_path: Path) -> None:
    (tmp_path / EMBEDDER_FILE).write_text(json.dumps(RECORD), encoding="utf-8")
    assert read_record_file(tmp_path) == RECORD


def test_an_unreadable_record_names_the_way_back(tmp_path: Path) -> None:
    (tmp_path / EMBEDDER_FILE).write_text('{"format": 1, "identity', encoding="utf-8")
    with pytest.raises(StoreCorruptedError, match="agentmem repair --accept-loss"):
        read_record_file(tmp_path)
