"""Watch how often a :class:`~agentmem.TokenCounter` tokenizes text (for the caching tests).

Example:
    >>> from agentmem import TokenCounter
    >>> counter = TokenCounter()
    >>> calls = count_text_calls(counter)
    >>> counter.count_text("hello")
    1
    >>> calls()
    1
"""

from __future__ import annotations

from collections.abc import Callable

from agentmem import TokenCounter

__all__ = ["count_text_calls"]


def count_text_calls(counter: TokenCounter) -> Callable[[], int]:
    """Make ``counter.count_text`` count its calls (it still counts the tokens); returns what
    reads the number of calls so far."""
    calls = 0
    original = counter.count_text

    def counting(text: str) -> int:
        nonlocal calls
        calls += 1
        return original(text)

    counter.count_text = counting  # type: ignore[method-assign]
    return lambda: calls
