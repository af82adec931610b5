"""``agentmem reembed``: re-embed every memory of the home with a new model (private).

See :mod:`agentmem.long_term.reembed` for what it does and why it is safe to kill and run
again. The parser's module declares the command (``_reembed_command``) and imports this
module only when it runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from agentmem.cli.progress import ProgressBar
    from agentmem.embeddings.base import Embedder
    from agentmem.long_term.reembed import ReembedReport

__all__ = ["reembed_command"]


def _embedder(args: argparse.Namespace, err: TextIO) -> Embedder:
    """The new model, loaded (uncached: see :mod:`agentmem.long_term.reembed`)."""
    from agentmem.cli.progress import TransientStatus
    from agentmem.embeddings.local import SentenceTransformerEmbedder

    if args.model is None:
        embedder = SentenceTransformerEmbedder()
    else:
        embedder = SentenceTransformerEmbedder(args.model, verify_sha256=False)
    with TransientStatus(f"loading the embedding model ({embedder.model_name})", stream=err):
        embedder.load()
    return embedder


def reembed_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Re-embed the home's memories (see the module docstring); 0 when done."""
    from agentmem.backends import acquire_memory_store
    from agentmem.cli.common import check_home, check_positive, resolve_config
    from agentmem.cli.progress import ProgressBar
    from agentmem.long_term.reembed import reembed

    check_positive(args.batch_size, "--batch-size")
    config = resolve_config(args)
    check_home(config)
    embedder = _embedder(args, err)
    lease = acquire_memory_store(config, dimension=embedder.dimension)
    bar: list[ProgressBar] = []

    def progress(done: int, total: int) -> None:
        if not bar:
            bar.append(ProgressBar(total, label="reembed", unit="memories", stream=err))
            bar[0].advance(done)
            return
        bar[0].advance(done - bar[0].done)

    try:
        report = reembed(lease.value, embedder, batch_size=args.batch_size, on_progress=progress)
    finally:
        for b in bar:
            b.close()
        lease.release()
    out.write(_summary(report) + "\n")
    return 0


def _summary(report: ReembedReport) -> str:
    target = report.target.describe()
    if report.total == 0 and not report.resumed and report.source == report.target:
        return f"nothing to do: the memories are already embedded with {target}"
    finished = " (finished an interrupted run)" if report.resumed else ""
    return f"re-embedded {report.total} memories with {target}{finished}"
