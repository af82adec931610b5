"""Fit an agent's model request into a token budget, exactly (private helpers).

The request is assembled by agentmem's context assembler
(:func:`agentmem.context.assemble_context`) from blocks: the agent's system prompt, the
session's summary, working memory and recalled memories go into the system message; the
agent's messages are the history (the latest unit always kept, tool calls never split from
their results); the tool schemas are counted against the budget. Non-text content blocks
count as their placeholder text (``[image]``), since providers bill images separately from
text tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from agentmem.context import (
    Block,
    BuiltContext,
    InstructionsBlock,
    MessagesBlock,
    RecalledBlock,
    SummaryBlock,
    WorkingBlock,
    assemble_context,
)
from agentmem.long_term.store import ScoredRecord
from agentmem.tokens import TokenCounter
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


class Fitted:
    """The result: the system text, the indices of the messages kept, the memories
    recalled, the exact count, and the assembled context (ledger, what was left out)."""

    def __init__(self, context: BuiltContext) -> None:
        self.context = context
        self.system = context.system
        self.keep = context.kept
        self.recalled = len(context.recalled)
        self.tokens = context.token_count


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
    working: WorkingBlock | Callable[[int], str] | None = None,
) -> Fitted:
    """Choose what to send so the request counts at most ``max_tokens`` tokens.

    Order of sacrifice (the assembler's): the oldest messages (whole tool-call units; the
    window never starts on an orphan tool result), then the summary, then recalled
    memories beyond ``memory_share`` of the budget, then working-memory items beyond its
    share. The latest unit is always kept.

    Raises:
        ContextBudgetError: The system prompt, tool schemas and the latest message alone
            exceed the budget.
    """
    blocks: list[Block] = [
        MessagesBlock([from_langchain(m) for m in messages]),
        RecalledBlock(hits, memory_share),
    ]
    if system:
        blocks.append(InstructionsBlock(system))
    if summary:
        blocks.append(SummaryBlock(summary))
    if working is not None:
        blocks.append(working if isinstance(working, WorkingBlock) else WorkingBlock(working))
    return Fitted(assemble_context(blocks, counter=counter, max_tokens=max_tokens, tools=tools))
