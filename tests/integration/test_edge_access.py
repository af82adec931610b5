"""Qdrant Edge keeps the access statistics of recalls beside its points.

A recall records ``access_count`` and ``last_accessed_at`` on its hits without a payload
write, so the hits stay in the HNSW index; ranking, forgetting and scrolls ordered by last
access see exactly what payload writes would have given; the statistics survive a close, an
index rebuild and a ``kill -9`` (losing at most the documented window); stores written
before keep the counts their payloads hold.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agentmem.controller.forgetting import ForgettingPolicy
from agentmem.errors import StoreCorruptedError
from agentmem.long_term import LongTermMemory
from agentmem.long_term.ranking import RankingConfig
from agentmem.stores.qdrant._edge_access import ACCESS_FILE, FLUSH_SECONDS, AccessStats
from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore
from tests.fakes import HashingEmbedder

pytestmark = pytest.mark.integration

DIM = 32
ROOT = Path(__file__).resolve().parents[2]
BASE = Path("/tmp/base/src")  # an untouched copy of the code before this change, when present
START = datetime(2026, 1, 1, tzinfo=timezone.utc)
TOPICS = ["tabs", "jazz", "sailing", "tea", "chess"]


class Clock:
    def __init__(self) -> None:
        self.now = START + timedelta(days=60)

    def __call__(self) -> datetime:
        return self.now


def fill(path: Path, n: int = 60, auto_index: AutoIndex | None = None) -> None:
    store = QdrantEdgeStore(path, dimension=DIM, auto_index=auto_index)
    memory = LongTermMemory(store=store, embedder=HashingEmbedder(DIM), user_id="alice")
    records = [
        memory.new_record(
            f"note {i} about {TOPICS[i % 5]} and {TOPICS[i * 3 % 5]}",
            "semantic",
            created_at=START + timedelta(days=i % 40),
            importance=0.2 + (i % 7) / 10,
        )
        for i in range(n)
    ]
    memory.store_records(records)
    memory.close()


def open_memory(path: Path, clock: Clock, ranking: RankingConfig | None = None) -> LongTermMemory:
    store = QdrantEdgeStore(path, dimension=DIM, auto_index=AutoIndex(enabled=False))
    return LongTermMemory(
        store=store, embedder=HashingEmbedder(DIM), user_id="alice", clock=clock, ranking=ranking
    )


def stats(memory: LongTermMemory) -> dict[str, tuple[int, datetime | None]]:
    return {r.id: (r.access_count, r.last_accessed_at) for r in memory.all_records()}


def recall_a_while(memory: LongTermMemory, clock: Clock) -> None:
    for round_ in range(6):
        for topic in TOPICS[: 2 + round_ % 3]:
            clock.now += timedelta(hours=7)
            memory.retrieve_memories(f"what about {topic}?", 4)


def test_a_recall_leaves_its_hits_in_the_index(tmp_path: Path) -> None:
    low = AutoIndex(min_unindexed=1_500, check_every=250)
    fill(tmp_path, 2_000, auto_index=low)
    with QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=low) as store:
        store.wait_for_index(240)
        store.optimize()  # Edge's counters are exact again
        before = store.unindexed_estimate()
        memory = LongTermMemory(store=store, embedder=HashingEmbedder(DIM), user_id="alice")
        hits = [h.record.id for h in memory.retrieve_memories("notes about jazz", 10)]
        again = memory.retrieve_memories("notes about jazz", 10)
        assert store.unindexed_estimate() == before
        counts = {h.record.id: h.record.access_count for h in again}
        assert all(counts[i] == 1 for i in hits if i in counts)
        assert [r.access_count for r in memory.get_records(hits)] == [
            1 + (i in counts) for i in hits
        ]


def test_ranking_forgetting_and_order_equal_those_of_payload_writes(tmp_path: Path) -> None:
    beside, payload = tmp_path / "beside", tmp_path / "payload"
    fill(beside)
    shutil.copytree(beside, payload)
    clock = Clock()
    memory = open_memory(beside, clock)
    recall_a_while(memory, clock)
    seen = stats(memory)
    assert sum(count for count, _ in seen.values()) > 40
    memory.close()
    assert (beside / ACCESS_FILE).exists()
    # The same statistics written into the payloads (what recalls did before).
    other = open_memory(payload, clock)
    for memory_id, (count, at) in seen.items():
        if count:
            other.update_fields([memory_id], {"access_count": count, "last_accessed_at": at})
    other.close()
    assert not (payload / ACCESS_FILE).exists()
    recency = RankingConfig(fusion="rrf", recency_weight=0.5, half_life_days=1.0)
    dense = RankingConfig(mode="dense", recency_weight=0.3, half_life_days=0.5)
    policy = ForgettingPolicy(half_life_days=2.0, min_retention=0.4, clock=clock)
    outcomes = []
    for path in (beside, payload):
        found = []
        for ranking in (None, recency, dense):
            memory = open_memory(path, clock, ranking)
            for topic in TOPICS:
                hits = memory.retrieve_memories(f"about {topic}", 8, touch=False)
                found.append([(h.record.id, h.score) for h in hits])
            memory.close()
        memory = open_memory(path, clock)
        assert stats(memory) == seen
        report = policy.plan(memory.all_records())
        ordered, _ = memory.scroll_records(order_by="last_accessed_ts", limit=100)
        memory.close()
        outcomes.append(
            (
                found,
                [(d.record.id, d.retention) for d in report.decisions],
                [r.last_accessed_at for r in ordered],
                {r.id for r in ordered},
            )
        )
    assert outcomes[0][1], "the policy forgets something"
    # The same hits with the same scores (Qdrant evaluates its boost formula in float32:
    # timestamps to about two minutes, so its recency terms differ in the fourth decimal;
    # hits whose scores tie may come in another order, as may memories accessed together).
    for beside_hits, payload_hits in zip(outcomes[0][0], outcomes[1][0], strict=True):
        assert {i for i, _ in beside_hits} == {i for i, _ in payload_hits}
        scores = [s for _, s in payload_hits]
        assert [s for _, s in beside_hits] == pytest.approx(scores, abs=1e-3)
    assert outcomes[0][1:] == outcomes[1][1:]


def test_the_statistics_survive_a_rebuild_and_a_close(tmp_path: Path) -> None:
    low = AutoIndex(min_unindexed=1_500, check_every=250)
    fill(tmp_path, 400, auto_index=low)
    clock = Clock()
    store = QdrantEdgeStore(tmp_path, dimension=DIM, auto_index=low)
    memory = LongTermMemory(
        store=store, embedder=HashingEmbedder(DIM), user_id="alice", clock=clock
    )
    recall_a_while(memory, clock)
    seen = stats(memory)
    generation = (tmp_path / "CURRENT").read_text() if (tmp_path / "CURRENT").exists() else ""
    more = [memory.new_record(f"more {i}", "semantic") for i in range(1_800)]
    memory.store_records(more)
    store.wait_for_index(240)
    assert (tmp_path / "CURRENT").read_text() != generation  # swapped in a new generation
    live = tmp_path / (tmp_path / "CURRENT").read_text()
    assert (live / ACCESS_FILE).exists()
    assert not (tmp_path / ACCESS_FILE).exists()
    assert {k: v for k, v in stats(memory).items() if k in seen} == seen
    memory.close()
    memory = open_memory(tmp_path, clock)
    assert {k: v for k, v in stats(memory).items() if k in seen} == seen
    memory.close()


def test_explicit_writes_win_over_recorded_accesses(tmp_path: Path) -> None:
    fill(tmp_path)
    clock = Clock()
    memory = open_memory(tmp_path, clock)
    (hit, *_) = memory.retrieve_memories("about tea", 3)
    memory.retrieve_memories("about tea", 3)
    memory.update_fields([hit.record.id], {"access_count": 40})
    assert memory.get_memory(hit.record.id).access_count == 40
    memory.store.flush()
    memory.close()
    memory = open_memory(tmp_path, clock)
    assert memory.get_memory(hit.record.id).access_count == 40
    assert memory.delete_memory(hit.record.id)
    memory.close()


class FullDisk:
    """The disk under the access file fills up: each of the next ``appends`` appends to it
    puts half of its bytes on disk, then raises; each of the next ``cuts`` truncations of it
    raises."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, path: Path, appends: int, cuts: int):
        self.path, self.appends, self.cuts = path, appends, cuts
        real_open, real_ftruncate, real_truncate = Path.open, os.ftruncate, os.truncate

        def open_(file: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            handle = real_open(file, mode, *args, **kwargs)
            return _Filling(handle, self) if file == self.path and mode == "ab" else handle

        def ftruncate(fd: int, length: int) -> None:
            self.cut(os.path.samestat(os.fstat(fd), os.stat(self.path)))
            real_ftruncate(fd, length)

        def truncate(file: Any, length: int) -> None:
            self.cut(Path(file) == self.path)
            real_truncate(file, length)

        monkeypatch.setattr(Path, "open", open_)
        monkeypatch.setattr(os, "ftruncate", ftruncate)
        monkeypatch.setattr(os, "truncate", truncate)

    def cut(self, of_the_file: bool) -> None:
        if of_the_file and self.cuts:
            self.cuts -= 1
            raise OSError(errno.EIO, "Input/output error")


class _Filling:
    def __init__(self, handle: Any, disk: FullDisk) -> None:
        self._handle, self._disk = handle, disk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def __enter__(self) -> _Filling:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def write(self, data: bytes) -> int:
        if not self._disk.appends:
            return int(self._handle.write(data))
        self._disk.appends -= 1
        self._handle.write(data[: len(data) // 2])
        self._handle.flush()
        raise OSError(errno.ENOSPC, "No space left on device")


def _a_failed_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, cuts: int
) -> tuple[LongTermMemory, Clock, Path, bytes, FullDisk]:
    """A memory whose file holds one flushed frame (``whole``), then a flush whose append
    fails half-way on a full disk, and whose cut back fails ``cuts`` times."""
    fill(tmp_path)
    monkeypatch.setattr(AccessStats, "_schedule", lambda self: None)  # the test flushes
    clock = Clock()
    memory = open_memory(tmp_path, clock)
    memory.retrieve_memories("about jazz", 4)
    memory.store.flush()
    access = tmp_path / ACCESS_FILE
    whole = access.read_bytes()
    disk = FullDisk(monkeypatch, access, appends=1, cuts=cuts)
    clock.now += timedelta(hours=1)
    memory.retrieve_memories("about tea", 4)
    with pytest.raises(OSError, match="No space left"):
        memory.store.flush()
    assert disk.appends == 0
    return memory, clock, access, whole, disk


def _reopened_with_the_same_statistics(
    memory: LongTermMemory, tmp_path: Path, clock: Clock
) -> None:
    """Every statistic ``memory`` holds is in the file: a reopen reads the same, and the
    memory recalled by the failed flush's query is still found."""
    seen = stats(memory)
    memory.close()
    memory = open_memory(tmp_path, clock)
    assert stats(memory) == seen
    assert memory.retrieve_memories("about tea", 4, touch=False)
    memory.close()


def test_a_failed_append_leaves_no_torn_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, clock, access, whole, _ = _a_failed_append(tmp_path, monkeypatch, cuts=0)
    assert access.read_bytes() == whole  # the half frame is cut off; its entries wait in RAM
    clock.now += timedelta(hours=1)
    memory.retrieve_memories("about chess", 4)
    memory.store.flush()
    _reopened_with_the_same_statistics(memory, tmp_path, clock)


def test_a_torn_frame_left_by_a_failed_cut_is_cut_before_the_next_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, clock, access, whole, disk = _a_failed_append(tmp_path, monkeypatch, cuts=2)
    torn = access.read_bytes()
    assert len(torn) > len(whole)  # the cut failed: half a frame is left
    clock.now += timedelta(hours=1)
    memory.retrieve_memories("about chess", 4)
    with pytest.raises(OSError, match="Input/output error"):
        memory.store.flush()  # the cut fails again: nothing is appended after the torn frame
    assert access.read_bytes() == torn
    memory.store.flush()  # cut, then appended
    assert (disk.appends, disk.cuts) == (0, 0)
    assert access.read_bytes().startswith(whole)
    _reopened_with_the_same_statistics(memory, tmp_path, clock)


_CHILD = """
import json, sys, time
from pathlib import Path
from agentmem.long_term import LongTermMemory
from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore
from tests.fakes import HashingEmbedder

store = QdrantEdgeStore(Path(sys.argv[1]), dimension=32, auto_index=AutoIndex(enabled=False))
memory = LongTermMemory(store=store, embedder=HashingEmbedder(32), user_id="alice")
def counts():
    return {r.id: r.access_count for r in memory.all_records()}
for _ in range(5):
    memory.retrieve_memories("about jazz", 4)
time.sleep(3 * float(sys.argv[2]))  # past the loss window: in the file
print("flushed", json.dumps(counts()), flush=True)
for _ in range(3):
    memory.retrieve_memories("about chess", 4)
print("recorded", json.dumps(counts()), flush=True)
time.sleep(600)
"""


def test_the_statistics_survive_a_kill_9(tmp_path: Path) -> None:
    fill(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT)])}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path), str(FLUSH_SECONDS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert child.stdout is not None
    assert child.stderr is not None
    try:
        tag, flushed = child.stdout.readline().split(" ", 1)
        assert tag == "flushed", child.stderr.read()
        tag, recorded = child.stdout.readline().split(" ", 1)
        assert tag == "recorded", child.stderr.read()
        child.send_signal(signal.SIGKILL)  # at once: the last recalls may not be in the file
    finally:
        child.kill()
        child.wait(30)
        child.stdout.close()
        child.stderr.close()
    at_flush, at_kill = json.loads(flushed), json.loads(recorded)
    assert sum(at_flush.values()) >= 5 * 4 - 4
    # A crash in the middle of an append would leave a torn last frame: dropped at open.
    access = tmp_path / ACCESS_FILE
    whole = access.read_bytes()
    access.write_bytes(whole + b"\x40\x00\x00\x00\x01\x02")
    memory = open_memory(tmp_path, Clock())
    after = {r.id: r.access_count for r in memory.all_records()}
    assert access.read_bytes() == whole
    memory.close()
    # Everything in the file is back; at most the window's recalls (the last three) are not.
    assert all(at_flush[i] <= after[i] <= at_kill[i] for i in after)
    assert sum(at_kill.values()) - sum(after.values()) <= 3 * 4
    # Damage after a clean close is refused (the manifest holds its checksum), naming it.
    damaged = bytearray(access.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    access.write_bytes(bytes(damaged))
    with pytest.raises(StoreCorruptedError, match=ACCESS_FILE):
        open_memory(tmp_path, Clock()).all_records()


def test_a_store_of_the_code_before_keeps_its_counts(tmp_path: Path) -> None:
    if not (BASE / "shared" / "agentmem").is_dir():
        pytest.skip(f"no copy of the earlier code at {BASE}")
    script = """
    import sys
    from pathlib import Path
    from agentmem.long_term import LongTermMemory
    from tests.fakes import HashingEmbedder
    from agentmem.stores.qdrant.edge import QdrantEdgeStore
    store = QdrantEdgeStore(Path(sys.argv[1]), dimension=32)
    memory = LongTermMemory(store=store, embedder=HashingEmbedder(32), user_id="alice")
    for i in range(30):
        memory.store_memory(f"note {i} about jazz and tea", "semantic")
    for _ in range(3):
        memory.retrieve_memories("jazz", 5)
    memory.close()
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BASE / "shared"), str(BASE)])}
    subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(tmp_path)],
        check=True,
        cwd=BASE,
        env=env,
    )
    assert not (tmp_path / ACCESS_FILE).exists()
    clock = Clock()
    memory = open_memory(tmp_path, clock)
    before = stats(memory)
    assert sum(count for count, _ in before.values()) == 15  # 3 recalls of 5, in payloads
    hits = [h.record.id for h in memory.retrieve_memories("jazz", 5)]
    after = stats(memory)
    for memory_id, (count, at) in before.items():
        expected = (count + 1, clock.now) if memory_id in hits else (count, at)
        assert after[memory_id] == expected
    memory.close()
    memory = open_memory(tmp_path, clock)
    assert stats(memory) == after
    memory.close()
