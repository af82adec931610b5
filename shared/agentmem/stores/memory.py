"""In-process session store: for tests, notebooks and short-lived agents."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from agentmem._util.session_ids import validate_session_id
from agentmem.errors import StoreClosedError
from agentmem.stores.base import (
    StoredMessage,
    SyncSessionStore,
    check_messages,
    check_state_key,
    dump_state,
)
from agentmem.types import Message

__all__ = ["InMemorySessionStore"]


class InMemorySessionStore(SyncSessionStore):
    """Session store held in this process's memory (lost when it exits). Thread-safe.

    Example:
        >>> store = InMemorySessionStore()
        >>> store.set_state("s1", "summary", {"text": "..."})
        >>> store.get_state("s1", "summary")
        {'text': '...'}
    """

    exclusive_appends: ClassVar[bool] = True  # see ExclusiveAppends

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs: dict[str, list[StoredMessage]] = {}
        self._seqs: dict[str, int] = {}
        self._ids: dict[str, dict[str, int]] = {}  # session -> message id -> its first seq
        self._state: dict[str, dict[str, str]] = {}
        self._owners: dict[str, str] = {}
        self._closed = False

    def _check(self, session_id: str) -> None:
        if self._closed:
            msg = "InMemorySessionStore is closed"
            raise StoreClosedError(msg)
        validate_session_id(session_id)

    def append(
        self, session_id: str, messages: Sequence[Message], *, exclusive: bool = False
    ) -> list[int]:
        """Append ``messages`` (each one, even with an id the session holds: this store
        is not idempotent by id); ``exclusive=True`` appends nothing if the session holds
        any of their ids, and returns each one's seq, or 0 (see
        :meth:`~agentmem.stores.base.SessionStore.append`).

        Example:
            >>> store = InMemorySessionStore()
            >>> turn = [Message(role="user", content="hi")]
            >>> store.append("s1", turn), store.append("s1", turn, exclusive=True)
            ([1], [1])
        """
        self._check(session_id)
        batch = check_messages(messages)
        if not batch:
            return []
        with self._lock:
            ids = self._ids.setdefault(session_id, {})
            if exclusive and any(m.id in ids for m in batch):
                return [ids.get(m.id, 0) for m in batch]
            log = self._logs.setdefault(session_id, [])
            seq = self._seqs.get(session_id, 0)
            seqs = list(range(seq + 1, seq + 1 + len(batch)))
            log.extend(StoredMessage(s, m) for s, m in zip(seqs, batch, strict=True))
            for s, m in zip(seqs, batch, strict=True):
                ids.setdefault(m.id, s)
            self._seqs[session_id] = seqs[-1]
            return seqs

    def read(
        self, session_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[StoredMessage]:
        self._check(session_id)
        with self._lock:
            log = self._logs.get(session_id, [])
            # seqs are contiguous from 1 here, so "after" is an index.
            start = max(0, after - (log[0].seq - 1)) if log else 0
            end = None if limit is None else start + max(0, limit)
            return log[start:end]

    def read_last(self, session_id: str, n: int) -> list[StoredMessage]:
        self._check(session_id)
        with self._lock:
            return self._logs.get(session_id, [])[-n:] if n > 0 else []

    def count(self, session_id: str) -> int:
        self._check(session_id)
        with self._lock:
            return len(self._logs.get(session_id, []))

    def last_seq(self, session_id: str) -> int:
        self._check(session_id)
        with self._lock:
            log = self._logs.get(session_id)
            return log[-1].seq if log else 0

    def get_state(self, session_id: str, key: str) -> dict[str, Any] | None:
        self._check(session_id)
        check_state_key(key)
        with self._lock:
            raw = self._state.get(session_id, {}).get(key)
        return None if raw is None else dict(json.loads(raw))

    def set_state(self, session_id: str, key: str, value: dict[str, Any]) -> None:
        self._check(session_id)
        check_state_key(key)
        raw = dump_state(value)
        with self._lock:
            self._state.setdefault(session_id, {})[key] = raw

    def state_keys(self, session_id: str) -> list[str]:
        self._check(session_id)
        with self._lock:
            return sorted(self._state.get(session_id, {}))

    def delete_state(self, session_id: str, key: str) -> None:
        self._check(session_id)
        check_state_key(key)
        with self._lock:
            self._state.get(session_id, {}).pop(key, None)

    def clear(self, session_id: str) -> None:
        self._check(session_id)
        with self._lock:
            self._logs.pop(session_id, None)
            self._ids.pop(session_id, None)
            self._state.pop(session_id, None)
            # The owner stays: a cleared conversation is still its owner's.
            # Seqs keep increasing after a clear so cached readers never confuse old and new.

    def get_owner(self, session_id: str) -> dict[str, Any] | None:
        self._check(session_id)
        with self._lock:
            raw = self._owners.get(session_id)
        return None if raw is None else dict(json.loads(raw))

    def claim_owner(self, session_id: str, record: dict[str, Any]) -> dict[str, Any]:
        self._check(session_id)
        raw = dump_state(record)
        with self._lock:
            raw = self._owners.setdefault(session_id, raw)
        return dict(json.loads(raw))

    def set_owner(self, session_id: str, record: dict[str, Any]) -> None:
        self._check(session_id)
        raw = dump_state(record)
        with self._lock:
            self._owners[session_id] = raw

    def sessions(self) -> list[str]:
        if self._closed:
            msg = "InMemorySessionStore is closed"
            raise StoreClosedError(msg)
        with self._lock:
            return sorted(set(self._logs) | {s for s, v in self._state.items() if v})

    def close(self) -> None:
        self._closed = True
