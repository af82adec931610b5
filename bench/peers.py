"""agentmem's long-term retrieval side by side with Mem0, LlamaIndex, LangGraph and rank_bm25.

Usage:
    .venv/bin/python bench/peers.py [--data PATH] [--out bench/results/peers.json]
        [--systems agentmem,agentmem_turn,mem0,llamaindex,langgraph,bm25] [--k 1,3,5,10]
        [--limit-conversations N] [--limit-questions N] [--embedding-cache DIR]

Needs the ``bench`` extra (``pip install -e '.[bench]'``: mem0ai, rank-bm25,
llama-index-vector-stores-qdrant) besides ``[langchain,llamaindex,local,qdrant]``; a peer
whose package is missing is reported as such and skipped.

Protocol (that of ``bench/locomo.py``, same data loading, metrics and memory texts):
one scope per LoCoMo conversation, every turn one memory with the text
``'{speaker} said, "{text}"'`` (+ ``' and shared {blip_caption}'``), written through each
library's normal write path; each question with evidence (stripped of surrounding
whitespace, as Mem0 strips it itself: one dev question ends in a space) retrieves the top ``max(k)``
through the library's public search in its own conversation's scope, and every cut-off k
is scored from that list (``R_frac``, ``R_any``, ``R_all``, ``NDCG``; per category 1-5, over
1-4 and 1-5). The systems (``bench/_peers.py`` says how each is set up):

* ``agentmem``: ``LongTermMemory`` on Qdrant Edge, ``RankingConfig()`` (hybrid), written by
  ``agentmem.ingest.locomo_records`` (its default indexes the two previous turns of the
  session with each turn on the BM25 side); ``agentmem_turn``: the same with the turn alone
  (``context_turns=0``), i.e. exactly the text the peers index;
* ``mem0``: Mem0 ``Memory``, ``add(..., infer=False)`` (no LLM), Qdrant local in memory;
* ``llamaindex``: LlamaIndex ``VectorMemoryBlock`` on Qdrant local in memory;
* ``langgraph``: LangGraph ``InMemoryStore`` with an ``index``;
* ``bm25``: rank_bm25 ``BM25Okapi``, one index per conversation.

Same vectors everywhere: all-MiniLM-L6-v2 vectors of every turn and question are computed
once (agentmem's local embedder through the disk cache ``--embedding-cache``), and every
library embeds through a lookup that returns them and raises on any other text. Search and
ingest timings therefore measure the engines, not the model. Questions are asked of every
system in turn (the order rotates per question), so load on the machine hits all alike.
Latency p50/p95 per system and ingest throughput (turns/s) are reported with their ratios
to ``agentmem`` measured in the same run.

Offline: Mem0's telemetry is switched off (``MEM0_TELEMETRY=False``), its files go to a
temporary ``MEM0_DIR``, and a guard refuses (and counts) every connection or name lookup
that would leave the machine; the report says how many were attempted.

The data is CC BY-NC 4.0: evaluation only, never shipped in the wheel.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make `bench` importable

from agentmem.ingest import CONTEXT_TURNS, turn_text  # noqa: E402
from bench._common import environment, peak_rss_mb, percentile, print_table, run_on_data  # noqa: E402
from bench._embed_cache import DEFAULT_CACHE_DIR, DiskCachedEmbedder  # noqa: E402
from bench._ir_metrics import aggregate, parse_ks, score_ranking  # noqa: E402
from bench._locomo_data import load_locomo, scope_id  # noqa: E402
from bench._peers import PEERS, AgentmemSystem, System, VectorTable  # noqa: E402

__all__ = ["BASELINE", "SYSTEMS", "main", "run"]

DEFAULT_DATA = ROOT / "bench" / "data" / "locomo10.json"
DEFAULT_OUT = ROOT / "bench" / "results" / "peers.json"
BASELINE = "agentmem"
SYSTEMS = ("agentmem", "agentmem_turn", *PEERS)
GROUPS = ("1", "2", "3", "4", "5", "1-4", "1-5")
CATEGORY_NAMES = {
    "1": "multi-hop",
    "2": "temporal",
    "3": "open-domain",
    "4": "single-hop",
    "5": "adversarial",
}


class NetworkGuard:
    """Refuses and counts connections and name lookups beyond this machine.

    Loopback addresses, ``localhost`` and Unix sockets (the event loop's self-pipe) pass.
    """

    def __init__(self) -> None:
        self.attempts: list[str] = []

    def _local(self, address: Any) -> bool:
        if not isinstance(address, tuple):
            return True  # AF_UNIX path
        host = str(address[0])
        return host in ("localhost", "::1", "") or host.startswith("127.")

    @contextmanager
    def active(self) -> Iterator[NetworkGuard]:
        """Install the guard for the duration of the ``with`` block."""
        real_connect = socket.socket.connect
        real_connect_ex = socket.socket.connect_ex
        real_getaddrinfo = socket.getaddrinfo
        guard = self

        def connect(sock: socket.socket, address: Any) -> None:
            guard._check(address)
            real_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            guard._check(address)
            return real_connect_ex(sock, address)

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            guard._check((host, 0))
            return real_getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = connect  # type: ignore[method-assign, assignment]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign, assignment]
        socket.getaddrinfo = getaddrinfo
        try:
            yield self
        finally:
            socket.socket.connect = real_connect  # type: ignore[method-assign]
            socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]
            socket.getaddrinfo = real_getaddrinfo

    def _check(self, address: Any) -> None:
        if self._local(address):
            return
        self.attempts.append(str(address[0]))
        msg = f"bench/peers.py is offline: refused a connection to {address[0]!r}"
        raise OSError(msg)


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown or BASELINE not in names:
        msg = f"systems must include {BASELINE!r} and come from {', '.join(SYSTEMS)}"
        raise argparse.ArgumentTypeError(msg)
    return names


def _make(name: str, table: VectorTable, model: str, tmp: Path) -> System | str:
    """The system called ``name``, or why it cannot run here."""
    if name in ("agentmem", "agentmem_turn"):
        turns = CONTEXT_TURNS if name == "agentmem" else 0
        label = "agentmem (hybrid, defaults)" if turns else "agentmem (hybrid, turn text only)"
        return AgentmemSystem(table, model, context_turns=turns, name=label)
    module, factory = PEERS[name]
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        return f"not installed ({module}): pip install -e '.[bench]'"
    try:
        return factory(table, model, tmp)
    except Exception as exc:  # a peer that cannot start offline is reported, not hidden
        return f"cannot start offline: {type(exc).__name__}: {exc}"


def _latency(seconds: Sequence[float]) -> dict[str, float | None]:
    return {
        "p50_ms": percentile(seconds, 50) * 1000 if seconds else None,
        "p95_ms": percentile(seconds, 95) * 1000 if seconds else None,
    }


def _ratio(value: float | None, base: float | None) -> float | None:
    return None if value is None or not base else value / base


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the comparison described by parsed ``args``; returns the JSON report."""
    from agentmem.embeddings import default_embedder

    conversations, stats = load_locomo(args.data)
    if args.limit_conversations:
        conversations = conversations[: args.limit_conversations]
    questions = {
        c.sample_id: [q for q in c.questions if q.evidence][: args.limit_questions or None]
        for c in conversations
    }
    disk = DiskCachedEmbedder(default_embedder().inner, args.embedding_cache)
    start = time.perf_counter()
    table = VectorTable.build(
        disk,
        [turn_text(t) for c in conversations for t in c.turns],
        [q.question.strip() for qs in questions.values() for q in qs],
    )
    disk.save()
    print(
        f"{len(table)} vectors ready in {time.perf_counter() - start:.1f} s "
        f"({disk.misses} computed, {disk.hits} from {disk.path})",
        flush=True,
    )
    guard = NetworkGuard()
    top = max(args.k)
    with tempfile.TemporaryDirectory(prefix="agentmem-peers-") as tmp_name, guard.active():
        tmp = Path(tmp_name)
        # Mem0 reads these when imported: no telemetry, its files in the temporary directory.
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ["MEM0_DIR"] = str(tmp / "mem0")
        systems: dict[str, System] = {}
        skipped: dict[str, str] = {}
        for name in args.systems:
            made = _make(name, table, disk.model_name, tmp)
            if isinstance(made, str):
                skipped[name] = made
                print(f"{name}: {made}", flush=True)
            else:
                systems[name] = made
        scored: dict[str, list[tuple[int, dict[str, float]]]] = {n: [] for n in systems}
        latency: dict[str, list[float]] = {n: [] for n in systems}
        ingest_s: dict[str, float] = dict.fromkeys(systems, 0.0)
        returned: dict[str, list[int]] = {n: [] for n in systems}
        turns_total = 0
        order = list(systems)
        try:
            for conv in conversations:
                scope = scope_id(conv.sample_id)
                dates = [t.date for t in conv.turns if t.date is not None]
                clock: datetime | None = max(dates) if dates else None
                for name, system in systems.items():
                    began = time.perf_counter()
                    system.ingest(scope, conv.turns, clock)
                    ingest_s[name] += time.perf_counter() - began
                turns_total += len(conv.turns)
                for i, q in enumerate(questions[conv.sample_id]):
                    turn = i % len(order)
                    for name in order[turn:] + order[:turn]:
                        began = time.perf_counter()
                        items = systems[name].search(scope, q.question.strip(), top)
                        latency[name].append(time.perf_counter() - began)
                        scored[name].append(
                            (q.category, score_ranking(items, q.evidence, ks=args.k))
                        )
                        returned[name].append(len(items))
                print(
                    f"{conv.sample_id}: {len(conv.turns)} turns, "
                    f"{len(questions[conv.sample_id])} questions",
                    flush=True,
                )
        finally:
            for system in systems.values():
                system.close()
    base_lat = _latency(latency.get(BASELINE, []))
    base_rate = turns_total / ingest_s[BASELINE] if ingest_s.get(BASELINE) else None
    results: dict[str, Any] = {}
    for name, system in systems.items():
        lat = _latency(latency[name])
        rate = turns_total / ingest_s[name] if ingest_s[name] else None
        results[name] = {
            "label": system.name,
            "versions": system.versions,
            "notes": system.notes,
            "quality": aggregate(scored[name]),
            "search": lat
            | {
                "p50_ratio": _ratio(lat["p50_ms"], base_lat["p50_ms"]),
                "p95_ratio": _ratio(lat["p95_ms"], base_lat["p95_ms"]),
                "calls": len(latency[name]),
                "mean_items_returned": sum(returned[name]) / len(returned[name])
                if returned[name]
                else None,
            },
            "ingest": {
                "turns": turns_total,
                "seconds": ingest_s[name],
                "turns_per_s": rate,
                "ratio": _ratio(rate, base_rate),
            },
        }
    return {
        "results": results,
        "skipped": skipped,
        "network_attempts": guard.attempts,
        "vectors": {
            "model": disk.model_name,
            "texts": len(table),
            "computed": disk.misses,
            "from_disk_cache": disk.hits,
            "lookups": table.lookups,
        },
        "cleanup": stats.as_dict(),
        "config": {
            "data": str(args.data),
            "conversations": len(conversations),
            "questions": sum(len(qs) for qs in questions.values()),
            "k": args.k,
            "limit_questions": args.limit_questions,
            "baseline": BASELINE,
            "clock": "each conversation's last session date (bench/locomo.py --now last-session)",
            "environment": environment(),
        },
        "peak_rss_mb": peak_rss_mb(),
    }


def _print_report(report: dict[str, Any], ks: Sequence[int]) -> None:
    k = 10 if 10 in ks else max(ks)
    results = report["results"]
    for metric in ("R_frac", "R_any", "NDCG"):
        print(f"\n{metric}@{k} per category")
        rows = [
            {"system": name} | {g: r["quality"].get(g, {}).get(f"{metric}@{k}") for g in GROUPS}
            for name, r in results.items()
        ]
        print_table(rows, ["system", *GROUPS])
    print(f"\nSpeed (ratios to {BASELINE}, same run; engine only: vectors are looked up)")
    rows = [
        {
            "system": name,
            "search p50 ms": r["search"]["p50_ms"],
            "p95 ms": r["search"]["p95_ms"],
            "p50 x": r["search"]["p50_ratio"],
            "p95 x": r["search"]["p95_ratio"],
            "ingest turns/s": r["ingest"]["turns_per_s"],
            "ingest x": r["ingest"]["ratio"],
        }
        for name, r in results.items()
    ]
    print_table(
        rows,
        ["system", "search p50 ms", "p95 ms", "p50 x", "p95 x", "ingest turns/s", "ingest x"],
    )
    for name, r in results.items():
        versions = ", ".join(f"{p} {v}" for p, v in r["versions"].items())
        print(f"{name}: {r['label']} [{versions}]; " + "; ".join(r["notes"]))
    for name, why in report["skipped"].items():
        print(f"{name}: SKIPPED, {why}")
    attempts = report["network_attempts"]
    print(f"network: {len(attempts)} attempt(s) to leave the machine {sorted(set(attempts))}")
    print(f"peak RSS {report['peak_rss_mb']:.0f} MiB")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="LoCoMo-format JSON (see bench/locomo.py)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--systems", type=_names, default=list(SYSTEMS))
    parser.add_argument("--k", type=parse_ks, default=[1, 3, 5, 10])
    parser.add_argument("--limit-conversations", type=int, default=0)
    parser.add_argument(
        "--limit-questions", type=int, default=0, help="first N questions per conversation"
    )
    parser.add_argument(
        "--embedding-cache",
        type=Path,
        default=DEFAULT_CACHE_DIR,
        help="directory of the disk cache of embeddings (vectors computed once, kept across runs)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    missing = "see bench/locomo.py, or pass --data"
    return run_on_data(args, run, partial(_print_report, ks=args.k), missing=missing)


if __name__ == "__main__":
    sys.exit(main())
