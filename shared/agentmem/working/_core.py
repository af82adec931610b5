"""The persistence machinery behind :class:`~agentmem.working.WorkingMemory` (private).

Every change is one pure function of the state (see ``_ops``) applied by one of two persistence
paths: the sync path writes through ``store.set_state`` while holding the instance lock; the
async path writes through ``store.aset_state`` without holding it and commits only if no other
change landed meanwhile (else it re-applies its change to the newer state and writes again, so
concurrent coroutines never lose an update). The in-memory state changes only after the store
accepted the new document, so a refused input or a failed write leaves it unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from pydantic import ValidationError

from agentmem.errors import ConfigurationError, StoreError
from agentmem.stores.base import SessionStore
from agentmem.tokens import TokenCounter
from agentmem.working import _ops
from agentmem.working import _validate as v
from agentmem.working.models import SCHEMA_VERSION, WorkingState
from agentmem.working.render import render_context

__all__ = ["STATE_KEY", "WorkingMemoryCore"]

STATE_KEY = "working_memory"
"""Key of the working-memory document in the session store."""

T = TypeVar("T")


class WorkingMemoryCore:
    """State, lock and the two persistence paths; the public API lives in the subclass."""

    _session_id: str
    _store: SessionStore
    _clock: Callable[[], datetime]
    _counter: TokenCounter | None
    _max_steps: int
    _max_bytes: int
    _lock: threading.Lock
    _revision: int
    _state: WorkingState

    def _load(self, doc: dict[str, Any] | None) -> None:
        state = WorkingState()
        if doc is not None:
            if doc.get("schema_version") != SCHEMA_VERSION:
                msg = (
                    f"working memory of session {self._session_id!r} has schema_version "
                    f"{doc.get('schema_version')!r}; this agentmem reads version "
                    f"{SCHEMA_VERSION} (upgrade agentmem, or clear() the session)"
                )
                raise StoreError(msg)
            try:
                state = WorkingState.model_validate(doc)
            except ValidationError as exc:
                msg = f"working memory of session {self._session_id!r} is corrupt: {exc}"
                raise StoreError(msg) from None
        with self._lock:
            self._state = _ops.bounded(state, self._max_steps)
            self._revision += 1

    def reload(self) -> None:
        """Replace the in-memory state with the store's (e.g. after another process wrote it)."""
        self._load(self._store.get_state(self._session_id, STATE_KEY))

    async def areload(self) -> None:
        """Async twin of :meth:`reload`."""
        self._load(await self._store.aget_state(self._session_id, STATE_KEY))

    def _now(self) -> datetime:
        return v.check_clock_value(self._clock())

    def _apply(self, op: _ops.Op[T]) -> T:
        with self._lock:
            now = self._now()
            old = self._state
            new, result = op(old.purged(now), now)
            if new is not old:
                self._store.set_state(self._session_id, STATE_KEY, new.to_doc())
                self._state = new
                self._revision += 1
            return result

    async def _aapply(self, op: _ops.Op[T]) -> T:
        while True:
            with self._lock:
                now = self._now()
                old, revision = self._state, self._revision
                new, result = op(old.purged(now), now)
            if new is old:
                return result
            await self._store.aset_state(self._session_id, STATE_KEY, new.to_doc())
            with self._lock:
                if self._revision == revision:
                    self._state = new
                    self._revision += 1
                    return result
            # Another change committed while we wrote: redo ours on top of it and write again.

    def _snapshot(self) -> WorkingState:
        with self._lock:
            return self._state

    def _render(self, state: WorkingState, max_tokens: object) -> str:
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0
        ):
            msg = f"max_tokens must be None or an integer >= 0, got {max_tokens!r}"
            raise ConfigurationError(msg)
        if self._counter is None:
            self._counter = TokenCounter()
        return render_context(state, self._counter, max_tokens=max_tokens)
