"""Lossless conversion between LlamaIndex ``ChatMessage`` and agentmem ``Message`` (private).

Tool calls are read from ``ToolCallBlock`` content blocks (LlamaIndex 0.14) and from
``additional_kwargs["tool_calls"]`` (OpenAI-style dicts or objects, and ``ToolSelection``),
and written back in the form they came in, so a conversation round-trips through our log.
What our ``Message`` has no field for (the original role name, extra ``additional_kwargs``,
non-text blocks such as images) travels in ``metadata["llamaindex"]`` and is restored.

``additional_kwargs`` are stored as JSON: JSON data comes back as it went in (tuples as
lists, non-string dict keys as strings, JSON's own forms); anything else (a client object,
NaN) is refused with :class:`~agentmem.errors.InvalidMessageError`, never dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ContentBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)

from agentmem.errors import InvalidMessageError
from agentmem.integration import find_json_problem
from agentmem.types import Message, ToolCall

__all__ = ["META_KEY", "from_agentmem", "text_of", "to_agentmem", "to_agentmem_many"]

META_KEY = "llamaindex"

_ROLE_MAP = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "chatbot": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}
_OWN_KWARGS = ("tool_calls", "tool_call_id", "name")


def text_of(message: ChatMessage) -> str:
    """The text of a message's text blocks, joined by newlines."""
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock))


def _jsonable(value: object, what: str) -> Any:
    """``value`` (a pydantic model: its JSON dump) as JSON data, or
    ``InvalidMessageError`` naming ``what`` if it cannot be stored as JSON (an object JSON
    has no form for, NaN, a lone surrogate, nesting deeper than 64 levels)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json")
    problem = find_json_problem(value, what=what)
    if problem is not None:
        raise InvalidMessageError(problem.message)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:  # e.g. an int of more than 4,300 digits
        msg = f"{what} is not JSON-serializable ({exc}); convert it to str"
        raise InvalidMessageError(msg) from None
    return json.loads(text)


def _call_from_kwarg(item: object) -> ToolCall:
    tool_id = getattr(item, "tool_id", None)
    if tool_id is not None:  # a ToolSelection
        kwargs = getattr(item, "tool_kwargs", {})
        return ToolCall.create(str(tool_id), str(getattr(item, "tool_name", "")), kwargs)
    data = item if isinstance(item, Mapping) else _jsonable(item, "a tool call")
    return ToolCall.from_dict(data)


def _call_from_block(block: ToolCallBlock, index: int) -> tuple[ToolCall, bool]:
    kwargs = block.tool_kwargs
    raw = isinstance(kwargs, str)
    call_id = block.tool_call_id or f"call_{index}"
    return ToolCall.create(call_id, block.tool_name, kwargs or "{}"), raw


def to_agentmem(message: ChatMessage) -> Message:
    """Convert a LlamaIndex message to an agentmem :class:`Message`.

    Raises:
        InvalidMessageError: The message cannot be stored: text with a lone surrogate,
            ``additional_kwargs`` (or tool calls, content blocks) that are not JSON data.
    """
    role_name = str(getattr(message.role, "value", message.role))
    role = _ROLE_MAP.get(role_name, "user")
    extra = dict(message.additional_kwargs or {})
    meta: dict[str, Any] = {}
    if role_name != role:
        meta["role"] = role_name

    calls: list[ToolCall] = []
    raw_ids: list[str] = []
    blocks_form = False
    other_blocks = False
    for index, block in enumerate(message.blocks):
        if isinstance(block, ToolCallBlock):
            call, raw = _call_from_block(block, index)
            calls.append(call)
            blocks_form = True
            if raw:
                raw_ids.append(call.id)
        elif not isinstance(block, TextBlock):
            other_blocks = True
    kwarg_calls = extra.pop("tool_calls", None) or []
    if kwarg_calls and not calls:
        calls = [_call_from_kwarg(item) for item in kwarg_calls]
        meta["tool_calls_form"] = "additional_kwargs"
    elif blocks_form:
        meta["tool_calls_form"] = "blocks"
    if raw_ids:
        meta["raw_kwargs"] = raw_ids
    if other_blocks:
        meta["blocks"] = [_jsonable(b, "a content block") for b in message.blocks]

    name = extra.pop("name", None)
    tool_call_id = extra.pop("tool_call_id", None)
    if role != "tool" and tool_call_id is not None:
        extra["tool_call_id"] = tool_call_id  # e.g. a return_direct answer; kept verbatim
        tool_call_id = None
    if role == "tool" and tool_call_id is None:
        # A tool result that answers no recorded call (ReAct observations, old function
        # messages): kept as plain text in the log, its role restored on the way out.
        meta["role"] = role_name
        role = "user"
    kept: dict[str, Any] = {}
    for key, value in extra.items():
        # Not JSON data (a client object, a stream) is refused, never dropped silently.
        kept[key] = _jsonable(value, f"additional_kwargs[{key!r}]")
    if kept:
        meta["additional_kwargs"] = kept

    fields: dict[str, Any] = {"metadata": {META_KEY: meta} if meta else {}}
    if name is not None:
        fields["name"] = str(name)
    if calls and role == "assistant":
        fields["tool_calls"] = tuple(calls)
    if tool_call_id is not None:
        fields["tool_call_id"] = str(tool_call_id)
    return Message.create(role, text_of(message), **fields)


def to_agentmem_many(messages: Sequence[ChatMessage]) -> list[Message]:
    """Convert several messages (see :func:`to_agentmem`)."""
    return [to_agentmem(m) for m in messages]


def _kwargs_of(text: str, raw: bool) -> dict[str, Any] | str:
    if raw:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


def from_agentmem(message: Message) -> ChatMessage:
    """Convert an agentmem :class:`Message` back to a LlamaIndex ``ChatMessage``."""
    meta = message.metadata.get(META_KEY) or {}
    role = MessageRole(meta.get("role", message.role))
    extra: dict[str, Any] = dict(meta.get("additional_kwargs") or {})
    if message.name is not None:
        extra["name"] = message.name
    if message.tool_call_id is not None:
        extra["tool_call_id"] = message.tool_call_id
    form = meta.get("tool_calls_form", "blocks")
    if message.tool_calls and form == "additional_kwargs":
        extra["tool_calls"] = [call.to_dict() for call in message.tool_calls]

    if "blocks" in meta:
        return ChatMessage.model_validate(
            {"role": role, "blocks": meta["blocks"], "additional_kwargs": extra}
        )
    blocks: list[ContentBlock] = []
    if message.content:
        blocks.append(TextBlock(text=message.content))
    if message.tool_calls and form == "blocks":
        raw = set(meta.get("raw_kwargs") or ())
        blocks.extend(
            ToolCallBlock(
                tool_call_id=call.id,
                tool_name=call.name,
                tool_kwargs=_kwargs_of(call.arguments, call.id in raw),
            )
            for call in message.tool_calls
        )
    if not blocks:
        blocks.append(TextBlock(text=""))
    return ChatMessage(role=role, blocks=blocks, additional_kwargs=extra)
