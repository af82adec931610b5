"""Consolidation through conflict resolution: per record against batched, against the model.

Usage:
    .venv/bin/python bench/consolidation.py [--data PATH] [--messages 1000] [--rounds 3]
        [--out bench/results/consolidation.json]

The history: the first ``--messages`` turns of the LoCoMo-format file ``PATH`` (default
``/work/shared/bench-data/locomo/locomo-dev.json`` or ``AGENTMEM_LOCOMO``; LoCoMo is CC BY-NC
4.0, evaluation only), conversations one after another, the first speaker of each as the
user and the other as the assistant; without the file, a synthetic chat. It is consolidated
by :class:`MemoryConsolidator` with no LLM (each conversation round becomes one episodic
memory), in batches of 40 messages, with the real local model (``default_embedder()``:
all-MiniLM-L6-v2 behind its cache, cleared before each run so that every text reaches the
model), into a fresh store: :class:`InMemoryMemoryStore` and :class:`QdrantEdgeStore`.

Each round, on each store, in alternating order (the machine may be shared):

* **per record (before batching)**: the conflict path as it was: for each memory, a dense
  search embedding it as a query, then its own write (embedding it again, as a document);
* **write per record**: :meth:`ConflictResolver.write` called for each memory (a batch of
  one: one model call per memory; the write is answered by the cache);
* **batched**: :meth:`ConflictResolver.write_many` per extracted batch (what the consolidator
  does): one model call per batch, plain additions stored in one write;
* **raw model**: ``embed_documents`` of the same memory texts in one call: the bound.

Reported: records/s of each, ``batched / per record`` (the speed-up), ``x / raw`` (the
share of the model's own throughput each path reaches), the share of each path's time spent
inside the model, and whether every path took the same decisions. The per-record paths do not
write the consolidator's progress state per record as the old consolidator did (an
in-memory session store: negligible).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, log, peak_rss_mb, print_table, write_json

from agentmem._sansio import Program, async_twin, call, locked, twin
from agentmem.controller.conflicts import ConflictDecision, ConflictResolver, _write_key
from agentmem.controller.consolidation import MemoryConsolidator
from agentmem.long_term import LongTermMemory
from agentmem.long_term.records import MemoryRecord
from agentmem.long_term.store import MemoryStore
from agentmem.stores.in_memory import InMemoryMemoryStore
from agentmem.stores.memory import InMemorySessionStore
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from agentmem.types import Message

DEFAULT_DATA = Path("/work/shared/bench-data/locomo/locomo-dev.json")
T0 = datetime(2023, 5, 8, 13, 0, tzinfo=timezone.utc)


# -- the history ---------------------------------------------------------------------------------


def locomo_history(path: Path, limit: int) -> list[Message]:
    """The first ``limit`` turns of ``path`` as messages (first speaker: the user)."""
    from _locomo_data import load_locomo

    conversations, _ = load_locomo(path)
    messages: list[Message] = []
    for conversation in conversations:
        user = conversation.turns[0].speaker if conversation.turns else ""
        for i, turn in enumerate(conversation.turns):
            if len(messages) == limit:
                return messages
            text = turn.text + (f" [shares {turn.blip_caption}]" if turn.blip_caption else "")
            role = "user" if turn.speaker == user else "assistant"
            when = (turn.date or T0) + timedelta(seconds=i)
            messages.append(Message(role=role, content=text, timestamp=when))
    return messages


def synthetic_history(limit: int) -> list[Message]:
    """A chat of ``limit`` messages about varied everyday things (no data file needed)."""
    topics = ["hiking", "painting", "a new job", "my sister", "a trip to Lisbon", "cooking"]
    things = ["on Saturday", "last week", "with friends", "every morning", "since May"]
    messages = []
    for i in range(limit):
        topic, when = topics[i % len(topics)], things[(i // len(topics)) % len(things)]
        role = "user" if i % 2 == 0 else "assistant"
        text = f"Message {i}: I have been thinking about {topic} {when}, number {i * 7919 % 997}."
        messages.append(Message(role=role, content=text, timestamp=T0 + timedelta(minutes=i)))
    return messages


# -- the paths ---------------------------------------------------------------------------------


class _OneByOne(ConflictResolver):
    """A batch resolved one record after another (the paths before batching)."""

    @twin
    def write_many(
        self, memory: LongTermMemory, records: Sequence[MemoryRecord], *, resumed: bool = False
    ) -> Program[list[ConflictDecision]]:
        decisions = []
        for record in records:
            decisions.append((yield from self._write_one(memory, record, resumed)))
        return decisions

    awrite_many = async_twin(write_many)

    def _write_one(
        self, memory: LongTermMemory, record: MemoryRecord, resumed: bool
    ) -> Program[ConflictDecision]:
        raise NotImplementedError


class PerRecordResolver(_OneByOne):
    """The conflict path before batching: for each memory, a dense search that embeds it as
    a query, the decision, and its own write (which embeds it as a document)."""

    def _write_one(
        self, memory: LongTermMemory, record: MemoryRecord, resumed: bool
    ) -> Program[ConflictDecision]:
        return (yield from locked(_write_key(memory), self._old_write(memory, record)))

    def _old_write(self, memory: LongTermMemory, record: MemoryRecord) -> Program[ConflictDecision]:
        embedder = memory.embedder
        vector = yield from call(embedder.embed_query, embedder.aembed_query, record.content)
        hits = yield from self._search(memory, record, vector)
        decision = self._cheap(record, hits)
        if decision is None:
            judgement = yield from self._judge(record, hits)
            decision = self._decide(record, hits, judgement)
        yield from self._apply(memory, decision)
        return decision


class WritePerRecordResolver(_OneByOne):
    """:meth:`ConflictResolver.write` (a batch of one) for each memory."""

    def _write_one(
        self, memory: LongTermMemory, record: MemoryRecord, resumed: bool
    ) -> Program[ConflictDecision]:
        [decision] = yield from self._write_many(memory, [record], resumed=resumed)
        return decision


PATHS: dict[str, type[ConflictResolver]] = {
    "per record (before)": PerRecordResolver,
    "write per record": WritePerRecordResolver,
    "batched": ConflictResolver,
}


# -- running -----------------------------------------------------------------------------------


class ModelTimer:
    """Time spent inside the model's embed calls (its ``embed_documents``/``embed_query``)."""

    def __init__(self, model: Any) -> None:
        self.model, self.seconds, self.calls = model, 0.0, 0

    def __enter__(self) -> ModelTimer:
        for name in ("embed_documents", "embed_query"):
            setattr(self.model, name, self._timed(getattr(self.model, name)))
        return self

    def __exit__(self, *exc: object) -> None:
        del self.model.embed_documents, self.model.embed_query  # the class's methods again

    def _timed(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return method(*args)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        return timed


def consolidate(
    path: str, make_store: Callable[[Path], MemoryStore], messages: list[Message], cached: Any
) -> dict[str, Any]:
    """One consolidation of ``messages`` into a fresh store through ``path``."""
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(Path(tmp))
        memory = LongTermMemory(store=store, embedder=cached, user_id="bench")
        consolidator = MemoryConsolidator(
            memory, store=InMemorySessionStore(), resolver=PATHS[path]()
        )
        cached.cache_clear()  # every text goes to the model
        with ModelTimer(cached.inner) as model:
            t0 = time.perf_counter()
            report = consolidator.consolidate_session(messages, session_id="bench")
            elapsed = time.perf_counter() - t0
        stored = memory.count_memories()
        memory.close()
    assert report.error is None
    assert report.messages == len(messages)
    return {
        "seconds": elapsed,
        "model_seconds": model.seconds,
        "model_calls": model.calls,
        "records": len(report.decisions),
        "stored": stored,
        "decisions": [
            (d.action, d.existing.content if d.existing else None) for d in report.decisions
        ],
    }


def memory_texts(messages: list[Message]) -> list[str]:
    """The memories' texts, as the consolidator builds them (its rounds, per batch)."""
    c = MemoryConsolidator.__new__(MemoryConsolidator)
    c.batch_messages = 40
    return [item.content for b in c._batches(messages) for item in c._rounds(b).memories]


STORES: dict[str, Callable[[Path], MemoryStore]] = {
    "in-memory": lambda _: InMemoryMemoryStore(dimension=384),
    "qdrant-edge": lambda tmp: QdrantEdgeStore(tmp / "long_term", dimension=384),
}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table; write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("AGENTMEM_LOCOMO") or (DEFAULT_DATA if DEFAULT_DATA.exists() else None)
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="bench/results/consolidation.json")
    args = parser.parse_args(argv)
    from agentmem.embeddings.local import default_embedder

    if args.data is not None:
        messages, source = locomo_history(Path(args.data), args.messages), Path(args.data).name
    else:
        messages, source = synthetic_history(args.messages), "synthetic"
    texts = memory_texts(messages)
    log(f"{len(messages)} messages from {source}: {len(texts)} memories")
    cached = default_embedder()
    model = cached.inner
    t0 = time.perf_counter()
    model.load()
    load_s = time.perf_counter() - t0
    model.embed_documents(texts[:64])  # warm-up
    model.embed_query(texts[0])

    runs: list[dict[str, Any]] = []
    for round_ in range(1, args.rounds + 1):
        order = [*PATHS, "raw model"]
        if round_ % 2 == 0:
            order.reverse()
        for store_name, make_store in STORES.items():
            for path in order:
                if path == "raw model":
                    t = time.perf_counter()
                    model.embed_documents(texts)
                    run = {"seconds": time.perf_counter() - t, "records": len(texts)}
                    run["model_seconds"], run["model_calls"] = run["seconds"], 1
                else:
                    run = consolidate(path, make_store, messages, cached)
                run.update(round=round_, store=store_name, path=path)
                runs.append(run)
                log(f"round {round_} {store_name:<12} {path:<20} {run['seconds']:7.2f} s")
        # written after every round: a slow machine still leaves the rounds it finished
        rows, summary = summarize(runs)
        result = {
            "environment": environment(),
            "source": source,
            "messages": len(messages),
            "memories": len(texts),
            "rounds": round_,
            "rows": rows,
            "summary": summary,
            "runs": [{k: v for k, v in r.items() if k != "decisions"} for r in runs],
            "model_load_s": load_s,
            "peak_rss_mb": peak_rss_mb(),
            "load_average": os.getloadavg(),
        }
        write_json(args.out, result)

    columns = [
        "store",
        "path",
        "records",
        "best s",
        "records/s",
        "x / raw",
        "model share",
        "model calls",
    ]
    print_table(rows, columns)
    for store_name, ratios in summary.items():
        print(f"\n{store_name}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in ratios.items()))
    rss = peak_rss_mb()
    print(f"\nmodel load (once, not in the rates): {load_s:.2f} s")
    print(f"peak RSS: {rss:,.0f} MiB (cpus: {os.cpu_count()}, load average {os.getloadavg()})")
    return 0


def summarize(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The best run of each path on each store, and the ratios between them."""
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    for store_name in STORES:
        best = {
            path: min(
                (r for r in runs if r["store"] == store_name and r["path"] == path),
                key=lambda r: r["seconds"],
            )
            for path in [*PATHS, "raw model"]
        }
        raw_s = best["raw model"]["seconds"]
        for path, run in best.items():
            rows.append(
                {
                    "store": store_name,
                    "path": path,
                    "records": run["records"],
                    "best s": run["seconds"],
                    "records/s": run["records"] / run["seconds"],
                    "x / raw": raw_s / run["seconds"],
                    "model share": run["model_seconds"] / run["seconds"],
                    "model calls": run["model_calls"],
                }
            )
        decisions = {
            tuple(map(tuple, r["decisions"]))
            for r in runs
            if r["store"] == store_name and "decisions" in r
        }
        summary[store_name] = {
            "batched / per record (before)": best["per record (before)"]["seconds"]
            / best["batched"]["seconds"],
            "batched / write per record": best["write per record"]["seconds"]
            / best["batched"]["seconds"],
            "batched / raw model": raw_s / best["batched"]["seconds"],
            "per record (before) / raw model": raw_s / best["per record (before)"]["seconds"],
            "same decisions on every path": len(decisions) == 1,
            "stored": best["batched"]["stored"],
        }
    return rows, summary


def _fmt(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    raise SystemExit(main())
