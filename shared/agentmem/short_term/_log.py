"""An in-process mirror of one session's message log, with cached token counts (private).

The mirror is filled incrementally from the store (``read(after=last_seq)``), so each
message is fetched once. Token counts are computed lazily, the first time a view reaches a
message, and kept: a view walks back from the newest message, so even the first view over a
long history costs O(messages returned), not O(history).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from agentmem.stores.base import StoredMessage
from agentmem.tokens import TokenCounter
from agentmem.types import Message

__all__ = ["Unit", "_LogMirror"]


@dataclass(frozen=True)
class Unit:
    """Indexes ``[start, stop)`` of messages that must stay together in a view.

    An assistant message with tool calls and the tool results that follow it form one unit;
    every other message is a unit of its own. ``orphan`` marks tool results whose call is
    not in the log (providers reject them, so views leave them out).
    """

    start: int
    stop: int
    tokens: int
    orphan: bool = False


@dataclass
class _LogMirror:
    counter: TokenCounter
    messages: list[Message] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    tokens: list[int | None] = field(default_factory=list)
    system_indexes: list[int] = field(default_factory=list)

    @property
    def last_seq(self) -> int:
        return self.seqs[-1] if self.seqs else 0

    def extend(self, stored: Sequence[StoredMessage]) -> None:
        for seq, message in stored:
            if seq <= self.last_seq:
                continue  # already mirrored (a concurrent refresh got there first)
            if message.role == "system":
                self.system_indexes.append(len(self.messages))
            self.messages.append(message)
            self.seqs.append(seq)
            self.tokens.append(None)

    def reset(self) -> None:
        self.messages.clear()
        self.seqs.clear()
        self.tokens.clear()
        self.system_indexes.clear()

    def count(self, index: int) -> int:
        """Tokens of message ``index`` (computed on first use, then cached)."""
        count = self.tokens[index]
        if count is None:
            count = self.tokens[index] = self.counter.count_message(self.messages[index])
        return count

    def index_after(self, seq: int) -> int:
        """Index of the first message with a seq greater than ``seq`` (binary search)."""
        lo, hi = 0, len(self.seqs)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.seqs[mid] <= seq:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def units_backwards(self, lower: int, *, skip_system: bool) -> Iterator[Unit]:
        """Units from the newest message back to index ``lower`` (inclusive), newest first."""
        i = len(self.messages) - 1
        msgs, count = self.messages, self.count
        while i >= lower:
            msg = msgs[i]
            if skip_system and msg.role == "system":
                i -= 1
                continue
            if msg.role != "tool":
                yield Unit(i, i + 1, count(i))
                i -= 1
                continue
            # A run of tool results: find the assistant call that opened it.
            j = i
            total = 0
            while j >= lower and msgs[j].role == "tool":
                total += count(j)
                j -= 1
            opener = msgs[j] if j >= lower else None
            if opener is not None and opener.role == "assistant" and opener.tool_calls:
                yield Unit(j, i + 1, total + count(j))
                i = j - 1
            else:
                yield Unit(j + 1, i + 1, total, orphan=True)
                i = j
