"""``MemoryManager``: the controller over short-term, working and long-term memory.

One object per (user, session): it records the conversation, keeps the task state,
consolidates what matters into long-term memory (by token threshold, on demand, or in a
background worker), resolves conflicts, forgets by policy, and packs the best context that
fits a token budget.

Managers are cheap handles over shared stores: :meth:`MemoryManager.open` can be called for
any number of users and sessions in one process on the same home (the stores are shared and
reference-counted), and :meth:`agentmem.MemoryService.manager` hands out handles that also
share the embedder, the LLM and one consolidation worker pool.

Example:
    >>> from agentmem import MemoryManager
    >>> mem = MemoryManager.open(user_id="alice", home=tmp_home)  # doctest: +SKIP
    >>> mem.process_interaction("I only write Python, tabs not spaces", "Noted.")  # doctest: +SKIP
    >>> ctx = mem.build_context("which language?", max_tokens=2000)  # doctest: +SKIP
    >>> ctx.ledger  # doctest: +SKIP
    {'system': ..., 'working_memory': ..., 'long_term': ..., 'recent': ..., 'query': ..., ...}
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from agentmem._async import run_in_executor
from agentmem._locks import holding, keyed_lock
from agentmem._sansio import Program, async_twin, call, twin
from agentmem.context import (
    Block,
    BuiltContext,
    InstructionsBlock,
    QueryBlock,
    RecalledBlock,
    ViewBlock,
    WorkingBlock,
    assemble_context,
)
from agentmem.controller.conflicts import ConflictDecision
from agentmem.controller.consolidation import ConsolidationReport, MemoryConsolidator
from agentmem.controller.forgetting import ForgettingPolicy, ForgettingReport
from agentmem.controller.retrieval import MemoryRetriever, Strategy
from agentmem.controller.scheduler import ConsolidationQueue
from agentmem.embeddings import Embedder
from agentmem.errors import ConfigurationError
from agentmem.llm import ChatModel
from agentmem.long_term.memory import LongTermMemory
from agentmem.long_term.store import ScoredRecord
from agentmem.short_term.summary import SummaryBufferMemory
from agentmem.stores.base import SessionStore
from agentmem.tokens import TokenCounter
from agentmem.types import Message, MessageLike, utcnow
from agentmem.working import WorkingMemory

__all__ = ["MemoryManager"]

logger = logging.getLogger(__name__)

UNCONSOLIDATED_KEY = "manager"


class MemoryManager:
    """The memory controller for one user and session (see the module docstring).

    Build it with :meth:`open` for the embedded defaults, or from parts.

    Args:
        short_term: The conversation (a summary buffer over the session store).
        working: The session's working memory.
        long_term: The user's long-term memory.
        consolidator: Moves conversation into long-term memory.
        forgetting: Default forgetting policy for :meth:`forget`.
        consolidate_every_tokens: Consolidate once this many tokens of conversation have
            accumulated since the last consolidation (``None``: only on demand).
        background: Run threshold-triggered consolidation in a background worker, so
            :meth:`process_interaction` never waits for it.
        system_prompt: Default system prompt of :meth:`build_context`.
        scheduler: The consolidation queue background runs go to (a service's, shared by
            its users). Without one, a private single-worker queue is made when needed and
            closed by :meth:`close`.
    """

    def __init__(
        self,
        *,
        short_term: SummaryBufferMemory,
        working: WorkingMemory,
        long_term: LongTermMemory,
        consolidator: MemoryConsolidator,
        forgetting: ForgettingPolicy | None = None,
        consolidate_every_tokens: int | None = 2000,
        background: bool = False,
        system_prompt: str | None = None,
        scheduler: ConsolidationQueue | None = None,
    ) -> None:
        self.short_term = short_term
        self.working = working
        self.long_term = long_term
        self.consolidator = consolidator
        self.forgetting = forgetting if forgetting is not None else ForgettingPolicy()
        self.retriever = MemoryRetriever(long_term, working=working, short_term=short_term)
        self.consolidate_every_tokens = consolidate_every_tokens
        self.background = background
        self.system_prompt = system_prompt
        self._scheduler = scheduler
        self._owns_scheduler = False
        # Every handle on one session shares these locks, wherever it was opened.
        key = (short_term.store, short_term.session_id)
        self._lock = keyed_lock(("pending", *key))
        self._consolidating = keyed_lock(("consolidate", *key))
        self._futures: set[concurrent.futures.Future[Any]] = set()
        self._owned: list[Callable[[], None]] = []

    @property
    def user_id(self) -> str:
        """Owner of the long-term memories."""
        return self.long_term.scope.user_id

    @property
    def session_id(self) -> str:
        """The current conversation."""
        return self.short_term.session_id

    @property
    def token_counter(self) -> TokenCounter:
        """Counts tokens for the target model."""
        return self.short_term.token_counter

    @classmethod
    def open(
        cls,
        *,
        user_id: str,
        session_id: str | None = None,
        home: str | Path | None = None,
        llm: ChatModel | None = None,
        embedder: Embedder | None = None,
        model: str = "gpt-4o",
        max_short_term_tokens: int = 2000,
        consolidate_every_tokens: int | None = 2000,
        background: bool = False,
        clock: Callable[[], datetime] | None = None,
        system_prompt: str | None = None,
    ) -> MemoryManager:
        """A manager on the embedded defaults: SQLite sessions and Qdrant Edge memories
        under ``home`` (``AGENTMEM_HOME``, else the per-user data directory), the local
        embedder, and ``llm`` if given (without one: no summaries, rounds as episodes).

        ``session_id`` defaults to a new id; pass an earlier one to resume a conversation.

        Any number of managers (users, sessions) can be open at once in one process on the
        same home: they share its stores, which close with the last manager. With
        ``AGENTMEM_QDRANT_URL`` / ``AGENTMEM_REDIS_URL`` set, the stores are the Qdrant
        server and Redis instead (see :mod:`agentmem.backends`). A server that holds many
        users is better served by one :class:`~agentmem.MemoryService`.
        """
        from agentmem.backends import BackendConfig, acquire_session_store

        config = BackendConfig.resolve(home)
        if config.redis_url is None:
            config.home.mkdir(parents=True, exist_ok=True)
        sessions = acquire_session_store(config)
        try:
            long_term = LongTermMemory.open(user_id=user_id, home=config.home, embedder=embedder)
        except BaseException:
            sessions.release()
            raise
        try:
            manager = cls.from_parts(
                user_id=user_id,
                session_id=session_id,
                sessions=sessions.value,
                long_term=long_term,
                llm=llm,
                model=model,
                max_short_term_tokens=max_short_term_tokens,
                consolidate_every_tokens=consolidate_every_tokens,
                background=background,
                clock=clock,
                system_prompt=system_prompt,
            )
        except BaseException:
            long_term.close()
            sessions.release()
            raise
        manager._owned = [long_term.close, sessions.release]
        return manager

    @classmethod
    def from_parts(
        cls,
        *,
        user_id: str,
        sessions: SessionStore,
        long_term: LongTermMemory,
        session_id: str | None = None,
        llm: ChatModel | None = None,
        model: str = "gpt-4o",
        max_short_term_tokens: int = 2000,
        consolidate_every_tokens: int | None = 2000,
        background: bool = False,
        clock: Callable[[], datetime] | None = None,
        system_prompt: str | None = None,
        token_counter: TokenCounter | None = None,
        scheduler: ConsolidationQueue | None = None,
    ) -> MemoryManager:
        """A manager over a given session store and long-term memory.

        A session may be shared by several users (a group chat): each user's consolidation
        keeps its own watermark and writes only that user's memories.
        """
        if user_id != long_term.scope.user_id:
            msg = (
                f"user_id {user_id!r} differs from the long-term memory's user "
                f"{long_term.scope.user_id!r}; pass the memory of that user"
            )
            raise ConfigurationError(msg)
        if session_id is None:
            session_id = f"{user_id}-{uuid.uuid4().hex[:12]}"
        counter = token_counter if token_counter is not None else TokenCounter(model)
        short_term = SummaryBufferMemory(
            llm,
            max_tokens=max_short_term_tokens,
            session_id=session_id,
            store=sessions,
            token_counter=counter,
        )
        working = WorkingMemory(
            session_id=session_id, store=sessions, clock=clock, token_counter=counter
        )
        consolidator = MemoryConsolidator(long_term, store=sessions, llm=llm)
        return cls(
            short_term=short_term,
            working=working,
            long_term=long_term,
            consolidator=consolidator,
            forgetting=ForgettingPolicy(clock=clock or utcnow),
            consolidate_every_tokens=consolidate_every_tokens,
            background=background,
            system_prompt=system_prompt,
            scheduler=scheduler,
        )

    # -- the conversation ------------------------------------------------------------------

    def _interaction(
        self, user_input: str, assistant_response: str, metadata: Mapping[str, Any] | None
    ) -> list[Message]:
        meta = dict(metadata or {})
        return [
            Message.create("user", user_input, metadata=meta),
            Message.create("assistant", assistant_response, metadata=meta),
        ]

    def _pending_after(
        self, state: dict[str, Any] | None, messages: list[Message]
    ) -> dict[str, Any]:
        tokens = sum(self.token_counter.count_message(m) for m in messages)
        return {"pending_tokens": int((state or {}).get("pending_tokens", 0)) + tokens}

    def _due(self, state: dict[str, Any]) -> bool:
        limit = self.consolidate_every_tokens
        return limit is not None and state["pending_tokens"] >= limit

    def record_messages(self, messages: Sequence[MessageLike]) -> ConsolidationReport | None:
        """Append messages to the conversation (a turn per user message); consolidate when
        the token threshold is crossed. Returns the consolidation report if it ran here
        (never in background mode).

        Adapters whose frameworks hand over whole message lists use this; a plain exchange
        is :meth:`process_interaction`.
        """
        batch = self.short_term.add_messages(messages)
        turns = sum(1 for m in batch if m.role == "user")
        if turns:
            self.working.advance_turn(turns)
        store = self.short_term.store
        with self._lock:
            previous = store.get_state(self.session_id, UNCONSOLIDATED_KEY)
            state = self._pending_after(previous, batch)
            store.set_state(self.session_id, UNCONSOLIDATED_KEY, state)
        if not batch or not self._due(state):
            return None
        if self.background:
            self._consolidate_in_background()
            return None
        return self.consolidate()

    async def arecord_messages(self, messages: Sequence[MessageLike]) -> ConsolidationReport | None:
        """Async twin of :meth:`record_messages` (background runs as an asyncio task)."""
        batch = await self.short_term.aadd_messages(messages)
        turns = sum(1 for m in batch if m.role == "user")
        if turns:
            await self.working.aadvance_turn(turns)
        store = self.short_term.store
        async with holding(self._lock):
            previous = await store.aget_state(self.session_id, UNCONSOLIDATED_KEY)
            state = self._pending_after(previous, batch)
            await store.aset_state(self.session_id, UNCONSOLIDATED_KEY, state)
        if not batch or not self._due(state):
            return None
        if self.background:
            self._consolidate_in_background()
            return None
        return await self.aconsolidate()

    def process_interaction(
        self,
        user_input: str,
        assistant_response: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> ConsolidationReport | None:
        """Record one exchange; consolidate when the token threshold is crossed.

        Returns the consolidation report if it ran here (never in background mode).
        """
        return self.record_messages(self._interaction(user_input, assistant_response, metadata))

    async def aprocess_interaction(
        self,
        user_input: str,
        assistant_response: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> ConsolidationReport | None:
        """Async twin of :meth:`process_interaction` (background runs as an asyncio task)."""
        return await self.arecord_messages(
            self._interaction(user_input, assistant_response, metadata)
        )

    def _consolidate_in_background(self) -> None:
        """Hand the session to the consolidation queue (sync and async callers alike: the
        run happens in a worker thread, so both modes behave the same)."""
        with self._lock:
            if self._scheduler is None:
                self._scheduler = ConsolidationQueue(workers=1)
                self._owns_scheduler = True
        key = (id(self.short_term.store), self.user_id, self.session_id)
        future = self._scheduler.submit(key, self.consolidate)
        if future is not None and future not in self._futures:
            self._futures.add(future)
            future.add_done_callback(self._futures.discard)

    def wait_for_background(self, timeout: float | None = None) -> None:
        """Wait until this handle's queued and running background consolidations finish."""
        futures = list(self._futures)
        if futures:
            concurrent.futures.wait(futures, timeout)

    async def await_background(self) -> None:
        """Async twin of :meth:`wait_for_background` (does not block the loop)."""
        futures = [asyncio.wrap_future(f) for f in list(self._futures)]
        if futures:
            await asyncio.gather(*futures, return_exceptions=True)

    # -- consolidation, remembering, forgetting ------------------------------------------

    def consolidate(self) -> ConsolidationReport:
        """Consolidate this session's messages not consolidated before (one run at a time)."""
        with self._consolidating:
            log = self.short_term.get_log()
            report = self.consolidator.consolidate_session(log, session_id=self.session_id)
            if report.error is None:
                with self._lock:
                    self.short_term.store.set_state(
                        self.session_id, UNCONSOLIDATED_KEY, {"pending_tokens": 0}
                    )
        return report

    async def aconsolidate(self) -> ConsolidationReport:
        """Async twin of :meth:`consolidate`."""
        async with holding(self._consolidating):
            log = await self.short_term.aget_log()
            report = await self.consolidator.aconsolidate_session(log, session_id=self.session_id)
            if report.error is None:
                async with holding(self._lock):
                    await self.short_term.store.aset_state(
                        self.session_id, UNCONSOLIDATED_KEY, {"pending_tokens": 0}
                    )
        return report

    def remember(
        self,
        content: str,
        memory_type: str = "semantic",
        *,
        importance: float = 0.7,
        **fields: Any,
    ) -> ConflictDecision:
        """Store a memory now, through conflict resolution (duplicates reinforce, updates
        supersede). Returns the decision."""
        fields.setdefault("source_session_id", self.session_id)
        record = self.long_term.new_record(content, memory_type, importance=importance, **fields)
        return self.consolidator.resolver.write(self.long_term, record)

    async def aremember(
        self,
        content: str,
        memory_type: str = "semantic",
        *,
        importance: float = 0.7,
        **fields: Any,
    ) -> ConflictDecision:
        """Async twin of :meth:`remember`."""
        fields.setdefault("source_session_id", self.session_id)
        record = self.long_term.new_record(content, memory_type, importance=importance, **fields)
        return await self.consolidator.resolver.awrite(self.long_term, record)

    def recall(self, query: str, top_k: int = 5, **kwargs: Any) -> list[ScoredRecord]:
        """Long-term memories relevant to ``query`` (see ``LongTermMemory.retrieve_memories``)."""
        return self.long_term.retrieve_memories(query, top_k, **kwargs)

    async def arecall(self, query: str, top_k: int = 5, **kwargs: Any) -> list[ScoredRecord]:
        """Async twin of :meth:`recall`."""
        return await self.long_term.aretrieve_memories(query, top_k, **kwargs)

    def forget(
        self, *, dry_run: bool = False, policy: ForgettingPolicy | None = None
    ) -> ForgettingReport:
        """Run a forgetting pass over this user's memories (``dry_run`` only reports)."""
        return (policy or self.forgetting).apply(self.long_term, dry_run=dry_run)

    async def aforget(
        self, *, dry_run: bool = False, policy: ForgettingPolicy | None = None
    ) -> ForgettingReport:
        """Async twin of :meth:`forget`."""
        return await (policy or self.forgetting).aapply(self.long_term, dry_run=dry_run)

    # -- working memory --------------------------------------------------------------------

    def update_working_memory(self, key: str, value: Any, ttl: float | None = None) -> None:
        """Set a working-memory variable (``ttl`` in seconds)."""
        self.working.set_variable(key, value, ttl=ttl)

    async def aupdate_working_memory(self, key: str, value: Any, ttl: float | None = None) -> None:
        """Async twin of :meth:`update_working_memory`."""
        await self.working.aset_variable(key, value, ttl=ttl)

    def record_reasoning_step(self, step: str) -> None:
        """Add a step to the working-memory scratchpad."""
        self.working.add_scratchpad_entry(step)

    async def arecord_reasoning_step(self, step: str) -> None:
        """Async twin of :meth:`record_reasoning_step`."""
        await self.working.aadd_scratchpad_entry(step)

    # -- context ---------------------------------------------------------------------------

    @twin
    def build_context(
        self,
        query: str,
        max_tokens: int = 2000,
        *,
        system_prompt: str | None = None,
        strategy: Strategy = "hybrid",
        top_k: int = 5,
        include_query: bool = True,
    ) -> Program[BuiltContext]:
        """Assemble system prompt, working memory, recalled memories, summary and recent
        turns into ``max_tokens`` exactly (layout, priorities and ledger: see
        :mod:`agentmem.context`).

        The strategy picks the blocks: ``hybrid`` all of them, ``recent`` the conversation,
        ``working`` the working memory, ``semantic`` memories by dense search only. The I/O
        comes first (recall, the session's new messages and summary, expired working-memory
        variables); the assembly then reads memory only and renders each block once.

        Example:
            >>> ctx = mem.build_context("which language?", max_tokens=2000)  # doctest: +SKIP
            >>> sum(ctx.ledger.values()) == ctx.token_count  # doctest: +SKIP
            True
        """
        retriever = self.retriever
        hits = yield from call(retriever.recall, retriever.arecall, query, strategy, top_k)
        blocks: list[Block] = [RecalledBlock(hits)]
        prompt = system_prompt if system_prompt is not None else self.system_prompt
        if prompt:
            blocks.append(InstructionsBlock(prompt))
        if strategy in ("working", "hybrid"):
            working = self.working
            room = WorkingBlock.room(max_tokens)
            # Rendered once here (purging expired variables, the only I/O); again, from
            # memory, only when the room left is smaller.
            text = yield from call(working.get_context_for_llm, working.aget_context_for_llm, room)
            blocks.append(WorkingBlock(working.get_context_for_llm, rendered=(room, text)))
        if strategy in ("recent", "hybrid"):
            short_term = self.short_term
            yield from call(short_term.refresh, short_term.arefresh)
            blocks.append(ViewBlock(lambda n: short_term.get_view(max_tokens=n, refresh=False)))
        if include_query and query:
            blocks.append(QueryBlock(query))
        return assemble_context(blocks, counter=self.token_counter, max_tokens=max_tokens)

    abuild_context = async_twin(build_context)

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Wait for this handle's background work, then release what :meth:`open` opened
        (shared stores close with their last user). A handle from a
        :class:`~agentmem.MemoryService` owns nothing: closing it only waits."""
        self.wait_for_background()
        if self._owns_scheduler and self._scheduler is not None:
            self._scheduler.close()
            self._scheduler, self._owns_scheduler = None, False
        owned, self._owned = self._owned, []
        for close in owned:
            close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close` (the blocking part runs in a worker thread)."""
        await self.await_background()
        await run_in_executor(self.close)

    def __enter__(self) -> MemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

