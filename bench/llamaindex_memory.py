"""``AgentMemory.get()`` side by side with LlamaIndex's ``ChatMemoryBuffer.get()`` and
``Memory.get()``, same conversation, same token budget.

Usage:
    .venv/bin/python bench/llamaindex_memory.py [--sizes 1000,10000] [--budget 2000]
        [--repeat 20] [--cmb-max-seconds 400] [--out bench/results/llamaindex_memory.json]

Per history length, the deterministic synthetic chat of ``bench/short_term.py``
(:func:`bench._chats.build_conversation`: mixed text, CJK, code, named users, tool-call
rounds) is put into every memory, then ``get()`` is timed:

* ``AgentMemory (history)``: ``AgentMemory.from_defaults(token_limit=budget, top_k=0)`` on a
  temp home (SQLite log, Qdrant Edge): the budgeted view, converted to ``ChatMessage``;
* ``AgentMemory (history + recall)``: the same memory with ``top_k=5`` after one episodic
  memory per conversation round was stored in its long-term memory (as consolidation
  without an LLM writes them; stored in batches, conflict checks skipped), embedded with the
  local all-MiniLM-L6-v2 (``--embedder hashing`` for a fast deterministic stand-in). Each
  ``get()`` embeds the latest user message, searches Qdrant (hybrid dense + BM25), records
  the access, and packs memories and history into the same budget;
* ``llamaindex Memory``: ``Memory.from_defaults(token_limit=budget,
  chat_history_token_ratio=1.0)`` filled in chunks of 20 (as ``bench/short_term.py``);
* ``llamaindex ChatMemoryBuffer``: ``ChatMemoryBuffer.from_defaults(token_limit=budget)``.
  It re-tokenizes the history once per candidate window (quadratic): timed once when a call
  takes over a second, and skipped when the quadratic fit predicts more than
  ``--cmb-max-seconds``.

Every returned view is costed with agentmem's exact counter (OpenAI chat format, tool calls
included): ``within budget`` says whether the system kept its promise. ``x ours`` is the
median divided by ``AgentMemory (history)``'s at the same size, measured in the same run.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make `bench` importable

from agentmem import Message, TokenCounter  # noqa: E402
from bench._chats import build_conversation, from_llamaindex, to_llamaindex  # noqa: E402
from bench._common import (  # noqa: E402
    environment,
    log,
    measure,
    parse_sizes,
    peak_rss_mb,
    print_latency_table,
    print_table,
    result_value,
    write_json,
)
from bench.short_term import (  # noqa: E402
    offline_tiktoken,
    put_in_chunks,
    run_chat_memory_buffer,
    run_llamaindex_memory,
    view_cost,
)

__all__ = ["main", "run"]

MODEL = "gpt-4o"
OURS = "AgentMemory (history)"
OURS_RECALL = "AgentMemory (history + recall)"
LIM = "llamaindex Memory"
CMB = "llamaindex ChatMemoryBuffer"


def _embedder(kind: str) -> Any:
    if kind == "hashing":
        from tests.fakes import HashingEmbedder

        return HashingEmbedder(256)
    from agentmem.embeddings import default_embedder

    return default_embedder()


def _run_agent_memory(
    conv: list[Message], budget: int, counter: TokenCounter, repeat: int, embedder: Any
) -> dict[str, dict[str, Any]]:
    from llamaindex_agentmem import AgentMemory

    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as home:
        memory = AgentMemory.from_defaults(
            user_id="bench",
            session_id="s1",
            home=home,
            embed_model=embedder,
            model=MODEL,
            token_limit=budget,
            top_k=0,
            consolidate_every_tokens=None,
        )
        try:
            add_s = put_in_chunks(memory, to_llamaindex(conv))
            stats = measure(memory.get, repeat=repeat, warmup=5)
            view = from_llamaindex(memory.get())
            rows[OURS] = {
                **stats,
                "add_msgs_per_s": len(conv) / add_s,
                **view_cost(counter, view, budget),
            }
            log(f"[{len(conv):,}] filling long-term memory (one episode per round) ...")
            start = time.perf_counter()
            written = _fill_long_term(memory, conv)
            consolidate_s = time.perf_counter() - start
            memory.top_k = 5
            stats = measure(memory.get, repeat=max(3, repeat // 2), warmup=2)
            view = from_llamaindex(memory.get())
            rows[OURS_RECALL] = {
                **stats,
                "memories_stored": written,
                "consolidate_s": consolidate_s,
                **view_cost(counter, view, budget),
            }
        finally:
            memory.close()
    return rows


def _fill_long_term(memory: Any, conv: list[Message]) -> int:
    """Store each user round as an episodic memory, in batches (what consolidation without
    an LLM writes, minus its per-record conflict checks, which are not what we time)."""
    long_term = memory.manager.long_term
    records: list[Any] = []
    round_: list[str] = []
    for m in [*conv, Message(role="user", content="end")]:
        if m.role == "user" and round_:
            text = "\n".join(round_)[:2000]
            records.append(long_term.new_record(text, "episodic", subtype="event"))
            round_ = []
        if m.role in ("user", "assistant") and m.content.strip():
            round_.append(f"{m.role}: {m.content}")
    for i in range(0, len(records), 256):
        long_term.store_records(records[i : i + 256])
    return len(records)


def run(
    sizes: Sequence[int],
    *,
    budget: int,
    repeat: int,
    cmb_max_seconds: float,
    embedder: str,
    seed: int = 0,
) -> dict[str, Any]:
    """Run the benchmark at each size and return the JSON-ready report."""
    counter = TokenCounter(model=MODEL)
    emb = _embedder(embedder)
    results: list[dict[str, Any]] = []
    cmb_history: list[tuple[int, float, int]] = []
    for n in sorted(sizes):
        log(f"[{n:,} messages] building the conversation ...")
        conv = build_conversation(n, seed=seed)
        log(f"[{n:,}] AgentMemory ...")
        rows = _run_agent_memory(conv, budget, counter, repeat * 10, emb)
        log(f"[{n:,}] {LIM} ...")
        rows[LIM], _ = run_llamaindex_memory(conv, budget, counter, repeat)
        log(f"[{n:,}] {CMB} ...")
        rows[CMB], _ = run_chat_memory_buffer(
            conv, budget, counter, repeat, cmb_history, cap_seconds=cmb_max_seconds
        )
        ours = rows[OURS]["median_ms"]
        for system, row in rows.items():
            row = {"size": n, "system": system, "status": "ok", **row}
            if row["status"] == "ok":
                row["ratio_vs_ours"] = row["median_ms"] / ours
            results.append(row)
        del conv
        gc.collect()
    return {
        "benchmark": "llamaindex_memory",
        "config": {
            "sizes": sorted(sizes),
            "budget": budget,
            "repeat_peers": repeat,
            "repeat_ours": repeat * 10,
            "seed": seed,
            "model": MODEL,
            "encoding": counter.encoding_name,
            "embedder": embedder,
            "chat_memory_buffer_max_s": cmb_max_seconds,
        },
        "environment": environment(),
        "results": results,
        "peak_rss_mb": peak_rss_mb(),
    }


def _print_report(report: dict[str, Any]) -> None:
    cfg = report["config"]
    print(f"\nget() latency, budget {cfg['budget']:,} tokens ({cfg['encoding']})\n")
    print_latency_table(report["results"], flag_missing_system=False)
    fills = [
        {
            "size": r["size"],
            "AgentMemory put msgs/s": r["add_msgs_per_s"],
            "episodes stored": result_value(
                report["results"], size=r["size"], system=OURS_RECALL, key="memories_stored"
            ),
            "fill s": result_value(
                report["results"], size=r["size"], system=OURS_RECALL, key="consolidate_s"
            ),
        }
        for r in report["results"]
        if r["system"] == OURS
    ]
    print()
    print_table(fills, ["size", "AgentMemory put msgs/s", "episodes stored", "fill s"])
    print(f"Peak RSS: {report['peak_rss_mb']:,.0f} MiB")


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=20, help="runs per peer; ours x10")
    parser.add_argument("--cmb-max-seconds", type=float, default=400.0)
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "llamaindex_memory.json"
    )
    args = parser.parse_args(argv)
    sizes = parse_sizes(args.sizes)
    with offline_tiktoken():
        report = run(
            sizes,
            budget=args.budget,
            repeat=args.repeat,
            cmb_max_seconds=args.cmb_max_seconds,
            embedder=args.embedder,
        )
    _print_report(report)
    print(f"wrote {write_json(args.out, report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
