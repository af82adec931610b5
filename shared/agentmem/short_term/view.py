"""The result of a short-term memory view: what the model will see, and what it will not."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentmem.types import Message

__all__ = ["ShortTermView"]


@dataclass(frozen=True)
class ShortTermView:
    """A budgeted view over a session log.

    Attributes:
        messages: The messages to send, in order (system messages first when preserved).
        token_count: Exact chat-format tokens of ``messages``, reply priming included.
        omitted: Messages of the log left out of the view (older ones, orphan tool
            results, or an oversized unit); they remain in the log.
        truncated: Ids of messages shown with their content cut to fit the budget.
        summary: The summary text included in the view, if any.

    Example:
        >>> from agentmem import ConversationBufferMemory
        >>> memory = ConversationBufferMemory(max_tokens=100)
        >>> _ = memory.add_message("user", "hi")
        >>> view = memory.get_view()
        >>> (len(view.messages), view.omitted)
        (1, 0)
    """

    messages: list[Message]
    token_count: int
    omitted: int = 0
    truncated: list[str] = field(default_factory=list)
    summary: str | None = None

    def to_dicts(self) -> list[dict[str, Any]]:
        """The messages in the OpenAI wire format."""
        return [m.to_dict() for m in self.messages]
