"""Packing the tiers into one prompt within an exact token budget, with a ledger.

:func:`pack_context` builds the messages to send:

1. one system message: the system prompt, then the working memory, then the recalled
   long-term memories (delimited and labelled as data, see :mod:`agentmem.controller.retrieval`);
2. the short-term view: system messages of the log, the rolling summary, the recent turns;
3. the query as the last user message.

Priorities when the budget is tight: system prompt and query always (else an error), then
working memory (up to ``working_share`` of the budget), recalled memories (up to
``memory_share``, best first, whole lines only), then as many recent turns as fit.

No fact twice: a recalled memory whose source messages (``source_message_ids``) are all in
the recent turns that made it into the prompt is left out (counted in
``omitted["long_term_in_recent"]``); the room it took goes to the recent turns.

Exactness: ``token_count`` is :meth:`TokenCounter.count_messages` of ``messages`` (OpenAI's
chat format, reply priming included), and the ledger's values sum to it exactly: text shared
by one message is attributed by counting its growing prefix, so BPE merges across section
boundaries are never double-counted. ``text`` renders the chat in ChatML
(``<|im_start|>role<|im_sep|>content<|im_end|>`` ... ``<|im_start|>assistant<|im_sep|>``);
counted with those markers as single tokens, it is exactly ``token_count`` tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentmem.errors import ConfigurationError
from agentmem.long_term.render import MEMORY_BLOCK_CLOSE, MEMORY_BLOCK_OPEN, render_memory_line
from agentmem.long_term.store import ScoredRecord
from agentmem.short_term.view import ShortTermView
from agentmem.tokens import REPLY_PRIMING_TOKENS, TokenCounter
from agentmem.types import Message

__all__ = ["BuiltContext", "ContextBudgetError", "pack_context", "render_chatml"]

SEPARATOR = "\n\n"


class ContextBudgetError(ConfigurationError):
    """The system prompt and the query alone do not fit in ``max_tokens``."""


@dataclass
class BuiltContext:
    """A prompt packed within a token budget.

    Attributes:
        messages: OpenAI-style message dicts to send, in order.
        text: The same chat rendered in ChatML.
        ledger: Section -> exact tokens (``system``, ``working_memory``, ``long_term``,
            ``summary``, ``recent``, ``query``, ``reply_priming``); sums to ``token_count``.
        token_count: Exact chat-format tokens of ``messages``.
        max_tokens: The budget it was packed into.
        recalled: Long-term memories included, best first.
        omitted: Section -> items left out for lack of room; ``long_term_in_recent``
            counts recalled memories left out because the recent turns show them.
    """

    messages: list[dict[str, Any]]
    text: str
    ledger: dict[str, int]
    token_count: int
    max_tokens: int
    recalled: list[ScoredRecord] = field(default_factory=list)
    omitted: dict[str, int] = field(default_factory=dict)


def render_chatml(messages: Sequence[Message]) -> str:
    """ChatML rendering of a chat, reply priming included (see the module docstring)."""
    parts = []
    for m in messages:
        name = f"<|im_name|>{m.name}" if m.name is not None else ""
        calls = "".join(f"<|call|>{c.name}<|args|>{c.arguments}<|end_call|>" for c in m.tool_calls)
        parts.append(f"<|im_start|>{m.role}{name}<|im_sep|>{m.content}{calls}<|im_end|>")
    return "".join(parts) + "<|im_start|>assistant<|im_sep|>"


def pack_context(
    *,
    counter: TokenCounter,
    max_tokens: int,
    query: str | None,
    system_prompt: str | None,
    working_text: Callable[[int], str] | None,
    hits: Sequence[ScoredRecord],
    view_for: Callable[[int], ShortTermView] | None,
    working_share: float = 0.2,
    memory_share: float = 0.3,
) -> BuiltContext:
    """Pack the sections into ``max_tokens`` (see the module docstring).

    Args:
        counter: Token counter of the target model.
        max_tokens: The budget.
        query: The user's new message, sent last (``None`` to leave it out).
        system_prompt: Instructions placed first.
        working_text: Callable ``(max_tokens) -> str`` rendering working memory, or ``None``.
        hits: Recalled long-term memories, best first.
        view_for: Callable ``(max_tokens) -> ShortTermView`` giving the short-term view.
        working_share: Most of the budget working memory may take.
        memory_share: Most of the budget recalled memories may take.
    """
    query_msg = Message(role="user", content=query) if query else None
    base = [Message(role="system", content=system_prompt)] if system_prompt else []
    fixed = counter.count_messages([*base, *([query_msg] if query_msg else [])])
    if fixed > max_tokens:
        msg = (
            f"the system prompt and query alone take {fixed} tokens, over max_tokens="
            f"{max_tokens}; raise max_tokens or shorten them"
        )
        raise ContextBudgetError(msg)

    omitted: dict[str, int] = {}
    sections: list[tuple[str, str]] = []
    if system_prompt:
        sections.append(("system", system_prompt))

    def cost(candidate: list[tuple[str, str]]) -> int:
        content = SEPARATOR.join(text for _, text in candidate)
        system = [Message(role="system", content=content)] if content else []
        return counter.count_messages([*system, *([query_msg] if query_msg else [])])

    if working_text is not None:
        cap = min(max_tokens, cost(sections) + int(max_tokens * working_share))
        room = cap - cost(sections)
        for _ in range(4):  # the block costs a little more inside the message: shrink to fit
            text = working_text(room) if room > 0 else ""
            if not text:
                break
            over = cost([*sections, ("working_memory", text)]) - cap
            if over <= 0:
                sections.append(("working_memory", text))
                break
            room -= over

    # Pack the recalled memories, then the recent turns into what is left. A memory whose
    # source messages all made it into the recent turns would show the same thing twice:
    # drop it and pack again, never letting the memories grow past their previous size, so
    # the recent window can only widen and every dropped memory stays visible there.
    candidates = list(hits)
    memory_cap = max_tokens
    duplicates = 0
    view: ShortTermView | None = None
    packed = sections
    for _ in range(len(hits) + 1):
        memory_section, recalled = _pack_memories(
            candidates,
            sections,
            cost,
            min(memory_cap, cost(sections) + int(max_tokens * memory_share)),
        )
        packed = [*sections, *memory_section]
        content = SEPARATOR.join(text for _, text in packed)
        head = [Message(role="system", content=content)] if content else []
        used = counter.count_messages([*head, *([query_msg] if query_msg else [])])
        view = None
        if view_for is not None and max_tokens - used > 0:
            view = view_for(max_tokens - used + REPLY_PRIMING_TOKENS)
        shown = {m.id for m in view.messages} if view is not None else set()
        covered = {id(h) for h in recalled if _shown_in(h, shown)}
        if not covered:
            break
        duplicates += len(covered)
        candidates = [h for h in candidates if id(h) not in covered]
        memory_cap = cost(packed)
    sections = packed
    if len(recalled) + duplicates < len(hits):
        omitted["long_term"] = len(hits) - len(recalled) - duplicates
    if duplicates:
        omitted["long_term_in_recent"] = duplicates
    view_messages = list(view.messages) if view is not None else []
    if view is not None and view.omitted:
        omitted["recent"] = view.omitted

    messages = [*head, *view_messages, *([query_msg] if query_msg else [])]
    ledger = _ledger(counter, sections, head, view_messages, query_msg)
    token_count = counter.count_messages(messages)
    return BuiltContext(
        messages=[m.to_dict() for m in messages],
        text=render_chatml(messages),
        ledger=ledger,
        token_count=token_count,
        max_tokens=max_tokens,
        recalled=recalled,
        omitted=omitted,
    )


def _pack_memories(
    hits: Sequence[ScoredRecord],
    sections: list[tuple[str, str]],
    cost: Callable[[list[tuple[str, str]]], int],
    limit: int,
) -> tuple[list[tuple[str, str]], list[ScoredRecord]]:
    """The long-term section (empty or one) holding the best hits that fit in ``limit``
    (whole lines only), and those hits."""
    lines: list[str] = []
    recalled: list[ScoredRecord] = []
    for hit in hits:
        trial = [*lines, render_memory_line(hit)]
        block = "\n".join([MEMORY_BLOCK_OPEN, *trial, MEMORY_BLOCK_CLOSE])
        if cost([*sections, ("long_term", block)]) > limit:
            break
        lines, recalled = trial, [*recalled, hit]
    if not lines:
        return [], []
    return [("long_term", "\n".join([MEMORY_BLOCK_OPEN, *lines, MEMORY_BLOCK_CLOSE]))], recalled


def _shown_in(hit: ScoredRecord, message_ids: set[str]) -> bool:
    """Whether every message ``hit`` was drawn from is among ``message_ids``."""
    sources = hit.record.source_message_ids
    return bool(sources) and all(s in message_ids for s in sources)


def _ledger(
    counter: TokenCounter,
    sections: list[tuple[str, str]],
    head: list[Message],
    view_messages: list[Message],
    query_msg: Message | None,
) -> dict[str, int]:
    ledger: dict[str, int] = {}
    if head:
        # Attribute the shared system message by its growing prefix; framing goes to the
        # first section (the system prompt when there is one).
        previous = 0
        for i, (name, _) in enumerate(sections):
            prefix = SEPARATOR.join(text for _, text in sections[: i + 1])
            size = counter.count_text(prefix)
            ledger[name] = ledger.get(name, 0) + size - previous
            previous = size
        framing = counter.count_message(head[0]) - previous
        first = sections[0][0]
        ledger[first] += framing
    for message in view_messages:
        name = "summary" if message.metadata.get("agentmem_summary") else "recent"
        ledger[name] = ledger.get(name, 0) + counter.count_message(message)
    if query_msg is not None:
        ledger["query"] = counter.count_message(query_msg)
    ledger["reply_priming"] = REPLY_PRIMING_TOKENS
    return ledger
