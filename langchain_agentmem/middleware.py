"""``AgentMemoryMiddleware``: agentmem around every model call of a LangChain 1.x agent.

Before each model call it recalls long-term memories relevant to the latest user message,
injects them into the system prompt as delimited data, adds the session's rolling summary,
and trims the conversation so the request — system prompt, messages *and tool schemas* —
fits ``max_tokens`` exactly (tool calls never split from their results). After a call that
ends the turn (an answer without tool calls), it records the exchange in the session and
hands it to consolidation (on the manager's token threshold, or every turn).

Example:
    >>> from langchain.agents import create_agent  # doctest: +SKIP
    >>> agent = create_agent(model, tools=create_memory_tools(manager),  # doctest: +SKIP
    ...     middleware=[AgentMemoryMiddleware(manager, max_tokens=4000)])
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from agentmem.errors import ConfigurationError
from agentmem.long_term.store import ScoredRecord
from agentmem.manager import MemoryManager
from langchain_agentmem._budget import Fitted, fit_request, tool_schemas

__all__ = ["AgentMemoryMiddleware"]

logger = logging.getLogger(__name__)

Consolidate = Literal["threshold", "every_turn", "never"]


def _last_user_text(messages: Sequence[BaseMessage]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            text = message.text.strip()
            return text or None
    return None


def _final_answer(response: ModelResponse[Any]) -> str | None:
    for message in reversed(response.result):
        if isinstance(message, AIMessage):
            return None if message.tool_calls else (message.text or None)
    return None


class AgentMemoryMiddleware(AgentMiddleware):
    """Memory for ``create_agent``: recall, exact budgeting, and consolidation.

    Args:
        manager: The user's and session's :class:`~agentmem.MemoryManager`.
        max_tokens: Hard budget of every model request (system prompt, messages, tools).
        top_k: How many long-term memories to recall per call.
        memory_share: Most of the budget recalled memories may take.
        consolidate: ``"threshold"`` (the manager's ``consolidate_every_tokens``),
            ``"every_turn"`` or ``"never"`` (only record the conversation).
        record_turns: Record each finished exchange in the session log.
    """

    def __init__(
        self,
        manager: MemoryManager,
        *,
        max_tokens: int,
        top_k: int = 5,
        memory_share: float = 0.3,
        consolidate: Consolidate = "threshold",
        record_turns: bool = True,
    ) -> None:
        super().__init__()
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            msg = f"max_tokens must be a positive integer, got {max_tokens!r}"
            raise ConfigurationError(msg)
        if not 0.0 <= memory_share <= 1.0:
            msg = f"memory_share must be in [0, 1], got {memory_share!r}"
            raise ConfigurationError(msg)
        if consolidate not in ("threshold", "every_turn", "never"):
            msg = f"consolidate must be 'threshold', 'every_turn' or 'never', got {consolidate!r}"
            raise ConfigurationError(msg)
        self.manager = manager
        self.max_tokens = max_tokens
        self.top_k = top_k
        self.memory_share = memory_share
        self.consolidate = consolidate
        self.record_turns = record_turns
        self.last_fit: Fitted | None = None

    @property
    def name(self) -> str:
        """Middleware name shown in the agent graph."""
        return "AgentMemoryMiddleware"

    def _apply(self, request: ModelRequest[Any], hits: list[ScoredRecord]) -> ModelRequest[Any]:
        fitted = fit_request(
            self.manager.token_counter,
            max_tokens=self.max_tokens,
            system=request.system_prompt or "",
            messages=request.messages,
            tools=tool_schemas(request.tools),
            hits=hits,
            summary=self.manager.short_term.summary,
            memory_share=self.memory_share,
        )
        self.last_fit = fitted
        logger.debug("model request fitted to %d of %d tokens", fitted.tokens, self.max_tokens)
        return request.override(
            messages=[request.messages[i] for i in fitted.keep],
            system_message=SystemMessage(fitted.system) if fitted.system else None,
        )

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Recall, fit the budget, call the model, then record and consolidate."""
        query = _last_user_text(request.messages)
        hits = self.manager.recall(query, self.top_k) if query else []
        response = handler(self._apply(request, hits))
        answer = _final_answer(response)
        if query and answer and self.record_turns:
            self.manager.process_interaction(query, answer)
            if self.consolidate == "every_turn":
                self.manager.consolidate()
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        query = _last_user_text(request.messages)
        hits = await self.manager.arecall(query, self.top_k) if query else []
        await self.manager.short_term.arefresh()
        response = await handler(self._apply(request, hits))
        answer = _final_answer(response)
        if query and answer and self.record_turns:
            await self.manager.aprocess_interaction(query, answer)
            if self.consolidate == "every_turn":
                await self.manager.aconsolidate()
        return response
