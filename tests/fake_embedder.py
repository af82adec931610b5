"""A deterministic hashing embedder for tests (no model, no network), and the base of the
tests' small single-purpose embedders.

Each word of a text (lower-cased, surrounding punctuation stripped) adds 1 to a bucket
chosen by its sha256, then the vector is
L2-normalized: texts sharing words get positive cosine similarity, identical texts get
identical vectors, in every process. Every call is recorded in ``calls``.
"""

from __future__ import annotations

import hashlib
import math
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence

__all__ = ["BatchEmbedder", "HashingEmbedder"]


class BatchEmbedder(ABC):
    """A test embedder written as one sync :meth:`embed_documents`: the query method and the
    async twins call it.

    Example:
        >>> class Ones(BatchEmbedder):
        ...     model_name, dimension = "ones", 2
        ...     def embed_documents(self, texts): return [[1.0, 1.0] for _ in texts]
        >>> Ones().embed_query("hi")
        [1.0, 1.0]
    """

    model_name: str
    dimension: int

    @abstractmethod
    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


class HashingEmbedder:
    """Implements :class:`agentmem.embeddings.Embedder` by hashing words into buckets."""

    def __init__(self, dimension: int = 16, *, model_name: str = "hashing-fake") -> None:
        self._dimension = dimension
        self._model_name = model_name
        self.calls: list[tuple[str, list[str]]] = []  # (method, texts)
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        return self._dimension

    def vector(self, text: str) -> list[float]:
        """The vector of ``text`` (without recording a call)."""
        out = [0.0] * self._dimension
        words = [w.strip(".,!?;:\"'()") for w in text.lower().split()]
        for word in [w for w in words if w] or [text]:
            digest = hashlib.sha256(word.encode()).digest()
            out[int.from_bytes(digest[:4], "big") % self._dimension] += 1.0
        norm = math.sqrt(sum(x * x for x in out)) or 1.0
        return [x / norm for x in out]

    def _record(self, method: str, texts: Sequence[str]) -> None:
        with self._lock:
            self.calls.append((method, list(texts)))

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self._record("embed_documents", texts)
        return [self.vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self._record("embed_query", [text])
        return self.vector(text)

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self._record("aembed_documents", texts)
        return [self.vector(t) for t in texts]

    async def aembed_query(self, text: str) -> list[float]:
        self._record("aembed_query", [text])
        return self.vector(text)

    def texts_embedded(self) -> list[str]:
        """Every text sent to any method, in order."""
        with self._lock:
            return [t for _, texts in self.calls for t in texts]
