"""Fit an agent's model request into a token budget, exactly (private helpers).

The count is the chat-format count of agentmem's :class:`~agentmem.tokens.TokenCounter`:
system prompt (with injected memories), messages (tool calls included) and the tool schemas.
Non-text content blocks count as their placeholder text (``[image]``), since providers bill
images separately from text tokens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from agentmem.context import ContextBudgetError
from agentmem.controller.retrieval import MEMORY_BLOCK_CLOSE, MEMORY_BLOCK_OPEN, render_memory_line
from agentmem.long_term.store import ScoredRecord
from agentmem.short_term.summary import render_summary
from agentmem.tokens import TokenCounter
from agentmem.types import Message
from langchain_agentmem._convert import from_langchain

__all__ = ["Fitted", "fit_request", "tool_schemas"]


def tool_schemas(tools: Sequence[BaseTool | dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function schemas of the request's tools (provider-native dicts kept as is)."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        if isinstance(tool, Mapping) and "function" not in tool and "name" not in tool:
            continue  # a provider built-in tool (web search, ...): no schema we can count
        out.append(convert_to_openai_tool(tool))
    return out


def _units(messages: list[Message]) -> list[list[int]]:
    """Indices grouped so an assistant tool call stays with its tool results."""
    units: list[list[int]] = []
    for i, msg in enumerate(messages):
        if msg.role == "tool" and units and messages[units[-1][0]].tool_calls:
            units[-1].append(i)
        else:
            units.append([i])
    return units


class Fitted:
    """The result: the system text, the indices of the messages kept, and the count."""

    def __init__(self, system: str, keep: list[int], recalled: int, tokens: int) -> None:
        self.system = system
        self.keep = keep
        self.recalled = recalled
        self.tokens = tokens


def _system_text(base: str, summary: str | None, lines: list[str]) -> str:
    parts = [base] if base else []
    if summary:
        parts.append(render_summary(summary))  # delimited, markup escaped
    if lines:
        parts.append("\n".join([MEMORY_BLOCK_OPEN, *lines, MEMORY_BLOCK_CLOSE]))
    return "\n\n".join(parts)


def fit_request(
    counter: TokenCounter,
    *,
    max_tokens: int,
    system: str,
    messages: Sequence[BaseMessage],
    tools: list[dict[str, Any]],
    hits: Sequence[ScoredRecord],
    summary: str | None,
    memory_share: float,
) -> Fitted:
    """Choose what to send so the request counts at most ``max_tokens`` tokens.

    Order of sacrifice: the oldest messages (whole tool-call units; the window never starts
    on an orphan tool result), then the summary, then recalled memories beyond
    ``memory_share`` of the budget. The latest unit is always kept.

    Raises:
        ContextBudgetError: The system prompt, tool schemas and the latest message alone
            exceed the budget.
    """
    converted = [from_langchain(m) for m in messages]
    units = _units(converted)

    def count(text: str, keep: list[int]) -> int:
        head = [Message(role="system", content=text)] if text else []
        return counter.count_messages([*head, *(converted[i] for i in keep)], tools=tools)

    last = units[-1] if units else []
    floor = count(system, last)
    if floor > max_tokens:
        msg = (
            f"the system prompt, tool schemas and latest message take {floor} tokens, over "
            f"max_tokens={max_tokens}; raise max_tokens, shorten the prompt or use fewer tools"
        )
        raise ContextBudgetError(msg)
    memory_cap = floor + int(max_tokens * memory_share)
    lines: list[str] = []
    for hit in hits:
        trial = [*lines, render_memory_line(hit)]
        if count(_system_text(system, None, trial), last) > min(memory_cap, max_tokens):
            break
        lines = trial
    text = _system_text(system, summary, lines)
    if summary and count(text, last) > max_tokens:
        text, summary = _system_text(system, None, lines), None
    keep = list(last)
    for unit in reversed(units[:-1]):
        window = [*unit, *keep]
        if count(text, window) > max_tokens:
            break
        keep = window
    return Fitted(text, keep, len(lines), count(text, keep))
