"""``ManagerConfig``: the settings every memory manager of a deployment shares.

One frozen value instead of the same keyword arguments repeated by
:meth:`MemoryManager.open <agentmem.MemoryManager.open>`,
:meth:`MemoryManager.from_parts <agentmem.MemoryManager.from_parts>` and
:class:`~agentmem.MemoryService`: the target model, the short-term budget, the
consolidation threshold, background mode, the clock, the default system prompt and the
long-term ranking. :data:`DEFAULT_MODEL` is the one default model of the package.

Those entry points take the settings as keyword arguments, typed once by
:class:`ManagerSettings` (``**settings: Unpack[ManagerSettings]``), and make the config with
``ManagerConfig(**settings)``: the defaults live here only.

Example:
    >>> config = ManagerConfig(consolidate_every_tokens=None)
    >>> config.model == DEFAULT_MODEL, config.consolidate_every_tokens
    (True, None)
    >>> config.replace(background=True).background
    True
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
        consolidate_every_tokens: Consolidate once this many tokens of conversation have
            accumulated since the last consolidation (``None``: only on demand).
        background: Run threshold-triggered consolidation in a background worker, so
            recording a turn never waits for it.
        clock: Zero-argument callable returning an aware ``datetime`` (default: UTC now).
        system_prompt: Default system prompt of ``build_context``.
        ranking: How long-term search ranks results (``None``: the default ranking).
    """

    model: str = DEFAULT_MODEL
    max_short_term_tokens: int = 2000
    consolidate_every_tokens: int | None = 2000
    background: bool = False
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
