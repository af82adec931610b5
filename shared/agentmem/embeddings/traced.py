"""A sentence-transformers pipeline run as one call into torch: the forward pass, traced.

Why: torch releases the GIL inside each operator it runs and takes it back afterwards. An
eager forward pass of all-MiniLM-L6-v2 runs about 150 operators, so about 150 times it
needs the GIL back; when other threads of the process run Python (the requests a
``MemoryService`` serves while the embedding worker computes), each of those can wait for
the interpreter's switch interval (5 ms). Traced with TorchScript, the transformer, its
pooling and normalization run in torch's C++ interpreter, which takes the GIL back once.
Measured with ``bench/traced_forward.py`` on 2 cores, one query's p50, eager then traced:
14 and 10 ms alone, 624 and 47 ms beside one busy Python thread, 3,922 and 192 ms beside
three; the same vectors (within 1.5e-8), and 274 and 251 sentences/s on a batch of 64.

:func:`trace_pipeline` traces only what it can reproduce (a ``Transformer`` module, then
``Pooling`` by mean or by the first token, then optionally ``Normalize``; no prompts; on
CPU), and keeps the trace only if it gives the vectors of ``SentenceTransformer.encode`` on
probe texts of several lengths, alone and padded in a batch (within
:data:`TOLERANCE`). Otherwise it returns ``None`` and the embedder keeps ``encode``.
TorchScript is deprecated in recent torch (in maintenance); where it is gone, the same
fallback applies.

Imported only with the local model (it imports torch).

Example:
    >>> from sentence_transformers import SentenceTransformer  # doctest: +SKIP
    >>> traced = trace_pipeline(SentenceTransformer("all-MiniLM-L6-v2/"))  # doctest: +SKIP
    >>> traced.encode(["tabs, not spaces"], normalize=True).shape  # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np
import torch

__all__ = ["TOLERANCE", "TracedPipeline", "trace_pipeline"]

logger = logging.getLogger(__name__)

#: The largest difference from ``encode``'s vectors (any coordinate) a trace may give.
TOLERANCE = 1e-5

# Probe texts: one word piece to about forty, so the check covers a batch of unequal
# lengths (padded), one of equal lengths (no padding) and texts alone, and one text past the
# model's limit (truncated to its longest input).
_PROBES = (
    "x",
    "What did I say about the trip to Oslo last spring?",
    "Tabs, not spaces; and a second clause, with numbers 12 and 3.5 in it.",
    "a longer text, with commas and words of every kind " * 3,
)
_LONG = "word " * 600
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class TracedPipeline:
    """A traced sentence-transformers pipeline: texts in, sentence embeddings out.

    :meth:`encode` is :meth:`features` (one thread at a time: the tokenizer is not
    thread-safe) then :meth:`run` (any number of threads at once). Made by
    :func:`trace_pipeline`.
    """

    def __init__(
        self, model: Any, module: Any, inputs: tuple[str, ...], *, normalized: bool
    ) -> None:
        self._model = model
        self._module = module
        self._inputs = inputs
        self._normalized = normalized  # the pipeline ends with Normalize

    def encode(self, texts: list[str], *, normalize: bool) -> np.ndarray:
        """The embeddings of ``texts`` (float32, one row per text), L2-normalized when
        ``normalize`` (as ``encode(normalize_embeddings=...)``)."""
        return self.run(self.features(texts), normalize=normalize)

    def features(self, texts: list[str]) -> dict[str, Any]:
        """The tokenizer's tensors for ``texts`` (one thread at a time: the tokenizer is
        not thread-safe)."""
        return _features(self._model, texts)

    def run(self, features: dict[str, Any], *, normalize: bool) -> np.ndarray:
        """The forward pass over :meth:`features`' tensors; safe on several threads at once
        (TorchScript), and it leaves the GIL while it computes."""
        with torch.inference_mode():
            out = self._module(*(features[name] for name in self._inputs))
            if normalize and not self._normalized:  # one more operator only if needed
                out = torch.nn.functional.normalize(out, p=2.0, dim=1)
        return out.numpy()  # type: ignore[no-any-return]


def trace_pipeline(model: Any, *, device: str = "cpu") -> TracedPipeline | None:
    """``model`` (a loaded ``SentenceTransformer``) traced, or ``None`` when its pipeline is
    not one this module reproduces or the trace does not give ``encode``'s vectors (see the
    module docs). Takes about half a second (the trace and the check's passes).
    """
    if device != "cpu":
        return None
    try:
        pooled = _pooled_module(model)
        if pooled is None:
            return None
        features = _features(model, list(_PROBES[:2]))  # unequal lengths: padded
        inputs = tuple(name for name in _INPUTS if name in features)
        if inputs[:2] != _INPUTS[:2]:
            return None
        module = _trace(pooled, tuple(features[name] for name in inputs))
        traced = TracedPipeline(model, module, inputs, normalized=pooled.normalize)
        if not _reproduces(model, traced):
            logger.info("the traced forward pass differs from encode(): encode() is used")
            return None
    except Exception as exc:  # any failure to trace: the embedder keeps encode()
        logger.info("could not trace the forward pass (%s): encode() is used", exc)
        return None
    return traced


def _pooled_module(model: Any) -> _Pooled | None:
    """A ``torch.nn.Module`` computing the pipeline's sentence embedding from the tokenizer's
    tensors, or ``None`` for a pipeline this module does not reproduce."""
    modules = list(model)
    names = [type(module).__name__ for module in modules]
    if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return None
    prompts = getattr(model, "prompts", None) or {}
    if any(prompts.values()) or getattr(model, "default_prompt_name", None):
        return None
    config = modules[1].get_config_dict()
    mode = config.get("pooling_mode")
    if mode not in ("mean", "cls") or not config.get("include_prompt", True):
        return None
    transformer = getattr(modules[0], "auto_model", None)
    if not isinstance(transformer, torch.nn.Module):
        return None
    return _Pooled(transformer, mean=mode == "mean", normalize=len(modules) == 3).eval()


def _features(model: Any, texts: list[str]) -> dict[str, Any]:
    """The tokenizer's tensors for ``texts``, exactly as ``encode`` makes them."""
    preprocess = getattr(model, "preprocess", None) or model.tokenize
    return dict(preprocess(texts))


def _trace(module: Any, example: tuple[Any, ...]) -> Any:
    _quiet_tracing()
    with torch.inference_mode():
        return torch.jit.trace(module, example, check_trace=False)  # type: ignore[no-untyped-call]


def _quiet_tracing() -> None:
    """Filter, narrowly, the warnings a trace of a transformers encoder gives:
    the deprecation of ``torch.jit.trace`` (handled: this module falls back to ``encode()``
    where TorchScript is gone), transformers' deprecation of an attribute the tracer reads,
    and the ``TracerWarning`` of transformers' attention-mask branches, which are constant
    for an encoder (no causal mask, no cache; :func:`_reproduces` checks other lengths and
    batches). Process-wide filters rather than ``warnings.catch_warnings()``, which swaps
    the filter list of every thread and is not thread-safe. Adding a filter again replaces
    the same one (no growth). Also drops transformers' notice about the training loss the
    tracer reads."""
    warnings.filterwarnings(
        "ignore",
        message=r"`torch\.jit\.trace(_method)?` is deprecated",
        category=DeprecationWarning,
    )
    warnings.filterwarnings(
        "ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning
    )
    tracer: type[Warning] = torch.jit.TracerWarning  # type: ignore[attr-defined]
    warnings.filterwarnings("ignore", category=tracer, module=r"transformers\.")
    # The tracer reads every attribute of the model, among them the training loss, whose
    # getter logs (once) that an encoder's config names no loss; a library prints nothing.
    logging.getLogger("transformers.modeling_utils").addFilter(_no_loss_notice)


def _no_loss_notice(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("`loss_type=")


def _reproduces(model: Any, traced: TracedPipeline) -> bool:
    texts = list(_PROBES)
    batches = [texts, texts[:1], texts[1:2], [texts[1], texts[1].upper()], [_LONG]]
    for batch in batches:
        want = model.encode(
            batch, batch_size=len(batch), convert_to_numpy=True, show_progress_bar=False
        )
        got = traced.encode(batch, normalize=False)
        if got.shape != want.shape or float(np.abs(got - want).max()) > TOLERANCE:
            return False
    return True


class _Pooled(torch.nn.Module):
    """Transformer, then mean (over the attention mask) or first-token pooling, then
    optionally L2 normalization: sentence-transformers' ``Pooling`` and ``Normalize``."""

    def __init__(self, transformer: torch.nn.Module, *, mean: bool, normalize: bool) -> None:
        super().__init__()
        self.transformer = transformer
        self.mean = mean
        self.normalize = normalize

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        kwargs = dict(zip(_INPUTS, inputs, strict=False))
        tokens: torch.Tensor = self.transformer(**kwargs, return_dict=False)[0]
        if self.mean:
            weights = kwargs["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        else:
            pooled = tokens[:, 0]
        if self.normalize:
            pooled = torch.nn.functional.normalize(pooled, p=2.0, dim=1)
        return pooled
