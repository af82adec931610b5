"""An LRU cache in front of any :class:`~agentmem.embeddings.Embedder`.

Keys are ``sha256(model_name, kind, text)`` where ``kind`` is ``"document"`` or ``"query"``,
so a text embedded as a query never answers a document lookup (some models embed them
differently) and two models never share entries. Only the misses of a batch reach the
inner embedder, in one call, each distinct text once.

Vectors are held as numpy arrays, not as Python floats (24 bytes each plus a pointer):
``float32`` when that represents the inner embedder's values exactly (true of every model
computing in float32, such as sentence-transformers), else ``float64``. Callers get lists of
the very values the inner embedder returned. The cache is bounded by entries and by bytes.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from agentmem._sansio import Program, async_twin, call, twin
from agentmem._util.checks import check_positive_int
from agentmem._util.delegate import ReadOnlyDelegate
from agentmem._util.forking import reset_after_fork
from agentmem.embeddings.base import Embedder, validate_text, validate_texts
from agentmem.errors import ConfigurationError

__all__ = [
    "BYTES_PER_VECTOR_384",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "ENTRY_OVERHEAD",
    "CacheInfo",
    "CachedEmbedder",
]

_Kind = Literal["document", "query"]
_Vector = npt.NDArray[np.float32] | npt.NDArray[np.float64]

DEFAULT_MAX_ENTRIES = 100_000
"""Vectors a :class:`CachedEmbedder` keeps by default."""

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
"""Bytes a :class:`CachedEmbedder` holds by default (256 MiB, counted as :attr:`nbytes`)."""

ENTRY_OVERHEAD = 200
"""Bytes counted per entry on top of its array and key objects, for the LRU dict's slot and
link (about 110 bytes measured with tracemalloc; counted high so that :attr:`nbytes` bounds
the memory the entries hold; the empty cache's own few hundred bytes are not counted)."""

BYTES_PER_VECTOR_384 = 1_900
"""Bound on the memory per cached 384-d float32 vector (all-MiniLM-L6-v2), everything
included. Measured with tracemalloc (Python 3.11, numpy 2): 1,790-1,825 bytes, about
1.8 KiB (1,536 bytes of data, a 112-byte array header, the 65-byte key, the LRU slot),
against 12,470 bytes (12.2 KiB) when vectors were tuples of Python floats. A float64 vector
(values float32 would round) measures 3,324 bytes (3.3 KiB)."""


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

    Memory: a 384-d float32 vector costs about 1.8 KiB all included (measured with
    tracemalloc, see :data:`BYTES_PER_VECTOR_384`), so the default 100,000 entries take
    about 175 MiB; :attr:`nbytes` counts what the entries hold (an upper bound) and
    ``max_bytes`` caps it whatever the dimension (a 1536-d float64 vector takes about
    12.5 KiB, so 256 MiB hold about 21,000 of those).

    Args:
        inner: The embedder to call on cache misses.
        max_entries: Vectors kept at most (least recently used dropped first).
        max_bytes: Bytes held at most, as counted by :attr:`nbytes` (least recently used
            dropped first); 256 MiB by default. A vector larger than this is not cached.

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

    def __init__(
        self,
        inner: Embedder,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if not isinstance(inner, Embedder):
            msg = (
                f"inner must implement the Embedder protocol (model_name, dimension, "
                f"embed_documents, embed_query and async twins), got {type(inner).__name__}"
            )
            raise ConfigurationError(msg)
        self.inner = inner
        self.max_entries = check_positive_int(max_entries, "max_entries")
        self.max_bytes = check_positive_int(max_bytes, "max_bytes")
        self._entries: OrderedDict[bytes, _Vector] = OrderedDict()
        self._bytes = 0
        self._reset_lock()
        reset_after_fork(self, CachedEmbedder._reset_lock)
        self._hits = 0
        self._misses = 0

    def _reset_lock(self) -> None:
        """A fresh lock: at construction, and in a forked child (whose copy of the
        parent's may be held by a thread that does not exist there)."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"CachedEmbedder({self.inner!r}, max_entries={self.max_entries}, "
            f"max_bytes={self.max_bytes})"
        )

    model_name: ReadOnlyDelegate[str] = ReadOnlyDelegate(
        "inner", doc="The inner embedder's model name."
    )
    dimension: ReadOnlyDelegate[int] = ReadOnlyDelegate(
        "inner", doc="The inner embedder's dimension."
    )

    @property
    def nbytes(self) -> int:
        """Bytes the cached entries hold (arrays, keys and :data:`ENTRY_OVERHEAD` each)."""
        with self._lock:
            return self._bytes

    def cache_info(self) -> CacheInfo:
        """Hits, misses and size so far."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._entries), self.max_entries)

    def cache_clear(self) -> None:
        """Drop every cached vector and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self._hits = self._misses = 0

    # -- Embedder --------------------------------------------------------------------------

    @twin
    def embed_documents(self, texts: Sequence[str]) -> Program[list[list[float]]]:
        """Vectors of ``texts``; only texts not cached are sent to the inner embedder."""
        items = validate_texts(texts)
        keys, found, missing = self._lookup(items, "document")
        if missing:
            inner = self.inner
            vectors = yield from call(inner.embed_documents, inner.aembed_documents, list(missing))
            self._store(missing, vectors, found)
        return [found[key].tolist() for key in keys]

    aembed_documents = async_twin(embed_documents)

    @twin
    def embed_query(self, text: str) -> Program[list[float]]:
        """Vector of a query (cached apart from documents)."""
        item = validate_text(text)
        keys, found, missing = self._lookup([item], "query")
        if missing:
            vector = yield from call(self.inner.embed_query, self.inner.aembed_query, item)
            self._store(missing, [vector], found)
        return list(found[keys[0]].tolist())

    aembed_query = async_twin(embed_query)

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
    ) -> tuple[list[bytes], dict[bytes, _Vector], dict[str, bytes]]:
        """Keys in order, cached vectors by key, and the distinct missing texts."""
        keys = [self._key(text, kind) for text in texts]
        found: dict[bytes, _Vector] = {}
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
        found: dict[bytes, _Vector],
    ) -> None:
        if len(vectors) != len(missing):
            msg = (
                f"{self.inner!r} returned {len(vectors)} vectors for {len(missing)} texts; "
                "an embedder must return exactly one vector per text"
            )
            raise ConfigurationError(msg)
        compact = [_compact(vector) for vector in vectors]
        with self._lock:
            for key, array in zip(missing.values(), compact, strict=True):
                found[key] = array
                old = self._entries.pop(key, None)  # a concurrent caller stored it too
                if old is not None:
                    self._bytes -= _cost(key, old)
                self._entries[key] = array
                self._bytes += _cost(key, array)
            while self._entries and (
                len(self._entries) > self.max_entries or self._bytes > self.max_bytes
            ):
                key, array = self._entries.popitem(last=False)
                self._bytes -= _cost(key, array)


def _compact(vector: Sequence[float]) -> _Vector:
    """``vector`` as float32 when that keeps every value exactly, else as float64."""
    wide = np.array(vector, dtype=np.float64)
    if wide.ndim != 1:
        msg = f"an embedder returned a vector of shape {wide.shape}; expected a flat list"
        raise ConfigurationError(msg)
    with np.errstate(over="ignore"):
        narrow = wide.astype(np.float32)
    if np.array_equal(narrow, wide):
        return narrow
    return wide


def _cost(key: bytes, array: _Vector) -> int:
    """Bytes an entry holds: its array (header and data), its key and its LRU slot."""
    return sys.getsizeof(array) + sys.getsizeof(key) + ENTRY_OVERHEAD
