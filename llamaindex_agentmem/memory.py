"""``AgentMemory``: agentmem as a LlamaIndex ``BaseMemory``.

A drop-in for the ``memory=`` of ``SimpleChatEngine``, ``CondensePlusContextChatEngine``,
``FunctionAgent`` and ``ReActAgent``. Every message goes to an append-only session log on
disk (SQLite), tool calls included and counted exactly; :meth:`AgentMemory.get` returns

1. one system message labelled as recalled memory: the session's working memory and the
   long-term memories most relevant to ``input`` (or, without ``input``, to the latest user
   message), delimited as data;
2. the budgeted conversation view: the rolling summary (when an LLM is configured) and the
   newest messages, never splitting a tool call from its results;

all within ``token_limit`` tokens, counted with tiktoken in the chat format of ``model``, by
agentmem's one context pipeline (:meth:`MemoryManager.gather_context
<agentmem.MemoryManager.gather_context>` and its assembler: the oldest
messages go first, then the least relevant memories, then the least important
working-memory items; a memory the history already shows is left out). Each message is
tokenized once, so ``get()`` costs O(view), not O(history).

Conversation is consolidated into long-term memory (Qdrant) after every turn, in a
background thread (``consolidate_every_tokens`` and ``background`` change that): by LLM
extraction when an ``llm`` is given, else as episodes. A script that reads long-term memory
right after a conversation calls :meth:`AgentMemory.wait_for_consolidation` first.

A message with an id (``additional_kwargs["id"]``) is stored once however often it is put
(a retried step, a replay): see :meth:`AgentMemory.put`.

Sync methods use agentmem's sync APIs and async methods its async APIs: no event loop is
ever started, so sync calls work inside Jupyter's running loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms import LLM
from llama_index.core.memory.types import BaseMemory
from pydantic import ValidationError

from agentmem import BuiltContext, ChatModel, Embedder, MemoryManager, MemoryService
from agentmem.errors import ConfigurationError, ContextBudgetError
from agentmem.integration import (
    DEFAULT_MODEL,
    ManagerConfig,
    check_non_negative_int,
    check_positive_int,
    turn_id_of,
)
from llamaindex_agentmem._convert import from_agentmem, text_of, to_agentmem_many
from llamaindex_agentmem.adapters import as_chat_model, as_embedder

__all__ = ["AgentMemory"]

# A caller-reported prefix (SimpleChatEngine's system prompt) costs its text plus the
# framing of one system message: 3 per message and 1 for the role.
_PREFIX_FRAMING = 4
_MIN_BUDGET = 8
T = TypeVar("T")


def _check_options(options: dict[str, Any], known: Sequence[str]) -> None:
    """Unknown names and the integer options, as the core checks them (the rest: pydantic)."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        msg = f"unknown AgentMemory option(s) {unknown}; the options are {list(known)}"
        raise ConfigurationError(msg)
    if "token_limit" in options:
        hint = "; it is the token budget of get(), e.g. token_limit=3000"
        check_positive_int(options["token_limit"], "token_limit", hint=hint)
    if "top_k" in options:
        hint = "; it is how many memories get() recalls (0: none), e.g. top_k=5"
        check_non_negative_int(options["top_k"], "top_k", hint=hint)


class AgentMemory(BaseMemory):
    """agentmem as a LlamaIndex memory (see the module docstring).

    Build it with :meth:`from_service` (one user's session on a process-wide
    :class:`~agentmem.MemoryService`), :meth:`from_defaults` (embedded stores under ``home``;
    any number of users and sessions may share one home in one process) or
    :meth:`from_manager` (any :class:`~agentmem.MemoryManager`).

    Attributes:
        token_limit: Budget of what :meth:`get` returns (exact chat-format tokens).
        top_k: Long-term memories recalled per :meth:`get` (``0``: history only).
        include_working_memory: Put the session's working memory in the memory message.
        memory_share: Most of the budget recalled memories may take.
        working_share: Most of the budget working memory may take.

    Bad options (``token_limit=-5``, ``token_limit=float("nan")``, ``top_k="5"``, a share
    outside ``(0, 1]``, an unknown option name) raise
    :class:`~agentmem.errors.ConfigurationError` before any store is opened or named.

    Example:
        >>> from llama_index.core.llms import ChatMessage
        >>> memory = AgentMemory.from_defaults(user_id="alice", home=tmp_home)  # doctest: +SKIP
        >>> memory.put(ChatMessage(role="user", content="I indent with tabs"))  # doctest: +SKIP
        >>> [m.role.value for m in memory.get(input="indentation?")]  # doctest: +SKIP
        ['system', 'user']
    """

    token_limit: int = Field(default=3000, gt=0, description="Token budget of get().")
    top_k: int = Field(default=5, ge=0, le=1000, description="Memories recalled per get().")
    include_working_memory: bool = Field(default=True)
    memory_share: float = Field(default=0.3, gt=0.0, le=1.0)
    working_share: float = Field(default=0.2, gt=0.0, le=1.0)

    _manager: MemoryManager | None = PrivateAttr(default=None)
    _owned: bool = PrivateAttr(default=False)

    def __init__(self, **options: Any) -> None:
        """Check the options with agentmem errors (pydantic's would be ``ValidationError``,
        and it would read ``token_limit="100"`` as 100)."""
        _check_options(options, list(type(self).model_fields))
        try:
            super().__init__(**options)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            msg = f"invalid AgentMemory option: {problems}"
            raise ConfigurationError(msg) from None

    @classmethod
    def class_name(cls) -> str:
        """Serialization name."""
        return "AgentMemory"

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_manager(cls, manager: MemoryManager, **options: Any) -> AgentMemory:
        """Wrap an existing manager (its stores stay yours to close).

        Args:
            manager: The agentmem memory controller of one user and session.
            **options: ``token_limit``, ``top_k``, ``include_working_memory``,
                ``memory_share``, ``working_share``.

        Raises:
            ConfigurationError: Not a manager, or a bad or unknown option.
        """
        if not isinstance(manager, MemoryManager):
            msg = f"manager must be an agentmem MemoryManager, got {type(manager).__name__}"
            raise ConfigurationError(msg)
        memory = cls(**options)
        memory._manager = manager
        return memory

    @classmethod
    def from_service(
        cls,
        service: MemoryService,
        *,
        user_id: str,
        session_id: str | None = None,
        **options: Any,
    ) -> AgentMemory:
        """A memory for one user's session on a shared :class:`~agentmem.MemoryService`
        (the usual choice when one process serves many users; closing it closes nothing
        shared).

        Args:
            service: The process's memory service.
            user_id: Owner of the long-term memories.
            session_id: The conversation; pass an earlier one to resume it (default: new).
            **options: ``token_limit``, ``top_k``, ``include_working_memory``,
                ``memory_share``, ``working_share``.

        Raises:
            ConfigurationError: Not a service, or a bad or unknown option (checked before
                the session is named to the service).

        Example:
            >>> memory = AgentMemory.from_service(service, user_id="alice",  # doctest: +SKIP
            ...     session_id="alice-chat-1")
            >>> engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)  # doctest: +SKIP
        """
        if not isinstance(service, MemoryService):
            msg = f"service must be an agentmem MemoryService, got {type(service).__name__}"
            raise ConfigurationError(msg)
        memory = cls(**options)  # the options first: a bad one must not reach the service
        memory._manager = service.manager(user_id, session_id)
        return memory

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls,
        *,
        user_id: str,
        session_id: str | None = None,
        home: str | Path | None = None,
        llm: LLM | ChatModel | None = None,
        embed_model: BaseEmbedding | Embedder | None = None,
        model: str = DEFAULT_MODEL,
        token_limit: int = 3000,
        top_k: int = 5,
        consolidate_every_tokens: int | None = ManagerConfig.consolidate_every_tokens,
        background: bool = ManagerConfig.background,
        include_working_memory: bool = True,
    ) -> AgentMemory:
        """A memory on the embedded defaults: SQLite sessions and Qdrant Edge memories under
        ``home`` (``AGENTMEM_HOME``, else the per-user data directory).

        Args:
            user_id: Owner of the long-term memories.
            session_id: The conversation; pass an earlier one to resume it (default: new).
            home: Data directory.
            llm: Any LlamaIndex ``LLM`` (or agentmem ``ChatModel``) for summaries and memory
                extraction; without one the view is a window and rounds become episodes.
            embed_model: Any LlamaIndex ``BaseEmbedding`` (or agentmem ``Embedder``);
                default: the local all-MiniLM-L6-v2.
            model: Target model whose tokenizer and chat format are counted.
            token_limit: Budget of :meth:`get`.
            top_k: Long-term memories recalled per :meth:`get`.
            consolidate_every_tokens: Consolidate when a turn ends (an assistant answer is
                put) with at least this many new tokens: ``1`` (the default) after every
                turn; ``None`` only when you call :meth:`consolidate`.
            background: Consolidate in a background thread (default), so ``put`` never
                waits for it; ``False`` consolidates in the call that put the answer.
            include_working_memory: Put working memory in the memory message.

        Raises:
            ConfigurationError: A bad option (checked before the stores are opened).
        """
        # The options first: a bad one must not open the stores.
        memory = cls(
            token_limit=token_limit, top_k=top_k, include_working_memory=include_working_memory
        )
        memory._manager = MemoryManager.open(
            user_id=user_id,
            session_id=session_id,
            home=home,
            llm=as_chat_model(llm),
            embedder=as_embedder(embed_model),
            model=model,
            max_short_term_tokens=token_limit,
            consolidate_every_tokens=consolidate_every_tokens,
            background=background,
        )
        memory._owned = True
        return memory

    @property
    def manager(self) -> MemoryManager:
        """The agentmem controller behind this memory (working memory, recall, forgetting)."""
        if self._manager is None:
            msg = "AgentMemory has no manager: build it with from_defaults() or from_manager()"
            raise ConfigurationError(msg)
        return self._manager

    @property
    def session_id(self) -> str:
        """The conversation this memory holds."""
        return self.manager.session_id

    @property
    def user_id(self) -> str:
        """Owner of the long-term memories."""
        return self.manager.user_id

    @property
    def tokenizer_fn(self) -> Any:
        """Tokenizer of the target model (chat engines use it to size their prefix)."""
        return self.manager.token_counter.encode

    # -- reading ---------------------------------------------------------------------------

    def _budget(self, kwargs: dict[str, Any]) -> int:
        prefix = int(kwargs.get("initial_token_count") or 0)
        budget = self.token_limit - (prefix + _PREFIX_FRAMING if prefix > 0 else 0)
        if budget < _MIN_BUDGET:
            msg = (
                f"token_limit={self.token_limit} leaves no room after the caller's "
                f"{prefix}-token prefix; raise token_limit"
            )
            raise ConfigurationError(msg)
        return budget

    @staticmethod
    def _query(input: str | ChatMessage | None) -> str | None:
        """``input`` as text; ``None`` (the latest user message) when it says nothing."""
        if isinstance(input, ChatMessage):
            input = text_of(input)
        return input if input and input.strip() else None

    def _gather(
        self, gather: Callable[..., T], input: str | ChatMessage | None, kwargs: dict[str, Any]
    ) -> T:
        """``gather`` (the manager's ``gather_context`` or ``agather_context``) called for
        :meth:`get`: the session's view with its newest unit required, the working memory
        and the memories recalled for ``input``, within the budget."""
        return gather(
            self._query(input),
            self._budget(kwargs),
            system_prompt="",  # the chat engine sends its own
            top_k=self.top_k,
            memory_share=self.memory_share,
            working_share=self.working_share if self.include_working_memory else 0.0,
            include_query=False,  # the session's newest message is the query
        )

    def _too_small(self, exc: ContextBudgetError) -> ContextBudgetError:
        msg = (
            f"{exc} (max_tokens is AgentMemory's token_limit={self.token_limit}, less the "
            "caller's prefix: raise token_limit, or split the message, e.g. fewer tool "
            "calls per assistant message)"
        )
        return ContextBudgetError(msg)

    @staticmethod
    def _messages(built: BuiltContext) -> list[ChatMessage]:
        """The memory message and the history, as LlamaIndex messages."""
        head = [ChatMessage(role=MessageRole.SYSTEM, content=built.system)] if built.system else []
        return [*head, *(from_agentmem(m) for m in built.history)]

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """The memory message and the budgeted history, within ``token_limit``.

        The session's newest unit (the latest message, or an assistant tool call with its
        results) is always returned whole, as the LangChain middleware keeps the latest
        one: what is left out for room is older history, then memories.

        Args:
            input: What to recall memories for (default: the latest user message).
            **kwargs: ``initial_token_count``: tokens the caller puts before these
                messages (``SimpleChatEngine`` passes its system prompt's).

        Raises:
            ContextBudgetError: The newest unit alone (e.g. an assistant message with
                thousands of tool calls) does not fit ``token_limit``; raised before
                anything is recalled or changed. Raise ``token_limit``.
        """
        try:
            built = self._gather(self.manager.gather_context, input, kwargs)
        except ContextBudgetError as exc:
            raise self._too_small(exc) from None
        return self._messages(built)

    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """Async twin of :meth:`get`."""
        try:
            built = await self._gather(self.manager.agather_context, input, kwargs)
        except ContextBudgetError as exc:
            raise self._too_small(exc) from None
        return self._messages(built)

    def get_all(self) -> list[ChatMessage]:
        """The whole conversation, oldest first (nothing is ever dropped from the log)."""
        return [from_agentmem(m) for m in self.manager.get_log()]

    async def aget_all(self) -> list[ChatMessage]:
        """Async twin of :meth:`get_all`."""
        return [from_agentmem(m) for m in await self.manager.aget_log()]

    # -- writing ---------------------------------------------------------------------------

    def put(self, message: ChatMessage) -> None:
        """Append one message (tool calls and results included) to the session log.

        ``additional_kwargs`` are kept and come back from :meth:`get` and :meth:`get_all`
        as they went in, so they must be JSON data (tuples come back as lists).

        A message with an id (``additional_kwargs["id"]``, a string) is stored once: putting
        it again (a retried workflow step, a replay) stores nothing. LlamaIndex's own
        messages carry no id, so without one every put appends.

        Raises:
            InvalidMessageError: The message cannot be stored: ``additional_kwargs`` that
                are not JSON data (a client object, NaN), text with a lone surrogate.
                Nothing is written.
            TurnConflictError: A message with this id was put before with other content.

        Example:
            >>> said = ChatMessage(role="user", content="hi", additional_kwargs={"id": "m-1"})
            >>> memory.put(said)  # doctest: +SKIP
            >>> memory.put(said)  # a retry: stored once  # doctest: +SKIP
            >>> len(memory.get_all())  # doctest: +SKIP
            1
        """
        self.put_messages([message])

    async def aput(self, message: ChatMessage) -> None:
        """Async twin of :meth:`put`."""
        await self.aput_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Append messages atomically (all are checked, as :meth:`put` does, before any is
        written); consolidate when the token threshold is crossed. When every message has an
        id (see :meth:`put`), the batch is stored once: put it again as the same batch (its
        messages put one by one are other puts)."""
        self.manager.record_messages(to_agentmem_many(messages), turn_id=_turn_id(messages))

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Async twin of :meth:`put_messages`."""
        await self.manager.arecord_messages(to_agentmem_many(messages), turn_id=_turn_id(messages))

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the conversation with ``messages`` (starts the session over, see
        :meth:`reset`)."""
        self.reset()
        self.put_messages(messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Async twin of :meth:`set`."""
        await self.areset()
        await self.aput_messages(messages)

    def reset(self) -> None:
        """Start the session over: its conversation, summary and working memory are
        deleted. Long-term memories (the user's) are kept."""
        self.manager.clear_session()

    async def areset(self) -> None:
        """Async twin of :meth:`reset`."""
        await self.manager.aclear_session()

    # -- consolidation and lifecycle ------------------------------------------------------

    def consolidate(self) -> int:
        """Consolidate the conversation into long-term memory now; returns memories written."""
        return self.manager.consolidate().written

    async def aconsolidate(self) -> int:
        """Async twin of :meth:`consolidate`."""
        return (await self.manager.aconsolidate()).written

    def wait_for_consolidation(self, timeout: float | None = None) -> bool:
        """Wait until this memory's background consolidations have finished: for tests and
        scripts that read long-term memory (e.g. from the user's next session) right after
        a conversation. :meth:`close` waits for them too.

        Returns:
            ``True`` when nothing of this memory's is queued or running; ``False`` when
            ``timeout`` seconds passed first (the work goes on in the background).

        Example:
            >>> engine.chat("I indent Python with tabs.")  # doctest: +SKIP
            >>> memory.wait_for_consolidation(timeout=60)  # doctest: +SKIP
            True
            >>> later = AgentMemory.from_defaults(user_id="alice")  # doctest: +SKIP
            >>> "tabs" in later.get(input="how do I indent?")[0].content  # doctest: +SKIP
            True
        """
        return self.manager.wait_for_background(timeout)

    async def await_consolidation(self, timeout: float | None = None) -> bool:
        """Async twin of :meth:`wait_for_consolidation` (does not block the loop)."""
        return await self.manager.await_background(timeout)

    def close(self) -> None:
        """Close the stores :meth:`from_defaults` opened (a wrapped manager stays open)."""
        if self._owned and self._manager is not None:
            self._manager.close()
            self._owned = False

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        if self._owned and self._manager is not None:
            await self._manager.aclose()
            self._owned = False

    def __enter__(self) -> AgentMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _turn_id(messages: Sequence[ChatMessage]) -> str | None:
    """The turn id of a put: from the messages' ids (``additional_kwargs["id"]``), when
    every message has one; ``None`` (a plain append) otherwise."""
    return turn_id_of("llamaindex", [m.additional_kwargs.get("id") for m in messages])
