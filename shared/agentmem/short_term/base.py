"""Shared machinery of the short-term memories: the log mirror, appends and budgeted views.

Every short-term memory keeps the whole conversation in an append-only
:class:`~agentmem.stores.SessionStore` log and shows the model a *view* of it. Views:

* never start with a tool result, and never separate an assistant tool call from its
  results (a call and its results are kept or dropped together);
* keep system messages first when ``preserve_system`` is on;
* fit the token budget exactly (chat-format count, reply priming included);
* cost O(messages returned): each message is tokenized once, when first seen.

A single plain message larger than the whole budget stays in the log; if it is the newest
one, the view shows it cut to fit (listed in ``view.truncated``); otherwise it and
everything older are omitted (``view.omitted``).

Every method that reads or writes the store is written once, as a program
(:mod:`agentmem._sansio`): ``add_messages`` and ``aadd_messages`` run the same steps, and a
subclass extends both by overriding a program (``_refresh``, ``_after_append``). The mirror's
lock guards only in-memory work and is never held across I/O; a read begun before
:meth:`ShortTermMemory.clear` is dropped rather than mirrored.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, cast

from agentmem._sansio import Program, async_twin, call, twin
from agentmem._util.checks import check_optional_int
from agentmem.controller.ownership import GuestStore, user_principal
from agentmem.errors import ConfigurationError
from agentmem.short_term._log import Unit, _LogMirror
from agentmem.short_term.view import ShortTermView
from agentmem.stores.base import SessionStore, validate_session_id
from agentmem.stores.memory import InMemorySessionStore
from agentmem.tokens import DEFAULT_MODEL, REPLY_PRIMING_TOKENS, TokenCounter
from agentmem.types import Message, MessageLike, ToolCall, to_message

__all__ = ["ShortTermMemory", "check_limit", "tighter"]

TRUNCATION_NOTE = "\n[... truncated by agentmem to fit the context budget]"


class ShortTermMemory(ABC):
    """Base class of the short-term memories (template method: subclasses pick the view).

    Args:
        session_id: The conversation this memory holds.
        store: Where the log lives; an :class:`InMemorySessionStore` by default.
        token_counter: Counts tokens for the target model; ``TokenCounter(model)`` by default.
        model: Target model used when no ``token_counter`` is given.
        preserve_system: Keep system messages at the front of every view.
        user_id: Whose conversation this is (with ``agent_id``, the agent's). A session
            belongs to the user who first used it (see
            :mod:`agentmem.controller.ownership`): on a store several users share, pass it,
            and another user's session is refused. Without it the memory may use only
            sessions that no user owns (single-tenant apps).
        agent_id: The agent of ``user_id``, where sessions are kept per agent.

    Raises:
        SessionOwnershipError: From the first operation on (building one reads nothing, so
            a store with only an async client serves it too): ``store`` holds the session
            for another user (or for a user, when no ``user_id`` is given); nothing was
            read or written.
    """

    def __init__(
        self,
        *,
        session_id: str = "default",
        store: SessionStore | None = None,
        token_counter: TokenCounter | None = None,
        model: str = DEFAULT_MODEL,
        preserve_system: bool = True,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        self.session_id = validate_session_id(session_id)
        who = user_principal(user_id, agent_id)
        # The session's owner is checked at the first operation, before anything is read or
        # written (not here: a store may have only an async client), and again at every
        # operation for anyone but the owner.
        self.store: SessionStore
        if store is None:
            self.store = InMemorySessionStore()
        elif isinstance(store, GuestStore) and store.guest == (self.session_id, who):
            self.store = store  # a door already checking this guest (a member's handle)
        else:
            self.store = cast(SessionStore, GuestStore(store, self.session_id, who))
        self.token_counter = token_counter if token_counter is not None else TokenCounter(model)
        self.preserve_system = preserve_system
        self._log = _LogMirror(self.token_counter)
        self._lock = threading.RLock()  # guards the mirror (never held across I/O)
        self._epoch = 0  # bumped by clear(): a read begun before it is not mirrored

    # -- writing ---------------------------------------------------------------------------

    @twin
    def add_message(
        self,
        role: str,
        content: object,
        metadata: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        tool_calls: Sequence[ToolCall | Mapping[str, Any]] | None = None,
        tool_call_id: str | None = None,
    ) -> Program[Message]:
        """Validate and append one message; returns it.

        Raises:
            InvalidMessageError: Unknown role, non-string content, malformed tool calls.

        Example:
            >>> from agentmem import SlidingWindowMemory
            >>> SlidingWindowMemory(window_size=4).add_message("user", "hi").role
            'user'
        """
        message = _build(role, content, metadata, name, tool_calls, tool_call_id)
        yield from self._add_messages([message])
        return message

    aadd_message = async_twin(add_message)

    @twin
    def add_messages(self, messages: Sequence[MessageLike]) -> Program[list[Message]]:
        """Append several messages atomically (all are validated before any is written).

        Example:
            >>> from agentmem import ConversationBufferMemory
            >>> memory = ConversationBufferMemory()
            >>> batch = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
            >>> [m.role for m in memory.add_messages(batch)]
            ['user', 'assistant']
        """
        return self._add_messages(messages)

    aadd_messages = async_twin(add_messages)

    def _add_messages(self, messages: Sequence[MessageLike]) -> Program[list[Message]]:
        batch = [to_message(m) for m in messages]
        if batch:
            yield from call(self.store.append, self.store.aappend, self.session_id, batch)
            yield from self._after_append()
        return batch

    def _after_append(self) -> Program[None]:
        """Hook run after each append (the summary memory summarizes here)."""
        return
        yield  # a program with no I/O

    # -- reading ---------------------------------------------------------------------------

    @twin
    def refresh(self) -> Program[None]:
        """Pull messages appended since the last read (by any process) into the mirror."""
        return self._refresh()

    arefresh = async_twin(refresh)

    def _refresh(self) -> Program[None]:
        """Read what is new since the mirror's last seq; subclasses add their own state."""
        after, epoch = self._log.last_seq, self._epoch
        new = yield from call(self.store.read, self.store.aread, self.session_id, after=after)
        with self._lock:
            if self._epoch == epoch:  # else clear() ran meanwhile and this read is stale
                self._log.extend(new)

    @twin
    def get_view(
        self, *, max_tokens: int | None = None, refresh: bool = True
    ) -> Program[ShortTermView]:
        """The budgeted view, with what it left out.

        Args:
            max_tokens: A tighter budget for this view only (the lower of it and the
                memory's own cap applies), e.g. what is left of a prompt's budget.
            refresh: Read new messages from the store first. Callers that just refreshed
                (:meth:`refresh` / :meth:`arefresh`) pass ``False`` so no read happens.

        Example:
            >>> from agentmem import ConversationBufferMemory
            >>> memory = ConversationBufferMemory()
            >>> _ = memory.add_message("user", "hello there")
            >>> memory.get_view(max_tokens=100).omitted
            0
        """
        return self._get_view(max_tokens=max_tokens, refresh=refresh)

    aget_view = async_twin(get_view)

    def _get_view(
        self, *, max_tokens: int | None = None, refresh: bool = True
    ) -> Program[ShortTermView]:
        if refresh:
            yield from self._refresh()
        with self._lock:
            return self._view(check_limit(max_tokens, "max_tokens"))

    @twin
    def newest_unit(self, *, refresh: bool = True) -> Program[list[Message]]:
        """The log's newest unit, as views keep it together: an assistant message with tool
        calls and the tool results that follow it, or one message (``[]``: none).

        With ``preserve_system``, system messages lead every view and are skipped here;
        orphan tool results are skipped, as views skip them. Give it to
        :class:`~agentmem.context.ViewBlock` as ``latest`` to require it in a prompt.

        Args:
            refresh: Read new messages from the store first (callers that just refreshed
                pass ``False``, as for :meth:`get_view`).

        Example:
            >>> from agentmem import ConversationBufferMemory
            >>> memory = ConversationBufferMemory()
            >>> _ = memory.add_message("user", "weather in Oslo?")
            >>> [m.content for m in memory.newest_unit()]
            ['weather in Oslo?']
        """
        if refresh:
            yield from self._refresh()
        with self._lock:
            log = self._log
            for unit in log.units_backwards(0, skip_system=self.preserve_system):
                if not unit.orphan:
                    return log.messages[unit.start : unit.stop]
        return []

    anewest_unit = async_twin(newest_unit)

    @twin
    def get_messages(self) -> Program[list[dict[str, Any]]]:
        """The budgeted view as OpenAI-style ``{"role", "content", ...}`` dicts."""
        return (yield from self._get_view()).to_dicts()

    aget_messages = async_twin(get_messages)

    @twin
    def get_token_count(self) -> Program[int]:
        """Exact tokens of the view (chat format, reply priming included)."""
        return (yield from self._get_view()).token_count

    aget_token_count = async_twin(get_token_count)

    @twin
    def get_all_messages(self) -> Program[list[dict[str, Any]]]:
        """The whole log, oldest first, as dicts (nothing is ever dropped from it)."""
        return [m.to_dict() for m in (yield from self._get_log())]

    aget_all_messages = async_twin(get_all_messages)

    @twin
    def get_log(self, *, refresh: bool = True) -> Program[list[Message]]:
        """The whole log as :class:`Message` objects (ids, timestamps, metadata kept).

        Args:
            refresh: Read new messages from the store first (callers that just refreshed
                pass ``False``, as for :meth:`get_view`).
        """
        return self._get_log(refresh=refresh)

    aget_log = async_twin(get_log)

    def _get_log(self, *, refresh: bool = True) -> Program[list[Message]]:
        if refresh:
            yield from self._refresh()
        with self._lock:
            return list(self._log.messages)

    def _backlog(self, watermark: str | None, at_least: int) -> Program[tuple[int, Message | None]]:
        """Tokens of the messages logged after the message ``watermark`` (all of them when
        it is ``None`` or not in the log), and the newest message. Counted newest first and
        only until ``at_least`` is reached, so the cost is that of the backlog, not the log."""
        yield from self._refresh()
        with self._lock:
            log = self._log
            tokens = 0
            for index in range(len(log.messages) - 1, -1, -1):
                if tokens >= at_least or log.messages[index].id == watermark:
                    break
                tokens += log.count(index)
            return tokens, (log.messages[-1] if log.messages else None)

    @twin
    def clear(self) -> Program[None]:
        """Delete this session's messages and state from the store."""
        return self._clear()

    aclear = async_twin(clear)

    def _clear(self) -> Program[None]:
        yield from call(self.store.clear, self.store.aclear, self.session_id)
        with self._lock:
            self._epoch += 1
            self._log.reset()
            self._on_clear()

    def _on_clear(self) -> None:
        """Hook: forget derived state after :meth:`clear`."""

    # -- views -----------------------------------------------------------------------------

    @abstractmethod
    def _view(self, max_tokens: int | None) -> ShortTermView:
        """Build the view from ``self._log`` (called with the lock held, log refreshed).

        ``max_tokens`` is a per-call budget to combine with the memory's own with
        :func:`tighter`.
        """

    def _window(
        self,
        *,
        max_tokens: int | None,
        max_messages: int | None = None,
        lower: int = 0,
        head: Sequence[Message] = (),
        summary: str | None = None,
    ) -> ShortTermView:
        """The newest units from index ``lower`` on that fit the limits, after ``head``.

        ``head`` (system messages, a summary) is counted first; then units are taken newest
        first until the next one would break a limit. Contiguous: a unit that does not fit
        stops the walk, so the view never skips a message to show an older one.
        """
        log = self._log
        system = self._system_head(max_tokens)
        head = [*system, *head]
        used = REPLY_PRIMING_TOKENS + sum(self.token_counter.count_message(m) for m in head)
        budget = None if max_tokens is None else max_tokens - used
        taken: list[Unit] = []
        n_taken = 0
        truncated: list[Message] = []
        for unit in log.units_backwards(lower, skip_system=self.preserve_system):
            if unit.orphan:
                continue
            size = unit.stop - unit.start
            if max_messages is not None and n_taken + size > max_messages:
                break
            if budget is not None and unit.tokens > budget:
                if not taken and size == 1:
                    cut = self._truncate(log.messages[unit.start], budget)
                    if cut is not None:
                        truncated.append(cut)
                break
            taken.append(unit)
            n_taken += size
            if budget is not None:
                budget -= unit.tokens
        body = [m for u in reversed(taken) for m in log.messages[u.start : u.stop]] + truncated
        messages = head + body
        # Messages neither shown nor before ``lower`` (those a summary covers).
        eligible = len(log.messages) - lower
        omitted_system = 0
        if self.preserve_system:
            eligible -= sum(1 for i in log.system_indexes if i >= lower)
            omitted_system = len(log.system_indexes) - len(system)
        return ShortTermView(
            messages=messages,
            # Same as count_messages(messages), from counts already at hand.
            token_count=used
            + sum(u.tokens for u in taken)
            + sum(self.token_counter.count_message(m) for m in truncated),
            omitted=eligible - len(body) + omitted_system,
            truncated=[m.id for m in truncated],
            summary=summary,
        )

    def _system_head(self, max_tokens: int | None) -> list[Message]:
        """System messages kept at the front (the newest ones when they alone overflow)."""
        if not self.preserve_system:
            return []
        log = self._log
        if max_tokens is None:
            return [log.messages[i] for i in log.system_indexes]
        budget = max_tokens - REPLY_PRIMING_TOKENS
        kept: list[int] = []
        for i in reversed(log.system_indexes):
            if log.count(i) > budget:
                break
            kept.append(i)
            budget -= log.count(i)
        return [log.messages[i] for i in reversed(kept)]

    def _truncate(self, message: Message, budget: int) -> Message | None:
        """A copy of ``message`` whose content is cut to fit ``budget`` tokens, or None."""
        counter = self.token_counter
        frame = counter.count_message(message.replace(content=""))
        room = budget - frame - counter.count_text(TRUNCATION_NOTE)
        if room <= 0:
            return None
        content = counter.truncate_text(message.content, room) + TRUNCATION_NOTE
        meta = {**message.metadata, "agentmem_truncated": True}
        return message.replace(content=content, metadata=meta)


def _build(
    role: str,
    content: object,
    metadata: Mapping[str, Any] | None,
    name: str | None,
    tool_calls: Sequence[ToolCall | Mapping[str, Any]] | None,
    tool_call_id: str | None,
) -> Message:
    if metadata is not None and not isinstance(metadata, Mapping):
        msg = f"metadata must be a mapping, got {type(metadata).__name__}"
        raise ConfigurationError(msg)
    data: dict[str, Any] = {"role": role, "content": content}
    if metadata:
        data["metadata"] = dict(metadata)
    if name is not None:
        data["name"] = name
    if tool_calls:
        data["tool_calls"] = list(tool_calls)
    if tool_call_id is not None:
        data["tool_call_id"] = tool_call_id
    return Message.from_dict(data)


def tighter(a: int | None, b: int | None) -> int | None:
    """The smaller of two optional limits (``None`` means no limit)."""
    if a is None:
        return b
    return a if b is None else min(a, b)


def check_limit(value: int | None, name: str) -> int | None:
    """Validate an optional positive integer limit (``None`` means no limit)."""
    return check_optional_int(value, name, expected="must be a positive integer or None")
