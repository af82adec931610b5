"""Assembling managers: a :class:`ManagerConfig` and shared parts in, ``MemoryManager`` out.

:meth:`MemoryManager.open <agentmem.MemoryManager.open>`,
:meth:`MemoryManager.from_parts <agentmem.MemoryManager.from_parts>` and
:class:`~agentmem.MemoryService` all build managers here, so how the tiers, the
consolidator, the forgetting policy and the consolidation scheduler are put together
exists once. :class:`ManagerBuilder` holds what the managers of a deployment share (the
config, the session store, the chat model, the token counter, the consolidation queue) and
makes one manager per user and session; the stores themselves come from
:func:`agentmem.backends.acquire_stores`, named by the :class:`ManagerOptions`. The caller
names the manager class to make (``manager_class``), so this module does not import the manager.

Example:
    >>> from agentmem.controller.builder import ManagerBuilder
    >>> from agentmem.controller.config import ManagerConfig
    >>> config = ManagerConfig(consolidate_every_tokens=None)
    >>> builder = ManagerBuilder(config, sessions=sessions)  # doctest: +SKIP
    >>> with builder.build(  # doctest: +SKIP
    ...     long_term, session_id="s1", manager_class=MemoryManager
    ... ) as manager:
    ...     _ = manager.process_interaction("I indent with tabs", "Noted.")
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar, cast

from typing_extensions import Unpack

from agentmem._util.session_ids import new_session_id
from agentmem.backends import BackendConfig, BackendOptions, acquire_stores, split_backend_options
from agentmem.controller.config import ManagerConfig, ManagerSettings
from agentmem.controller.consolidation import MemoryConsolidator
from agentmem.controller.forgetting import ForgettingPolicy
from agentmem.controller.ownership import SessionOwners
from agentmem.controller.scheduler import ConsolidationQueue
from agentmem.errors import ConfigurationError, ReadOnlySettingError
from agentmem.long_term.memory import LongTermMemory
from agentmem.short_term.summary import SummaryBufferMemory
from agentmem.tokens import TokenCounter
from agentmem.types import utcnow
from agentmem.working import WorkingMemory

if TYPE_CHECKING:
    from agentmem.embeddings import Embedder
    from agentmem.llm import ChatModel
    from agentmem.stores.base import SessionStore

#: The manager class a builder makes (``MemoryManager`` or a subclass); the builder does
#: not import it, so the controller's modules import each other one way only.
M = TypeVar("M")

__all__ = ["ManagerBuilder", "ManagerOptions"]


class ManagerOptions(ManagerSettings, BackendOptions, total=False):
    """The keyword arguments of :meth:`MemoryManager.open <agentmem.MemoryManager.open>`:
    the :class:`~agentmem.controller.config.ManagerSettings` and where the stores are
    (:class:`~agentmem.backends.BackendOptions`)."""


class ManagerBuilder:
    """Makes the managers of one deployment from its config and shared parts.

    Args:
        config: Model, budgets, threshold, background mode, clock, prompt, ranking.
        sessions: The session store every manager records into.
        llm: Chat model for summaries, extraction and conflict judging (``None``: no
            summaries, conversation rounds stored as episodes).
        token_counter: Shared counter (default: one for ``config.model``).
        queue: Where background consolidations run (a service's pool); ``None``: each
            manager makes a private one when it first needs it.

    Example:
        >>> builder = ManagerBuilder(ManagerConfig(), sessions=sessions)  # doctest: +SKIP
        >>> builder.build(long_term, manager_class=MemoryManager).session_id  # doctest: +SKIP
        'session-3f2a9c0d1e4b4f0a8c1d2e3f4a5b6c7d'
    """

    def __init__(
        self,
        config: ManagerConfig,
        *,
        sessions: SessionStore,
        llm: ChatModel | None = None,
        token_counter: TokenCounter | None = None,
        queue: ConsolidationQueue | None = None,
    ) -> None:
        self.config = config
        self.sessions = sessions
        self.llm = llm
        self.token_counter = (
            token_counter if token_counter is not None else TokenCounter(config.model)
        )
        self.queue = queue

    def __setattr__(self, name: str, value: object) -> None:
        if name in ("config", "token_counter") and name in self.__dict__:
            msg = (
                f"ManagerBuilder.{name} is fixed once the builder is made (its token counter "
                "counts for config.model); make another ManagerBuilder"
            )
            raise ReadOnlySettingError(msg)
        super().__setattr__(name, value)

    @classmethod
    def open(
        cls,
        *,
        user_id: str,
        session_id: str | None = None,
        home: str | os.PathLike[str] | None = None,
        llm: ChatModel | None = None,
        embedder: Embedder | None = None,
        manager_class: Callable[..., M],
        **options: Unpack[ManagerOptions],
    ) -> M:
        """A manager that owns a share of the stores ``options`` name (default: those of
        the environment, else of ``home``) and releases it when closed (see
        ``MemoryManager.open``)."""
        from agentmem.embeddings import default_embedder

        where, settings = split_backend_options(options)
        backend = BackendConfig.resolve(home, **where)
        config = ManagerConfig(**cast("ManagerSettings", settings))
        embedder = embedder if embedder is not None else default_embedder()
        leases = acquire_stores(backend, dimension=embedder.dimension)
        try:
            builder = cls(config, sessions=leases.sessions.value, llm=llm)
            # The memory holds the store's share (closing it never closes a shared store).
            long_term = LongTermMemory(
                store=leases.memories.value,
                embedder=embedder,
                user_id=user_id,
                ranking=config.ranking,
                on_close=leases.memories.release,
            )
            return builder.build(
                long_term,
                session_id=session_id,
                on_close=[long_term.close, leases.sessions.release],
                manager_class=manager_class,
            )
        except BaseException:
            leases.release()
            raise

    def build(
        self,
        long_term: LongTermMemory,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        on_close: Sequence[Callable[[], None]] = (),
        manager_class: Callable[..., M],
    ) -> M:
        """A manager of ``long_term``'s user on the session ``session_id`` (default: a new
        session id); ``on_close`` runs when it is closed.

        The session's owner is checked (and recorded on first use) before anything else:
        see :mod:`agentmem.controller.ownership`.

        Raises:
            ConfigurationError: ``user_id`` is given and is not ``long_term``'s user.
            SessionOwnershipError: The session is another user's (or agent's), not shared
                with this one.
        """
        owner = long_term.scope.user_id
        if user_id is not None and user_id != owner:
            msg = (
                f"user_id {user_id!r} differs from the long-term memory's user "
                f"{owner!r}; pass the memory of that user"
            )
            raise ConfigurationError(msg)
        if session_id is None:
            session_id = new_session_id()
        agent = long_term.scope.agent_id
        # The store this handle uses: for a member of a shared session, one that checks the
        # owner record before every operation (a dropped member is refused at once).
        sessions = SessionOwners(self.sessions).door(session_id, (owner, agent))
        config, counter = self.config, self.token_counter
        short_term = SummaryBufferMemory(
            self.llm,
            max_tokens=config.max_short_term_tokens,
            session_id=session_id,
            store=sessions,
            token_counter=counter,
            user_id=owner,
            agent_id=agent,
        )
        # The door above was checked just now: the tier uses it as it is (the store itself
        # for the owner, shared by every handle), not a door of its own checked again.
        short_term.store = sessions
        working = WorkingMemory(
            session_id=session_id,
            store=sessions,
            clock=config.clock,
            token_counter=counter,
            user_id=owner,
            agent_id=agent,
        )
        return manager_class(
            short_term=short_term,
            working=working,
            long_term=long_term,
            consolidator=MemoryConsolidator(long_term, store=sessions, llm=self.llm),
            forgetting=ForgettingPolicy(clock=config.clock or utcnow),
            consolidate_every_tokens=config.consolidate_every_tokens,
            background=config.background,
            system_prompt=config.system_prompt,
            scheduler=self.queue,
            on_close=on_close,
        )
