"""``ManagerConfig``: the settings every memory manager of a deployment shares.

One frozen value instead of the same keyword arguments repeated by
:meth:`MemoryManager.open <agentmem.MemoryManager.open>`,
:meth:`MemoryManager.from_parts <agentmem.MemoryManager.from_parts>` and
:class:`~agentmem.MemoryService`: the target model, the short-term budget, the
consolidation threshold, background mode, the clock, the default system prompt and the
long-term ranking. :data:`DEFAULT_MODEL` is the one default model of the package.

By default every turn is consolidated in the background: once an answer is recorded, the
session is queued for consolidation in a worker thread (``consolidate_every_tokens=1``,
``background=True``), so what a user said is in long-term memory for the user's next
session, and recording the turn never waits for it. A burst of turns of one session
while it waits in the queue is one consolidation, not one per turn (see
:mod:`agentmem.controller.scheduler`). Tests and scripts that read long-term memory right
after a turn wait for it first (:meth:`MemoryService.wait_for_consolidation
<agentmem.MemoryService.wait_for_consolidation>`, ``MemoryManager.wait_for_background``).

Those entry points take the settings as keyword arguments, typed once by
:class:`ManagerSettings` (``**settings: Unpack[ManagerSettings]``), and make the config with
``ManagerConfig(**settings)``: the defaults live here only.

Example:
    >>> config = ManagerConfig(consolidate_every_tokens=None)
    >>> config.model == DEFAULT_MODEL, config.consolidate_every_tokens
    (True, None)
    >>> ManagerConfig().consolidate_every_tokens, ManagerConfig().background  # every turn
    (1, True)
    >>> config.replace(background=False).background
    False
    >>> settings: ManagerSettings = {"model": "gpt-4o-mini", "background": True}
    >>> ManagerConfig(**settings).max_short_term_tokens
    2000
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from typing_extensions import TypedDict

from agentmem.long_term.ranking import RankingConfig
from agentmem.tokens import DEFAULT_MODEL

__all__ = ["DEFAULT_MODEL", "ManagerConfig", "ManagerSettings"]


class ManagerSettings(TypedDict, total=False):
    """The :class:`ManagerConfig` fields a manager's entry points take as keyword arguments
    (all optional; each defaults to the field's default). ``ranking`` is not among them: a
    manager over a given long-term memory uses that memory's ranking.
    """

    model: str
    max_short_term_tokens: int
    consolidate_every_tokens: int | None
    background: bool
    clock: Callable[[], datetime] | None
    system_prompt: str | None


@dataclass(frozen=True)
class ManagerConfig:
    """How managers count, consolidate and build context (see the module docstring).

    Attributes:
        model: Target model whose tokenizer and chat format are counted.
        max_short_term_tokens: Budget of each session's short-term view.
        consolidate_every_tokens: Consolidate when a turn ends (an answer is recorded) with
            at least this many tokens of conversation accumulated since the last
            consolidation: ``1`` (the default) after every turn; ``None`` only on demand.
        background: Run threshold-triggered consolidation in a background worker, so
            recording a turn never waits for it (default ``True``; ``False`` runs it in
            the call that recorded the turn).
        clock: Zero-argument callable returning an aware ``datetime`` (default: UTC now).
        system_prompt: Default system prompt of ``build_context``.
        ranking: How long-term search ranks results (``None``: the default ranking).
    """

    model: str = DEFAULT_MODEL
    max_short_term_tokens: int = 2000
    consolidate_every_tokens: int | None = 1
    background: bool = True
    clock: Callable[[], datetime] | None = None
    system_prompt: str | None = None
    ranking: RankingConfig | None = None

    def replace(self, **changes: Any) -> ManagerConfig:
        """A copy with ``changes`` applied (validated again).

        Example:
            >>> ManagerConfig().replace(model="gpt-4o-mini").model
            'gpt-4o-mini'
        """
        return dataclasses.replace(self, **changes)
