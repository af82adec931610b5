"""BM25 sparse vectors for the lexical half of hybrid search, in English and Chinese.

:class:`Bm25Encoder` runs Qdrant's own BM25 (``qdrant_edge.Bm25``, the same code as the
Qdrant server's BM25 inference) in process: no server, no model, no vocabulary to fit.

* **Terms** are hashed to 32-bit indices by Qdrant, so indices are the same in every
  process and on every machine, and documents need no shared vocabulary. They change
  only if Qdrant changes its tokenizer or hash (pin ``qdrant-edge-py`` in production;
  re-encode stored memories after upgrading it if results look off).
* **Tokenizer**: Qdrant's ``Multilingual`` tokenizer segments Chinese and Japanese into
  words (``我喜欢吃北京烤鸭`` -> 我, 喜欢, 吃, 北京, 烤鸭) and splits other scripts on
  word boundaries. With ``language="multilingual"`` (the default) English words are
  lowercased and Snowball-stemmed (``running`` -> ``run``) and both English and Chinese
  stopwords (``the``, ``of``, ``的``, ``了``, ...) are dropped; CJK words are not stemmed.
* **Weights**: a document's weights are BM25 term-frequency parts
  ``tf * (k + 1) / (tf + k * (1 - b + b * len / avg_len))``; a query's are ``1.0`` per
  distinct term. The IDF factor is applied by Qdrant at search time (the collection's
  sparse vector has the IDF modifier), so the vectors never go stale as memories are added.
* **Empty input**: empty or whitespace-only text, punctuation, or text made only of
  stopwords gives an empty :class:`SparseVector` (it matches nothing lexically); it is
  not an error. Non-string input raises :class:`~agentmem.errors.InvalidValueError`.

Example:
    >>> from agentmem.sparse import Bm25Encoder
    >>> bm25 = Bm25Encoder()
    >>> doc = bm25.encode_documents(["我用 Python 写代码，缩进用制表符"])[0]
    >>> query = bm25.encode_query("Python 缩进")
    >>> set(query.indices) <= set(doc.indices)
    True
    >>> bm25.encode_query("   ")
    SparseVector(indices=[], values=[])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from agentmem.errors import ConfigurationError, InvalidValueError

__all__ = ["Bm25Encoder", "SparseEncoder", "SparseVector"]

_MULTILINGUAL = "multilingual"


@dataclass(frozen=True)
class SparseVector:
    """A sparse vector: parallel lists of term indices and weights (no duplicates).

    Example:
        >>> SparseVector([3, 9], [1.0, 0.5]).indices
        [3, 9]
    """

    indices: list[int]
    values: list[float]

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.values):
            msg = "sparse vector indices and values must have the same length"
            raise ValueError(msg)


@runtime_checkable
class SparseEncoder(Protocol):
    """Turns text into sparse vectors for lexical (BM25-style) search.

    There are no async twins: encoding is pure CPU work of microseconds per text, cheaper
    than a hop to a thread pool; call it directly from async code.
    """

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        """One sparse vector per text, for indexing."""
        ...

    def encode_query(self, text: str) -> SparseVector:
        """The sparse vector of a search query."""
        ...


class Bm25Encoder:
    """BM25 sparse vectors from ``qdrant_edge.Bm25`` (see the module docstring).

    Args:
        language: ``"multilingual"`` (default): English stemming, English and Chinese
            stopwords, CJK word segmentation. Or a Qdrant language name (``"english"``,
            ``"chinese"``, ``"german"``, ...) for that language's stemmer and stopwords;
            the tokenizer is ``Multilingual`` either way.
        k: Term-frequency saturation (BM25 ``k1``).
        b: Length normalization, 0 (none) to 1 (full).
        avg_len: Typical document length in tokens. Memories are a sentence or two, so
            the default is 32 rather than Qdrant's 256 (which suits long documents).

    Raises:
        ConfigurationError: ``qdrant-edge-py`` is missing, or an option is invalid.

    Example:
        >>> bm25 = Bm25Encoder()
        >>> a = bm25.encode_documents(["The dogs were running"])[0]
        >>> b = bm25.encode_query("run dog")
        >>> sorted(a.indices) == sorted(b.indices)  # stemmed, stopwords dropped
        True
    """

    def __init__(
        self,
        language: str = _MULTILINGUAL,
        *,
        k: float = 1.2,
        b: float = 0.75,
        avg_len: float = 32.0,
    ) -> None:
        try:
            import qdrant_edge as qe
        except ImportError as exc:
            msg = "Bm25Encoder needs qdrant-edge-py: pip install qdrant-edge-py"
            raise ConfigurationError(msg) from exc
        if not isinstance(language, str) or not language.strip():
            msg = f"language must be a non-empty string, got {language!r}"
            raise ConfigurationError(msg)
        for name, value in (("k", k), ("b", b), ("avg_len", avg_len)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                msg = f"{name} must be a number, got {value!r}"
                raise ConfigurationError(msg)
        options: dict[str, Any] = {"tokenizer": qe.TokenizerType.Multilingual}
        if language.lower() == _MULTILINGUAL:
            options["stopwords"] = qe.StopwordsSet(
                languages={qe.Language.English, qe.Language.Chinese}
            )
            options["stemmer"] = qe.SnowballParams(qe.SnowballLanguage.English)
        else:
            options["language"] = language.lower()
        try:
            config = qe.Bm25Config(k=float(k), b=float(b), avg_len=float(avg_len), **options)
            self._model = qe.Bm25(config)
        except (ValueError, TypeError) as exc:
            msg = (
                f"invalid BM25 options (language={language!r}, k={k!r}, b={b!r}, "
                f"avg_len={avg_len!r}): {exc}; use 'multilingual' or a Qdrant language "
                "name such as 'english', k >= 0, 0 <= b <= 1 and avg_len > 0"
            )
            raise ConfigurationError(msg) from exc
        self.language = language.lower()
        self.k = float(k)
        self.b = float(b)
        self.avg_len = float(avg_len)

    def __repr__(self) -> str:
        return (
            f"Bm25Encoder(language={self.language!r}, k={self.k}, b={self.b}, "
            f"avg_len={self.avg_len})"
        )

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        """Sparse vectors with BM25 term-frequency weights, one per text.

        Raises:
            InvalidValueError: ``texts`` is a bare string or holds a non-string.
        """
        if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
            msg = (
                f"encode_documents() takes a list of str, got {type(texts).__name__}; "
                "wrap a single text in a list or call encode_query()"
            )
            raise InvalidValueError(msg)
        return [_convert(self._model.embed_document(_check(t, i))) for i, t in enumerate(texts)]

    def encode_query(self, text: str) -> SparseVector:
        """A sparse vector with weight 1.0 per distinct query term.

        Raises:
            InvalidValueError: ``text`` is not a string.
        """
        return _convert(self._model.embed_query(_check(text, None)))


def _check(text: object, position: int | None) -> str:
    if not isinstance(text, str):
        where = "text" if position is None else f"texts[{position}]"
        msg = f"{where} must be a str, got {type(text).__name__}: {text!r:.80}"
        raise InvalidValueError(msg)
    return text


def _convert(vector: Any) -> SparseVector:
    return SparseVector(indices=list(vector.indices), values=list(vector.values))
