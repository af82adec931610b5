"""The web inspector's pages for a user with 10,000 memories, timed against one plain recall.

Usage:
    .venv/bin/python bench/inspector.py [--memories 10000] [--repeat 30] [--out FILE.json]

One user gets ``--memories`` memories (and 20 other users 100 each), written through
``LongTermMemory.store_records`` on the embedded defaults (Qdrant Edge, SQLite) of a
temporary home, with the index built before anything is timed; 1% of the user's memories
are then superseded by another (100 two-version histories at 10,000). Vectors come from the test
suite's hashing embedder (``tests/fake_embedder.py``: a bag of hashed words, 384
dimensions, no model), so the numbers are the store's and the inspector's, not a model's.

Timed in the same run, each the median of ``--repeat`` calls after a warm-up:

* the baseline: one plain recall, ``LongTermMemory.retrieve_memories(query, 5)`` (hybrid,
  embedding its query, recording the access);
* each page, fetched over HTTP from ``MemoryService.serve_inspector`` (request, page
  built, response read): the memories list (page 1 of 50 and page 2 through its cursor),
  the user's overview (counts by type, sessions), a search with explained scores, a
  memory's page (its history chain: one filtered read per earlier version) and the
  forgetting page (the retention of every memory: all 10,000 are read).

Each page is timed in turn with the recall (page over HTTP, the same page built in-process
by the inspector's ``Pages``, recall; again), so all see the same load on a shared machine.
Reported: each page's median and p95 over HTTP, the median of the recalls timed beside it
and the ratio of the two medians; and the page built in-process (no socket, no thread hop)
with its ratio.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))

from _common import environment, log, measure, percentile, print_table, write_json

from agentmem import MemoryService
from tests.fake_embedder import HashingEmbedder

ROOT = Path(__file__).resolve().parents[1]
DIM = 384
USER = "heavy"
TOPICS = ["sailing", "python", "jazz", "gardening", "chess", "marathons", "oslo", "tea"]
KINDS = [("semantic", "fact"), ("semantic", "preference"), ("episodic", "event")]


def _text(user: str, i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"{user} note {i}: about {topic}, detail {i * 7919 % 10007}"


def _fill(service: MemoryService, user: str, count: int) -> None:
    memory = service.long_term(user)
    for start in range(0, count, 1000):
        records = []
        for i in range(start, min(start + 1000, count)):
            memory_type, subtype = KINDS[i % len(KINDS)]
            records.append(memory.new_record(_text(user, i), memory_type, subtype=subtype))
        memory.store_records(records)


def _supersede(service: MemoryService, user: str, pairs: int) -> str:
    """Supersede ``pairs`` memories of ``user`` by others of the same type; returns the id
    of one superseded memory."""
    memory = service.long_term(user)
    records, _ = memory.scroll_records(limit=pairs * 2 * len(KINDS))
    by_type: dict[str, list[Any]] = {}
    for record in records:
        by_type.setdefault(record.memory_type, []).append(record)
    done: list[str] = []
    for same in by_type.values():
        for old, new in zip(same[0::2], same[1::2], strict=False):
            if len(done) < pairs:
                memory.supersede_memory(old.id, by=new)
                done.append(old.id)
    return done[0]


def _paired(calls: dict[str, Callable[[], object]], repeat: int) -> dict[str, dict[str, float]]:
    """Time the ``calls`` in turn, ``repeat`` rounds (after one warm-up round), so all see
    the same load on a shared machine; the stats of each."""
    for fn in calls.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, fn in calls.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: _stats(spent) for name, spent in times.items()}


def _stats(times: list[float]) -> dict[str, float]:
    return {
        "median_ms": statistics.median(times) * 1000,
        "p95_ms": percentile(times, 95) * 1000,
        "runs": len(times),
    }


def _get(origin: str, path: str) -> str:
    parts = urlsplit(origin)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=300)
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read().decode("utf-8")
    conn.close()
    if response.status != 200:
        msg = f"{path}: HTTP {response.status}"
        raise RuntimeError(msg)
    return body


def run(memories: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agentmem-bench-inspector-") as home:
        service = MemoryService.open(home, embedder=HashingEmbedder(DIM), background=False)
        try:
            log(f"writing {memories} memories for {USER!r} and 20 x 100 for others")
            _fill(service, USER, memories)
            for other in range(20):
                _fill(service, f"other{other}", 100)
            store: Any = service.memory_store
            if hasattr(store, "wait_for_index"):  # Qdrant Edge: the index built first
                store.wait_for_index()
                store.optimize()
            old = _supersede(service, USER, memories // 100)
            memory = service.long_term(USER)
            assert memory.count_memories() == memories - memories // 100

            def search() -> object:
                return memory.retrieve_memories("jazz detail 42", 5)

            recall = measure(search, repeat)
            server = service.serve_inspector()
            token = f"token={server.token}"
            first = _get(server.origin, f"/u/{USER}/memories?{token}")
            nxt = re.search(r'href="(/u/heavy/memories\?[^"]*cursor=[^"]*)"', first)
            one = re.search(r'href="(/u/heavy/m/[0-9a-f-]{36})"', first)
            assert nxt is not None
            assert one is not None
            second = nxt.group(1).replace("&amp;", "&") + f"&{token}"
            assert "page 2" in _get(server.origin, second)
            pages = {
                "memories, page 1 of 50": f"/u/{USER}/memories?{token}",
                "memories, page 2 (cursor)": second,
                "memories, filtered by subtype": f"/u/{USER}/memories?subtype=fact&{token}",
                "user overview": f"/u/{USER}?{token}",
                "search, explained": f"/u/{USER}/search?q=jazz+detail+42&{token}",
                "one memory": f"{one.group(1)}?{token}",
                "one superseded memory (2 versions)": f"/u/{USER}/m/{old}?{token}",
                "forgetting (all memories)": f"/u/{USER}/forgetting?{token}",
            }
            rows: list[dict[str, Any]] = [
                {"what": "plain recall (baseline)", **recall, "x recall": 1.0}
            ]
            for name, path in pages.items():
                log(f"timing {name}")
                few = repeat if "all" not in name else max(3, repeat // 6)
                url = urlsplit(path)
                parts = [unquote(p) for p in url.path.split("/") if p]
                query = {k: v for k, v in parse_qsl(url.query) if k != "token"}
                stats = _paired(
                    {
                        "http": lambda path=path: _get(server.origin, path),
                        "built": lambda parts=parts, query=query: server.pages.get(parts, query),
                        "recall": search,
                    },
                    few,
                )
                base = stats["recall"]["median_ms"]
                rows.append(
                    {
                        "what": name,
                        **stats["http"],
                        "recall_median_ms": base,
                        "x recall": stats["http"]["median_ms"] / base,
                        "built_median_ms": stats["built"]["median_ms"],
                        "built x recall": stats["built"]["median_ms"] / base,
                    }
                )
            server.stop()
        finally:
            service.close()
    return {
        "memories": memories,
        "embedder": "tests/fake_embedder.HashingEmbedder(384)",
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "inspector.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    result = run(args.memories, args.repeat)
    # The machine's load (1, 5, 15 min) around the run: ratios measured alternately hold
    # up under load better than absolute times, but not entirely.
    result["load_average"] = {"before": load_before, "after": os.getloadavg()}
    print_table(
        result["rows"],
        [
            "what",
            "median_ms",
            "p95_ms",
            "runs",
            "recall_median_ms",
            "x recall",
            "built_median_ms",
            "built x recall",
        ],
    )
    write_json(args.out, {"environment": environment(), **result})


if __name__ == "__main__":
    main()
