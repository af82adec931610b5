"""ingest.store_in_batches: every record written once, shortest text first, in batches."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agentmem.errors import InvalidValueError
from agentmem.ingest import store_in_batches
from agentmem.long_term.records import MemoryRecord, Scope


class Recorder:
    """Stands in for LongTermMemory: keeps what each store_records call got."""

    def __init__(self) -> None:
        self.calls: list[list[MemoryRecord]] = []

    def store_records(self, records: Sequence[MemoryRecord]) -> None:
        self.calls.append(list(records))


def records(lengths: list[int]) -> list[MemoryRecord]:
    scope = Scope(user_id="ann")
    return [MemoryRecord.new("x" * n, "episodic", scope=scope) for n in lengths]


def test_batches_hold_texts_of_similar_length_and_every_record_once() -> None:
    given = records([50, 3, 400, 7, 120, 9, 3])
    memory = Recorder()
    seen: list[int] = []
    written = store_in_batches(memory, given, batch_size=3, progress=seen.append)  # type: ignore[arg-type]
    assert written == 7
    assert [len(b) for b in memory.calls] == [3, 3, 1] == seen
    flat = [r for b in memory.calls for r in b]
    assert sorted(r.id for r in flat) == sorted(r.id for r in given)
    assert [len(r.content) for r in flat] == [3, 3, 7, 9, 50, 120, 400]


def test_nothing_to_write_and_a_bad_batch_size() -> None:
    memory = Recorder()
    assert store_in_batches(memory, []) == 0  # type: ignore[arg-type]
    assert memory.calls == []
    with pytest.raises(InvalidValueError, match="batch_size"):
        store_in_batches(memory, records([1]), batch_size=0)  # type: ignore[arg-type]
