"""The local model's forward pass, traced vs eager, alone and beside busy Python threads.

Usage:
    .venv/bin/python bench/traced_forward.py [--queries 40] [--busy 0,1,3] [--out FILE.json]

Two ``SentenceTransformerEmbedder`` of all-MiniLM-L6-v2 in one process: ``traced`` (the
default: the forward pass as one TorchScript call, :mod:`agentmem.embeddings.traced`) and
``eager`` (``trace=False``: sentence-transformers' ``encode``). For each number of ``--busy``
threads that run pure Python meanwhile (what a service's request threads do between their
I/O), each side embeds ``--queries`` new questions one at a time, the sides alternating;
reported: the query p50/p95 per side and the eager/traced ratio of the p50, measured in the
same run. Also a batch of 64 sentences (sentences/s, no busy thread) and the largest
difference between the two sides' vectors. No timed assertion: this prints numbers.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make `bench` importable

from agentmem.embeddings import SentenceTransformerEmbedder  # noqa: E402
from bench._common import environment, percentile, print_table, write_json  # noqa: E402

__all__ = ["main"]


def _busy(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(1000):
            x += 1


def _latencies(emb: SentenceTransformerEmbedder, texts: list[str]) -> list[float]:
    out = []
    for text in texts:
        start = time.perf_counter()
        emb.embed_query(text)
        out.append((time.perf_counter() - start) * 1000)
    return out


def run(queries: int, busy_counts: list[int]) -> dict[str, Any]:
    """Measure both sides (see the module docs)."""
    sides = {
        "traced": SentenceTransformerEmbedder(),
        "eager": SentenceTransformerEmbedder(trace=False),
    }
    for emb in sides.values():
        emb.load()
        emb.embed_query("warm up")
    rows = []
    for busy in busy_counts:
        stop = threading.Event()
        threads = [threading.Thread(target=_busy, args=(stop,), daemon=True) for _ in range(busy)]
        for t in threads:
            t.start()
        times: dict[str, list[float]] = {name: [] for name in sides}
        try:
            for q in range(queries):  # alternating, so a change of load reaches both
                for name, emb in sides.items():
                    text = f"{name} {busy} {q}: what did I say about the trip to Oslo?"
                    times[name] += _latencies(emb, [text])
        finally:
            stop.set()
            for t in threads:
                t.join()
        p50 = {name: percentile(ms, 50) for name, ms in times.items()}
        for name, ms in times.items():
            rows.append(
                {
                    "busy threads": busy,
                    "side": name,
                    "p50 ms": p50[name],
                    "p95 ms": percentile(ms, 95),
                    "eager / traced p50": p50["eager"] / p50["traced"],
                }
            )
    texts = [f"sentence {i} about the garden, the budget and the trip" for i in range(64)]
    batch = {}
    vectors = {}
    for name, emb in sides.items():
        start = time.perf_counter()
        vectors[name] = np.asarray(emb.embed_documents(texts))
        batch[name] = len(texts) / (time.perf_counter() - start)
    return {
        "rows": rows,
        "batch of 64, sentences/s": batch,
        "max abs difference": float(np.abs(vectors["traced"] - vectors["eager"]).max()),
        "traced": sides["traced"]._traced is not None,
    }


def main(argv: list[str] | None = None) -> int:
    """Run; print the table; write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--busy", default="0,1,3")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "traced_forward.json"))
    args = parser.parse_args(argv)
    report = run(args.queries, [int(b) for b in args.busy.split(",")])
    print_table(report["rows"], list(report["rows"][0]))
    print(f"batch of 64, sentences/s: {report['batch of 64, sentences/s']}")
    print(f"max abs difference of the vectors: {report['max abs difference']:.2e}")
    write_json(args.out, {"environment": environment(), **report})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
