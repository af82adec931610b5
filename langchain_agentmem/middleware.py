"""``AgentMemoryMiddleware``: agentmem around every model call of a LangChain 1.x agent.

Before each model call it recalls long-term memories relevant to the latest user message
and assembles the request through agentmem's one context pipeline
(:meth:`MemoryManager.gather_context <agentmem.MemoryManager.gather_context>`): the
system prompt, the session's rolling summary, its working memory and the recalled
memories (each a delimited block, stored text escaped) in the system message, then the
conversation trimmed so the request — system prompt, messages *and tool schemas* — fits
``max_tokens`` exactly (tool calls never split from their results; oldest messages go
first, then the summary, then the least relevant memories, then the least important
working-memory items). After a call that
ends the turn (an answer without tool calls), it records the exchange in the session, once:
the turn is named by the LangGraph id of its user message, so a retried model call or a turn
replayed from a checkpoint is not stored again (see ``process_interaction(turn_id=...)``;
a replay that answers differently keeps the answer recorded first). It then hands the
exchange to consolidation: with the defaults, the manager consolidates every turn in a
background worker, so what a user said is recalled in the user's next thread and the
model call never waits for it (``MemoryService.wait_for_consolidation`` waits, in tests).

One middleware serves many users: given a :class:`~agentmem.MemoryService`, it resolves
the user from the run's runtime context (``user_id``) and the session from the LangGraph
``thread_id`` on every call, and keeps no per-request state. Given one
:class:`~agentmem.MemoryManager`, it serves that user and session (single-user scripts).

What each call sent is logged (``DEBUG``, logger ``langchain_agentmem.middleware``) and
returned in the final message's ``response_metadata["agentmem"]``: prompt tokens, budget,
memories recalled, messages kept, what was left out, user and session.

Example:
    >>> from dataclasses import dataclass
    >>> from langchain.agents import create_agent  # doctest: +SKIP
    >>> @dataclass
    ... class Ctx:
    ...     user_id: str
    >>> agent = create_agent(model, tools=create_memory_tools(service),  # doctest: +SKIP
    ...     middleware=[AgentMemoryMiddleware(service, max_tokens=4000)], context_schema=Ctx)
    >>> agent.invoke({"messages": [{"role": "user", "content": "hi"}]},  # doctest: +SKIP
    ...     context=Ctx(user_id="alice"), config={"configurable": {"thread_id": "a-1"}})
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal, TypeVar

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from agentmem import BuiltContext, MemoryManager, MemoryService
from agentmem.errors import ConfigurationError, TurnConflictError
from agentmem.integration import MAX_TURN_ID_LENGTH, check_max_tokens, check_share, text_problem
from langchain_agentmem._convert import from_langchain
from langchain_agentmem._resolve import check_source, resolve_manager, thread_id_of

__all__ = ["AgentMemoryMiddleware"]

logger = logging.getLogger(__name__)

Consolidate = Literal["threshold", "every_turn", "never"]
T = TypeVar("T")


def _last_user_text(messages: Sequence[BaseMessage]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            text = message.text.strip()
            return text or None
    return None


def _turn_id(messages: Sequence[BaseMessage]) -> str | None:
    """The run's stable id of the turn: the LangGraph id of its user message (the graph's
    ``add_messages`` gives every message one, kept in the checkpoint), so a retried model
    call or a turn replayed from a checkpoint names the same turn."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            if not message.id:
                return None
            name = f"langgraph:{message.id}"
            if len(name) > MAX_TURN_ID_LENGTH or text_problem(name, what="id") is not None:
                digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
                return f"langgraph-sha256:{digest}"
            return name
    return None


def tool_schemas(tools: Sequence[BaseTool | dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function schemas of the request's tools (provider-native dicts kept as is)."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        if isinstance(tool, Mapping) and "function" not in tool and "name" not in tool:
            continue  # a provider built-in tool (web search, ...): no schema we can count
        out.append(convert_to_openai_tool(tool))
    return out


def _final_answer(response: ModelResponse[Any]) -> str | None:
    for message in reversed(response.result):
        if isinstance(message, AIMessage):
            return None if message.tool_calls else (message.text or None)
    return None


@dataclass(eq=False, repr=False)
class AgentMemoryMiddleware(AgentMiddleware):
    """Memory for ``create_agent``: recall, exact budgeting, and consolidation.

    Args:
        memory: A :class:`~agentmem.MemoryService` (the user and session are resolved per
            call) or one user's and session's :class:`~agentmem.MemoryManager`.
        max_tokens: Hard budget of every model request (system prompt, messages, tools).
        top_k: How many long-term memories to recall per call.
        memory_share: Most of the budget recalled memories may take.
        working_share: Most of the budget the session's working memory may take
            (``0``: leave it out).
        consolidate: ``"threshold"`` (the default: as the manager's
            ``consolidate_every_tokens`` and ``background`` say; by default every turn, in
            the background), ``"every_turn"`` (every turn, in the model call, before the
            answer is returned) or ``"never"`` (the middleware starts none: it records the
            conversation, and the manager's own ``consolidate_every_tokens`` still applies;
            build the manager or service with ``consolidate_every_tokens=None`` to keep
            conversations out of long-term memory).
        record_turns: Record each finished exchange in the session log.
        user_key: Name of the user id in the runtime context (attribute or key).
    """

    memory: MemoryService | MemoryManager
    _: KW_ONLY
    max_tokens: int
    top_k: int = 5
    memory_share: float = 0.3
    working_share: float = 0.2
    consolidate: Consolidate = "threshold"
    record_turns: bool = True
    user_key: str = "user_id"

    def __post_init__(self) -> None:
        self.memory = check_source(self.memory, "AgentMemoryMiddleware")
        check_max_tokens(self.max_tokens)
        check_share(self.memory_share, "memory_share")
        check_share(self.working_share, "working_share")
        if self.consolidate not in ("threshold", "every_turn", "never"):
            msg = (
                "consolidate must be 'threshold', 'every_turn' or 'never', "
                f"got {self.consolidate!r}"
            )
            raise ConfigurationError(msg)

    @property
    def name(self) -> str:
        """Middleware name shown in the agent graph."""
        return "AgentMemoryMiddleware"

    def manager_for(self, request: ModelRequest[Any]) -> MemoryManager:
        """The memory of the request's user (runtime context) and thread (``thread_id``).

        Raises:
            ConfigurationError: The runtime context has no user, or the run no thread_id.
            InvalidSessionIdError: The thread_id is not a valid session id.
        """
        runtime = request.runtime
        info = getattr(runtime, "execution_info", None)
        thread_id = getattr(info, "thread_id", None)
        if thread_id is None and isinstance(self.memory, MemoryService):
            thread_id = thread_id_of(_run_config())
        return resolve_manager(
            self.memory,
            context=getattr(runtime, "context", None),
            thread_id=thread_id,
            user_key=self.user_key,
        )

    def _gather(self, gather: Callable[..., T], request: ModelRequest[Any], query: str | None) -> T:
        """``gather`` (the manager's ``gather_context`` or ``agather_context``) called for
        the request: its messages are the history, its tool schemas are counted, the
        session's summary, working memory and the memories recalled for ``query`` go into
        its system message."""
        return gather(
            query,
            self.max_tokens,
            history=[from_langchain(m) for m in request.messages],
            tools=tool_schemas(request.tools),
            system_prompt=request.system_prompt or "",
            top_k=self.top_k if query else 0,
            memory_share=self.memory_share,
            working_share=self.working_share,
            include_query=False,  # the agent's messages end with it already
        )

    def _fitted(
        self, manager: MemoryManager, request: ModelRequest[Any], built: BuiltContext
    ) -> ModelRequest[Any]:
        """The request with what was assembled: the messages kept, the system message."""
        logger.debug(
            "model request of user %r, session %r fitted to %d of %d tokens (%d memories, "
            "left out: %s)",
            manager.user_id,
            manager.session_id,
            built.token_count,
            self.max_tokens,
            len(built.recalled),
            built.omitted,
        )
        return request.override(
            messages=[request.messages[i] for i in built.kept],
            system_message=SystemMessage(built.system) if built.system else None,
        )

    def _report(
        self, manager: MemoryManager, built: BuiltContext, response: ModelResponse[Any]
    ) -> ModelResponse[Any]:
        """The response with what was sent in its last AI message's metadata."""
        report = {
            "prompt_tokens": built.token_count,
            "max_tokens": self.max_tokens,
            "recalled": len(built.recalled),
            "kept_messages": len(built.kept),
            "omitted": dict(built.omitted),
            "user_id": manager.user_id,
            "session_id": manager.session_id,
        }
        result = list(response.result)
        for i in range(len(result) - 1, -1, -1):
            message = result[i]
            if isinstance(message, AIMessage):
                metadata = {**message.response_metadata, "agentmem": report}
                result[i] = message.model_copy(update={"response_metadata": metadata})
                break
        return ModelResponse(result=result, structured_response=response.structured_response)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Recall, fit the budget, call the model, then record and consolidate."""
        manager = self.manager_for(request)
        query = _last_user_text(request.messages)
        built = self._gather(manager.gather_context, request, query)
        response = handler(self._fitted(manager, request, built))
        answer = _final_answer(response)
        if query and answer and self.record_turns:
            try:
                manager.process_interaction(query, answer, turn_id=_turn_id(request.messages))
            except TurnConflictError:
                _replayed(manager)
            if self.consolidate == "every_turn":
                manager.consolidate()
        return self._report(manager, built, response)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        manager = await asyncio.to_thread(self.manager_for, request)
        query = _last_user_text(request.messages)
        built = await self._gather(manager.agather_context, request, query)
        response = await handler(self._fitted(manager, request, built))
        answer = _final_answer(response)
        if query and answer and self.record_turns:
            try:
                await manager.aprocess_interaction(
                    query, answer, turn_id=_turn_id(request.messages)
                )
            except TurnConflictError:
                _replayed(manager)
            if self.consolidate == "every_turn":
                await manager.aconsolidate()
        return self._report(manager, built, response)


def _replayed(manager: MemoryManager) -> None:
    """A turn already recorded answered anew (a retried model call, a replay from a
    checkpoint): the session keeps the answer recorded first, once."""
    logger.info(
        "session %r: the turn was recorded before with another answer (a retry or a "
        "replay); the first answer is kept",
        manager.session_id,
    )


def _run_config() -> dict[str, Any] | None:
    """The LangGraph run's config, when called inside a run."""
    from langgraph.config import get_config

    try:
        return dict(get_config())
    except RuntimeError:  # outside a runnable context
        return None
