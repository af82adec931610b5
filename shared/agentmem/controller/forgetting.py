"""Forgetting by policy: an explainable retention score, rules, dry runs and a deletion log.

Retention follows an exponential forgetting curve (Ebbinghaus) whose half-life grows with
importance and with every access (the spacing effect)::

    half_life = half_life_days * (1 + importance_boost * importance) * (1 + ln(1 + access_count))
    retention = 0.5 ** (age_days / half_life)          # in (0, 1]; 1 = just used

where ``age_days`` runs from the last access, else from creation. So with the defaults
(30 days, boost 4) an unimportant memory never used halves in 30 days, one of importance 1
in 150 days, and one used 10 times in 150 * (1 + ln 11) ≈ 510 days.

Superseded memories (history) are examined like current ones: they stop being accessed
once superseded, so they fade first. Pin a memory to keep its history forever.

A policy forgets a memory when any rule says so, unless it is pinned:

* ``min_retention``: retention below this;
* ``max_age_days``: not used for longer than this (and importance below ``keep_importance``);
* ``max_memories``: the scope holds more than this; the lowest-retention ones go.

Example:
    >>> from datetime import datetime, timedelta, timezone
    >>> from agentmem.long_term.records import MemoryRecord, Scope
    >>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> record = MemoryRecord.new("x", "semantic", scope=Scope(user_id="u"), importance=0.0,
    ...                          created_at=now - timedelta(days=30))
    >>> round(ForgettingPolicy().retention(record, now), 3)
    0.5
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from agentmem._sansio import Program, async_twin, call, twin
from agentmem._util.text import shorten
from agentmem.errors import ConfigurationError
from agentmem.long_term.records import MemoryRecord
from agentmem.types import utcnow

if TYPE_CHECKING:
    from agentmem.long_term.memory import LongTermMemory

__all__ = ["ForgetDecision", "ForgettingPolicy", "ForgettingReport"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ForgetDecision:
    """Why one memory goes.

    Attributes:
        record: The memory.
        retention: Its retention score when the pass ran.
        reason: Which rule fired, in words.
    """

    record: MemoryRecord
    retention: float
    reason: str


@dataclass
class ForgettingReport:
    """What a forgetting pass did (or, with ``dry_run``, would do).

    Attributes:
        dry_run: True if nothing was deleted.
        examined: Memories looked at.
        pinned: Pinned memories skipped.
        decisions: The memories forgotten (or to forget), lowest retention first.
        kept: ``(retention, record)`` of unpinned memories that stay, highest first.
    """

    dry_run: bool
    examined: int = 0
    pinned: int = 0
    decisions: list[ForgetDecision] = field(default_factory=list)
    kept: list[tuple[float, MemoryRecord]] = field(default_factory=list)

    @property
    def deleted(self) -> int:
        """How many memories were deleted (0 on a dry run)."""
        return 0 if self.dry_run else len(self.decisions)

    def to_text(self, limit: int = 20) -> str:
        """A short human-readable report: each memory with its retention (from 1, fresh,
        down to 0) and, for those forgotten, the rule that fired; long contents are cut at
        a word boundary.

        Example:
            >>> report = ForgettingReport(dry_run=True, examined=1)
            >>> print(report.to_text())
            Examined 1 memories (0 pinned); would forget 0.
        """
        verb = "would forget" if self.dry_run else "forgot"
        lines = [
            f"Examined {self.examined} memories ({self.pinned} pinned); "
            f"{verb} {len(self.decisions)}."
        ]
        for retention, record in self.kept[:limit]:
            lines.append(f'  + kept, retention {retention:.3f}: "{shorten(record.content, 70)}"')
        gone = "to forget" if self.dry_run else "forgotten"
        for d in self.decisions[:limit]:
            content = shorten(d.record.content, 70)
            lines.append(f'  - {gone}, retention {d.retention:.3f} ({d.reason}): "{content}"')
        if len(self.decisions) > limit:
            lines.append(f"  ... and {len(self.decisions) - limit} more")
        return "\n".join(lines)


@dataclass(frozen=True)
class ForgettingPolicy:
    """Rules for forgetting long-term memories (see the module docstring for the formula).

    Attributes:
        half_life_days: Half-life of an unimportant, never-used memory.
        importance_boost: How much importance stretches the half-life.
        min_retention: Forget below this retention (``None``: no such rule).
        max_age_days: Forget memories unused for longer than this (``None``: no such rule).
        keep_importance: The age rule spares memories at least this important.
        max_memories: Most memories to keep per scope (``None``: unlimited).
        clock: Zero-argument callable returning an aware ``datetime``.
    """

    half_life_days: float = 30.0
    importance_boost: float = 4.0
    min_retention: float | None = 0.05
    max_age_days: float | None = None
    keep_importance: float = 0.8
    max_memories: int | None = None
    clock: Callable[[], datetime] = utcnow

    def __post_init__(self) -> None:
        if not math.isfinite(self.half_life_days) or self.half_life_days <= 0:
            msg = f"half_life_days must be > 0, got {self.half_life_days!r}"
            raise ConfigurationError(msg)
        if not math.isfinite(self.importance_boost) or self.importance_boost < 0:
            msg = f"importance_boost must be >= 0, got {self.importance_boost!r}"
            raise ConfigurationError(msg)
        if self.min_retention is not None and not 0 <= self.min_retention <= 1:
            msg = f"min_retention must be in [0, 1], got {self.min_retention!r}"
            raise ConfigurationError(msg)
        if not 0 <= self.keep_importance <= 1:
            msg = f"keep_importance must be in [0, 1], got {self.keep_importance!r}"
            raise ConfigurationError(msg)
        if self.max_age_days is not None and not (
            math.isfinite(self.max_age_days) and self.max_age_days >= 0
        ):
            msg = f"max_age_days must be >= 0, got {self.max_age_days!r}"
            raise ConfigurationError(msg)
        if self.max_memories is not None and self.max_memories < 0:
            msg = f"max_memories must be >= 0, got {self.max_memories!r}"
            raise ConfigurationError(msg)

    def half_life(self, record: MemoryRecord) -> float:
        """The record's half-life in days."""
        return (
            self.half_life_days
            * (1 + self.importance_boost * record.importance)
            * (1 + math.log1p(record.access_count))
        )

    def retention(self, record: MemoryRecord, now: datetime | None = None) -> float:
        """The record's retention score in (0, 1] at ``now``."""
        now = now or self.clock()
        last = record.last_accessed_at or record.created_at
        age_days = max(0.0, (now - last).total_seconds() / 86400)
        return float(0.5 ** (age_days / self.half_life(record)))

    def plan(
        self, records: Sequence[MemoryRecord], now: datetime | None = None
    ) -> ForgettingReport:
        """Decide which of ``records`` (one scope) to forget; deletes nothing."""
        now = now or self.clock()
        report = ForgettingReport(dry_run=True, examined=len(records))
        scored = []
        for record in records:
            if record.pinned:
                report.pinned += 1
                continue
            scored.append((self.retention(record, now), record))
        scored.sort(key=lambda pair: pair[0])
        doomed: dict[str, ForgetDecision] = {}
        for retention, record in scored:
            reason = self._rule(record, retention, now)
            if reason:
                doomed[record.id] = ForgetDecision(record, retention, reason)
        if self.max_memories is not None:
            survivors = [(r, rec) for r, rec in scored if rec.id not in doomed]
            excess = len(survivors) + report.pinned - self.max_memories
            for retention, record in survivors[: max(0, excess)]:
                reason = f"over capacity ({self.max_memories} per scope), lowest retention"
                doomed[record.id] = ForgetDecision(record, retention, reason)
        report.decisions = sorted(doomed.values(), key=lambda d: d.retention)
        report.kept = [(r, rec) for r, rec in reversed(scored) if rec.id not in doomed]
        return report

    def _rule(self, record: MemoryRecord, retention: float, now: datetime) -> str | None:
        if self.min_retention is not None and retention < self.min_retention:
            return f"retention below {self.min_retention}"
        if self.max_age_days is not None and record.importance < self.keep_importance:
            last = record.last_accessed_at or record.created_at
            age = (now - last).total_seconds() / 86400
            if age > self.max_age_days:
                return f"unused for {age:.0f} days (over {self.max_age_days:g})"
        return None

    @twin
    def apply(self, memory: LongTermMemory, *, dry_run: bool = False) -> Program[ForgettingReport]:
        """Run a pass over ``memory``'s scope; with ``dry_run`` only report.

        Every deletion is logged (logger ``agentmem.controller.forgetting``, level INFO)
        with its reason.

        Example:
            >>> policy = ForgettingPolicy(max_age_days=90)
            >>> policy.apply(memory, dry_run=True).deleted  # doctest: +SKIP
            0
        """
        records = yield from call(memory.all_records, memory.aall_records)
        report = self.plan(records)
        if not dry_run and report.decisions:
            ids = [d.record.id for d in report.decisions]
            yield from call(memory.delete_memories, memory.adelete_memories, ids)
        return self._log(report, dry_run)

    aapply = async_twin(apply)

    @staticmethod
    def _log(report: ForgettingReport, dry_run: bool) -> ForgettingReport:
        report.dry_run = dry_run
        if not dry_run:
            for d in report.decisions:
                logger.info(
                    "forgot memory %s of user %r (retention %.3f; %s): %.80r",
                    d.record.id,
                    d.record.scope.user_id,
                    d.retention,
                    d.reason,
                    d.record.content,
                )
        return report
