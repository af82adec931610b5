"""Ingest throughput against the embedding model's own, measured in the same run.

Usage:
    .venv/bin/python bench/ingest.py --data PATH [--rounds 3] [--samples N]
        [--out bench/results/ingest.json]

``PATH`` is a LoCoMo-format file (e.g. LoCoMo's ``data/locomo10.json``; the data is
CC BY-NC 4.0, evaluation only). Each round, in this order:

* **raw model**: ``SentenceTransformerEmbedder().embed_documents(texts)`` on the memory texts
  of every turn (``agentmem.ingest.turn_text``), in one call: the model's own batching and
  length sorting, nothing else; the model is loaded and warmed up before the first round.
* **ingest**: ``agentmem ingest PATH --user bench --home <fresh dir>`` run in-process
  (``agentmem.cli.main``), end to end: reading and checking the file, building the records,
  embedding, BM25, writing into Qdrant Edge, closing the store. It uses the same model
  object (``default_embedder()``, loaded once per process: that one-off load is reported
  apart), with its embedding cache cleared first, so every text goes to the model.

Reported: turns/s of each, ``ingest / raw`` per round and over the best round of each
(the machine may be shared: the two alternate, in alternating order, so both see the same
load), and the share of the ingest's time spent inside the model's ``embed_documents``
(what the rest of the pipeline leaves to the model, whatever the machine's load).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, log, peak_rss_mb, print_table, write_json


def turn_texts(path: Path) -> list[str]:
    """The memory text of every turn of every sample, in file order."""
    from agentmem.ingest import locomo_turns, turn_text

    samples = json.loads(path.read_text(encoding="utf-8"))
    texts: list[str] = []
    for sample in samples:
        turns, _ = locomo_turns(sample.get("conversation", {}))
        texts += [turn_text(t) for t in turns]
    return texts


def raw_round(texts: list[str], embedder: Any) -> float:
    t0 = time.perf_counter()
    vectors = embedder.embed_documents(texts)
    elapsed = time.perf_counter() - t0
    assert len(vectors) == len(texts)
    return elapsed


def ingest_round(path: Path) -> tuple[float, float]:
    """Seconds of ``agentmem ingest PATH`` in a fresh home (the model already loaded), and
    the seconds of it spent inside the model's ``embed_documents``."""
    from agentmem.cli import main
    from agentmem.embeddings.local import default_embedder

    cached = default_embedder()
    cached.cache_clear()  # every text goes to the model, as in a new process
    model = cached.inner
    inside: list[float] = []
    embed = model.embed_documents

    def timed(texts: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return embed(texts)
        finally:
            inside.append(time.perf_counter() - t0)

    model.embed_documents = timed  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as home:
            out, err = io.StringIO(), io.StringIO()
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["--home", home, "ingest", str(path), "--user", "bench"])
            elapsed = time.perf_counter() - t0
    finally:
        del model.embed_documents  # back to the class's method
    if code != 0:
        msg = f"agentmem ingest failed ({code}): {out.getvalue()} {err.getvalue()}"
        raise RuntimeError(msg)
    return elapsed, sum(inside)


def subset(path: Path, samples: int, into: Path) -> Path:
    """The first ``samples`` conversations of ``path`` as a file in ``into`` (0: all)."""
    if samples <= 0:
        return path
    data = json.loads(path.read_text(encoding="utf-8"))[:samples]
    target = into / path.name
    target.write_text(json.dumps(data), encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table; write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=os.environ.get("AGENTMEM_LOCOMO"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=0, help="first N conversations (0: all)")
    parser.add_argument("--out", default="bench/results/ingest.json")
    args = parser.parse_args(argv)
    if args.data is None:
        parser.error("--data PATH (a LoCoMo-format file) or AGENTMEM_LOCOMO is required")
    from agentmem.embeddings.local import default_embedder

    with tempfile.TemporaryDirectory() as tmp:
        data = subset(args.data, args.samples, Path(tmp))
        texts = turn_texts(data)
        t0 = time.perf_counter()
        model = default_embedder().inner  # the very model `agentmem ingest` uses
        model.load()  # type: ignore[attr-defined]
        load_s = time.perf_counter() - t0
        model.embed_documents(texts[:64])  # warm-up
        rows: list[dict[str, Any]] = []
        for round_ in range(1, args.rounds + 1):
            if round_ % 2:  # alternate the order: both see the same drift in load
                raw_s, (ingest_s, model_s) = raw_round(texts, model), ingest_round(data)
            else:
                (ingest_s, model_s), raw_s = ingest_round(data), raw_round(texts, model)
            row = {
                "round": round_,
                "turns": len(texts),
                "raw model turns/s": len(texts) / raw_s,
                "ingest turns/s": len(texts) / ingest_s,
                "ingest / raw": raw_s / ingest_s,
                "model share of ingest": model_s / ingest_s,
            }
            rows.append(row)
            log(str(row))
    best = {
        "round": "best",
        "turns": len(texts),
        "raw model turns/s": max(r["raw model turns/s"] for r in rows),
        "ingest turns/s": max(r["ingest turns/s"] for r in rows),
        "model share of ingest": max(r["model share of ingest"] for r in rows),
    }
    best["ingest / raw"] = best["ingest turns/s"] / best["raw model turns/s"]
    rows.append(best)
    columns = [
        "round",
        "turns",
        "raw model turns/s",
        "ingest turns/s",
        "ingest / raw",
        "model share of ingest",
    ]
    print_table(rows, columns)
    rss = peak_rss_mb()
    print(f"\nmodel load (once per process, not in the rates): {load_s:.2f} s")
    print(f"peak RSS: {rss:,.0f} MiB (cpus: {os.cpu_count()}, load average {os.getloadavg()})")
    write_json(args.out, {"environment": environment(), "rows": rows, "peak_rss_mb": rss})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
