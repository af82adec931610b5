"""Exact token counting with tiktoken, including OpenAI's chat-format overhead.

How a chat is counted (OpenAI's published rules for the chat format, as in the
``openai-cookbook`` "How to count tokens" guide, extended to tools as measured by the
``openai-chat-tokens`` project):

* every message costs ``tokens_per_message`` (3) framing tokens, plus the tokens of its role
  and its content;
* a ``name`` costs its tokens plus ``tokens_per_name`` (1);
* each tool call of an assistant message costs the tokens of its function name and of its
  argument text, plus 3;
* the reply is primed with ``<|start|>assistant<|message|>``: 3 tokens, once per request;
* tool schemas are rendered into the TypeScript-like ``namespace functions {...}`` block the
  provider injects into the system prompt: its tokens plus 9, less 4 when the chat already
  has a system message.

Each part is encoded on its own because special tokens separate the parts on the wire, so
BPE merges never cross them; the sum is therefore the count of the rendered chat.

Counts of :class:`~agentmem.types.Message` objects are cached on the message (they are
immutable), so a view over a long history never re-tokenizes it.

Offline: agentmem ships tiktoken's ``cl100k_base`` and ``o200k_base`` BPE files as package
data (sha256-checked against tiktoken's own pins, loaded with tiktoken's own parameters), so
counting needs no network, no ``TIKTOKEN_CACHE_DIR`` and no framework; other encodings go
through tiktoken's cache or download (see :mod:`agentmem._util.encodings`).

Example:
    >>> from agentmem import TokenCounter
    >>> counter = TokenCounter(model="gpt-4o")
    >>> counter.count_text("hello world")
    2
    >>> counter.count_messages([{"role": "user", "content": "hello world"}])
    9
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import tiktoken

from agentmem._util.encodings import load_encoding
from agentmem.errors import ConfigurationError
from agentmem.types import MessageLike, to_message

__all__ = ["DEFAULT_ENCODING", "DEFAULT_MODEL", "REPLY_PRIMING_TOKENS", "TokenCounter"]

DEFAULT_MODEL = "gpt-4o"
"""The target model agentmem counts for when none is given (one constant, used everywhere)."""
DEFAULT_ENCODING = "o200k_base"
REPLY_PRIMING_TOKENS = 3
TOOL_CALL_TOKENS = 3
TOOLS_BLOCK_TOKENS = 9
TOOLS_WITH_SYSTEM_DISCOUNT = 4


class TokenCounter:
    """Counts tokens exactly for a target model.

    Args:
        model: Target model; its tiktoken encoding is looked up (``gpt-4o`` -> ``o200k_base``,
            ``gpt-4`` / ``gpt-3.5-turbo`` -> ``cl100k_base``). Unknown models use
            ``o200k_base`` with a warning.
        encoding: Force an encoding name instead of looking it up from ``model``.
        cache_dir: Extra directory holding tiktoken's cached BPE files (offline use).

    Raises:
        TokenizerUnavailableError: No encoding file can be loaded (see the message for fixes).

    Example:
        >>> TokenCounter(model="gpt-4").encoding_name
        'cl100k_base'
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        encoding: str | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            msg = f"model must be a non-empty string, got {model!r}"
            raise ConfigurationError(msg)
        self.model = model
        if encoding is None:
            try:
                encoding = tiktoken.encoding_name_for_model(model)
            except KeyError:
                warnings.warn(
                    f"tiktoken does not know model {model!r}; counting with {DEFAULT_ENCODING}. "
                    "Pass encoding=... to choose the encoding explicitly.",
                    UserWarning,
                    stacklevel=2,
                )
                encoding = DEFAULT_ENCODING
        self.encoding_name: str = encoding
        self._encoding = load_encoding(encoding, str(cache_dir) if cache_dir else None)
        # gpt-3.5-turbo-0301 framed messages differently (cookbook); every later model uses 3/1.
        legacy = model.startswith("gpt-3.5-turbo-0301")
        self.tokens_per_message = 4 if legacy else 3
        self.tokens_per_name = -1 if legacy else 1
        self._cache_key = f"{encoding}:{self.tokens_per_message}:{self.tokens_per_name}"

    def __repr__(self) -> str:
        return f"TokenCounter(model={self.model!r}, encoding={self.encoding_name!r})"

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The underlying tiktoken encoding."""
        return self._encoding

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; special-token text is treated as ordinary text."""
        return self._encoding.encode_ordinary(text)

    def count_text(self, text: str) -> int:
        """Tokens of a plain string (no chat framing)."""
        return len(self._encoding.encode_ordinary(text))

    def truncate_text(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` that fits in ``max_tokens`` tokens.

        Cuts on token boundaries and drops a trailing partial UTF-8 character.
        """
        if max_tokens <= 0:
            return ""
        tokens = self.encode(text)
        if len(tokens) <= max_tokens:
            return text
        cut = self._encoding.decode_bytes(tokens[:max_tokens]).decode("utf-8", errors="ignore")
        # Decoding a prefix can re-tokenize longer at the edge of a multibyte character.
        while cut and self.count_text(cut) > max_tokens:
            cut = cut[:-1]
        return cut

    def count_message(self, message: MessageLike) -> int:
        """Tokens one message adds to a chat: framing, role, name, content and tool calls.

        Counts of :class:`Message` objects are computed once and cached on the message.
        """
        msg = to_message(message)
        cache = msg.token_cache
        cached = cache.get(self._cache_key)
        if cached is not None:
            return cached
        count = self.tokens_per_message + self.count_text(msg.role) + self.count_text(msg.content)
        if msg.name is not None:
            count += self.count_text(msg.name) + self.tokens_per_name
        for call in msg.tool_calls:
            count += self.count_text(call.name) + self.count_text(call.arguments) + TOOL_CALL_TOKENS
        cache[self._cache_key] = count
        return count

    def count_messages(
        self,
        messages: Iterable[MessageLike],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        reply_priming: bool = True,
    ) -> int:
        """The full chat-format count of a request: messages, tool schemas and reply priming.

        Args:
            messages: :class:`Message` objects or ``{"role", "content", ...}`` dicts.
            tools: OpenAI tool (or function) schemas sent with the request.
            reply_priming: Add the 3 tokens that prime the assistant's reply.
        """
        total = 0
        has_system = False
        for item in messages:
            msg = to_message(item)
            has_system = has_system or msg.role == "system"
            total += self.count_message(msg)
        if tools:
            total += self.count_tools(tools, has_system=has_system)
        if reply_priming:
            total += REPLY_PRIMING_TOKENS
        return total

    def count_tools(self, tools: Sequence[Mapping[str, Any]], *, has_system: bool = False) -> int:
        """Tokens that tool schemas add to a request (see the module docstring)."""
        if not tools:
            return 0
        count = self.count_text(render_tools(tools)) + TOOLS_BLOCK_TOKENS
        return count - TOOLS_WITH_SYSTEM_DISCOUNT if has_system else count


def render_tools(tools: Sequence[Mapping[str, Any]]) -> str:
    """Render OpenAI tool schemas as the ``namespace functions`` block the model sees.

    Accepts ``{"type": "function", "function": {...}}`` tool dicts or bare function dicts.
    """
    lines = ["namespace functions {", ""]
    for tool in tools:
        fn = tool.get("function", tool)
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            msg = f"a tool schema needs a function name, got {tool!r}"
            raise ConfigurationError(msg)
        if fn.get("description"):
            lines.append(f"// {fn['description']}")
        params = fn.get("parameters") or {}
        if params.get("properties"):
            lines.append(f"type {fn['name']} = (_: {{")
            lines.append(_render_properties(params, indent=0))
            lines.append("}) => any;")
        else:
            lines.append(f"type {fn['name']} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def _render_properties(obj: Mapping[str, Any], indent: int) -> str:
    required = set(obj.get("required") or ())
    lines = []
    for name, prop in (obj.get("properties") or {}).items():
        if prop.get("description") and indent < 2:
            lines.append(f"// {prop['description']}")
        optional = "" if name in required else "?"
        lines.append(f"{name}{optional}: {_render_type(prop, indent)},")
    return "\n".join(" " * indent + line for line in lines)


def _render_type(prop: Mapping[str, Any], indent: int) -> str:
    kind = prop.get("type")
    enum = prop.get("enum")
    if kind == "string":
        return " | ".join(json.dumps(v) for v in enum) if enum else "string"
    if kind in ("number", "integer"):
        return " | ".join(str(v) for v in enum) if enum else "number"
    if kind == "boolean":
        return "boolean"
    if kind == "null":
        return "null"
    if kind == "array":
        items = prop.get("items")
        return f"{_render_type(items, indent)}[]" if items else "any[]"
    if kind == "object":
        return "{\n" + _render_properties(prop, indent + 2) + "\n}"
    return "any"
