"""LangChain messages <-> agentmem :class:`~agentmem.types.Message` (private helpers).

Text, names, tool calls (ids, args, ``tool_call_id``) and message ids round-trip exactly.
Content blocks (images, ``tool_use`` blocks, ...) follow a policy: ``"keep"`` (default)
stores the text parts as the message content, with ``[image]``-style placeholders, and keeps
the original blocks in metadata so they come back unchanged; ``"text"`` keeps the text parts
only; ``"error"`` refuses any non-text block.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import ToolCall as LCToolCall
from langchain_core.messages.tool import invalid_tool_call

from agentmem.errors import InvalidMessageError
from agentmem.integration import find_json_problem, json_problem
from agentmem.types import ROLES, Message, ToolCall

__all__ = ["ContentPolicy", "from_langchain", "to_langchain", "to_langchain_all"]

ContentPolicy = Literal["keep", "text", "error"]

_META_ID = "lc_id"
_META_CONTENT = "lc_content"
_META_KWARGS = "lc_additional_kwargs"
_META_STATUS = "lc_status"
_META_INVALID = "lc_invalid_tool_calls"


def _json_or_none(value: Any, what: str) -> Any:
    """``value`` if it can be stored; ``None`` if JSON has no form for it (a client object,
    NaN: not persistable); raises for JSON data that cannot be stored (a lone surrogate,
    nesting deeper than 64 levels)."""
    problem = find_json_problem(value, what=what)
    if problem is None:
        return value
    if problem.representable:
        raise InvalidMessageError(problem.message)
    return None


def _text_of(content: str | list[Any], policy: ContentPolicy) -> tuple[str, bool]:
    """The text of ``content`` and whether non-text blocks were present."""
    if isinstance(content, str):
        return content, False
    parts: list[str] = []
    rich = False
    for block in content:
        if isinstance(block, str):
            parts.append(block)
            continue
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
            continue
        if policy == "error":
            msg = (
                f"message content holds a {kind or type(block).__name__!r} block; this history "
                "stores text only with content_blocks='error' (use 'keep' to store blocks "
                "losslessly, or 'text' to drop them)"
            )
            raise InvalidMessageError(msg)
        rich = True
        if policy == "keep":
            parts.append(f"[{kind or 'block'}]")
    return "\n".join(p for p in parts if p), rich


def from_langchain(message: BaseMessage, *, content_blocks: ContentPolicy = "keep") -> Message:
    """Convert a LangChain message (human, ai, system, tool, chat) to an agentmem Message.

    Raises:
        InvalidMessageError: Unknown message type, or a content block refused by the policy.
    """
    if not isinstance(message, BaseMessage):
        msg = f"expected a LangChain BaseMessage, got {type(message).__name__}"
        raise InvalidMessageError(msg)
    role = _role_of(message)
    text, rich = _text_of(message.content, content_blocks)
    meta: dict[str, Any] = {}
    if message.id is not None:
        meta[_META_ID] = message.id
    if rich and content_blocks == "keep":
        blocks = _json_or_none(message.content, "message content blocks")
        if blocks is None:
            msg = (
                "message content blocks must be JSON-serializable to be stored; "
                f"{json_problem(message.content, what='the content')}"
            )
            raise InvalidMessageError(msg)
        meta[_META_CONTENT] = blocks
    kwargs = _json_or_none(dict(message.additional_kwargs), "additional_kwargs")
    if kwargs:
        meta[_META_KWARGS] = kwargs
    fields: dict[str, Any] = {"name": message.name, "metadata": meta}
    if isinstance(message, AIMessage):
        fields["tool_calls"] = tuple(
            ToolCall.create(call.get("id") or "", call["name"], call["args"])
            for call in message.tool_calls
        )
        if message.invalid_tool_calls:
            invalid = [dict(c) for c in message.invalid_tool_calls]
            meta[_META_INVALID] = _json_or_none(invalid, "invalid_tool_calls")
    if isinstance(message, ToolMessage):
        fields["tool_call_id"] = message.tool_call_id
        if message.status != "success":
            meta[_META_STATUS] = message.status
    return Message.create(role, text, **fields)


def _role_of(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, ChatMessage):
        role = {"human": "user", "ai": "assistant"}.get(message.role, message.role)
        if role in ROLES:
            return role
        msg = (
            f"ChatMessage role {message.role!r} is not supported; use one of "
            f"{', '.join(ROLES)} (or human/ai)"
        )
        raise InvalidMessageError(msg)
    msg = (
        f"unsupported LangChain message type {type(message).__name__!r} "
        f"(type {message.type!r}); convert it to a Human, AI, System or Tool message first"
    )
    raise InvalidMessageError(msg)


def _lc_tool_calls(message: Message) -> tuple[list[LCToolCall], list[Any]]:
    valid: list[LCToolCall] = []
    invalid: list[Any] = []
    for call in message.tool_calls:
        try:
            args = json.loads(call.arguments)
        except ValueError:
            args = None
        if isinstance(args, dict):
            valid.append(LCToolCall(name=call.name, args=args, id=call.id, type="tool_call"))
        else:
            invalid.append(
                invalid_tool_call(name=call.name, args=call.arguments, id=call.id, error=None)
            )
    return valid, invalid


def to_langchain(message: Message) -> BaseMessage:
    """Convert an agentmem Message back to the LangChain message it came from."""
    meta = message.metadata
    content: Any = meta.get(_META_CONTENT, message.content)
    common: dict[str, Any] = {
        "content": content,
        "id": meta.get(_META_ID),
        "name": message.name,
        "additional_kwargs": dict(meta.get(_META_KWARGS) or {}),
    }
    if message.role == "user":
        return HumanMessage(**common)
    if message.role == "system":
        return SystemMessage(**common)
    if message.role == "tool":
        return ToolMessage(
            tool_call_id=message.tool_call_id or "",
            status=meta.get(_META_STATUS, "success"),
            **common,
        )
    valid, invalid = _lc_tool_calls(message)
    invalid.extend(meta.get(_META_INVALID) or [])
    return AIMessage(tool_calls=valid, invalid_tool_calls=invalid, **common)


def to_langchain_all(messages: Sequence[Message]) -> list[BaseMessage]:
    """Convert several messages (see :func:`to_langchain`)."""
    return [to_langchain(m) for m in messages]
