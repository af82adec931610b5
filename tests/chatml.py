"""An independent reference count of a chat: ChatML text counted by an extended encoding.

The chat is rendered by :func:`agentmem.context.render_chatml` with one control token per
framing token of OpenAI's wire format (``<|im_start|>role<|im_sep|>content<|im_end|>``,
``<|im_name|>`` before a name, ``<|call|>name<|args|>arguments<|end_call|>`` per tool call,
and ``<|im_start|>assistant<|im_sep|>`` to prime the reply). The encoding is tiktoken's own,
extended with those control tokens as tiktoken's README shows; counting the whole rendered
text with it must equal ``TokenCounter.count_messages`` of the chat.

Used by the token tests, the context tests and ``bench/short_term.py``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import tiktoken

from agentmem.context import render_chatml
from agentmem.types import Message

__all__ = ["CONTROL", "chat_encoding", "count_rendered", "reference_count", "render_chatml"]

CONTROL = (
    "<|im_start|>",
    "<|im_sep|>",
    "<|im_end|>",
    "<|im_name|>",
    "<|call|>",
    "<|args|>",
    "<|end_call|>",
)
_SPLIT = re.compile("(" + "|".join(re.escape(c) for c in CONTROL) + ")")


@functools.cache
def chat_encoding(base: tiktoken.Encoding) -> tiktoken.Encoding:
    """``base`` extended with the ChatML control tokens (built once per base encoding)."""
    start = base.n_vocab + 10
    return tiktoken.Encoding(
        name=f"{base.name}_chatml",
        pat_str=base._pat_str,
        mergeable_ranks=base._mergeable_ranks,
        special_tokens={**base._special_tokens, **{t: start + i for i, t in enumerate(CONTROL)}},
    )


def count_rendered(base: tiktoken.Encoding, text: str) -> int:
    """Tokens of rendered ChatML ``text``: control tokens count 1, the rest is ordinary text.

    Message text that itself contains special-token text (``"<|endoftext|>"``) is counted as
    the ordinary text it is, never as a special token.
    """
    if text.count("<|") == sum(text.count(c) for c in CONTROL):
        return len(chat_encoding(base).encode(text, allowed_special="all"))
    return sum(
        1 if piece in CONTROL else len(base.encode_ordinary(piece))
        for piece in _SPLIT.split(text)
        if piece
    )


def reference_count(
    base: tiktoken.Encoding, messages: Sequence[Message], *, chunk: int = 2000
) -> int:
    """The reference count of a chat, rendered ``chunk`` messages at a time.

    Chunks split at a control token, where BPE never merges across, so the sum equals the
    count of the whole rendered chat while memory stays flat on 100,000 messages.
    """
    if not messages:
        return count_rendered(base, render_chatml([]))
    total = 0
    for start in range(0, len(messages), chunk):
        text = render_chatml(messages[start : start + chunk])
        if start + chunk < len(messages):
            text = text.removesuffix("<|im_start|>assistant<|im_sep|>")
        total += count_rendered(base, text)
    return total
