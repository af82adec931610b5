"""An LRU cache in front of any :class:`~agentmem.embeddings.Embedder`.

Keys are ``sha256(model_name, kind, text)`` where ``kind`` is ``"document"`` or ``"query"``,
so a text embedded as a query never answers a document lookup (some models embed them
differently) and two models never share entries. Only the misses of a batch reach the
inner embedder, in one call, each distinct text once.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Literal, NamedTuple

from agentmem.embeddings.base import Embedder, validate_text, validate_texts
from agentmem.errors import ConfigurationError

__all__ = ["CacheInfo", "CachedEmbedder"]

_Kind = Literal["document", "query"]


class CacheInfo(NamedTuple):
    """Counters of a :class:`CachedEmbedder` (like ``functools.lru_cache``'s).

    Attributes:
        hits: Texts answered from the cache.
        misses: Texts sent to the inner embedder.
        size: Vectors held now.
        max_entries: Vectors held at most before the least recently used is dropped.
    """

    hits: int
    misses: int
    size: int
    max_entries: int


class CachedEmbedder:
    """Wraps an embedder so identical content is embedded once.

    Thread-safe: the cache is guarded by a lock that is *not* held while the inner
    embedder runs, so concurrent callers do not wait for each other's model calls (two
    callers missing the same text at the same moment may both embed it). Sync and async
    methods share one cache.

    Args:
        inner: The embedder to call on cache misses.
        max_entries: Vectors kept (least recently used dropped first). A 384-dim vector
            costs about 3.5 KiB of Python floats, so the default holds ~350 MiB at most.

    Example:
        >>> from agentmem.embeddings import CachedEmbedder
        >>> class Lengths:  # a toy embedder: [len(text), 1.0]
        ...     model_name, dimension = "lengths", 2
        ...     def embed_documents(self, texts): return [[float(len(t)), 1.0] for t in texts]
        ...     def embed_query(self, text): return [float(len(text)), 1.0]
        ...     async def aembed_documents(self, texts): return self.embed_documents(texts)
        ...     async def aembed_query(self, text): return self.embed_query(text)
        >>> cached = CachedEmbedder(Lengths())
        >>> cached.embed_documents(["tabs", "tabs", "spaces"])
        [[4.0, 1.0], [4.0, 1.0], [6.0, 1.0]]
        >>> cached.embed_documents(["tabs"])
        [[4.0, 1.0]]
        >>> cached.cache_info()
        CacheInfo(hits=2, misses=2, size=2, max_entries=100000)
    """

    def __init__(self, inner: Embedder, *, max_entries: int = 100_000) -> None:
        if not isinstance(inner, Embedder):
            msg = (
                f"inner must implement the Embedder protocol (model_name, dimension, "
                f"embed_documents, embed_query and async twins), got {type(inner).__name__}"
            )
            raise ConfigurationError(msg)
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            msg = f"max_entries must be an int >= 1, got {max_entries!r}"
            raise ConfigurationError(msg)
        self.inner = inner
        self.max_entries = max_entries
        self._entries: OrderedDict[bytes, tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, max_entries={self.max_entries})"

    @property
    def model_name(self) -> str:
        """The inner embedder's model name."""
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        """The inner embedder's dimension."""
        return self.inner.dimension

    def cache_info(self) -> CacheInfo:
        """Hits, misses and size so far."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._entries), self.max_entries)

    def cache_clear(self) -> None:
        """Drop every cached vector and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = 0

    # -- Embedder --------------------------------------------------------------------------

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts``; only texts not cached are sent to the inner embedder."""
        items = validate_texts(texts)
        keys, found, missing = self._lookup(items, "document")
        if missing:
            vectors = self.inner.embed_documents(list(missing))
            self._store(missing, vectors, found)
        return [list(found[key]) for key in keys]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (misses go to ``inner.aembed_documents``)."""
        items = validate_texts(texts)
        keys, found, missing = self._lookup(items, "document")
        if missing:
            vectors = await self.inner.aembed_documents(list(missing))
            self._store(missing, vectors, found)
        return [list(found[key]) for key in keys]

    def embed_query(self, text: str) -> list[float]:
        """Vector of a query (cached apart from documents)."""
        item = validate_text(text)
        keys, found, missing = self._lookup([item], "query")
        if missing:
            self._store(missing, [self.inner.embed_query(item)], found)
        return list(found[keys[0]])

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        item = validate_text(text)
        keys, found, missing = self._lookup([item], "query")
        if missing:
            self._store(missing, [await self.inner.aembed_query(item)], found)
        return list(found[keys[0]])

    # -- internals -------------------------------------------------------------------------

    def _key(self, text: str, kind: _Kind) -> bytes:
        digest = hashlib.sha256()
        for part in (self.inner.model_name, kind, text):
            encoded = part.encode("utf-8", "surrogatepass")
            # Length prefixes keep ("ab", "c") and ("a", "bc") apart.
            digest.update(len(encoded).to_bytes(8, "big"))
            digest.update(encoded)
        return digest.digest()

    def _lookup(
        self, texts: list[str], kind: _Kind
    ) -> tuple[list[bytes], dict[bytes, tuple[float, ...]], dict[str, bytes]]:
        """Keys in order, cached vectors by key, and the distinct missing texts."""
        keys = [self._key(text, kind) for text in texts]
        found: dict[bytes, tuple[float, ...]] = {}
        missing: dict[str, bytes] = {}
        with self._lock:
            for text, key in zip(texts, keys, strict=True):
                vector = self._entries.get(key)
                if vector is not None:
                    self._entries.move_to_end(key)
                    found[key] = vector
                    self._hits += 1
                elif text in missing:
                    self._hits += 1  # a repeat within the batch is embedded once
                else:
                    missing[text] = key
                    self._misses += 1
        return keys, found, missing

    def _store(
        self,
        missing: dict[str, bytes],
        vectors: Sequence[Sequence[float]],
        found: dict[bytes, tuple[float, ...]],
    ) -> None:
        if len(vectors) != len(missing):
            msg = (
                f"{self.inner!r} returned {len(vectors)} vectors for {len(missing)} texts; "
                "an embedder must return exactly one vector per text"
            )
            raise ConfigurationError(msg)
        with self._lock:
            for key, vector in zip(missing.values(), vectors, strict=True):
                frozen = tuple(float(x) for x in vector)
                found[key] = frozen
                self._entries[key] = frozen
                self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
