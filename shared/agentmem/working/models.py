"""Entries of working memory and the state document they persist as.

Every entry is an immutable pydantic model, so what :class:`~agentmem.WorkingMemory` hands
out can be kept by the caller without aliasing its state. The whole state of one session is a
:class:`WorkingState`, stored as one JSON document (``store.set_state(session_id,
"working_memory", ...)``) carrying a ``schema_version``.

Example:
    >>> from agentmem.working import Task
    >>> Task(description="write the tests").status
    'pending'
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from agentmem.errors import StoreError
from agentmem.types import utcnow

__all__ = [
    "COUNTED_TURNS_KEPT",
    "SCHEMA_VERSION",
    "STATE_KEY",
    "TASK_STATUSES",
    "Hypothesis",
    "ScratchpadEntry",
    "Task",
    "TaskStatus",
    "Variable",
    "WorkingState",
    "state_from_doc",
]

SCHEMA_VERSION: Literal[2] = 2
"""Newest version of the persisted working-memory document. Version 2 adds
``counted_turns``; a document with no counted turns is still written as version 1, the
layout earlier agentmem versions read."""

STATE_KEY = "working_memory"
"""Key of the working-memory document in the session store."""

COUNTED_TURNS_KEPT = 64
"""How many of the latest counted ``turn_id`` values the state keeps (see
:attr:`WorkingState.counted_turns`)."""

TaskStatus = Literal["pending", "in_progress", "done", "failed", "blocked"]
TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)


def _new_id() -> str:
    return uuid.uuid4().hex


class Variable(BaseModel):
    """A context variable and its expiry.

    Attributes:
        value: The value, as its JSON round trip (tuples come back as lists).
        set_at: When it was set.
        expires_at: Wall-clock expiry; the variable is gone once ``expires_at <= now``.
        set_at_turn: The turn counter when it was set.
        expires_after_turns: Turn-based expiry; gone once ``turn >= set_at_turn + this``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: Any = None
    set_at: AwareDatetime
    expires_at: AwareDatetime | None = None
    set_at_turn: int = Field(default=0, ge=0)
    expires_after_turns: int | None = Field(default=None, ge=1)

    def is_expired(self, now: datetime, turn: int) -> bool:
        """Whether the variable has expired at wall-clock ``now`` and turn ``turn``."""
        if self.expires_at is not None and self.expires_at <= now:
            return True
        return (
            self.expires_after_turns is not None
            and turn >= self.set_at_turn + self.expires_after_turns
        )


class ScratchpadEntry(BaseModel):
    """One reasoning step on the scratchpad.

    Attributes:
        step: 1-based step number; keeps counting when old steps are dropped.
        text: The step as written.
        timestamp: When it was added.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    step: int = Field(ge=1)
    text: str = Field(min_length=1)
    timestamp: AwareDatetime


class Task(BaseModel):
    """An entry of the task stack.

    Attributes:
        id: Unique id (hex UUID4), used by ``update_task_status``.
        description: What the task is (for a task pushed as a dict: its ``description``,
            ``name``, ``title``, ``task`` or ``goal``, the first one present).
        status: ``pending``, ``in_progress``, ``done``, ``failed`` or ``blocked``.
        fields: The fields of a task pushed as a dict, as given (their JSON round trip),
            except ``status``; ``{}`` for a task pushed as text.
        created_at: When it was pushed.
        updated_at: When its status last changed.

    Example:
        >>> Task(description="book flight", fields={"name": "book flight", "goal": "Oslo"}).fields
        {'name': 'book flight', 'goal': 'Oslo'}
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=_new_id, min_length=1)
    description: str = Field(min_length=1)
    status: TaskStatus = "pending"
    fields: dict[str, Any] = Field(default_factory=dict)
    created_at: AwareDatetime = Field(default_factory=utcnow)
    updated_at: AwareDatetime = Field(default_factory=utcnow)


class Hypothesis(BaseModel):
    """A hypothesis the agent is weighing.

    Attributes:
        id: Unique id (hex UUID4), used by ``update_hypothesis``.
        text: The hypothesis.
        confidence: Confidence in [0, 1].
        evidence: Supporting observations, oldest first.
        created_at: When it was added.
        updated_at: When its confidence or evidence last changed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=_new_id, min_length=1)
    text: str = Field(min_length=1)
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    evidence: tuple[str, ...] = ()
    created_at: AwareDatetime = Field(default_factory=utcnow)
    updated_at: AwareDatetime = Field(default_factory=utcnow)


class WorkingState(BaseModel):
    """The whole working memory of one session (the persisted document).

    Attributes:
        schema_version: Version of this document's layout.
        turn: Turn counter, advanced by ``advance_turn``.
        variables: Variables in the order they were (last) set.
        scratchpad: The kept scratchpad steps, oldest first.
        next_step: Number the next scratchpad step gets.
        dropped_scratchpad_entries: How many old steps the scratchpad bound has dropped.
        tasks: The task stack, bottom first (the last one is the current task).
        hypotheses: Hypotheses in the order they were added.
        counted_turns: The ``turn_id`` values of the latest turns counted by
            ``advance_turn(turn_id=...)`` (at most :data:`COUNTED_TURNS_KEPT`, oldest
            first): a turn counted again is not counted twice. It is kept in this document,
            so the count and the mark are one write.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1, 2] = 1
    turn: int = Field(default=0, ge=0)
    variables: dict[str, Variable] = Field(default_factory=dict)
    scratchpad: tuple[ScratchpadEntry, ...] = ()
    next_step: int = Field(default=1, ge=1)
    dropped_scratchpad_entries: int = Field(default=0, ge=0)
    tasks: tuple[Task, ...] = ()
    hypotheses: tuple[Hypothesis, ...] = ()
    counted_turns: tuple[str, ...] = ()

    def purged(self, now: datetime) -> WorkingState:
        """This state without expired variables (``self`` when none expired)."""
        alive = {k: v for k, v in self.variables.items() if not v.is_expired(now, self.turn)}
        if len(alive) == len(self.variables):
            return self
        return self.model_copy(update={"variables": alive})

    def to_doc(self) -> dict[str, Any]:
        """The JSON document this state persists as (version 1 when no turn is counted by
        id, so earlier agentmem versions still read it)."""
        doc = self.model_dump(mode="json")
        if self.counted_turns:
            doc["schema_version"] = SCHEMA_VERSION
        else:
            del doc["counted_turns"]
            doc["schema_version"] = 1
        return doc


def state_from_doc(doc: dict[str, Any] | None, session_id: str) -> WorkingState:
    """The state a stored document holds (an empty state for no document).

    Raises:
        StoreError: The document has another ``schema_version`` or does not validate.

    Example:
        >>> state_from_doc(None, "s1") == WorkingState()
        True
        >>> state_from_doc({"schema_version": 1, "turn": 3}, "s1").turn
        3
    """
    if doc is None:
        return WorkingState()
    if doc.get("schema_version") not in (1, SCHEMA_VERSION):
        msg = (
            f"working memory of session {session_id!r} has schema_version "
            f"{doc.get('schema_version')!r}; this agentmem reads versions 1 to "
            f"{SCHEMA_VERSION} (upgrade agentmem, or clear() the session)"
        )
        raise StoreError(msg)
    try:
        return WorkingState.model_validate(doc)
    except ValidationError as exc:
        msg = f"working memory of session {session_id!r} is corrupt: {exc}"
        raise StoreError(msg) from None
