"""A disk cache of embeddings for benchmark runs (never used by the library).

Re-running a benchmark on the same data embeds the same texts again: on a shared 2-core
machine that is most of a LoCoMo run. :class:`DiskCachedEmbedder` keeps the vectors of an
inner embedder in one ``.npz`` file per model under a directory outside the repository
(``$TMPDIR/agentmem-bench-embeddings`` by default), keyed like
:class:`agentmem.embeddings.CachedEmbedder` by ``sha256(model, kind, text)``.
Timings of a run that hits this cache measure search, not the model.

Example:
    >>> import tempfile
    >>> class Lengths:
    ...     model_name, dimension = "lengths", 2
    ...     def embed_documents(self, texts): return [[float(len(t)), 1.0] for t in texts]
    ...     def embed_query(self, text): return [float(len(text)), 1.0]
    >>> cache = DiskCachedEmbedder(Lengths(), tempfile.mkdtemp())
    >>> cache.embed_documents(["ab"]), cache.misses
    ([[2.0, 1.0]], 1)
    >>> cache.embed_documents(["ab"]), cache.misses
    ([[2.0, 1.0]], 1)
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DEFAULT_CACHE_DIR", "DiskCachedEmbedder"]

DEFAULT_CACHE_DIR = Path(tempfile.gettempdir()) / "agentmem-bench-embeddings"


class DiskCachedEmbedder:
    """An :class:`~agentmem.embeddings.Embedder` that remembers vectors on disk.

    Args:
        inner: The embedder called on misses.
        directory: Where the cache file lives (created when missing).
    """

    def __init__(self, inner: Any, directory: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.model_name: str = inner.model_name
        self.dimension: int = inner.dimension
        name = hashlib.sha256(self.model_name.encode()).hexdigest()[:16]
        self.path = Path(directory) / f"{name}.npz"
        self._vectors: dict[str, list[float]] = {}
        self._dirty = False
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        if self.path.exists():
            with np.load(self.path, allow_pickle=False) as data:
                keys = data["keys"].tolist()
                self._vectors = dict(zip(keys, data["vectors"].tolist(), strict=True))

    def _key(self, kind: str, text: str) -> str:
        digest = hashlib.sha256()
        for part in (self.model_name, kind, text):
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        return digest.hexdigest()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [self._key("document", t) for t in texts]
        with self._lock:
            missing = [i for i, k in enumerate(keys) if k not in self._vectors]
        if missing:
            vectors = self.inner.embed_documents([texts[i] for i in missing])
            with self._lock:
                for i, vector in zip(missing, vectors, strict=True):
                    self._vectors[keys[i]] = _stored(vector)
                self._dirty = True
        with self._lock:
            self.misses += len(missing)
            self.hits += len(texts) - len(missing)
            return [self._vectors[k] for k in keys]

    def embed_query(self, text: str) -> list[float]:
        key = self._key("query", text)
        with self._lock:
            found = self._vectors.get(key)
        if found is None:
            vector = _stored(self.inner.embed_query(text))
            with self._lock:
                self._vectors[key] = vector
                self._dirty = True
                self.misses += 1
            return vector
        with self._lock:
            self.hits += 1
        return found

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)

    def save(self) -> None:
        """Write the cache file (atomically) if anything was added."""
        with self._lock:
            if not self._dirty or not self._vectors:
                return
            keys = np.array(list(self._vectors))
            vectors = np.array(list(self._vectors.values()), dtype=np.float32)
            self._dirty = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=vectors)
        os.replace(tmp, self.path)


def _stored(vector: Sequence[float]) -> list[float]:
    # Rounded to float32 as the file keeps them, so a cold and a warm run rank alike.
    return [float(x) for x in np.asarray(vector, dtype=np.float32)]
