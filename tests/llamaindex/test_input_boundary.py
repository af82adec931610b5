"""LlamaIndex messages with unencodable text or over-deep values get agentmem errors."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock

from agentmem.errors import InvalidMessageError
from llamaindex_agentmem._convert import to_agentmem


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("message", "named"),
    [
        (ChatMessage(role="user", content="\ud800"), "lone surrogate"),
        (
            ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs=nested(5000))],
            ),
            "64 levels",
        ),
        (
            ChatMessage(
                role="assistant",
                blocks=[TextBlock(text="ok")],
                additional_kwargs={"trace": ["\udfff"]},
            ),
            "lone surrogate",
        ),
    ],
)
def test_unstorable_messages_are_refused(message: ChatMessage, named: str) -> None:
    with pytest.raises(InvalidMessageError, match=named):
        to_agentmem(message)
