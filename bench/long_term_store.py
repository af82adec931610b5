"""Long-term store: Qdrant Edge (embedded default) vs qdrant-client local mode, same run.

Usage:
    .venv/bin/python bench/long_term_store.py [--sizes 10000,100000] [--users 100]
        [--queries 200] [--local-queries 20] [--out FILE.json]

Per size, both stores get the same seeded random 384-dim unit vectors (plus a 3-term sparse
vector each), spread evenly over ``--users`` users, written in batches of 1,000 through the
store protocol (validation and payload building included). Then:

* ``upsert pts/s``: points written per second;
* ``search median/p95 ms``: top-10 dense search filtered by user (the store's scope), one
  random user and query vector per call. Local mode is brute force in Python, so it runs at
  most ``--local-queries`` of the same queries;
* ``ratio``: local median / Edge median (> 1: Edge is faster);
* ``recall@10``: Edge's default search (HNSW after ``optimize()``) vs ``exact=True`` on the
  same queries;
* ``peak RSS``: this process's peak after each phase (Edge runs first).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, peak_rss_mb, percentile, print_table, write_json

from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.store import MemoryStore, SparseVector
from agentmem.stores.qdrant.client import QdrantClientStore
from agentmem.stores.qdrant.edge import QdrantEdgeStore

DIM = 384
BATCH = 1000
T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def _data(
    n: int, users: int, seed: int
) -> tuple[list[MemoryRecord], np.ndarray, list[SparseVector]]:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    scopes = [Scope(user_id=f"user{u}") for u in range(users)]
    records = [
        MemoryRecord(
            content=f"memory {i}", memory_type="semantic", scope=scopes[i % users], created_at=T0
        )
        for i in range(n)
    ]
    terms = rng.integers(0, 5000, size=(n, 3))
    sparse = [SparseVector(sorted({int(t) for t in row}), [1.0] * len(set(row))) for row in terms]
    return records, vecs, sparse


def _load(
    store: MemoryStore, records: list[MemoryRecord], vecs: np.ndarray, sparse: list[SparseVector]
) -> float:
    start = time.perf_counter()
    for i in range(0, len(records), BATCH):
        store.upsert(records[i : i + BATCH], vecs[i : i + BATCH].tolist(), sparse[i : i + BATCH])
    return len(records) / (time.perf_counter() - start)


def _search(
    store: MemoryStore, queries: list[tuple[Scope, list[float]]], *, exact: bool = False
) -> tuple[list[float], list[list[str]]]:
    times, results = [], []
    for scope, q in queries:
        start = time.perf_counter()
        hits = store.search(scope, dense=q, limit=10, exact=exact)
        times.append((time.perf_counter() - start) * 1000)
        results.append([h.record.id for h in hits])
    return times, results


def run_size(n: int, users: int, n_queries: int, local_queries: int) -> list[dict[str, Any]]:
    records, vecs, sparse = _data(n, users, seed=n)
    rng = np.random.default_rng(1)
    qv = rng.normal(size=(n_queries, DIM))
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    queries = [(Scope(user_id=f"user{int(rng.integers(users))}"), q.tolist()) for q in qv]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        edge = QdrantEdgeStore(Path(tmp) / "edge", dimension=DIM)
        edge_rate = _load(edge, records, vecs, sparse)
        start = time.perf_counter()
        edge.optimize()
        optimize_s = time.perf_counter() - start
        _search(edge, queries[:5])  # warm up
        edge_times, edge_ids = _search(edge, queries)
        _, exact_ids = _search(edge, queries, exact=True)
        recall = float(
            np.mean(
                [
                    len(set(a) & set(b)) / max(len(b), 1)
                    for a, b in zip(edge_ids, exact_ids, strict=True)
                ]
            )
        )
        edge.close()
    edge_rss = peak_rss_mb()
    rows.append(
        {
            "size": n,
            "store": "edge",
            "upsert_pts_s": edge_rate,
            "optimize_s": optimize_s,
            "search_median_ms": percentile(edge_times, 50),
            "search_p95_ms": percentile(edge_times, 95),
            "queries": len(edge_times),
            "recall@10": recall,
            "peak_rss_mb": edge_rss,
        }
    )
    local = QdrantClientStore(location=":memory:", dimension=DIM)
    local_rate = _load(local, records, vecs, sparse)
    local_times, local_ids = _search(local, queries[:local_queries])
    local.close()
    agree = float(
        np.mean(
            [
                len(set(a) & set(b)) / max(len(b), 1)
                for a, b in zip(local_ids, exact_ids, strict=False)
            ]
        )
    )
    rows.append(
        {
            "size": n,
            "store": "local",
            "upsert_pts_s": local_rate,
            "search_median_ms": percentile(local_times, 50),
            "search_p95_ms": percentile(local_times, 95),
            "queries": len(local_times),
            "recall@10": agree,
            "peak_rss_mb": peak_rss_mb(),
        }
    )
    rows[0]["ratio"] = rows[1]["search_median_ms"] / rows[0]["search_median_ms"]
    rows[1]["ratio"] = 1.0
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--local-queries", type=int, default=20)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for n in (int(s) for s in args.sizes.split(",")):
        print(f"size {n:,} ...", file=sys.stderr, flush=True)
        rows += run_size(n, args.users, args.queries, min(args.local_queries, args.queries))
    columns = [
        "size", "store", "upsert_pts_s", "optimize_s", "search_median_ms", "search_p95_ms",
        "queries", "ratio", "recall@10", "peak_rss_mb",
    ]  # fmt: skip
    print_table(rows, columns)
    result = {
        "benchmark": "long_term_store",
        "environment": environment(),
        "dim": DIM,
        "users": args.users,
        "rows": rows,
    }
    if args.out:
        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
