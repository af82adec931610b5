"""``MemoryManager.build_context`` end to end at 10,000 memories (LLM excluded).

Usage:
    .venv/bin/python bench/build_context.py [--memories 10000] [--queries 100]
        [--max-tokens 2000] [--out FILE.json]

One user gets ``--memories`` synthetic memories (templated facts over many topics, written
through ``LongTermMemory.store_records`` with the real local embedder, on Qdrant Edge under a
temporary home, then ``optimize()``d), a 200-turn conversation and a few working-memory
entries. Then, for ``--queries`` distinct queries:

* ``cold``: ``build_context(query, max_tokens)`` with a query never embedded before
  (embedding included);
* ``warm``: the same query again (its embedding cached), i.e. search + packing;
* ``pack only``: packing the same sections without retrieval, the floor of the cost.

Reported: p50 / p95 per phase, ingest throughput, peak RSS.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, peak_rss_mb, percentile, print_table, write_json

TOPICS = [
    "Python",
    "Rust",
    "gardening",
    "jazz",
    "marathons",
    "Oslo",
    "Kyoto",
    "sourdough",
    "chess",
    "photography",
    "climbing",
    "cello",
    "astronomy",
    "knitting",
    "tax returns",
    "the dentist",
    "birthday plans",
    "a job interview",
    "the car service",
    "a book club",
    "vegan recipes",
]
TEMPLATES = [
    "The user mentioned that {topic} matters to them because of {detail}.",
    "On day {n} the user asked about {topic} and preferred {detail}.",
    "The user's friend {name} recommended {detail} for {topic}.",
    "The user dislikes {detail} when it comes to {topic}.",
    "The user plans to spend {n} hours on {topic} next month with {name}.",
]
DETAILS = [
    "tabs",
    "early mornings",
    "a quiet room",
    "long walks",
    "green tea",
    "spreadsheets",
    "loud music",
    "cheap flights",
    "used gear",
    "handwritten notes",
    "strict schedules",
]
NAMES = ["Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Goran", "Hana", "Ivo", "Jun"]


def _memories(n: int, rng: random.Random) -> list[str]:
    return [
        rng.choice(TEMPLATES).format(
            topic=rng.choice(TOPICS), detail=rng.choice(DETAILS), name=rng.choice(NAMES), n=i
        )
        for i in range(n)
    ]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark; returns the JSON report."""
    from agentmem import MemoryManager
    from agentmem.embeddings import default_embedder

    rng = random.Random(7)
    home = Path(tempfile.mkdtemp(prefix="agentmem-bench-"))
    embedder = default_embedder()
    manager = MemoryManager.open(
        user_id="bench", home=home, embedder=embedder, consolidate_every_tokens=None
    )
    long_term = manager.long_term
    texts = _memories(args.memories, rng)
    start = time.perf_counter()
    for i in range(0, len(texts), 256):
        records = [
            long_term.new_record(t, "semantic", importance=rng.random()) for t in texts[i : i + 256]
        ]
        long_term.store_records(records)
        sys.stderr.write(f"\ringested {min(i + 256, len(texts))}/{len(texts)}")
    ingest_s = time.perf_counter() - start
    sys.stderr.write("\n")
    optimize = getattr(long_term.store, "optimize", None)
    if optimize is not None:
        optimize()
    for turn in range(100):
        manager.process_interaction(
            f"turn {turn}: tell me about {rng.choice(TOPICS)}", "Sure. " * 20
        )
    manager.update_working_memory("goal", "plan the week")
    manager.record_reasoning_step("looked at the calendar")

    queries = [f"what does the user think about {t} and {d}?" for t in TOPICS for d in DETAILS]
    rng.shuffle(queries)
    queries = queries[: args.queries]
    cold, warm, pack = [], [], []
    tokens = []
    for query in queries:
        t0 = time.perf_counter()
        ctx = manager.build_context(query, max_tokens=args.max_tokens)
        cold.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        manager.build_context(query, max_tokens=args.max_tokens)
        warm.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        manager.build_context(query, max_tokens=args.max_tokens, strategy="recent")
        pack.append((time.perf_counter() - t0) * 1000)
        tokens.append(ctx.token_count)
    manager.close()

    rows = [
        {"phase": name, "p50 ms": percentile(v, 50), "p95 ms": percentile(v, 95), "runs": len(v)}
        for name, v in (
            ("cold (query embedded)", cold),
            ("warm (embedding cached)", warm),
            ("recent only (no retrieval)", pack),
        )
    ]
    print_table(rows, ["phase", "p50 ms", "p95 ms", "runs"])
    report = {
        "benchmark": "build_context",
        "config": vars(args),
        "environment": environment(),
        "results": rows,
        "ingest_memories_per_s": args.memories / ingest_s,
        "mean_context_tokens": sum(tokens) / len(tokens),
        "peak_rss_mb": peak_rss_mb(),
    }
    print(
        f"ingest: {report['ingest_memories_per_s']:.0f} memories/s; "
        f"mean context {report['mean_context_tokens']:.0f} tokens; "
        f"peak RSS {report['peak_rss_mb']:.0f} MiB"
    )
    return report


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--max-tokens", type=int, default=2000)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "build_context.json")
    )
    args = parser.parse_args(argv)
    write_json(args.out, run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
