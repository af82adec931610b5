"""The conversation buffer: the whole conversation, capped by tokens."""

from __future__ import annotations

from typing import Any

from agentmem.short_term.base import ShortTermMemory, check_limit, tighter
from agentmem.short_term.view import ShortTermView

__all__ = ["ConversationBufferMemory"]


class ConversationBufferMemory(ShortTermMemory):
    """Every message, up to ``max_tokens``; past the cap the oldest turns drop out of the view.

    The log keeps everything (see :meth:`get_all_messages`). Tool calls and their results
    drop out together; system messages stay at the front.

    Args:
        max_tokens: Cap on the view (chat-format tokens, reply priming included);
            ``None`` shows the whole log.
        **kwargs: ``session_id``, ``store``, ``token_counter``, ``model``, ``preserve_system``
            (see :class:`~agentmem.short_term.base.ShortTermMemory`).

    Example:
        >>> memory = ConversationBufferMemory(max_tokens=50)
        >>> for i in range(20):
        ...     _ = memory.add_message("user", f"message number {i}")
        >>> memory.get_token_count() <= 50
        True
        >>> len(memory.get_all_messages())
        20
    """

    def __init__(self, max_tokens: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_tokens = check_limit(max_tokens, "max_tokens")

    def _view(self, max_tokens: int | None) -> ShortTermView:
        return self._window(max_tokens=tighter(max_tokens, self.max_tokens))
