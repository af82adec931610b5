"""LoCoMo retrieval quality through agentmem's public long-term API (no LLM needed).

Usage:
    .venv/bin/python bench/locomo.py [--data PATH] [--out bench/results/locomo.json]
        [--modes dense,bm25,hybrid] [--k 1,3,5,10,25,50]
        [--limit-conversations N] [--limit-questions N] [--context-turns 2]
        [--embedding-cache DIR|none] [--loco]
        [--candidates 60] [--importance-weight 0.002] [--recency-weight 0.002]
        [--half-life-days 30] [--duplicate-threshold 0.97|none] [--mmr-lambda none]
        [--dense-weight W] [--temporal-weight W] [--relative-floor F|none]
        [--min-similarity S|none] [--now last-session|wall]

Protocol: one ``LongTermMemory`` scope per conversation (all in
one Qdrant Edge store on a temporary directory, real local all-MiniLM-L6-v2 embedder); every
turn is one memory, ``'{speaker} said, "{text}"'`` plus ``' and shared {blip_caption}'``,
written with ``store_records`` in batches by the library's LoCoMo write path
(``agentmem.ingest.locomo_records``: session date as ``created_at``, ``dia_id``, session and
speaker in the metadata, ``source_message_ids=(dia_id,)``, the ``--context-turns`` previous
turns of the session as the memory's lexical context). Each question with (cleaned)
evidence retrieves the top ``max(k)`` once per ranking (``retrieve_memories(...,
mode=..., touch=False)``); every cut-off k is scored from that list.

Rankings: ``results`` holds ``dense``, ``bm25`` and ``hybrid`` (the library's defaults, or
the command line's ranking options); ``variants`` holds ``hybrid_no_floor`` (the relevance
floor off: what it costs and saves, also in ``floor``) and ``legacy_rrf`` (agentmem 0.1's
equal-weight RRF of the dense and BM25 lists, on the same index: the latency baseline of
the same run, ``latency_ratio_vs_legacy_rrf``). ``per_conversation`` breaks every ranking down by
conversation. ``--loco`` also scores a grid of ``dense_weight`` x ``temporal_weight`` and
reports leave-one-conversation-out: each conversation scored with the grid point that is
best on the other conversations.

Metrics (``bench/_ir_metrics.py``): ``R_frac@k``, ``R_any@k``, ``R_all@k`` and ``NDCG@k``
(LongMemEval DCG), means per category 1-5 and over 1-4 and 1-5; also the tokens of the
top-k contents (joined by newlines, ``TokenCounter().count_text``, mean per question), search
latency p50/p95 per ranking (the query embedding is made once per question beforehand, so
every ranking finds it cached; its own latency is reported apart) and ingest throughput.
Embeddings are kept across runs in ``--embedding-cache`` (a temporary directory by
default), so a second run measures search, not the model.
``--now last-session`` (default) runs each conversation's clock at its last session date, so
recency is measured as if the questions were asked right after the conversation.

The data is CC BY-NC 4.0: evaluation only, never shipped in the wheel.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make `bench` importable

from agentmem.ingest import CONTEXT_TURNS, locomo_records  # noqa: E402
from bench._common import environment, peak_rss_mb, percentile, print_table, run_on_data  # noqa: E402
from bench._embed_cache import DEFAULT_CACHE_DIR, DiskCachedEmbedder  # noqa: E402
from bench._ir_metrics import METRICS, aggregate, parse_ks, score_ranking  # noqa: E402
from bench._locomo_data import (  # noqa: E402
    CleanupStats,
    Conversation,
    load_locomo,
    scope_id,
)

__all__ = ["DEFAULT_DATA", "DRAGON_R_FRAC_AT_10", "LOCO_GRID", "main", "run"]

#: LoCoMo's ``data/locomo10.json`` goes here (CC BY-NC 4.0: not shipped; see
#: docs/internals/benchmarks.md).
DEFAULT_DATA = ROOT / "bench" / "data" / "locomo10.json"
LOCOMO_SOURCE = "https://github.com/snap-research/locomo (data/locomo10.json, CC BY-NC 4.0)"
DEFAULT_OUT = ROOT / "bench" / "results" / "locomo.json"
#: LoCoMo paper, Table 3: DRAGON turn-level R_frac@10 over all questions of the full set.
DRAGON_R_FRAC_AT_10 = 0.662
_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
MODES = ("dense", "bm25", "hybrid")
#: Parameters chosen on dev, re-chosen by leave-one-conversation-out with ``--loco``.
LOCO_GRID: dict[str, tuple[float, ...]] = {
    "dense_weight": (0.5, 0.7, 1.0, 1.3),
    "temporal_weight": (0.0, 0.15, 0.3, 0.5),
}
#: Second-stage levers (``--levers``, :mod:`agentmem.long_term.expansion`): each family's
#: points; leave-one-conversation-out picks one per held-out conversation among them and
#: plain hybrid (the lever off).
LEVER_GRID: dict[str, tuple[dict[str, Any], ...]] = {
    "links": tuple({"hops": 1, "hop_weight": w} for w in (0.3, 0.5, 0.8)),
    "feedback": tuple({"feedback_weight": w} for w in (0.1, 0.3)),
    "session": ({"session_weight": 0.1},),
    "all": (
        {"hops": 1, "hop_weight": 0.5, "feedback_weight": 0.1, "session_weight": 0.1},
        {"hops": 1, "hop_weight": 0.8, "feedback_weight": 0.3, "session_weight": 0.1},
    ),
}


def _optional_float(text: str) -> float | None:
    return None if text.lower() in ("none", "off", "") else float(text)


def _optional_path(text: str) -> Path | None:
    return None if text.lower() in ("none", "off", "") else Path(text)


def _ranking(args: argparse.Namespace) -> Any:
    from agentmem.long_term.ranking import RankingConfig

    return RankingConfig(
        candidates=args.candidates,
        importance_weight=args.importance_weight,
        recency_weight=args.recency_weight,
        half_life_days=args.half_life_days,
        duplicate_threshold=args.duplicate_threshold,
        mmr_lambda=args.mmr_lambda,
        dense_weight=args.dense_weight,
        temporal_weight=args.temporal_weight,
        relative_floor=args.relative_floor,
        min_similarity=args.min_similarity,
    )


def _lever_variants() -> dict[str, tuple[str, Any]]:
    """``lever:<family>:<point>`` -> (hybrid, ExpansionConfig) of every point of
    :data:`LEVER_GRID`, all with entity links written (``link=True``)."""
    from agentmem.long_term.expansion import ExpansionConfig

    out: dict[str, tuple[str, Any]] = {}
    for family, points in LEVER_GRID.items():
        for point in points:
            label = ",".join(f"{k}={v}" for k, v in point.items())
            out[f"lever:{family}:{label}"] = ("hybrid", ExpansionConfig(link=True, **point))
    return out


def _variants(args: argparse.Namespace, ranking: Any) -> dict[str, tuple[str, Any]]:
    """Name -> (mode, RankingConfig) of every ranking scored in this run.

    ``dense``, ``bm25`` and ``hybrid`` use the library's defaults (or the command line's);
    ``hybrid_no_floor`` is hybrid with the relevance floor off (what the floor costs and
    saves); ``legacy_rrf`` is agentmem 0.1's hybrid ranking (Qdrant RRF, equal weights) on
    the same index, the latency baseline of the same run; ``loco:...`` are the grid of
    ``--loco``.
    """
    out: dict[str, tuple[str, Any]] = {m: (m, ranking) for m in args.modes}
    if "hybrid" in args.modes:
        no_floor = dataclasses.replace(ranking, relative_floor=None, min_similarity=None)
        out["hybrid_no_floor"] = ("hybrid", no_floor)
        out["legacy_rrf"] = ("hybrid", dataclasses.replace(ranking, fusion="rrf"))
        if args.loco:
            names = list(LOCO_GRID)
            for values in itertools.product(*(LOCO_GRID[n] for n in names)):
                params = dict(zip(names, values, strict=True))
                label = "loco:" + ",".join(f"{n}={v}" for n, v in params.items())
                out[label] = ("hybrid", dataclasses.replace(ranking, **params))
    return out


def _expansions(args: argparse.Namespace) -> dict[str, Any]:
    """Variant name -> ExpansionConfig (the lever variants of ``--levers``)."""
    return {name: config for name, (_, config) in _lever_variants().items()} if args.levers else {}


def _ingest(
    memory: Any, conv: Conversation, batch_size: int, context_turns: int
) -> tuple[int, float]:
    # The library's own LoCoMo write path (agentmem.ingest), as `agentmem ingest` uses it.
    records = locomo_records(memory, list(conv.turns), context_turns=context_turns)
    start = time.perf_counter()
    for i in range(0, len(records), batch_size):
        memory.store_records(records[i : i + batch_size])
    return len(records), time.perf_counter() - start


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark described by parsed ``args``; returns the JSON report."""
    from agentmem.embeddings import CachedEmbedder, default_embedder
    from agentmem.long_term.memory import LongTermMemory
    from agentmem.stores.qdrant.edge import QdrantEdgeStore
    from agentmem.tokens import TokenCounter

    conversations, stats = load_locomo(args.data)
    if args.limit_conversations:
        conversations = conversations[: args.limit_conversations]
    _print_cleanup(stats)
    ranking = _ranking(args)
    variants = _variants(args, ranking)
    expansions = _expansions(args)
    variants.update(dict.fromkeys(expansions, ("hybrid", ranking)))
    counter = TokenCounter()
    disk: DiskCachedEmbedder | None = None
    if args.embedding_cache is None:
        embedder: Any = default_embedder()
    else:
        disk = DiskCachedEmbedder(default_embedder().inner, args.embedding_cache)
        embedder = CachedEmbedder(disk)
    embedder.embed_query("warm up the model")  # load it outside the timings
    ks: list[int] = args.k
    top = max(ks)
    scored: dict[str, list[tuple[int, dict[str, float]]]] = {v: [] for v in variants}
    per_conv: dict[str, dict[str, list[tuple[int, dict[str, float]]]]] = {}
    latency: dict[str, list[float]] = {v: [] for v in variants}
    tokens: dict[str, dict[int, list[int]]] = {v: {k: [] for k in ks} for v in variants}
    returned: dict[str, list[int]] = {v: [] for v in variants}
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
                memories = {
                    name: LongTermMemory(
                        store=store,
                        embedder=embedder,
                        user_id=scope_id(conv.sample_id),
                        ranking=config,
                        expansion=expansions.get(name),
                        clock=clock,
                        on_close=lambda: None,
                    )
                    for name, (_, config) in variants.items()
                }
                # Entity links are payload only: ranking without a lever ignores them.
                first = next(iter(memories.values()))
                if expansions:
                    first = memories[next(iter(expansions))]
                n, seconds = _ingest(first, conv, args.batch_size, args.context_turns)
                ingested += n
                ingest_s += seconds
                questions = [q for q in conv.questions if q.evidence]
                skipped += len(conv.questions) - len(questions)
                if args.limit_questions:
                    questions = questions[: args.limit_questions]
                mine = per_conv.setdefault(conv.sample_id, {v: [] for v in variants})
                for q in questions:
                    # Embed the query once outside the timings: every mode then finds it in
                    # the embedder's cache, and embedding is reported on its own.
                    start = time.perf_counter()
                    embedder.embed_query(q.question)
                    query_embed.append(time.perf_counter() - start)
                    for name, (mode, _) in variants.items():
                        start = time.perf_counter()
                        hits = memories[name].retrieve_memories(
                            q.question, top_k=top, mode=mode, touch=False
                        )
                        latency[name].append(time.perf_counter() - start)
                        items = [set(h.record.source_message_ids) for h in hits]
                        row = (q.category, score_ranking(items, q.evidence, ks=ks))
                        scored[name].append(row)
                        mine[name].append(row)
                        returned[name].append(len(hits))
                        contents = [h.record.content for h in hits]
                        for k in ks:
                            tokens[name][k].append(counter.count_text("\n".join(contents[:k])))
                print(
                    f"{conv.sample_id}: {n} turns ingested in {seconds:.1f} s, "
                    f"{len(questions)} questions scored",
                    flush=True,
                )
                if disk is not None:
                    disk.save()
        finally:
            store.close()
    metric = f"R_frac@{10 if 10 in ks else top}"  # per conversation and LOCO
    everything = {name: aggregate(rows) for name, rows in scored.items()}
    results = {m: everything[m] for m in args.modes}
    by_conv = {
        conv: {name: aggregate(rows) for name, rows in rows_of.items() if rows}
        for conv, rows_of in per_conv.items()
    }
    lat = {name: _latency(v) for name, v in latency.items()}
    return {
        "results": results,
        "variants": {n: everything[n] for n in variants if n not in args.modes},
        "per_conversation_metric": metric,
        "per_conversation": {
            conv: {n: rows for n, rows in per.items() if not n.startswith(("loco:", "lever:"))}
            for conv, per in by_conv.items()
        },
        "loco": _loco(by_conv, "hybrid", metric) if args.loco else None,
        "levers": _lever_loco(per_conv, metric) if args.levers else None,
        "floor": _floor(everything, tokens, returned, ks),
        "tokens": {
            m: {f"@{k}": _mean(v) for k, v in per.items()}
            for m, per in tokens.items()
            if not m.startswith(("loco:", "lever:"))
        },
        "latency": {n: v for n, v in lat.items() if not n.startswith("loco:")},
        "latency_ratio_vs_legacy_rrf": _ratios(lat, "hybrid", "legacy_rrf"),
        "query_embedding": _latency(query_embed)
        | {"disk_cache": None if disk is None else str(disk.path)},
        "ingest": {
            "memories": ingested,
            "seconds": ingest_s,
            "memories_per_s": ingested / ingest_s if ingest_s else None,
            "batch_size": args.batch_size,
            "context_turns": args.context_turns,
        },
        "cleanup": {**stats.as_dict(), "questions_skipped_without_evidence": skipped},
        "anchors": {"DRAGON_R_frac@10": DRAGON_R_FRAC_AT_10, "BM25_whitespace_R_frac@10": 0.410},
        "claims": _claims(results),
        "config": {
            "data": str(args.data),
            "conversations": len(conversations),
            "modes": list(args.modes),
            "variants": list(variants),
            "k": ks,
            "limit_questions": args.limit_questions,
            "ranking": dataclasses.asdict(ranking) | {"now": args.now},
            "embedder": embedder.model_name,
            "store": "QdrantEdgeStore (temporary directory)",
            "environment": environment(),
        },
        "peak_rss_mb": peak_rss_mb(),
    }


def _pooled(groups: dict[str, dict[str, float]], metric: str) -> tuple[float, int]:
    row = groups.get("1-5", {})
    n = int(row.get("n", 0))
    return row.get(metric, 0.0) * n, n


def _loco(
    by_conv: dict[str, dict[str, dict[str, dict[str, float]]]], default: str, metric: str
) -> Any:
    """Leave-one-conversation-out: for each conversation, the grid point with the best
    ``metric`` (1-5) on the others, and what it scores on the held-out one (``default``:
    what the library's defaults score there)."""
    out: dict[str, Any] = {
        "metric": metric,
        "grid": {k: list(v) for k, v in LOCO_GRID.items()},
        "folds": {},
    }
    held_total = default_total = 0.0
    count = 0
    for held in by_conv:
        best_name, best_value = "", -1.0
        for name in by_conv[held]:
            if not name.startswith("loco:"):
                continue
            total = n = 0.0
            for other, per in by_conv.items():
                if other != held:
                    s, k = _pooled(per[name], metric)
                    total, n = total + s, n + k
            value = total / n if n else 0.0
            if value > best_value:
                best_name, best_value = name, value
        held_score, held_n = _pooled(by_conv[held][best_name], metric)
        default_score, _ = _pooled(by_conv[held][default], metric)
        out["folds"][held] = {
            "chosen": best_name.removeprefix("loco:"),
            "train": best_value,
            "held_out": held_score / held_n if held_n else None,
            "default": default_score / held_n if held_n else None,
            "questions": held_n,
        }
        held_total += held_score
        default_total += default_score
        count += held_n
    out["held_out"] = held_total / count if count else None
    out["default"] = default_total / count if count else None
    return out


def _lever_loco(
    per_conv: dict[str, dict[str, list[tuple[int, dict[str, float]]]]], metric: str
) -> dict[str, Any]:
    """Leave-one-conversation-out per lever family: for each held-out conversation, the
    family's point (or plain ``hybrid``, the lever off) with the best ``metric`` over 1-5
    on the other conversations; the held-out questions scored with it, pooled over the
    folds and aggregated per category (so every figure is on conversations not used to
    choose)."""
    out: dict[str, Any] = {}
    convs = list(per_conv)
    for family in LEVER_GRID:
        names = [
            "hybrid",
            *(n for n in next(iter(per_conv.values())) if n.startswith(f"lever:{family}:")),
        ]
        rows: list[tuple[int, dict[str, float]]] = []
        chosen: dict[str, str] = {}
        for held in convs:
            train = {
                name: aggregate([r for c in convs if c != held for r in per_conv[c][name]])
                for name in names
            }
            best = max(names, key=lambda n: (train[n]["1-5"][metric], n == "hybrid"))
            chosen[held] = best.removeprefix(f"lever:{family}:")
            rows.extend(per_conv[held][best])
        out[family] = {"chosen": chosen, "held_out": aggregate(rows)}
    return out


def _floor(
    everything: dict[str, dict[str, dict[str, float]]],
    tokens: dict[str, dict[int, list[int]]],
    returned: dict[str, list[int]],
    ks: Sequence[int],
) -> dict[str, Any] | None:
    """What the relevance floor costs (R_frac) and saves (tokens, items) at each k."""
    if "hybrid" not in everything or "hybrid_no_floor" not in everything:
        return None
    on, off = everything["hybrid"]["1-5"], everything["hybrid_no_floor"]["1-5"]
    out: dict[str, Any] = {}
    for k in ks:
        t_on, t_off = _mean(tokens["hybrid"][k]), _mean(tokens["hybrid_no_floor"][k])
        out[f"@{k}"] = {
            "R_frac_floor": on[f"R_frac@{k}"],
            "R_frac_no_floor": off[f"R_frac@{k}"],
            "R_frac_cost": off[f"R_frac@{k}"] - on[f"R_frac@{k}"],
            "tokens_floor": t_on,
            "tokens_no_floor": t_off,
            "tokens_saved_pct": 100 * (1 - t_on / t_off) if t_off else None,
            "items_floor": _mean([min(n, k) for n in returned["hybrid"]]),
            "items_no_floor": _mean([min(n, k) for n in returned["hybrid_no_floor"]]),
        }
    return out


def _ratios(lat: dict[str, dict[str, Any]], new: str, old: str) -> dict[str, float] | None:
    if new not in lat or old not in lat or not lat[old]["p50_ms"]:
        return None
    return {f"{p}_ratio": lat[new][f"{p}_ms"] / lat[old][f"{p}_ms"] for p in ("p50", "p95")}


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
    metric = report["per_conversation_metric"]
    print(f"\n{metric} (1-5) per conversation")
    names = list(next(iter(report["per_conversation"].values()), {}))
    rows = [
        {"conversation": conv} | {n: per[n]["1-5"][metric] for n in names if n in per}
        for conv, per in report["per_conversation"].items()
    ]
    print_table(rows, ["conversation", *names])
    if report["loco"]:
        loco = report["loco"]
        print(f"\nLeave-one-conversation-out ({loco['metric']}, hybrid; grid {loco['grid']})")
        rows = [{"held out": c} | f for c, f in loco["folds"].items()]
        print_table(rows, ["held out", "chosen", "train", "held_out", "default", "questions"])
        print(f"held-out {loco['held_out']:.4f} (library defaults: {loco['default']:.4f})")
    if report["levers"]:
        print(f"\nLevers, leave-one-conversation-out ({metric} per category)")
        cats = ["1-5", "1", "2", "3", "4", "5"]
        base = report["results"]["hybrid"]
        rows = [{"lever": "hybrid (off)"} | {c: base[c][metric] for c in cats if c in base}]
        for family, lever in report["levers"].items():
            held = lever["held_out"]
            rows.append({"lever": family} | {c: held[c][metric] for c in cats if c in held})
        print_table(rows, ["lever", *cats])
        for family, lever in report["levers"].items():
            print(f"{family}: chosen per held-out conversation {lever['chosen']}")
    print("\nContext tokens of the top-k contents (mean per question)")
    rows = [{"mode": m} | per for m, per in report["tokens"].items()]
    print_table(rows, ["mode", *(f"@{k}" for k in ks)])
    if report["floor"]:
        print("\nRelevance floor: cost in R_frac (1-5) and savings in tokens")
        rows = [{"k": k} | v for k, v in report["floor"].items()]
        cols = ["R_frac_floor", "R_frac_no_floor", "tokens_floor", "tokens_no_floor"]
        print_table(rows, ["k", *cols, "tokens_saved_pct", "items_floor", "items_no_floor"])
    print("\nSearch latency and ingest")
    rows = [{"mode": m} | lat for m, lat in report["latency"].items()]
    rows.append({"mode": "(query embedding)"} | report["query_embedding"])
    print_table(rows, ["mode", "p50_ms", "p95_ms", "calls"])
    print(f"hybrid vs legacy RRF in this run: {report['latency_ratio_vs_legacy_rrf']}")
    ing = report["ingest"]
    print(
        f"ingest: {ing['memories']} memories in {ing['seconds']:.1f} s "
        f"({ing['memories_per_s'] or 0:.0f}/s, batches of {ing['batch_size']}); "
        f"peak RSS {report['peak_rss_mb']:.0f} MiB"
    )
    print(f"claims (R_frac@10 over 1-5; DRAGON {DRAGON_R_FRAC_AT_10}): {report['claims']}")


def _parser() -> argparse.ArgumentParser:
    from agentmem.long_term.ranking import RankingConfig

    defaults = RankingConfig()
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
    parser.add_argument("--k", type=parse_ks, default=[1, 3, 5, 10, 25, 50])
    parser.add_argument("--limit-conversations", type=int, default=0)
    parser.add_argument(
        "--limit-questions", type=int, default=0, help="first N questions per conversation"
    )
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument(
        "--context-turns",
        type=int,
        default=CONTEXT_TURNS,
        help="previous turns of the session indexed with each turn (BM25 side)",
    )
    parser.add_argument(
        "--embedding-cache",
        type=_optional_path,
        default=DEFAULT_CACHE_DIR,
        help="directory of a disk cache of embeddings across runs ('none' to disable)",
    )
    parser.add_argument(
        "--levers",
        action="store_true",
        help="also score the second-stage levers (links, feedback, session; LEVER_GRID) "
        "and report them leave-one-conversation-out per category",
    )
    parser.add_argument(
        "--loco",
        action="store_true",
        help="also score a grid of fusion weights and report leave-one-conversation-out",
    )
    ranking = parser.add_argument_group("ranking (RankingConfig)")
    ranking.add_argument("--candidates", "--rrf-candidates", type=int, default=60)
    ranking.add_argument("--importance-weight", type=float, default=0.002)
    ranking.add_argument("--recency-weight", type=float, default=0.002)
    ranking.add_argument("--half-life-days", type=float, default=30.0)
    ranking.add_argument("--duplicate-threshold", type=_optional_float, default=0.97)
    ranking.add_argument("--mmr-lambda", type=_optional_float, default=None)
    ranking.add_argument("--dense-weight", type=float, default=defaults.dense_weight)
    ranking.add_argument("--temporal-weight", type=float, default=defaults.temporal_weight)
    ranking.add_argument("--relative-floor", type=_optional_float, default=defaults.relative_floor)
    ranking.add_argument("--min-similarity", type=_optional_float, default=defaults.min_similarity)
    ranking.add_argument("--now", choices=("last-session", "wall"), default="last-session")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        print(f"unknown mode(s) {unknown}; choose from dense, bm25, hybrid", file=sys.stderr)
        return 2
    missing = f"download it from {LOCOMO_SOURCE} to {DEFAULT_DATA}, or pass --data PATH"
    return run_on_data(args, run, partial(_print_report, ks=args.k), missing=missing)


if __name__ == "__main__":
    sys.exit(main())
