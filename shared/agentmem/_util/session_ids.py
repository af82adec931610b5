"""Session ids: the one rule every tier and store applies (private).

It sits below the tiers and the stores alike, so the long-term records (domain) check
session ids without importing a storage module.
"""

from __future__ import annotations

import re
import uuid

from agentmem.errors import InvalidSessionIdError

__all__ = ["MAX_SESSION_ID_LENGTH", "new_session_id", "validate_session_id"]

MAX_SESSION_ID_LENGTH = 256
_SESSION_ID = re.compile(r"[A-Za-z0-9_.:@\-]+")


def validate_session_id(session_id: object, *, what: str = "session_id") -> str:
    """Return ``session_id`` if it is usable, else raise :class:`InvalidSessionIdError`.

    Allowed: 1-256 characters from ``A-Z a-z 0-9 _ . : @ -``. Braces, slashes, spaces and
    wildcards are refused because they would change Redis key hashing or file paths.

    Example:
        >>> validate_session_id("user-42:chat.7")
        'user-42:chat.7'
    """
    if not isinstance(session_id, str):
        msg = f"{what} must be a string, got {type(session_id).__name__}"
        raise InvalidSessionIdError(msg)
    if not session_id or len(session_id) > MAX_SESSION_ID_LENGTH:
        msg = f"{what} must be 1-{MAX_SESSION_ID_LENGTH} characters long, got {len(session_id)}"
        raise InvalidSessionIdError(msg)
    if not _SESSION_ID.fullmatch(session_id):
        msg = (
            f"{what} {session_id!r} contains characters outside A-Z a-z 0-9 _ . : @ -; "
            "map external ids (for example with a hash) before using them"
        )
        raise InvalidSessionIdError(msg)
    return session_id


def new_session_id() -> str:
    """A fresh session id: random, and naming nobody.

    It holds no user id: a session id is shown wherever the session is named (an
    ownership error, a LangGraph thread, a log line), and must not tell whose it is. Its
    length is fixed, so a new session works for a user id of any allowed length.

    Example:
        >>> sid = new_session_id()
        >>> sid.startswith("session-"), len(sid), validate_session_id(sid) == sid
        (True, 40, True)
    """
    return f"session-{uuid.uuid4().hex}"
