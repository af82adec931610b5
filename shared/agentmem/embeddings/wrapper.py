"""The framework-free half of the framework embedder adapters (public: a base for wrapping
any embedding model).

:class:`WrapperEmbedder` validates input, probes or learns the dimension and checks every
vector around a wrapped model's calls; a subclass only says how to call its model
(``_documents``, ``_query`` and their async twins). The adapters themselves live with their
framework: ``langchain_agentmem.LangChainEmbedder`` and
``llamaindex_agentmem.LlamaIndexEmbedder``; nothing here imports a framework.

Example:
    >>> class Constant(WrapperEmbedder):
    ...     def _documents(self, texts): return [[1.0, 0.0] for _ in texts]
    ...     def _query(self, text): return [1.0, 0.0]
    >>> emb = Constant("constant", None)
    >>> emb.dimension, emb.embed_documents(["a", "b"])
    (2, [[1.0, 0.0], [1.0, 0.0]])
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from agentmem._util.checks import check_optional_int
from agentmem.embeddings.base import check_dimension, validate_text, validate_texts
from agentmem.errors import ConfigurationError

__all__ = ["WrapperEmbedder", "model_label"]

_PROBE = "dimension probe"


def model_label(obj: object, prefix: str) -> str:
    """A cache-key name for a wrapped model: ``<prefix>:<class>[:<model>]``.

    Example:
        >>> class Model:
        ...     model = "m-1"
        >>> model_label(Model(), "langchain")
        'langchain:Model:m-1'
    """
    model = getattr(obj, "model", None) or getattr(obj, "model_name", None)
    name = f"{prefix}:{type(obj).__name__}"
    return f"{name}:{model}" if isinstance(model, str) and model else name


class WrapperEmbedder:
    """Validation, dimension probing and checks around a wrapped model's embedding calls.

    Args:
        model_name: The embedder's cache-key name.
        dimension: The vector length; ``None`` learns it from the first vectors returned, or
            probes it once by embedding a short text when it is asked for first.

    Raises:
        ConfigurationError: ``dimension`` is not an int >= 1 or ``None``.

    Example:
        >>> class Twos(WrapperEmbedder):
        ...     def _query(self, text): return [2.0, 2.0, 2.0]
        >>> Twos("twos", None).embed_query("hi")
        [2.0, 2.0, 2.0]
    """

    def __init__(self, model_name: str, dimension: int | None) -> None:
        expected = "must be an int >= 1 or None (probe it)"
        check_optional_int(dimension, "dimension", expected=expected)
        self.model_name = model_name
        self._dimension = dimension
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_name!r})"

    @property
    def dimension(self) -> int:
        """Vector length: given, learnt from the first embedding, or probed with a short text."""
        if self._dimension is None:
            size = len(self._query(_PROBE))
            with self._lock:
                if self._dimension is None:
                    self._dimension = size
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text (``[]`` for an empty list, without calling the model)."""
        items = validate_texts(texts)
        return self._checked(self._documents(items) if items else [], len(items))

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query."""
        return self._checked([self._query(validate_text(text))], 1)[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (the model's async method)."""
        items = validate_texts(texts)
        return self._checked(await self._adocuments(items) if items else [], len(items))

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query` (the model's async method)."""
        return self._checked([await self._aquery(validate_text(text))], 1)[0]

    def _checked(self, vectors: Sequence[Sequence[float]], expected: int) -> list[list[float]]:
        if len(vectors) != expected:
            msg = (
                f"{self!r} returned {len(vectors)} vectors for {expected} texts; the wrapped "
                "model must return one vector per text"
            )
            raise ConfigurationError(msg)
        out = [[float(x) for x in vector] for vector in vectors]
        if out and self._dimension is None:  # learn it from real output, no probe call
            with self._lock:
                if self._dimension is None:
                    self._dimension = len(out[0])
        check_dimension(out, self.dimension, source=repr(self))
        return out

    # Implemented per wrapped model.
    def _documents(self, texts: list[str]) -> Sequence[Sequence[float]]:
        raise NotImplementedError

    def _query(self, text: str) -> Sequence[float]:
        raise NotImplementedError

    async def _adocuments(self, texts: list[str]) -> Sequence[Sequence[float]]:
        raise NotImplementedError

    async def _aquery(self, text: str) -> Sequence[float]:
        raise NotImplementedError
