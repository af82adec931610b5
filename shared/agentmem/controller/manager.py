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

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from typing_extensions import Unpack

from agentmem import context
from agentmem._sansio import Program, async_twin, blocking, call, twin
from agentmem._util.delegate import Delegate, ReadOnlyDelegate
from agentmem.context import BuiltContext, assemble_context, check_required, check_share
from agentmem.controller.builder import ManagerBuilder, ManagerOptions
from agentmem.controller.config import ManagerConfig, ManagerSettings
from agentmem.controller.conflicts import ConflictDecision
from agentmem.controller.consolidation import ConsolidationReport, MemoryConsolidator
from agentmem.controller.forgetting import ForgettingPolicy, ForgettingReport
from agentmem.controller.retrieval import MemoryRetriever, Strategy
from agentmem.controller.scheduler import ConsolidationQueue, ConsolidationScheduler
from agentmem.controller.turns import record_turn
from agentmem.embeddings import Embedder
from agentmem.errors import InvalidMessageError, InvalidValueError
from agentmem.inspector.recent import RecentContexts
from agentmem.llm import ChatModel
from agentmem.long_term.memory import LongTermMemory
from agentmem.long_term.records import MemoryRecord
from agentmem.long_term.store import ScoredRecord
from agentmem.short_term.summary import SummaryBufferMemory
from agentmem.stores.base import SessionStore
from agentmem.tokens import TokenCounter
from agentmem.types import Message, MessageLike, to_message
from agentmem.working import WorkingMemory

__all__ = ["MemoryManager"]

logger = logging.getLogger(__name__)


class MemoryManager:
    """The memory controller for one user and session (see the module docstring).

    Build it with :meth:`open` for the embedded defaults, or :meth:`from_parts` over given
    stores; both assemble it with :class:`~agentmem.controller.builder.ManagerBuilder` from
    a :class:`~agentmem.controller.config.ManagerConfig`. The manager is the facade: when
    consolidation runs (threshold, background worker, one run per session at a time) is
    its :attr:`scheduler`'s business.

    Args:
        short_term: The conversation (a summary buffer over the session store).
        working: The session's working memory.
        long_term: The user's long-term memory.
        consolidator: Moves conversation into long-term memory.
        forgetting: Default forgetting policy for :meth:`forget`.
        consolidate_every_tokens: Consolidate when a turn ends with at least this many
            tokens of conversation accumulated since the last consolidation (default ``1``:
            after every turn; ``None``: only on demand).
        background: Run threshold-triggered consolidation in a background worker, so
            :meth:`process_interaction` never waits for it (default ``True``).
        system_prompt: Default system prompt of :meth:`build_context`.
        scheduler: The consolidation queue background runs go to (a service's, shared by
            its users). Without one, a private single-worker queue is made when needed and
            closed by :meth:`close`.
        on_close: Called by :meth:`close` after the background work (releases what the
            manager owns, e.g. the stores :meth:`open` acquired).

    Example:
        >>> mem = MemoryManager.from_parts(  # doctest: +SKIP
        ...     user_id="alice", sessions=sessions, long_term=long_term,
        ...     on_close=[long_term.close, sessions.close],
        ... )
        >>> with mem:  # doctest: +SKIP
        ...     _ = mem.remember("Alice indents with tabs")
    """

    def __init__(
        self,
        *,
        short_term: SummaryBufferMemory,
        working: WorkingMemory,
        long_term: LongTermMemory,
        consolidator: MemoryConsolidator,
        forgetting: ForgettingPolicy | None = None,
        consolidate_every_tokens: int | None = ManagerConfig.consolidate_every_tokens,
        background: bool = ManagerConfig.background,
        system_prompt: str | None = None,
        scheduler: ConsolidationQueue | None = None,
        on_close: Sequence[Callable[[], None]] = (),
    ) -> None:
        self.short_term = short_term
        self.working = working
        self.long_term = long_term
        self.forgetting = forgetting if forgetting is not None else ForgettingPolicy()
        self.retriever = MemoryRetriever(long_term, working=working, short_term=short_term)
        self.system_prompt = system_prompt
        self.scheduler = ConsolidationScheduler(
            short_term,
            consolidator,
            every_tokens=consolidate_every_tokens,
            background=background,
            queue=scheduler,
        )
        """When this session's consolidation runs (threshold, background, one at a time)."""
        self._on_close = list(on_close)

    recent_contexts: RecentContexts | None = None
    """Where :meth:`build_context` keeps what it built (a service's ring; ``None``: nowhere)."""

    def _repr_html_(self) -> str:
        """Session, working memory, counts by type, newest memories, forgetting candidates."""
        from agentmem.inspector.reprs import manager_repr

        return manager_repr(self)

    @property
    def user_id(self) -> str:
        """Owner of the long-term memories."""
        return self.long_term.scope.user_id

    session_id: ReadOnlyDelegate[str] = ReadOnlyDelegate(
        "short_term", doc="The current conversation."
    )
    token_counter: ReadOnlyDelegate[TokenCounter] = ReadOnlyDelegate(
        "short_term", doc="Counts tokens for the target model."
    )
    consolidator: Delegate[MemoryConsolidator] = Delegate(
        "scheduler", doc="Moves conversation into long-term memory (the scheduler's)."
    )
    consolidate_every_tokens: Delegate[int | None] = Delegate(
        "scheduler",
        "every_tokens",
        doc="Tokens of conversation that trigger a consolidation (``None``: only on demand).",
    )
    background: Delegate[bool] = Delegate(
        "scheduler", doc="Whether threshold-triggered consolidation runs in a background worker."
    )

    @classmethod
    def open(
        cls,
        *,
        user_id: str,
        session_id: str | None = None,
        home: str | Path | None = None,
        llm: ChatModel | None = None,
        embedder: Embedder | None = None,
        **options: Unpack[ManagerOptions],
    ) -> MemoryManager:
        """A manager on the embedded defaults: SQLite sessions and Qdrant Edge memories
        under ``home`` (``AGENTMEM_HOME``, else the per-user data directory), the local
        embedder, and ``llm`` if given (without one: no summaries, rounds as episodes).

        ``session_id`` defaults to a new id; pass an earlier one to resume a conversation.

        Any number of managers (users, sessions) can be open at once in one process on the
        same home: they share its stores, which close with the last manager. Other stores
        are named by URL (``memory_url=``, ``session_url=``, or ``AGENTMEM_MEMORY_URL`` /
        ``AGENTMEM_SESSION_URL``: see :mod:`agentmem.backends`). A server that holds many
        users is better served by one :class:`~agentmem.MemoryService`.

        The other options are the settings (``model``, ``max_short_term_tokens``,
        ``consolidate_every_tokens``, ``background``, ``clock``, ``system_prompt``) of
        :class:`~agentmem.controller.config.ManagerConfig`, with its defaults.

        Example:
            >>> with MemoryManager.open(user_id="alice", home=tmp_home) as mem:  # doctest: +SKIP
            ...     _ = mem.process_interaction("I indent with tabs", "Noted.")
            >>> mem = MemoryManager.open(  # doctest: +SKIP
            ...     user_id="alice", memory_url="memory://", session_url="memory://"
            ... )
        """
        return ManagerBuilder.open(
            user_id=user_id,
            session_id=session_id,
            home=home,
            llm=llm,
            embedder=embedder,
            manager_class=cls,
            **options,
        )

    @classmethod
    def from_parts(
        cls,
        *,
        user_id: str,
        sessions: SessionStore,
        long_term: LongTermMemory,
        session_id: str | None = None,
        llm: ChatModel | None = None,
        token_counter: TokenCounter | None = None,
        scheduler: ConsolidationQueue | None = None,
        on_close: Sequence[Callable[[], None]] = (),
        **settings: Unpack[ManagerSettings],
    ) -> MemoryManager:
        """A manager over a given session store and long-term memory.

        A session belongs to the user (and agent) who first used it; its owner may share it
        with other users (a group chat) through
        :meth:`SessionOwners.share <agentmem.controller.ownership.SessionOwners.share>` (or
        :meth:`MemoryService.share_session <agentmem.MemoryService.share_session>`): each
        user's consolidation keeps its own watermark and writes only that user's memories.
        ``on_close`` is
        called by :meth:`close` (e.g. to close the stores given here). The settings are
        those of :meth:`open`.

        Raises:
            ConfigurationError: ``user_id`` is not ``long_term``'s user.
            SessionOwnershipError: The session is another user's and not shared with this one.
        """
        builder = ManagerBuilder(
            ManagerConfig(**settings),
            sessions=sessions,
            llm=llm,
            token_counter=token_counter,
            queue=scheduler,
        )
        return builder.build(
            long_term,
            user_id=user_id,
            session_id=session_id,
            on_close=on_close,
            manager_class=cls,
        )

    # -- the conversation ------------------------------------------------------------------

    @twin
    def record_messages(
        self, messages: Sequence[MessageLike], *, turn_id: str | None = None
    ) -> Program[ConsolidationReport | None]:
        """Append messages to the conversation (a turn per user message); consolidate when
        the token threshold is crossed. Returns the consolidation report if it ran here
        (never in background mode: there it runs in a worker thread, for async callers too).

        Adapters whose frameworks hand over whole message lists use this; a plain exchange
        is :meth:`process_interaction`. With ``turn_id`` the messages are recorded exactly
        once, as :meth:`process_interaction` describes.

        Raises:
            TurnConflictError: ``turn_id`` was used in this session for other messages.
        """
        return (yield from self._record_messages(messages, turn_id))

    arecord_messages = async_twin(record_messages)

    def _record_messages(
        self, messages: Sequence[MessageLike], turn_id: str | None = None
    ) -> Program[ConsolidationReport | None]:
        if turn_id is None:
            batch = yield from self.short_term._add_messages(messages)
            yield from self._count_turns(batch)
        else:
            turn = [to_message(m) for m in messages]
            # Counted and settled under the turn's lock: an overlapping retry of the turn
            # waits, then finds it settled. The count carries the turn_id (saved with it in
            # one write), so a retry after a failure between the count and the settle mark
            # does not count the turn twice either.
            recorded = yield from record_turn(
                self.short_term,
                turn,
                turn_id,
                then=lambda stored: self._count_turns(stored, turn_id),
            )
            batch = recorded.messages
        return (yield from self.scheduler._record(batch))

    def _count_turns(self, batch: Sequence[Message], turn_id: str | None = None) -> Program[None]:
        turns = sum(1 for m in batch if m.role == "user")
        if turns:
            yield from self.working._advance_turn(turns, turn_id=turn_id)

    @twin
    def process_interaction(
        self,
        user_input: str,
        assistant_response: str,
        metadata: Mapping[str, Any] | None = None,
        *,
        turn_id: str | None = None,
    ) -> Program[ConsolidationReport | None]:
        """Record one exchange; consolidate when the token threshold is crossed.

        Returns the consolidation report if it ran here (never in background mode).

        With ``turn_id`` (any string naming the exchange, unique within the session, e.g. a
        request id) the exchange is recorded exactly once: when a call fails (a timeout, a
        crash, a :class:`~agentmem.errors.StoreUnavailableError` whose ``outcome`` is
        ``"unknown"``), call again with the same arguments and ``turn_id``; whether or not
        the failed call stored the exchange, it is then stored once (see
        :mod:`agentmem.controller.turns`). Without one, each call records a new exchange.

        Raises:
            InvalidMessageError: ``user_input`` or ``assistant_response`` is not a string
                (``None`` included), or ``metadata`` is not a mapping of JSON values.
                Nothing is recorded.
            TurnConflictError: ``turn_id`` was used in this session for another exchange
                (a reused id, not a retry); nothing is written.
            InvalidValueError: ``turn_id`` is empty, not a string, or too long.

        Example:
            >>> mem.process_interaction("I only write Python", "Noted.")  # doctest: +SKIP
            >>> mem.process_interaction(  # doctest: +SKIP
            ...     "I indent with tabs", "Noted.", turn_id="request-8f2c"
            ... )
        """
        for name, text in (("user_input", user_input), ("assistant_response", assistant_response)):
            if not isinstance(text, str):
                got = "None" if text is None else type(text).__name__
                msg = (
                    f"{name} must be the message text (a str), got {got}; "
                    "to record a lone message, use record_messages([...])"
                )
                raise InvalidMessageError(msg)
        if metadata is not None and not isinstance(metadata, Mapping):
            msg = (
                f"metadata must be a mapping of JSON values or None, got "
                f"{type(metadata).__name__} {metadata!r:.60}; "
                "pass e.g. metadata={'channel': 'web'}"
            )
            raise InvalidMessageError(msg)
        meta = dict(metadata or {})
        exchange = [
            Message.create("user", user_input, metadata=meta),
            Message.create("assistant", assistant_response, metadata=meta),
        ]
        return (yield from self._record_messages(exchange, turn_id))

    aprocess_interaction = async_twin(process_interaction)

    def wait_for_background(self, timeout: float | None = None) -> bool:
        """Wait until this session's queued and running background consolidations finish,
        whichever handle queued them; ``False`` if ``timeout`` seconds passed first (the
        work goes on)."""
        return self.scheduler.wait(timeout)

    async def await_background(self, timeout: float | None = None) -> bool:
        """Async twin of :meth:`wait_for_background` (does not block the loop)."""
        return await self.scheduler.wait_async(timeout)

    @twin
    def get_log(self) -> Program[list[Message]]:
        """The session's whole conversation, oldest first (summaries never rewrite it)."""
        short_term = self.short_term
        return (yield from call(short_term.get_log, short_term.aget_log))

    aget_log = async_twin(get_log)

    @twin
    def clear_session(self) -> Program[None]:
        """Start the session over: its conversation, summary and working memory are
        deleted. The user's long-term memories are kept."""
        short_term, working = self.short_term, self.working
        yield from call(short_term.clear, short_term.aclear)
        yield from call(working.clear, working.aclear)

    aclear_session = async_twin(clear_session)

    # -- consolidation, remembering, forgetting ------------------------------------------

    @twin
    def consolidate(self) -> Program[ConsolidationReport]:
        """Consolidate this session's messages not consolidated before (one run at a time)."""
        return (yield from self.scheduler._consolidate())

    aconsolidate = async_twin(consolidate)

    @twin
    def remember(
        self,
        /,
        content: str,
        memory_type: str = "semantic",
        *,
        importance: float = 0.7,
        **fields: Any,
    ) -> Program[ConflictDecision]:
        """Store a memory now, through conflict resolution (duplicates reinforce, updates
        supersede). Returns the decision.

        Example:
            >>> mem.remember("Alice indents with tabs").action  # doctest: +SKIP
            'add'
        """
        fields.setdefault("source_session_id", self.session_id)
        record = self.long_term.new_record(content, memory_type, importance=importance, **fields)
        resolver = self.consolidator.resolver
        return (yield from call(resolver.write, resolver.awrite, self.long_term, record))

    aremember = async_twin(remember)

    @twin
    def recall(self, /, query: str, top_k: int = 5, **kwargs: Any) -> Program[list[ScoredRecord]]:
        """Long-term memories relevant to ``query`` (see ``LongTermMemory.retrieve_memories``)."""
        memory = self.long_term
        search = call(memory.retrieve_memories, memory.aretrieve_memories, query, top_k, **kwargs)
        return (yield from search)

    arecall = async_twin(recall)

    @twin
    def forget(
        self, *, dry_run: bool = False, policy: ForgettingPolicy | None = None
    ) -> Program[ForgettingReport]:
        """Run a forgetting pass over this user's memories (``dry_run`` only reports)."""
        chosen = policy or self.forgetting
        return (yield from call(chosen.apply, chosen.aapply, self.long_term, dry_run=dry_run))

    aforget = async_twin(forget)

    @twin
    def update_memory(
        self, memory_id: str, *, content: str | None = None, importance: float | None = None
    ) -> Program[MemoryRecord]:
        """Change one of this user's memories by id; returns the memory now current.

        New ``content`` supersedes the memory: a new one (same type, subtype, concept and
        metadata; ``importance``, else the old one's) is written, and the old one ends and
        stays in the history. ``importance`` alone is changed in place.

        Raises:
            InvalidValueError: Neither ``content`` nor ``importance`` given, a bad id or
                value.
            MemoryNotFoundError: No such memory in this user's scope.

        Example:
            >>> mem.update_memory(old_id, content="Alice uses spaces")  # doctest: +SKIP
            MemoryRecord(...)
        """
        memory = self.long_term
        if content is None:
            if importance is None:
                msg = "nothing to update: pass content and/or importance"
                raise InvalidValueError(msg)
            change = call(
                memory.update_memory_importance,
                memory.aupdate_memory_importance,
                memory_id,
                importance,
            )
            return (yield from change)
        old = yield from call(memory.get_memory, memory.aget_memory, memory_id)
        new = memory.new_record(
            content,
            old.memory_type,
            importance=importance if importance is not None else old.importance,
            metadata=old.metadata,
            subtype=old.subtype,
            concept=old.concept,
            source_session_id=self.session_id,
        )
        yield from call(memory.store_records, memory.astore_records, [new])
        yield from call(memory.supersede_memory, memory.asupersede_memory, old.id, new)
        return new

    aupdate_memory = async_twin(update_memory)

    @twin
    def delete_memory(self, memory_id: str) -> Program[bool]:
        """Delete one of this user's memories by id; ``False`` if there is none."""
        memory = self.long_term
        return (yield from call(memory.delete_memory, memory.adelete_memory, memory_id))

    adelete_memory = async_twin(delete_memory)

    # -- working memory --------------------------------------------------------------------

    @twin
    def update_working_memory(
        self, key: str, value: Any, ttl: float | None = None
    ) -> Program[None]:
        """Set a working-memory variable (``ttl`` in seconds)."""
        yield from self.working._set_variable(key, value, ttl=ttl)

    aupdate_working_memory = async_twin(update_working_memory)

    @twin
    def record_reasoning_step(self, step: str) -> Program[None]:
        """Add a step to the working-memory scratchpad."""
        yield from self.working._add_scratchpad_entry(step)

    arecord_reasoning_step = async_twin(record_reasoning_step)

    # -- context ---------------------------------------------------------------------------

    @twin
    def gather_context(
        self,
        query: str | None,
        max_tokens: int = 2000,
        *,
        history: Sequence[MessageLike] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        system_prompt: str | None = None,
        strategy: Strategy = "hybrid",
        top_k: int = 5,
        memory_share: float = 0.3,
        working_share: float = 0.2,
        include_query: bool = True,
        keep_latest: bool = True,
    ) -> Program[BuiltContext]:
        """The one context pipeline: read what a prompt needs, assemble it into
        ``max_tokens`` exactly, and return it with its ledger.

        :meth:`build_context`, the LangChain ``AgentMemoryMiddleware`` and the LlamaIndex
        ``AgentMemory.get`` all call it; they only convert messages. The steps, written
        once for sync and async (:mod:`agentmem._sansio`):

        1. what must be sent (the system prompt, the query, tool schemas, the latest unit
           of ``history``) is checked against the budget before any I/O;
        2. the session is read once: its new messages and summary (only the summary
           when ``history`` is given); with ``keep_latest`` its newest unit is then
           required and checked too;
        3. long-term memories are recalled for ``query`` (``None``: the conversation's
           latest user message);
        4. working memory is rendered for its share (expired variables are purged, the
           only write besides the memories' access statistics);
        5. the blocks go to the one assembler (:func:`agentmem.context.assemble_context`:
           layout, priorities and the exact ledger), and the result is kept for the
           inspector (:attr:`recent_contexts`).

        Args:
            query: What to recall memories for; sent as the last user message with
                ``include_query``. ``None``: the latest user message of ``history``, else
                of the session (nothing is recalled when there is none).
            max_tokens: The budget: messages, tool schemas and reply priming.
            history: The conversation to send (an agent framework's messages, oldest
                first) instead of the session's view; the session's summary then goes
                into the system message.
            tools: OpenAI tool schemas sent with the request (counted, not rendered).
            system_prompt: Instructions placed first (``None``: the manager's own
                ``system_prompt``; ``""``: none).
            strategy: The blocks: ``hybrid`` all of them, ``recent`` the conversation,
                ``working`` the working memory, ``semantic`` memories by dense search only.
            top_k: How many memories to recall (``0``: none).
            memory_share: Most of the budget recalled memories may take.
            working_share: Most of the budget working memory may take (``0``: leave it
                out).
            include_query: Send ``query`` as the last user message.
            keep_latest: Always send the conversation's newest unit (an assistant tool
                call with its results, or one message) whole: the message the model
                must answer.

        Raises:
            ConfigurationError: ``max_tokens`` is not an integer >= 1, a share is not a
                number in ``[0, 1]`` or ``strategy`` is unknown; raised before anything is
                read or written.
            ContextBudgetError: What must be sent alone exceeds ``max_tokens``; raised
                before anything is recalled or written.

        Example:
            >>> ctx = mem.gather_context(  # doctest: +SKIP
            ...     None, 4000, history=agent_messages, tools=schemas, system_prompt=""
            ... )
            >>> sum(ctx.ledger.values()) == ctx.token_count <= 4000  # doctest: +SKIP
            True
        """
        strategy = MemoryRetriever.check_strategy(strategy)
        check_share(memory_share, "memory_share")
        check_share(working_share, "working_share")
        counter, short_term, working = self.token_counter, self.short_term, self.working
        blocks: list[context.Block] = []
        prompt = system_prompt if system_prompt is not None else self.system_prompt
        if prompt:
            blocks.append(context.InstructionsBlock(prompt))
        if include_query and query:
            blocks.append(context.QueryBlock(query))
        given = None if history is None else [to_message(m) for m in history]
        if given is not None:
            blocks.append(context.MessagesBlock(given, keep_latest=keep_latest))
        # Before any I/O, since recalling records each memory's access and rendering working
        # memory purges expired variables: a prompt that cannot be built changes nothing.
        check_required(blocks, counter=counter, max_tokens=max_tokens, tools=tools)
        session = strategy in ("recent", "hybrid")
        if given is not None:
            if session:  # the caller sends the conversation: only the summary is read
                summary = yield from call(short_term.refresh_summary, short_term.arefresh_summary)
                if summary:
                    blocks.append(context.SummaryBlock(summary))
        elif session or (query is None and top_k):
            yield from call(short_term.refresh, short_term.arefresh)  # messages and summary
        if given is None and session:
            latest = short_term.newest_unit(refresh=False) if keep_latest else []
            view = context.ViewBlock(
                lambda n: short_term.get_view(max_tokens=n, refresh=False), latest
            )
            if latest:
                check_required([*blocks, view], counter=counter, max_tokens=max_tokens, tools=tools)
            blocks.append(view)
        if query is None and top_k:
            query = _latest_user_text(given) if given is not None else self._asked(max_tokens)
        hits: list[ScoredRecord] = []
        if query is not None and top_k:
            retriever = self.retriever
            hits = yield from call(retriever.recall, retriever.arecall, query, strategy, top_k)
        blocks.append(context.RecalledBlock(hits, memory_share))
        if working_share and strategy in ("working", "hybrid"):
            room = context.WorkingBlock.room(max_tokens, working_share)
            # Rendered once here (purging expired variables, the only I/O); again, from
            # memory, only when the room left is smaller.
            text = yield from call(working.get_context_for_llm, working.aget_context_for_llm, room)
            blocks.append(
                context.WorkingBlock(working.render, working_share, rendered=(room, text))
            )
        built = assemble_context(blocks, counter=counter, max_tokens=max_tokens, tools=tools)
        if self.recent_contexts is not None:
            self.recent_contexts.add(self.user_id, self.session_id, query or "", built)
        return built

    agather_context = async_twin(gather_context)

    def _asked(self, max_tokens: int) -> str | None:
        """The session's latest user message (no I/O: the session was just read): in its
        view within ``max_tokens`` first, else anywhere in its log."""
        short_term = self.short_term
        shown = short_term.get_view(max_tokens=max_tokens, refresh=False).messages
        found = _latest_user_text(shown)
        return found if found is not None else _latest_user_text(short_term.get_log(refresh=False))

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
        :mod:`agentmem.context`): :meth:`gather_context` with the session's view as the
        history.

        The strategy picks the blocks: ``hybrid`` all of them, ``recent`` the conversation,
        ``working`` the working memory, ``semantic`` memories by dense search only. The I/O
        comes first (the session's new messages and summary, recall, expired
        working-memory variables); the assembly then reads memory only and renders each
        block once.

        Raises:
            ConfigurationError: ``max_tokens`` is not an integer >= 1 (``None``, ``"100"``,
                ``nan``, ``-1``); raised before anything is read or written.
            ContextBudgetError: The system prompt and the query alone exceed ``max_tokens``;
                also raised before anything is read or written.

        Example:
            >>> ctx = mem.build_context("which language?", max_tokens=2000)  # doctest: +SKIP
            >>> sum(ctx.ledger.values()) == ctx.token_count  # doctest: +SKIP
            True
        """
        return (
            yield from call(
                self.gather_context,
                self.agather_context,
                query,
                max_tokens,
                system_prompt=system_prompt,
                strategy=strategy,
                top_k=top_k,
                include_query=include_query,
                keep_latest=False,  # the query is the message to answer
            )
        )

    abuild_context = async_twin(build_context)

    # -- lifecycle -------------------------------------------------------------------------

    @twin
    def close(self) -> Program[None]:
        """Wait for this handle's background work, then release what it owns (what
        :meth:`open` acquired, or ``on_close``; shared stores close with their last user).
        A handle from a :class:`~agentmem.MemoryService` owns nothing: closing it only waits.
        """
        scheduler = self.scheduler
        yield from call(scheduler.close, scheduler.aclose)
        on_close, self._on_close = self._on_close, []
        for release in on_close:
            yield from blocking(release)

    aclose = async_twin(close)

    def __enter__(self) -> MemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _latest_user_text(messages: Sequence[Message]) -> str | None:
    """The content of the latest user message that says something, if any."""
    for message in reversed(messages):
        if message.role == "user" and message.content.strip():
            return message.content
    return None
