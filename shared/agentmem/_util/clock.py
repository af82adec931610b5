"""The default clock (private).

It sits below the message types, so the long-term records and the ranker, which a store
imports when it opens, get the time without the chat-message models (pydantic classes
built at import). :func:`agentmem.types.utcnow` is this function.

Example:
    >>> utcnow().tzinfo is timezone.utc
    True
"""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["utcnow"]


def utcnow() -> datetime:
    """The current time as a timezone-aware UTC ``datetime`` (the default clock)."""
    return datetime.now(timezone.utc)
