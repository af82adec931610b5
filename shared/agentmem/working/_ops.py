"""The state changes of working memory, as pure functions (private).

Each ``*_op`` checks its input first (raising before anything changes) and returns an
:data:`Op`: a function from the current state and time to the new state and a result. An op
returns the state object it was given when nothing changes, so no write is needed. The one
program that runs them, for sync and async callers, is ``WorkingMemory._change`` (lock,
apply, write, adopt); nothing here does I/O.

Example:
    >>> from datetime import datetime, timezone
    >>> now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    >>> state, turn = advance_turn_op(2)(WorkingState(), now)
    >>> turn, state.turn
    (2, 2)
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from agentmem._util.checks import check_int
from agentmem.errors import InvalidValueError
from agentmem.working import _validate as v
from agentmem.working.models import (
    COUNTED_TURNS_KEPT,
    Hypothesis,
    ScratchpadEntry,
    Task,
    Variable,
    WorkingState,
)

__all__ = [
    "Op",
    "add_hypothesis_op",
    "add_step_op",
    "advance_turn_op",
    "bounded",
    "clear_op",
    "delete_variable_op",
    "pop_task_op",
    "push_task_op",
    "read_op",
    "set_variable_op",
    "task_status_op",
    "update_hypothesis_op",
]

T = TypeVar("T")
Op = Callable[[WorkingState, datetime], tuple[WorkingState, T]]


def read_op(state: WorkingState, _now: datetime) -> tuple[WorkingState, WorkingState]:
    """No change; the result is the (purged) state itself."""
    return state, state


def bounded(state: WorkingState, max_steps: int) -> WorkingState:
    """Keep the last ``max_steps`` scratchpad steps, counting the dropped ones."""
    extra = len(state.scratchpad) - max_steps
    if extra <= 0:
        return state
    return state.model_copy(
        update={
            "scratchpad": state.scratchpad[extra:],
            "dropped_scratchpad_entries": state.dropped_scratchpad_entries + extra,
        }
    )


def set_variable_op(
    key: object, value: object, ttl: object, ttl_turns: object, *, max_bytes: int
) -> Op[None]:
    name = v.check_key(key)
    normalized = v.normalize_value(name, value, max_bytes)
    delta, turns = v.check_ttl(ttl), v.check_ttl_turns(ttl_turns)

    def op(state: WorkingState, now: datetime) -> tuple[WorkingState, None]:
        try:
            expires_at = None if delta is None else now + delta
        except OverflowError:
            msg = f"ttl {delta!r} reaches past the year 9999; pass None for no expiry"
            raise InvalidValueError(msg) from None
        var = Variable(
            value=normalized,
            set_at=now,
            expires_at=expires_at,
            set_at_turn=state.turn,
            expires_after_turns=turns,
        )
        variables = {k: x for k, x in state.variables.items() if k != name}
        variables[name] = var  # re-setting moves the key to the most recent position
        return state.model_copy(update={"variables": variables}), None

    return op


def delete_variable_op(key: object) -> Op[bool]:
    name = v.check_key(key)

    def op(state: WorkingState, _now: datetime) -> tuple[WorkingState, bool]:
        if name not in state.variables:
            return state, False
        variables = {k: x for k, x in state.variables.items() if k != name}
        return state.model_copy(update={"variables": variables}), True

    return op


def add_step_op(entry: object, *, max_bytes: int, max_steps: int) -> Op[ScratchpadEntry]:
    text = v.check_text(entry, "scratchpad entry", max_bytes)

    def op(state: WorkingState, now: datetime) -> tuple[WorkingState, ScratchpadEntry]:
        item = ScratchpadEntry(step=state.next_step, text=text, timestamp=now)
        grown = state.model_copy(
            update={"scratchpad": (*state.scratchpad, item), "next_step": state.next_step + 1}
        )
        return bounded(grown, max_steps), item

    return op


def push_task_op(task: object, status: object, *, max_bytes: int) -> Op[Task]:
    description, fields, own_status = v.check_task(task, max_bytes)
    if status is None:
        checked = own_status or "pending"
    else:
        checked = v.check_status(status)
        if own_status is not None and own_status != checked:
            msg = (
                f"task status given twice: {own_status!r} in the task dict and "
                f"status={checked!r}; pass only one of them"
            )
            raise InvalidValueError(msg)

    def op(state: WorkingState, now: datetime) -> tuple[WorkingState, Task]:
        item = Task.model_validate(
            {
                "description": description,
                "status": checked,
                "fields": fields,
                "created_at": now,
                "updated_at": now,
            }
        )
        return state.model_copy(update={"tasks": (*state.tasks, item)}), item

    return op


def pop_task_op(state: WorkingState, _now: datetime) -> tuple[WorkingState, Task | None]:
    if not state.tasks:
        return state, None
    return state.model_copy(update={"tasks": state.tasks[:-1]}), state.tasks[-1]


def task_status_op(task_id: object, status: object) -> Op[Task]:
    checked = v.check_status(status)

    def op(state: WorkingState, now: datetime) -> tuple[WorkingState, Task]:
        for i, task in enumerate(state.tasks):
            if task.id == task_id:
                new = task.model_copy(update={"status": checked, "updated_at": now})
                tasks = (*state.tasks[:i], new, *state.tasks[i + 1 :])
                return state.model_copy(update={"tasks": tasks}), new
        msg = f"no task with id {task_id!r} on the stack; get_tasks() lists the ids"
        raise InvalidValueError(msg)

    return op


def add_hypothesis_op(
    text: object, confidence: object, evidence: object, *, max_bytes: int
) -> Op[Hypothesis]:
    checked_text = v.check_text(text, "hypothesis", max_bytes)
    checked_conf = v.check_confidence(confidence)
    checked_ev = v.check_evidence(evidence, max_bytes)

    def op(state: WorkingState, now: datetime) -> tuple[WorkingState, Hypothesis]:
        item = Hypothesis(
            text=checked_text,
            confidence=checked_conf,
            evidence=checked_ev,
            created_at=now,
            updated_at=now,
        )
        return state.model_copy(update={"hypotheses": (*state.hypotheses, item)}), item

    return op


def update_hypothesis_op(
    hypothesis_id: object, confidence: object, evidence: object, *, max_bytes: int
) -> Op[Hypothesis]:
    conf = None if confidence is None else v.check_confidence(confidence)
    more = v.check_evidence(evidence, max_bytes)

    def op(state: WorkingState, now: datetime) -> tuple[WorkingState, Hypothesis]:
        for i, h in enumerate(state.hypotheses):
            if h.id == hypothesis_id:
                new = h.model_copy(
                    update={
                        "confidence": h.confidence if conf is None else conf,
                        "evidence": (*h.evidence, *more),
                        "updated_at": now,
                    }
                )
                items = (*state.hypotheses[:i], new, *state.hypotheses[i + 1 :])
                return state.model_copy(update={"hypotheses": items}), new
        msg = f"no hypothesis with id {hypothesis_id!r}; get_hypotheses() lists the ids"
        raise InvalidValueError(msg)

    return op


def advance_turn_op(n: object, turn_id: object = None) -> Op[int]:
    """Count ``n`` turns; with ``turn_id``, only if that turn was not counted already (the
    id is kept with the count, in the same document, so a retry never counts it twice)."""
    expected = "needs a number of turns >= 1"
    turns = check_int(n, "advance_turn", error=InvalidValueError, expected=expected)
    if turn_id is not None and (not isinstance(turn_id, str) or not turn_id):
        msg = f"turn_id must be a non-empty string or None, got {turn_id!r}"
        raise InvalidValueError(msg)

    def op(state: WorkingState, now: datetime) -> tuple[WorkingState, int]:
        if turn_id is None:
            counted = state.counted_turns
        elif turn_id in state.counted_turns:
            return state, state.turn  # counted before: nothing changes
        else:
            counted = (*state.counted_turns, turn_id)[-COUNTED_TURNS_KEPT:]
        advanced = state.model_copy(update={"turn": state.turn + turns, "counted_turns": counted})
        return advanced.purged(now), advanced.turn

    return op


def clear_op(state: WorkingState, _now: datetime) -> tuple[WorkingState, None]:
    empty = WorkingState()
    return (state if state == empty else empty), None
