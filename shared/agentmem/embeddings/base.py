"""The :class:`Embedder` protocol and the input checks every embedder shares.

An embedder turns text into dense vectors of a fixed :attr:`~Embedder.dimension`. Documents
(what gets stored) and queries (what gets searched) have separate methods because some
models embed them differently (instruction prefixes, asymmetric models).

Every embedder in agentmem validates its input the same way:

* an empty list gives ``[]`` without calling the model;
* a text that is not a ``str``, or is empty or only whitespace, raises
  :class:`~agentmem.errors.InvalidValueError` (such a vector would mean nothing and would
  match everything equally);
* a text holding a lone surrogate (``"\\ud800"``, not encodable as UTF-8) raises
  :class:`~agentmem.errors.InvalidValueError` before any model or tokenizer sees it;
* a bare string passed where a list is expected raises
  :class:`~agentmem.errors.InvalidValueError` (it would otherwise be embedded per character).

Example:
    >>> from agentmem.embeddings import Embedder
    >>> class Constant:
    ...     model_name = "constant"
    ...     dimension = 2
    ...     def embed_documents(self, texts): return [[1.0, 0.0] for _ in texts]
    ...     def embed_query(self, text): return [1.0, 0.0]
    ...     async def aembed_documents(self, texts): return self.embed_documents(texts)
    ...     async def aembed_query(self, text): return self.embed_query(text)
    >>> isinstance(Constant(), Embedder)
    True
"""

from __future__ import annotations

from collections.abc import Sequence

# typing_extensions' runtime protocols look attributes up statically (as Python 3.12+
# does): on 3.10/3.11 typing's isinstance() would evaluate ``dimension``, which loads a
# model or sends a probe request.
from typing_extensions import Protocol, runtime_checkable

from agentmem.errors import DimensionMismatchError, InvalidValueError
from agentmem.storable import check_nonblank_text

__all__ = [
    "Embedder",
    "check_dimension",
    "check_store_dimension",
    "validate_text",
    "validate_texts",
]


@runtime_checkable
class Embedder(Protocol):
    """Dense text embeddings with a fixed dimension, sync and async.

    Implementations: :class:`~agentmem.embeddings.SentenceTransformerEmbedder` (local,
    offline default), :class:`~agentmem.embeddings.OpenAIEmbedder`,
    :class:`~langchain_agentmem.LangChainEmbedder`,
    :class:`~llamaindex_agentmem.LlamaIndexEmbedder`; wrap any of them in
    :class:`~agentmem.embeddings.CachedEmbedder` to embed identical text once.

    ``isinstance(x, Embedder)`` checks the attribute names only; it never loads a model.
    """

    @property
    def model_name(self) -> str:
        """Identifies the model; part of the cache key, so different models never mix."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (``[]`` for an empty list)."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query."""
        ...

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents`."""
        ...

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        ...


def validate_text(text: object, *, what: str = "text") -> str:
    """Return ``text`` if it is a non-blank, UTF-8 encodable string, else raise
    ``InvalidValueError``.

    Example:
        >>> validate_text("hello")
        'hello'
        >>> validate_text("  ")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        agentmem.errors.InvalidValueError: text to embed must not be empty or blank; skip it ...
    """
    hint = "; skip it instead of embedding it"
    return check_nonblank_text(text, what=f"{what} to embed", hint=hint)


def validate_texts(texts: object) -> list[str]:
    """Return ``texts`` as a list after checking each with :func:`validate_text`.

    Example:
        >>> validate_texts(("a", "b"))
        ['a', 'b']
        >>> validate_texts([])
        []
    """
    if isinstance(texts, (str, bytes)):
        msg = (
            "embed_documents() takes a list of texts, got a single string; "
            "wrap it in a list or call embed_query()"
        )
        raise InvalidValueError(msg)
    if not isinstance(texts, Sequence):
        msg = f"embed_documents() takes a sequence of str, got {type(texts).__name__}"
        raise InvalidValueError(msg)
    return [validate_text(t, what=f"texts[{i}]") for i, t in enumerate(texts)]


def check_dimension(vectors: Sequence[Sequence[float]], dimension: int, *, source: str) -> None:
    """Raise :class:`DimensionMismatchError` if any vector's length is not ``dimension``."""
    for i, vector in enumerate(vectors):
        if len(vector) != dimension:
            msg = (
                f"{source} returned a vector of length {len(vector)} at position {i}, "
                f"expected {dimension}; pass the model's real dimension (dimension=...) "
                "or check that the model did not change"
            )
            raise DimensionMismatchError(msg)


def check_store_dimension(embedder_dimension: int, store_dimension: int, *, otherwise: str) -> None:
    """Raise :class:`DimensionMismatchError` if an embedder's vectors do not fit a store.

    ``otherwise`` is what else to use, after "use the embedder the store was created with".

    Example:
        >>> check_store_dimension(384, 384, otherwise="another home")
        >>> check_store_dimension(384, 768, otherwise="another home")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        agentmem.errors.DimensionMismatchError: the embedder makes 384-dimensional vectors ...
    """
    if embedder_dimension != store_dimension:
        msg = (
            f"the embedder makes {embedder_dimension}-dimensional vectors but the store holds "
            f"{store_dimension}-dimensional ones; use the embedder the store was created "
            f"with, or {otherwise}"
        )
        raise DimensionMismatchError(msg)
