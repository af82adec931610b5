"""Long-term memory at scale: one user's 10,000 to 300,000 memories among 100 users.

Usage:
    .venv/bin/python bench/scale.py [--sizes 10000,100000,300000]
        [--baseline-sizes 10000,100000] [--queries 200] [--out FILE.json]

For each size, one user gets that many memories and 99 other users 100 each, written
through the public API (``LongTermMemory.store_records``, 1,000 per call) with no manual
``optimize()``, on three systems in the same run:

* ``edge``: Qdrant Edge as agentmem opens it (the index builds by itself: ``AutoIndex``);
* ``edge, no auto-index``: the same with ``AutoIndex(enabled=False)``, i.e. agentmem 0.1;
* ``qdrant-client local``: qdrant-client's local mode (``:memory:``), the usual embedded
  alternative (only at ``--baseline-sizes``, and with at most 20 queries: it is slow).

Vectors come from a hashing embedder (384 dimensions, deterministic, about 0.15 ms per
text), so the numbers are the store's. It has no cache, so each timed recall includes
embedding its query: the goal is stated with the query embedding cached, and this is slightly
stricter. The local model's throughput is ``bench/embeddings.py``'s subject.

Reported per size and system: write throughput, time until the index is built (after the
last write), the points still searched without the HNSW index (exactly) when the queries
run (``unindexed``), hybrid recall p50/p95 (top 10), ``build_context`` p50/p95 (2,000 tokens),
reopen time, disk (allocated blocks) and peak RSS; ratios against ``edge``.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, log, parse_sizes, peak_rss_mb, percentile, print_table, write_json

DIM = 384
USERS = 100
OTHERS_EACH = 100
TOPICS = ["sailing", "python", "jazz", "gardening", "chess", "marathons", "oslo", "tea"]


class HashingEmbedder:
    """Deterministic unit vectors from a text's hash (a stand-in that costs nothing)."""

    model_name = "hashing-384"
    dimension = DIM

    def _vec(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        v = np.random.default_rng(seed).normal(size=DIM)
        return (v / np.linalg.norm(v)).tolist()  # type: ignore[no-any-return]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self._vec(text)


def text(user: str, i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"{user} note {i}: about {topic}, detail {i * 7919 % 10007}"


def disk_bytes(root: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def unindexed_at_query(store: Any) -> int | None:
    """Points an Edge store searches without its HNSW index (exactly), or None."""
    estimate = getattr(store, "unindexed_estimate", None)
    return None if estimate is None else int(estimate())


def open_memory(system: str, home: Path, user: str) -> Any:
    from agentmem.long_term import LongTermMemory
    from agentmem.stores.qdrant.client import QdrantClientStore
    from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore

    if system == "qdrant-client local":
        store: Any = QdrantClientStore(location=":memory:", dimension=DIM)
    else:
        auto = AutoIndex(enabled=system == "edge")
        store = QdrantEdgeStore(home / "long_term", dimension=DIM, auto_index=auto)
    return LongTermMemory(store=store, embedder=HashingEmbedder(), user_id=user)


def write(memory: Any, user: str, n: int) -> None:
    for start in range(0, n, 1000):
        batch = [
            memory.new_record(text(user, i), "semantic") for i in range(start, min(n, start + 1000))
        ]
        memory.store_records(batch)


def run_one(system: str, size: int, queries: int) -> dict[str, Any]:
    from agentmem import MemoryManager
    from agentmem.long_term import LongTermMemory
    from agentmem.stores.sqlite import SQLiteSessionStore

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        target = "user000"
        memory = open_memory(system, home, target)
        store = memory.store
        start = time.perf_counter()
        write(memory, target, size)
        for u in range(1, USERS):
            other = LongTermMemory(store=store, embedder=memory.embedder, user_id=f"user{u:03d}")
            write(other, other.scope.user_id, OTHERS_EACH)
        written = time.perf_counter() - start
        total = size + (USERS - 1) * OTHERS_EACH
        index_s = 0.0
        if system == "edge":
            t0 = time.perf_counter()
            store.wait_for_index()
            index_s = time.perf_counter() - t0
        unindexed = unindexed_at_query(store)
        sessions = SQLiteSessionStore(home / "sessions.db")
        manager = MemoryManager.from_parts(
            user_id=target, sessions=sessions, long_term=memory, session_id="s1"
        )
        for t in range(20):
            manager.process_interaction(f"turn {t} about {TOPICS[t % 8]}", "noted")
        recall_ms, context_ms = [], []
        # Local mode searches by brute force in Python (seconds per query at 100,000).
        asked = [
            f"what did I say about {TOPICS[q % 8]} detail {q}?"
            for q in range(queries if system != "qdrant-client local" else min(queries, 20))
        ]
        for query in asked:
            t0 = time.perf_counter()
            memory.retrieve_memories(query, 10)
            recall_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            manager.build_context(query, max_tokens=2000)
            context_ms.append((time.perf_counter() - t0) * 1000)
        sessions.close()
        reopen_s = None
        if system != "qdrant-client local":
            disk = disk_bytes(home)
            memory.close()
            t0 = time.perf_counter()
            again = open_memory(system, home, target)
            reopen_s = time.perf_counter() - t0
            again.close()
        else:
            disk = None
            memory.close()
    return {
        "size": size,
        "system": system,
        "writes/s": total / written,
        "index built s": index_s,
        "unindexed": unindexed,
        "recall p50 ms": percentile(recall_ms, 50),
        "recall p95 ms": percentile(recall_ms, 95),
        "context p50 ms": percentile(context_ms, 50),
        "context p95 ms": percentile(context_ms, 95),
        "reopen s": reopen_s,
        "disk MB": None if disk is None else disk / 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table; write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,300000")
    parser.add_argument("--baseline-sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default="bench/results/scale.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    baseline = set(parse_sizes(args.baseline_sizes))
    rows: list[dict[str, Any]] = []
    for size in parse_sizes(args.sizes):
        systems = ["edge", "edge, no auto-index"]
        if size in baseline:
            systems.append("qdrant-client local")
        ours: dict[str, Any] | None = None
        for system in systems:
            log(f"{size:,} memories: {system} ...")
            row = run_one(system, size, args.queries)
            ours = ours or row
            row["x edge recall p50"] = row["recall p50 ms"] / ours["recall p50 ms"]
            rows.append(row)
            log(str(row))
    columns = [
        "size",
        "system",
        "writes/s",
        "index built s",
        "unindexed",
        "recall p50 ms",
        "recall p95 ms",
        "x edge recall p50",
        "context p50 ms",
        "context p95 ms",
        "reopen s",
        "disk MB",
    ]
    print_table(rows, columns)
    rss = peak_rss_mb()
    print(f"\npeak RSS: {rss:,.0f} MiB (cpus: {os.cpu_count()})")
    write_json(args.out, {"environment": environment(), "rows": rows, "peak_rss_mb": rss})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
