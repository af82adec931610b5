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

With ``--flatness`` (``--flat-size 100000``, ``--flat-store DIR`` to reuse a store built
before, ``--local-queries N`` for qdrant-client's local mode beside it): one store holds a
big user (``--flat-size`` memories), a small one (1,000) and 98 others (100 each), bulk-loaded
with no index. A copy is opened (its index rebuild starts) and closed at once, reopened, and
both users recall in turns at once (``reopened``), then again once the index is built
(``indexed``); reported: each user's p50 and the big one's over the small one's, in one run.
The issue's goals: ``indexed big/small`` <= 1.3, ``reopened big/small`` <= 2.0, local mode
>= 10x the big user's recall. The stored format stays readable by earlier code, so the same
store serves a run of the code before (its ``PYTHONPATH``) and after.

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


# -- flatness: a big and a small user in one store --------------------------------------

BIG, SMALL = "big", "small"


def build_flat(root: Path, big: int) -> None:
    """A bulk-loaded store at ``root``: ``big`` memories of user ``big``, 1,000 of ``small``
    and 100 of each of 98 others, written with no index (``AutoIndex(enabled=False)``) and
    closed: what an import leaves before the store indexes it by itself."""
    from agentmem.long_term import LongTermMemory
    from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore

    store = QdrantEdgeStore(root, dimension=DIM, auto_index=AutoIndex(enabled=False))
    users = [(BIG, big), (SMALL, 1_000)] + [(f"other{u:02d}", OTHERS_EACH) for u in range(98)]
    for user, n in users:
        write(LongTermMemory(store=store, embedder=HashingEmbedder(), user_id=user), user, n)
    store.close()


def interleaved(memories: dict[str, Any], queries: int) -> dict[str, float]:
    """Recall p50 (top 10, the access recorded as usual) of each user, their queries taken
    in turns, and the big user's p50 over the small one's."""
    times: dict[str, list[float]] = {user: [] for user in memories}
    for q in range(queries):
        for user, memory in memories.items():
            t0 = time.perf_counter()
            memory.retrieve_memories(f"what did I say about {TOPICS[q % 8]} detail {q}?", 10)
            times[user].append((time.perf_counter() - t0) * 1000)
    out = {f"{user} p50 ms": percentile(ms, 50) for user, ms in times.items()}
    out[f"{BIG}/{SMALL}"] = out[f"{BIG} p50 ms"] / out[f"{SMALL} p50 ms"]
    return out


def flatness(source: Path, queries: int, work: Path, finish_at_close: float) -> dict[str, Any]:
    """On a copy of the bulk-loaded store ``source``: open it (its index rebuild starts),
    close it at once, reopen it and measure at once (``reopened``); then wait for the index
    and measure again (``indexed``). Recalls run interleaved between the two users.

    The first open's ``AutoIndex.finish_at_close`` is ``finish_at_close`` (a loaded machine
    builds 110,000 points in more than its default); code without it drops the rebuild."""
    import shutil

    from agentmem.long_term import LongTermMemory
    from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore

    path = work / "long_term"
    shutil.copytree(source, path)
    row: dict[str, Any] = {}
    waits = "finish_at_close" in AutoIndex.__dataclass_fields__
    auto = AutoIndex(finish_at_close=finish_at_close) if waits else AutoIndex()
    row["close waits for the rebuild"] = waits
    store = QdrantEdgeStore(path, dimension=DIM, auto_index=auto)
    row["rebuilding at first open"] = store.indexing
    t0 = time.perf_counter()
    store.close()
    row["close s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    store = QdrantEdgeStore(path, dimension=DIM)
    row["reopen s"] = time.perf_counter() - t0
    row["unindexed at reopen"] = store.unindexed_estimate()
    memories = {
        user: LongTermMemory(store=store, embedder=HashingEmbedder(), user_id=user)
        for user in (BIG, SMALL)
    }
    reopened = interleaved(memories, queries)
    row.update({f"reopened {k}": v for k, v in reopened.items()})
    t0 = time.perf_counter()
    store.wait_for_index()
    row["index wait s"] = time.perf_counter() - t0
    indexed = interleaved(memories, queries)
    row.update({f"indexed {k}": v for k, v in indexed.items()})
    row["unindexed at end"] = store.unindexed_estimate()
    store.close()
    return row


def local_recall(big: int, queries: int) -> float:
    """Recall p50 of the big user on qdrant-client's local mode (no other users: it is
    brute force either way)."""
    memory = open_memory("qdrant-client local", Path("."), BIG)
    write(memory, BIG, big)
    times = []
    for q in range(queries):
        t0 = time.perf_counter()
        memory.retrieve_memories(f"what did I say about {TOPICS[q % 8]} detail {q}?", 10)
        times.append((time.perf_counter() - t0) * 1000)
    memory.close()
    return percentile(times, 50)


def main_flatness(args: argparse.Namespace) -> int:
    """``--flatness``: build (or reuse) the store, measure, print, write JSON."""
    source = Path(args.flat_store) if args.flat_store else None
    with tempfile.TemporaryDirectory() as tmp:
        # A store indexed since it was built keeps its shard in a generation (CURRENT).
        built = source is not None and any(
            (source / f).exists() for f in ("edge_config.json", "CURRENT")
        )
        if source is None or not built:
            source = source or Path(tmp) / "source"
            log(f"building {source}: {args.flat_size:,} + 1,000 + 98 x 100 memories ...")
            build_flat(source, args.flat_size)
        row: dict[str, Any] = {"big": args.flat_size, "queries": args.queries}
        log("flatness: open, close at once, reopen, recall; wait for the index, recall ...")
        work = Path(tmp) / "work"
        work.mkdir()
        row.update(flatness(source, args.queries, work, args.finish_at_close))
        if args.local_queries:
            log(f"qdrant-client local mode, {args.flat_size:,} memories ...")
            local = local_recall(args.flat_size, args.local_queries)
            row["local p50 ms"] = local
            row["local / edge big (indexed)"] = local / row[f"indexed {BIG} p50 ms"]
    for key, value in row.items():
        print(f"{key:32} {value:.3f}" if isinstance(value, float) else f"{key:32} {value}")
    write_json(args.out, {"environment": environment(), "flatness": row})
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table; write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,300000")
    parser.add_argument("--baseline-sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default="bench/results/scale.json")
    parser.add_argument("--flatness", action="store_true", help="the big/small user ratios")
    parser.add_argument("--flat-size", type=int, default=100_000)
    parser.add_argument("--flat-store", help="a store built by --flatness before (reused)")
    parser.add_argument("--local-queries", type=int, default=0)
    parser.add_argument("--finish-at-close", type=float, default=900.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if args.flatness:
        return main_flatness(args)
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
