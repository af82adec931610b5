"""Who made a store's vectors: the identity of an embedder (model, dimension, weights).

Two models of the same dimension make vectors that fit the same store and mean nothing to
each other, so a store records more than the dimension: an :class:`EmbedderIdentity`.

* ``model``: the embedder's ``model_name``;
* ``dimension``: its vector size;
* ``fingerprint``: the sha256 of the model's weights when the embedder can tell it (the
  local :class:`~agentmem.embeddings.SentenceTransformerEmbedder`: the pinned or computed
  sha256 of ``model.safetensors``), else ``None`` (a remote API: the model name and the
  dimension are all there is).

Any embedder can state its fingerprint with a ``weights_sha256`` attribute (a wrapper that
has an ``inner`` embedder, such as :class:`~agentmem.embeddings.CachedEmbedder`, is looked
through). Two identities are the same embedder when their dimensions are equal and their
fingerprints, if both have one, are equal (a local model moved to another directory keeps
its identity), else their model names are.

Example:
    >>> class Constant:
    ...     model_name, dimension = "constant", 2
    >>> embedder_identity(Constant())
    EmbedderIdentity(model='constant', dimension=2, fingerprint=None)
    >>> a = EmbedderIdentity("a", 384, "f" * 64)
    >>> a.same_as(EmbedderIdentity("/models/a", 384, "f" * 64))  # moved: same weights
    True
    >>> a.same_as(EmbedderIdentity("a", 384, "e" * 64))  # same name, other weights
    False
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentmem.errors import InvalidValueError

__all__ = ["EmbedderIdentity", "embedder_identity"]

_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_MAX_WRAPPERS = 8  # inner-of-inner chains longer than this are not followed


@dataclass(frozen=True)
class EmbedderIdentity:
    """The identity of the embedder that made a store's vectors (see the module docstring).

    Attributes:
        model: The embedder's ``model_name``.
        dimension: Its vector size.
        fingerprint: sha256 (hex) of its weights, or ``None`` when unknown.
    """

    model: str
    dimension: int
    fingerprint: str | None = None

    def same_as(self, other: EmbedderIdentity) -> bool:
        """Whether ``other`` makes the same vectors: same dimension, and the same
        fingerprint when both have one, else the same model name."""
        if self.dimension != other.dimension:
            return False
        if self.fingerprint is not None and other.fingerprint is not None:
            return self.fingerprint == other.fingerprint
        return self.model == other.model

    def describe(self) -> str:
        """A short human description: ``'all-MiniLM-L6-v2' (384-d, weights 53aa5117…)``."""
        weights = f", weights {self.fingerprint[:8]}…" if self.fingerprint else ""
        return f"{self.model!r} ({self.dimension}-d{weights})"

    def to_json(self) -> dict[str, Any]:
        """As stored in a store's embedder record."""
        return {"model": self.model, "dimension": self.dimension, "fingerprint": self.fingerprint}

    @classmethod
    def from_json(cls, data: object) -> EmbedderIdentity:
        """Read :meth:`to_json`'s output back.

        Raises:
            InvalidValueError: ``data`` is not such a record.
        """
        if not isinstance(data, Mapping):
            msg = f"an embedder identity must be an object, got {type(data).__name__}"
            raise InvalidValueError(msg)
        model, dimension, fingerprint = (
            data.get("model"),
            data.get("dimension"),
            data.get("fingerprint"),
        )
        if not isinstance(model, str) or not model:
            msg = f"an embedder identity needs a model name, got {model!r}"
            raise InvalidValueError(msg)
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            msg = f"an embedder identity needs a positive dimension, got {dimension!r}"
            raise InvalidValueError(msg)
        if fingerprint is not None and not (
            isinstance(fingerprint, str) and _SHA256_RE.fullmatch(fingerprint)
        ):
            msg = f"an embedder fingerprint must be 64 lowercase hex digits, got {fingerprint!r}"
            raise InvalidValueError(msg)
        return cls(model, dimension, fingerprint)


def _fingerprint(embedder: object) -> str | None:
    current: object = embedder
    for _ in range(_MAX_WRAPPERS):
        value = getattr(current, "weights_sha256", None)
        if isinstance(value, str) and _SHA256_RE.fullmatch(value.lower()):
            return value.lower()
        inner = getattr(current, "inner", None)
        if inner is None:
            return None
        current = inner
    return None


def embedder_identity(embedder: Any) -> EmbedderIdentity:
    """The identity of ``embedder``: its ``model_name``, ``dimension`` and weights'
    fingerprint (its ``weights_sha256``, or its ``inner`` embedder's).

    Example:
        >>> from agentmem.embeddings import default_embedder
        >>> embedder_identity(default_embedder()).model  # doctest: +SKIP
        'sentence-transformers/all-MiniLM-L6-v2'
    """
    model = embedder.model_name
    dimension = embedder.dimension
    if not isinstance(model, str) or not model:
        msg = f"the embedder's model_name must be a non-empty string, got {model!r}"
        raise InvalidValueError(msg)
    return EmbedderIdentity(model, int(dimension), _fingerprint(embedder))
