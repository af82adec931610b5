"""Deterministic fakes for fast unit tests. Never used by the library's defaults."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tests.fake_embedder import HashingEmbedder

__all__ = ["HashingEmbedder", "ScriptedChatModel"]


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
