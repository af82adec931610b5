"""Append and read throughput of the session stores: SQLite (embedded default) vs Redis.

Usage:
    .venv/bin/python bench/session_stores.py [--n 5000] [--out FILE.json]

Starts its own ``redis-server`` on a free loopback port (AOF on, in a temp dir) and a SQLite
file in the same temp dir, then times, per store and per durability level:

* ``append x1``   - ``n`` appends of one message;
* ``append x50``  - ``n / 50`` appends of 50 messages;
* ``read_last 50`` - ``read_last(session, 50)`` on an ``n``-message session;
* ``read all``    - ``read(session)`` of the whole ``n``-message session.

Durability levels, paired so both sides promise the same thing:

* ``relaxed``: SQLite ``synchronous=normal`` (WAL) vs Redis ``appendfsync everysec``: a
  process crash loses nothing, a power cut may lose the last moments;
* ``strict``:  SQLite ``synchronous=full`` vs Redis ``appendfsync always``: an fsync per write.

Reported: messages/s over the whole workload, per-call median and p95 latency, and the ratio
Redis/SQLite of messages/s (> 1: Redis is faster), all measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from agentmem.stores.base import SessionStore
from agentmem.types import Message

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
DURABILITY = {"relaxed": ("normal", "everysec"), "strict": ("full", "always")}
WORKLOADS = ("append x1", "append x50", "read_last 50", "read all")


def _messages(n: int, tag: str) -> list[Message]:
    text = "The user prefers Python with tabs; keep answers short and cite sources. " * 3
    return [
        Message(role="user" if i % 2 == 0 else "assistant", content=f"{tag} {i}: {text}")
        for i in range(n)
    ]


def _timed(calls: Iterator[Callable[[], object]]) -> list[float]:
    times: list[float] = []
    for call in calls:
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def _summary(times: list[float], per_call: int) -> dict[str, float]:
    ordered = sorted(times)
    median = statistics.median(ordered)
    return {
        "calls": len(times),
        "messages_per_call": per_call,
        "msgs_per_s": len(times) * per_call / sum(times),
        "msgs_per_s_at_median": per_call / median,
        "median_ms": median * 1000,
        "p95_ms": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000,
    }


def measure(store: SessionStore, n: int, tag: str) -> dict[str, list[float]]:
    """Per-call seconds of the four workloads on fresh sessions named after ``tag``."""
    single, batch = f"single-{tag}", f"batch-{tag}"
    singles, batched = _messages(n, "single"), _messages(n - n % 50, "batch")
    out = {
        "append x1": _timed(partial(store.append, single, [m]) for m in singles),
        "append x50": _timed(
            partial(store.append, batch, batched[i : i + 50]) for i in range(0, len(batched), 50)
        ),
        "read_last 50": _timed(
            partial(store.read_last, single, 50) for _ in range(max(200, n // 5))
        ),
        "read all": _timed(partial(store.read, single) for _ in range(5)),
    }
    if store.count(single) != n or store.count(batch) != len(batched):
        msg = "the store lost or duplicated messages during the benchmark"
        raise RuntimeError(msg)
    return out


@contextmanager
def _redis_store(directory: Path, appendfsync: str) -> Iterator[tuple[SessionStore, str]]:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # run as a script: make `tests` importable
    import redis

    from agentmem.stores.redis import RedisSessionStore
    from tests.redis_server import RedisServer

    with RedisServer.start(directory, appendfsync=appendfsync) as server:
        store = RedisSessionStore.from_url(server.url, prefix="bench")
        probe = redis.Redis.from_url(server.url)
        version = str(probe.info("server")["redis_version"])
        probe.close()
        try:
            yield store, version
        finally:
            store.close()


def run(n: int, rounds: int) -> dict[str, Any]:
    """Measure both stores at both durability levels; return the JSON-ready report.

    Rounds alternate between the stores so that load from other processes on the machine
    hits both sides alike; per-call times of all rounds are pooled.
    """
    try:
        from agentmem.stores.sqlite import SQLiteSessionStore
    except ImportError as exc:
        SQLiteSessionStore = None  # type: ignore[assignment,misc]
        print(f"SQLite side skipped: agentmem.stores.sqlite is not importable ({exc})")
    report: dict[str, Any] = {
        "n": n,
        "rounds": rounds,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "sqlite_version": sqlite3.sqlite_version,
        "results": {},
    }
    per_call = {"append x1": 1, "append x50": 50, "read_last 50": 50, "read all": n}
    for level, (synchronous, appendfsync) in DURABILITY.items():
        times: dict[str, dict[str, list[float]]] = {}
        sqlite_name = f"sqlite (synchronous={synchronous})"
        redis_name = f"redis (appendfsync {appendfsync})"
        with (
            tempfile.TemporaryDirectory(prefix="agentmem-bench-") as tmp,
            _redis_store(Path(tmp) / "redis", appendfsync) as (redis_store, version),
        ):
            report["redis_version"] = version
            sqlite_store = None
            if SQLiteSessionStore is not None:
                sqlite_store = SQLiteSessionStore(Path(tmp) / "s.db", synchronous=synchronous)  # type: ignore[arg-type]
            try:
                for r in range(rounds):
                    pairs = [(redis_name, redis_store)]
                    if sqlite_store is not None:
                        pairs.insert(r % 2, (sqlite_name, sqlite_store))
                    for name, store in pairs:
                        print(f"  {level}: round {r + 1}/{rounds} {name} ...", flush=True)
                        for workload, t in measure(store, n, str(r)).items():
                            times.setdefault(name, {}).setdefault(workload, []).extend(t)
            finally:
                if sqlite_store is not None:
                    sqlite_store.close()
        report["results"][level] = {
            name: {w: _summary(t, per_call[w]) for w, t in by_workload.items()}
            for name, by_workload in times.items()
        }
    return report


def _print(report: dict[str, Any]) -> None:
    print(f"n={report['n']}  Python {report['python']}  SQLite {report['sqlite_version']}  "
          f"Redis {report.get('redis_version', '?')}  {report['platform']}")  # fmt: skip
    head = f"{'durability':<10} {'workload':<13} {'store':<30} {'msgs/s':>10} "
    print(head + f"{'p50 ms':>8} {'p95 ms':>8} {'redis/sqlite (mean / p50)':>26}")
    for level, row in report["results"].items():
        sqlite = next((v for k, v in row.items() if k.startswith("sqlite")), None)
        for workload in WORKLOADS:
            for store, stats in row.items():
                w = stats[workload]
                ratio = ""
                if store.startswith("redis") and sqlite is not None:
                    base = sqlite[workload]
                    w["ratio_vs_sqlite"] = round(w["msgs_per_s"] / base["msgs_per_s"], 3)
                    w["ratio_vs_sqlite_at_median"] = round(
                        w["msgs_per_s_at_median"] / base["msgs_per_s_at_median"], 3
                    )
                    ratio = f"{w['ratio_vs_sqlite']:.2f}x / {w['ratio_vs_sqlite_at_median']:.2f}x"
                print(
                    f"{level:<10} {workload:<13} {store:<30} {w['msgs_per_s']:>10,.0f} "
                    f"{w['median_ms']:>8.3f} {w['p95_ms']:>8.3f} {ratio:>26}"
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=5000, help="messages per workload (>= 50)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per store")
    parser.add_argument("--out", type=Path, help="write the results as JSON to this file")
    args = parser.parse_args(argv)
    if args.n < 50 or args.rounds < 1:
        parser.error("--n must be at least 50 and --rounds at least 1")
    report = run(args.n, args.rounds)
    _print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
