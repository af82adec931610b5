"""Deterministic fakes for fast unit tests. Never used by the library's defaults."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


class ScriptedChatModel:
    """A chat model that replays scripted replies, recording every prompt it receives.

    Each reply is a string (returned) or an exception instance (raised). When the script
    runs out, ``default`` is returned (or ``IndexError`` raised if it is ``None``).
    """

    def __init__(self, replies: Iterable[str | BaseException] = (), *, default: str | None = None):
        self.replies: list[str | BaseException] = list(replies)
        self.default = default
        self.calls: list[list[dict[str, Any]]] = []

    def _next(self, messages: Sequence[Mapping[str, Any]]) -> str:
        self.calls.append([dict(m) for m in messages])
        if self.replies:
            reply = self.replies.pop(0)
        elif self.default is not None:
            reply = self.default
        else:
            msg = "ScriptedChatModel ran out of replies"
            raise IndexError(msg)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def complete(self, messages: Sequence[Mapping[str, Any]], **_: Any) -> str:
        return self._next(messages)

    async def acomplete(self, messages: Sequence[Mapping[str, Any]], **_: Any) -> str:
        return self._next(messages)


class HashingEmbedder:
    """Deterministic bag-of-words embedder: each lower-cased word hashes to a dimension.

    Texts sharing words are similar; identical texts are identical. Fast and offline.
    """

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        self.model_name = f"hashing-{dimension}"
        self.calls = 0

    def _embed(self, text: str) -> list[float]:
        import hashlib
        import math

        vec = [0.0] * self.dimension
        for word in text.lower().split():
            word = word.strip(".,!?;:\"'()")
            if not word:
                continue
            digest = hashlib.sha256(word.encode()).digest()
            vec[int.from_bytes(digest[:4], "big") % self.dimension] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self._embed(text)

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)
