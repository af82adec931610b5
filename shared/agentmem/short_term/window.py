"""Sliding windows: the last N messages and/or the last T tokens."""

from __future__ import annotations

from typing import Any

from agentmem.errors import ConfigurationError
from agentmem.short_term.base import ShortTermMemory, check_limit, tighter
from agentmem.short_term.view import ShortTermView

__all__ = ["SlidingWindowMemory"]


class SlidingWindowMemory(ShortTermMemory):
    """The last ``window_size`` messages and/or the most recent ``max_tokens`` tokens.

    ``SlidingWindowMemory(window_size=None, max_tokens=T)`` is a pure token-budget window.

    System messages are kept at the front and do not count towards ``window_size`` when
    ``preserve_system`` is on. An assistant tool call and its results count as their
    number of messages and are kept or dropped together, so the window may hold fewer
    than ``window_size`` messages rather than split them.

    Args:
        window_size: Most non-system messages to show; ``None`` for no message limit
            (then ``max_tokens`` is required).
        preserve_system: Keep system messages at the front of the view.
        max_tokens: Optional token cap on the view as well.
        **kwargs: ``session_id``, ``store``, ``token_counter``, ``model``.

    Example:
        >>> memory = SlidingWindowMemory(window_size=2)
        >>> _ = memory.add_message("system", "Be brief.")
        >>> for text in ["a", "b", "c"]:
        ...     _ = memory.add_message("user", text)
        >>> [m["content"] for m in memory.get_messages()]
        ['Be brief.', 'b', 'c']
    """

    def __init__(
        self,
        window_size: int | None = 10,
        preserve_system: bool = True,
        *,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(preserve_system=preserve_system, **kwargs)
        self.window_size = check_limit(window_size, "window_size")
        self.max_tokens = check_limit(max_tokens, "max_tokens")
        if self.window_size is None and self.max_tokens is None:
            msg = "SlidingWindowMemory needs window_size, max_tokens or both"
            raise ConfigurationError(msg)

    def _view(self, max_tokens: int | None) -> ShortTermView:
        return self._window(
            max_tokens=tighter(max_tokens, self.max_tokens), max_messages=self.window_size
        )
