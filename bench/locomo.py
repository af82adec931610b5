"""LoCoMo retrieval quality through agentmem's public long-term API (no LLM needed).

Usage:
    .venv/bin/python bench/locomo.py [--data PATH] [--out bench/results/locomo.json]
        [--modes dense,bm25,hybrid] [--k 1,3,5,10,25,50]
        [--limit-conversations N] [--limit-questions N]
        [--candidates 60] [--importance-weight 0.002] [--recency-weight 0.002]
        [--half-life-days 30] [--duplicate-threshold 0.97|none] [--mmr-lambda none]
        [--now last-session|wall]

Protocol: one ``LongTermMemory`` scope per conversation (all in
one Qdrant Edge store on a temporary directory, real local all-MiniLM-L6-v2 embedder); every
turn is one memory, ``'{speaker} said, "{text}"'`` plus ``' and shared {blip_caption}'``,
written with ``store_records`` in batches, with the session date as ``created_at`` and
``{"dia_id", "session", "date"}`` in the metadata, ``source_message_ids=(dia_id,)``. Each
question with (cleaned) evidence retrieves the top ``max(k)`` once per mode
(``retrieve_memories(..., mode=..., touch=False)``); every cut-off k is scored from that list.

Metrics (``bench/_ir_metrics.py``): ``R_frac@k``, ``R_any@k``, ``R_all@k`` and ``NDCG@k``
(LongMemEval DCG), means per category 1-5 and over 1-4 and 1-5; also the tokens of the
top-k contents (joined by newlines, ``TokenCounter().count_text``, mean per question), search
latency p50/p95 per mode (the query embedding is made once per question beforehand, so
every mode finds it cached; its own latency is reported apart) and ingest throughput.
``--now last-session`` (default) runs each conversation's clock at its last session date, so
recency is measured as if the questions were asked right after the conversation.

The data is CC BY-NC 4.0: evaluation only, never shipped in the wheel.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make `bench` importable

from agentmem.ingest import locomo_records  # noqa: E402
from bench._common import environment, peak_rss_mb, percentile, print_table, write_json  # noqa: E402
from bench._ir_metrics import METRICS, aggregate, score_ranking  # noqa: E402
from bench._locomo_data import (  # noqa: E402
    CleanupStats,
    Conversation,
    load_locomo,
    scope_id,
)

__all__ = ["DEFAULT_DATA", "DRAGON_R_FRAC_AT_10", "main", "run"]

#: LoCoMo's ``data/locomo10.json`` goes here (CC BY-NC 4.0: not shipped; see the README).
DEFAULT_DATA = ROOT / "bench" / "data" / "locomo10.json"
LOCOMO_SOURCE = "https://github.com/snap-research/locomo (data/locomo10.json, CC BY-NC 4.0)"
DEFAULT_OUT = ROOT / "bench" / "results" / "locomo.json"
#: LoCoMo paper, Table 3: DRAGON turn-level R_frac@10 over all questions of the full set.
DRAGON_R_FRAC_AT_10 = 0.662
_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)


def _ints(text: str) -> list[int]:
    values = sorted({int(v) for v in text.split(",") if v.strip()})
    if not values or values[0] < 1:
        msg = f"expected comma-separated positive integers, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return values


def _optional_float(text: str) -> float | None:
    return None if text.lower() in ("none", "off", "") else float(text)


def _ranking(args: argparse.Namespace) -> Any:
    from agentmem.long_term.ranking import RankingConfig

    return RankingConfig(
        candidates=args.candidates,
        importance_weight=args.importance_weight,
        recency_weight=args.recency_weight,
        half_life_days=args.half_life_days,
        duplicate_threshold=args.duplicate_threshold,
        mmr_lambda=args.mmr_lambda,
    )


def _ingest(memory: Any, conv: Conversation, batch_size: int) -> tuple[int, float]:
    # The library's own LoCoMo write path (agentmem.ingest), as `agentmem ingest` uses it.
    records = locomo_records(memory, list(conv.turns))
    start = time.perf_counter()
    for i in range(0, len(records), batch_size):
        memory.store_records(records[i : i + batch_size])
    return len(records), time.perf_counter() - start


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark described by parsed ``args``; returns the JSON report."""
    from agentmem.embeddings import default_embedder
    from agentmem.long_term.memory import LongTermMemory
    from agentmem.long_term.qdrant_edge import QdrantEdgeStore
    from agentmem.tokens import TokenCounter

    conversations, stats = load_locomo(args.data)
    if args.limit_conversations:
        conversations = conversations[: args.limit_conversations]
    _print_cleanup(stats)
    ranking = _ranking(args)
    counter = TokenCounter()
    embedder = default_embedder()
    embedder.embed_query("warm up the model")  # load it outside the timings
    ks: list[int] = args.k
    top = max(ks)
    scored: dict[str, list[tuple[int, dict[str, float]]]] = {m: [] for m in args.modes}
    latency: dict[str, list[float]] = {m: [] for m in args.modes}
    tokens: dict[str, dict[int, list[int]]] = {m: {k: [] for k in ks} for m in args.modes}
    query_embed: list[float] = []
    ingested, ingest_s, skipped = 0, 0.0, 0
    with tempfile.TemporaryDirectory(prefix="agentmem-locomo-") as tmp:
        store = QdrantEdgeStore(Path(tmp) / "long_term", dimension=embedder.dimension)
        try:
            for conv in conversations:
                dates = [t.date for t in conv.turns if t.date is not None]
                last = max(dates) if dates else _EPOCH
                clock: Callable[[], datetime] | None = (
                    (lambda last=last: last) if args.now == "last-session" else None
                )
                memory = LongTermMemory(
                    store=store,
                    embedder=embedder,
                    user_id=scope_id(conv.sample_id),
                    ranking=ranking,
                    clock=clock,
                )
                n, seconds = _ingest(memory, conv, args.batch_size)
                ingested += n
                ingest_s += seconds
                questions = [q for q in conv.questions if q.evidence]
                skipped += len(conv.questions) - len(questions)
                if args.limit_questions:
                    questions = questions[: args.limit_questions]
                for q in questions:
                    # Embed the query once outside the timings: every mode then finds it in
                    # the embedder's cache, and embedding is reported on its own.
                    start = time.perf_counter()
                    embedder.embed_query(q.question)
                    query_embed.append(time.perf_counter() - start)
                    for mode in args.modes:
                        start = time.perf_counter()
                        hits = memory.retrieve_memories(
                            q.question, top_k=top, mode=mode, touch=False
                        )
                        latency[mode].append(time.perf_counter() - start)
                        items = [set(h.record.source_message_ids) for h in hits]
                        scored[mode].append((q.category, score_ranking(items, q.evidence, ks=ks)))
                        contents = [h.record.content for h in hits]
                        for k in ks:
                            tokens[mode][k].append(counter.count_text("\n".join(contents[:k])))
                print(
                    f"{conv.sample_id}: {n} turns ingested in {seconds:.1f} s, "
                    f"{len(questions)} questions scored",
                    flush=True,
                )
        finally:
            store.close()
    results = {mode: aggregate(rows) for mode, rows in scored.items()}
    return {
        "results": results,
        "tokens": {m: {f"@{k}": _mean(v) for k, v in per.items()} for m, per in tokens.items()},
        "latency": {m: _latency(v) for m, v in latency.items()},
        "query_embedding": _latency(query_embed),
        "ingest": {
            "memories": ingested,
            "seconds": ingest_s,
            "memories_per_s": ingested / ingest_s if ingest_s else None,
            "batch_size": args.batch_size,
        },
        "cleanup": {**stats.as_dict(), "questions_skipped_without_evidence": skipped},
        "anchors": {"DRAGON_R_frac@10": DRAGON_R_FRAC_AT_10, "BM25_whitespace_R_frac@10": 0.410},
        "claims": _claims(results),
        "config": {
            "data": str(args.data),
            "conversations": len(conversations),
            "modes": list(args.modes),
            "k": ks,
            "limit_questions": args.limit_questions,
            "ranking": {
                "candidates": ranking.candidates,
                "importance_weight": ranking.importance_weight,
                "recency_weight": ranking.recency_weight,
                "half_life_days": ranking.half_life_days,
                "duplicate_threshold": ranking.duplicate_threshold,
                "mmr_lambda": ranking.mmr_lambda,
                "now": args.now,
            },
            "embedder": embedder.model_name,
            "store": "QdrantEdgeStore (temporary directory)",
            "environment": environment(),
        },
        "peak_rss_mb": peak_rss_mb(),
    }


def _latency(seconds: Sequence[float]) -> dict[str, float | int | None]:
    return {
        "p50_ms": percentile(seconds, 50) * 1000 if seconds else None,
        "p95_ms": percentile(seconds, 95) * 1000 if seconds else None,
        "calls": len(seconds),
    }


def _claims(results: dict[str, dict[str, dict[str, float]]]) -> dict[str, bool | None]:
    def value(mode: str) -> float | None:
        return results.get(mode, {}).get("1-5", {}).get("R_frac@10")

    hybrid = value("hybrid")
    out: dict[str, bool | None] = {
        "hybrid_R_frac@10_beats_DRAGON": None if hybrid is None else hybrid > DRAGON_R_FRAC_AT_10
    }
    for other in ("dense", "bm25"):
        theirs = value(other)
        out[f"hybrid_R_frac@10_beats_{other}"] = (
            None if hybrid is None or theirs is None else hybrid > theirs
        )
    return out


def _print_cleanup(stats: CleanupStats) -> None:
    info = stats.as_dict()
    fixes = ", ".join(f"{k}={v}" for k, v in sorted(stats.changes.items())) or "none"
    print(
        f"loaded {info['questions']} questions: {info['questions_without_evidence']} without "
        f"evidence, {info['questions_emptied_by_cleanup']} emptied by clean-up (skipped); "
        f"{info['evidence_strings']} evidence strings -> {info['evidence_ids_after_cleanup']} "
        f"ids; changes: {fixes}",
        flush=True,
    )


def _print_report(report: dict[str, Any], ks: Sequence[int]) -> None:
    results = report["results"]
    for metric in METRICS:
        print(f"\n{metric}@k (mean over questions)")
        rows = [
            {"mode": mode, "group": group, "n": int(vals["n"])}
            | {f"@{k}": vals[f"{metric}@{k}"] for k in ks}
            for mode, groups in results.items()
            for group, vals in groups.items()
        ]
        print_table(rows, ["mode", "group", "n", *(f"@{k}" for k in ks)])
    print("\nContext tokens of the top-k contents (mean per question)")
    rows = [{"mode": m} | per for m, per in report["tokens"].items()]
    print_table(rows, ["mode", *(f"@{k}" for k in ks)])
    print("\nSearch latency and ingest")
    rows = [{"mode": m} | lat for m, lat in report["latency"].items()]
    rows.append({"mode": "(query embedding)"} | report["query_embedding"])
    print_table(rows, ["mode", "p50_ms", "p95_ms", "calls"])
    ing = report["ingest"]
    print(
        f"ingest: {ing['memories']} memories in {ing['seconds']:.1f} s "
        f"({ing['memories_per_s'] or 0:.0f}/s, batches of {ing['batch_size']}); "
        f"peak RSS {report['peak_rss_mb']:.0f} MiB"
    )
    print(f"claims (R_frac@10 over 1-5; DRAGON {DRAGON_R_FRAC_AT_10}): {report['claims']}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help=f"LoCoMo-format JSON (default: bench/data/locomo10.json, from {LOCOMO_SOURCE})",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--modes",
        type=lambda s: [m.strip() for m in s.split(",") if m.strip()],
        default=["dense", "bm25", "hybrid"],
    )
    parser.add_argument("--k", type=_ints, default=[1, 3, 5, 10, 25, 50])
    parser.add_argument("--limit-conversations", type=int, default=0)
    parser.add_argument(
        "--limit-questions", type=int, default=0, help="first N questions per conversation"
    )
    parser.add_argument("--batch-size", type=int, default=256)
    ranking = parser.add_argument_group("ranking (RankingConfig)")
    ranking.add_argument("--candidates", "--rrf-candidates", type=int, default=60)
    ranking.add_argument("--importance-weight", type=float, default=0.002)
    ranking.add_argument("--recency-weight", type=float, default=0.002)
    ranking.add_argument("--half-life-days", type=float, default=30.0)
    ranking.add_argument("--duplicate-threshold", type=_optional_float, default=0.97)
    ranking.add_argument("--mmr-lambda", type=_optional_float, default=None)
    ranking.add_argument("--now", choices=("last-session", "wall"), default="last-session")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    unknown = [m for m in args.modes if m not in ("dense", "bm25", "hybrid")]
    if unknown:
        print(f"unknown mode(s) {unknown}; choose from dense, bm25, hybrid", file=sys.stderr)
        return 2
    if not args.data.is_file():
        print(
            f"no data file at {args.data}: download it from {LOCOMO_SOURCE} to "
            f"{DEFAULT_DATA}, or pass --data PATH",
            file=sys.stderr,
        )
        return 2
    report = run(args)
    _print_report(report, args.k)
    write_json(args.out, report)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
