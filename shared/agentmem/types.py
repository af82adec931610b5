"""Core value types: chat messages and tool calls.

Messages are immutable. They convert to and from the OpenAI chat wire format
(``{"role", "content", "name", "tool_calls", "tool_call_id"}``), which is also the
shape short-term memories return from ``get_messages()``.

Example:
    >>> from agentmem.types import Message
    >>> m = Message(role="user", content="hello")
    >>> m.to_dict()
    {'role': 'user', 'content': 'hello'}
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentmem._util.clock import utcnow
from agentmem._util.pydantic_errors import describe
from agentmem.errors import InvalidMessageError
from agentmem.storable import json_problem, json_text, text_problem

__all__ = ["ROLES", "Message", "MessageLike", "Role", "ToolCall", "to_message", "utcnow"]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = get_args(Role)


def _storable_text(value: str, what: str) -> str:
    problem = text_problem(value, what=what)
    if problem is not None:
        raise ValueError(problem)
    return value


def _new_id() -> str:
    return uuid.uuid4().hex


class ToolCall(BaseModel):
    """One function call requested by an assistant message.

    Attributes:
        id: Provider id of the call; the matching tool message carries it as ``tool_call_id``.
        name: Function name.
        arguments: The arguments as the JSON text the model produced (kept verbatim).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str = "{}"

    @field_validator("id", "name", "arguments")
    @classmethod
    def _encodable(cls, value: str, info: ValidationInfo) -> str:
        return _storable_text(value, f"tool call {info.field_name}")

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI wire format of this call."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    @classmethod
    def create(cls, id: object, name: object, arguments: object = "{}") -> ToolCall:
        """Validate and build a call, raising :class:`InvalidMessageError` on bad input.

        Args:
            id: The provider's call id.
            name: The function name.
            arguments: The arguments as JSON text, or as a JSON value to serialize.

        Example:
            >>> ToolCall.create("c1", "get_weather", {"city": "Oslo"}).arguments
            '{"city": "Oslo"}'
        """
        text = _arguments_text(arguments, sort_keys=False)
        try:
            return cls(id=id, name=name, arguments=text)  # type: ignore[arg-type]
        except ValidationError as exc:
            raise InvalidMessageError(describe(exc, "tool call")) from None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """Parse the OpenAI wire format (``{"id", "function": {...}}``) or a flat dict."""
        fn = data.get("function")
        if isinstance(fn, Mapping):
            name, arguments = fn.get("name"), fn.get("arguments", "{}")
        else:
            name, arguments = data.get("name"), data.get("arguments", data.get("args", "{}"))
        arguments = _arguments_text(arguments, sort_keys=True)
        return cls(id=data.get("id", ""), name=name or "", arguments=arguments)


def _arguments_text(arguments: object, *, sort_keys: bool) -> str:
    if isinstance(arguments, str):
        return arguments
    problem = json_problem(arguments, what="tool call arguments")
    if problem is not None:
        raise InvalidMessageError(problem)
    try:
        return json.dumps(arguments, ensure_ascii=False, sort_keys=sort_keys)
    except (TypeError, ValueError) as exc:
        msg = f"tool call arguments must be JSON-serializable: {exc}"
        raise InvalidMessageError(msg) from None


class Message(BaseModel):
    """One chat message, immutable.

    Attributes:
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        content: The text. Empty is allowed only for assistant messages that carry tool calls.
        name: Optional participant name (OpenAI ``name``).
        tool_calls: Calls requested by an assistant message.
        tool_call_id: For ``tool`` messages, the id of the call they answer (required).
        timestamp: When the message was created (timezone-aware).
        id: Unique id (hex UUID4 unless given).
        metadata: Free-form JSON-serializable data (at most 64 levels of nesting); never
            sent to the model.

    Every text must be encodable as UTF-8 (no lone surrogates such as ``"\\ud800"``).

    Example:
        >>> call = ToolCall(id="c1", name="get_weather", arguments='{"city": "Oslo"}')
        >>> Message(role="assistant", content="", tool_calls=(call,)).tool_calls[0].name
        'get_weather'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str = ""
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    timestamp: datetime = Field(default_factory=utcnow)
    id: str = Field(default_factory=_new_id, min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)

    # Token counts per counter configuration; filled by TokenCounter.count_message.
    _token_cache: dict[str, int] = PrivateAttr(default_factory=dict)

    @property
    def token_cache(self) -> dict[str, int]:
        """Cached token counts of this message, keyed by encoding and framing (internal use)."""
        return self._token_cache

    @field_validator("content", mode="before")
    @classmethod
    def _content_is_text(cls, value: object) -> object:
        if value is None:
            return ""
        if not isinstance(value, str):
            msg = (
                f"message content must be a string, got {type(value).__name__}; "
                "serialize structured content (for example with json.dumps) before adding it"
            )
            raise ValueError(msg)
        return _storable_text(value, "message content")

    @field_validator("name", "tool_call_id", "id")
    @classmethod
    def _encodable(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _storable_text(value, f"message {info.field_name}")

    @field_validator("timestamp")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            msg = "timestamp must be timezone-aware (for example datetime.now(timezone.utc))"
            raise ValueError(msg)
        return value

    @field_validator("metadata")
    @classmethod
    def _json_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        json_text(value, what="metadata")  # raises InvalidValueError, a ValueError
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Message:
        if self.tool_calls and self.role != "assistant":
            msg = f"only assistant messages may carry tool_calls, not {self.role!r} messages"
            raise ValueError(msg)
        if self.role == "tool" and not self.tool_call_id:
            msg = "a tool message needs the tool_call_id of the assistant call it answers"
            raise ValueError(msg)
        if self.role != "tool" and self.tool_call_id is not None:
            msg = f"tool_call_id is only valid on tool messages, not {self.role!r} messages"
            raise ValueError(msg)
        return self

    @classmethod
    def create(cls, role: str, content: object, **fields: Any) -> Message:
        """Validate and build a message, raising :class:`InvalidMessageError` on bad input.

        Example:
            >>> Message.create("user", "hi").role
            'user'
        """
        if role not in ROLES:
            msg = f"unknown message role {role!r}; expected one of {', '.join(ROLES)}"
            raise InvalidMessageError(msg)
        try:
            return cls(role=role, content=content, **fields)  # type: ignore[arg-type]
        except ValidationError as exc:
            raise InvalidMessageError(describe(exc, "message")) from None

    def to_dict(self, *, include_metadata: bool = False) -> dict[str, Any]:
        """The OpenAI wire format; ``metadata``, ``id`` and ``timestamp`` only on request."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name is not None:
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if include_metadata:
            out["id"] = self.id
            out["timestamp"] = self.timestamp.isoformat()
            out["metadata"] = self.metadata
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Parse a wire-format dict (extra ``id``/``timestamp``/``metadata`` keys allowed).

        Raises:
            InvalidMessageError: The dict is not a valid chat message.
        """
        if not isinstance(data, Mapping):
            msg = f"expected a message dict, got {type(data).__name__}"
            raise InvalidMessageError(msg)
        unknown = set(data) - {
            "role",
            "content",
            "name",
            "tool_calls",
            "tool_call_id",
            "id",
            "timestamp",
            "metadata",
        }
        if unknown:
            msg = f"unknown message field(s) {sorted(unknown)!r}"
            raise InvalidMessageError(msg)
        if "role" not in data:
            msg = "message dict has no 'role'"
            raise InvalidMessageError(msg)
        fields: dict[str, Any] = {k: v for k, v in data.items() if k not in ("role", "content")}
        calls = fields.pop("tool_calls", None) or ()
        try:
            fields["tool_calls"] = tuple(
                c if isinstance(c, ToolCall) else ToolCall.from_dict(c) for c in calls
            )
        except (ValidationError, AttributeError, TypeError) as exc:
            msg = f"malformed tool_calls: {exc}"
            raise InvalidMessageError(msg) from None
        if isinstance(fields.get("timestamp"), str):
            fields["timestamp"] = datetime.fromisoformat(fields["timestamp"])
        if fields.get("id") is None:
            fields.pop("id", None)
        if fields.get("metadata") is None:
            fields.pop("metadata", None)
        return cls.create(str(data["role"]), data.get("content"), **fields)

    def replace(self, **changes: Any) -> Message:
        """A validated copy with ``changes`` applied (same id unless changed).

        Unlike ``model_copy``, the copy does not share this message's token-count cache.
        """
        return type(self).model_validate({**self.model_dump(), **changes})

    def to_json(self) -> str:
        """Lossless JSON (the storage format)."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> Message:
        """Inverse of :meth:`to_json`."""
        return cls.model_validate_json(text)


MessageLike = Message | Mapping[str, Any]
"""A :class:`Message` or an OpenAI-style message dict."""


def to_message(item: MessageLike) -> Message:
    """Coerce a message or wire-format dict into a :class:`Message`."""
    if isinstance(item, Message):
        return item
    return Message.from_dict(item)
