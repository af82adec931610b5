"""``AgentMemoryChatHistory``: a LangChain ``BaseChatMessageHistory`` on agentmem sessions.

Messages persist per session in any agentmem session store (SQLite, Redis, in-memory).
``messages`` returns the budgeted view (rolling summary + recent window, never splitting a
tool call from its results) by default, and the full log with ``view="full"`` or
:meth:`AgentMemoryChatHistory.get_full_messages`. Writes go through the store's own async
methods (Redis: native asyncio; SQLite: its executor), never a second thread hop here.

``BaseChatMessageHistory`` and ``RunnableWithMessageHistory`` are deprecated in
langchain-core 1.6.4+ (removal in 2.0). LangChain only warns when *its* classes are
instantiated directly; a subclass like this one is not warned about, exactly as LangChain's
own subclasses behave. ``RunnableWithMessageHistory`` still warns on construction; that
warning is LangChain's to give. The forward path is LangGraph persistence with
:class:`~langchain_agentmem.AgentMemoryStore` and
:class:`~langchain_agentmem.AgentMemoryMiddleware`.

Example:
    >>> from agentmem.stores.memory import InMemorySessionStore
    >>> from langchain_core.messages import HumanMessage
    >>> history = AgentMemoryChatHistory("s1", store=InMemorySessionStore())
    >>> history.add_messages([HumanMessage("I write Python with tabs")])
    >>> history.messages[0].content
    'I write Python with tabs'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from agentmem import ChatModel, MemoryManager, SummaryBufferMemory, TokenCounter
from agentmem.errors import ConfigurationError
from agentmem.integration import (
    DEFAULT_MODEL,
    SessionStore,
    aappend_turn,
    append_turn,
    turn_id_of,
)
from langchain_agentmem._convert import ContentPolicy, from_langchain, to_langchain_all
from langchain_agentmem.adapters import LangChainChatModel

__all__ = ["AgentMemoryChatHistory"]

View = Literal["budgeted", "full"]


class AgentMemoryChatHistory(BaseChatMessageHistory):
    """Persistent chat history for one session, with a token-budgeted view.

    Args:
        session_id: The conversation (1-256 characters from ``A-Z a-z 0-9 _ . : @ -``).
        store: Where messages live (``SQLiteSessionStore``, ``RedisSessionStore``, ...).
        llm: Summarizes evicted messages (a LangChain chat model or an agentmem
            ``ChatModel``); without one the view is a plain recent window.
        max_tokens: Budget of the view returned by :attr:`messages`.
        model: Target model whose tokenizer counts the budget.
        view: ``"budgeted"`` (summary + recent window) or ``"full"`` (the whole log).
        content_blocks: Policy for non-text content blocks: ``"keep"`` (lossless),
            ``"text"`` (drop them) or ``"error"`` (refuse them).
        memory: Use this short-term memory instead of building one (for example a
            ``MemoryManager``'s ``short_term``); ``store``/``llm``/``max_tokens`` are ignored.
        user_id: Whose conversation this is. A session belongs to the user who first used
            it (see :mod:`agentmem.controller.ownership`): on a store shared by several
            users, pass it, and another user's session is refused. Without it the history
            may use only sessions that no user owns (single-tenant apps).

    Raises:
        SessionOwnershipError: The session belongs to another user (or to a user, when no
            ``user_id`` is given); nothing was read or written.
    """

    def __init__(
        self,
        session_id: str,
        *,
        store: SessionStore | None = None,
        llm: BaseChatModel | ChatModel | None = None,
        max_tokens: int = 2000,
        model: str = DEFAULT_MODEL,
        view: View = "budgeted",
        content_blocks: ContentPolicy = "keep",
        memory: SummaryBufferMemory | None = None,
        user_id: str | None = None,
    ) -> None:
        if view not in ("budgeted", "full"):
            msg = f"view must be 'budgeted' or 'full', got {view!r}"
            raise ConfigurationError(msg)
        if content_blocks not in ("keep", "text", "error"):
            msg = f"content_blocks must be 'keep', 'text' or 'error', got {content_blocks!r}"
            raise ConfigurationError(msg)
        if memory is None:
            if store is None:
                msg = "pass store= (a SQLiteSessionStore, RedisSessionStore, ...) or memory="
                raise ConfigurationError(msg)
            summarizer = LangChainChatModel(llm) if isinstance(llm, BaseChatModel) else llm
            memory = SummaryBufferMemory(  # checks the session's owner first
                summarizer,
                max_tokens=max_tokens,
                session_id=session_id,
                store=store,
                token_counter=TokenCounter(model),
                user_id=user_id,
            )
        elif memory.session_id != session_id:
            msg = f"memory holds session {memory.session_id!r}, not {session_id!r}"
            raise ConfigurationError(msg)
        self.session_id = memory.session_id
        self.memory = memory
        self.view: View = view
        self.content_blocks: ContentPolicy = content_blocks

    @classmethod
    def from_manager(
        cls,
        manager: MemoryManager,
        *,
        view: View = "budgeted",
        content_blocks: ContentPolicy = "keep",
    ) -> AgentMemoryChatHistory:
        """The history of a :class:`~agentmem.MemoryManager`'s current session."""
        return cls(
            manager.session_id, memory=manager.short_term, view=view, content_blocks=content_blocks
        )

    @classmethod
    def factory(
        cls, *, store: SessionStore, **options: Any
    ) -> Callable[[str], AgentMemoryChatHistory]:
        """A ``get_session_history`` callable for ``RunnableWithMessageHistory``.

        Example:
            >>> from agentmem.stores.memory import InMemorySessionStore
            >>> get_history = AgentMemoryChatHistory.factory(store=InMemorySessionStore())
            >>> get_history("s1").session_id
            's1'
        """

        def get_session_history(session_id: str) -> AgentMemoryChatHistory:
            return cls(session_id, store=store, **options)

        return get_session_history

    # -- reading ---------------------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The budgeted view (default) or the full log, as LangChain messages."""
        if self.view == "full":
            return self.get_full_messages()
        self.memory.refresh()
        return to_langchain_all(self.memory.get_view().messages)

    async def aget_messages(self) -> list[BaseMessage]:
        """Async twin of :attr:`messages` (the store's own async reads)."""
        if self.view == "full":
            return await self.aget_full_messages()
        await self.memory.arefresh()
        return to_langchain_all((await self.memory.aget_view()).messages)

    def get_full_messages(self) -> list[BaseMessage]:
        """Every message of the session, oldest first (summaries never rewrite the log)."""
        return to_langchain_all(self.memory.get_log())

    async def aget_full_messages(self) -> list[BaseMessage]:
        """Async twin of :meth:`get_full_messages`."""
        return to_langchain_all(await self.memory.aget_log())

    # -- writing ---------------------------------------------------------------------------

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages (all validated before any is written).

        When every message has an id (LangChain's ``message.id``), the batch is stored
        once: adding it again (a retry after a failure whose outcome is unknown, such as a
        Redis :class:`~agentmem.errors.StoreUnavailableError`) stores nothing, in every
        session store. Messages without ids are appended on every call.

        Raises:
            InvalidMessageError: A message cannot be stored; nothing is written.
            TurnConflictError: These ids were added before with other content.

        Example:
            >>> from agentmem.stores.memory import InMemorySessionStore
            >>> from langchain_core.messages import AIMessage, HumanMessage
            >>> history = AgentMemoryChatHistory("s1", store=InMemorySessionStore())
            >>> said = [HumanMessage("hi", id="h-1"), AIMessage("hello", id="a-1")]
            >>> history.add_messages(said)
            >>> history.add_messages(said)  # a retry: stored once
            >>> len(history.get_full_messages())
            2
        """
        batch = [from_langchain(m, content_blocks=self.content_blocks) for m in messages]
        turn_id = turn_id_of("langchain", [m.id for m in messages])
        if turn_id is None:
            self.memory.add_messages(batch)
        else:
            append_turn(self.memory, batch, turn_id)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of :meth:`add_messages` (the store's own async append)."""
        batch = [from_langchain(m, content_blocks=self.content_blocks) for m in messages]
        turn_id = turn_id_of("langchain", [m.id for m in messages])
        if turn_id is None:
            await self.memory.aadd_messages(batch)
        else:
            await aappend_turn(self.memory, batch, turn_id)

    def clear(self) -> None:
        """Delete the session's messages and summary."""
        self.memory.clear()

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await self.memory.aclear()
